//! The shared-memory page where workers report their TID, progress and latencies.
//! Workers write with plain atomic stores: no syscalls or locks on their hot paths.

use std::fs::{File, OpenOptions};
use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicU32, AtomicU64, Ordering};

use anyhow::{bail, Context, Result};
use memmap2::MmapMut;

use crate::histogram::AtomicHistogram;

const MAGIC: u64 = u64::from_le_bytes(*b"schedlab");
const VERSION: u32 = 2;

/// Slot states, in the order a worker goes through them.
pub mod state {
    pub const EMPTY: u32 = 0;
    /// TID published; waiting for the start gate.
    pub const READY: u32 = 1;
    pub const RUNNING: u32 = 2;
    /// Finished its finite work and exited normally.
    pub const DONE: u32 = 3;
    pub const FAILED: u32 = 4;
}

/// Counters a job stage keeps in a slot's `aux` words: first start, last end, jobs.
pub const STAGE_WORDS: usize = 3;
pub const MAX_STAGES: usize = 4;

#[repr(C)]
struct Header {
    magic: u64,
    version: u32,
    slots: u32,
    go: AtomicU32,
}

/// One task's reporting area, on its own cache lines so tasks never false-share.
#[repr(C, align(128))]
pub struct Slot {
    pub tid: AtomicI32,
    pub state: AtomicU32,
    /// Bytes, loops, iterations or jobs: the unit belongs to the worker kind.
    pub progress: AtomicU64,
    /// Kind-specific counters (make: per-stage first start ns, last end ns, jobs).
    pub aux: [AtomicU64; STAGE_WORDS * MAX_STAGES],
    /// Turns taken, for workers that take turns with partners (yield: yields done), so
    /// a partner can tell whether this task ran during its own measurement.
    pub turns: AtomicU64,
    /// The CPU the task last saw itself on (yield: at each batch's end), + 1; 0 = unknown.
    pub cpu: AtomicU32,
    pub latency: AtomicHistogram,
}

/// A mapped shared-memory file with a header and `slots` slots.
pub struct Shm {
    map: MmapMut,
    slots: usize,
}

fn slot_offset() -> usize {
    std::mem::size_of::<Header>().next_multiple_of(std::mem::align_of::<Slot>())
}

impl Shm {
    /// Create (truncate) the file at `path` with room for `slots` slots.
    pub fn create(path: &Path, slots: usize) -> Result<Shm> {
        let len = slot_offset() + slots * std::mem::size_of::<Slot>();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .with_context(|| format!("creating shared memory file {}", path.display()))?;
        file.set_len(len as u64)?;
        let shm = Self::map(&file, slots)?;
        // SAFETY: the header lies within the mapping, which is zeroed and 8-aligned.
        let header = unsafe { &mut *(shm.map.as_ptr() as *mut Header) };
        header.magic = MAGIC;
        header.version = VERSION;
        header.slots = slots as u32;
        for i in 0..slots {
            for stage in 0..MAX_STAGES {
                // Stage start is a running minimum.
                shm.slot(i).aux[stage * STAGE_WORDS].store(u64::MAX, Ordering::Relaxed);
            }
        }
        Ok(shm)
    }

    /// Open a file made by [`Shm::create`] (in a worker).
    pub fn open(path: &Path) -> Result<Shm> {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .with_context(|| format!("opening shared memory file {}", path.display()))?;
        let len = file.metadata()?.len() as usize;
        if len < slot_offset() {
            bail!(
                "{} is too short to be a schedlab shared memory file",
                path.display()
            );
        }
        let slots = (len - slot_offset()) / std::mem::size_of::<Slot>();
        let shm = Self::map(&file, slots)?;
        let header = shm.header();
        if header.magic != MAGIC || header.version != VERSION || header.slots as usize != slots {
            bail!(
                "{} is not a schedlab shared memory file of this version",
                path.display()
            );
        }
        Ok(shm)
    }

    fn map(file: &File, slots: usize) -> Result<Shm> {
        // SAFETY: the file is ours (made by this run); other processes only touch it through
        // the atomics in Header and Slot.
        let map = unsafe { MmapMut::map_mut(file) }.context("mapping shared memory")?;
        Ok(Shm { map, slots })
    }

    fn header(&self) -> &Header {
        // SAFETY: the mapping starts with a Header (checked size), page-aligned.
        unsafe { &*(self.map.as_ptr() as *const Header) }
    }

    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Slot `i`; panics if out of range (a programming error, not input).
    pub fn slot(&self, i: usize) -> &Slot {
        assert!(i < self.slots, "slot {i} out of range");
        // SAFETY: in range, aligned (offset is a multiple of Slot's alignment and the
        // mapping is page-aligned), and Slot is all atomics, valid when zeroed.
        unsafe { &*(self.map.as_ptr().add(slot_offset()) as *const Slot).add(i) }
    }

    /// Open the start gate: every waiting worker begins its loop, at once.
    pub fn open_gate(&self) {
        let go = &self.header().go;
        go.store(1, Ordering::Release);
        // SAFETY: a futex wake on a 4-byte aligned word of a shared mapping; the kernel
        // only reads the address.
        unsafe {
            libc::syscall(libc::SYS_futex, go.as_ptr(), libc::FUTEX_WAKE, i32::MAX);
        }
    }

    pub fn gate_open(&self) -> bool {
        self.header().go.load(Ordering::Acquire) == 1
    }

    /// Sleep until the gate opens or `timeout` passes, without polling: hundreds of
    /// workers waking every millisecond to look would load the machine they are about
    /// to be measured on.
    pub fn wait_gate(&self, timeout: std::time::Duration) {
        let go = &self.header().go;
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: waits on a word of a shared mapping (not FUTEX_PRIVATE: the controller
        // wakes it from another process); returns at once if the gate is already open.
        unsafe {
            libc::syscall(libc::SYS_futex, go.as_ptr(), libc::FUTEX_WAIT, 0u32, &ts);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_mapping_sees_the_first_ones_writes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("shm");
        let a = Shm::create(&path, 3).expect("create");
        let b = Shm::open(&path).expect("open");
        assert_eq!(b.slots(), 3);
        a.slot(2).progress.store(42, Ordering::Relaxed);
        a.slot(2).latency.record(1500);
        a.open_gate();
        assert_eq!(b.slot(2).progress.load(Ordering::Relaxed), 42);
        assert_eq!(b.slot(2).latency.count(), 1);
        assert!(b.gate_open());
        assert_eq!(b.slot(0).aux[0].load(Ordering::Relaxed), u64::MAX);
    }

    #[test]
    fn open_rejects_a_foreign_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("other");
        std::fs::write(&path, vec![7u8; 100_000]).expect("write");
        let err = Shm::open(&path).err().expect("must fail").to_string();
        assert!(err.contains("not a schedlab shared memory file"), "{err}");
    }
}
