//! The sampled time series as CSV: one row per task per sample, and a row of its own for
//! each knob change.

use std::path::Path;

use anyhow::{Context, Result};
use serde::Serialize;

use super::EventReport;
use crate::lab::experiment::KnobEvent;
use crate::lab::store::TaskRates;
use crate::outfile::OutFile;
use crate::policy::policy_name;
use crate::sampler::TaskSample;
use crate::trace::TaskInterval;
use crate::workload::RunningTask;

/// One row of the CSV time series: a task's sample, or (with `event` set and the
/// numbers empty) a knob change at that moment.
#[derive(Clone, Debug, Serialize, PartialEq)]
struct CsvRow<'a> {
    pub t_s: f64,
    pub task: &'a str,
    pub pid: Option<i32>,
    pub tid: Option<i32>,
    pub policy: &'a str,
    pub nice: Option<i32>,
    pub cpu: Option<u32>,
    pub cpu_share: Option<f64>,
    pub wait_share: Option<f64>,
    pub switches_per_s: Option<f64>,
    pub voluntary_per_s: Option<f64>,
    pub involuntary_per_s: Option<f64>,
    pub migrations_per_s: Option<f64>,
    pub progress_per_s: Option<f64>,
    /// The scheduler trace's latest interval for the task (with --trace).
    pub trace_wakeup_p50_us: Option<f64>,
    pub trace_wakeup_p99_us: Option<f64>,
    pub trace_runq_p99_us: Option<f64>,
    pub trace_preempted: Option<u64>,
    pub trace_blocked: Option<u64>,
    pub event: String,
}

impl<'a> CsvRow<'a> {
    /// The row that marks a knob change.
    fn event(e: &EventReport, target: &'a str) -> CsvRow<'a> {
        CsvRow {
            t_s: (e.t_s * 1000.0).round() / 1000.0,
            task: target,
            pid: None,
            tid: None,
            policy: "",
            nice: None,
            cpu: None,
            cpu_share: None,
            wait_share: None,
            switches_per_s: None,
            voluntary_per_s: None,
            involuntary_per_s: None,
            migrations_per_s: None,
            progress_per_s: None,
            trace_wakeup_p50_us: None,
            trace_wakeup_p99_us: None,
            trace_runq_p99_us: None,
            trace_preempted: None,
            trace_blocked: None,
            event: format!("{} ({})", e.setting, e.result),
        }
    }
}

/// A CSV file being written as a run goes.
pub struct CsvWriter {
    w: ::csv::Writer<Out>,
}

/// Where the rows go.
enum Out {
    Stdout(std::io::Stdout),
    /// Put in place when the run is done ([`CsvWriter::finish`]).
    File(OutFile),
}

impl std::io::Write for Out {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Out::Stdout(s) => s.write(buf),
            Out::File(f) => f.write(buf),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Out::Stdout(s) => s.flush(),
            Out::File(f) => f.flush(),
        }
    }
}

impl CsvWriter {
    /// A CSV file at `path`, or stdout for `-`.
    pub fn create(path: &Path) -> Result<CsvWriter> {
        let out = if path == Path::new("-") {
            Out::Stdout(std::io::stdout())
        } else {
            Out::File(
                OutFile::create(path).with_context(|| format!("creating {}", path.display()))?,
            )
        };
        Ok(CsvWriter {
            w: ::csv::Writer::from_writer(out),
        })
    }

    /// The rows of one round's new points, with each task's latest trace interval.
    pub fn samples(
        &mut self,
        tasks: &[RunningTask],
        samples: &[TaskSample],
        points: &[(usize, TaskRates)],
        trace: &[Option<TaskInterval>],
    ) -> Result<()> {
        for (id, r) in points {
            let (Some(task), Some(sample)) = (tasks.get(*id), samples.get(*id)) else {
                continue;
            };
            let tr = trace.get(*id).copied().flatten();
            self.w.serialize(CsvRow {
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
                trace_wakeup_p50_us: tr.map(|t| t.wakeup_p50_us),
                trace_wakeup_p99_us: tr.map(|t| t.wakeup_p99_us),
                trace_runq_p99_us: tr.map(|t| t.runq_p99_us),
                trace_preempted: tr.map(|t| t.preempted),
                trace_blocked: tr.map(|t| t.blocked),
                event: String::new(),
            })?;
        }
        Ok(())
    }

    /// The row that marks a knob change.
    pub fn event(&mut self, e: &KnobEvent) -> Result<()> {
        let report = super::EventReport::of(e);
        self.w
            .serialize(CsvRow::event(&report, &e.setting.target))?;
        Ok(())
    }

    /// Every row written: the file takes its place.
    pub fn finish(self) -> Result<()> {
        match self.w.into_inner().map_err(|e| e.into_error())? {
            Out::Stdout(mut s) => std::io::Write::flush(&mut s),
            Out::File(f) => f.commit(),
        }
        .context("writing the CSV")
    }
}
