//! Where schedlab keeps what must outlive a process (the journal, the knob lock, the run
//! registry), and how files there are opened: a directory that is the user's own (0700,
//! owned by them, not a symlink) or none at all, and files that are never followed
//! through a symlink and, when created, never existed before.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// A state directory that cannot be used safely, and why, in one line.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct StateError(pub String);

/// The state directory: `$SCHEDLAB_STATE_DIR`, else /run/schedlab as root, else
/// `$XDG_RUNTIME_DIR/schedlab`, else `/tmp/schedlab-UID`; created 0700 when missing and
/// refused unless it is a real directory owned by this user that nobody else can write.
pub fn dir() -> Result<PathBuf, StateError> {
    match std::env::var_os("SCHEDLAB_STATE_DIR").filter(|p| !p.is_empty()) {
        Some(p) => {
            let path = PathBuf::from(p);
            ensure_dir(&path, nix::unistd::geteuid().as_raw())?;
            Ok(path)
        }
        None => machine_dir(),
    }
}

/// The state directory as if `$SCHEDLAB_STATE_DIR` were unset: the one place for what
/// is one per machine (the knob lock), so two schedlabs with state directories of their
/// own still meet there.
pub fn machine_dir() -> Result<PathBuf, StateError> {
    let uid = nix::unistd::geteuid().as_raw();
    let path = if uid == 0 && Path::new("/run").is_dir() {
        PathBuf::from("/run/schedlab")
    } else if let Some(runtime) = std::env::var_os("XDG_RUNTIME_DIR").filter(|p| !p.is_empty()) {
        let runtime = PathBuf::from(runtime);
        // The runtime dir itself must be ours too (the XDG spec says 0700, owned by us).
        check_owned(&runtime, uid, "XDG_RUNTIME_DIR")?;
        runtime.join("schedlab")
    } else {
        std::env::temp_dir().join(format!("schedlab-{uid}"))
    };
    ensure_dir(&path, uid)?;
    Ok(path)
}

/// Create `path` 0700 if missing, then insist that it is ours and private.
pub fn ensure_dir(path: &Path, uid: u32) -> Result<(), StateError> {
    match std::fs::DirBuilder::new().mode(0o700).create(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(StateError(format!(
                "cannot create the state directory {}: {e}",
                path.display()
            )))
        }
    }
    check_owned(path, uid, "the state directory")
}

fn check_owned(path: &Path, uid: u32, what: &str) -> Result<(), StateError> {
    let refuse = |why: String| {
        StateError(format!(
            "{what} {} {why}: refusing to use it (remove it, or set SCHEDLAB_STATE_DIR to a directory of your own)",
            path.display()
        ))
    };
    // lstat: a symlink is refused, not followed.
    let meta =
        std::fs::symlink_metadata(path).map_err(|e| refuse(format!("cannot be examined ({e})")))?;
    if meta.file_type().is_symlink() {
        return Err(refuse("is a symlink".into()));
    }
    if !meta.is_dir() {
        return Err(refuse("is not a directory".into()));
    }
    if meta.uid() != uid {
        return Err(refuse(format!(
            "belongs to uid {}, not to you (uid {uid})",
            meta.uid()
        )));
    }
    if meta.mode() & 0o022 != 0 {
        return Err(refuse(format!(
            "can be written by others (mode {:o})",
            meta.mode() & 0o7777
        )));
    }
    Ok(())
}

/// Open an existing file for reading without following a symlink, and only if it is a
/// regular file owned by this user (a file planted by someone else is not read).
pub fn open_own(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let meta = file.metadata()?;
    let uid = nix::unistd::geteuid().as_raw();
    if !meta.is_file() || meta.uid() != uid {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a regular file of yours (owner uid {})",
                path.display(),
                meta.uid()
            ),
        ));
    }
    Ok(file)
}

/// Read a whole file through [`open_own`].
pub fn read_own(path: &Path) -> std::io::Result<String> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut open_own(path)?, &mut text)?;
    Ok(text)
}

/// Create a new file (0600): fails if anything, a symlink included, is already there.
pub fn create_new(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
}

/// Open (creating if needed) a file for reading and writing without following a
/// symlink; refused unless it is a regular file of this user's.
pub fn open_or_create(path: &Path) -> std::io::Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() || meta.uid() != nix::unistd::geteuid().as_raw() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{} is not a regular file of yours", path.display()),
        ));
    }
    Ok(file)
}

/// Replace `path` with `contents` atomically: a fresh temp file beside it (exclusive,
/// no symlinks), fsynced, renamed over it.
pub fn write_atomic(path: &Path, contents: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    // A leftover of ours from a crash; unlink never follows a symlink.
    let _ = std::fs::remove_file(&tmp);
    let mut f = create_new(&tmp)?;
    f.write_all(contents)?;
    f.sync_all()?;
    std::fs::rename(&tmp, path)
}

/// The start time of a process in clock ticks since boot (/proc/PID/stat field 22):
/// with the pid it names one process, even after the pid number is reused.
pub fn process_start_ticks(pid: i32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = text.rsplit_once(')')?;
    // Fields after comm start at field 3 (state); starttime is field 22.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// The process (thread group) a thread belongs to, from /proc/TID/status.
pub fn tgid_of(tid: i32) -> Option<i32> {
    let text = std::fs::read_to_string(format!("/proc/{tid}/status")).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("Tgid:"))?
        .trim()
        .parse()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_private_directory_is_made_and_a_shared_one_refused() {
        let base = tempfile::tempdir().expect("tempdir");
        let uid = nix::unistd::geteuid().as_raw();
        let mine = base.path().join("mine");
        ensure_dir(&mine, uid).expect("made");
        let mode = std::fs::metadata(&mine).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        ensure_dir(&mine, uid).expect("an existing private dir is fine");

        let open = base.path().join("open");
        std::fs::create_dir(&open).expect("mkdir");
        std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o777)).expect("chmod");
        let err = ensure_dir(&open, uid).unwrap_err().0;
        assert!(err.contains("can be written by others"), "{err}");

        let link = base.path().join("link");
        std::os::unix::fs::symlink(&mine, &link).expect("symlink");
        let err = ensure_dir(&link, uid).unwrap_err().0;
        assert!(err.contains("is a symlink"), "{err}");

        let err = ensure_dir(&mine, uid + 1).unwrap_err().0;
        assert!(err.contains("belongs to uid"), "{err}");
    }

    #[test]
    fn files_are_never_followed_through_a_symlink() {
        let dir = tempfile::tempdir().expect("tempdir");
        let target = dir.path().join("target");
        std::fs::write(&target, "precious").expect("write");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&target, &link).expect("symlink");
        assert!(create_new(&link).is_err());
        assert!(open_or_create(&link).is_err());
        assert!(open_own(&link).is_err());
        write_atomic(&dir.path().join("new"), b"x").expect("atomic write");
        assert_eq!(std::fs::read_to_string(&target).expect("read"), "precious");
        let me = std::process::id() as i32;
        assert!(process_start_ticks(me).is_some_and(|t| t > 0));
        assert_eq!(process_start_ticks(i32::MAX), None);
    }
}
