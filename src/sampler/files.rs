//! Open procfs files re-read with pread: opening a file costs more than reading it, and
//! the sampler reads the same files every interval.

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Read the whole file from offset 0 into `buf` (grown if needed, never shrunk) with one
/// `pread`, and return the filled prefix.
///
/// procfs generates these files whole on every read at offset 0 and hands back as much
/// as fits, so a read shorter than the buffer is the whole file. A second read to see
/// EOF would make the kernel generate the file again (seq_file starts over at a new
/// offset): as costly as the first, for nothing. Only a full buffer means the file may
/// be longer; then the buffer doubles and the file is read again from the start.
pub fn pread_all<'a>(file: &File, buf: &'a mut Vec<u8>) -> io::Result<&'a [u8]> {
    if buf.len() < 4096 {
        buf.resize(4096, 0);
    }
    loop {
        let n = file.read_at(buf, 0)?;
        if n < buf.len() {
            return Ok(&buf[..n]);
        }
        let grown = buf.len() * 2;
        buf.resize(grown, 0);
    }
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
}

impl SystemFiles {
    pub fn open() -> SystemFiles {
        SystemFiles {
            stat: File::open("/proc/stat").ok(),
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
        // A file longer than the starting buffer: the buffer grows until one read holds
        // all of it, and what comes back is the whole file, byte for byte.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("long");
        let long: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&path, &long).expect("write");
        let file = File::open(&path).expect("open");
        let mut small = Vec::new();
        let text = pread_all(&file, &mut small).expect("read");
        assert_eq!(text, &long[..]);
        assert_eq!(
            small.len(),
            16_384,
            "4 KiB doubled until 10 000 bytes fit with room"
        );
        assert!(TaskFiles::open(me, i32::MAX).is_err());
    }

    #[test]
    fn a_procfs_file_is_read_with_one_pread() {
        // The cost this saves is a whole regeneration of the seq_file; count the reads
        // through a file that records them.
        let me = std::process::id() as i32;
        let files = TaskFiles::open(me, me).expect("own task files");
        let sched = files.sched.as_ref().expect("sched");
        let mut buf = vec![0u8; 16 * 1024];
        let before = syscr();
        for _ in 0..100 {
            let text = pread_all(sched, &mut buf).expect("read");
            assert!(text.ends_with(b"\n"), "whole file");
        }
        let reads = syscr() - before;
        // 100 preads of the sched file, plus the few reads that reading the io file
        // itself takes; a second pread per file would make it 200.
        assert!(
            (100..=110).contains(&reads),
            "{reads} read calls for 100 files"
        );
    }

    /// Read system calls this process made so far (/proc/self/io `syscr`).
    fn syscr() -> u64 {
        let io = std::fs::read_to_string("/proc/thread-self/io").expect("io");
        io.lines()
            .find_map(|l| l.strip_prefix("syscr: "))
            .and_then(|v| v.trim().parse().ok())
            .expect("syscr")
    }
}
