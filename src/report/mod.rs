//! What a headless run reports: the JSON shape, the readable table, and the CSV time series;
//! the sweep's, the comparison's and the check's reports live in the submodules named so.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

pub mod build;
pub mod check;
pub mod compare;
pub mod csv;
pub mod lesson;
pub mod meta;
pub mod perfetto;
pub mod progress;
pub mod sweep;
pub mod timeline;
pub mod trace;

use crate::format::{counted, ns, rate, si};
use crate::histogram::Percentiles;
pub use crate::lab::experiment::Observer;

/// A count's unit as the unit of its rate: "bytes" -> "bytes/s" (empty stays empty).
pub fn per_s<S: serde::Serializer>(unit: &str, s: S) -> Result<S::Ok, S::Error> {
    if unit.is_empty() {
        s.serialize_str("")
    } else {
        s.serialize_str(&format!("{unit}/s"))
    }
}

/// The yield-latency worker's latency: its percentiles, its histogram and its course
/// over the run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LatencyReport {
    #[serde(flatten)]
    pub percentiles: Percentiles,
    /// The whole run's non-empty buckets, a quarter octave each.
    pub histogram: Vec<crate::histogram::ReportBucket>,
    /// Per sample interval (those that recorded any): p50, p99, max and count.
    pub intervals: Vec<crate::lab::store::LatencyInterval>,
}

impl std::ops::Deref for LatencyReport {
    type Target = Percentiles;

    fn deref(&self) -> &Percentiles {
        &self.percentiles
    }
}

/// One task's line of a run report. Policy, nice, priority and CPUs are what the kernel
/// reported at the end of the run, not what was asked for.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TaskReport {
    pub name: String,
    pub group: String,
    pub pid: i32,
    pub tid: i32,
    pub policy: String,
    pub nice: i32,
    pub rt_priority: u32,
    pub cpus: String,
    pub last_cpu: Option<u32>,
    pub cpu_share: f64,
    pub wait_share: Option<f64>,
    pub switches_per_s: f64,
    pub voluntary_per_s: f64,
    pub involuntary_per_s: f64,
    pub migrations_per_s: Option<f64>,
    pub progress_per_s: f64,
    pub progress_unit: String,
    pub progress_total: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ideal_share: Option<f64>,
    /// "running" or "exited".
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<String>,
    /// What the scheduler trace saw (with --trace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sched: Option<trace::SchedReport>,
}

/// The preset's one number, with its meaning.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Headline {
    /// throughput, latency, share or fairness.
    pub kind: String,
    pub task: String,
    pub value: f64,
    pub unit: String,
    pub text: String,
}

/// One stage of a parallel build.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StageReport {
    pub name: String,
    pub jobs: u64,
    pub start_s: f64,
    pub wall_s: f64,
}

/// One CPU over the summary: fractions (0..1) of its time busy, stolen by the
/// hypervisor and idle.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CpuReport {
    pub cpu: usize,
    pub busy_share: f64,
    pub steal_share: f64,
    pub idle_share: f64,
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Metrics {
    pub throughput_per_s: f64,
    /// What is counted ("bytes"); the JSON names the rate ("bytes/s").
    #[serde(serialize_with = "per_s")]
    pub throughput_unit: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency: Option<LatencyReport>,
    /// Timed batches left out of `latency` because the partner did not run between
    /// the yields on the same CPU (present when the run measures latency).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latency_dropped: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fairness_error: Option<f64>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub stages: Vec<StageReport>,
    pub cpu: Vec<CpuReport>,
    /// Mean idle share of the CPUs over the run.
    pub cpu_idle_share: f64,
    /// CPU time others took on the experiment's CPUs (busy + steal minus the
    /// experiment's tasks and schedlab), in CPUs, over the summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub foreign_cpus: Option<f64>,
    pub headline: Headline,
}

/// Everything `schedlab run` knows at the end of a run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct RunReport {
    pub preset: String,
    pub kernel: String,
    pub cpus: usize,
    pub duration_s: f64,
    /// The summaries (shares, rates, throughput) cover `summary_s` seconds from
    /// `summary_from_s`: a preset's warm-up is left out.
    pub summary_from_s: f64,
    pub summary_s: f64,
    pub interval_ms: f64,
    /// Every knob of the preset after overrides.
    pub settings: BTreeMap<String, String>,
    /// The `--set`s and variant given on the command line, in order.
    pub overrides: Vec<String>,
    pub tasks: Vec<TaskReport>,
    pub metrics: Metrics,
    /// Everything worth a reader's attention: settings the kernel refused (the run went
    /// on without them), foreign load, what could not be measured.
    pub warnings: Vec<String>,
    /// The settings that define this experiment which the kernel refused, each once: with
    /// any, the numbers are not the experiment's (`partial`).
    pub refused: Vec<String>,
    pub partial: bool,
    /// Other programs took more than [`crate::lab::store::FOREIGN_LIMIT_CPU`] of the
    /// experiment's CPUs.
    pub foreign_load: bool,
    /// Commands that failed before the run ended: with any, the run failed and its
    /// numbers measure nothing.
    pub failed: Vec<FailedTask>,
    /// Knob changes during the run (`--at`), with the kernel's answer.
    pub events: Vec<EventReport>,
    pub interrupted: bool,
    /// What measuring cost: schedlab's own CPU time while the experiment ran.
    pub observer: Observer,
    /// The scheduler trace as a whole (with --trace).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace: Option<trace::TraceReport>,
    /// The sampled time series (for plots and recordings; the CSV has it too).
    #[serde(skip)]
    pub series: RunSeries,
}

/// A command that exited with a non-zero status, or was killed by a signal not
/// schedlab's, before the run ended.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FailedTask {
    pub task: String,
    pub pid: i32,
    /// As Rust's std words it: "exit status: 2", "signal: 11 (SIGSEGV) (core dumped)".
    pub status: String,
    /// The last lines written to the run's stderr log, the command's stderr (at most
    /// [`STDERR_TAIL_LINES`], from its last 4 KiB; control characters escaped).
    pub stderr_tail: Vec<String>,
}

/// How many of a failed command's last stderr lines are kept.
pub const STDERR_TAIL_LINES: usize = 8;

impl RunReport {
    /// What failed: each failed command's status, with its stderr tail indented
    /// below; None when no command failed.
    pub fn failure_text(&self) -> Option<String> {
        if self.failed.is_empty() {
            return None;
        }
        let mut out = String::new();
        for f in &self.failed {
            let _ = write!(
                out,
                "\n  {} (pid {}) ended with {} before the run ended",
                f.task, f.pid, f.status
            );
            if f.stderr_tail.is_empty() {
                out.push_str(", and wrote nothing to stderr");
            } else {
                out.push_str("; its stderr ends:");
                for line in &f.stderr_tail {
                    let _ = write!(out, "\n    {line}");
                }
            }
        }
        Some(out)
    }
}

/// One task's rates at one sample.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct SeriesPoint {
    pub t_s: f64,
    /// Index into [`RunSeries::tasks`].
    pub task: usize,
    pub cpu_share: f64,
    pub wait_share: Option<f64>,
    pub switches_per_s: f64,
    pub progress_per_s: f64,
}

/// One CPU's busy and steal share at one sample.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct CpuPoint {
    pub t_s: f64,
    pub cpu: usize,
    pub busy: f64,
    pub steal: f64,
}

/// Everything sampled during a run, in time order.
#[derive(Clone, Debug, Default, Serialize, PartialEq)]
pub struct RunSeries {
    pub tasks: Vec<String>,
    pub points: Vec<SeriesPoint>,
    pub cpus: Vec<CpuPoint>,
}

/// A knob change during a run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct EventReport {
    pub t_s: f64,
    pub setting: String,
    pub result: String,
    pub ok: bool,
}

impl EventReport {
    /// A knob event as the report, the CSV and the timeline show it.
    pub fn of(e: &crate::lab::experiment::KnobEvent) -> EventReport {
        EventReport {
            t_s: e.t_s,
            setting: e.setting.to_string(),
            result: match &e.result {
                Ok(v) => format!("ok: {v}"),
                Err(e) => format!("refused: {e}"),
            },
            ok: e.result.is_ok(),
        }
    }

    /// `writer.nice=50 -> refused: nice 50 is out of range`: the report's and the
    /// timeline's line, naming the setting once (the knob layer's message, whole in
    /// `result`, often starts with it).
    pub fn line(&self) -> String {
        let s = &self.setting;
        let result = match ["ok: ", "refused: "]
            .iter()
            .find_map(|k| Some((k, self.result.strip_prefix(k)?)))
        {
            Some((kind, msg)) => format!("{kind}{}", without_setting(s, msg)),
            None => without_setting(s, &self.result).to_string(),
        };
        format!("{s} -> {result}")
    }
}

/// A knob's message without the setting (or the knob) it starts with: for
/// `writer.nice=50`, `writer.nice=50: nice 50 is out of range` is `nice 50 is out of
/// range`; for `sys.x=-1`, `sys.x=-1 refused: why` is `why` and `sys.x cannot be changed
/// here: why` is `cannot be changed here: why`. The line that shows it names the setting
/// itself, once.
pub fn without_setting<'a>(setting: &str, msg: &'a str) -> &'a str {
    let knob = setting.split_once('=').map_or(setting, |(k, _)| k);
    for name in [setting, knob] {
        let Some(rest) = msg.strip_prefix(name) else {
            continue;
        };
        // `writer.nice=5` is not the start of `writer.nice=50: ...`.
        if !rest.starts_with([':', ' ']) {
            continue;
        }
        let rest = rest.trim_start_matches([':', ' ']);
        let rest = rest.strip_prefix("refused:").map_or(rest, str::trim_start);
        if !rest.is_empty() {
            return rest;
        }
    }
    msg
}

fn pct(v: f64) -> String {
    format!("{:.1}", v * 100.0)
}

/// Rows of cells as aligned columns, two spaces apart: `left(column)` says which columns
/// are left-aligned (names), the others are right-aligned (numbers).
pub fn align(rows: &[Vec<String>], left: impl Fn(usize) -> bool) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, cell)| {
                if left(c) {
                    format!("{cell:<w$}", w = widths[c])
                } else {
                    format!("{cell:>w$}", w = widths[c])
                }
            })
            .collect();
        let _ = writeln!(out, "{}", line.join("  ").trim_end());
    }
    out
}

/// The readable form of a run report.
pub fn render_table(r: &RunReport) -> String {
    let mut out = String::new();
    write_heading(&mut out, r);
    out.push_str(&align(&task_rows(r), |c| c < 5));
    write_cpus(&mut out, &r.metrics);
    write_stages(&mut out, &r.metrics);
    write_latency(&mut out, &r.metrics);
    trace::write_table(&mut out, r);
    for e in &r.events {
        let _ = writeln!(out, "at {:.2} s: {}", e.t_s, e.line());
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    match failed_verdict(r) {
        // What a failed command got of the CPUs is no result: not shown as one.
        Some(failed) => {
            let _ = writeln!(out, "=> {failed}: nothing was measured");
        }
        None => {
            let _ = writeln!(out, "=> {}{}", verdict_prefix(r), r.metrics.headline.text);
        }
    }
    out
}

/// What ran where and for how long, the overrides, and what the rates cover.
fn write_heading(out: &mut String, r: &RunReport) {
    let _ = writeln!(
        out,
        "{} on Linux {} ({}), {:.1} s sampled every {} ms{}",
        r.preset,
        r.kernel,
        counted(r.cpus as u64, "CPU"),
        r.duration_s,
        r.interval_ms,
        if r.interrupted { " (interrupted)" } else { "" }
    );
    if !r.overrides.is_empty() {
        let _ = writeln!(out, "settings: {}", r.overrides.join(" "));
    }
    if r.summary_from_s > 0.0 {
        let _ = writeln!(
            out,
            "rates below: the last {:.1} s (the first {:.1} s were warm-up)",
            r.summary_s, r.summary_from_s
        );
    }
}

/// The task table's header and one row per task; IDEAL% only when some task has one.
fn task_rows(r: &RunReport) -> Vec<Vec<String>> {
    let headers = [
        "TASK", "PID/TID", "POLICY", "NICE", "CPUS", "CPU%", "WAIT%", "VOL/S", "INVOL/S", "MIG/S",
        "PROGRESS",
    ];
    let mut rows: Vec<Vec<String>> = vec![headers.iter().map(|h| h.to_string()).collect()];
    let has_ideal = r.tasks.iter().any(|t| t.ideal_share.is_some());
    if has_ideal {
        rows[0].push("IDEAL%".into());
    }
    rows.extend(r.tasks.iter().map(|t| task_cells(t, has_ideal)));
    rows
}

fn task_cells(t: &TaskReport, has_ideal: bool) -> Vec<String> {
    let policy = if t.rt_priority > 0 {
        format!("{}/{}", t.policy, t.rt_priority)
    } else {
        t.policy.clone()
    };
    let mut row = vec![
        if t.state == "exited" && t.exit.as_deref().is_some_and(|e| e != "exit status: 0") {
            format!("{} ({})", t.name, t.exit.as_deref().unwrap_or_default())
        } else if t.state == "exited" {
            format!("{} (exited)", t.name)
        } else {
            t.name.clone()
        },
        format!("{}/{}", t.pid, t.tid),
        policy,
        t.nice.to_string(),
        t.cpus.clone(),
        pct(t.cpu_share),
        t.wait_share.map_or("-".into(), pct),
        si(t.voluntary_per_s),
        si(t.involuntary_per_s),
        t.migrations_per_s.map_or("-".into(), si),
        rate(t.progress_per_s, &t.progress_unit),
    ];
    if has_ideal {
        row.push(t.ideal_share.map_or("-".into(), pct));
    }
    row
}

/// Every CPU's busy and steal on one line.
fn write_cpus(out: &mut String, m: &Metrics) {
    let cpus: Vec<String> = m
        .cpu
        .iter()
        .map(|c| {
            format!(
                "cpu{} busy {}% steal {}%",
                c.cpu,
                pct(c.busy_share),
                pct(c.steal_share)
            )
        })
        .collect();
    if !cpus.is_empty() {
        let _ = writeln!(out, "{}", cpus.join(", "));
    }
}

fn write_stages(out: &mut String, m: &Metrics) {
    for s in &m.stages {
        let _ = writeln!(
            out,
            "stage {:<8} {:>4} {}, started at {:.2} s, wall {:.2} s",
            s.name,
            s.jobs,
            if s.jobs == 1 { "job " } else { "jobs" },
            s.start_s,
            s.wall_s
        );
    }
}

/// The latency percentiles, when the run measured them, and the batches left out.
fn write_latency(out: &mut String, m: &Metrics) {
    let dropped = match m.latency_dropped {
        Some(n) if n > 0 => format!(
            ", {} dropped: the partner did not run in them",
            counted(n, "batch")
        ),
        _ => String::new(),
    };
    if let Some(l) = &m.latency {
        let _ = writeln!(
            out,
            "latency per switch: min {} p50 {} p90 {} p99 {} p99.9 {} max {} ({}{dropped})",
            ns(l.min),
            ns(l.p50),
            ns(l.p90),
            ns(l.p99),
            ns(l.p999),
            ns(l.max),
            counted(l.count, "sample")
        );
    }
}

/// "FAILED (make ended with exit status: 2 before the run ended)" when a command failed.
fn failed_verdict(r: &RunReport) -> Option<String> {
    if r.failed.is_empty() {
        return None;
    }
    let who: Vec<String> = r
        .failed
        .iter()
        .map(|f| format!("{} ended with {}", f.task, f.status))
        .collect();
    Some(format!("FAILED ({} before the run ended)", who.join(", ")))
}

/// "FAILED ...: " or "NOT THE EXPERIMENT ...: " before a headline that is not what the
/// preset measures.
pub fn verdict_prefix(r: &RunReport) -> String {
    if let Some(failed) = failed_verdict(r) {
        return format!("{failed}: ");
    }
    let mut why = Vec::new();
    if r.partial {
        let n = r.refused.len();
        why.push(format!(
            "{n} setting{} refused",
            if n == 1 { " was" } else { "s were" }
        ));
    }
    if r.foreign_load {
        why.push(format!(
            "other programs took {:.2} CPU of its CPUs",
            r.metrics.foreign_cpus.unwrap_or(0.0)
        ));
    }
    if why.is_empty() {
        String::new()
    } else {
        format!("NOT THE EXPERIMENT ({}): ", why.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_numbers() {
        assert_eq!(si(0.0), "0");
        assert_eq!(si(1234.0), "1.2k");
        assert_eq!(si(2_500_000.0), "2.5M");
        assert_eq!(si(0.25), "0.2");
        assert_eq!(rate(26_100_000.0, "bytes"), "26.1 MB/s");
        assert_eq!(rate(1_655_200_000.0, "bytes"), "1.66 GB/s");
        assert_eq!(rate(2_500.0, "bytes"), "2.5 kB/s");
        assert_eq!(rate(470.0, "loops"), "470 loops/s");
        assert_eq!(ns(1500), "1.5 us");
        assert_eq!(ns(56_000_000), "56.0 ms");
    }

    #[test]
    fn counts_take_the_singular_for_one() {
        assert_eq!(counted(1, "task"), "1 task");
        assert_eq!(counted(0, "task"), "0 tasks");
        assert_eq!(counted(2, "CPU"), "2 CPUs");
        assert_eq!(counted(1, "batch"), "1 batch");
        assert_eq!(counted(3, "batch"), "3 batches");
        assert_eq!(counted(2, "process"), "2 processes");
    }

    #[test]
    fn a_knob_message_loses_the_setting_it_starts_with_only() {
        let s = "writer.nice=50";
        assert_eq!(
            without_setting(s, "writer.nice=50: nice 50 is out of range"),
            "nice 50 is out of range"
        );
        assert_eq!(
            without_setting(
                "sys.rt_runtime_us=-1",
                "sys.rt_runtime_us=-1 refused: it spins"
            ),
            "it spins"
        );
        // Another setting's name, a longer value, a task's name, nothing after it: kept.
        assert_eq!(
            without_setting("writer.nice=5", "writer.nice=50: x"),
            "writer.nice=50: x"
        );
        assert_eq!(
            without_setting(s, "writer: setting policy fifo failed: EPERM"),
            "writer: setting policy fifo failed: EPERM"
        );
        assert_eq!(without_setting(s, s), s);
        // The knob alone, as the system knobs' refusals name it.
        assert_eq!(
            without_setting(
                "sys.feature.WA_IDLE=off",
                "sys.feature.WA_IDLE cannot be changed here: kernel lockdown"
            ),
            "cannot be changed here: kernel lockdown"
        );
        assert_eq!(
            without_setting("writer.nice=5", "writer.nicety: x"),
            "writer.nicety: x"
        );
    }

    #[test]
    fn an_event_line_names_its_setting_once() {
        let refused = crate::lab::experiment::KnobEvent {
            t_s: 1.0,
            setting: "writer.nice=50".parse().expect("setting"),
            result: Err(crate::error::KnobError::invalid(
                "writer.nice=50: nice 50 is out of range",
            )),
        };
        let r = EventReport::of(&refused);
        assert_eq!(
            r.line(),
            "writer.nice=50 -> refused: nice 50 is out of range"
        );
        // The JSON and the CSV keep the knob layer's message whole.
        assert_eq!(r.result, "refused: writer.nice=50: nice 50 is out of range");
        let applied = crate::lab::experiment::KnobEvent {
            t_s: 1.0,
            setting: "writer.nice=3".parse().expect("setting"),
            result: Ok("applied to writer".into()),
        };
        assert_eq!(
            EventReport::of(&applied).line(),
            "writer.nice=3 -> ok: applied to writer"
        );
    }
}
