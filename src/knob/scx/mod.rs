//! sched_ext: whether this kernel has it and which BPF scheduler runs (`detect`), and
//! the `sys.sched_ext` knob that runs a user-named scx scheduler for a run (`run`).

mod detect;
mod run;

use std::path::{Path, PathBuf};

pub use detect::{detect, fair_class, Scx, State};
pub use run::{names_match, switch};

/// How long a scheduler gets to load its BPF program and be enabled by the kernel
/// (scx_rusty takes about a second on a small machine; the verifier can take longer).
pub const ENABLE_WAIT: std::time::Duration = std::time::Duration::from_secs(20);

/// Why the scheduler program the user named cannot be run.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum ProgramError {
    #[error("an empty program name")]
    Empty,
    #[error("{0} is not an executable file")]
    NotExecutable(String),
    #[error("{0} does not exist")]
    Missing(String),
    #[error("no program \"{0}\" on PATH")]
    NotOnPath(String),
}

/// The scheduler program the user named: a path (it must be an executable file), or a
/// name looked up on `path` (the `PATH` variable's value).
pub fn resolve(text: &str, path: Option<&std::ffi::OsStr>) -> Result<PathBuf, ProgramError> {
    use std::os::unix::fs::PermissionsExt;
    let executable = |p: &Path| {
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if text.is_empty() {
        return Err(ProgramError::Empty);
    }
    if text.contains('/') {
        let p = PathBuf::from(text);
        return if executable(&p) {
            Ok(p)
        } else if p.exists() {
            Err(ProgramError::NotExecutable(text.to_string()))
        } else {
            Err(ProgramError::Missing(text.to_string()))
        };
    }
    let dirs = path.map(std::env::split_paths).into_iter().flatten();
    for dir in dirs.filter(|d| d.is_absolute()) {
        let p = dir.join(text);
        if executable(&p) {
            return Ok(p);
        }
    }
    Err(ProgramError::NotOnPath(text.to_string()))
}
