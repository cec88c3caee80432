//! `sys.cpu_dma_latency`: a PM QoS CPU latency request, held as an open
//! /dev/cpu_dma_latency for as long as schedlab wants it.
//!
//! The kernel (kernel/power/qos.c) keeps one request per open file and drops it when the
//! file is closed, also when the process dies however it dies, so nothing is journaled:
//! there is no value to put back. A 4-byte write is a binary s32 (other lengths would be
//! parsed as hex text, so only the binary form is written); a read returns the current
//! aggregate target (the smallest request) as a binary s32.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

/// The device of the CPU latency PM QoS class.
pub const DEVICE: &str = "/dev/cpu_dma_latency";

/// PM_QOS_CPU_LATENCY_DEFAULT_VALUE: the target when nobody asks for less (2000 s, "no
/// limit").
pub const DEFAULT_US: i32 = 2_000_000_000;

/// One request of ours: the open file is the request.
#[derive(Debug)]
pub struct Request {
    file: File,
    us: i32,
}

impl Request {
    /// Open the device and ask for `us` microseconds.
    pub fn open(us: i32) -> std::io::Result<Request> {
        let file = OpenOptions::new().read(true).write(true).open(DEVICE)?;
        let mut r = Request {
            file,
            us: DEFAULT_US,
        };
        r.update(us)?;
        Ok(r)
    }

    /// Replace the value this request asks for (the same open file).
    pub fn update(&mut self, us: i32) -> std::io::Result<()> {
        // One write of exactly four bytes: the kernel takes it as a binary s32.
        let n = self.file.write(&us.to_ne_bytes())?;
        if n != 4 {
            return Err(std::io::Error::other(format!(
                "short write to {DEVICE}: {n} of 4 bytes"
            )));
        }
        self.us = us;
        Ok(())
    }

    /// What this request asks for.
    pub fn us(&self) -> i32 {
        self.us
    }
}

impl Drop for Request {
    /// Ask for the default before the file closes. A process another thread forks holds
    /// a copy of the descriptor until its exec, so a bare close can leave the old value
    /// in force for a moment (2,642 of 20,000 reads right after the close saw it, beside
    /// two threads spawning `true`). The write changes the one request both copies share.
    fn drop(&mut self) {
        if self.us != DEFAULT_US {
            // Best effort: if the write fails the close still drops the request, later.
            let _ = self.update(DEFAULT_US);
        }
    }
}

/// The request a schedlab process holds for `sys.cpu_dma_latency`, if any.
#[derive(Debug, Default)]
pub struct Hold(Option<Request>);

impl Hold {
    /// Ask for `us`: a new request, or the held one changed.
    pub fn set(&mut self, us: i32) -> std::io::Result<()> {
        match &mut self.0 {
            Some(r) => r.update(us),
            None => {
                self.0 = Some(Request::open(us)?);
                Ok(())
            }
        }
    }

    /// Drop the request (close the file).
    pub fn release(&mut self) {
        self.0 = None;
    }

    /// The value held, if any.
    pub fn held(&self) -> Option<i32> {
        self.0.as_ref().map(Request::us)
    }
}

/// The current aggregate target, us, read from `path` (the device, or a test's file).
/// Opening the device adds a request at the default value, which cannot lower the
/// target, and closing it removes it again.
pub fn read_target(path: &Path) -> std::io::Result<i32> {
    let mut buf = [0u8; 4];
    File::open(path)?.read_exact(&mut buf)?;
    Ok(i32::from_ne_bytes(buf))
}

/// Processes other than this one that hold the device open (each open file is a
/// request): "comm (pid)", for saying who lowers the target. Best effort: processes
/// whose fds cannot be read are left out.
pub fn other_holders() -> Vec<String> {
    let me = std::process::id();
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me && holds_device(pid))
        .map(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            format!("{} ({pid})", comm.trim())
        })
        .collect()
}

fn holds_device(pid: u32) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return false;
    };
    fds.flatten()
        .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t == Path::new(DEVICE)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_target_is_a_native_s32() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("target");
        std::fs::write(&f, 20i32.to_ne_bytes()).expect("write");
        assert_eq!(read_target(&f).expect("read"), 20);
        std::fs::write(&f, [1u8, 2]).expect("write");
        assert!(read_target(&f).is_err(), "two bytes are not a target");
    }

    #[test]
    fn an_empty_hold_holds_nothing() {
        let mut h = Hold::default();
        assert_eq!(h.held(), None);
        h.release();
        assert_eq!(h.held(), None);
    }
}
