//! `schedlab run`: start a preset's workload, apply its settings, sample it for a while
//! and build the report.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use crate::knob::journal::Changed;
use crate::knob::sys::{SysKnob, SystemKnobs};
use crate::lab::experiment::{self, Experiment};
use crate::lab::live::Live;
use crate::lab::record::FileRecorder;
use crate::preset::setting::Setting;
use crate::preset::Preset;
use crate::report::build::{run_report, Asked};
use crate::report::csv::CsvWriter;
use crate::report::trace::write_timeline;
use crate::report::RunReport;
use crate::sampler::Interval;

/// A command of the run failed before the run ended (see [`RunReport::failure_text`]):
/// the report was printed, and the exit code says the run failed.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Failed(pub String);

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
    /// Trace the tasks with the sched tracepoints (see `crate::trace`).
    pub trace: bool,
    /// Write the trace as a Perfetto timeline here (implies `trace`).
    pub trace_out: Option<PathBuf>,
    /// Which sched_waking events the trace asks the kernel for.
    pub wakings: crate::trace::Wakings,
    /// `--allow-unthrottled-rt`: the checks before the run let `sys.rt_runtime_us=-1`
    /// beside RT tasks through.
    pub allow_unthrottled_rt: bool,
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
            trace: false,
            trace_out: None,
            wakings: crate::trace::Wakings::CrossCpu,
            allow_unthrottled_rt: false,
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
    run_live(preset, opts, sys).map(|(report, _)| report)
}

/// [`run`], with the live model the report was built from (a lesson checks its steps
/// on it).
pub fn run_live(
    preset: &Preset,
    opts: &RunOptions,
    sys: &mut SystemKnobs,
) -> Result<(RunReport, Live)> {
    // The instrument must not be starved by what it measures (see Elevation::Fair).
    crate::knob::task::request_elevation(crate::knob::task::Elevation::Fair);
    crate::knob::task::elevate_if_requested(true);
    let retention =
        (opts.duration.as_secs_f64() / opts.interval.as_secs_f64().max(1e-3)) as usize + 16;
    let lab_opts = experiment::Options {
        interval: Interval::new(opts.interval),
        // A timeline keeps the whole run's events, up to the tracer's cap.
        trace: match (opts.trace, &opts.trace_out) {
            (false, _) => experiment::Trace::Off,
            (true, None) => experiment::Trace::On,
            (true, Some(_)) => experiment::Trace::Keeping(opts.duration * 2),
        },
        wakings: opts.wakings,
    };
    let mut csv = opts.csv.as_deref().map(CsvWriter::create).transpose()?;
    let mut exp = Experiment::start(preset.clone(), &opts.system_sets, &opts.exe, sys, &lab_opts)?;
    let mut live = Live::new(exp.started(), retention, opts.warmup_for(preset));
    if let Some(path) = &opts.record {
        exp.record(Some(Box::new(FileRecorder::create(path)?)), sys);
        for (_, s) in &opts.system_sets {
            exp.record_knob(&s.to_string(), &Ok("set before start".into()));
        }
    }
    // Fault injection for the tests of the panic path (tests/knobs.rs).
    if std::env::var_os("SCHEDLAB_FAULT").is_some_and(|v| v == "panic-after-start") {
        panic!("fault injected by SCHEDLAB_FAULT=panic-after-start");
    }
    let mut changed = Vec::new();
    let interrupted = drive(&mut exp, &mut live, opts, sys, &mut csv, &mut changed)?;
    let mut finished = exp.stop();
    // What the trace saw after the last round.
    if let Some(t) = finished.trace.as_mut() {
        for tb in std::mem::take(&mut t.pending) {
            live.push_trace(&tb);
        }
    }
    if let Some(w) = csv.take() {
        w.finish()?;
    }
    let mut report = run_report(
        &finished,
        &live,
        &Asked {
            interval_ms: opts.interval.as_secs_f64() * 1000.0,
            overrides: &opts.overrides,
            interrupted,
        },
    );
    // A system knob changed under the run: what was measured since is not the setting's.
    for c in changed {
        report.warnings.push(c.to_string());
        report.refused.push(c.to_string());
        report.partial = true;
    }
    if let Some(path) = &opts.trace_out {
        if write_timeline(&mut report, &finished, path)?.is_none() {
            report.warnings.push(format!(
                "no timeline written to {}: the trace did not run",
                path.display()
            ));
        }
    }
    Ok((report, live))
}

/// Take in rounds and apply the `--at` changes until the run's time is up, its tasks are
/// gone or a signal came; returns whether it was interrupted. Every round also looks
/// whether a system knob schedlab wrote was changed by someone else (into `changed`,
/// once per knob).
fn drive(
    exp: &mut Experiment,
    live: &mut Live,
    opts: &RunOptions,
    sys: &mut SystemKnobs,
    csv: &mut Option<CsvWriter>,
    changed: &mut Vec<Changed>,
) -> Result<bool> {
    let mut pending: Vec<(Duration, Setting)> = opts.at.clone();
    pending.sort_by_key(|(t, _)| *t);
    pending.reverse();
    let mut interrupted = false;
    loop {
        // Sleep until the next round or the next thing due (an --at change, the end, a
        // reap), so the loop wakes once per round, not on a timer of its own as well.
        let now = exp.elapsed();
        let due = [pending.last().map(|(t, _)| *t), Some(opts.duration)]
            .into_iter()
            .flatten()
            .chain([now + exp.reap_due_in()])
            .min()
            .unwrap_or(opts.duration);
        let wait = due
            .saturating_sub(now)
            .clamp(Duration::from_millis(1), Duration::from_millis(100));
        if let Some(polled) = exp.poll(wait) {
            let points = live.take(&polled);
            if let Some(cg) = exp.session().cgroups.as_ref() {
                let read = cg
                    .names()
                    .into_iter()
                    .filter_map(|n| cg.throttling(&n).map(|t| (n, t)))
                    .collect();
                live.push_throttling(read);
            }
            if let Some(w) = csv.as_mut() {
                w.samples(
                    &exp.session().workload.tasks,
                    &polled.batch.tasks,
                    &points,
                    &live.store.latest_trace(),
                )?;
            }
            for c in sys.journal.changed_under() {
                if !changed.iter().any(|seen| seen.path == c.path) {
                    changed.push(c);
                }
            }
            let last = exp.is_last(&polled.batch);
            exp.recycle(polled.batch);
            if last {
                return Ok(interrupted);
            }
        }
        if exp.ending() {
            continue;
        }
        let elapsed = exp.elapsed();
        while let Some((_, setting)) = pending.pop_if(|(t, _)| elapsed >= *t) {
            let event = exp.apply(&setting, sys);
            if let Some(w) = csv.as_mut() {
                w.event(event)?;
            }
        }
        interrupted |= opts.stop.load(Ordering::Relaxed);
        if interrupted || elapsed >= opts.duration || exp.all_exited() {
            exp.ask_last_sample();
        }
    }
}
