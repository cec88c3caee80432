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
    fn pread_at_zero_reads_the_file_as_it_is_now() {
        // A thread renames itself between two reads through one descriptor: the second
        // read shows the new name, so a pread at 0 regenerates the file.
        std::thread::Builder::new()
            .name("pread-before".into())
            .spawn(|| {
                let me = std::process::id() as i32;
                let tid = nix::unistd::gettid().as_raw();
                let files = TaskFiles::open(me, tid).expect("own task files");
                let stat = files.stat.as_ref().expect("stat");
                let mut buf = Vec::new();
                let first = pread_all(stat, &mut buf).expect("read").to_vec();
                let start = format!("{tid} (pread-before) ");
                assert!(first.starts_with(start.as_bytes()), "{first:?}");
                nix::sys::prctl::set_name(c"pread-after").expect("rename");
                let again = pread_all(stat, &mut buf).expect("read");
                let start = format!("{tid} (pread-after) ");
                assert!(again.starts_with(start.as_bytes()), "{again:?}");
            })
            .expect("spawn")
            .join()
            .expect("the reading thread");
        let me = std::process::id() as i32;
        assert!(TaskFiles::open(me, i32::MAX).is_err(), "no such task");
    }

    #[test]
    fn a_file_longer_than_the_buffer_grows_it_until_one_read_holds_all() {
        let dir = tempfile::tempdir().expect("tempdir");
        let file_of = |len: usize| {
            let path = dir.path().join(format!("f{len}"));
            let bytes: Vec<u8> = (0..len).map(|i| (i % 251) as u8).collect();
            std::fs::write(&path, &bytes).expect("write");
            (File::open(&path).expect("open"), bytes)
        };
        // (file length, reads, buffer length after): a read that fills the buffer may
        // have left some of the file, so the buffer doubles and the file is read again
        // from the start until a read comes back short.
        for (len, reads, grown) in [
            // 4096 and 8192 bytes come back full, 16384 holds all of 10 000.
            (10_000, 3, 16_384),
            // Exactly the buffer: full, so once more with 8192, which is short.
            (4096, 2, 8192),
            (4095, 1, 4096),
            (0, 1, 4096),
        ] {
            let (file, bytes) = file_of(len);
            let mut buf = vec![0u8; 4096];
            let capacity = buf.capacity();
            let before = syscr();
            let got = pread_all(&file, &mut buf).expect("read").to_vec();
            let used = syscr() - before - syscr_overhead();
            assert_eq!(got, bytes, "{len} bytes read whole");
            assert_eq!(used, reads, "read calls for {len} bytes");
            assert_eq!(buf.len(), grown, "buffer after {len} bytes");
            assert_eq!(buf.capacity() > capacity, grown > 4096, "{len}");
        }
        // An empty buffer starts at 4 KiB.
        let (file, bytes) = file_of(100);
        let mut buf = Vec::new();
        assert_eq!(pread_all(&file, &mut buf).expect("read"), &bytes[..]);
        assert_eq!(buf.len(), 4096);
    }

    #[test]
    fn a_procfs_file_is_read_with_one_pread() {
        // The cost this saves is a whole regeneration of the seq_file; count the reads.
        let me = std::process::id() as i32;
        let files = TaskFiles::open(me, me).expect("own task files");
        let sched = files.sched.as_ref().expect("sched");
        let mut buf = vec![0u8; 16 * 1024];
        let before = syscr();
        for _ in 0..100 {
            let text = pread_all(sched, &mut buf).expect("read");
            assert!(text.ends_with(b"\n"), "whole file");
        }
        let reads = syscr() - before - syscr_overhead();
        // One pread per file; a second one to see EOF would make it 200.
        assert_eq!(reads, 100);
    }

    /// Read system calls this thread made so far (/proc/thread-self/io `syscr`), with
    /// one read of its own: the file is far below 4 KiB, and a read is counted once it
    /// returns, so it is in the next call's figure, not its own.
    fn syscr() -> u64 {
        use std::io::Read;
        let mut buf = [0u8; 4096];
        let n = File::open("/proc/thread-self/io")
            .and_then(|mut f| f.read(&mut buf))
            .expect("io");
        let io = std::str::from_utf8(&buf[..n]).expect("text");
        io.lines()
            .find_map(|l| l.strip_prefix("syscr: "))
            .and_then(|v| v.trim().parse().ok())
            .expect("syscr")
    }

    /// The reads that [`syscr`] itself adds between two of its calls (one).
    fn syscr_overhead() -> u64 {
        let a = syscr();
        syscr() - a
    }
}
