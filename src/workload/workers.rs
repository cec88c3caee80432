//! The worker processes' side: entry points of the hidden `__worker`, `__exec` and `__job`
//! subcommands and the loops each worker kind runs.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::os::fd::{FromRawFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::Ordering::{Relaxed, Release};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::kinds::WorkerKind;
use super::shm::{state, Shm, Slot, STAGE_WORDS};
use crate::clock::monotonic_ns;

/// Where a task finds its experiment's pipe ends. Never fds 0-2: Rust's runtime polls
/// those before `main`, and a pipe that was ever polled runs the reader wake-up path
/// (and kill_fasync) on every later write for the rest of its life (fs/pipe.c,
/// `poll_usage`), which slows the very experiment schedlab measures.
pub const DATA_IN_FD: i32 = 3;
pub const DATA_OUT_FD: i32 = 4;

/// One thread of a worker process, as the controller asks for it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct ThreadSpec {
    pub slot: usize,
    pub kind: WorkerKind,
    pub params: BTreeMap<String, i64>,
    /// poll() the input pipe once before the loop (arms its poll_usage on purpose).
    #[serde(default)]
    pub poll_stdin: bool,
    /// Slots of the tasks this one takes turns with (yield: the other yielders).
    #[serde(default)]
    pub partners: Vec<usize>,
}

/// How `__exec` wires the command's stdin and stdout.
#[derive(Clone, Copy, Debug, Default)]
pub struct ExecPipes {
    /// A pipe waits on [`DATA_IN_FD`] for the command's stdin.
    pub stdin: bool,
    /// A pipe waits on [`DATA_OUT_FD`] for the command's stdout.
    pub stdout: bool,
    /// poll() stdin once before exec.
    pub poll_stdin: bool,
}

/// One `poll(fd, events=0)`: what Rust's runtime does to fds 0-2, here on purpose (the
/// `polled` variant of pipe-wakeup shows its cost).
fn poll_once(fd: i32) {
    let mut p = libc::pollfd {
        fd,
        events: 0,
        revents: 0,
    };
    // SAFETY: one valid pollfd, no timeout.
    unsafe { libc::poll(&mut p, 1, 0) };
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
        shm.wait_gate(Duration::from_millis(100));
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
    if spec.poll_stdin && spec.kind.reads_stdin() {
        poll_once(DATA_IN_FD);
    }
    let result = match spec.kind {
        WorkerKind::Spin => spin(slot),
        WorkerKind::Hog => hog(slot),
        WorkerKind::PipeWriter => pipe_writer(slot, param("bytes"), param("writes")),
        WorkerKind::PipeReader => pipe_reader(slot, param("bytes")),
        WorkerKind::LineReader => line_reader(slot, param("bytes")),
        WorkerKind::MemsetProducer => memset_producer(slot, param("buffer_kib"), param("repeats")),
        WorkerKind::MemsetConsumer => memset_consumer(slot, param("buffer_kib"), param("repeats")),
        WorkerKind::Yield => {
            let partners: Vec<&Slot> = spec.partners.iter().map(|&p| shm.slot(p)).collect();
            yielder(slot, &partners, param("batch"))
        }
        WorkerKind::Burn => burn_loop(slot, param("ms"), param("sleep_ms")),
        WorkerKind::Make => Err(anyhow::anyhow!("make runs through __exec, not as a thread")),
        WorkerKind::LockHolder => {
            lock_holder(slot, param("hold_ms"), param("burn_ms"), param("pi"))
        }
        WorkerKind::LockWaiter => lock_waiter(slot, param("period_ms"), param("pi")),
        WorkerKind::Ticker => ticker(slot, param("period_ms")),
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
        if !write_all(DATA_OUT_FD, &buf)? {
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
        let n = read_some(DATA_IN_FD, &mut buf)?;
        if n == 0 {
            return Ok(());
        }
        add_progress(slot, n as u64);
    }
}

fn line_reader(slot: &Slot, bytes: u64) -> Result<()> {
    let mut buf = vec![0u8; bytes.max(1) as usize];
    loop {
        let n = read_some(DATA_IN_FD, &mut buf)?;
        if n == 0 {
            return Ok(());
        }
        let lines = buf[..n].iter().filter(|&&b| b == b'\n').count();
        add_progress(slot, lines as u64);
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
        if !write_all(DATA_OUT_FD, b"t")? {
            return Ok(());
        }
        add_progress(slot, 1);
    }
}

fn memset_consumer(slot: &Slot, kib: u64, repeats: u64) -> Result<()> {
    let mut buf = vec![0u8; (kib.max(1) * 1024) as usize];
    let mut token = [0u8; 1];
    loop {
        if read_some(DATA_IN_FD, &mut token)? == 0 {
            return Ok(());
        }
        memset_work(&mut buf, repeats);
        add_progress(slot, 1);
    }
}

/// The CPU this thread runs on, + 1 (0: unknown). glibc reads it from the rseq area:
/// no system call.
fn current_cpu() -> u32 {
    // SAFETY: sched_getcpu has no arguments.
    let cpu = unsafe { libc::sched_getcpu() };
    u32::try_from(cpu).map_or(0, |c| c + 1)
}

/// Time `batch` yields. With partners on the same CPU every yield switches to one of
/// them and back, so a batch is `batch` of our yields plus the partners' turns in
/// between, and the per-switch latency is elapsed / (our yields + theirs), as in 1998
/// (two tasks: elapsed / (2 * batch)).
///
/// A batch counts only if both sides progressed on one CPU: the partners took at least
/// `batch - 1` turns during it, and they and we were on the same CPU at both ends.
/// Otherwise yields returned without a switch (the partner was not runnable: starting,
/// throttled, exiting; or it runs on another CPU) and the batch is dropped, counted in
/// the histogram's `dropped`.
fn yielder(slot: &Slot, partners: &[&Slot], batch: u64) -> Result<()> {
    let batch = batch.max(1);
    let partner_turns = || -> u64 { partners.iter().map(|p| p.turns.load(Relaxed)).sum() };
    let mut turns = 0u64;
    loop {
        let theirs_before = partner_turns();
        let cpu_before = current_cpu();
        let start = monotonic_ns();
        for _ in 0..batch {
            // SAFETY: sched_yield has no arguments and cannot fail on Linux.
            unsafe { libc::sched_yield() };
            turns += 1;
            slot.turns.store(turns, Relaxed);
        }
        let elapsed = monotonic_ns().saturating_sub(start);
        let cpu = current_cpu();
        slot.cpu.store(cpu, Relaxed);
        let theirs = partner_turns().saturating_sub(theirs_before);
        let together =
            cpu != 0 && cpu == cpu_before && partners.iter().all(|p| p.cpu.load(Relaxed) == cpu);
        if partners.is_empty() || theirs + 1 < batch || !together {
            slot.latency.drop_one();
        } else {
            slot.latency.record(elapsed / (batch + theirs));
        }
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

/// Priority inversion's low task: hold the process's lock nearly all the time (a sleep,
/// then `burn_ms` of CPU, inside it), so a waiter always finds it held and the holder
/// always needs the CPU to let go.
fn lock_holder(slot: &Slot, hold_ms: u64, burn_ms: u64, pi: u64) -> Result<()> {
    let lock = super::lock::shared(pi != 0);
    loop {
        lock.lock().context("taking the PI mutex")?;
        std::thread::sleep(Duration::from_millis(hold_ms));
        burn_cpu(burn_ms);
        lock.unlock();
        add_progress(slot, 1);
        // Let a waiter of our own priority take the lock it was just woken for: a plain
        // futex hands nothing over, and without this the holder takes it again at once.
        // SAFETY: sched_yield has no arguments and cannot fail on Linux.
        unsafe { libc::sched_yield() };
    }
}

/// Priority inversion's high task: every `period_ms`, take the lock and record how long
/// that waited (the latency histogram), counting acquisitions as progress.
fn lock_waiter(slot: &Slot, period_ms: u64, pi: u64) -> Result<()> {
    let lock = super::lock::shared(pi != 0);
    loop {
        std::thread::sleep(Duration::from_millis(period_ms));
        let start = monotonic_ns();
        lock.lock().context("taking the PI mutex")?;
        let waited = monotonic_ns().saturating_sub(start);
        lock.unlock();
        slot.latency.record(waited);
        add_progress(slot, 1);
    }
}

/// A periodic task: sleep `period_ms`, record how much later than asked it ran again
/// (timer slack, waiting for a CPU, a throttled cgroup's wait for its next period).
fn ticker(slot: &Slot, period_ms: u64) -> Result<()> {
    let period = Duration::from_millis(period_ms);
    loop {
        let start = monotonic_ns();
        std::thread::sleep(period);
        let late = monotonic_ns()
            .saturating_sub(start)
            .saturating_sub(period.as_nanos() as u64);
        slot.latency.record(late);
        add_progress(slot, 1);
    }
}

/// `schedlab __exec`: publish the TID, wait for the gate (so settings applied before it
/// are inherited by everything the command forks), then become the command.
pub fn exec_main(shm_path: &Path, slot: usize, argv: &[String], pipes: ExecPipes) -> Result<()> {
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
    // Only now, after this Rust program's start-up poll of fds 0-2 (which saw
    // /dev/null), do the pipes become the command's stdin and stdout.
    if pipes.stdin {
        // SAFETY: fd 3 was handed to this process for this alone; nothing else owns it.
        let fd = unsafe { OwnedFd::from_raw_fd(DATA_IN_FD) };
        nix::unistd::dup2_stdin(&fd).context("moving the task's stdin pipe to fd 0")?;
    }
    if pipes.stdout {
        // SAFETY: as above, for fd 4.
        let fd = unsafe { OwnedFd::from_raw_fd(DATA_OUT_FD) };
        nix::unistd::dup2_stdout(&fd).context("moving the task's stdout pipe to fd 1")?;
    }
    if pipes.poll_stdin {
        poll_once(0);
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
