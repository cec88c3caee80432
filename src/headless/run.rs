//! `schedlab run`: start a preset's workload, apply its settings, sample it for a while
//! and build the report.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::ideal::{fairness_error, water_fill, weight_of_nice, IDLE_WEIGHT};
use crate::knob::sys::SysKnob;
use crate::knob::sys::SystemKnobs;
use crate::knob::task::Policy;
use crate::lab::record::{FileRecorder, Recorder};
use crate::lab::session::Session;
use crate::lab::store::{Store, TaskRates, FOREIGN_LIMIT_CPU};
use crate::preset::setting::Setting;
use crate::preset::{Headline as HeadlineKind, Preset};
use crate::report::{
    ns, rate, CpuPoint, CpuReport, CsvRow, EventReport, Headline, Metrics, Observer, RunReport,
    RunSeries, SeriesPoint, StageReport, TaskReport,
};
use crate::sampler::parse::policy_name;
use crate::sampler::{Command, Sampler, TaskSample};
use crate::workload::histogram::Histogram;
use crate::workload::kinds::WorkerKind;
use crate::workload::make::STAGES;
use crate::workload::shm::{Shm, STAGE_WORDS};
use crate::workload::{RunningTask, Workload};

/// How a headless run is driven.
#[derive(Clone, Debug)]
pub struct RunOptions {
    pub duration: Duration,
    pub interval: Duration,
    /// The schedlab binary, whose hidden subcommands are the workers.
    pub exe: PathBuf,
    pub csv: Option<PathBuf>,
    /// Set by SIGINT/SIGTERM/SIGHUP: end the run early, cleanly.
    pub stop: Arc<AtomicBool>,
    /// What the user asked for on the command line, for the report.
    pub overrides: Vec<String>,
    /// System knobs to set before the gate opens.
    pub system_sets: Vec<(SysKnob, Setting)>,
    /// Knob changes in the middle of the run, by time since start.
    pub at: Vec<(Duration, Setting)>,
    /// Record every sample and knob change to this file (see `record`).
    pub record: Option<PathBuf>,
    /// Leave this start-up time out of the summaries; None: the preset's warm-up.
    pub warmup: Option<Duration>,
}

impl RunOptions {
    pub fn new(exe: PathBuf) -> RunOptions {
        RunOptions {
            duration: Duration::from_secs(10),
            interval: Duration::from_millis(100),
            exe,
            csv: None,
            stop: Arc::new(AtomicBool::new(false)),
            overrides: Vec::new(),
            system_sets: Vec::new(),
            at: Vec::new(),
            record: None,
            warmup: None,
        }
    }

    /// The warm-up this run leaves out of its summaries: the one asked for, else the
    /// preset's when the run is at least twice as long (a shorter run keeps it all).
    pub fn warmup_for(&self, preset: &Preset) -> Duration {
        match self.warmup {
            Some(w) => w,
            None if self.duration >= preset.warmup * 2 => preset.warmup,
            None => Duration::ZERO,
        }
    }
}

/// Run `preset` (task overrides already applied) and report what happened. System
/// knobs go through `sys`, whose journal restores them when the caller is done.
pub fn run(preset: &Preset, opts: &RunOptions, sys: &mut SystemKnobs) -> Result<RunReport> {
    // The instrument must not be starved by what it measures (see Elevation::Fair).
    crate::knob::task::request_elevation(crate::knob::task::Elevation::Fair);
    crate::knob::task::elevate_if_requested(true);
    let begun = Instant::now();
    let (mut session, warnings) =
        Session::start(preset.clone(), &opts.system_sets, &opts.exe, sys)?;
    let targets = session.sampler_targets();
    let retention =
        (opts.duration.as_secs_f64() / opts.interval.as_secs_f64().max(1e-3)) as usize + 16;
    let mut store = Store::new(targets.len(), retention).with_warmup(opts.warmup_for(preset));
    let mut csv = match &opts.csv {
        Some(path) => Some(
            csv::Writer::from_path(path).with_context(|| format!("creating {}", path.display()))?,
        ),
        None => None,
    };
    let mut recorder = match &opts.record {
        Some(path) => {
            let mut r = FileRecorder::create(path)?;
            r.started(&session.started_info(warnings.clone()));
            r.system_knobs(&crate::knob::sys::list(&sys.probe));
            for (_, s) in &opts.system_sets {
                r.knob(&s.to_string(), &Ok("set before start".into()));
            }
            Some(r)
        }
        None => None,
    };
    let mut pending: Vec<(Duration, Setting)> = opts.at.clone();
    pending.sort_by_key(|(t, _)| *t);
    pending.reverse();
    let mut events = Vec::new();
    let mut series = RunSeries {
        tasks: session
            .workload
            .tasks
            .iter()
            .map(|t| t.name.clone())
            .collect(),
        ..RunSeries::default()
    };

    session.open_gate();
    let start_s = begun.elapsed().as_secs_f64();
    // Fault injection for the tests of the panic path (tests/knobs.rs).
    if std::env::var_os("SCHEDLAB_FAULT").is_some_and(|v| v == "panic-after-start") {
        panic!("fault injected by SCHEDLAB_FAULT=panic-after-start");
    }
    let sampler = Sampler::spawn(
        targets,
        Some(session.workload.shm()),
        session.workload.usage().cloned(),
        opts.interval,
    )
    .context("starting the sampler thread")?;
    let started = Instant::now();
    let cpu_at_start = crate::system::own_cpu_ns();
    let (mut rounds, mut sampler_ns) = (0u64, 0u64);
    // Reaping costs a wait4 per process: do it when a sample shows a task gone, and
    // otherwise every 100 ms (a process can exit between a task's reads).
    let mut reap_now = false;
    let mut last_reap = Instant::now();
    let mut interrupted = false;
    // When the last round was asked for: batches queued before it (the loop may have
    // been busy with a slow knob write) are taken in, and the run ends on one read after.
    let mut final_requested: Option<u64> = None;
    loop {
        // Sleep until the next batch or the next thing due (an --at change, the end, a
        // reap), so the loop wakes once per batch, not on a timer of its own as well.
        let now = run_elapsed(&store, started);
        let due = [
            pending.last().map(|(t, _)| *t),
            Some(opts.duration),
            Some(Duration::from_millis(100).saturating_sub(last_reap.elapsed()) + now),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(opts.duration);
        let wait = due
            .saturating_sub(now)
            .clamp(Duration::from_millis(1), Duration::from_millis(100));
        if let Some(batch) = sampler.recv_timeout(wait) {
            rounds += 1;
            sampler_ns += batch.cost_ns;
            reap_now |= batch.tasks.iter().any(|t| !t.alive);
            if let Some(r) = recorder.as_mut() {
                r.batch(&batch);
            }
            let points = store.push(&batch);
            if let Some(w) = csv.as_mut() {
                write_csv(w, &session.workload.tasks, &batch.tasks, &points)?;
            }
            series
                .points
                .extend(points.iter().map(|(id, r)| SeriesPoint {
                    t_s: r.t_s,
                    task: *id,
                    cpu_share: r.cpu_share,
                    wait_share: r.wait_share,
                    switches_per_s: r.switches_per_s,
                    progress_per_s: r.progress_per_s,
                }));
            for (cpu, rates) in store.cpus.iter().enumerate() {
                if let Some((t_s, r)) = rates.back().filter(|(t, _)| *t == store.t_s(batch.t_ns)) {
                    series.cpus.push(CpuPoint {
                        t_s: *t_s,
                        cpu,
                        busy: r.busy,
                        steal: r.steal,
                    });
                }
            }
            let read_at = batch.t_ns;
            sampler.recycle(batch);
            if final_requested.is_some_and(|asked| read_at >= asked) {
                break;
            }
        }
        if final_requested.is_some() {
            continue;
        }
        let elapsed = run_elapsed(&store, started);
        while pending.last().is_some_and(|(t, _)| elapsed >= *t) {
            let Some((_, setting)) = pending.pop() else {
                break;
            };
            let result = session.apply(&setting, sys);
            // On the samples' clock, taken once the change is in: a sample stamped
            // before the event never shows the new value.
            let t_s = store.t_s(crate::workload::shm::monotonic_ns());
            sampler.send(Command::RefreshStatus);
            if let Some(r) = recorder.as_mut() {
                r.knob(&setting.to_string(), &result);
            }
            let event = EventReport {
                t_s,
                setting: setting.to_string(),
                result: match &result {
                    Ok(v) => format!("ok: {v}"),
                    Err(e) => format!("refused: {e}"),
                },
                ok: result.is_ok(),
            };
            if let Some(w) = csv.as_mut() {
                w.serialize(CsvRow::event(&event, &setting.target))?;
            }
            events.push(event);
        }
        if opts.stop.load(Ordering::Relaxed) {
            interrupted = true;
        }
        let all_exited = if reap_now || last_reap.elapsed() >= Duration::from_millis(100) {
            reap_now = false;
            last_reap = Instant::now();
            session.workload.all_exited()
        } else {
            false
        };
        if interrupted || elapsed >= opts.duration || all_exited {
            // One more round so the run ends on a fresh sample: one read after this
            // moment (taken before asking, or the answer could predate it).
            final_requested = Some(crate::workload::shm::monotonic_ns());
            sampler.send(Command::SampleNow);
        }
    }
    // Before the sampler thread ends: its CPU time goes with it.
    let cpu_ns = crate::system::own_cpu_ns().saturating_sub(cpu_at_start);
    drop(sampler);
    let stopping = Instant::now();
    session.workload.stop();
    let stop_s = stopping.elapsed().as_secs_f64();
    if let Some(w) = csv.as_mut() {
        w.flush()?;
    }
    let mut report = build_report(
        &session.preset,
        opts,
        &session.workload,
        &store,
        &session.online,
    );
    report.partial = !warnings.is_empty();
    report.refused = warnings.clone();
    report.warnings = warnings;
    if let Some(f) = report.metrics.foreign_cpu {
        if f > FOREIGN_LIMIT_CPU {
            report.foreign_load = true;
            report.warnings.push(format!(
                "other programs took {f:.2} CPU on the experiment's CPUs ({}) while it ran: the numbers are not the experiment alone",
                store.used_cpus().to_list()
            ));
        }
    } else if session.workload.forks() {
        report.warnings.push(format!(
            "foreign load not measured: this run's commands start processes schedlab can only count inside a cgroup, and it has none ({})",
            session.workload.why_uncontained().unwrap_or("no cgroup")
        ));
    }
    report.interrupted = interrupted;
    report.events = events;
    report.series = series;
    let task_samples = (rounds * session.workload.tasks.len() as u64).max(1) as f64;
    report.observer = Observer {
        cpu_s: cpu_ns as f64 / 1e9,
        cpu_share: cpu_ns as f64 / 1e9 / report.duration_s.max(1e-9),
        samples: rounds,
        per_task_sample_us: cpu_ns as f64 / 1e3 / task_samples,
        sampler_per_task_sample_us: sampler_ns as f64 / 1e3 / task_samples,
        start_s,
        stop_s,
    };
    Ok(report)
}

fn write_csv<W: std::io::Write>(
    w: &mut csv::Writer<W>,
    tasks: &[RunningTask],
    samples: &[TaskSample],
    points: &[(usize, TaskRates)],
) -> Result<()> {
    for (id, r) in points {
        let (Some(task), Some(sample)) = (tasks.get(*id), samples.get(*id)) else {
            continue;
        };
        w.serialize(CsvRow {
            t_s: (r.t_s * 1000.0).round() / 1000.0,
            task: &task.name,
            pid: Some(task.pid),
            tid: Some(task.tid),
            policy: sample.policy().map_or("unknown", policy_name),
            nice: sample.nice(),
            cpu: r.cpu,
            cpu_share: Some(r.cpu_share),
            wait_share: r.wait_share,
            switches_per_s: Some(r.switches_per_s),
            voluntary_per_s: Some(r.voluntary_per_s),
            involuntary_per_s: Some(r.involuntary_per_s),
            migrations_per_s: r.migrations_per_s,
            progress_per_s: Some(r.progress_per_s),
            event: String::new(),
        })?;
    }
    Ok(())
}

/// Time into the run on the samples' clock (from the first batch), so that `--duration`
/// and `--at` line up with the time series; before the first batch, since `started`.
fn run_elapsed(store: &Store, started: Instant) -> Duration {
    match store.start_ns {
        Some(t0) => Duration::from_nanos(crate::workload::shm::monotonic_ns().saturating_sub(t0)),
        None => started.elapsed(),
    }
}

/// The kernel's view of a task from its last sample.
fn task_report(
    store: &Store,
    id: usize,
    task: &RunningTask,
    elapsed: f64,
    workload: &Workload,
) -> TaskReport {
    let series = &store.tasks[id];
    let last = series.last.as_ref().map(|(_, s)| s);
    let first = series.first.as_ref().map(|(_, s)| s);
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
        progress_per_s: store.progress_per_s(id, elapsed),
        progress_unit: task.progress_unit.to_string(),
        progress_total: match (first, last) {
            (Some(f), Some(l)) => l.progress.saturating_sub(f.progress),
            _ => 0,
        },
        ideal_share: None,
        state: if series.exited { "exited" } else { "running" }.into(),
        exit: exit.map(|s| s.to_string()),
    }
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

/// Weight a task had at the end of the run, for the ideal share.
fn weight(t: &TaskReport) -> f64 {
    match t.policy.parse::<Policy>() {
        Ok(Policy::Idle) => IDLE_WEIGHT as f64,
        _ => weight_of_nice(t.nice) as f64,
    }
}

fn build_report(
    preset: &Preset,
    opts: &RunOptions,
    workload: &Workload,
    store: &Store,
    online: &crate::cpuset::CpuSet,
) -> RunReport {
    let elapsed = store.elapsed_s();
    let summary_s = store.summary_s();
    let mut tasks: Vec<TaskReport> = workload
        .tasks
        .iter()
        .enumerate()
        .map(|(id, t)| task_report(store, id, t, summary_s, workload))
        .collect();
    let in_metric = |t: &TaskReport| t.group == preset.metric_task;
    let metric_tasks: Vec<&RunningTask> = workload
        .tasks
        .iter()
        .filter(|t| t.group == preset.metric_task)
        .collect();
    let unit = metric_tasks
        .first()
        .map_or("", |t| t.progress_unit)
        .to_string();
    let throughput: f64 = tasks
        .iter()
        .filter(|t| in_metric(t))
        .map(|t| t.progress_per_s)
        .sum();

    // Latency: merged histograms of every task that measures it.
    let mut latency: Option<Histogram> = None;
    for (id, t) in workload.tasks.iter().enumerate() {
        if !t.kind.is_some_and(WorkerKind::measures_latency) {
            continue;
        }
        if let Some((_, s)) = &store.tasks[id].last {
            let h = latency.get_or_insert_with(|| Histogram::from_values([]));
            h.merge(&s.latency);
        }
    }
    let latency_dropped = latency.as_ref().map(|h| h.dropped);
    let latency_ns = latency.and_then(|h| h.percentiles());

    // Ideal shares for the fairness headline: the group's weights water-filled over the
    // CPUs its tasks may use.
    let mut fairness = None;
    if preset.headline == HeadlineKind::Fairness {
        let ids: Vec<usize> = (0..tasks.len()).filter(|&i| in_metric(&tasks[i])).collect();
        let cpus = ids
            .iter()
            .filter_map(|&i| tasks[i].cpus.parse::<crate::cpuset::CpuSet>().ok())
            .fold(crate::cpuset::CpuSet::new(), |a, b| a.union(&b));
        let ncpus = if cpus.is_empty() {
            online.count()
        } else {
            cpus.count()
        };
        let weights: Vec<f64> = ids.iter().map(|&i| weight(&tasks[i])).collect();
        let ideal = water_fill(&weights, ncpus);
        for (&i, &share) in ids.iter().zip(&ideal) {
            tasks[i].ideal_share = Some(share);
        }
        let measured: Vec<f64> = ids.iter().map(|&i| tasks[i].cpu_share).collect();
        fairness = Some(fairness_error(&measured, &ideal));
    }

    let mut stages = Vec::new();
    for t in &workload.tasks {
        if t.kind == Some(WorkerKind::Make) {
            stages.extend(stage_reports(
                &workload.shm(),
                t.slot,
                store.start_ns.unwrap_or(0),
            ));
        }
    }
    let cpu: Vec<CpuReport> = store
        .cpu_summary()
        .into_iter()
        .enumerate()
        .map(|(cpu, r)| CpuReport {
            cpu,
            busy: r.busy,
            steal: r.steal,
            idle: (1.0 - r.busy - r.steal).max(0.0),
        })
        .collect();
    let cpu_idle_share = if cpu.is_empty() {
        0.0
    } else {
        cpu.iter().map(|c| c.idle).sum::<f64>() / cpu.len() as f64
    };

    let group = preset.metric_task.clone();
    let headline = match preset.headline {
        HeadlineKind::Throughput => Headline {
            kind: "throughput".into(),
            text: format!("{group} throughput: {}", rate(throughput, &unit)),
            task: group,
            value: throughput,
            unit: format!("{unit}/s"),
        },
        HeadlineKind::Latency => {
            let p50 = latency_ns.map_or(0, |l| l.p50);
            Headline {
                kind: "latency".into(),
                text: match latency_ns {
                    Some(l) => format!(
                        "{group} switch latency: p50 {} (min {}, p99 {}, max {})",
                        ns(l.p50),
                        ns(l.min),
                        ns(l.p99),
                        ns(l.max)
                    ),
                    None => match latency_dropped {
                        Some(n) if n > 0 => format!(
                            "{group} timed no switch: all {n} batches were dropped (the partner never ran between the yields on the same CPU)"
                        ),
                        _ => format!("{group} recorded no latency samples"),
                    },
                },
                task: group,
                value: p50 as f64,
                unit: "ns".into(),
            }
        }
        HeadlineKind::Share => {
            let share: f64 = tasks
                .iter()
                .filter(|t| in_metric(t))
                .map(|t| t.cpu_share)
                .sum();
            Headline {
                kind: "share".into(),
                text: format!(
                    "{group} got {:.1} % of a CPU ({})",
                    share * 100.0,
                    rate(throughput, &unit)
                ),
                task: group,
                value: share,
                unit: "CPU".into(),
            }
        }
        HeadlineKind::Fairness => {
            let err = fairness.unwrap_or(0.0);
            Headline {
                kind: "fairness".into(),
                text: format!("fairness error {:.2} % of CPU time went to the wrong {group} task (ideal from nice weights)", err * 100.0),
                task: group,
                value: err,
                unit: "fraction".into(),
            }
        }
    };
    RunReport {
        preset: preset.name.clone(),
        kernel: crate::system::kernel_release(),
        cpus: online.count(),
        duration_s: elapsed,
        summary_from_s: store.summary_start_s(),
        summary_s,
        interval_ms: opts.interval.as_secs_f64() * 1000.0,
        settings: preset.knob_table().into_iter().collect::<BTreeMap<_, _>>(),
        overrides: opts.overrides.clone(),
        tasks,
        metrics: Metrics {
            throughput_per_s: throughput,
            throughput_unit: unit,
            latency_ns,
            latency_dropped,
            fairness_error: fairness,
            stages,
            cpu,
            cpu_idle_share,
            // Without a cgroup, what a command forks is not counted as the experiment's.
            foreign_cpu: store
                .foreign_summary()
                .filter(|_| workload.usage().is_some() || !workload.forks()),
            headline,
        },
        warnings: Vec::new(),
        refused: Vec::new(),
        partial: false,
        foreign_load: false,
        events: Vec::new(),
        interrupted: false,
        observer: Observer::default(),
        series: RunSeries::default(),
    }
}
