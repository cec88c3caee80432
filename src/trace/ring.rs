//! The perf side: per CPU, one sched_switch tracepoint event that owns a ring buffer,
//! with the other tracepoints redirected into that ring (PERF_EVENT_IOC_SET_OUTPUT), so
//! one ring holds all of a CPU's scheduler events in the order they happened. A ring is
//! drained in one pass: one load of the kernel's head, one store of our tail, and no
//! system call, so the traced CPUs see the reader's cache line change once per drain.

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};

use perf_event::events::{Software, Tracepoint};
use perf_event::{Builder, Clock, Counter, SampleFlag};
use perf_event_open_sys::bindings;

use super::decode::{SAMPLE_TYPE, SWITCH_SAMPLE_TYPE};
use super::TraceError;

/// Data pages per CPU ring (plus one control page) at the least: 1024 pages is 4 MiB per
/// CPU with 4 KiB pages. A sched_switch record is 96 bytes and a wake-up 64 (plus two
/// 40-byte context-switch records per switch where the idle gap needs them), so a ring
/// holds 30,000 to 60,000 events.
pub const RING_PAGES: usize = 1024;

/// What all CPUs' first rings may take together, bytes: [`initial_pages`] gives each
/// traced CPU its part, between [`RING_PAGES`] and [`RING_PAGES_FIRST_MAX`].
pub const RINGS_FIRST_BUDGET: usize = 64 << 20;
/// 4096 pages: 16 MiB, over 300 ms of the fastest a CPU produces here (a pipe
/// ping-pong on one CPU: 650,000 events/s, about 52 MB/s).
pub const RING_PAGES_FIRST_MAX: usize = 4096;

/// Data pages for each of `cpus` first rings: the reader drains every 10 ms, but a
/// loaded or debug-built machine (or the host taking the vCPU) can hold it off for far
/// longer, and the first ring, sized before the rate is known, is the one that loses
/// (a 4 MiB ring held 80 ms of the ping-pong: a suite run beside a build lost 38,774
/// records). A few CPUs get room for 300 ms; many share the budget, down to 4 MiB each.
/// The memory is locked kernel memory while tracing (32 MiB on 2 CPUs).
pub fn initial_pages(cpus: usize) -> usize {
    let share = RINGS_FIRST_BUDGET / cpus.max(1) / page_size();
    let pages = share.clamp(RING_PAGES, RING_PAGES_FIRST_MAX);
    // A power of two no larger than the share (the kernel takes 2^n data pages).
    if pages.is_power_of_two() {
        pages
    } else {
        pages.next_power_of_two() / 2
    }
}

/// A ring that loses records is replaced by one at least this many times larger (see
/// grow.rs), up to [`RING_PAGES_MAX`].
pub const RING_GROWTH: usize = 4;
/// ...and large enough to hold this long of the events its CPU was seen to produce.
pub const RING_HOLDS_NS: u64 = 250_000_000;
/// 16,384 pages: 64 MiB per CPU, over 2 s of a CPU producing 250,000 events/s.
pub const RING_PAGES_MAX: usize = 16 * 1024;

/// Records longer than this are skipped when they wrap around the ring's end (ours are
/// at most ~110 bytes; nothing else is written into these rings but LOST records).
pub const MAX_RECORD: usize = 512;

/// One CPU's events and their ring.
pub struct CpuRing {
    pub cpu: u32,
    /// sched_switch first (it owns the ring), then the redirected tracepoints.
    counters: Vec<Counter>,
    /// Their tracepoints' names, for messages.
    names: Vec<String>,
    /// The context-switch record event, if this kernel has one (Linux 4.3+).
    switch_records: Option<Counter>,
    /// Whether the context-switch records are on (they start off: see mod.rs).
    records_on: bool,
    /// Whether sched_waking is filtered in the kernel to cross-CPU wake-ups.
    pub waking_filtered: bool,
    map: memmap2::MmapRaw,
    data_offset: usize,
    data_size: u64,
    /// Data pages, as asked (a power of two).
    pub pages: usize,
    /// Since the ring was opened: when (CLOCK_MONOTONIC ns), bytes and records read,
    /// records the kernel reported lost: the rate a larger ring is sized from.
    pub opened_ns: u64,
    pub read_bytes: u64,
    pub read_records: u64,
    pub lost: u64,
}

/// What one tracepoint is called and what perf calls it.
#[derive(Clone, Debug)]
pub struct TracepointId {
    pub name: String,
    pub id: u64,
}

fn builder(id: u64, cpu: u32) -> Builder<'static> {
    let mut b = Builder::new(Tracepoint::with_id(id));
    b.any_pid()
        .one_cpu(cpu as usize)
        // A tracepoint event with exclude_kernel only fires in user mode (uprobes):
        // these fire in the kernel.
        .exclude_kernel(false)
        .sample_period(1)
        .sample(SampleFlag::from_bits_retain(SAMPLE_TYPE))
        // The same clock as schedlab's monotonic_ns(), so times compare directly.
        .clockid(Clock::MONOTONIC)
        .enabled(false);
    b
}

impl CpuRing {
    /// Open every tracepoint on `cpu` (all tasks), the first owning a ring of `pages`
    /// data pages (a power of two) that the others write into. Nothing is enabled yet.
    ///
    /// With `Wakings::CrossCpu`, sched_waking is filtered in the kernel to wake-ups of
    /// tasks that last ran on another CPU (`target_cpu != cpu`); a kernel that refuses
    /// the filter writes them all (`waking_filtered` says which).
    pub fn open(
        cpu: u32,
        tracepoints: &[TracepointId],
        pages: usize,
        wakings: super::Wakings,
    ) -> Result<CpuRing, TraceError> {
        let page_size = page_size();
        let data_len = pages.next_power_of_two() * page_size;
        let (first, rest) = tracepoints.split_first().ok_or(TraceError::NoCpus)?;
        let (leader, map) = open_leader(first, cpu, page_size, data_len)?;
        let mut counters = Vec::with_capacity(tracepoints.len());
        counters.push(leader);
        let waking_filtered = open_redirected(rest, cpu, wakings, &mut counters)?;
        let switch_records = open_switch_records(cpu, &counters[0]);
        let (data_offset, data_size) = data_area(&map, cpu, page_size, data_len)?;
        Ok(CpuRing {
            cpu,
            counters,
            names: tracepoints.iter().map(|t| t.name.clone()).collect(),
            switch_records,
            records_on: false,
            waking_filtered,
            map,
            data_offset,
            data_size,
            pages: pages.next_power_of_two(),
            opened_ns: crate::clock::monotonic_ns(),
            read_bytes: 0,
            read_records: 0,
            lost: 0,
        })
    }

    /// The ring owner's descriptor, for poll(2).
    pub fn fd(&self) -> RawFd {
        self.counters.first().map_or(-1, AsRawFd::as_raw_fd)
    }

    /// Start all of this CPU's tracepoints (the redirected ones first, so that none of
    /// a context switch's wake-ups is missing once switches flow). The context-switch
    /// records stay off until [`CpuRing::switch_records`] asks for them.
    pub fn enable(&mut self) -> Result<(), TraceError> {
        let cpu = self.cpu;
        for (c, name) in self.counters.iter_mut().zip(&self.names).rev() {
            c.enable().map_err(|e| open_error(name, cpu, &e))?;
        }
        Ok(())
    }

    /// Stop all of this CPU's events; what they wrote stays in the ring.
    pub fn disable(&mut self) {
        self.switch_records(false);
        for c in &mut self.counters {
            let _ = c.disable();
        }
    }

    /// Turn the context-switch records on or off (an ioctl only when that changes).
    /// Optional: a kernel without them only loses the timing of switches from idle.
    pub fn switch_records(&mut self, on: bool) {
        if on == self.records_on {
            return;
        }
        if let Some(c) = &mut self.switch_records {
            let done = if on { c.enable() } else { c.disable() };
            if done.is_ok() {
                self.records_on = on;
            }
        }
    }

    /// Hand every record written since the last drain to `f` as (type, misc, body after
    /// the 8-byte header), oldest first, then give the space back to the kernel. Reads at
    /// most one ring's worth, so it ends even if the kernel keeps writing.
    pub fn drain(
        &mut self,
        scratch: &mut [u8; MAX_RECORD],
        mut f: impl FnMut(u32, u16, &[u8]),
    ) -> u64 {
        let page = self.map.as_mut_ptr() as *mut bindings::perf_event_mmap_page;
        // SAFETY: data_head and data_tail are naturally aligned u64s in the control page
        // that lives as long as `self.map`; the kernel writes data_head, we write
        // data_tail, and both sides access them atomically.
        let (head_ref, tail_ref) = unsafe {
            (
                &*(std::ptr::addr_of_mut!((*page).data_head) as *const AtomicU64),
                &*(std::ptr::addr_of_mut!((*page).data_tail) as *const AtomicU64),
            )
        };
        // Acquire pairs with the kernel's release of data_head: the records before it
        // are fully written.
        let head = head_ref.load(Ordering::Acquire);
        let mut tail = tail_ref.load(Ordering::Relaxed);
        let start = tail;
        let size = self.data_size;
        if head.wrapping_sub(tail) > size {
            // Cannot happen without overwrite mode; resynchronise rather than misread.
            tail_ref.store(head, Ordering::Release);
            return 0;
        }
        // SAFETY: data_offset + data_size lies inside the mapping (checked in open).
        let data = unsafe {
            std::slice::from_raw_parts(self.map.as_ptr().add(self.data_offset), size as usize)
        };
        let mut records = 0;
        while tail < head {
            let at = (tail % size) as usize;
            let mut hdr = [0u8; 8];
            copy_wrapped(data, at, &mut hdr);
            let ty = u32::from_ne_bytes([hdr[0], hdr[1], hdr[2], hdr[3]]);
            let misc = u16::from_ne_bytes([hdr[4], hdr[5]]);
            let len = u16::from_ne_bytes([hdr[6], hdr[7]]) as usize;
            if len < 8 || (len as u64) > head - tail {
                // A torn or corrupt record: drop the rest of this drain.
                tail = head;
                break;
            }
            if at + len <= data.len() {
                f(ty, misc, &data[at + 8..at + len]);
            } else if len <= MAX_RECORD {
                copy_wrapped(data, at, &mut scratch[..len]);
                f(ty, misc, &scratch[8..len]);
            }
            tail += len as u64;
            records += 1;
        }
        // Release: our reads of the records happen before the kernel may reuse them.
        tail_ref.store(tail, Ordering::Release);
        self.read_bytes += tail - start;
        self.read_records += records;
        records
    }
}

/// Copy `out.len()` bytes from the ring starting at `at`, wrapping at its end.
fn copy_wrapped(data: &[u8], at: usize, out: &mut [u8]) {
    let first = out.len().min(data.len() - at);
    out[..first].copy_from_slice(&data[at..at + first]);
    let rest = out.len() - first;
    out[first..].copy_from_slice(&data[..rest]);
}

/// Body of a PERF_RECORD_LOST: id (u64), then how many records were lost (u64).
pub fn lost_count(body: &[u8]) -> u64 {
    body.get(8..16)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_ne_bytes)
}

pub const RECORD_SAMPLE: u32 = bindings::PERF_RECORD_SAMPLE;
pub const RECORD_LOST: u32 = bindings::PERF_RECORD_LOST;
pub const RECORD_SWITCH_CPU_WIDE: u32 = bindings::PERF_RECORD_SWITCH_CPU_WIDE;

/// The event that owns `cpu`'s ring (`first`, sched_switch), and the ring mapped.
fn open_leader(
    first: &TracepointId,
    cpu: u32,
    page_size: usize,
    data_len: usize,
) -> Result<(Counter, memmap2::MmapRaw), TraceError> {
    let mut b = builder(first.id, cpu);
    // Wake a poller when a quarter of the ring is full, so a burst is drained early;
    // the regular drain needs no wake-up at all.
    b.wakeup_watermark(data_len / 4);
    let leader = b.build().map_err(|e| open_error(&first.name, cpu, &e))?;
    let ring_error = |e: io::Error| TraceError::Ring {
        cpu,
        kib: (data_len / 1024) as u64,
        why: ring_why(&e),
    };
    // The ring must exist before other events can be redirected into it.
    let map = memmap2::MmapOptions::new()
        .len(page_size + data_len)
        .map_raw(leader.as_raw_fd())
        .map_err(ring_error)?;
    Ok((leader, map))
}

/// Open the other tracepoints on `cpu`, each redirected into the ring of `counters[0]`
/// and pushed onto `counters`; whether sched_waking took the cross-CPU filter.
fn open_redirected(
    rest: &[TracepointId],
    cpu: u32,
    wakings: super::Wakings,
    counters: &mut Vec<Counter>,
) -> Result<bool, TraceError> {
    let mut waking_filtered = false;
    for tp in rest {
        let counter = builder(tp.id, cpu)
            .build()
            .map_err(|e| open_error(&tp.name, cpu, &e))?;
        set_output(&counter, &counters[0]).map_err(|e| open_error(&tp.name, cpu, &e))?;
        if tp.name == "sched_waking" && wakings == super::Wakings::CrossCpu {
            waking_filtered = set_filter(&counter, &format!("target_cpu != {cpu}")).is_ok();
        }
        counters.push(counter);
    }
    Ok(waking_filtered)
}

/// Some kernels (this project's 6.18 VMs among them) deliver no perf event raised
/// while the idle task runs: a switch from idle to a task never shows as a
/// sched_switch. perf's own context-switch records are written by the task switched
/// in, so they do show it; they fill that gap (see mod.rs). None if this kernel has no
/// such event or will not redirect it into `leader`'s ring.
fn open_switch_records(cpu: u32, leader: &Counter) -> Option<Counter> {
    Builder::new(Software::DUMMY)
        .any_pid()
        .one_cpu(cpu as usize)
        .context_switch(true)
        .sample_id_all(true)
        .sample(SampleFlag::from_bits_retain(SWITCH_SAMPLE_TYPE))
        .clockid(Clock::MONOTONIC)
        .enabled(false)
        .build()
        .ok()
        .filter(|c| set_output(c, leader).is_ok())
}

/// Where the ring's data lies in `map`, as the kernel says: (offset, size).
fn data_area(
    map: &memmap2::MmapRaw,
    cpu: u32,
    page_size: usize,
    data_len: usize,
) -> Result<(usize, u64), TraceError> {
    let page = map.as_ptr() as *const bindings::perf_event_mmap_page;
    // SAFETY: the first page of a perf mapping is the kernel's perf_event_mmap_page.
    let (offset, size) = unsafe {
        (
            std::ptr::read_volatile(std::ptr::addr_of!((*page).data_offset)),
            std::ptr::read_volatile(std::ptr::addr_of!((*page).data_size)),
        )
    };
    // Kernels before 4.1 leave these 0: data starts after the first page.
    let (data_offset, data_size) = if size == 0 {
        (page_size, data_len as u64)
    } else {
        (offset as usize, size)
    };
    if data_offset + data_size as usize > map.len() || !data_size.is_power_of_two() {
        return Err(TraceError::Ring {
            cpu,
            kib: (data_len / 1024) as u64,
            why: format!(
                "the kernel laid out the ring at {data_offset}+{data_size}, outside the mapping"
            ),
        });
    }
    Ok((data_offset, data_size))
}

fn set_output(event: &Counter, leader: &Counter) -> io::Result<()> {
    // SAFETY: both are open perf event descriptors; the ioctl takes the target fd.
    let rc =
        unsafe { perf_event_open_sys::ioctls::SET_OUTPUT(event.as_raw_fd(), leader.as_raw_fd()) };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// An ftrace filter on a tracepoint event: the kernel drops what it rejects before
/// writing a record.
fn set_filter(event: &Counter, filter: &str) -> io::Result<()> {
    let text = std::ffi::CString::new(filter)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "NUL in a filter"))?;
    // SAFETY: an open perf event descriptor and a NUL-terminated string that outlives
    // the call (the kernel copies it).
    let rc = unsafe {
        perf_event_open_sys::ioctls::SET_FILTER(event.as_raw_fd(), text.as_ptr() as *mut _)
    };
    if rc < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

pub(super) fn page_size() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if n > 0 {
        n as usize
    } else {
        4096
    }
}

/// /proc/sys/kernel/perf_event_paranoid, if readable.
pub fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()?
        .trim()
        .parse()
        .ok()
}

fn open_error(tracepoint: &str, cpu: u32, e: &io::Error) -> TraceError {
    let errno = e.raw_os_error().unwrap_or(0);
    let paranoid = paranoid().map_or("unknown".to_string(), |p| p.to_string());
    let why = match errno {
        libc::EACCES | libc::EPERM => format!(
            "not permitted: system-wide tracepoint events need root or CAP_PERFMON (perf_event_paranoid is {paranoid}), and kernel lockdown=confidentiality refuses them even to root"
        ),
        libc::ENOENT => "the kernel knows no tracepoint with the id tracefs gave (was tracefs remounted?)".into(),
        libc::ENODEV => format!("CPU {cpu} is offline or does not exist"),
        libc::EMFILE | libc::ENFILE => {
            "too many open files: schedlab opens 5 descriptors per CPU; raise the limit (ulimit -n)".into()
        }
        libc::EINVAL => "the kernel rejected the event's settings (use_clockid needs Linux 4.1+, SET_OUTPUT needs events of the same CPU and clock)".into(),
        libc::E2BIG => "this kernel's perf_event_attr is older than the one schedlab sends".into(),
        libc::EBUSY => "another tool holds the event exclusively".into(),
        libc::ENOSPC | libc::ENOMEM => "the kernel is out of memory or event slots".into(),
        _ => "unexpected error from perf_event_open".into(),
    };
    TraceError::PerfOpen {
        tracepoint: tracepoint.to_string(),
        cpu,
        errno,
        why: format!("{e}: {why}"),
    }
}

fn ring_why(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => format!(
            "{e}: over the locked-memory limit (perf_event_mlock_kb, RLIMIT_MEMLOCK) without CAP_IPC_LOCK"
        ),
        Some(libc::ENOMEM) => format!("{e}: the kernel could not allocate the ring"),
        Some(libc::EINVAL) => format!("{e}: the ring size must be 1 + 2^n pages"),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_rings_share_a_budget_within_bounds() {
        let page = page_size();
        let bytes = |cpus: usize| initial_pages(cpus) * page * cpus;
        // A few CPUs: the largest first ring each.
        assert_eq!(
            initial_pages(2),
            RING_PAGES_FIRST_MAX.min(RINGS_FIRST_BUDGET / 2 / page)
        );
        assert!(initial_pages(1) <= RING_PAGES_FIRST_MAX);
        // Many: the budget shared, never below the old 4 MiB floor.
        for cpus in [1, 2, 3, 5, 8, 12, 64, 1024] {
            let p = initial_pages(cpus);
            assert!(p.is_power_of_two(), "{cpus}: {p}");
            assert!(
                (RING_PAGES..=RING_PAGES_FIRST_MAX).contains(&p),
                "{cpus}: {p}"
            );
            assert!(
                p == RING_PAGES || bytes(cpus) <= RINGS_FIRST_BUDGET,
                "{cpus}: {p}"
            );
        }
        assert_eq!(initial_pages(1024), RING_PAGES);
    }

    #[test]
    fn wrapped_copies() {
        let data: Vec<u8> = (0..16).collect();
        let mut out = [0u8; 6];
        copy_wrapped(&data, 13, &mut out);
        assert_eq!(out, [13, 14, 15, 0, 1, 2]);
        copy_wrapped(&data, 2, &mut out);
        assert_eq!(out, [2, 3, 4, 5, 6, 7]);
        let mut whole = [0u8; 16];
        copy_wrapped(&data, 0, &mut whole);
        assert_eq!(whole.to_vec(), data);
    }

    #[test]
    fn lost_record_body() {
        let mut body = vec![0u8; 16];
        body[8..16].copy_from_slice(&77u64.to_ne_bytes());
        assert_eq!(lost_count(&body), 77);
        assert_eq!(lost_count(&body[..10]), 0);
    }

    #[test]
    fn open_errors_are_one_line_and_name_the_cause() {
        let e = open_error(
            "sched_switch",
            3,
            &io::Error::from_raw_os_error(libc::EACCES),
        );
        let msg = e.to_string();
        assert!(
            msg.contains("perf_event_paranoid") && msg.contains("CPU 3"),
            "{msg}"
        );
        assert!(!msg.contains('\n'));
        let e = open_error(
            "sched_switch",
            9,
            &io::Error::from_raw_os_error(libc::ENODEV),
        );
        assert!(e.to_string().contains("CPU 9 is offline"), "{e}");
    }
}
