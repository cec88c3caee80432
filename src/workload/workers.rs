//! The worker processes' side: entry points of the hidden `__worker`, `__exec` and `__job`
//! subcommands and the loops each worker kind runs.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::Ordering::{Relaxed, Release};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::kinds::WorkerKind;
use super::shm::{monotonic_ns, state, Shm, Slot, STAGE_WORDS};

/// One thread of a worker process, as the controller asks for it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ThreadSpec {
    pub slot: usize,
    pub kind: WorkerKind,
    pub params: BTreeMap<String, i64>,
}

/// How long a worker waits for the start gate before deciding the controller is gone.
const GATE_TIMEOUT: Duration = Duration::from_secs(30);

/// Die with the parent, even if it is SIGKILLed (jobs started by make need this too).
fn die_with_parent() {
    let _ = nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGKILL);
}

fn gettid() -> i32 {
    nix::unistd::gettid().as_raw()
}

/// Publish this thread's TID and wait until the controller has applied its settings
/// and opens the gate. False if the gate never opened.
fn publish_and_wait(shm: &Shm, slot: &Slot) -> bool {
    slot.tid.store(gettid(), Relaxed);
    slot.state.store(state::READY, Release);
    let start = Instant::now();
    while !shm.gate_open() {
        if start.elapsed() > GATE_TIMEOUT || nix::unistd::getppid().as_raw() == 1 {
            return false;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    slot.state.store(state::RUNNING, Release);
    true
}

/// `schedlab __worker`: run each thread spec as a thread of this process (the first on
/// the main thread, so a single-task process has pid == tid).
pub fn worker_main(shm_path: &Path, threads: &[ThreadSpec]) -> Result<()> {
    die_with_parent();
    let shm = Arc::new(Shm::open(shm_path)?);
    let Some((first, rest)) = threads.split_first() else {
        bail!("a worker process needs at least one thread spec");
    };
    for spec in threads {
        if spec.slot >= shm.slots() {
            bail!("thread spec names slot {} of {}", spec.slot, shm.slots());
        }
    }
    let mut handles = Vec::new();
    for spec in rest {
        let (shm, spec) = (Arc::clone(&shm), spec.clone());
        handles.push(std::thread::spawn(move || run_thread(&shm, &spec)));
    }
    let result = run_thread(&shm, first);
    for h in handles {
        match h.join() {
            Ok(r) => r?,
            Err(_) => bail!("a worker thread panicked"),
        }
    }
    result
}

fn run_thread(shm: &Shm, spec: &ThreadSpec) -> Result<()> {
    let slot = shm.slot(spec.slot);
    if !publish_and_wait(shm, slot) {
        return Ok(());
    }
    let param = |name: &str| spec.params.get(name).copied().unwrap_or(0).max(0) as u64;
    let result = match spec.kind {
        WorkerKind::Spin => spin(slot),
        WorkerKind::Hog => hog(slot),
        WorkerKind::PipeWriter => pipe_writer(slot, param("bytes"), param("writes")),
        WorkerKind::PipeReader => pipe_reader(slot, param("bytes")),
        WorkerKind::MemsetProducer => memset_producer(slot, param("buffer_kib"), param("repeats")),
        WorkerKind::MemsetConsumer => memset_consumer(slot, param("buffer_kib"), param("repeats")),
        WorkerKind::Yield => yielder(slot, param("batch")),
        WorkerKind::Burn => burn_loop(slot, param("ms"), param("sleep_ms")),
        WorkerKind::Make => Err(anyhow::anyhow!("make runs through __exec, not as a thread")),
    };
    let end = if result.is_ok() {
        state::DONE
    } else {
        state::FAILED
    };
    slot.state.store(end, Release);
    result
}

/// Single-writer counter: a plain store is enough and costs no locked instruction.
#[inline]
fn add_progress(slot: &Slot, n: u64) {
    slot.progress
        .store(slot.progress.load(Relaxed) + n, Relaxed);
}

fn spin(slot: &Slot) -> Result<()> {
    let mut n: u64 = 0;
    loop {
        for _ in 0..4096 {
            n = black_box(n + 1);
        }
        slot.progress.store(n, Relaxed);
    }
}

fn hog(slot: &Slot) -> Result<()> {
    let mut n: u64 = 0;
    loop {
        for _ in 0..64 {
            black_box(nix::unistd::getppid());
        }
        n += 64;
        slot.progress.store(n, Relaxed);
    }
}

/// write(2) all of `buf` to `fd`; false when the reader has gone (EPIPE).
fn write_all(fd: i32, mut buf: &[u8]) -> Result<bool> {
    while !buf.is_empty() {
        // SAFETY: buf is a valid readable slice of the given length.
        let n = unsafe { libc::write(fd, buf.as_ptr().cast(), buf.len()) };
        if n < 0 {
            match nix::errno::Errno::last() {
                nix::errno::Errno::EINTR => continue,
                nix::errno::Errno::EPIPE => return Ok(false),
                e => bail!("write to pipe: {e}"),
            }
        }
        buf = &buf[n as usize..];
    }
    Ok(true)
}

/// read(2) into `buf`; 0 at end of file.
fn read_some(fd: i32, buf: &mut [u8]) -> Result<usize> {
    loop {
        // SAFETY: buf is a valid writable slice of the given length.
        let n = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        match nix::errno::Errno::last() {
            nix::errno::Errno::EINTR => continue,
            e => bail!("read from pipe: {e}"),
        }
    }
}

fn pipe_writer(slot: &Slot, bytes: u64, writes: u64) -> Result<()> {
    let buf = vec![b'x'; bytes.max(1) as usize];
    let mut done = 0u64;
    while writes == 0 || done < writes {
        if !write_all(1, &buf)? {
            return Ok(());
        }
        done += 1;
        add_progress(slot, buf.len() as u64);
    }
    Ok(())
}

fn pipe_reader(slot: &Slot, bytes: u64) -> Result<()> {
    let mut buf = vec![0u8; bytes.max(1) as usize];
    loop {
        let n = read_some(0, &mut buf)?;
        if n == 0 {
            return Ok(());
        }
        add_progress(slot, n as u64);
    }
}

fn memset_work(buf: &mut [u8], repeats: u64) {
    for r in 0..repeats {
        buf.fill(r as u8);
        black_box(&mut *buf);
    }
}

fn memset_producer(slot: &Slot, kib: u64, repeats: u64) -> Result<()> {
    let mut buf = vec![0u8; (kib.max(1) * 1024) as usize];
    loop {
        memset_work(&mut buf, repeats);
        if !write_all(1, b"t")? {
            return Ok(());
        }
        add_progress(slot, 1);
    }
}

fn memset_consumer(slot: &Slot, kib: u64, repeats: u64) -> Result<()> {
    let mut buf = vec![0u8; (kib.max(1) * 1024) as usize];
    let mut token = [0u8; 1];
    loop {
        if read_some(0, &mut token)? == 0 {
            return Ok(());
        }
        memset_work(&mut buf, repeats);
        add_progress(slot, 1);
    }
}

/// Time `batch` yields; with a partner on the same CPU each yield is two switches away
/// from our next turn, so per-switch latency is elapsed / (2 * batch), as in 1998.
fn yielder(slot: &Slot, batch: u64) -> Result<()> {
    let batch = batch.max(1);
    loop {
        let start = monotonic_ns();
        for _ in 0..batch {
            // SAFETY: sched_yield has no arguments and cannot fail on Linux.
            unsafe { libc::sched_yield() };
        }
        let elapsed = monotonic_ns().saturating_sub(start);
        slot.latency.record(elapsed / (2 * batch));
        add_progress(slot, batch);
    }
}

fn thread_cpu_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

/// Burn `ms` of this thread's CPU time: fixed work, however long the wait for a CPU.
fn burn_cpu(ms: u64) {
    let until = thread_cpu_ns() + ms * 1_000_000;
    let mut n = 0u64;
    while thread_cpu_ns() < until {
        for _ in 0..10_000 {
            n = black_box(n + 1);
        }
    }
}

fn burn_loop(slot: &Slot, ms: u64, sleep_ms: u64) -> Result<()> {
    loop {
        burn_cpu(ms);
        std::thread::sleep(Duration::from_millis(sleep_ms));
        add_progress(slot, 1);
    }
}

/// `schedlab __exec`: publish the TID, wait for the gate (so settings applied before it
/// are inherited by everything the command forks), then become the command.
pub fn exec_main(shm_path: &Path, slot: usize, argv: &[String]) -> Result<()> {
    die_with_parent();
    let shm = Shm::open(shm_path)?;
    if slot >= shm.slots() {
        bail!("slot {slot} out of range");
    }
    let Some(program) = argv.first() else {
        bail!("__exec needs a command");
    };
    if !publish_and_wait(&shm, shm.slot(slot)) {
        return Ok(());
    }
    let err = std::os::unix::process::CommandExt::exec(
        std::process::Command::new(program).args(&argv[1..]),
    );
    shm.slot(slot).state.store(state::FAILED, Release);
    Err(err).with_context(|| format!("cannot run \"{program}\""))
}

/// `schedlab __job`: one job of a generated Makefile. Records the stage's first start,
/// last end and job count in the make task's slot.
pub fn job_main(shm_path: &Path, slot: usize, stage: usize, ms: u64, io_ms: u64) -> Result<()> {
    die_with_parent();
    let shm = Shm::open(shm_path)?;
    if slot >= shm.slots() || stage >= super::shm::MAX_STAGES {
        bail!("job slot {slot} or stage {stage} out of range");
    }
    let s = shm.slot(slot);
    let words = &s.aux[stage * STAGE_WORDS..(stage + 1) * STAGE_WORDS];
    words[0].fetch_min(monotonic_ns(), Relaxed);
    burn_cpu(ms);
    std::thread::sleep(Duration::from_millis(io_ms));
    words[1].fetch_max(monotonic_ns(), Relaxed);
    words[2].fetch_add(1, Relaxed);
    // Many job processes share this counter, so here it must be an atomic add.
    s.progress.fetch_add(1, Relaxed);
    Ok(())
}
