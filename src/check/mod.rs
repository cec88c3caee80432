//! `schedlab check`: short experiments that characterize this machine's scheduler, each judged.

mod measure;
mod plots;
pub mod verdict;

use std::fmt::Write as _;
use std::io::{IsTerminal, Write as _};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Result};
use serde::Serialize;
use serde_json::{json, Value};

use crate::headless::run::{run, RunOptions};
use crate::ideal::fairness_error;
use crate::knob::sys::SystemKnobs;
use crate::knob::sys::{self, SysKnob};
use crate::preset::{self, Preset};
use crate::report::{ns, si, RunReport};
use crate::workload::histogram::Histogram;

use measure::LoadWindow;
pub use measure::{steal_shares, StatSnapshot};
pub use plots::{histogram_curve, write_plots};
pub use verdict::Verdict;

/// Every finding's id, in report order. The JSON always has all of them.
pub const IDS: [&str; 10] = [
    "wakeup_latency_other",
    "wakeup_latency_fifo",
    "switch_cost_same_cpu",
    "switch_cost_cross_cpu",
    "pipe_wakeup_batch_ratio",
    "nice_fairness_error",
    "fifo_fair_share",
    "steal_time",
    "cpu_speed",
    "knobs",
];

/// Budget of the default run and of `--quick`, in seconds (the check prints what it took).
pub const BUDGET_S: f64 = 60.0;
pub const QUICK_BUDGET_S: f64 = 15.0;

/// Other load (in CPUs) from which the text report warns about it.
const OTHER_LOAD_NOTE: f64 = 0.2;

/// Other load (in CPUs) from which a problem verdict is only notable.
const OTHER_LOAD_DISTURBS: f64 = 0.5;

/// FIFO priority of the latency thread, as cyclictest -p80.
const FIFO_PRIORITY: u32 = 80;

/// Under BATCH the writer fills the pipe before the reader runs: ~30-200 involuntary
/// switches/s here. A writer preempted on most writes (60-80k/s) is in the slow regime a
/// pipe falls into once something polled it (its poll_usage then wakes the reader on
/// every write; see the `polled` variant): schedlab's own workers never do.
const SLOW_REGIME_INVOLUNTARY_PER_S: f64 = 10_000.0;

/// How `schedlab check` runs.
#[derive(Clone, Debug)]
pub struct CheckOptions {
    /// The short suite (at most ~15 s instead of ~60 s).
    pub quick: bool,
    /// Set by SIGINT/SIGTERM/SIGHUP: skip what has not run yet.
    pub stop: Arc<AtomicBool>,
    /// A progress line on stderr.
    pub progress: bool,
}

impl CheckOptions {
    pub fn new(quick: bool) -> CheckOptions {
        CheckOptions {
            quick,
            stop: Arc::new(AtomicBool::new(false)),
            progress: true,
        }
    }
}

/// One line of the check.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Finding {
    pub id: String,
    /// What was measured, in a few words.
    pub title: String,
    /// The headline number (always finite; 0 when it could not be measured, see details).
    pub value: f64,
    pub unit: String,
    /// What a healthy machine shows.
    pub healthy: String,
    pub verdict: Verdict,
    /// One sentence: why this verdict.
    pub explanation: String,
    /// How it was measured (and which tool it matches).
    pub method: String,
    pub details: Value,
    /// The value as the text report shows it.
    #[serde(skip)]
    pub shown: String,
}

/// One bar of a plot: label, value, and the range it varied over.
pub type Bar = (String, f64, Option<(f64, f64)>);

/// Data behind the plots, kept out of the JSON.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckData {
    /// Wakeup latency histograms by policy (ns).
    pub latency: Vec<(String, Histogram)>,
    /// (label, us per round trip, range over chunks of the run).
    pub switch_cost: Vec<Bar>,
    /// (cpuN, M iterations/s best, range over slices).
    pub cpu_speed: Vec<Bar>,
}

/// Everything `schedlab check` found.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CheckReport {
    pub kernel: String,
    pub cpus: usize,
    pub quick: bool,
    /// Wall time of the whole check.
    pub duration_s: f64,
    pub budget_s: f64,
    /// A hypervisor flag, a registered hypervisor or steal time was seen.
    pub vm: bool,
    /// CPUs kept busy on average by other processes during the check (their load
    /// disturbs every number here).
    pub other_load_cpus: f64,
    pub interrupted: bool,
    pub findings: Vec<Finding>,
    #[serde(skip)]
    pub data: CheckData,
}

impl CheckReport {
    pub fn finding(&self, id: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.id == id)
    }
}

/// How long each experiment runs.
#[derive(Clone, Copy, Debug)]
struct Budget {
    wakeup: Duration,
    switch: Duration,
    preset_run: Duration,
    ladder: Duration,
    rt: Duration,
    spin_total: Duration,
    spin_rounds: usize,
}

impl Budget {
    /// Worst case quick: 2 + 1 + 3 x 0.8 + 2.5 + 2 + 0.5 = 10.4 s of experiments plus
    /// ~0.1-0.3 s of start-up per preset run (measured: 10-11 s idle, 11-14 s under other
    /// load). Default: 16 + 4 + 3 x 3 (up to 4 x 3) + 8 + 5 + 2 = 44-47 s. The ladder gets
    /// the most time a budget allows: its error shrinks with the run (2.5 s: 2-3.5 %,
    /// 6 s: ~2 % on the dev VM).
    fn new(quick: bool) -> Budget {
        let s = Duration::from_secs_f64;
        if quick {
            Budget {
                wakeup: s(1.0),
                switch: s(0.5),
                preset_run: s(0.8),
                ladder: s(2.5),
                rt: s(2.0),
                spin_total: s(0.5),
                spin_rounds: 3,
            }
        } else {
            Budget {
                wakeup: s(8.0),
                switch: s(2.0),
                preset_run: s(3.0),
                ladder: s(8.0),
                rt: s(5.0),
                spin_total: s(2.0),
                spin_rounds: 5,
            }
        }
    }
}

/// The progress line on stderr: rewritten in place on a terminal, plain lines otherwise.
struct Progress {
    enabled: bool,
    tty: bool,
    step: usize,
    total: usize,
}

impl Progress {
    fn new(enabled: bool, total: usize) -> Progress {
        Progress {
            enabled,
            tty: std::io::stderr().is_terminal(),
            step: 0,
            total,
        }
    }

    fn next(&mut self, what: &str) {
        self.step += 1;
        if !self.enabled {
            return;
        }
        let line = format!("check: [{}/{}] {what} ...", self.step, self.total);
        let mut err = std::io::stderr().lock();
        // A progress line that cannot be written is not worth failing the check for.
        let _ = if self.tty {
            write!(err, "\r\x1b[2K{line}")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
    }

    fn done(&self) {
        if self.enabled && self.tty {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done();
    }
}

fn finding(id: &str, title: &str, unit: &str, healthy: &str, method: String) -> Finding {
    Finding {
        id: id.to_string(),
        title: title.to_string(),
        value: 0.0,
        unit: unit.to_string(),
        healthy: healthy.to_string(),
        verdict: Verdict::Notable,
        explanation: String::new(),
        method,
        details: json!({}),
        shown: "-".to_string(),
    }
}

impl Finding {
    fn judged(mut self, (verdict, explanation): (Verdict, String)) -> Finding {
        self.verdict = verdict;
        self.explanation = explanation;
        self
    }

    /// Not measured: why, and how bad that is.
    fn skipped(mut self, verdict: Verdict, why: String) -> Finding {
        self.verdict = verdict;
        self.shown = "not measured".to_string();
        self.details = json!({ "skipped": true, "reason": why });
        self.explanation = why;
        self
    }
}

fn us(v: u64) -> f64 {
    v as f64 / 1e3
}

fn pct(v: f64) -> String {
    format!("{:.1} %", v * 100.0)
}

/// Run the whole check. `exe` is the schedlab binary (its hidden subcommands are the
/// preset workers); `sys` journals system knobs, though the check itself writes none.
pub fn check(exe: &Path, opts: &CheckOptions, sys: &mut SystemKnobs) -> Result<CheckReport> {
    let started = Instant::now();
    let whole = LoadWindow::start();
    let budget = Budget::new(opts.quick);
    let online: Vec<usize> = crate::system::online_cpus().iter().collect();
    let vm = measure::is_vm();
    let mut progress = Progress::new(opts.progress, 9);
    let mut data = CheckData::default();
    let mut findings = Vec::new();
    let stopped = || opts.stop.load(Ordering::Relaxed);

    // 1-2: timer wakeup latency, OTHER then FIFO.
    for (id, fifo) in [
        ("wakeup_latency_other", None),
        ("wakeup_latency_fifo", Some(FIFO_PRIORITY)),
    ] {
        let label = match fifo {
            None => "SCHED_OTHER".to_string(),
            Some(p) => format!("SCHED_FIFO {p}"),
        };
        progress.next(&format!("timer wakeup latency, {label}"));
        let f = finding(
            id,
            &format!("timer wakeup latency, {}", if fifo.is_some() { "FIFO 80" } else { "OTHER" }),
            "us (p99)",
            verdict::WAKEUP_HEALTHY,
            format!(
                "measured as cyclictest -i 1000 -t1{}: clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) to the next 1 ms deadline for {:.1} s, latency = wakeup - deadline{}",
                if fifo.is_some() { " -p80" } else { "" },
                budget.wakeup.as_secs_f64(),
                if fifo.is_some() {
                    "; the thread runs SCHED_FIFO 80 (RT threads get no timer slack) and is back to SCHED_OTHER before it ends"
                } else {
                    "; SCHED_OTHER includes the thread's timer slack (50 us by default)"
                }
            ),
        );
        let w = LoadWindow::start();
        findings.push(if stopped() {
            f.skipped(Verdict::Notable, interrupted_reason())
        } else {
            with_load(
                match measure::timer_latency(fifo, budget.wakeup, &opts.stop) {
                    Ok(l) => latency_finding(f, &l, vm, fifo, &mut data, &label),
                    // Not being allowed FIFO is the knobs finding's problem, not this one's.
                    Err(e) if fifo.is_some() => {
                        f.skipped(Verdict::Notable, format!("not measured: {e:#}"))
                    }
                    Err(e) => f.skipped(Verdict::Problem, format!("could not measure: {e:#}")),
                },
                &w,
            )
        });
    }

    // 3-4: pipe ping-pong on one CPU, then across two.
    let cpu_a = online.first().copied().unwrap_or(0);
    progress.next(&format!("switch cost on one CPU (cpu{cpu_a})"));
    let f = finding(
        "switch_cost_same_cpu",
        "pipe switch cost, one CPU",
        "us/op",
        verdict::SWITCH_SAME_HEALTHY,
        format!(
            "same definition as perf bench sched pipe: usecs/op per round trip (one 4-byte write+read through each of two pipes) = elapsed / loops, two threads both pinned to CPU {cpu_a}, {:.1} s",
            budget.switch.as_secs_f64()
        ),
    );
    let mut same_us = 0.0;
    let w = LoadWindow::start();
    findings.push(if stopped() {
        f.skipped(Verdict::Notable, interrupted_reason())
    } else {
        with_load(
            match measure::pipe_pingpong(cpu_a, cpu_a, budget.switch, &opts.stop) {
                Ok(p) => {
                    same_us = p.us_per_op();
                    data.switch_cost.push((
                        format!("cpu{cpu_a} <-> cpu{cpu_a}"),
                        same_us,
                        p.chunk_range(),
                    ));
                    switch_finding(f, &p, verdict::verdict_switch_same(same_us, vm), None)
                }
                Err(e) => f.skipped(Verdict::Problem, format!("could not measure: {e:#}")),
            },
            &w,
        )
    });
    let cpu_b = online.get(1).copied();
    progress.next(&match cpu_b {
        Some(b) => format!("switch cost across CPUs (cpu{cpu_a} <-> cpu{b})"),
        None => "switch cost across CPUs (one CPU: skipped)".to_string(),
    });
    let f = finding(
        "switch_cost_cross_cpu",
        "pipe switch cost, across CPUs",
        "us/op",
        verdict::SWITCH_CROSS_HEALTHY,
        format!(
            "same definition as perf bench sched pipe: usecs/op per round trip = elapsed / loops, one thread pinned to CPU {cpu_a}, the other to CPU {}, {:.1} s",
            cpu_b.map_or("-".to_string(), |b| b.to_string()),
            budget.switch.as_secs_f64()
        ),
    );
    let w = LoadWindow::start();
    findings.push(match cpu_b {
        None => f.skipped(
            Verdict::Notable,
            "only one CPU is online: there is no other CPU to wake".to_string(),
        ),
        Some(_) if stopped() => f.skipped(Verdict::Notable, interrupted_reason()),
        Some(b) => with_load(
            match measure::pipe_pingpong(cpu_a, b, budget.switch, &opts.stop) {
                Ok(p) => {
                    let cross = p.us_per_op();
                    data.switch_cost.push((
                        format!("cpu{cpu_a} <-> cpu{b}"),
                        cross,
                        p.chunk_range(),
                    ));
                    switch_finding(
                        f,
                        &p,
                        verdict::verdict_switch_cross(cross, same_us, vm),
                        (same_us > 0.0).then(|| cross / same_us),
                    )
                }
                Err(e) => f.skipped(Verdict::Problem, format!("could not measure: {e:#}")),
            },
            &w,
        ),
    });

    // 5: pipe-wakeup OTHER vs BATCH through the real preset.
    progress.next("pipe-wakeup, OTHER vs BATCH");
    let f = finding(
        "pipe_wakeup_batch_ratio",
        "pipe-wakeup BATCH/OTHER speedup",
        "x",
        verdict::BATCH_HEALTHY,
        format!(
            "schedlab run pipe-wakeup for {:.1} s as is, then with --variant batch (writer and reader SCHED_BATCH, both pinned to CPU 0): writer bytes/s BATCH / OTHER; a BATCH writer with more than {SLOW_REGIME_INVOLUNTARY_PER_S:.0} involuntary switches/s is in the slow regime of a pipe that was polled",
            budget.preset_run.as_secs_f64(),
        ),
    );
    let w = LoadWindow::start();
    findings.push(if stopped() {
        f.skipped(Verdict::Notable, interrupted_reason())
    } else {
        with_load(
            match pipe_wakeup(exe, &budget, opts, sys) {
                Ok(runs) => runs.fill(f),
                Err(e) => f.skipped(
                    Verdict::Problem,
                    format!("could not run pipe-wakeup: {e:#}"),
                ),
            },
            &w,
        )
    });

    // 6: nice-ladder fairness.
    progress.next("nice-ladder fairness");
    let f = finding(
        "nice_fairness_error",
        "nice-ladder fairness error",
        "%",
        verdict::FAIRNESS_HEALTHY,
        format!(
            "schedlab run nice-ladder for {:.1} s (21 busy loops at nice 0..20 on every CPU): metrics.fairness_error = half the summed |CPU share - ideal share| over the ideal total, ideal from the kernel's nice weights water-filled over the CPUs; the split error rescales the shares to the CPU time the ladder got",
            budget.ladder.as_secs_f64()
        ),
    );
    let w = LoadWindow::start();
    findings.push(if stopped() {
        f.skipped(Verdict::Notable, interrupted_reason())
    } else {
        with_load(
            match preset_run("nice-ladder", &[], budget.ladder, exe, opts, sys) {
                Ok(r) => fairness_finding(f, &r),
                Err(e) => f.skipped(
                    Verdict::Problem,
                    format!("could not run nice-ladder: {e:#}"),
                ),
            },
            &w,
        )
    });

    // 7: what a FIFO spinner leaves a fair thread.
    progress.next("rt-throttle fair share");
    let f = finding(
        "fifo_fair_share",
        "fair share under a FIFO spinner",
        "% of a CPU",
        "1 - rt_runtime/rt_period (5 %), >= 5 % on 6.12+",
        format!(
            "schedlab run rt-throttle for {:.1} s (a SCHED_FIFO 1 spinner and a nice -20 thread, both on CPU 0; the share is taken after the preset's {:.1} s warm-up, whole RT periods): the fair thread's CPU share against max(1 - sched_rt_runtime_us/sched_rt_period_us read now, fair server runtime/period on 6.12+)",
            budget.rt.as_secs_f64(),
            preset::load("rt-throttle").map_or(0.0, |p| p.warmup.as_secs_f64())
        ),
    );
    let w = LoadWindow::start();
    findings.push(if stopped() {
        f.skipped(Verdict::Notable, interrupted_reason())
    } else {
        with_load(rt_finding(f, &budget, exe, opts, sys), &w)
    });

    // 8: spin rate per CPU.
    progress.next("spin rate on each CPU");
    let slice = (budget.spin_total / (online.len().max(1) * budget.spin_rounds) as u32)
        .max(Duration::from_millis(10));
    let f = finding(
        "cpu_speed",
        "spin rate spread across CPUs",
        "% spread",
        verdict::SPEED_HEALTHY,
        format!(
            "a thread pinned to each CPU in turn runs a multiply-add loop for {:.0} ms, {} rounds over the CPUs; the best iterations per second of the thread's own CPU time (other load sharing the CPU does not count; per wall second in details); spread = 1 - slowest / fastest",
            slice.as_secs_f64() * 1e3,
            budget.spin_rounds
        ),
    );
    let w = LoadWindow::start();
    findings.push(if stopped() {
        f.skipped(Verdict::Notable, interrupted_reason())
    } else {
        with_load(
            match measure::spin_rates(&online, slice, budget.spin_rounds, &opts.stop) {
                Ok(spin) => speed_finding(f, &online, &spin, &mut data),
                Err(e) => f.skipped(Verdict::Problem, format!("could not measure: {e:#}")),
            },
            &w,
        )
    });

    // 9: knobs. Steal last, over everything the check did.
    progress.next("which knobs can change");
    findings.push(knobs_finding(sys));
    let steal = finding(
        "steal_time",
        "steal time during the check",
        "%",
        verdict::STEAL_HEALTHY,
        "/proc/stat steal ticks over all ticks between the start and the end of the check, per CPU and total".to_string(),
    );
    let steal = match (whole.stat(), measure::read_proc_stat()) {
        (Some(a), Some(b)) => steal_finding(steal, a, &b),
        _ => steal.skipped(
            Verdict::Notable,
            "not measured: /proc/stat is unreadable".to_string(),
        ),
    };
    findings.push(steal);
    findings.sort_by_key(|f| IDS.iter().position(|id| *id == f.id));
    progress.done();

    Ok(CheckReport {
        kernel: crate::system::kernel_release(),
        cpus: online.len(),
        quick: opts.quick,
        duration_s: started.elapsed().as_secs_f64(),
        budget_s: if opts.quick { QUICK_BUDGET_S } else { BUDGET_S },
        vm,
        other_load_cpus: whole.other_load().unwrap_or(0.0),
        interrupted: stopped(),
        findings,
        data,
    })
}

/// Record how busy other processes kept the CPUs while `f` was measured.
fn with_load(f: Finding, w: &LoadWindow) -> Finding {
    match w.other_load() {
        Some(load) => adjust_for_load(f, load, w.elapsed_s()),
        None => f,
    }
}

/// Note other load (CPUs) in the details, say so when it was enough to disturb the
/// number, and report a problem seen under heavy other load as notable: the load, not
/// the machine, may be its cause.
fn adjust_for_load(mut f: Finding, load: f64, elapsed_s: f64) -> Finding {
    if let Some(d) = f.details.as_object_mut() {
        d.insert("other_load_cpus".into(), json!(load));
        d.insert("elapsed_s".into(), json!(elapsed_s));
    }
    if f.details.get("skipped").is_some() || load < OTHER_LOAD_NOTE {
        return f;
    }
    if load >= OTHER_LOAD_DISTURBS && f.verdict == Verdict::Problem {
        f.verdict = Verdict::Notable;
        f.explanation.push_str(&format!(
            " (measured while other processes kept {load:.1} CPUs busy: they, not the machine, may be the cause; run the check on an idle machine)"
        ));
    } else {
        f.explanation.push_str(&format!(
            " (other processes kept {load:.1} CPUs busy meanwhile)"
        ));
    }
    f
}

fn latency_finding(
    mut f: Finding,
    l: &measure::Latency,
    vm: bool,
    fifo: Option<u32>,
    data: &mut CheckData,
    label: &str,
) -> Finding {
    let Some(p) = l.hist.percentiles() else {
        return f.skipped(Verdict::Problem, "no wakeup was recorded".to_string());
    };
    f.value = us(p.p99);
    f.shown = format!("p99 {}, avg {}, max {}", ns(p.p99), ns(p.mean), ns(p.max));
    f.details = json!({
        "min_us": us(p.min), "avg_us": us(p.mean), "p50_us": us(p.p50), "p90_us": us(p.p90),
        "p99_us": us(p.p99), "p999_us": us(p.p999), "max_us": us(p.max),
        "samples": p.count, "overruns": l.overruns, "interval_us": us(measure::INTERVAL.as_nanos() as u64),
        "policy": if fifo.is_some() { "fifo" } else { "other" },
        "priority": fifo.unwrap_or(0),
        "timer_slack_ns": if fifo.is_some() { Some(0) } else { l.timer_slack_ns },
        "policy_at_end": l.ended_as.map(|p| p.name()),
    });
    data.latency.push((label.to_string(), l.hist.clone()));
    f.judged(verdict::verdict_wakeup(p.p99, p.max, vm))
}

fn switch_finding(
    mut f: Finding,
    p: &measure::PingPong,
    judged: (Verdict, String),
    ratio: Option<f64>,
) -> Finding {
    f.value = p.us_per_op();
    f.shown = match ratio {
        Some(r) => format!("{:.1} us/op ({r:.1}x one CPU)", f.value),
        None => format!("{:.1} us/op", f.value),
    };
    let range = p.chunk_range();
    f.details = json!({
        "loops": p.loops,
        "elapsed_s": p.elapsed.as_secs_f64(),
        "usecs_per_op": f.value,
        "ops_per_s": if f.value > 0.0 { 1e6 / f.value } else { 0.0 },
        "chunk_min_us": range.map(|r| r.0),
        "chunk_max_us": range.map(|r| r.1),
        "ratio_to_same_cpu": ratio,
    });
    f.judged(judged)
}

/// pipe-wakeup's runs.
struct PipeWakeup {
    other: RunReport,
    batch: Vec<RunReport>,
}

fn writer_involuntary(r: &RunReport) -> f64 {
    r.tasks
        .iter()
        .filter(|t| t.group == "writer")
        .map(|t| t.involuntary_per_s)
        .sum()
}

fn slow_regime(r: &RunReport) -> bool {
    writer_involuntary(r) > SLOW_REGIME_INVOLUNTARY_PER_S
}

impl PipeWakeup {
    fn fill(self, mut f: Finding) -> Finding {
        let other = self.other.metrics.throughput_per_s;
        let best = self
            .batch
            .iter()
            .map(|r| r.metrics.throughput_per_s)
            .fold(0.0, f64::max);
        let ratio = if other > 0.0 { best / other } else { 0.0 };
        f.value = ratio;
        f.shown = format!("{ratio:.2}x ({:.1} vs {:.1} MB/s)", best / 1e6, other / 1e6);
        let runs: Vec<Value> = self
            .batch
            .iter()
            .map(|r| {
                json!({
                    "bytes_per_s": r.metrics.throughput_per_s,
                    "writer_involuntary_per_s": writer_involuntary(r),
                    "regime": if slow_regime(r) { "slow" } else { "fast" },
                    "duration_s": r.duration_s,
                })
            })
            .collect();
        let mut warnings: Vec<String> = self.other.warnings.clone();
        for r in &self.batch {
            warnings.extend(r.warnings.iter().cloned());
        }
        f.details = json!({
            "other_bytes_per_s": other,
            "other_writer_involuntary_per_s": writer_involuntary(&self.other),
            "batch_best_bytes_per_s": best,
            "batch_runs": runs,
            "warnings": warnings,
        });
        if other <= 0.0 {
            return f.skipped(
                Verdict::Problem,
                "the OTHER run moved no bytes: pipe-wakeup did not run (is `wc` installed?)"
                    .to_string(),
            );
        }
        let mut judged = verdict::verdict_batch_ratio(ratio);
        if self.batch.iter().any(slow_regime) {
            judged = (
                Verdict::Notable,
                format!(
                    "under BATCH the writer was still preempted {:.0} times a second: the pipe behaved as one that was polled (every write wakes the reader), which schedlab's workers never do - another process touching it, or a kernel that wakes on every write",
                    self.batch.iter().map(writer_involuntary).fold(0.0, f64::max)
                ),
            );
        }
        f.judged(judged)
    }
}

fn preset_run(
    name: &str,
    variant: &[&str],
    duration: Duration,
    exe: &Path,
    opts: &CheckOptions,
    sys: &mut SystemKnobs,
) -> Result<RunReport> {
    let mut p: Preset = preset::load(name)?;
    for v in variant {
        let settings = p.variant(v).map_err(anyhow::Error::msg)?.set.clone();
        p.apply_all(&settings).map_err(anyhow::Error::msg)?;
    }
    let mut ro = RunOptions::new(exe.to_path_buf());
    ro.duration = duration;
    // Fewer samples than the default 100 ms: the check needs whole-run summaries only.
    ro.interval = Duration::from_millis(200);
    ro.stop = Arc::clone(&opts.stop);
    ro.overrides = variant.iter().map(|v| format!("--variant {v}")).collect();
    run(&p, &ro, sys)
}

fn pipe_wakeup(
    exe: &Path,
    budget: &Budget,
    opts: &CheckOptions,
    sys: &mut SystemKnobs,
) -> Result<PipeWakeup> {
    let other = preset_run("pipe-wakeup", &[], budget.preset_run, exe, opts, sys)?;
    if opts.stop.load(Ordering::Relaxed) {
        return Err(anyhow!("interrupted before the BATCH run"));
    }
    let batch = vec![preset_run(
        "pipe-wakeup",
        &["batch"],
        budget.preset_run,
        exe,
        opts,
        sys,
    )?];
    Ok(PipeWakeup { other, batch })
}

fn fairness_finding(mut f: Finding, r: &RunReport) -> Finding {
    let Some(error) = r.metrics.fairness_error else {
        return f.skipped(
            Verdict::Problem,
            "nice-ladder reported no fairness error".to_string(),
        );
    };
    let ladder: Vec<(f64, f64)> = r
        .tasks
        .iter()
        .filter_map(|t| t.ideal_share.map(|i| (t.cpu_share, i)))
        .collect();
    let got: f64 = ladder.iter().map(|(m, _)| m).sum();
    let ideal_total: f64 = ladder.iter().map(|(_, i)| i).sum();
    // The same error once the CPU time the ladder never got is taken out: a wrong split
    // among the tasks, not capacity lost to steal, the sampler or other tasks.
    let split_error = if got > 0.0 {
        let scaled: Vec<f64> = ladder.iter().map(|(m, _)| m * ideal_total / got).collect();
        let ideal: Vec<f64> = ladder.iter().map(|(_, i)| *i).collect();
        fairness_error(&scaled, &ideal)
    } else {
        error
    };
    f.value = error * 100.0;
    f.shown = format!("{} (split {})", pct(error), pct(split_error));
    let worst = r
        .tasks
        .iter()
        .filter_map(|t| t.ideal_share.map(|i| (t, t.cpu_share - i)))
        .max_by(|a, b| a.1.abs().total_cmp(&b.1.abs()))
        .map(|(t, d)| json!({ "task": t.name, "nice": t.nice, "share": t.cpu_share, "off_by": d }));
    f.details = json!({
        "fairness_error": error,
        "split_error": split_error,
        "ladder_cpus": got,
        "ideal_cpus": ideal_total,
        "tasks": ladder.len(),
        "worst_task": worst,
        "duration_s": r.duration_s,
        "warnings": r.warnings,
    });
    f.judged(verdict::verdict_fairness(error, split_error))
}

/// The fair share RT throttling and the fair server promise, with how it was found.
fn promised_fair_share(sys: &SystemKnobs) -> Result<(f64, Value), String> {
    let read = |k: SysKnob| -> Result<i64, String> {
        let text = sys::get(&k, &sys.probe).map_err(|e| e.to_string())?;
        text.trim()
            .parse()
            .map_err(|_| format!("{}: \"{text}\" is not a number", k.name()))
    };
    let runtime = read(SysKnob::RtRuntime)?;
    let period = read(SysKnob::RtPeriod)?;
    let throttle = if runtime < 0 || period <= 0 {
        0.0
    } else {
        (1.0 - runtime as f64 / period as f64).clamp(0.0, 1.0)
    };
    // The fair server (6.12+) reserves runtime/period of each CPU for fair tasks; its
    // debugfs files are unreadable without debugfs (or under lockdown): assume its
    // default of 50 ms per 1 s then, and say so.
    let (server, source) = if sys.probe.kernel >= (6, 12) {
        let fs = |field| {
            read(SysKnob::FairServer { cpu: 0, field })
                .ok()
                .filter(|v| *v > 0)
        };
        match (fs("runtime"), fs("period")) {
            (Some(r), Some(p)) => (r as f64 / p as f64, "debugfs fair_server/cpu0"),
            _ => (0.05, "assumed default 50 ms / 1 s (debugfs unreadable)"),
        }
    } else {
        (0.0, "none before 6.12")
    };
    Ok((
        throttle.max(server),
        json!({
            "sched_rt_runtime_us": runtime,
            "sched_rt_period_us": period,
            "throttle_share": throttle,
            "fair_server_share": server,
            "fair_server_source": source,
        }),
    ))
}

fn rt_finding(
    mut f: Finding,
    budget: &Budget,
    exe: &Path,
    opts: &CheckOptions,
    sys: &mut SystemKnobs,
) -> Finding {
    let (expected, mut details) = match promised_fair_share(sys) {
        Ok(v) => v,
        Err(e) => {
            return f.skipped(
                Verdict::Problem,
                format!("cannot read the RT settings: {e}"),
            )
        }
    };
    if details["sched_rt_runtime_us"]
        .as_i64()
        .is_some_and(|r| r < 0)
    {
        // Safety first: without throttling a FIFO spinner can take its CPU for good.
        return f.skipped(
            Verdict::Notable,
            "RT throttling is off (sched_rt_runtime_us = -1): the check starts no FIFO spinner without it; one would starve fair tasks on its CPU".to_string(),
        );
    }
    let watch = measure::Watch::start(budget.rt + Duration::from_secs(30));
    let result = preset_run("rt-throttle", &[], budget.rt, exe, opts, sys);
    let seen = watch.finish();
    let r = match result {
        Ok(r) => r,
        Err(e) => {
            return f.skipped(
                Verdict::Problem,
                format!("could not run rt-throttle: {e:#}"),
            )
        }
    };
    let task = |group: &str| r.tasks.iter().find(|t| t.group == group);
    let (Some(fair), Some(fifo)) = (task("fair"), task("fifo")) else {
        return f.skipped(
            Verdict::Problem,
            "rt-throttle reported no fair or fifo task".to_string(),
        );
    };
    let measured = fair.cpu_share;
    f.value = measured * 100.0;
    f.shown = format!("{} (promised {})", pct(measured), pct(expected));
    details["measured_share"] = json!(measured);
    details["expected_share"] = json!(expected);
    details["fifo_share"] = json!(fifo.cpu_share);
    details["fifo_policy"] = json!(fifo.policy);
    details["duration_s"] = json!(r.duration_s);
    details["warnings"] = json!(r.warnings);
    details["rt_runtime_period_seen"] = json!(seen.rt_sysctls);
    details["foreign_rt_tasks"] = json!(seen.foreign_rt);
    f.details = details;
    // Judging the share needs the promise to hold still and the RT bandwidth to be ours.
    if seen.rt_sysctls.len() > 1 {
        f.verdict = Verdict::Notable;
        f.explanation = format!(
            "sched_rt_runtime_us/sched_rt_period_us changed during the run ({}): another program is changing RT throttling, so the share cannot be judged",
            seen.rt_sysctls.join(" -> ")
        );
        return f;
    }
    if !seen.foreign_rt.is_empty() {
        f.verdict = Verdict::Notable;
        f.explanation = format!(
            "other programs' real-time tasks ran meanwhile ({}): they share the RT bandwidth and the CPU, so the share cannot be judged",
            seen.foreign_rt.join(", ")
        );
        return f;
    }
    if fifo.policy != "fifo" {
        let why = r
            .warnings
            .first()
            .cloned()
            .unwrap_or_else(|| format!("it ran {}", fifo.policy));
        f.verdict = Verdict::Notable;
        f.explanation =
            format!("the spinner could not be made SCHED_FIFO ({why}), so nothing was throttled");
        return f;
    }
    f.judged(verdict::verdict_fifo_share(measured, expected))
}

fn speed_finding(
    mut f: Finding,
    cpus: &[usize],
    spin: &measure::SpinRates,
    data: &mut CheckData,
) -> Finding {
    let best_of = |r: &Vec<f64>| r.iter().copied().reduce(f64::max);
    let best: Vec<(usize, f64)> = cpus
        .iter()
        .zip(&spin.per_cpu_s)
        .filter_map(|(&c, r)| best_of(r).map(|b| (c, b)))
        .collect();
    if best.is_empty() {
        return f.skipped(Verdict::Notable, interrupted_reason());
    }
    let values: Vec<f64> = best.iter().map(|(_, b)| *b).collect();
    let spread = verdict::spread(&values);
    f.value = spread * 100.0;
    let fastest = best.iter().max_by(|a, b| a.1.total_cmp(&b.1));
    let slowest = best.iter().min_by(|a, b| a.1.total_cmp(&b.1));
    f.shown = match (fastest, slowest) {
        (Some(hi), Some(lo)) if best.len() > 1 => format!(
            "{} (cpu{} {}/s, cpu{} {}/s)",
            pct(spread),
            hi.0,
            si(hi.1),
            lo.0,
            si(lo.1)
        ),
        _ => format!("{} (cpu{} {}/s)", pct(spread), best[0].0, si(best[0].1)),
    };
    for ((c, b), r) in best.iter().zip(&spin.per_cpu_s) {
        let lo = r.iter().copied().fold(f64::INFINITY, f64::min);
        data.cpu_speed
            .push((format!("cpu{c}"), b / 1e6, Some((lo / 1e6, b / 1e6))));
    }
    let per_cpu: Vec<Value> = best
        .iter()
        .zip(spin.per_cpu_s.iter().zip(&spin.per_wall_s))
        .map(|((c, b), (r, w))| {
            json!({
                "cpu": c,
                "iterations_per_cpu_s": b,
                "iterations_per_wall_s": best_of(w).unwrap_or(0.0),
                "slices": r.len(),
            })
        })
        .collect();
    f.details = json!({ "per_cpu": per_cpu, "spread": spread });
    f.judged(verdict::verdict_cpu_speed(&values))
}

fn interrupted_reason() -> String {
    "not measured: the check was interrupted".to_string()
}

fn steal_finding(mut f: Finding, a: &StatSnapshot, b: &StatSnapshot) -> Finding {
    let (total, per_cpu) = steal_shares(a, b);
    let worst = per_cpu
        .iter()
        .copied()
        .max_by(|x, y| x.1.total_cmp(&y.1))
        .unwrap_or((0, 0.0));
    f.value = total * 100.0;
    f.shown = if per_cpu.len() <= 4 {
        let cpus: Vec<String> = per_cpu
            .iter()
            .map(|(c, s)| format!("cpu{c} {}", pct(*s)))
            .collect();
        format!("{} ({})", pct(total), cpus.join(", "))
    } else {
        format!("{} (worst cpu{} {})", pct(total), worst.0, pct(worst.1))
    };
    f.details = json!({
        "total": total,
        "per_cpu": per_cpu.iter().map(|(c, s)| json!({ "cpu": c, "steal": s })).collect::<Vec<_>>(),
        "worst_cpu": worst.0,
    });
    f.judged(verdict::verdict_steal(total, worst.1))
}

fn knobs_finding(sys: &SystemKnobs) -> Finding {
    let mut f = finding(
        "knobs",
        "changeable system knobs",
        "writable",
        verdict::KNOBS_HEALTHY,
        "schedlab knobs: every system knob (RT sysctls, autogroup, debugfs tunables, fair server, features) with whether it can be written here and why not".to_string(),
    );
    let knobs = sys::list(&sys.probe);
    let writable = knobs.iter().filter(|k| k.writable).count();
    let mut reasons: Vec<String> = Vec::new();
    for k in knobs.iter().filter(|k| !k.writable) {
        let why = k.why_not.clone().unwrap_or_else(|| "read-only".to_string());
        if !reasons.contains(&why) {
            reasons.push(why);
        }
    }
    let why_of = |name: &str| {
        knobs
            .iter()
            .find(|k| k.name == name)
            .and_then(|k| (!k.writable).then(|| k.why_not.clone().unwrap_or_default()))
    };
    let rt_why = why_of("sys.rt_runtime_us").or_else(|| why_of("sys.rt_period_us"));
    // Any debugfs knob (everything past the sysctls) read-only, with the first reason.
    let debugfs_why = knobs
        .iter()
        .filter(|k| {
            !matches!(
                k.name.as_str(),
                "sys.rt_runtime_us" | "sys.rt_period_us" | "sys.rr_timeslice_ms" | "sys.autogroup"
            )
        })
        .find(|k| !k.writable)
        .map(|k| k.why_not.clone().unwrap_or_else(|| "read-only".to_string()));
    f.value = writable as f64;
    f.shown = format!("{writable} of {} writable", knobs.len());
    f.details = json!({
        "root": sys.probe.root,
        "writable": writable,
        "read_only": knobs.len() - writable,
        "reasons": reasons,
        "writable_knobs": knobs.iter().filter(|k| k.writable).map(|k| k.name.clone()).collect::<Vec<_>>(),
        "debugfs_mounted": sys.probe.debugfs_mounted,
    });
    f.judged(verdict::verdict_knobs(
        sys.probe.root,
        rt_why.as_deref(),
        debugfs_why.as_deref(),
    ))
}

/// The readable report: a header, one aligned line per finding (verdict first), how
/// each was measured, and the time it all took.
pub fn render_text(r: &CheckReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "schedlab check on Linux {} ({} CPUs{}){}",
        r.kernel,
        r.cpus,
        if r.vm { ", virtual machine" } else { "" },
        if r.quick { ", quick" } else { "" }
    );
    if r.other_load_cpus >= OTHER_LOAD_NOTE {
        let _ = writeln!(
            out,
            "note: other processes kept {:.1} CPUs busy during the check; speed, fairness and latency numbers are disturbed by them",
            r.other_load_cpus
        );
    }
    let header = ["VERDICT", "FINDING", "VALUE", "HEALTHY", "WHY"];
    let rows: Vec<[String; 5]> = r
        .findings
        .iter()
        .map(|f| {
            [
                f.verdict.to_string(),
                f.title.clone(),
                f.shown.clone(),
                f.healthy.clone(),
                f.explanation.clone(),
            ]
        })
        .collect();
    // The healthy column gets no more than 40 characters of alignment: a long one (the
    // RT promise) would push every explanation far right.
    let width = |c: usize, cap: usize| {
        rows.iter()
            .map(|row| row[c].chars().count())
            .chain([header[c].len()])
            .max()
            .unwrap_or(0)
            .min(cap)
    };
    let w = [7, width(1, 40), width(2, 48), width(3, 40)];
    let line = |cells: [&str; 5]| {
        format!(
            "{:<w0$}  {:<w1$}  {:<w2$}  {:<w3$}  {}",
            cells[0],
            cells[1],
            cells[2],
            cells[3],
            cells[4],
            w0 = w[0],
            w1 = w[1],
            w2 = w[2],
            w3 = w[3]
        )
    };
    let _ = writeln!(out, "{}", line(header));
    for row in &rows {
        let _ = writeln!(
            out,
            "{}",
            line([&row[0], &row[1], &row[2], &row[3], &row[4]])
        );
    }
    let _ = writeln!(out, "\nHow each was measured:");
    for f in &r.findings {
        let _ = writeln!(out, "  {:<24} {}", f.id, f.method);
    }
    let counts: Vec<String> = [Verdict::Ok, Verdict::Notable, Verdict::Problem]
        .iter()
        .map(|v| {
            format!(
                "{} {v}",
                r.findings.iter().filter(|f| f.verdict == *v).count()
            )
        })
        .collect();
    let _ = writeln!(
        out,
        "\n{}; the check took {:.1} s (budget {:.0} s){}",
        counts.join(", "),
        r.duration_s,
        r.budget_s,
        if r.interrupted { ", interrupted" } else { "" }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> CheckReport {
        let findings = IDS
            .iter()
            .map(|id| {
                let mut f = finding(id, id, "us", "healthy", format!("method of {id}"));
                f.value = 1.0;
                f.shown = "1.0 us".into();
                f.judged((Verdict::Ok, "fine".into()))
            })
            .collect();
        CheckReport {
            kernel: "6.18.0".into(),
            cpus: 2,
            quick: true,
            duration_s: 11.2,
            budget_s: QUICK_BUDGET_S,
            vm: true,
            other_load_cpus: 0.0,
            interrupted: false,
            findings,
            data: CheckData::default(),
        }
    }

    #[test]
    fn text_has_one_aligned_line_per_finding_verdict_first() {
        let text = render_text(&sample());
        let lines: Vec<&str> = text.lines().collect();
        for id in IDS {
            let line = lines
                .iter()
                .find(|l| l.starts_with("ok ") && l.contains(id))
                .unwrap_or_else(|| panic!("no line for {id} in\n{text}"));
            assert_eq!(line.find(id), lines[1].find("FINDING"), "{line}");
        }
        assert!(text.contains("took 11.2 s (budget 15 s)"), "{text}");
        assert!(text.contains("10 ok, 0 notable, 0 problem"), "{text}");
    }

    #[test]
    fn json_has_the_documented_shape() {
        let v = serde_json::to_value(sample()).expect("json");
        for key in ["kernel", "cpus", "quick", "duration_s", "findings"] {
            assert!(!v[key].is_null(), "{key}");
        }
        let f = &v["findings"][0];
        for key in [
            "id",
            "title",
            "value",
            "unit",
            "healthy",
            "verdict",
            "explanation",
            "method",
            "details",
        ] {
            assert!(!f[key].is_null(), "{key}");
        }
        assert_eq!(f["verdict"], "ok");
        assert!(f.get("shown").is_none());
    }

    #[test]
    fn other_load_is_noted_and_turns_a_problem_into_notable() {
        let judged =
            |v: Verdict| finding("x", "x", "us", "h", String::new()).judged((v, "why".into()));
        let f = adjust_for_load(judged(Verdict::Problem), 0.19, 1.0);
        assert_eq!(
            (f.verdict, f.explanation.as_str()),
            (Verdict::Problem, "why")
        );
        assert_eq!(f.details["other_load_cpus"], 0.19);
        let f = adjust_for_load(judged(Verdict::Problem), OTHER_LOAD_NOTE, 1.0);
        assert_eq!(f.verdict, Verdict::Problem);
        assert!(
            f.explanation.contains("0.2 CPUs busy meanwhile"),
            "{}",
            f.explanation
        );
        let f = adjust_for_load(judged(Verdict::Problem), OTHER_LOAD_DISTURBS, 1.0);
        assert_eq!(f.verdict, Verdict::Notable);
        assert!(
            f.explanation.contains("not the machine"),
            "{}",
            f.explanation
        );
        let f = adjust_for_load(judged(Verdict::Ok), 1.5, 1.0);
        assert_eq!(f.verdict, Verdict::Ok);
        let f = adjust_for_load(
            finding("x", "x", "us", "h", String::new()).skipped(Verdict::Problem, "gone".into()),
            1.5,
            1.0,
        );
        assert_eq!(
            (f.verdict, f.explanation.as_str()),
            (Verdict::Problem, "gone")
        );
    }

    #[test]
    fn skipped_findings_keep_a_finite_value_and_say_why() {
        let f = finding("x", "x", "us", "h", String::new())
            .skipped(Verdict::Notable, "only one CPU".into());
        assert_eq!(f.value, 0.0);
        assert_eq!(f.details["skipped"], true);
        assert_eq!(f.explanation, "only one CPU");
    }
}
