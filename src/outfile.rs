//! Files the user names for output (`--json`, `--csv`, `--plot`, `--plot-dir`): written
//! to a new file beside the place and renamed into it, never through another user's
//! symlink.
//!
//! Opening the named path for writing would follow a symlink planted there: with
//! `fs.protected_symlinks=0`, anybody could link `/tmp/out.json` to a file of root's and
//! have root's `run --json /tmp/out.json` overwrite it. A rename replaces the name, not
//! what it points to, and a reader never sees a half-written file.

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// How many symlinks in a row are followed (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// An output file being written; [`OutFile::commit`] puts it in place, and dropping it
/// uncommitted leaves the place as it was.
pub struct OutFile {
    sink: Sink,
}

enum Sink {
    /// A new file beside `target`, renamed onto it when done.
    Beside {
        tmp: tempfile::NamedTempFile,
        target: PathBuf,
    },
    /// Something that is not a regular file (a terminal, a pipe, /dev/null): written as
    /// it is, since there is nothing to replace.
    Direct(File),
}

impl OutFile {
    /// Start writing the output file `path`.
    pub fn create(path: &Path) -> io::Result<OutFile> {
        let target = resolve(path)?;
        // Followed through every link resolve() let pass: /dev/stdout ends in a pipe
        // or terminal that /proc names but no path reaches.
        match std::fs::metadata(path) {
            Ok(m) if m.is_dir() => {
                return Err(io::Error::new(
                    io::ErrorKind::IsADirectory,
                    format!("{} is a directory; give a file name", path.display()),
                ))
            }
            Ok(m) if !m.is_file() => {
                let file = OpenOptions::new().write(true).open(path)?;
                return Ok(OutFile {
                    sink: Sink::Direct(file),
                });
            }
            _ => {}
        }
        let name = target.file_name().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} names no file", path.display()),
            )
        })?;
        let tmp = tempfile::Builder::new()
            .prefix(&format!(".{}.", name.to_string_lossy()))
            .suffix(".part")
            // As a newly created file would be (the umask applies); a file that is
            // replaced keeps its mode.
            .permissions(std::fs::Permissions::from_mode(0o666))
            .tempfile_in(parent_of(&target))?;
        if let Ok(old) = std::fs::symlink_metadata(&target) {
            if old.is_file() {
                tmp.as_file().set_permissions(old.permissions())?;
            }
        }
        Ok(OutFile {
            sink: Sink::Beside { tmp, target },
        })
    }

    /// Everything written: the file takes its place.
    pub fn commit(self) -> io::Result<()> {
        match self.sink {
            Sink::Direct(mut f) => f.flush(),
            Sink::Beside { mut tmp, target } => {
                tmp.flush()?;
                tmp.persist(&target).map_err(|e| e.error)?;
                Ok(())
            }
        }
    }
}

impl Write for OutFile {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match &mut self.sink {
            Sink::Direct(f) => f.write(buf),
            Sink::Beside { tmp, .. } => tmp.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match &mut self.sink {
            Sink::Direct(f) => f.flush(),
            Sink::Beside { tmp, .. } => tmp.flush(),
        }
    }
}

/// Write `bytes` as the output file `path`.
pub fn write(path: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut out = OutFile::create(path)?;
    out.write_all(bytes)?;
    out.commit()
}

/// The directory `p` is in ("." for a bare name).
fn parent_of(p: &Path) -> PathBuf {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Where writing `path` lands: the end of its chain of symlinks (a user's own link to
/// their results file is honoured). A link in a world-writable sticky directory (/tmp)
/// that belongs to neither this user nor the directory's owner is refused, as the
/// kernel's `fs.protected_symlinks` would refuse to follow it: the file's own name and
/// the directories named on the way (`/tmp/plots/` for `--plot-dir`) alike.
fn resolve(path: &Path) -> io::Result<PathBuf> {
    let mut p = path.to_path_buf();
    for _ in 0..MAX_LINKS {
        for dir in parent_of(&p).ancestors() {
            if std::fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
                trusted_link(dir)?;
            }
        }
        let meta = match std::fs::symlink_metadata(&p) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(p),
            Err(e) => return Err(e),
        };
        if !meta.file_type().is_symlink() {
            return Ok(p);
        }
        trusted_link(&p)?;
        p = parent_of(&p).join(std::fs::read_link(&p)?);
    }
    Err(io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{}: more than {MAX_LINKS} symlinks in a row",
            path.display()
        ),
    ))
}

/// Refuses the symlink `link` if another user could have planted it: it sits in a
/// world-writable sticky directory and belongs to neither this user nor that
/// directory's owner.
fn trusted_link(link: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(link)?;
    let dir = parent_of(link);
    let d = std::fs::metadata(&dir)?;
    let me = nix::unistd::geteuid().as_raw();
    let sticky_shared = d.mode() & 0o1002 == 0o1002;
    if sticky_shared && meta.uid() != me && meta.uid() != d.uid() {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "{} is a symlink of uid {} in the world-writable directory {}: refusing to write through it (remove it, or give another file name)",
                link.display(),
                meta.uid(),
                dir.display()
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::FileTypeExt;

    #[test]
    fn replaces_the_file_and_follows_only_the_users_own_links() {
        let dir = tempfile::tempdir().expect("tempdir");
        let out = dir.path().join("out.json");
        write(&out, b"one").expect("new");
        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o640)).expect("chmod");
        write(&out, b"two").expect("replace");
        assert_eq!(std::fs::read(&out).expect("read"), b"two");
        let mode = std::fs::metadata(&out).expect("stat").mode() & 0o777;
        assert_eq!(mode, 0o640, "a replaced file keeps its mode");
        // A link of one's own is written through: the link stays, its target changes.
        let link = dir.path().join("latest.json");
        std::os::unix::fs::symlink("out.json", &link).expect("symlink");
        write(&link, b"three").expect("through the link");
        assert!(std::fs::symlink_metadata(&link)
            .expect("lstat")
            .file_type()
            .is_symlink());
        assert_eq!(std::fs::read(&out).expect("read"), b"three");
        // Nothing is left beside it, and an uncommitted file leaves the place alone.
        let mut half = OutFile::create(&out).expect("create");
        half.write_all(b"half").expect("write");
        drop(half);
        assert_eq!(std::fs::read(&out).expect("read"), b"three");
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .expect("ls")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names.len(), 2, "{names:?}");
        // Not a regular file: written as it is.
        write(Path::new("/dev/null"), b"x").expect("/dev/null");
        assert!(std::fs::metadata("/dev/null")
            .expect("stat")
            .file_type()
            .is_char_device());
        assert!(write(dir.path(), b"x").is_err());
    }
}
