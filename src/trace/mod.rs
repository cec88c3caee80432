//! Scheduler tracepoints for the experiment's tasks: sched_switch, sched_waking,
//! sched_wakeup(_new) and sched_migrate_task on every traced CPU, read from perf ring
//! buffers by one thread ("schedlab-trace") and turned into per-task counts, wakeup
//! latencies, run-queue delays and preemptors.
//!
//! The path: tracefs.rs finds (or mounts, journaled) tracefs and reads the format files;
//! format.rs parses them; ring.rs opens one perf event per tracepoint per CPU, all of a
//! CPU's in one ring; decode.rs turns raw samples into [`SchedEvent`]s using the parsed
//! offsets; order.rs merges the CPUs' streams by time; stats.rs aggregates the targets.
//!
//! Ordering: each CPU's ring is in time order; the CPUs' streams of target events are
//! merged by time (order.rs) up to a horizon 2 ms behind the drain's clock reading, so
//! the aggregation sees one ordered stream (it also survives a stray late event, see
//! stats.rs). Events of non-targets are only counted, in read order.
//!
//! The idle gap: some kernels (the project's 6.18 VMs) deliver no perf event raised
//! while the idle task runs, so a switch from idle to a task never arrives as a
//! sched_switch, nor does a wake-up raised in an idle CPU's interrupt. A sixth event
//! per CPU asks for perf's context-switch records, which the incoming task writes: a
//! switch-in after idle that no sched_switch showed becomes a Switch event (counted in
//! [`TraceFinal::idle_switches_filled`]). The records cost two more records per switch,
//! so they are paced: on only for a CPU that went idle in the last [`IDLE_QUIET_NS`]
//! (a CPU kept busy by a ping-pong writes none), off for good once a kernel proves it
//! shows switches from idle. A switch-in the records missed (the CPU went idle and woke
//! between two drains) is inferred when the task next switches out, without a time
//! ([`TraceFinal::idle_switches_inferred`]). A sleeping task switched in without a
//! wake-up seen still counts one, as [`TaskSched::wakeups_unseen`], without a latency.
//!
//! sched_waking is filtered in the kernel (an ftrace filter on the perf event) to
//! wake-ups of tasks that last ran on another CPU: on this VM writing every sched_waking
//! costs a pipe ping-pong a tenth or more of its speed, and a same-CPU wake-up's
//! sched_wakeup follows its sched_waking within a microsecond on the same CPU, so its
//! latency starts at sched_wakeup instead ([`Wakings::All`] keeps them all).
//!
//! What it costs: the kernel writes one ~100-byte record per event into a per-CPU ring
//! (plus two 40-byte context-switch records per switch on CPUs that go idle);
//! the tracer thread drains every ring every 10 ms (or when one is a quarter full) with
//! no system call per event and no allocation per event once its queues have grown.
//! schedlab's own threads, the tracer included, are traced like any task but counted
//! only if they are targets.

mod decode;
mod drain;
mod format;
mod grow;
use drain::Reader;
mod order;
mod ring;
mod stats;
mod tracefs;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

pub use decode::{Decoder, SchedFormats, Undecodable, Unusable, TRACEPOINTS};
pub use format::{Field, Format, FormatError};
pub use ring::RING_PAGES;
pub use stats::{comm_str, Aggregator, HIST_HIGH_NS};

use crate::workload::shm::monotonic_ns;

/// A task to account: its thread id and the name to report it under.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceTarget {
    pub tid: i32,
    pub name: String,
}

/// Which sched_waking events the kernel writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wakings {
    /// Only wake-ups of tasks that last ran on another CPU (filtered in the kernel);
    /// a same-CPU wake-up's latency starts at its sched_wakeup, about a microsecond
    /// later than its sched_waking.
    #[default]
    CrossCpu,
    /// Every sched_waking (`--trace-every-waking`): exact wake-up latencies, at a cost
    /// of up to a tenth of a wake-up-heavy experiment's speed on a VM.
    All,
}

/// One decoded scheduler event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SchedEvent {
    /// CLOCK_MONOTONIC nanoseconds (the perf events use clockid CLOCK_MONOTONIC), so
    /// times compare with schedlab's `monotonic_ns()`.
    pub t_ns: u64,
    pub cpu: u32,
    pub kind: EventKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    /// sched_waking: `pid` is being woken by `waker` (common_pid, the task running on `cpu`).
    Waking {
        pid: i32,
        waker: i32,
        target_cpu: i32,
    },
    /// sched_wakeup and sched_wakeup_new: `pid` is runnable on `target_cpu`; `waker` is
    /// common_pid, the task running where the event fired (the waker when the wake-up
    /// was done on its own CPU, whoever ran on the target CPU when queued there).
    Wakeup {
        pid: i32,
        waker: i32,
        target_cpu: i32,
    },
    /// Not a tracepoint: `pid` was switched in on this CPU after idle, which this kernel
    /// did not show (see [`TraceFinal::idle_switches_inferred`]); when is unknown.
    SwitchedIn { pid: i32 },
    /// sched_switch. `prev_state & 0xff == 0` means prev was still runnable ("R", or
    /// "R+" = 0x100 when preempted).
    Switch {
        prev_pid: i32,
        prev_state: i64,
        next_pid: i32,
        prev_comm: [u8; 16],
        next_comm: [u8; 16],
    },
    Migrate {
        pid: i32,
        orig_cpu: i32,
        dest_cpu: i32,
    },
}

/// Latency percentiles in microseconds (as the tables print them). From hdrhistogram
/// with 3 significant digits: each percentile is within 0.1 % of the true sample value
/// (and never above `max_us`, which is exact); values past 10 s count as 10 s in the
/// percentiles. A run's JSON carries them as integer nanoseconds ([`LatencyNs`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct LatencySummary {
    pub count: u64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
}

/// [`LatencySummary`] as a run's JSON has it (schema 3): whole nanoseconds, the one
/// latency unit of `metrics.latency` and the traced tasks' `sched`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct LatencyNs {
    pub count: u64,
    pub p50_ns: u64,
    pub p90_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
}

impl From<&LatencySummary> for LatencyNs {
    fn from(l: &LatencySummary) -> Self {
        // From nanosecond histograms: rounding gives the nanoseconds back exactly.
        let ns = |us: f64| (us * 1000.0).round().max(0.0) as u64;
        LatencyNs {
            count: l.count,
            p50_ns: ns(l.p50_us),
            p90_ns: ns(l.p90_us),
            p99_ns: ns(l.p99_us),
            p999_ns: ns(l.p999_us),
            max_ns: ns(l.max_us),
        }
    }
}

fn as_ns<S: serde::Serializer>(l: &LatencySummary, s: S) -> Result<S::Ok, S::Error> {
    serde::Serialize::serialize(&LatencyNs::from(l), s)
}

/// A task that was switched in when a target was preempted.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Preemptor {
    /// The task's name if it is one of the experiment's, else the kernel's comm ("pid N"
    /// when the kernel gave none).
    pub comm: String,
    pub pid: i32,
    pub count: u64,
}

/// Per task, over the whole trace.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct TaskSched {
    pub tid: i32,
    pub name: String,
    pub switches_in: u64,
    /// sched_wakeup and sched_wakeup_new events of the task, plus `wakeups_unseen`.
    pub wakeups: u64,
    /// Wake-ups inferred without an event: the task switched in from a sleep and no
    /// sched_wakeup was seen (see [`TraceFinal::idle_switches_filled`]). They have no
    /// wakeup latency.
    pub wakeups_unseen: u64,
    /// Switched out while runnable (prev_state & 0xff == 0, i.e. "R"/"R+").
    pub preempted: u64,
    /// Switched out sleeping.
    pub blocked: u64,
    pub migrations: u64,
    /// sched_waking -> switched in.
    #[serde(serialize_with = "as_ns")]
    pub wakeup_latency: LatencySummary,
    /// Preempted (switched out runnable) -> switched in again.
    #[serde(serialize_with = "as_ns")]
    pub runq_delay: LatencySummary,
    /// `wakeup_latency`'s histogram: non-empty buckets, one per power of two of ns
    /// (bounds within hdrhistogram's 0.1 %).
    pub wakeup_latency_histogram: Vec<crate::workload::histogram::ReportBucket>,
    /// `runq_delay`'s histogram, the same way.
    pub runq_delay_histogram: Vec<crate::workload::histogram::ReportBucket>,
    /// Who was switched in when this task was preempted, top 5 by count.
    pub preemptors: Vec<Preemptor>,
}

/// What one interval added (for live graphs and the CSV).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TraceBatch {
    /// The interval's end: events before this time are in this batch or an earlier one.
    pub t_ns: u64,
    pub tasks: Vec<TaskInterval>,
    /// Events decoded in the interval (all tasks, not only targets; those of
    /// non-targets are counted when read, up to ~12 ms after their time).
    pub events: u64,
    /// Records the kernel reported lost since the previous batch.
    pub lost: u64,
    /// Per target (tid): who was switched in when it was preempted, the top 5 since the
    /// trace started (cumulative, not per interval), for the workbench's live panel.
    pub preemptors: Vec<(i32, Vec<Preemptor>)>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TaskInterval {
    pub tid: i32,
    pub switches_in: u64,
    pub wakeups: u64,
    pub preempted: u64,
    pub blocked: u64,
    /// 0 when the interval had no sample.
    pub wakeup_p50_us: f64,
    pub wakeup_p99_us: f64,
    pub runq_p50_us: f64,
    pub runq_p99_us: f64,
}

/// At the end.
pub struct TraceFinal {
    pub tasks: Vec<TaskSched>,
    /// The last `keep` window, oldest first, only events touching a target (as
    /// prev/next/pid/waker); at most [`KEEP_MAX_EVENTS`] of them.
    pub events_kept: Vec<SchedEvent>,
    /// Events decoded and accounted (all tasks).
    pub handled: u64,
    /// Records the kernel could not write because a ring was full.
    pub lost: u64,
    /// The tracer thread's own CPU time.
    pub cpu_ns: u64,
    /// When the events started (CLOCK_MONOTONIC ns) and for how long they were taken.
    pub started_ns: u64,
    pub elapsed_ns: u64,
    /// Batches not taken with `try_recv` before `stop`, the last one the partial
    /// interval up to the stop.
    pub pending: Vec<TraceBatch>,
    /// Samples that could not be decoded (short or of an unknown tracepoint).
    pub undecodable: u64,
    /// Events that reached the tracer after later events had been accounted (each is
    /// still counted; a latency across it may be missed).
    pub late: u64,
    /// Switches from the idle task to a task that this kernel did not deliver as
    /// sched_switch (some kernels deliver no perf event raised in the idle task) and
    /// that were taken from perf's context-switch records instead (their next_comm is
    /// empty). Non-zero means wake-ups raised on an idle CPU (a timer expiring there)
    /// are not seen either: see [`TaskSched::wakeups_unseen`].
    pub idle_switches_filled: u64,
    /// Switches from idle that neither the tracepoints nor the (paced) context-switch
    /// records showed, inferred when the task next switched out: counted, untimed.
    pub idle_switches_inferred: u64,
    /// CPU rings replaced by larger ones after they lost records (see grow.rs).
    pub rings_grown: u64,
    /// Whether sched_waking was written for cross-CPU wake-ups only (every ring took
    /// the kernel filter); false with [`Wakings::All`] or a kernel refusing filters.
    pub waking_cross_cpu_only: bool,
    /// Set if the tracer thread died; the totals are then empty.
    pub failure: Option<String>,
}

/// Why tracing could not start. One line each: what is wrong and what to do.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TraceError {
    #[error("scheduler tracing needs root: perf_event_paranoid is {paranoid} here, so system-wide tracepoint events are refused to other users (run schedlab as root, or set /proc/sys/kernel/perf_event_paranoid to -1 and make tracefs readable)")]
    NotRoot { paranoid: String },
    #[error("tracefs is not mounted and could not be mounted on {target}: {why} (mount it with `mount -t tracefs nodev {target}`)")]
    NoTracefs { target: String, why: String },
    #[error(
        "tracepoint sched/{name} is missing ({path}: {why}); this kernel was built without it"
    )]
    MissingTracepoint {
        name: String,
        path: String,
        why: String,
    },
    #[error("tracepoint sched/{name}: its format file cannot be used: {why}")]
    BadFormat { name: String, why: String },
    #[error("perf_event_open for sched/{tracepoint} on CPU {cpu} was refused: {why}")]
    PerfOpen {
        tracepoint: String,
        cpu: u32,
        errno: i32,
        why: String,
    },
    #[error("mapping the {kib} KiB perf ring of CPU {cpu} failed: {why}")]
    Ring { cpu: u32, kib: u64, why: String },
    #[error("no CPUs to trace: the CPU set is empty")]
    NoCpus,
    #[error("tracefs could not be journaled: {0}")]
    Journal(String),
    #[error("the tracer thread could not be started: {0}")]
    Thread(String),
}

/// At most this many events are kept for `events_kept` (72 bytes each: 72 MiB); past
/// it the oldest go even inside the window.
pub const KEEP_MAX_EVENTS: usize = 1 << 20;
/// How often the rings are drained (or more often when an interval is shorter).
const DRAIN_PERIOD_NS: u64 = 10_000_000;
/// How far behind the drain's clock reading events are released: the kernel takes an
/// event's timestamp a moment before its record is visible in the ring.
const SLACK_NS: u64 = 2_000_000;
/// The shortest interval between batches.
const MIN_INTERVAL: Duration = Duration::from_millis(1);

/// The running tracer: a thread named "schedlab-trace" that owns the rings.
pub struct Tracer {
    stop: Arc<AtomicBool>,
    rx: mpsc::Receiver<TraceBatch>,
    /// Tasks that joined the experiment, for the thread to account from now on.
    join_tx: mpsc::Sender<Vec<TraceTarget>>,
    /// Told once the thread has turned the events off (before it drains and closes).
    disabled_rx: mpsc::Receiver<()>,
    waking_cross_cpu_only: bool,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The thread's totals, sent before it closes its perf events.
    final_rx: mpsc::Receiver<TraceFinal>,
    started_ns: u64,
    targets: Vec<TraceTarget>,
}

impl Tracer {
    /// Mount tracefs if needed (journaled first-success like mount_debugfs; leave it
    /// mounted only through the journal), read each tracepoint's id and format, open one
    /// perf event per tracepoint per CPU in `cpus` (all pids, that CPU), mmap the rings,
    /// start the thread. Events start flowing at once.
    ///
    /// `interval` is clamped to at least 1 ms. `keep`: how much of the end of the trace
    /// to return as raw events in [`TraceFinal::events_kept`] (None: none). Every
    /// sched_waking is written ([`Wakings::All`]); see [`Tracer::start_with`].
    pub fn start(
        cpus: &crate::cpuset::CpuSet,
        targets: Vec<TraceTarget>,
        interval: Duration,
        keep: Option<Duration>,
        journal: &mut crate::knob::journal::Journal,
    ) -> Result<Tracer, TraceError> {
        Tracer::start_with(cpus, targets, interval, keep, Wakings::All, journal)
    }

    /// [`Tracer::start`], choosing which sched_waking events the kernel writes.
    pub fn start_with(
        cpus: &crate::cpuset::CpuSet,
        targets: Vec<TraceTarget>,
        interval: Duration,
        keep: Option<Duration>,
        wakings: Wakings,
        journal: &mut crate::knob::journal::Journal,
    ) -> Result<Tracer, TraceError> {
        Tracer::start_sized(cpus, targets, interval, keep, wakings, RING_PAGES, journal)
    }

    /// [`Tracer::start_with`], each CPU's ring starting at `pages` data pages (a power of
    /// two) rather than [`RING_PAGES`]: the tests start small to see a ring grow.
    pub fn start_sized(
        cpus: &crate::cpuset::CpuSet,
        targets: Vec<TraceTarget>,
        interval: Duration,
        keep: Option<Duration>,
        wakings: Wakings,
        pages: usize,
        journal: &mut crate::knob::journal::Journal,
    ) -> Result<Tracer, TraceError> {
        if cpus.is_empty() {
            return Err(TraceError::NoCpus);
        }
        let paranoid = ring::paranoid();
        if !nix::unistd::geteuid().is_root() && paranoid.is_none_or(|p| p > -1) {
            return Err(TraceError::NotRoot {
                paranoid: paranoid.map_or("unreadable".into(), |p| p.to_string()),
            });
        }
        let root = tracefs::ensure(journal)?;
        let formats = tracefs::read_formats(&root)?;
        // The decoder's messages start with the tracepoint's name.
        let decoder = Decoder::new(&formats).map_err(|Unusable(why)| TraceError::BadFormat {
            name: why
                .split([' ', ':'])
                .next()
                .unwrap_or("sched_switch")
                .to_string(),
            why,
        })?;
        let ids: Vec<ring::TracepointId> = formats
            .all()
            .iter()
            .map(|f| ring::TracepointId {
                name: f.name.clone(),
                id: u64::from(f.id),
            })
            .collect();
        let mut rings = Vec::with_capacity(cpus.count());
        for cpu in cpus.iter() {
            rings.push(ring::CpuRing::open(cpu as u32, &ids, pages, wakings)?);
        }
        let waking_cross_cpu_only = rings.iter().all(|r| r.waking_filtered);
        let interval_ns = u64::try_from(interval.max(MIN_INTERVAL).as_nanos()).unwrap_or(u64::MAX);
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        for r in &mut rings {
            if let Err(e) = r.enable() {
                rings.iter_mut().for_each(ring::CpuRing::disable);
                return Err(e);
            }
        }
        let started_ns = monotonic_ns();
        let (join_tx, join_rx) = mpsc::channel();
        let (disabled_tx, disabled_rx) = mpsc::channel();
        let mut worker = Worker::new(rings, decoder, &targets, interval_ns, keep, tx, started_ns);
        worker.joins = Some(join_rx);
        worker.disabled = Some(disabled_tx);
        worker.waking_cross_cpu_only = waking_cross_cpu_only;
        worker.grow = grow::Grower::new(ids, wakings);
        let flag = stop.clone();
        let (final_tx, final_rx) = mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("schedlab-trace".into())
            .spawn(move || {
                // The tracer is the instrument, like the sampler: as the sampler runs
                // (nice -20 headless, FIFO 99 in the workbench), or a nice-0 thread
                // beside a busy experiment falls behind and the rings overflow.
                crate::knob::task::elevate_if_requested(true);
                let fin = worker.run(&flag);
                let _ = final_tx.send(fin);
                // Closing the perf events takes a grace period each (~200 ms in all on
                // a VM): after the totals are handed over, so that whoever stops the
                // trace (the workbench's controller) does not stand still for it.
                drop(worker);
            })
            .map_err(|e| TraceError::Thread(e.to_string()))?;
        Ok(Tracer {
            stop,
            rx,
            join_tx,
            disabled_rx,
            waking_cross_cpu_only,
            thread: Some(thread),
            final_rx,
            started_ns,
            targets,
        })
    }

    /// The next interval batch if one is ready (non-blocking; the thread sends one per
    /// `interval`).
    pub fn try_recv(&self) -> Option<TraceBatch> {
        self.rx.try_recv().ok()
    }

    /// Account these tasks too from now on (they joined the running experiment).
    pub fn add_targets(&mut self, targets: Vec<TraceTarget>) {
        if targets.is_empty() {
            return;
        }
        self.targets.extend(targets.iter().cloned());
        // A dead thread has nothing to account them in; stop() says why.
        let _ = self.join_tx.send(targets);
    }

    /// Whether the kernel writes sched_waking for cross-CPU wake-ups only.
    pub fn waking_cross_cpu_only(&self) -> bool {
        self.waking_cross_cpu_only
    }

    /// Stop, drain what is left, and return the totals.
    pub fn stop(self) -> TraceFinal {
        self.stop_then(|| ())
    }

    /// Stop, run `at_stop` as soon as the events are off (what the kernel counted up to
    /// the trace's end: closing the perf events afterwards takes a grace period per
    /// event, ~200 ms on a VM, while the experiment goes on), then drain what is left
    /// and return the totals.
    pub fn stop_then(mut self, at_stop: impl FnOnce()) -> TraceFinal {
        self.stop.store(true, Ordering::Release);
        // Bounded: the thread looks at the flag at least every drain period; a dead
        // thread drops the sender and this returns at once.
        let _ = self.disabled_rx.recv_timeout(Duration::from_secs(2));
        at_stop();
        // The thread sends its totals and then closes its events on its own; it is
        // joined only when it died without sending them, for why.
        let joined = match self.final_rx.recv() {
            Ok(fin) => {
                drop(self.thread.take());
                Ok(fin)
            }
            Err(_) => match self.thread.take() {
                Some(t) => match t.join() {
                    Ok(()) => Err("ended without its totals".to_string()),
                    Err(panic) => Err(panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "panicked".into())),
                },
                None => Err("already stopped".into()),
            },
        };
        let mut fin = joined.unwrap_or_else(|why| TraceFinal {
            tasks: Aggregator::new(&self.targets).totals(),
            events_kept: Vec::new(),
            handled: 0,
            lost: 0,
            cpu_ns: 0,
            started_ns: self.started_ns,
            elapsed_ns: monotonic_ns().saturating_sub(self.started_ns),
            pending: Vec::new(),
            undecodable: 0,
            late: 0,
            idle_switches_filled: 0,
            idle_switches_inferred: 0,
            rings_grown: 0,
            waking_cross_cpu_only: self.waking_cross_cpu_only,
            failure: Some(format!("the tracer thread died: {why}")),
        });
        let mut pending: Vec<TraceBatch> = self.rx.try_iter().collect();
        pending.append(&mut fin.pending);
        fin.pending = pending;
        fin
    }
}

impl Drop for Tracer {
    /// A tracer dropped without `stop` still stops its thread (and so its events).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// The tracer thread's state: the rings and their reading, and what is done with the
/// events (kept apart so the merger can hand events to the sink).
struct Worker {
    rings: Vec<ring::CpuRing>,
    decoder: Decoder,
    merger: order::Merger,
    scratch: Box<[u8; ring::MAX_RECORD]>,
    sink: Sink,
    idle: IdleGap,
    joins: Option<mpsc::Receiver<Vec<TraceTarget>>>,
    disabled: Option<mpsc::Sender<()>>,
    waking_cross_cpu_only: bool,
    /// How to open a larger ring for a CPU that lost records.
    grow: grow::Grower,
}

/// Where released events go: the aggregation, the kept window, the interval batches.
struct Sink {
    agg: Aggregator,
    tx: mpsc::Sender<TraceBatch>,
    interval_ns: u64,
    next_boundary: u64,
    keep_ns: Option<u64>,
    kept: VecDeque<SchedEvent>,
    handled: u64,
    lost: u64,
    undecodable: u64,
    interval_events: u64,
    interval_lost: u64,
    lost_since_release: bool,
    started_ns: u64,
    pending: Vec<TraceBatch>,
    /// The receiver is gone (the Tracer was dropped): stop sending.
    orphaned: bool,
}

impl Worker {
    fn new(
        rings: Vec<ring::CpuRing>,
        decoder: Decoder,
        targets: &[TraceTarget],
        interval_ns: u64,
        keep: Option<Duration>,
        tx: mpsc::Sender<TraceBatch>,
        started_ns: u64,
    ) -> Worker {
        let cpus: Vec<u32> = rings.iter().map(|r| r.cpu).collect();
        Worker {
            idle: IdleGap::new(&cpus),
            merger: order::Merger::new(rings.len()),
            rings,
            decoder,
            joins: None,
            disabled: None,
            waking_cross_cpu_only: false,
            grow: grow::Grower::default(),
            scratch: Box::new([0u8; ring::MAX_RECORD]),
            sink: Sink {
                agg: Aggregator::new(targets),
                tx,
                interval_ns,
                next_boundary: started_ns.saturating_add(interval_ns),
                keep_ns: keep.map(|k| u64::try_from(k.as_nanos()).unwrap_or(u64::MAX)),
                kept: VecDeque::new(),
                handled: 0,
                lost: 0,
                undecodable: 0,
                interval_events: 0,
                interval_lost: 0,
                lost_since_release: false,
                started_ns,
                pending: Vec::new(),
                orphaned: false,
            },
        }
    }

    fn run(&mut self, stop: &AtomicBool) -> TraceFinal {
        let cpu_start = thread_cpu_ns();
        let mut fds: Vec<libc::pollfd> = self
            .rings
            .iter()
            .map(|r| libc::pollfd {
                fd: r.fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let period_ns = DRAIN_PERIOD_NS.min(self.sink.interval_ns);
        let timeout_ms = (period_ns / 1_000_000).clamp(1, 1000) as libc::c_int;
        // Ends when asked to stop; every wait in it is bounded by the drain period.
        loop {
            let stopping = stop.load(Ordering::Acquire);
            if stopping {
                self.rings.iter_mut().for_each(ring::CpuRing::disable);
                if let Some(tx) = self.disabled.take() {
                    let _ = tx.send(());
                }
            }
            if let Some(joins) = &self.joins {
                for targets in joins.try_iter() {
                    self.sink.agg.add(&targets);
                }
            }
            // The clock first: whatever the rings hold afterwards is at least as new.
            let now = monotonic_ns();
            let lossy = self.drain_all(now);
            if !stopping {
                self.grow_rings(&lossy, &mut fds);
            }
            let horizon = if stopping {
                u64::MAX
            } else {
                now.saturating_sub(SLACK_NS)
            };
            self.sink.forget_if_lost();
            let sink = &mut self.sink;
            self.merger.release(horizon, |ev| sink.account(ev));
            if stopping {
                self.sink.close_intervals(now);
                let last = self.sink.batch(now);
                self.sink.pending.push(last);
                break;
            }
            self.sink.close_intervals(horizon);
            // SAFETY: fds is a valid array of pollfd for the duration of the call.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        }
        let end = monotonic_ns();
        let s = &mut self.sink;
        TraceFinal {
            tasks: s.agg.totals(),
            events_kept: s.kept_window(end),
            handled: s.handled,
            lost: s.lost,
            cpu_ns: thread_cpu_ns().saturating_sub(cpu_start),
            started_ns: s.started_ns,
            elapsed_ns: end.saturating_sub(s.started_ns),
            pending: std::mem::take(&mut s.pending),
            undecodable: s.undecodable,
            late: self.merger.late(),
            idle_switches_filled: self.idle.filled,
            idle_switches_inferred: self.idle.inferred,
            rings_grown: self.grow.grown,
            waking_cross_cpu_only: self.waking_cross_cpu_only,
            failure: None,
        }
    }
}

/// Switches from the idle task that the kernel did not deliver as sched_switch, put
/// back from perf's context-switch records or inferred. Per ring it remembers who the
/// last sched_switch switched in: a switch-in record for that task is the same switch
/// (the record comes just after the tracepoint), one for another task after idle is a
/// switch the tracepoint never showed, and a task switching out of a CPU last seen
/// idle was switched in unseen. Kernels that show every switch from idle prove it
/// after [`IDLE_PROOF`] matched switches, and the records stay off from then on.
struct IdleGap {
    last_next: Vec<i32>,
    /// When each CPU was last seen idle (going idle, or leaving it as far as shown).
    idle_at: Vec<u64>,
    swapper: Vec<[u8; 16]>,
    /// Switch-ins from idle that the tracepoints showed too.
    matched: u64,
    /// One was missing: this kernel hides switches from idle.
    blind: bool,
    filled: u64,
    inferred: u64,
}

/// Matched switches from idle, and none missing, after which the tracepoints are
/// trusted to show them all.
const IDLE_PROOF: u64 = 256;

/// A CPU that has not gone idle for this long writes no context-switch records: the
/// records cost two per switch, and a busy CPU has no switch from idle to fill.
pub const IDLE_QUIET_NS: u64 = 100_000_000;

impl IdleGap {
    fn new(cpus: &[u32]) -> IdleGap {
        IdleGap {
            last_next: vec![-1; cpus.len()],
            idle_at: vec![0; cpus.len()],
            swapper: cpus.iter().map(|&c| swapper_comm(c)).collect(),
            matched: 0,
            blind: false,
            filled: 0,
            inferred: 0,
        }
    }

    /// An event on ring `q`; for a sched_switch, the untimed switch-in of its prev that
    /// it proves was missed, if the CPU was last seen going idle.
    #[inline]
    fn saw_switch(&mut self, q: usize, ev: &SchedEvent) -> Option<SchedEvent> {
        let EventKind::Switch {
            prev_pid, next_pid, ..
        } = ev.kind
        else {
            return None;
        };
        let last = self.last_next.get_mut(q)?;
        let missed = *last == 0 && prev_pid != 0;
        *last = next_pid;
        if next_pid == 0 || prev_pid == 0 || missed {
            self.saw_idle(q, ev.t_ns);
        }
        if !missed {
            return None;
        }
        self.blind = true;
        self.inferred += 1;
        Some(SchedEvent {
            t_ns: ev.t_ns,
            cpu: ev.cpu,
            kind: EventKind::SwitchedIn { pid: prev_pid },
        })
    }

    /// Ring `q`'s CPU was idle at `t` (going idle or leaving it).
    fn saw_idle(&mut self, q: usize, t: u64) {
        if let Some(at) = self.idle_at.get_mut(q) {
            *at = (*at).max(t);
        }
    }

    /// Whether the kernel has proven it shows switches from idle.
    fn proven(&self) -> bool {
        !self.blind && self.matched >= IDLE_PROOF
    }

    /// Whether ring `q`'s CPU should write context-switch records now: it is idle or
    /// went idle within [`IDLE_QUIET_NS`], and the kernel has not proven them useless.
    fn wants_records(&self, q: usize, now: u64) -> bool {
        if self.proven() {
            return false;
        }
        let idle_now = self.last_next.get(q) == Some(&0);
        let idle_lately = self
            .idle_at
            .get(q)
            .is_some_and(|&at| at > 0 && now.saturating_sub(at) < IDLE_QUIET_NS);
        idle_now || idle_lately
    }

    /// The Switch event a switch-in record stands for, if the tracepoints missed it.
    #[inline]
    fn fill(&mut self, q: usize, s: decode::SwitchIn) -> Option<SchedEvent> {
        let last = self.last_next.get_mut(q)?;
        if s.prev_tid != 0 {
            return None;
        }
        if *last == s.tid {
            self.matched += 1;
            return None;
        }
        *last = s.tid;
        self.blind = true;
        self.filled += 1;
        self.saw_idle(q, s.t_ns);
        Some(SchedEvent {
            t_ns: s.t_ns,
            cpu: s.cpu,
            kind: EventKind::Switch {
                prev_pid: 0,
                prev_state: 0,
                next_pid: s.tid,
                prev_comm: self.swapper[q],
                // Not in the record.
                next_comm: [0; 16],
            },
        })
    }
}

/// "swapper/N", the idle task's name, without allocating per event.
fn swapper_comm(cpu: u32) -> [u8; 16] {
    let mut c = [0u8; 16];
    let text = format!("swapper/{cpu}");
    let n = text.len().min(15);
    c[..n].copy_from_slice(&text.as_bytes()[..n]);
    c
}

impl Sink {
    /// Records were lost somewhere before the events just read: what a task was doing
    /// across the gap is unknown, so no latency is measured across it.
    fn forget_if_lost(&mut self) {
        if self.lost_since_release {
            self.agg.forget();
            self.lost_since_release = false;
        }
    }

    /// Queue an event that concerns a target for ordering; only count the others (no
    /// aggregate depends on their order, and most events of a busy machine are theirs).
    #[inline]
    fn route(&mut self, merger: &mut order::Merger, q: usize, ev: SchedEvent) {
        if self.agg.touches(&ev) {
            merger.push(q, ev);
        } else {
            self.handled += 1;
            self.interval_events += 1;
        }
    }

    #[inline]
    fn account(&mut self, ev: &SchedEvent) {
        if ev.t_ns >= self.next_boundary {
            self.close_intervals(ev.t_ns);
        }
        self.handled += 1;
        self.interval_events += 1;
        self.agg.record(ev);
        if let Some(keep) = self.keep_ns {
            // Only target events reach here. Bounded: each turn removes one event.
            while self.kept.len() >= KEEP_MAX_EVENTS
                || self
                    .kept
                    .front()
                    .is_some_and(|f| f.t_ns.saturating_add(keep) < ev.t_ns)
            {
                self.kept.pop_front();
            }
            self.kept.push_back(*ev);
        }
    }

    /// Send a batch for every interval that ends at or before `t`.
    fn close_intervals(&mut self, t: u64) {
        while self.next_boundary <= t {
            let batch = self.batch(self.next_boundary);
            if !self.orphaned && self.tx.send(batch).is_err() {
                self.orphaned = true;
            }
            self.next_boundary = self.next_boundary.saturating_add(self.interval_ns);
        }
    }

    fn batch(&mut self, t_ns: u64) -> TraceBatch {
        TraceBatch {
            t_ns,
            tasks: self.agg.take_interval(),
            events: std::mem::take(&mut self.interval_events),
            lost: std::mem::take(&mut self.interval_lost),
            preemptors: self.agg.preemptors(),
        }
    }

    fn kept_window(&self, end: u64) -> Vec<SchedEvent> {
        let Some(keep) = self.keep_ns else {
            return Vec::new();
        };
        let from = end.saturating_sub(keep);
        self.kept
            .iter()
            .filter(|e| e.t_ns >= from)
            .copied()
            .collect()
    }
}

/// This thread's CPU time in nanoseconds.
fn thread_cpu_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_are_whole_nanoseconds_in_the_json() {
        let l = LatencySummary {
            count: 3,
            p50_us: 1.234,
            p90_us: 2.0,
            p99_us: 9.999,
            p999_us: 10.0,
            max_us: 4113.7,
        };
        let v = serde_json::to_value(LatencyNs::from(&l)).expect("serializes");
        assert_eq!(
            v,
            serde_json::json!({"count": 3, "p50_ns": 1234, "p90_ns": 2000, "p99_ns": 9999,
                "p999_ns": 10000, "max_ns": 4_113_700})
        );
    }

    #[test]
    fn sizes_are_as_documented() {
        assert_eq!(std::mem::size_of::<SchedEvent>(), 72);
        assert_eq!(swapper_comm(1), *b"swapper/1\0\0\0\0\0\0\0");
        assert_eq!(&swapper_comm(123_456_789)[..15], b"swapper/1234567");
        assert_eq!(swapper_comm(123_456_789)[15], 0);
    }

    fn switch_ev(t_ns: u64, cpu: u32, prev_pid: i32, next_pid: i32) -> SchedEvent {
        SchedEvent {
            t_ns,
            cpu,
            kind: EventKind::Switch {
                prev_pid,
                prev_state: 1,
                next_pid,
                prev_comm: [0; 16],
                next_comm: [0; 16],
            },
        }
    }

    #[test]
    fn idle_gap_fills_only_switches_the_tracepoints_missed() {
        let mut g = IdleGap::new(&[0, 1]);
        let rec = |tid, prev_tid| decode::SwitchIn {
            t_ns: 100,
            cpu: 1,
            tid,
            prev_tid,
        };
        let sw = |t_ns, prev, next| switch_ev(t_ns, 1, prev, next);
        // The tracepoint showed the switch from idle to 7: the record is the same switch.
        assert_eq!(g.saw_switch(1, &sw(50, 0, 7)), None);
        assert_eq!(g.fill(1, rec(7, 0)), None);
        assert_eq!(g.matched, 1);
        // 7 went idle, then a record shows 8 switched in after idle with no tracepoint.
        assert_eq!(g.saw_switch(1, &sw(90, 7, 0)), None);
        let ev = g.fill(1, rec(8, 0)).expect("filled");
        assert_eq!(
            ev.kind,
            EventKind::Switch {
                prev_pid: 0,
                prev_state: 0,
                next_pid: 8,
                prev_comm: swapper_comm(1),
                next_comm: [0; 16],
            }
        );
        assert!(g.blind && g.filled == 1);
        // Records of switches between tasks are never needed.
        assert_eq!(g.fill(1, rec(9, 8)), None);
        assert_eq!(g.fill(5, rec(9, 0)), None, "no such ring");
        assert!(!g.proven());

        let mut healthy = IdleGap::new(&[0]);
        for i in 0..IDLE_PROOF as i32 {
            assert_eq!(healthy.saw_switch(0, &sw(1, 0, 100 + i)), None);
            assert_eq!(healthy.fill(0, rec(100 + i, 0)), None);
        }
        assert!(healthy.proven());
        assert!(!healthy.wants_records(0, 2), "proven: never again");
    }

    #[test]
    fn a_switch_in_missed_after_idle_is_inferred_at_the_next_switch_out() {
        let mut g = IdleGap::new(&[0]);
        let at = |t_ns, prev, next| switch_ev(t_ns, 0, prev, next);
        // Before any switch the CPU's state is unknown: a switch-out proves nothing.
        assert_eq!(g.saw_switch(0, &at(10, 5, 6)), None);
        // 6 goes idle; the switch from idle to 7 is not shown (no record either).
        assert_eq!(g.saw_switch(0, &at(20, 6, 0)), None);
        let inferred = g.saw_switch(0, &at(30, 7, 6)).expect("inferred");
        assert_eq!(inferred.kind, EventKind::SwitchedIn { pid: 7 });
        assert_eq!(inferred.t_ns, 30);
        assert_eq!((g.inferred, g.blind), (1, true));
        // A switch between tasks after that is seen whole.
        assert_eq!(g.saw_switch(0, &at(40, 6, 7)), None);
    }

    #[test]
    fn context_switch_records_are_wanted_only_where_a_cpu_went_idle_lately() {
        let mut g = IdleGap::new(&[0, 1]);
        let at = |t_ns, prev, next| switch_ev(t_ns, 0, prev, next);
        // Nothing seen yet: off (a busy CPU must not pay for them).
        assert!(!g.wants_records(0, 1_000));
        // CPU 0 goes idle at 1 s: on while idle ...
        g.saw_switch(0, &at(1_000_000_000, 5, 0));
        assert!(g.wants_records(0, 1_050_000_000));
        assert!(g.wants_records(0, 9_000_000_000), "still idle");
        // ... and for IDLE_QUIET_NS after it was last seen idle, then off.
        g.saw_switch(0, &at(1_200_000_000, 6, 5));
        assert!(g.wants_records(0, 1_200_000_000 + IDLE_QUIET_NS - 1));
        assert!(!g.wants_records(0, 1_200_000_000 + IDLE_QUIET_NS));
        assert!(
            !g.wants_records(1, 1_100_000_000),
            "the other CPU never went idle"
        );
        assert!(!g.wants_records(7, 0), "no such ring");
    }
}
