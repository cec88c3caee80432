//! Pure aggregation of a scheduler event stream into per-task totals ([`TaskSched`]) and
//! per-interval figures ([`TaskInterval`]), for the targets only.
//!
//! Ordering: the tracer merges its per-CPU streams by time before they get here (see
//! order.rs), so this expects events oldest first. It stays sane when a few arrive out
//! of order: an interval that would be negative is dropped, and a waking older than the
//! task's last switch-in is ignored, so a late event can lose one sample but never makes
//! up a latency.
//!
//! Per task it follows one small state machine:
//! - `sched_waking` starts a wake-up (unless one is already pending, or the task sits
//!   preempted on a run queue, where its wait is a run-queue delay instead);
//! - switched in: a pending wake-up becomes a wakeup-latency sample (waking -> running),
//!   a preemption becomes a run-queue-delay sample (switched out runnable -> running);
//! - switched out: runnable (`prev_state & 0xff == 0`, "R"/"R+") counts as preempted and
//!   names the task switched in as the preemptor; anything else counts as blocked.
//!   A pending wake-up whose `sched_wakeup` was already seen is dropped here: it woke a
//!   task that was still running. One without its `sched_wakeup` is kept: that is the
//!   waker on another CPU racing the task's own switch-out (try_to_wake_up fires
//!   sched_waking, then waits for the task to get off its CPU), and it is the wake-up
//!   that ends this sleep.
//! - sched_wakeup with no sched_waking before it starts the wake-up at its own time: the
//!   tracer asks the kernel for sched_waking only where the wakee last ran on another
//!   CPU (a same-CPU wake-up's waking and wakeup are a microsecond apart, and writing
//!   every waking costs the experiment a tenth of its speed on a VM).
//! - Switched in at an unknown time (inferred after idle, see mod.rs): counted, and a
//!   pending wake-up or run-queue wait ends without a sample. So is a task switched out
//!   while last seen off its CPU: its switch-in was never written (perf misses it too).
//! - A task switched in from a sleep with no sched_wakeup seen since it blocked was
//!   woken all the same: that wake-up counts, as unseen (`wakeups_unseen`), with no
//!   latency. Kernels that deliver no perf event raised in the idle task do this to
//!   every wake-up from an idle CPU's interrupt (a timer expiring there).

use hdrhistogram::Histogram;

use crate::histogram::ReportBucket;

use super::{
    EventKind, LatencySummary, Preemptor, SchedEvent, TaskInterval, TaskSched, TraceTarget,
};

/// Latencies are kept in nanoseconds from 1 ns to 10 s with 3 significant digits: a
/// value lands in a bucket at most 1/1024 of itself wide, so a percentile is reported
/// within 0.1 % of the true sample (rounded up to its bucket's top, then capped at the
/// exact maximum). Longer delays count at 10 s in the percentiles; the maximum is exact.
/// Each task holds two u64 and two u32 histograms of 25,600 counters each: 600 KiB.
pub const HIST_HIGH_NS: u64 = 10_000_000_000;
const SIGFIG: u8 = 3;
/// How many distinct preemptors a task remembers exactly; past that the least counted
/// one makes room ("space-saving": a frequent preemptor is never pushed out).
const PREEMPTOR_SLOTS: usize = 64;
const TOP_PREEMPTORS: usize = 5;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Not seen switching yet (the trace just started, or events were lost).
    Unknown,
    Running,
    /// Switched out while runnable, at `since`.
    Runnable {
        since: u64,
    },
    Blocked,
}

/// One latency's histograms: the whole trace, and the interval being filled.
struct Latency {
    total: Histogram<u64>,
    interval: Histogram<u32>,
    min_ns: u64,
    max_ns: u64,
    interval_max_ns: u64,
}

impl Latency {
    fn new() -> Latency {
        Latency {
            total: new_hist(),
            interval: new_hist(),
            min_ns: u64::MAX,
            max_ns: 0,
            interval_max_ns: 0,
        }
    }

    #[inline]
    fn record(&mut self, ns: u64) {
        // Saturating: hdrhistogram clamps to its highest trackable value, not an error.
        self.total.saturating_record(ns);
        self.interval.saturating_record(ns);
        self.min_ns = self.min_ns.min(ns);
        self.max_ns = self.max_ns.max(ns);
        self.interval_max_ns = self.interval_max_ns.max(ns);
    }

    fn summary(&self) -> LatencySummary {
        let count = self.total.len();
        if count == 0 {
            return LatencySummary::default();
        }
        // A bucket's top can pass the exact extremes; never report outside them.
        let at = |q: f64| {
            us(self
                .total
                .value_at_quantile(q)
                .clamp(self.min_ns, self.max_ns))
        };
        LatencySummary {
            count,
            p50_us: at(0.50),
            p90_us: at(0.90),
            p99_us: at(0.99),
            p999_us: at(0.999),
            max_us: us(self.max_ns),
        }
    }

    /// The whole trace's histogram per power of two of ns: (2^(k-1), 2^k] for each
    /// non-empty step, as hdrhistogram's log iterator walks it.
    fn report_buckets(&self) -> Vec<ReportBucket> {
        let mut out = Vec::new();
        let mut low = 0;
        for step in self.total.iter_log(1, 2.0) {
            let high = step.value_iterated_to();
            let count = step.count_since_last_iteration();
            if count > 0 {
                out.push(ReportBucket {
                    low_ns: low,
                    high_ns: high,
                    count,
                });
            }
            low = high + 1;
        }
        out
    }

    fn interval_at(&self, q: f64) -> f64 {
        if self.interval.is_empty() {
            return 0.0;
        }
        us(self.interval.value_at_quantile(q).min(self.interval_max_ns))
    }

    fn reset_interval(&mut self) {
        self.interval.reset();
        self.interval_max_ns = 0;
    }
}

fn new_hist<T: hdrhistogram::Counter>() -> Histogram<T> {
    match Histogram::new_with_bounds(1, HIST_HIGH_NS, SIGFIG) {
        Ok(h) => h,
        // The bounds are constants that hdrhistogram accepts (tested below).
        Err(e) => unreachable!("histogram bounds: {e:?}"),
    }
}

fn us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Counts {
    switches_in: u64,
    wakeups: u64,
    wakeups_unseen: u64,
    preempted: u64,
    blocked: u64,
    migrations: u64,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    pid: i32,
    comm: [u8; 16],
    count: u64,
}

struct Task {
    tid: i32,
    name: String,
    state: State,
    /// The sched_waking that started the current wake-up, and whether its
    /// sched_wakeup has been seen.
    waking_at: Option<u64>,
    woken: bool,
    /// A sched_wakeup was seen since the task last blocked.
    wakeup_since_block: bool,
    last_in: u64,
    total: Counts,
    interval: Counts,
    wakeup: Latency,
    runq: Latency,
    preemptors: Vec<Slot>,
}

impl Task {
    fn new(t: &TraceTarget) -> Task {
        Task {
            tid: t.tid,
            name: t.name.clone(),
            state: State::Unknown,
            waking_at: None,
            woken: false,
            wakeup_since_block: false,
            last_in: 0,
            total: Counts::default(),
            interval: Counts::default(),
            wakeup: Latency::new(),
            runq: Latency::new(),
            preemptors: Vec::with_capacity(PREEMPTOR_SLOTS),
        }
    }

    fn count(&mut self, f: impl Fn(&mut Counts)) {
        f(&mut self.total);
        f(&mut self.interval);
    }

    fn waking(&mut self, t: u64) {
        if matches!(self.state, State::Runnable { .. }) || t < self.last_in {
            return;
        }
        if self.waking_at.is_none() {
            self.waking_at = Some(t);
            self.woken = false;
        }
    }

    fn wakeup(&mut self, t: u64) {
        // The wake-up starts here if no sched_waking announced it.
        self.waking(t);
        self.count(|c| c.wakeups += 1);
        self.wakeup_since_block = true;
        if self.waking_at.is_some() {
            self.woken = true;
        }
    }

    fn switch_in(&mut self, t: u64) {
        self.switched_in();
        if let Some(w) = self.waking_at.take() {
            if t >= w {
                self.wakeup.record(t - w);
            }
        }
        if let State::Runnable { since } = self.state {
            if t >= since {
                self.runq.record(t - since);
            }
        }
        self.state = State::Running;
        self.last_in = self.last_in.max(t);
    }

    /// Switched in at a time nobody saw: counted, no latency either way.
    fn switch_in_untimed(&mut self) {
        self.switched_in();
        self.waking_at = None;
        self.woken = false;
        self.state = State::Running;
    }

    fn switched_in(&mut self) {
        self.count(|c| c.switches_in += 1);
        if self.state == State::Blocked && !self.wakeup_since_block {
            // Something woke it, unseen (raised on an idle CPU by a kernel that
            // delivers nothing from the idle task): counted, with no latency.
            self.count(|c| {
                c.wakeups += 1;
                c.wakeups_unseen += 1;
            });
        }
    }

    /// Whether the switch-in before this switch-out was never written (see below).
    fn switch_out(&mut self, t: u64, prev_state: i64, next_pid: i32, next_comm: [u8; 16]) -> bool {
        // Switched out while last seen off its CPU: the kernel wrote neither its
        // switch-in nor, from a sleep, its wake-up (perf recording beside the tracer
        // misses the same events, under load on the project's VM). Counted as the idle
        // gap's inferred switches are: untimed.
        let unseen = matches!(self.state, State::Blocked | State::Runnable { .. });
        if unseen {
            self.switch_in_untimed();
        }
        if self.woken {
            self.waking_at = None;
            self.woken = false;
        }
        if prev_state & 0xff == 0 {
            self.count(|c| c.preempted += 1);
            self.state = State::Runnable { since: t };
            self.preempted_by(next_pid, next_comm);
        } else {
            self.count(|c| c.blocked += 1);
            self.state = State::Blocked;
            self.wakeup_since_block = false;
        }
        unseen
    }

    fn preempted_by(&mut self, pid: i32, comm: [u8; 16]) {
        if let Some(s) = self
            .preemptors
            .iter_mut()
            .find(|s| s.pid == pid && s.comm == comm)
        {
            s.count += 1;
        } else if self.preemptors.len() < PREEMPTOR_SLOTS {
            self.preemptors.push(Slot {
                pid,
                comm,
                count: 1,
            });
        } else if let Some(min) = self.preemptors.iter_mut().min_by_key(|s| s.count) {
            *min = Slot {
                pid,
                comm,
                count: min.count + 1,
            };
        }
    }

    fn forget(&mut self) {
        self.state = State::Unknown;
        self.waking_at = None;
        self.woken = false;
    }

    /// The top preemptors, most often first. `name_of` names the experiment's own tasks
    /// (their comm is the worker binary's, the same for all); a switch the kernel gave no
    /// comm for is named by its pid.
    fn top_preemptors(&self, name_of: &impl Fn(i32) -> Option<String>) -> Vec<Preemptor> {
        let mut top = self.preemptors.clone();
        top.sort_by(|a, b| b.count.cmp(&a.count).then(a.pid.cmp(&b.pid)));
        top.iter()
            .take(TOP_PREEMPTORS)
            .map(|s| Preemptor {
                comm: name_of(s.pid).unwrap_or_else(|| {
                    let comm = comm_str(&s.comm);
                    if comm.is_empty() {
                        format!("pid {}", s.pid)
                    } else {
                        comm
                    }
                }),
                pid: s.pid,
                count: s.count,
            })
            .collect()
    }

    fn sched(&self, name_of: &impl Fn(i32) -> Option<String>) -> TaskSched {
        TaskSched {
            tid: self.tid,
            name: self.name.clone(),
            switches_in: self.total.switches_in,
            wakeups: self.total.wakeups,
            wakeups_unseen: self.total.wakeups_unseen,
            preempted: self.total.preempted,
            blocked: self.total.blocked,
            migrations: self.total.migrations,
            wakeup_latency: self.wakeup.summary(),
            runq_delay: self.runq.summary(),
            wakeup_latency_histogram: self.wakeup.report_buckets(),
            runq_delay_histogram: self.runq.report_buckets(),
            preemptors: self.top_preemptors(name_of),
        }
    }

    fn take_interval(&mut self) -> TaskInterval {
        let c = std::mem::take(&mut self.interval);
        let out = TaskInterval {
            tid: self.tid,
            switches_in: c.switches_in,
            wakeups: c.wakeups,
            preempted: c.preempted,
            blocked: c.blocked,
            wakeup_p50_us: self.wakeup.interval_at(0.50),
            wakeup_p99_us: self.wakeup.interval_at(0.99),
            runq_p50_us: self.runq.interval_at(0.50),
            runq_p99_us: self.runq.interval_at(0.99),
        };
        self.wakeup.reset_interval();
        self.runq.reset_interval();
        out
    }
}

/// A task name from the kernel's NUL-padded comm.
pub fn comm_str(comm: &[u8; 16]) -> String {
    let end = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
    String::from_utf8_lossy(&comm[..end]).into_owned()
}

/// The targets' statistics, fed one event at a time. Allocates only when built (all
/// histograms up front) and when asked for results.
pub struct Aggregator {
    tasks: Vec<Task>,
    /// (tid, index into tasks), sorted by tid, for a binary search per event.
    index: Vec<(i32, usize)>,
    /// Switch-ins of targets the kernel never wrote, inferred from their switch-out.
    inferred: u64,
}

impl Aggregator {
    /// Targets with a tid below 1 (the idle task is 0 on every CPU) and repeated tids
    /// are left out.
    pub fn new(targets: &[TraceTarget]) -> Aggregator {
        let mut agg = Aggregator {
            tasks: Vec::with_capacity(targets.len()),
            index: Vec::new(),
            inferred: 0,
        };
        agg.add(targets);
        agg
    }

    /// Account these targets too, from their next event on (tasks that joined a
    /// running experiment); the same rules as [`Aggregator::new`].
    pub fn add(&mut self, targets: &[TraceTarget]) {
        for t in targets {
            if t.tid > 0 && !self.tasks.iter().any(|x| x.tid == t.tid) {
                self.tasks.push(Task::new(t));
            }
        }
        self.index = self
            .tasks
            .iter()
            .enumerate()
            .map(|(i, t)| (t.tid, i))
            .collect();
        self.index.sort_unstable();
    }

    #[inline]
    fn slot(&self, pid: i32) -> Option<usize> {
        self.index
            .binary_search_by_key(&pid, |&(tid, _)| tid)
            .ok()
            .map(|i| self.index[i].1)
    }

    /// Whether the event names a target as prev, next, wakee, waker or migrated task.
    #[inline]
    pub fn touches(&self, ev: &SchedEvent) -> bool {
        let is = |pid: i32| pid > 0 && self.slot(pid).is_some();
        match ev.kind {
            EventKind::Waking { pid, waker, .. } => is(pid) || is(waker),
            EventKind::Wakeup { pid, .. }
            | EventKind::Migrate { pid, .. }
            | EventKind::SwitchedIn { pid } => is(pid),
            EventKind::Switch {
                prev_pid, next_pid, ..
            } => is(prev_pid) || is(next_pid),
        }
    }

    /// Account one event (events of non-targets change nothing).
    #[inline]
    pub fn record(&mut self, ev: &SchedEvent) {
        let t = ev.t_ns;
        match ev.kind {
            EventKind::Waking { pid, .. } => {
                if let Some(i) = self.slot(pid) {
                    self.tasks[i].waking(t);
                }
            }
            EventKind::Wakeup { pid, .. } => {
                if let Some(i) = self.slot(pid) {
                    self.tasks[i].wakeup(t);
                }
            }
            EventKind::SwitchedIn { pid } => {
                if let Some(i) = self.slot(pid) {
                    self.tasks[i].switch_in_untimed();
                }
            }
            EventKind::Switch {
                prev_pid,
                prev_state,
                next_pid,
                next_comm,
                ..
            } => {
                // Out before in: both may be targets (a ping-pong on one CPU).
                if let Some(i) = self.slot(prev_pid) {
                    if self.tasks[i].switch_out(t, prev_state, next_pid, next_comm) {
                        self.inferred += 1;
                    }
                }
                if let Some(i) = self.slot(next_pid) {
                    self.tasks[i].switch_in(t);
                }
            }
            EventKind::Migrate { pid, .. } => {
                if let Some(i) = self.slot(pid) {
                    self.tasks[i].count(|c| c.migrations += 1);
                }
            }
        }
    }

    /// Events were lost: what each task was doing is no longer known, so no latency
    /// is measured across the gap (counts simply miss the lost events).
    pub fn forget(&mut self) {
        self.tasks.iter_mut().for_each(Task::forget);
    }

    /// What each target did since the last call, and start a new interval.
    pub fn take_interval(&mut self) -> Vec<TaskInterval> {
        self.tasks.iter_mut().map(Task::take_interval).collect()
    }

    /// Switch-ins of targets inferred from a switch-out that found them off their CPU.
    pub fn inferred(&self) -> u64 {
        self.inferred
    }

    /// The totals so far, in the order the targets were given.
    pub fn totals(&self) -> Vec<TaskSched> {
        let name_of = |pid| self.name_of(pid);
        self.tasks.iter().map(|t| t.sched(&name_of)).collect()
    }

    /// Each target's top preemptors so far (what a live view shows between totals,
    /// without the percentiles `totals` computes).
    pub fn preemptors(&self) -> Vec<(i32, Vec<Preemptor>)> {
        let name_of = |pid| self.name_of(pid);
        self.tasks
            .iter()
            .map(|t| (t.tid, t.top_preemptors(&name_of)))
            .collect()
    }

    /// A target's name, for a preemptor that is one of the experiment's tasks.
    fn name_of(&self, pid: i32) -> Option<String> {
        self.slot(pid).map(|i| self.tasks[i].name.clone())
    }
}

#[cfg(test)]
mod tests;
