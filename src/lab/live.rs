//! The live model of a running experiment: its tasks and threads, the store its samples
//! feed, the headline series (throughput, fairness with ideal shares; latency is in the
//! store), the trace's intervals and lost events, and the knob changes marked on the
//! graphs. The headless run, the workbench and a replay all feed this one type, the same
//! way, so they agree to the last digit.

use std::collections::VecDeque;
use std::time::Duration;

use super::describe::{Started, TaskInfo};
use super::experiment::Polled;
use super::store::{Store, TaskRates};
use crate::cpuset::CpuSet;
use crate::ideal::{fairness_error, water_fill, weight_of_nice, IDLE_WEIGHT};
use crate::knob::cgroup::stat::Throttling;
use crate::policy::Policy;
use crate::preset::Headline;
use crate::sampler::{Batch, TaskSample};
use crate::trace::TraceBatch;

/// The fairness headline's shares are averaged over this much of the latest samples:
/// one 100 ms interval holds a few slices of each of 21 tasks, so its shares are mostly
/// rounding.
pub const FAIRNESS_WINDOW_S: f64 = 1.0;

/// What the headline series are taken over: the preset's metric group and headline, and
/// the CPUs online when the experiment started.
#[derive(Clone, Debug, Default, PartialEq)]
struct HeadlineOf {
    group: String,
    fairness: bool,
    online: usize,
}

/// The whole run's headline figures, as the run's report states them: what the
/// workbench's model of a recording gives to the last digit too.
#[derive(Clone, Debug, PartialEq)]
pub struct Summary {
    /// Seconds the summaries cover (after the warm-up).
    pub summary_s: f64,
    /// Per task: CPU share over the summary window.
    pub cpu_share: Vec<f64>,
    /// Per task: progress per second over the summary window.
    pub progress_per_s: Vec<f64>,
    /// The metric group's progress per second.
    pub throughput_per_s: f64,
    /// Fairness presets: each task's ideal share (None outside the metric group).
    pub ideal_share: Vec<Option<f64>>,
    /// Fairness presets: the fraction of CPU time that went to the wrong task over the
    /// summary window (None when a member never had a sample).
    pub fairness_error: Option<f64>,
}

/// The live data of one experiment.
#[derive(Clone, Debug)]
pub struct Live {
    pub tasks: Vec<TaskInfo>,
    pub store: Store,
    /// Successful knob changes: (seconds since start, "writer.policy -> batch").
    pub marks: Vec<(f64, String)>,
    /// Fairness presets: each task's ideal share from the nice weights (None outside
    /// the metric group), as of the latest sample.
    pub ideal: Vec<Option<f64>>,
    /// Fairness presets: (seconds, fraction of CPU time that went to the wrong task).
    pub fairness: VecDeque<(f64, f64)>,
    /// The metric group's progress per second summed over its tasks, one point per
    /// sample (kept here: summing a minute of 64 tasks' points every frame was most of
    /// the UI thread's CPU).
    pub throughput: VecDeque<(f64, f64)>,
    /// The preset cgroups' bandwidth counters (cpu.stat) as read after each sample:
    /// (seconds, per group its name and counters). Empty without preset cgroups.
    pub throttling: VecDeque<(f64, Vec<(String, Throttling)>)>,
    headline: HeadlineOf,
    retention: usize,
}

impl Live {
    /// The live model of the experiment `started` describes, keeping `retention` points
    /// per series and leaving `warmup` out of the whole-run summaries.
    pub fn new(started: &Started, retention: usize, warmup: Duration) -> Live {
        Live {
            store: Store::new(started.tasks.len(), retention).with_warmup(warmup),
            ideal: vec![None; started.tasks.len()],
            tasks: started.tasks.clone(),
            marks: Vec::new(),
            fairness: VecDeque::new(),
            throughput: VecDeque::new(),
            throttling: VecDeque::new(),
            headline: HeadlineOf {
                group: started.preset.metric_task.clone(),
                fairness: started.preset.headline == Headline::Fairness,
                online: started.cpus,
            },
            retention,
        }
    }

    /// The model before any experiment started: no tasks, no samples.
    pub fn empty(retention: usize) -> Live {
        Live {
            tasks: Vec::new(),
            store: Store::new(0, retention),
            marks: Vec::new(),
            ideal: Vec::new(),
            fairness: VecDeque::new(),
            throughput: VecDeque::new(),
            throttling: VecDeque::new(),
            headline: HeadlineOf::default(),
            retention,
        }
    }

    /// Seconds from the first sample to the latest.
    pub fn now_s(&self) -> f64 {
        self.store.elapsed_s()
    }

    /// One round of the experiment, as it polled it: the tasks that joined, the samples,
    /// then the trace's intervals; returns the sample's new rate points.
    /// The preset cgroups' bandwidth counters, read now (kept as long as the samples).
    pub fn push_throttling(&mut self, groups: Vec<(String, Throttling)>) {
        if groups.is_empty() {
            return;
        }
        self.throttling.push_back((self.now_s(), groups));
        while self.throttling.len() > self.retention {
            self.throttling.pop_front();
        }
    }

    /// Each group's counters over the window from `from_s` to `to_s`: the last reading
    /// at or before its end minus the last at or before its start (the first reading
    /// when none is that early). Empty without readings.
    pub fn throttling_between(&self, from_s: f64, to_s: f64) -> Vec<(String, Throttling)> {
        let at = |t: f64| {
            self.throttling
                .iter()
                .rev()
                .find(|(s, _)| *s <= t + 1e-9)
                .or_else(|| self.throttling.front())
        };
        let (Some((_, start)), Some((_, end))) = (at(from_s), at(to_s)) else {
            return Vec::new();
        };
        end.iter()
            .map(|(name, e)| {
                let s = start
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or(Throttling::default(), |(_, s)| *s);
                (name.clone(), e.since(&s))
            })
            .collect()
    }

    pub fn take(&mut self, polled: &Polled) -> Vec<(usize, TaskRates)> {
        self.join(polled.joined.iter().cloned());
        let points = self.push(&polled.batch);
        for tb in &polled.trace {
            self.push_trace(tb);
        }
        points
    }

    /// Tasks that joined the running experiment, after the others in task order.
    pub fn join(&mut self, tasks: impl IntoIterator<Item = TaskInfo>) {
        for t in tasks {
            self.store.add_task();
            self.ideal.push(None);
            self.tasks.push(t);
        }
    }

    /// A sampling round into the store and the headline series; its new rate points.
    pub fn push(&mut self, batch: &Batch) -> Vec<(usize, TaskRates)> {
        let points = self.store.push(batch);
        self.push_throughput(&points);
        if self.headline.fairness {
            self.push_fairness();
        }
        points
    }

    /// A trace interval into the store (by thread id); whether it brought the trace's
    /// first lost events.
    pub fn push_trace(&mut self, batch: &TraceBatch) -> bool {
        let tids: Vec<i32> = self.tasks.iter().map(|t| t.tid).collect();
        let first_loss = batch.lost > 0 && self.store.trace_lost == 0;
        self.store.push_trace(batch, &tids);
        first_loss
    }

    /// A knob change that took, marked at the latest sample's time.
    pub fn mark(&mut self, label: String) {
        self.marks.push((self.now_s(), label));
    }

    /// The metric group's summed progress rate from a sample's new points.
    fn push_throughput(&mut self, points: &[(usize, TaskRates)]) {
        let group = &self.headline.group;
        let tasks = &self.tasks;
        let members: Vec<&(usize, TaskRates)> = points
            .iter()
            .filter(|(i, _)| tasks.get(*i).is_some_and(|t| &t.group == group))
            .collect();
        let Some((_, first)) = members.first() else {
            return;
        };
        let sum = members.iter().map(|(_, r)| r.progress_per_s).sum();
        push_bounded(&mut self.throughput, (first.t_s, sum), self.retention);
    }

    /// The fairness headline after a new sample: ideal shares from the latest samples,
    /// against the shares measured over the last [`FAIRNESS_WINDOW_S`].
    fn push_fairness(&mut self) {
        let Some(ideal) = self.group_ideal_shares() else {
            return;
        };
        let ids = self.group_ids();
        let now_s = self.store.elapsed_s();
        let Some(measured) = ids
            .iter()
            .map(|&i| recent_share(&self.store, i, now_s))
            .collect::<Option<Vec<f64>>>()
        else {
            return;
        };
        self.ideal = self.by_task(&ids, &ideal);
        let error = fairness_error(&measured, &ideal);
        push_bounded(&mut self.fairness, (now_s, error), self.retention);
    }

    /// The whole run's headline figures (see [`Summary`]).
    pub fn summary(&self) -> Summary {
        let summary_s = self.store.summary_s();
        let n = self.tasks.len();
        let cpu_share: Vec<f64> = (0..n)
            .map(|i| self.store.summary(i).map_or(0.0, |r| r.cpu_share))
            .collect();
        let progress_per_s: Vec<f64> = (0..n)
            .map(|i| self.store.progress_per_s(i, summary_s))
            .collect();
        let ids = self.group_ids();
        let throughput_per_s = ids.iter().map(|&i| progress_per_s[i]).sum();
        let mut ideal_share = vec![None; n];
        let mut fairness = None;
        if self.headline.fairness {
            if let Some(ideal) = self.group_ideal_shares() {
                ideal_share = self.by_task(&ids, &ideal);
                let measured: Vec<f64> = ids.iter().map(|&i| cpu_share[i]).collect();
                fairness = Some(fairness_error(&measured, &ideal));
            }
        }
        Summary {
            summary_s,
            cpu_share,
            progress_per_s,
            throughput_per_s,
            ideal_share,
            fairness_error: fairness,
        }
    }

    /// The group's `shares` (by index into `ids`) spread over every task, None outside.
    fn by_task(&self, ids: &[usize], shares: &[f64]) -> Vec<Option<f64>> {
        let mut by_task = vec![None; self.tasks.len()];
        for (&i, &share) in ids.iter().zip(shares) {
            by_task[i] = Some(share);
        }
        by_task
    }

    /// The metric group's tasks, by index.
    pub fn group_ids(&self) -> Vec<usize> {
        (0..self.tasks.len())
            .filter(|&i| self.tasks[i].group == self.headline.group)
            .collect()
    }

    /// The metric group's ideal shares as of the latest samples (by index into
    /// [`Live::group_ids`]), or None before every member has a sample.
    pub fn group_ideal_shares(&self) -> Option<Vec<f64>> {
        let samples = self
            .group_ids()
            .iter()
            .map(|&i| self.store.latest.get(i))
            .collect::<Option<Vec<&TaskSample>>>()?;
        Some(ideal_shares(&samples, self.headline.online))
    }
}

/// Each task's ideal CPU share from the kernel's weights (SCHED_IDLE's, else its nice
/// value's), water-filled over the CPUs the tasks may use (all `online` ones when no
/// sample says).
pub fn ideal_shares(samples: &[&TaskSample], online: usize) -> Vec<f64> {
    let weights: Vec<f64> = samples
        .iter()
        .map(|s| match s.policy().and_then(Policy::from_kernel) {
            Some(Policy::Idle) => IDLE_WEIGHT as f64,
            _ => weight_of_nice(s.nice().unwrap_or(0)) as f64,
        })
        .collect();
    let cpus = samples
        .iter()
        .filter_map(|s| s.cpus_allowed)
        .fold(CpuSet::new(), |a, b| a.union(&b));
    let ncpus = if cpus.is_empty() {
        online.max(1)
    } else {
        cpus.count()
    };
    water_fill(&weights, ncpus)
}

/// Task `i`'s mean CPU share over the samples of the last [`FAIRNESS_WINDOW_S`] before
/// `now_s`, or None without one.
fn recent_share(store: &Store, i: usize, now_s: f64) -> Option<f64> {
    let recent: Vec<f64> = store.tasks.get(i).map_or_else(Vec::new, |s| {
        s.points
            .iter()
            .rev()
            .take_while(|r| r.t_s > now_s - FAIRNESS_WINDOW_S)
            .map(|r| r.cpu_share)
            .collect()
    });
    (!recent.is_empty()).then(|| recent.iter().sum::<f64>() / recent.len() as f64)
}

/// Append to a series, dropping its oldest point past `retention`.
fn push_bounded(series: &mut VecDeque<(f64, f64)>, point: (f64, f64), retention: usize) {
    if series.len() >= retention.max(1) {
        series.pop_front();
    }
    series.push_back(point);
}
