//! A finished experiment turned into its report: each task as the kernel saw it, the
//! preset's headline, what was refused, foreign load and the instrument's own cost.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;

use super::{
    ns, rate, CpuPoint, CpuReport, EventReport, Headline, Metrics, RunReport, RunSeries,
    SeriesPoint, StageReport, TaskReport,
};
use crate::histogram::Percentiles;
use crate::lab::experiment::Finished;
use crate::lab::live::{Live, Summary};
use crate::lab::store::{Store, FOREIGN_LIMIT_CPU};
use crate::policy::policy_name;
use crate::preset::{Headline as HeadlineKind, Preset};
use crate::sampler::TaskSample;
use crate::workload::kinds::WorkerKind;
use crate::workload::make::STAGES;
use crate::workload::shm::{Shm, STAGE_WORDS};
use crate::workload::{RunningTask, Workload};

/// What the report needs to know beyond the experiment: what the user asked for.
pub struct Asked<'a> {
    pub interval_ms: f64,
    pub overrides: &'a [String],
    pub interrupted: bool,
}

/// The report of a finished experiment, from its live model.
pub fn run_report(f: &Finished, live: &Live, asked: &Asked) -> RunReport {
    let preset = &f.session.preset;
    let store = &live.store;
    let workload = &f.session.workload;
    let mut tasks: Vec<TaskReport> = workload
        .tasks
        .iter()
        .enumerate()
        .map(|(id, t)| task_report(store, id, t, workload))
        .collect();
    // The headline figures are the live model's: the workbench's, to the last digit.
    let summary = live.summary();
    for (t, ideal) in tasks.iter_mut().zip(&summary.ideal_share) {
        t.ideal_share = *ideal;
    }
    let metrics = metrics(f, live, &summary, &tasks);
    let refused = f.started.warnings.clone();
    let mut report = RunReport {
        preset: preset.name.clone(),
        kernel: f.started.kernel.clone(),
        cpus: f.started.cpus,
        duration_s: store.elapsed_s(),
        summary_from_s: store.summary_start_s(),
        summary_s: store.summary_s(),
        interval_ms: asked.interval_ms,
        settings: preset.knob_table().into_iter().collect::<BTreeMap<_, _>>(),
        overrides: asked.overrides.to_vec(),
        tasks,
        metrics,
        partial: !refused.is_empty(),
        warnings: refused.clone(),
        refused,
        foreign_load: false,
        failed: failed(workload),
        events: f.events.iter().map(EventReport::of).collect(),
        interrupted: asked.interrupted,
        observer: f.observer,
        trace: None,
        series: series(store, workload),
    };
    flag_foreign_load(&mut report, store, workload);
    super::trace::add_trace(&mut report, f, store);
    report
}

/// The run's metrics: the headline (from the live model's summary), latency, stages,
/// CPUs and foreign load.
fn metrics(f: &Finished, live: &Live, summary: &Summary, tasks: &[TaskReport]) -> Metrics {
    let preset = &f.session.preset;
    let store = &live.store;
    let workload = &f.session.workload;
    let unit = progress_unit(preset, workload);
    let latency_dropped = store.latency_total.as_ref().map(|h| h.dropped);
    let latency = store.latency_total.as_ref().and_then(|h| {
        Some(super::LatencyReport {
            percentiles: h.percentiles()?,
            histogram: h.report_buckets(),
            intervals: store.latency.iter().copied().collect(),
        })
    });
    let percentiles = latency.as_ref().map(|l| l.percentiles);
    let headline = headline(
        preset,
        tasks,
        summary.throughput_per_s,
        &unit,
        percentiles,
        latency_dropped,
        summary.fairness_error,
    );
    let cpu = cpu_reports(store);
    let cpu_idle_share = if cpu.is_empty() {
        0.0
    } else {
        cpu.iter().map(|c| c.idle_share).sum::<f64>() / cpu.len() as f64
    };
    Metrics {
        throughput_per_s: summary.throughput_per_s,
        throughput_unit: unit,
        latency,
        latency_dropped,
        fairness_error: summary.fairness_error,
        stages: stages(workload, store.start_ns.unwrap_or(0)),
        cpu,
        cpu_idle_share,
        // Without a cgroup, what a command forks is not counted as the experiment's.
        foreign_cpus: store
            .foreign_summary()
            .filter(|_| workload.usage().is_some() || !workload.forks()),
        headline,
    }
}

/// Say when others took more of the experiment's CPUs than the limit, or that it could
/// not be measured.
fn flag_foreign_load(report: &mut RunReport, store: &Store, workload: &Workload) {
    match report.metrics.foreign_cpus {
        Some(f) if f > FOREIGN_LIMIT_CPU => {
            report.foreign_load = true;
            report.warnings.push(format!(
                "other programs took {f:.2} CPU on the experiment's CPUs ({}) while it ran: the numbers are not the experiment alone",
                store.used_cpus().to_list()
            ));
        }
        Some(_) => {}
        None if workload.forks() => report.warnings.push(format!(
            "foreign load not measured: this run's commands start processes schedlab can only count inside a cgroup, and it has none ({})",
            workload.why_uncontained().unwrap_or("no cgroup")
        )),
        None => {}
    }
}

/// The commands that failed before the run ended, with what they last wrote to stderr.
fn failed(workload: &Workload) -> Vec<super::FailedTask> {
    let failed: Vec<(&RunningTask, std::process::ExitStatus)> = workload
        .tasks
        .iter()
        .filter_map(|t| Some((t, workload.failure(t)?)))
        .collect();
    let tail = if failed.is_empty() {
        Vec::new()
    } else {
        workload.stderr_tail(super::STDERR_TAIL_LINES)
    };
    failed
        .into_iter()
        .map(|(t, status)| super::FailedTask {
            task: t.name.clone(),
            pid: t.pid,
            status: status.to_string(),
            stderr_tail: tail.clone(),
        })
        .collect()
}

/// The kernel's view of a task from its last sample.
fn task_report(store: &Store, id: usize, task: &RunningTask, workload: &Workload) -> TaskReport {
    let series = &store.tasks[id];
    let last = series.last.as_ref().map(|(_, s)| s);
    let rates = store.summary(id).unwrap_or_default();
    let policy = last
        .and_then(TaskSample::policy)
        .map_or("unknown", policy_name);
    let exit = workload.exit_status(task).filter(|_| series.exited);
    TaskReport {
        name: task.name.clone(),
        group: task.group.clone(),
        pid: task.pid,
        tid: task.tid,
        policy: policy.to_string(),
        nice: last.and_then(|s| s.stat).map_or(0, |s| s.nice),
        rt_priority: last
            .and_then(|s| s.stat)
            .and_then(|s| s.rt_priority)
            .unwrap_or(0),
        cpus: last
            .and_then(|s| s.cpus_allowed)
            .map_or_else(String::new, |c| c.to_list()),
        last_cpu: rates.cpu,
        cpu_share: rates.cpu_share,
        wait_share: rates.wait_share,
        switches_per_s: rates.switches_per_s,
        voluntary_per_s: rates.voluntary_per_s,
        involuntary_per_s: rates.involuntary_per_s,
        migrations_per_s: rates.migrations_per_s,
        progress_per_s: store.progress_per_s(id, store.summary_s()),
        progress_unit: task.progress_unit.to_string(),
        // A task's counter starts at 0 when it is spawned: what it did before the first
        // sample counts too (a command's probe may read all its lines by then).
        progress_total: last.map_or(0, |l| l.progress),
        ideal_share: None,
        state: if series.exited { "exited" } else { "running" }.into(),
        exit: exit.map(|s| s.to_string()),
        sched: None,
    }
}

/// The unit of the metric group's progress.
fn progress_unit(preset: &Preset, workload: &Workload) -> String {
    workload
        .tasks
        .iter()
        .find(|t| t.group == preset.metric_task)
        .map_or("", |t| t.progress_unit)
        .to_string()
}

/// The preset's one number, in words.
fn headline(
    preset: &Preset,
    tasks: &[TaskReport],
    throughput: f64,
    unit: &str,
    latency: Option<Percentiles>,
    dropped: Option<u64>,
    fairness: Option<f64>,
) -> Headline {
    let group = preset.metric_task.clone();
    let (kind, value, unit_out, text) = match preset.headline {
        HeadlineKind::Throughput => (
            "throughput",
            throughput,
            format!("{unit}/s"),
            format!("{group} throughput: {}", rate(throughput, unit)),
        ),
        HeadlineKind::Latency => (
            "latency",
            latency.map_or(0, |l| l.p50) as f64,
            "ns".into(),
            latency_text(&group, latency, dropped),
        ),
        HeadlineKind::Share => {
            let share: f64 = tasks
                .iter()
                .filter(|t| t.group == group)
                .map(|t| t.cpu_share)
                .sum();
            (
                "share",
                share,
                "CPU".into(),
                // A task that reports no progress (an attached process, a command
                // without --progress) has only its share to show.
                if unit.is_empty() {
                    format!("{group} got {:.1} % of a CPU", share * 100.0)
                } else {
                    format!(
                        "{group} got {:.1} % of a CPU ({})",
                        share * 100.0,
                        rate(throughput, unit)
                    )
                },
            )
        }
        HeadlineKind::Fairness => {
            let err = fairness.unwrap_or(0.0);
            (
                "fairness",
                err,
                "fraction".into(),
                format!("fairness error {:.2} % of CPU time went to the wrong {group} task (ideal from nice weights)", err * 100.0),
            )
        }
    };
    Headline {
        kind: kind.into(),
        task: group,
        value,
        unit: unit_out,
        text,
    }
}

fn latency_text(group: &str, latency: Option<Percentiles>, dropped: Option<u64>) -> String {
    match (latency, dropped) {
        (Some(l), _) => format!(
            "{group} switch latency: p50 {} (min {}, p99 {}, max {})",
            ns(l.p50),
            ns(l.min),
            ns(l.p99),
            ns(l.max)
        ),
        (None, Some(n)) if n > 0 => format!(
            "{group} timed no switch: {} dropped (the partner never ran between the yields on the same CPU)",
            if n == 1 { "its one batch was".to_string() } else { format!("all {n} batches were") }
        ),
        (None, _) => format!("{group} recorded no latency samples"),
    }
}

/// Each make task's stages: first start, last end and job count, from shared memory.
fn stages(workload: &Workload, start_ns: u64) -> Vec<StageReport> {
    workload
        .tasks
        .iter()
        .filter(|t| t.kind == Some(WorkerKind::Make))
        .flat_map(|t| stage_reports(&workload.shm(), t.slot, start_ns))
        .collect()
}

fn stage_reports(shm: &Shm, slot: usize, start_ns: u64) -> Vec<StageReport> {
    let s = shm.slot(slot);
    STAGES
        .iter()
        .enumerate()
        .filter_map(|(i, name)| {
            let w = &s.aux[i * STAGE_WORDS..(i + 1) * STAGE_WORDS];
            let (first, last, jobs) = (
                w[0].load(Ordering::Relaxed),
                w[1].load(Ordering::Relaxed),
                w[2].load(Ordering::Relaxed),
            );
            (jobs > 0 && first != u64::MAX).then(|| StageReport {
                name: name.to_string(),
                jobs,
                start_s: first.saturating_sub(start_ns) as f64 / 1e9,
                wall_s: last.saturating_sub(first) as f64 / 1e9,
            })
        })
        .collect()
}

fn cpu_reports(store: &Store) -> Vec<CpuReport> {
    store
        .cpu_summary()
        .into_iter()
        .enumerate()
        .map(|(cpu, r)| CpuReport {
            cpu,
            busy_share: r.busy,
            steal_share: r.steal,
            idle_share: (1.0 - r.busy - r.steal).max(0.0),
        })
        .collect()
}

/// The time series, from the store (a headless run keeps every point).
fn series(store: &Store, workload: &Workload) -> RunSeries {
    let mut points: Vec<SeriesPoint> = store
        .tasks
        .iter()
        .enumerate()
        .flat_map(|(task, s)| {
            s.points.iter().map(move |r| SeriesPoint {
                t_s: r.t_s,
                task,
                cpu_share: r.cpu_share,
                wait_share: r.wait_share,
                switches_per_s: r.switches_per_s,
                progress_per_s: r.progress_per_s,
            })
        })
        .collect();
    points.sort_by(|a, b| a.t_s.total_cmp(&b.t_s).then(a.task.cmp(&b.task)));
    let mut cpus: Vec<CpuPoint> = store
        .cpus
        .iter()
        .enumerate()
        .flat_map(|(cpu, rates)| {
            rates.iter().map(move |(t_s, r)| CpuPoint {
                t_s: *t_s,
                cpu,
                busy: r.busy,
                steal: r.steal,
            })
        })
        .collect();
    cpus.sort_by(|a, b| a.t_s.total_cmp(&b.t_s).then(a.cpu.cmp(&b.cpu)));
    RunSeries {
        tasks: workload.tasks.iter().map(|t| t.name.clone()).collect(),
        points,
        cpus,
    }
}
