//! The sampling path: a thread that reads procfs for every task each interval and sends
//! owned batches of raw counters to the consumer. Batches come back through `recycle`,
//! so in steady state the sampler allocates nothing.

pub mod files;
mod interval;
pub mod parse;

pub use interval::{Interval, FASTEST as FASTEST_INTERVAL};

use std::sync::atomic::Ordering;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::clock::monotonic_ns;
use crate::cpuset::CpuSet;
use crate::histogram::Histogram;
use crate::workload::contain::Usage;
use crate::workload::shm::Shm;
use files::{pread_all, SystemFiles, TaskFiles};
use parse::{CpuTimes, SchedFile, Schedstat, StatFile};

/// A task to sample.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    /// Index of the task in the consumer's list; samples carry it back.
    pub id: usize,
    pub pid: i32,
    pub tid: i32,
    /// Its shared-memory slot, for progress and latency.
    pub slot: Option<usize>,
    pub latency: bool,
    /// The workload's cgroup does not hold it (a process attached to): the experiment's
    /// CPU time is the cgroup's plus this task's (see [`SystemSample::outside_ns`]).
    pub outside: bool,
}

/// Raw counters of one task at one instant.
#[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TaskSample {
    pub id: usize,
    /// CLOCK_MONOTONIC ns when this task's counters were read (a round reads tasks one
    /// after another, and may be preempted in between); 0 in old recordings.
    #[serde(default)]
    pub t_ns: u64,
    /// False once the task has exited; counters then keep their last values.
    pub alive: bool,
    pub sched: SchedFile,
    pub schedstat: Option<Schedstat>,
    pub stat: Option<StatFile>,
    /// Allowed CPUs, from the last read of `status` (read only every few samples).
    pub cpus_allowed: Option<CpuSet>,
    pub progress: u64,
    /// Copy of the task's latency histogram (empty for tasks that measure none).
    #[serde(default, skip_serializing_if = "Histogram::is_empty")]
    pub latency: Histogram,
}

impl TaskSample {
    /// Policy as the kernel reports it (fresh every round, from sched).
    pub fn policy(&self) -> Option<u32> {
        self.sched.policy.or(self.stat.and_then(|s| s.policy))
    }

    /// Nice: derived from the kernel prio for fair tasks (fresh every round), else
    /// from the last read of stat.
    pub fn nice(&self) -> Option<i32> {
        let fair = matches!(self.policy(), Some(0 | 3));
        match self.sched.prio.and_then(parse::nice_from_prio) {
            Some(n) if fair => Some(n),
            _ => self.stat.map(|s| s.nice),
        }
    }

    /// RT priority (1..99 for FIFO/RR, else 0): kernel prio = 99 - rt_priority.
    pub fn rt_priority(&self) -> Option<u32> {
        match (self.policy(), self.sched.prio) {
            (Some(1 | 2), Some(prio)) if (0..99).contains(&prio) => Some((99 - prio) as u32),
            (Some(_), Some(_)) => Some(0),
            _ => self.stat.and_then(|s| s.rt_priority),
        }
    }

    /// The CPU the task last ran on.
    pub fn last_cpu(&self) -> Option<u32> {
        self.stat.and_then(|s| s.processor)
    }

    /// Schedstat is usable unless it reads "0 0 0" for a task that has run
    /// (CONFIG_SCHED_INFO off prints zeros for everyone).
    pub fn schedstat_valid(&self) -> bool {
        match self.schedstat {
            Some(ss) => {
                ss.run_ns > 0
                    || ss.timeslices > 0
                    || self.sched.sum_exec_runtime_ns.unwrap_or(0) == 0
            }
            None => false,
        }
    }

    /// On-CPU time in ns: schedstat's run time, or se.sum_exec_runtime when schedstat
    /// is off.
    pub fn run_ns(&self) -> Option<u64> {
        if self.schedstat_valid() {
            self.schedstat.map(|ss| ss.run_ns)
        } else {
            self.sched.sum_exec_runtime_ns
        }
    }
}

impl Clone for TaskSample {
    fn clone(&self) -> Self {
        let mut out = TaskSample::default();
        out.clone_from(self);
        out
    }

    /// Field by field, so the histogram's buffer is reused: the sampler calls this
    /// every round for every task.
    fn clone_from(&mut self, src: &Self) {
        self.id = src.id;
        self.t_ns = src.t_ns;
        self.alive = src.alive;
        self.sched = src.sched;
        self.schedstat = src.schedstat;
        self.stat = src.stat;
        self.cpus_allowed = src.cpus_allowed;
        self.progress = src.progress;
        self.latency.clone_from(&src.latency);
    }
}

/// System-wide counters at one instant. `cpus` is empty in a round that did not read
/// /proc/stat (see [`SYSTEM_EVERY_NS`]).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SystemSample {
    pub total: CpuTimes,
    pub cpus: Vec<CpuTimes>,
    /// CPU time schedlab's own threads had used when /proc/stat was read, in ns: the
    /// observer's share of the busy time, which is neither the experiment nor foreign.
    #[serde(default)]
    pub observer_ns: u64,
    /// CPU time of the workload's cgroup (every task and all they forked), ns, when the
    /// workload has one.
    #[serde(default)]
    pub experiment_ns: Option<u64>,
    /// CPU time the experiment's tasks outside that cgroup (processes attached to) used
    /// since sampling began, ns: each task counted from its first read, so one that
    /// joins brings none of its past. Part of the experiment, not foreign load.
    #[serde(default)]
    pub outside_ns: u64,
}

/// /proc/stat is read at most this often. Generating it costs as much as a task's sched
/// file (it walks every interrupt's counters), and its times are 10 ms ticks, so at a
/// 20 ms interval per-round CPU shares would be 0 %, 50 % or 100 % anyway.
pub const SYSTEM_EVERY_NS: u64 = 100_000_000;

/// Everything read in one sampling round.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Batch {
    pub seq: u64,
    /// CLOCK_MONOTONIC ns when the round started.
    pub t_ns: u64,
    pub tasks: Vec<TaskSample>,
    pub system: SystemSample,
    /// How long the round took to read, in ns (the sampler's own cost).
    pub cost_ns: u64,
    /// The interval the sampler kept when it took this round, in ns: the one place the
    /// workbench learns it from (0 in recordings made before it was recorded).
    #[serde(default)]
    pub interval_ns: u64,
}

/// Commands the consumer sends to the sampler thread.
#[derive(Debug)]
pub enum Command {
    /// The shared [`Interval`] changed: start the next round one new interval from now
    /// (a sampler waiting out a 5 s interval would otherwise take the new one 5 s late).
    Reschedule,
    /// Re-read every file on the next round (after a knob change).
    ReadAllNext,
    /// Replace the task list (after a restart).
    SetTargets(Vec<Target>),
    /// Sample out of turn (used at the end of a run): now, or half an interval after the
    /// last round if that is later.
    SampleNow,
    /// Stop (true) or resume (false) sampling.
    Pause(bool),
}

/// Every how many rounds `sched` and `stat` are read even for a task that did not run
/// and did not migrate (a safety net for changes made from outside schedlab).
const FULL_EVERY: u64 = 10;
/// Every how many rounds `status` (allowed CPUs: they change only by a knob, after
/// which the consumer asks for a read) is read without being asked.
const STATUS_EVERY: u64 = 50;

/// Which optional files a round reads for every task.
#[derive(Clone, Copy)]
struct Reads {
    /// `sched` and `stat` whether or not the task ran.
    full: bool,
    /// `status`.
    status: bool,
}

struct TaskReader {
    target: Target,
    files: Option<TaskFiles>,
    last: TaskSample,
    /// Its run time when its CPU time was last added to the outside total.
    counted_ns: Option<u64>,
}

/// Reads procfs for a set of tasks; the state of the sampling thread, usable directly
/// (benchmarks, tests) or through [`Sampler`].
pub struct Reader {
    tasks: Vec<TaskReader>,
    system: SystemFiles,
    shm: Option<Arc<Shm>>,
    buf: Vec<u8>,
    rounds: u64,
    read_all_next: bool,
    /// When /proc/stat was last read (CLOCK_MONOTONIC ns).
    system_read_ns: Option<u64>,
    /// The workload cgroup's CPU time, read with /proc/stat.
    usage: Option<Usage>,
    /// CPU time of the tasks outside the cgroup so far (see [`SystemSample::outside_ns`]).
    outside_ns: u64,
}

impl Reader {
    pub fn new(targets: Vec<Target>, shm: Option<Arc<Shm>>) -> Reader {
        let mut r = Reader {
            tasks: Vec::new(),
            system: SystemFiles::open(),
            shm,
            buf: vec![0; 16 * 1024],
            rounds: 0,
            read_all_next: true,
            system_read_ns: None,
            usage: None,
            outside_ns: 0,
        };
        r.set_targets(targets);
        r
    }

    pub fn set_targets(&mut self, targets: Vec<Target>) {
        // A task kept across the change goes on being counted from where it was.
        let counted: std::collections::BTreeMap<i32, u64> = self
            .tasks
            .iter()
            .filter_map(|r| Some((r.target.tid, r.counted_ns?)))
            .collect();
        self.tasks = targets
            .into_iter()
            .map(|target| TaskReader {
                files: TaskFiles::open(target.pid, target.tid).ok(),
                last: TaskSample {
                    id: target.id,
                    ..TaskSample::default()
                },
                counted_ns: counted.get(&target.tid).copied(),
                target,
            })
            .collect();
        self.read_all_next = true;
    }

    /// Add what each task outside the cgroup ran since the last /proc/stat read.
    fn count_outside(&mut self) -> u64 {
        for r in self.tasks.iter_mut().filter(|r| r.target.outside) {
            // A task that has exited keeps its last counters: nothing more to add.
            if let Some(now) = r.last.run_ns().filter(|_| r.last.alive) {
                if let Some(before) = r.counted_ns {
                    self.outside_ns += now.saturating_sub(before);
                }
                r.counted_ns = Some(now);
            }
        }
        self.outside_ns
    }

    /// Read the workload cgroup's CPU time with every /proc/stat read.
    pub fn with_usage(mut self, usage: Option<Usage>) -> Reader {
        self.usage = usage;
        self
    }

    /// Read every file of every task in the next round (after a knob change).
    pub fn read_all_next(&mut self) {
        self.read_all_next = true;
    }

    /// Read /proc/stat in the next round whenever it was last read (the last round of a
    /// run, so CPU summaries reach its end).
    pub fn read_system_next(&mut self) {
        self.system_read_ns = None;
    }

    /// Read every task and the system counters into `batch` (its vectors are reused).
    pub fn sample_into(&mut self, batch: &mut Batch) {
        let started = Instant::now();
        batch.t_ns = monotonic_ns();
        batch.seq = self.rounds;
        let reads = Reads {
            full: self.read_all_next || self.rounds.is_multiple_of(FULL_EVERY),
            status: self.read_all_next || self.rounds.is_multiple_of(STATUS_EVERY),
        };
        self.read_all_next = false;
        self.rounds += 1;
        batch
            .tasks
            .resize_with(self.tasks.len(), TaskSample::default);
        for (reader, out) in self.tasks.iter_mut().zip(batch.tasks.iter_mut()) {
            read_task(reader, reads, &mut self.buf, self.shm.as_deref());
            out.clone_from(&reader.last);
        }
        let sys = &mut batch.system;
        sys.cpus.clear();
        // Rounds drift by a few ms: one due "almost" 100 ms later counts as due, so a
        // 100 ms interval reads /proc/stat every round, not every other.
        let due = self
            .system_read_ns
            .is_none_or(|t| batch.t_ns.saturating_sub(t) >= SYSTEM_EVERY_NS * 9 / 10);
        if let (true, Some(f)) = (due, &self.system.stat) {
            if let Ok(text) = pread_all(f, &mut self.buf) {
                parse::parse_proc_stat(text, &mut sys.total, &mut sys.cpus);
                sys.observer_ns = crate::system::own_cpu_ns();
                sys.experiment_ns = self.usage.as_ref().and_then(Usage::read_ns);
                sys.outside_ns = self.count_outside();
                self.system_read_ns = Some(batch.t_ns);
            }
        }
        batch.cost_ns = started.elapsed().as_nanos() as u64;
    }
}

/// Read one task's files into `reader.last`; marks it dead once its files are gone or
/// it has become a zombie. One `pread` per file read, and only the files whose fields
/// can have changed:
///
/// - `schedstat` (run time, wait, times scheduled) every round: it is the cheapest, and
///   it says whether the task ran at all.
/// - `sched` (switches, migrations, policy, prio) when the task was switched in since
///   the last round (schedstat's count of times scheduled moved): a task that never got
///   a CPU, or kept one all along, cannot have switched or migrated, and its policy and
///   prio change only by a knob (which asks for a full read).
/// - `stat` (last CPU, nice, state) only when the task migrated: the last CPU changes
///   only then (se.nr_migrations moves; a wakeup on another CPU counts).
/// - `status` (allowed CPUs) only when asked after a knob change.
///
/// Every [`FULL_EVERY`] rounds `sched` and `stat` are read anyway, every
/// [`STATUS_EVERY`] `status`, and everything when asked. A reaped task fails every read,
/// which is how an exit shows.
fn read_task(reader: &mut TaskReader, reads: Reads, buf: &mut Vec<u8>, shm: Option<&Shm>) {
    let full_read = reads.full;
    let last = &mut reader.last;
    if let (Some(slot), Some(shm)) = (reader.target.slot, shm) {
        if slot < shm.slots() {
            let s = shm.slot(slot);
            last.progress = s.progress.load(Ordering::Relaxed);
            if reader.target.latency {
                s.latency.snapshot_into(&mut last.latency);
            }
        }
    }
    let Some(files) = &reader.files else {
        last.alive = false;
        return;
    };
    let mut alive = true;
    let mut switched_in = true;
    // The counters below are all read within a few microseconds of this.
    last.t_ns = monotonic_ns();
    if let Some(f) = &files.schedstat {
        match pread_all(f, buf).ok().and_then(parse::parse_schedstat) {
            Some(s) => {
                // "0 0 0" (CONFIG_SCHED_INFO off) tells nothing: read sched as well.
                switched_in = last.schedstat.is_none_or(|l| l.timeslices != s.timeslices)
                    || s == Schedstat::default();
                last.schedstat = Some(s);
            }
            None => alive = false,
        }
    }
    let prev = last.sched;
    if alive && (switched_in || full_read || last.sched == SchedFile::default()) {
        alive = match files.sched.as_ref().map(|f| pread_all(f, buf)) {
            Some(Ok(text)) if !text.is_empty() => {
                last.sched = parse::parse_sched(text);
                true
            }
            Some(_) => false,
            None => true,
        };
    }
    let migrated = prev.nr_migrations != last.sched.nr_migrations;
    if alive && (full_read || migrated || last.stat.is_none() || files.sched.is_none()) {
        if let Some(f) = &files.stat {
            match pread_all(f, buf).ok().and_then(parse::parse_stat) {
                Some(stat) if stat.state == b'Z' || stat.state == b'X' => alive = false,
                Some(stat) => last.stat = Some(stat),
                None => alive = false,
            }
        }
    }
    if alive && (reads.status || last.cpus_allowed.is_none()) {
        if let Some(f) = &files.status {
            if let Ok(text) = pread_all(f, buf) {
                let status = parse::parse_status(text);
                if status.cpus_allowed.is_some() {
                    last.cpus_allowed = status.cpus_allowed;
                }
            }
        }
    }
    last.alive = alive;
    if !alive {
        // Stop reading a dead task's files; the last good values stay.
        reader.files = None;
    }
}

/// The sampler thread and its channels.
pub struct Sampler {
    interval: Interval,
    commands: Sender<Command>,
    batches: Receiver<Batch>,
    recycle: Sender<Batch>,
    handle: Option<JoinHandle<()>>,
}

impl Sampler {
    /// Start sampling `targets` every `interval` (read again at every round); the first
    /// round happens at once.
    pub fn spawn(
        targets: Vec<Target>,
        shm: Option<Arc<Shm>>,
        usage: Option<Usage>,
        interval: Interval,
    ) -> std::io::Result<Sampler> {
        let shared = interval.clone();
        let (cmd_tx, cmd_rx) = mpsc::channel();
        let (batch_tx, batch_rx) = mpsc::channel();
        let (recycle_tx, recycle_rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("schedlab-sampler".into())
            .spawn(move || {
                // Before opening anything: under load a nice-0 thread opening hundreds of
                // files would take seconds.
                crate::knob::task::elevate_if_requested(true);
                sampler_loop(
                    Reader::new(targets, shm).with_usage(usage),
                    &shared,
                    cmd_rx,
                    batch_tx,
                    recycle_rx,
                )
            })?;
        Ok(Sampler {
            interval,
            commands: cmd_tx,
            batches: batch_rx,
            recycle: recycle_tx,
            handle: Some(handle),
        })
    }

    pub fn send(&self, cmd: Command) {
        let _ = self.commands.send(cmd);
    }

    /// The interval the sampler follows.
    pub fn interval(&self) -> &Interval {
        &self.interval
    }

    /// The next batch, if one arrives within `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<Batch> {
        self.batches.recv_timeout(timeout).ok()
    }

    /// Give a processed batch back, so the sampler can reuse its buffers.
    pub fn recycle(&self, batch: Batch) {
        let _ = self.recycle.send(batch);
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        // Closing the command channel stops the thread at its next wait.
        let (dead_tx, _) = mpsc::channel();
        self.commands = dead_tx;
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// When the round after one due at `due` runs: an interval later on the same grid; a
/// whole interval from `now` when the sampler fell behind (skip, don't burst); and never
/// sooner than half an interval after the last round began. A round a millisecond after
/// a late one would read no run time for a running task (schedstat moves at ticks and
/// switches): a share of 0 that cannot be true.
fn next_round(
    due: Instant,
    interval: Duration,
    now: Instant,
    last_round: Option<Instant>,
) -> Instant {
    let mut next = due + interval;
    if next < now {
        next = now + interval;
    }
    match last_round {
        Some(last) => next.max(soonest_after(last, interval)),
        None => next,
    }
}

/// The soonest a round may start after one that began at `last`: half an interval.
fn soonest_after(last: Instant, interval: Duration) -> Instant {
    last + interval / 2
}

fn sampler_loop(
    mut reader: Reader,
    shared: &Interval,
    commands: Receiver<Command>,
    batches: Sender<Batch>,
    recycle: Receiver<Batch>,
) {
    let mut next = Instant::now();
    let mut paused = false;
    let mut last_round: Option<Instant> = None;
    loop {
        // What this round is stamped with and the next one waits for.
        let interval = shared.get();
        if !paused {
            let mut batch = recycle.try_recv().unwrap_or_default();
            last_round = Some(Instant::now());
            reader.sample_into(&mut batch);
            batch.interval_ns = interval.as_nanos() as u64;
            if batches.send(batch).is_err() {
                return;
            }
        }
        next = next_round(next, interval, Instant::now(), last_round);
        // Wait for the next round, handling commands as they come.
        loop {
            let wait = next.saturating_duration_since(Instant::now());
            match commands.recv_timeout(wait) {
                Ok(Command::Reschedule) => next = Instant::now() + shared.get(),
                Ok(Command::ReadAllNext) => reader.read_all_next(),
                Ok(Command::SetTargets(t)) => reader.set_targets(t),
                Ok(Command::SampleNow) => {
                    reader.read_system_next();
                    match last_round.map(|t| soonest_after(t, interval)) {
                        Some(at) if at > Instant::now() => next = at,
                        _ => break,
                    }
                }
                Ok(Command::Pause(p)) => paused = p,
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    #[test]
    fn a_round_stays_on_its_grid_skips_when_behind_and_never_follows_the_last_closely() {
        let t0 = Instant::now();
        let interval = 100 * MS;
        // On time: the next is an interval after the one due.
        assert_eq!(
            next_round(t0, interval, t0 + 2 * MS, Some(t0)),
            t0 + interval
        );
        // Late by 30 ms: back on the grid, 70 ms after the late round.
        assert_eq!(
            next_round(t0, interval, t0 + 32 * MS, Some(t0 + 30 * MS)),
            t0 + interval
        );
        // Late by 60 ms (as a run here once was) or 99 ms: not 40 ms or 1 ms after it,
        // but half an interval.
        assert_eq!(
            next_round(t0, interval, t0 + 62 * MS, Some(t0 + 60 * MS)),
            t0 + 110 * MS
        );
        assert_eq!(
            next_round(t0, interval, t0 + 99 * MS, Some(t0 + 99 * MS)),
            t0 + 149 * MS
        );
        // Behind by more than an interval: a whole interval from now, no burst.
        assert_eq!(
            next_round(t0, interval, t0 + 250 * MS, Some(t0 + 240 * MS)),
            t0 + 350 * MS
        );
        // The first round: nothing to keep away from.
        assert_eq!(next_round(t0, interval, t0, None), t0 + interval);
    }
}
