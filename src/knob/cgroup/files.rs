//! Reading and writing cgroup files, each failure one line naming the file, the errno
//! and why.

use std::path::Path;

use nix::errno::Errno;

use crate::error::KnobError;
use crate::knob::errno::{explain, WriteKind};

pub(super) fn errno_of(e: &std::io::Error) -> Errno {
    e.raw_os_error()
        .map_or(Errno::UnknownErrno, Errno::from_raw)
}

pub(super) fn read_trimmed(path: &Path) -> Result<String, KnobError> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| {
            KnobError::Refused(format!(
                "reading {}: {}",
                path.display(),
                explain(errno_of(&e), WriteKind::File)
            ))
        })
}

pub(super) fn read_num<T: std::str::FromStr>(path: &Path) -> Result<T, KnobError> {
    let text = read_trimmed(path)?;
    text.parse().map_err(|_| unexpected(path, &text))
}

pub(super) fn unexpected(path: &Path, text: &str) -> KnobError {
    KnobError::Refused(format!(
        "reading {}: unexpected content \"{text}\"",
        path.display()
    ))
}

/// Write `value` to `path`; a refusal becomes one line: what went where, the errno, and
/// why — `why` gives a knob-specific reason, else the generic one for file writes.
pub(super) fn write(
    path: &Path,
    value: &str,
    why: impl Fn(Errno) -> Option<String>,
) -> Result<(), KnobError> {
    crate::knob::fs::write_file(path, value).map_err(|e| {
        let errno = errno_of(&e);
        let text = match why(errno) {
            Some(reason) => format!("{errno:?} ({}): {reason}", errno.desc()),
            None => explain(errno, WriteKind::File),
        };
        KnobError::Refused(format!("writing {value} to {}: {text}", path.display()))
    })
}
