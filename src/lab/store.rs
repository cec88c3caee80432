//! The consumer side of the sampling path: raw counter batches turned into rates, kept
//! as bounded time series, plus whole-run summaries from the first and last samples.

use std::collections::VecDeque;

use crate::cpuset::CpuSet;
use crate::histogram::{bucket_bounds, Histogram};
use crate::sampler::parse::CpuTimes;
use crate::sampler::{Batch, TaskSample};
use crate::trace::{Preemptor, TaskInterval, TraceBatch};

/// The latency of one sample interval, merged over the tasks that measure it.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct LatencyInterval {
    /// Seconds since the run started, at the end of the interval.
    pub t_s: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    /// The top of the interval's highest bucket, capped at the run's max so far: within
    /// 1/64 of the interval's true max.
    pub max_ns: u64,
    /// Latencies recorded in the interval (they add up to the whole run's count).
    pub count: u64,
}

/// Rates of one task over one interval (or a whole run).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct TaskRates {
    /// Seconds since the run started, at the end of the interval.
    pub t_s: f64,
    /// Fraction of one CPU the task ran.
    pub cpu_share: f64,
    /// Fraction of the interval the task sat runnable in a run queue (None without schedstat).
    pub wait_share: Option<f64>,
    pub switches_per_s: f64,
    pub voluntary_per_s: f64,
    pub involuntary_per_s: f64,
    pub migrations_per_s: Option<f64>,
    pub progress_per_s: f64,
    /// CPU the task last ran on.
    pub cpu: Option<u32>,
}

/// The system counters at one /proc/stat read, with what the experiment and schedlab
/// had used by then: the three together say how much of the CPUs went to others.
#[derive(Clone, Debug, Default)]
struct SystemSnapshot {
    t_ns: u64,
    cpus: Vec<CpuTimes>,
    /// CPU time of every task of the experiment so far, ns.
    tasks_run_ns: u64,
    /// CPU time of schedlab's own threads so far, ns.
    observer_ns: u64,
}

/// CPU time taken on the experiment's CPUs by tasks that are not the experiment (and
/// not schedlab), in CPUs: busy + steal of those CPUs, minus the experiment's tasks'
/// own CPU time, minus schedlab's. Another program, an interrupt storm, or the
/// hypervisor running another guest all show up here.
fn foreign_cpus(a: &SystemSnapshot, b: &SystemSnapshot, used: &CpuSet) -> Option<f64> {
    let dt_s = b.t_ns.saturating_sub(a.t_ns) as f64 / 1e9;
    if dt_s <= 0.0 || a.cpus.is_empty() {
        return None;
    }
    let tick_s = 1.0 / crate::system::clock_ticks_per_s() as f64;
    let taken: u64 = a
        .cpus
        .iter()
        .zip(&b.cpus)
        .enumerate()
        .filter(|(i, _)| used.is_empty() || used.contains(*i))
        .map(|(_, (p, c))| (c.busy() + c.steal).saturating_sub(p.busy() + p.steal))
        .sum();
    let own_s = b.tasks_run_ns.saturating_sub(a.tasks_run_ns) as f64 / 1e9;
    let observer_s = b.observer_ns.saturating_sub(a.observer_ns) as f64 / 1e9;
    Some(((taken as f64 * tick_s - own_s - observer_s) / dt_s).max(0.0))
}

/// Busy and steal share of one CPU over one interval.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct CpuRates {
    pub busy: f64,
    pub steal: f64,
}

fn wait_ns(s: &TaskSample) -> Option<u64> {
    if s.schedstat_valid() {
        s.schedstat.map(|ss| ss.wait_ns)
    } else {
        None
    }
}

fn per_s(a: Option<u64>, b: Option<u64>, dt_s: f64) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if dt_s > 0.0 => Some(b.saturating_sub(a) as f64 / dt_s),
        _ => None,
    }
}

/// Rates between two samples of the same task taken `dt_ns` apart. Voluntary and
/// involuntary switches come from the sched file (no extra read of status).
pub fn task_rates(prev: &TaskSample, cur: &TaskSample, dt_ns: u64) -> TaskRates {
    let dt_s = dt_ns as f64 / 1e9;
    let share = |a: Option<u64>, b: Option<u64>| match (a, b) {
        (Some(a), Some(b)) if dt_ns > 0 => Some(b.saturating_sub(a) as f64 / dt_ns as f64),
        _ => None,
    };
    let (p, c) = (&prev.sched, &cur.sched);
    let voluntary = per_s(p.nr_voluntary_switches, c.nr_voluntary_switches, dt_s).unwrap_or(0.0);
    let involuntary =
        per_s(p.nr_involuntary_switches, c.nr_involuntary_switches, dt_s).unwrap_or(0.0);
    TaskRates {
        t_s: 0.0,
        cpu_share: share(prev.run_ns(), cur.run_ns()).unwrap_or(0.0),
        wait_share: share(wait_ns(prev), wait_ns(cur)),
        switches_per_s: per_s(p.nr_switches, c.nr_switches, dt_s)
            .unwrap_or(voluntary + involuntary),
        voluntary_per_s: voluntary,
        involuntary_per_s: involuntary,
        migrations_per_s: per_s(p.nr_migrations, c.nr_migrations, dt_s),
        progress_per_s: per_s(Some(prev.progress), Some(cur.progress), dt_s).unwrap_or(0.0),
        cpu: cur.stat.and_then(|s| s.processor),
    }
}

/// Busy and steal shares of a CPU between two readings of its /proc/stat line.
pub fn cpu_rates(prev: &CpuTimes, cur: &CpuTimes) -> CpuRates {
    let total = cur.total().saturating_sub(prev.total());
    if total == 0 {
        return CpuRates::default();
    }
    CpuRates {
        busy: cur.busy().saturating_sub(prev.busy()) as f64 / total as f64,
        steal: cur.steal.saturating_sub(prev.steal) as f64 / total as f64,
    }
}

/// Time the kernel reported late, carried into the following intervals.
///
/// schedstat credits a task's run-queue wait when the task is next switched in, and a
/// running task's CPU time lags by up to a tick, so one interval can receive time that
/// belongs to earlier ones: 950 ms of waiting inside a 100 ms interval. Each interval
/// shows at most what fits (CPU time up to the interval, waiting up to what the CPU
/// time leaves) and the rest moves on to the next intervals, so every point is
/// physically possible and the totals stay the kernel's.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Carry {
    run_ns: f64,
    wait_ns: f64,
}

impl Carry {
    /// Clamp `r` (an interval of `dt_ns`) to what is possible, carrying the excess.
    pub fn apportion(&mut self, r: &mut TaskRates, dt_ns: u64) {
        if dt_ns == 0 {
            return;
        }
        let dt = dt_ns as f64;
        let run = r.cpu_share * dt + self.run_ns;
        let shown_run = run.min(dt);
        self.run_ns = run - shown_run;
        r.cpu_share = shown_run / dt;
        if let Some(w) = r.wait_share {
            let wait = w * dt + self.wait_ns;
            let shown_wait = wait.min(dt - shown_run);
            self.wait_ns = wait - shown_wait;
            r.wait_share = Some(shown_wait / dt);
        }
    }
}

/// One task's history.
#[derive(Clone, Debug, Default)]
pub struct TaskSeries {
    pub points: VecDeque<TaskRates>,
    /// Late-credited time not yet shown (see [`Carry`]).
    pub carry: Carry,
    /// The first sample in which the task was alive, with its time (from the end of the
    /// warm-up: where the summaries start).
    pub first: Option<(u64, TaskSample)>,
    /// The very first sample in which the task was alive, warm-up or not: what a trace of
    /// the whole run is checked against.
    pub origin: Option<(u64, TaskSample)>,
    /// The latest sample in which the task was alive, with its time.
    pub last: Option<(u64, TaskSample)>,
    pub exited: bool,
}

/// CPU time (in CPUs) others may take on the experiment's CPUs before a result is
/// flagged: an idle machine here shows up to 0.08 (kernel threads, the hypervisor).
pub const FOREIGN_LIMIT_CPU: f64 = 0.1;

/// Every task's and CPU's history for one run: the one place samples become numbers.
#[derive(Clone, Debug)]
pub struct Store {
    pub start_ns: Option<u64>,
    /// The latest batch's time.
    last_ns: Option<u64>,
    /// Where the whole-run summaries start: the first batch, or the first after the warm-up.
    summary_ns: Option<u64>,
    pub tasks: Vec<TaskSeries>,
    /// The latest sample of each task, alive or not (policy, nice, CPUs as the kernel
    /// reports them).
    pub latest: Vec<TaskSample>,
    /// Per-interval latency of the tasks that measure latency, merged.
    pub latency: VecDeque<LatencyInterval>,
    latency_prev: Option<Histogram>,
    /// Every latency sample so far, merged over the tasks.
    pub latency_total: Option<Histogram>,
    pub cpus: Vec<VecDeque<(f64, CpuRates)>>,
    /// CPU taken by others on the experiment's CPUs, per /proc/stat interval (in CPUs).
    pub foreign: VecDeque<(f64, f64)>,
    /// The CPUs the experiment's tasks may use (empty until known: all).
    used: CpuSet,
    prev_system: Option<SystemSnapshot>,
    first_system: Option<SystemSnapshot>,
    /// Points kept per series; older ones are dropped.
    pub retention: usize,
    /// Whole-run summaries start at the first batch this long after the start (the
    /// time series keep everything): a start-up transient stays out of the averages.
    warmup_ns: u64,
    /// Whether the summaries' starting point has moved past the warm-up.
    settled: bool,
    /// What the scheduler trace saw per task per interval (empty when not tracing).
    pub trace: Vec<VecDeque<(f64, TaskInterval)>>,
    /// Per task: who the trace saw switched in when it was preempted, top first (each
    /// batch carries the totals so far, so the latest replaces the last).
    pub preemptors: Vec<Vec<Preemptor>>,
    /// Trace events handled and lost so far.
    pub trace_events: u64,
    pub trace_lost: u64,
}

impl Store {
    pub fn new(tasks: usize, retention: usize) -> Store {
        Store {
            start_ns: None,
            last_ns: None,
            summary_ns: None,
            tasks: vec![TaskSeries::default(); tasks],
            latest: vec![TaskSample::default(); tasks],
            latency: VecDeque::new(),
            latency_prev: None,
            latency_total: None,
            cpus: Vec::new(),
            foreign: VecDeque::new(),
            used: CpuSet::new(),
            prev_system: None,
            first_system: None,
            retention: retention.max(2),
            warmup_ns: 0,
            settled: true,
            trace: vec![VecDeque::new(); tasks],
            preemptors: vec![Vec::new(); tasks],
            trace_events: 0,
            trace_lost: 0,
        }
    }

    /// Make room for a task that joined the experiment (it has no history yet).
    pub fn add_task(&mut self) {
        self.tasks.push(TaskSeries::default());
        self.latest.push(TaskSample::default());
        self.trace.push(VecDeque::new());
        self.preemptors.push(Vec::new());
    }

    /// Take in a trace interval; `tids` are the tasks' thread ids, in the store's order.
    pub fn push_trace(&mut self, batch: &TraceBatch, tids: &[i32]) {
        let index_of = |tid: i32| tids.iter().position(|&t| t == tid);
        let t_s = self.t_s(batch.t_ns);
        self.trace_events += batch.events;
        self.trace_lost += batch.lost;
        for interval in &batch.tasks {
            if let Some(series) = index_of(interval.tid).and_then(|i| self.trace.get_mut(i)) {
                push_bounded(series, (t_s, *interval), self.retention);
            }
        }
        for (tid, top) in &batch.preemptors {
            if let Some(slot) = index_of(*tid).and_then(|i| self.preemptors.get_mut(i)) {
                slot.clone_from(top);
            }
        }
    }

    /// The latest trace interval of each task (None: not traced, or nothing yet).
    pub fn latest_trace(&self) -> Vec<Option<TaskInterval>> {
        self.trace
            .iter()
            .map(|s| s.back().map(|(_, i)| *i))
            .collect()
    }

    /// Leave the first `warmup` of the run out of the whole-run summaries.
    pub fn with_warmup(mut self, warmup: std::time::Duration) -> Store {
        self.warmup_ns = warmup.as_nanos().min(u64::MAX as u128) as u64;
        self.settled = self.warmup_ns == 0;
        self
    }

    /// Seconds since the first batch.
    pub fn t_s(&self, t_ns: u64) -> f64 {
        t_ns.saturating_sub(self.start_ns.unwrap_or(t_ns)) as f64 / 1e9
    }

    /// Take in one batch; returns the new rate points (task id, rates) it produced.
    pub fn push(&mut self, batch: &Batch) -> Vec<(usize, TaskRates)> {
        let start = *self.start_ns.get_or_insert(batch.t_ns);
        // The first batch after the warm-up becomes every summary's starting point. A
        // task that exited during the warm-up keeps its whole life as its summary.
        let restart = !self.settled && batch.t_ns.saturating_sub(start) >= self.warmup_ns;
        if restart {
            self.settled = true;
            self.first_system = None;
            self.summary_ns = None;
        }
        self.summary_ns.get_or_insert(batch.t_ns);
        self.last_ns = Some(batch.t_ns);
        let new_points = self.push_tasks(batch, restart);
        for s in &batch.tasks {
            if let Some(slot) = self.latest.get_mut(s.id) {
                slot.clone_from(s);
            }
        }
        self.push_latency(batch);
        // A round without /proc/stat has no CPU counters to add.
        if !batch.system.cpus.is_empty() {
            self.push_system(batch);
        }
        new_points
    }

    /// Each task's rates since its last read; the points added.
    fn push_tasks(&mut self, batch: &Batch, restart: bool) -> Vec<(usize, TaskRates)> {
        let t_s = self.t_s(batch.t_ns);
        let mut new_points = Vec::new();
        for sample in &batch.tasks {
            let Some(series) = self.tasks.get_mut(sample.id) else {
                continue;
            };
            if !sample.alive {
                series.exited = true;
                // Keep progress counted by the shared memory even after the task exited.
                if let Some((_, last)) = &mut series.last {
                    last.progress = sample.progress;
                    last.latency.clone_from(&sample.latency);
                }
                continue;
            }
            // Rates over the time between this task's own two reads, not the rounds'.
            let read_at = if sample.t_ns != 0 {
                sample.t_ns
            } else {
                batch.t_ns
            };
            if let Some((prev_t, prev)) = &series.last {
                let dt_ns = read_at.saturating_sub(*prev_t);
                let mut r = task_rates(prev, sample, dt_ns);
                series.carry.apportion(&mut r, dt_ns);
                r.t_s = t_s;
                push_bounded(&mut series.points, r, self.retention);
                new_points.push((sample.id, r));
            }
            if series.first.is_none() || restart {
                series.first = Some((read_at, sample.clone()));
            }
            if series.origin.is_none() {
                series.origin = Some((read_at, sample.clone()));
            }
            match &mut series.last {
                Some((t, s)) => {
                    *t = read_at;
                    s.clone_from(sample);
                }
                None => series.last = Some((read_at, sample.clone())),
            }
        }
        new_points
    }

    /// The CPUs' rates and the foreign load since the last round that read /proc/stat.
    fn push_system(&mut self, batch: &Batch) {
        let t_s = self.t_s(batch.t_ns);
        let sys = &batch.system;
        self.used = self
            .tasks
            .iter()
            .filter_map(|t| t.last.as_ref().and_then(|(_, s)| s.cpus_allowed))
            .fold(CpuSet::new(), |a, b| a.union(&b));
        let snapshot = SystemSnapshot {
            t_ns: batch.t_ns,
            cpus: sys.cpus.clone(),
            // The cgroup counts what the tasks forked too (make's jobs), and the tasks
            // outside it (processes attached to) are added; without one, the tasks alone.
            tasks_run_ns: sys
                .experiment_ns
                .map(|c| c + sys.outside_ns)
                .unwrap_or_else(|| {
                    self.tasks
                        .iter()
                        .filter_map(|t| t.last.as_ref().and_then(|(_, s)| s.run_ns()))
                        .sum()
                }),
            observer_ns: sys.observer_ns,
        };
        if let Some(prev) = &self.prev_system {
            self.cpus.resize_with(sys.cpus.len(), VecDeque::new);
            for (i, (p, c)) in prev.cpus.iter().zip(&sys.cpus).enumerate() {
                push_bounded(&mut self.cpus[i], (t_s, cpu_rates(p, c)), self.retention);
            }
            if let Some(f) = foreign_cpus(prev, &snapshot, &self.used) {
                push_bounded(&mut self.foreign, (t_s, f), self.retention);
            }
        }
        if self.first_system.is_none() {
            self.first_system = Some(snapshot.clone());
        }
        self.prev_system = Some(snapshot);
    }

    /// Merge the batch's latency histograms (only tasks that measure latency have any) and
    /// add the interval's percentiles to the series.
    fn push_latency(&mut self, batch: &Batch) {
        let mut merged: Option<Histogram> = None;
        for s in &batch.tasks {
            if s.latency.count > 0 || s.latency.dropped > 0 {
                merged
                    .get_or_insert_with(|| Histogram::from_values([]))
                    .merge(&s.latency);
            }
        }
        let Some(total) = merged else { return };
        let delta = match &self.latency_prev {
            Some(prev) => total.since(prev),
            None => total.clone(),
        };
        // Counted from the buckets, as the whole run's percentiles are: the worker may
        // have raised its count before the bucket (see AtomicHistogram).
        let count: u64 = delta.buckets.iter().sum();
        if count > 0 {
            // `since` keeps the whole run's max: the interval's own is its top bucket's.
            let top = delta.buckets.iter().rposition(|&n| n > 0);
            let point = LatencyInterval {
                t_s: self.t_s(batch.t_ns),
                p50_ns: delta.quantile(0.5),
                p99_ns: delta.quantile(0.99),
                max_ns: top.map_or(total.max, |i| bucket_bounds(i).1.min(total.max)),
                count,
            };
            push_bounded(&mut self.latency, point, self.retention);
        }
        self.latency_prev = Some(total.clone());
        self.latency_total = Some(total);
    }

    /// CPU others took on the experiment's CPUs in the latest interval, when it is above
    /// the limit a result is flagged at.
    pub fn foreign_now(&self) -> Option<f64> {
        self.foreign
            .back()
            .map(|(_, f)| *f)
            .filter(|&f| f > FOREIGN_LIMIT_CPU)
    }

    /// How many CPUs the run's real-time tasks kept (nearly) to themselves in the latest
    /// interval. When that is every CPU, fair-class programs - a terminal among them -
    /// get only what RT throttling leaves.
    pub fn cpus_held_by_rt(&self) -> usize {
        let mut held: std::collections::BTreeMap<u32, f64> = std::collections::BTreeMap::new();
        for (series, sample) in self.tasks.iter().zip(&self.latest) {
            let rt = matches!(sample.policy(), Some(1 | 2));
            if let (true, Some(p)) = (rt, series.points.back()) {
                if let Some(cpu) = p.cpu {
                    *held.entry(cpu).or_default() += p.cpu_share;
                }
            }
        }
        held.values().filter(|&&share| share >= 0.9).count()
    }

    /// A task's rates over everything sampled so far (first to last live sample).
    pub fn summary(&self, id: usize) -> Option<TaskRates> {
        let series = self.tasks.get(id)?;
        let ((t0, first), (t1, last)) = (series.first.as_ref()?, series.last.as_ref()?);
        let dt_ns = t1.saturating_sub(*t0);
        let mut r = task_rates(first, last, dt_ns);
        // Over a whole run only the edges can be late; clamp them like an interval.
        Carry::default().apportion(&mut r, dt_ns);
        r.t_s = self.t_s(*t1);
        Some(r)
    }

    /// Progress per second over the run, counting what the task did after its last
    /// live sample too (its counter lives on in shared memory), over `run_s` seconds.
    pub fn progress_per_s(&self, id: usize, run_s: f64) -> f64 {
        let Some(series) = self.tasks.get(id) else {
            return 0.0;
        };
        match (&series.first, &series.last) {
            (Some((_, f)), Some((_, l))) if run_s > 0.0 => {
                l.progress.saturating_sub(f.progress) as f64 / run_s
            }
            _ => 0.0,
        }
    }

    /// Each CPU's busy and steal share over the whole run.
    pub fn cpu_summary(&self) -> Vec<CpuRates> {
        match (&self.first_system, &self.prev_system) {
            (Some(a), Some(b)) => a
                .cpus
                .iter()
                .zip(&b.cpus)
                .map(|(p, c)| cpu_rates(p, c))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// CPU taken by others on the experiment's CPUs over the whole-run summary, in CPUs
    /// (see [`foreign_cpus`]); None before two /proc/stat reads.
    pub fn foreign_summary(&self) -> Option<f64> {
        foreign_cpus(
            self.first_system.as_ref()?,
            self.prev_system.as_ref()?,
            &self.used,
        )
    }

    /// The CPUs the experiment may use (all when unknown).
    pub fn used_cpus(&self) -> CpuSet {
        self.used
    }

    /// Seconds between the first and the last batch.
    pub fn elapsed_s(&self) -> f64 {
        match (self.start_ns, self.last_ns) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1e9,
            _ => 0.0,
        }
    }

    /// Seconds the whole-run summaries cover: from the end of the warm-up (or the first
    /// batch, if the run never got past it) to the last batch.
    pub fn summary_s(&self) -> f64 {
        match (self.summary_ns, self.last_ns) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1e9,
            _ => 0.0,
        }
    }

    /// When the summaries start, in seconds since the first batch.
    pub fn summary_start_s(&self) -> f64 {
        self.summary_ns.map_or(0.0, |t| self.t_s(t))
    }
}

/// Append to a series that keeps its last `retention` points.
fn push_bounded<T>(series: &mut VecDeque<T>, point: T, retention: usize) {
    if series.len() == retention {
        series.pop_front();
    }
    series.push_back(point);
}

#[cfg(test)]
mod tests;
