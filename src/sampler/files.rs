//! Open procfs files re-read with pread: opening a file costs more than reading it, and
//! the sampler reads the same files every interval.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Read the whole file from offset 0 into `buf` (grown if needed, never shrunk).
/// Returns the filled prefix.
pub fn pread_all<'a>(file: &File, buf: &'a mut Vec<u8>) -> io::Result<&'a [u8]> {
    if buf.len() < 4096 {
        buf.resize(4096, 0);
    }
    let mut filled = 0;
    loop {
        let n = file.read_at(&mut buf[filled..], filled as u64)?;
        if n == 0 {
            break;
        }
        filled += n;
        if filled == buf.len() {
            // Procfs files are generated whole per read; a full buffer means it was too small.
            let new_len = buf.len() * 2;
            buf.resize(new_len, 0);
        }
    }
    Ok(&buf[..filled])
}

/// The per-task files the sampler reads.
pub struct TaskFiles {
    pub sched: Option<File>,
    pub schedstat: Option<File>,
    pub stat: Option<File>,
    pub status: Option<File>,
}

impl TaskFiles {
    /// Open what exists for /proc/PID/task/TID; an error only if the task is gone.
    pub fn open(pid: i32, tid: i32) -> io::Result<TaskFiles> {
        let dir = format!("/proc/{pid}/task/{tid}");
        let open = |name: &str| File::open(format!("{dir}/{name}")).ok();
        let files = TaskFiles {
            sched: open("sched"),
            schedstat: open("schedstat"),
            stat: open("stat"),
            status: open("status"),
        };
        if files.stat.is_none() && files.sched.is_none() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("{dir} is gone"),
            ));
        }
        Ok(files)
    }
}

/// System-wide files.
pub struct SystemFiles {
    pub stat: Option<File>,
    pub pressure: Option<File>,
}

impl SystemFiles {
    pub fn open() -> SystemFiles {
        SystemFiles {
            stat: File::open("/proc/stat").ok(),
            pressure: File::open("/proc/pressure/cpu").ok(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pread_rereads_fresh_content_and_grows_the_buffer() {
        let me = std::process::id() as i32;
        let files = TaskFiles::open(me, me).expect("own task files");
        let mut buf = Vec::new();
        let first = pread_all(files.stat.as_ref().expect("stat"), &mut buf)
            .expect("read")
            .to_vec();
        assert!(first.starts_with(format!("{me} (").as_bytes()));
        let again = pread_all(files.stat.as_ref().expect("stat"), &mut buf).expect("read");
        assert!(
            again.starts_with(format!("{me} (").as_bytes()),
            "pread at 0 regenerates"
        );
        let sys = SystemFiles::open();
        let mut small = vec![0u8; 16];
        small.truncate(16);
        let text = pread_all(sys.stat.as_ref().expect("/proc/stat"), &mut small).expect("read");
        assert!(text.starts_with(b"cpu "));
        assert!(TaskFiles::open(me, i32::MAX).is_err());
    }
}
