//! Helpers for the hostile-input tests: schedlab with a bound on how long it may take,
//! files that are not files, and what a terminal would act on in its output.

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

/// schedlab with `args`, killed if it has not ended within `limit`: its output, or
/// None when it had to be killed (it blocked or ran away).
pub fn schedlab_within(args: &[&str], env: &[(&str, &Path)], limit: Duration) -> Option<Output> {
    // Files, not pipes: a child writing more than a pipe holds never blocks on them.
    let out = tempfile::tempfile().expect("stdout file");
    let err = tempfile::tempfile().expect("stderr file");
    let mut cmd = Command::new(super::exe());
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(out.try_clone().expect("dup"))
        .stderr(err.try_clone().expect("dup"));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("spawn schedlab");
    let mut status = None;
    super::wait_until(limit, || {
        status = child.try_wait().expect("try_wait");
        status.is_some()
    });
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        return None;
    };
    let read = |mut f: std::fs::File| {
        use std::io::{Read, Seek};
        let mut bytes = Vec::new();
        f.seek(std::io::SeekFrom::Start(0)).expect("seek");
        f.read_to_end(&mut bytes).expect("read");
        bytes
    };
    Some(Output {
        status,
        stdout: read(out),
        stderr: read(err),
    })
}

/// The bytes in `out` a terminal would act on: ESC, BEL, other C0 controls but line
/// breaks and tabs, DEL and (UTF-8 encoded) C1 controls, as (offset, byte).
pub fn terminal_controls(out: &[u8]) -> Vec<(usize, u8)> {
    let text = String::from_utf8_lossy(out);
    text.char_indices()
        .filter(|(_, c)| c.is_control() && !matches!(c, '\n' | '\t'))
        .map(|(i, c)| (i, c as u32 as u8))
        .collect()
}

/// Make a FIFO at `path`.
pub fn mkfifo(path: &Path) {
    nix::unistd::mkfifo(path, nix::sys::stat::Mode::from_bits_truncate(0o600)).expect("mkfifo");
}
