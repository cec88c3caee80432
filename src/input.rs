//! Files a user hands schedlab (presets, lessons, key bindings, check reports,
//! recordings), read with a bound: only a regular file, refused before it is read when
//! it is larger than it could sensibly be, and stopped when more is read than allowed.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// The largest preset or key-binding file schedlab reads (the built-ins are ~3 KiB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// The largest recording `replay` reads: hours of samples of dozens of tasks.
pub const MAX_RECORDING_BYTES: u64 = 1 << 30;

/// The built-ins, then each `*.toml` of the user's directory in name order, loaded: a
/// user file replaces the built-in of its name, and a broken one is an error entry
/// rather than hiding the rest (presets and lessons are found so).
pub fn with_user_files<T>(
    builtins: Vec<anyhow::Result<T>>,
    user_dir: Option<&Path>,
    load: impl Fn(&Path) -> anyhow::Result<T>,
    name: impl Fn(&T) -> &str,
) -> Vec<anyhow::Result<T>> {
    let mut out = builtins;
    let Some(Ok(entries)) = user_dir.map(std::fs::read_dir) else {
        return out;
    };
    let mut files: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for f in files {
        let loaded = load(&f);
        if let Ok(new) = &loaded {
            out.retain(|o| o.as_ref().map_or(true, |b| name(b) != name(new)));
        }
        out.push(loaded);
    }
    out
}

/// Read `path` as text if it is at most `limit` bytes; `what` names it in the error.
pub fn read_bounded(path: &Path, limit: u64, what: &str) -> std::io::Result<String> {
    let mut text = String::new();
    open_bounded(path, limit, what)?.read_to_string(&mut text)?;
    Ok(text)
}

/// Open `path` for reading through a [`Bounded`] reader: refused unless it is a regular
/// file (a FIFO would block forever, /dev/zero never ends) of at most `limit` bytes.
pub fn open_bounded(path: &Path, limit: u64, what: &str) -> std::io::Result<Bounded<File>> {
    // Non-blocking: opening a FIFO for reading would otherwise wait for a writer.
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)?;
    let meta = file.metadata()?;
    let kind = meta.file_type();
    if !kind.is_file() {
        let is = if kind.is_dir() {
            "a directory"
        } else if kind.is_fifo() {
            "a FIFO"
        } else if kind.is_char_device() || kind.is_block_device() {
            "a device"
        } else if kind.is_socket() {
            "a socket"
        } else {
            "not a regular file"
        };
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{what} is {is}; allowed only a regular file"),
        ));
    }
    if meta.len() > limit {
        return Err(too_big(what, &format!("{} bytes", meta.len()), limit));
    }
    Ok(Bounded {
        inner: file,
        left: limit,
        limit,
        what: what.to_string(),
    })
}

fn too_big(what: &str, is: &str, limit: u64) -> std::io::Error {
    std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("{what} is {is}; allowed at most {limit}"),
    )
}

/// A reader that fails once more than its limit has been read: the size on disk is
/// checked first, but a file that grows while it is read (or a file system that
/// reports no size) is stopped by counting.
pub struct Bounded<R> {
    inner: R,
    left: u64,
    limit: u64,
    what: String,
}

impl<R: Read> Read for Bounded<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        // One byte past the limit is enough to know it was passed; rounded up to a
        // page, as files like /proc/self/pagemap refuse reads of odd sizes.
        let room = self
            .left
            .saturating_add(1)
            .checked_next_multiple_of(4096)
            .unwrap_or(u64::MAX);
        let room = usize::try_from(room).unwrap_or(usize::MAX);
        let want = buf.len().min(room);
        let n = self.inner.read(&mut buf[..want])?;
        if n as u64 > self.left {
            return Err(too_big(
                &self.what,
                &format!("more than {} bytes", self.limit),
                self.limit,
            ));
        }
        self.left -= n as u64;
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_the_bound_is_refused_unread() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("big.toml");
        std::fs::write(&path, vec![b'a'; 2048]).expect("write");
        let err = read_bounded(&path, 1024, "preset big.toml").unwrap_err();
        assert_eq!(
            err.to_string(),
            "preset big.toml is 2048 bytes; allowed at most 1024"
        );
        assert_eq!(read_bounded(&path, 4096, "x").expect("fits").len(), 2048);
    }

    #[test]
    fn only_regular_files_are_read_and_reading_is_counted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let fifo = dir.path().join("fifo");
        nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::from_bits_truncate(0o600))
            .expect("mkfifo");
        for (path, is) in [
            (fifo.as_path(), "a FIFO"),
            (Path::new("/dev/zero"), "a device"),
            (dir.path(), "a directory"),
        ] {
            let err = read_bounded(path, 1024, "the file").unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("the file is {is}; allowed only a regular file")
            );
        }
        // What a size on disk does not show: the count stops it.
        let mut r = Bounded {
            inner: std::io::repeat(b'x'),
            left: 1000,
            limit: 1000,
            what: "the stream".into(),
        };
        let mut sink = Vec::new();
        let err = r.read_to_end(&mut sink).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the stream is more than 1000 bytes; allowed at most 1000"
        );
        assert!(sink.len() <= 1000);
    }
}
