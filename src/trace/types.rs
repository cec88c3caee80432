//! The tracer's public data: targets, decoded events, per-task totals, interval batches
//! and the final report, and why tracing could not start.

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

/// One wake-up, however many records the kernel wrote of it: a cross-CPU wake-up comes
/// as sched_waking then sched_wakeup (the tracer asks for sched_waking only there, or
/// everywhere with --trace-every-waking), a same-CPU one as sched_wakeup alone. Fed a
/// stream oldest first, it says which records start a wake-up, so that a count of them is
/// a count of wake-ups, whichever format holds them.
#[derive(Debug, Default)]
pub struct WakeupOnce {
    /// Tasks whose sched_waking was seen and whose sched_wakeup is still to come: a
    /// handful at most (each is woken at most once before it runs).
    announced: Vec<i32>,
}

/// The records [`WakeupOnce`] reads, by the task they name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WakeRecord {
    Waking(i32),
    Wakeup(i32),
    /// A switch (or an inferred switch-in) that put this task on a CPU.
    SwitchIn(i32),
}

impl WakeRecord {
    /// The record an event is, if it is one [`WakeupOnce`] reads.
    pub fn of(kind: &EventKind) -> Option<WakeRecord> {
        match *kind {
            EventKind::Waking { pid, .. } => Some(WakeRecord::Waking(pid)),
            EventKind::Wakeup { pid, .. } => Some(WakeRecord::Wakeup(pid)),
            EventKind::Switch { next_pid, .. } => Some(WakeRecord::SwitchIn(next_pid)),
            EventKind::SwitchedIn { pid } => Some(WakeRecord::SwitchIn(pid)),
            EventKind::Migrate { .. } => None,
        }
    }
}

impl WakeupOnce {
    /// Whether this event starts a wake-up (see [`WakeupOnce::record`]).
    pub fn starts(&mut self, kind: &EventKind) -> bool {
        WakeRecord::of(kind).is_some_and(|r| self.record(r))
    }

    /// Whether this record starts a wake-up: every sched_waking, and a sched_wakeup with
    /// no sched_waking of its task before it. A task's switch-in ends what was announced
    /// for it (a sched_wakeup lost with the ring's records must not swallow the next).
    pub fn record(&mut self, rec: WakeRecord) -> bool {
        match rec {
            WakeRecord::Waking(pid) => {
                if !self.announced.contains(&pid) {
                    self.announced.push(pid);
                }
                true
            }
            WakeRecord::Wakeup(pid) => !self.forget(pid),
            WakeRecord::SwitchIn(pid) => {
                self.forget(pid);
                false
            }
        }
    }

    /// Whether `pid` was announced (it is not any more).
    fn forget(&mut self, pid: i32) -> bool {
        match self.announced.iter().position(|&p| p == pid) {
            Some(i) => {
                self.announced.swap_remove(i);
                true
            }
            None => false,
        }
    }
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
    pub wakeup_latency_histogram: Vec<crate::histogram::ReportBucket>,
    /// `runq_delay`'s histogram, the same way.
    pub runq_delay_histogram: Vec<crate::histogram::ReportBucket>,
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
    /// Also a target's switch-in the kernel never wrote at all (its switch-out found
    /// it off its CPU; perf beside the tracer misses the same events).
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
    fn a_waking_and_its_wakeup_are_one_wake_up() {
        use WakeRecord::{SwitchIn, Wakeup, Waking};
        let mut once = WakeupOnce::default();
        let starts: Vec<bool> = [
            // Cross-CPU: waking, then its wakeup. Two tasks' wake-ups interleaved.
            Waking(10),
            Waking(11),
            Wakeup(11),
            Wakeup(10),
            // Same-CPU: the wakeup alone.
            Wakeup(10),
            // A waking whose wakeup was lost: the switch-in ends it, so the next lone
            // wakeup is a wake-up of its own.
            Waking(12),
            SwitchIn(12),
            Wakeup(12),
        ]
        .into_iter()
        .map(|r| once.record(r))
        .collect();
        assert_eq!(starts, [true, true, false, false, true, true, false, true]);
    }

    #[test]
    fn every_event_but_a_migration_is_a_record_of_its_task() {
        let comm = [0; 16];
        let switch = EventKind::Switch {
            prev_pid: 3,
            prev_state: 1,
            next_pid: 4,
            prev_comm: comm,
            next_comm: comm,
        };
        assert_eq!(WakeRecord::of(&switch), Some(WakeRecord::SwitchIn(4)));
        let inferred = EventKind::SwitchedIn { pid: 5 };
        assert_eq!(WakeRecord::of(&inferred), Some(WakeRecord::SwitchIn(5)));
        let waking = EventKind::Waking {
            pid: 6,
            waker: 3,
            target_cpu: 1,
        };
        assert_eq!(WakeRecord::of(&waking), Some(WakeRecord::Waking(6)));
        let wakeup = EventKind::Wakeup {
            pid: 6,
            waker: 3,
            target_cpu: 1,
        };
        assert_eq!(WakeRecord::of(&wakeup), Some(WakeRecord::Wakeup(6)));
        let migrate = EventKind::Migrate {
            pid: 6,
            orig_cpu: 0,
            dest_cpu: 1,
        };
        assert_eq!(WakeRecord::of(&migrate), None);
    }
}
