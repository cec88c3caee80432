//! `schedlab check`: short experiments that characterize this machine's scheduler, each judged.
//!
//! This file runs the experiments in order; `findings` judges what they measured and
//! `plots` draws it; the report and its text form are in [`crate::report::check`].

mod findings;
mod measure;
mod noise;
mod plots;
pub mod pmqos;
mod progress;
mod throttle;
mod traced;
pub mod verdict;
mod watch;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use crate::facts::RtBandwidth;
use crate::headless::run::{run, RunOptions};
use crate::knob::sys::SystemKnobs;
use crate::lab::pingpong::{self, Pinning, Setup};
use crate::preset::{self, Preset};
use crate::report::check::{
    finding, CheckData, CheckReport, Finding, Verdict, BUDGET_S, IDS, QUICK_BUDGET_S,
};
use crate::report::RunReport;

use findings::{PipeWakeup, SLOW_REGIME_INVOLUNTARY_PER_S};
use measure::LoadWindow;
use progress::Progress;

pub use measure::{steal_shares, StatSnapshot};
pub use plots::{histogram_curve, write_plots};

/// FIFO priority of the latency thread, as cyclictest -p80.
const FIFO_PRIORITY: u32 = 80;

/// How many lines the progress counts to: one per step below.
const STEPS: usize = 11;

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
    /// The PM QoS finding: chunks of `pm_qos` each, A B A B.
    pm_qos: Duration,
    pm_qos_chunks: usize,
}

impl Budget {
    /// Worst case quick: 2 + 1 + 1.5 + 3 x 0.8 + 2.5 + 2 + 0.5 = 11.9 s of experiments plus
    /// ~0.1-0.3 s of start-up per preset run (measured: 10-11 s idle, 11-14 s under other
    /// load, before the PM QoS step's second). Default: 16 + 4 + 6 + 3 x 3 (up to
    /// 4 x 3) + 8 + 5 + 2 = 50-53 s (the switch budget runs three times: one CPU,
    /// traced, across CPUs). The ladder gets the most time a budget allows: its error
    /// shrinks with the run (2.5 s: 2-3.5 %, 6 s: ~2 % on the dev VM).
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
                pm_qos: s(0.25),
                pm_qos_chunks: 4,
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
                pm_qos: s(0.5),
                pm_qos_chunks: 8,
            }
        }
    }
}

/// Run the whole check. `exe` is the schedlab binary (its hidden subcommands are the
/// preset workers); `sys` journals system knobs, though the check itself writes none.
pub fn check(exe: &Path, opts: &CheckOptions, sys: &mut SystemKnobs) -> Result<CheckReport> {
    let started = Instant::now();
    // The check's own instrument threads (the tracer of the traced step, the samplers
    // of its preset runs) run as a headless run's do: at nice 0 beside other load the
    // tracer fell behind its ring and the traced step lost events (see Elevation::Fair).
    crate::knob::task::request_elevation(crate::knob::task::Elevation::Fair);
    let whole = LoadWindow::start();
    let mut c = Checker::new(exe, opts, sys);
    c.wakeup_latency(None);
    c.wakeup_latency(Some(FIFO_PRIORITY));
    c.pm_qos_latency();
    let same_us = c.switch_cost_same_cpu();
    c.traced_wakeup();
    c.switch_cost_cross_cpu(same_us);
    c.pipe_wakeup_batch_ratio();
    c.nice_fairness();
    c.fifo_fair_share();
    c.cpu_speed();
    c.knobs();
    // Steal last: it covers everything the check did.
    c.steal_time(&whole);
    Ok(c.report(started, &whole))
}

/// How long a ping-pong side may take past its run to end.
const PINGPONG_GRACE: Duration = Duration::from_secs(10);

/// `perf bench sched pipe -T`, pinned as `pin`, for `run`.
fn switch_cost(pin: Pinning, run: Duration, stop: &Arc<AtomicBool>) -> Result<pingpong::Measured> {
    pingpong::run(&Setup::sched_pipe(pin, run, stop), PINGPONG_GRACE)
}

/// One check under way: what its steps share and what they have found so far.
struct Checker<'a> {
    exe: &'a Path,
    opts: &'a CheckOptions,
    sys: &'a mut SystemKnobs,
    budget: Budget,
    online: Vec<usize>,
    vm: bool,
    progress: Progress,
    data: CheckData,
    findings: Vec<Finding>,
    /// Steal % during each measured step: the steal finding's repeats.
    step_steal: Vec<f64>,
}

impl<'a> Checker<'a> {
    fn new(exe: &'a Path, opts: &'a CheckOptions, sys: &'a mut SystemKnobs) -> Checker<'a> {
        Checker {
            exe,
            opts,
            sys,
            budget: Budget::new(opts.quick),
            online: crate::system::online_cpus().iter().collect(),
            vm: measure::is_vm(),
            progress: Progress::new(opts.progress, STEPS),
            data: CheckData::default(),
            findings: Vec::new(),
            step_steal: Vec::new(),
        }
    }

    fn stopped(&self) -> bool {
        self.opts.stop.load(Ordering::Relaxed)
    }

    /// Add `f` as `measure` fills it in, with the other load seen meanwhile; once the
    /// check was interrupted, add it as not measured instead.
    fn measured(&mut self, f: Finding, measure: impl FnOnce(&mut Self, Finding) -> Finding) {
        let w = LoadWindow::start();
        let f = if self.stopped() {
            f.interrupted()
        } else {
            findings::with_load(measure(self, f), &w)
        };
        if let (Some(a), Some(b)) = (w.stat(), measure::read_proc_stat()) {
            self.step_steal.push(steal_shares(a, &b).0 * 100.0);
        }
        self.findings.push(f);
    }

    /// Steps 1-2: timer wakeup latency, as SCHED_OTHER (`fifo` None) or SCHED_FIFO.
    fn wakeup_latency(&mut self, fifo: Option<u32>) {
        let (id, label) = match fifo {
            None => ("wakeup_latency_other", "SCHED_OTHER".to_string()),
            Some(p) => ("wakeup_latency_fifo", format!("SCHED_FIFO {p}")),
        };
        self.progress
            .next(&format!("timer wakeup latency, {label}"));
        let f = finding(
            id,
            &format!("timer wakeup latency, {}", if fifo.is_some() { "FIFO 80" } else { "OTHER" }),
            "us (p99)",
            verdict::WAKEUP_HEALTHY,
            format!(
                "measured as cyclictest -i 1000 -t1{}: clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME) to the next 1 ms deadline for {:.1} s, latency = wakeup - deadline{}",
                if fifo.is_some() { " -p80" } else { "" },
                self.budget.wakeup.as_secs_f64(),
                if fifo.is_some() {
                    "; the thread runs SCHED_FIFO 80 (RT threads get no timer slack) and is back to SCHED_OTHER before it ends"
                } else {
                    "; SCHED_OTHER includes the thread's timer slack (50 us by default)"
                }
            ),
        );
        self.measured(f, |c, f| {
            match measure::timer_latency(fifo, c.budget.wakeup, &c.opts.stop) {
                Ok(l) => findings::latency_finding(f, &l, c.vm, fifo, &mut c.data, &label),
                // Not being allowed FIFO is the knobs finding's problem, not this one's.
                Err(e) if fifo.is_some() => {
                    f.skipped(Verdict::Notable, format!("not measured: {e:#}"))
                }
                Err(e) => f.skipped(Verdict::Problem, format!("could not measure: {e:#}")),
            }
        });
    }

    /// Step 2b: FIFO timer wake-ups with and without /dev/cpu_dma_latency held at 0.
    fn pm_qos_latency(&mut self) {
        self.progress
            .next("timer wakeup latency with and without PM QoS");
        let f = finding(
            "pm_qos_latency",
            "FIFO wakeup, PM QoS 0 vs none",
            "x",
            pmqos::HEALTHY,
            format!(
                "cyclictest -m -p80 -i1000 -t1 without (--laptop) and with /dev/cpu_dma_latency held at 0 (cyclictest's default), as in the FIFO wakeup finding, in {} alternating chunks of {:.2} s (without first); each side's avg is the median of its chunks' averages, p99 over all its wakeups; value = avg without / avg with",
                self.budget.pm_qos_chunks,
                self.budget.pm_qos.as_secs_f64()
            ),
        );
        self.measured(f, |c, f| {
            let w = LoadWindow::start();
            let chunks = match pmqos::measure(c.budget.pm_qos_chunks, c.budget.pm_qos, &c.opts.stop)
            {
                Ok(chunks) => chunks,
                Err(e) => return f.skipped(Verdict::Notable, format!("not measured: {e:#}")),
            };
            let ctx = pmqos::Seen {
                idle: pmqos::Cpuidle::read(),
                others: crate::knob::sys::pmqos::other_holders(),
                other_load_cpus: w.other_load(),
                cpus: c.online.len(),
            };
            pmqos::pm_qos_finding(f, &chunks, &ctx)
        });
    }

    /// The CPU both sides of the switch-cost ping-pong start from.
    fn first_cpu(&self) -> usize {
        self.online.first().copied().unwrap_or(0)
    }

    /// Step 3: pipe ping-pong with both sides on one CPU; returns its us/op (0 if not
    /// measured) for the cross-CPU step to compare with.
    fn switch_cost_same_cpu(&mut self) -> f64 {
        let cpu_a = self.first_cpu();
        self.progress
            .next(&format!("switch cost on one CPU (cpu{cpu_a})"));
        let f = finding(
            "switch_cost_same_cpu",
            "pipe switch cost, one CPU",
            "us/op",
            verdict::SWITCH_SAME_HEALTHY,
            format!(
                "same definition as perf bench sched pipe: usecs/op per round trip (one 4-byte write+read through each of two pipes) = elapsed / loops, two threads both pinned to CPU {cpu_a}, {:.1} s",
                self.budget.switch.as_secs_f64()
            ),
        );
        let mut same_us = 0.0;
        self.measured(f, |c, f| {
            match switch_cost(Pinning::Same(cpu_a), c.budget.switch, &c.opts.stop) {
                Ok(p) => {
                    same_us = p.us_per_op();
                    c.data.switch_cost.push((
                        format!("cpu{cpu_a} <-> cpu{cpu_a}"),
                        same_us,
                        p.chunk_range(),
                    ));
                    let judged = verdict::verdict_switch_same(same_us, c.vm);
                    findings::switch_finding(f, &p, judged, None)
                }
                Err(e) => f.skipped(Verdict::Problem, format!("could not measure: {e:#}")),
            }
        });
        same_us
    }

    /// Step 3b: the same pinned pair traced with the sched tracepoints: how long the
    /// woken side waits for its CPU.
    fn traced_wakeup(&mut self) {
        let cpu = self.online.last().copied().unwrap_or(0);
        self.progress
            .next(&format!("traced wakeup latency on one CPU (cpu{cpu})"));
        let f = finding(
            "traced_wakeup_latency",
            "traced wakeup latency, one CPU",
            "us (p99)",
            verdict::TRACED_WAKEUP_HEALTHY,
            format!(
                "two threads pinned to CPU {cpu} pass one byte back and forth through two pipes for {:.1} s; sched_waking to sched_switch-in of the woken side, from perf tracepoint events (as perf sched timehist's sch delay)",
                self.budget.switch.as_secs_f64()
            ),
        );
        self.measured(f, |c, f| {
            match traced::traced_pingpong(cpu, c.budget.switch, &c.opts.stop, &mut c.sys.journal) {
                Ok(fin) => findings::traced_wakeup_finding(f, &fin, c.vm),
                Err(e) => f.skipped(Verdict::Notable, format!("not measured: {e:#}")),
            }
        });
    }

    /// Step 4: pipe ping-pong between the first two CPUs, against `same_us` on one.
    fn switch_cost_cross_cpu(&mut self, same_us: f64) {
        let cpu_a = self.first_cpu();
        let cpu_b = self.online.get(1).copied();
        self.progress.next(&match cpu_b {
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
                self.budget.switch.as_secs_f64()
            ),
        );
        let Some(b) = cpu_b else {
            self.findings.push(f.skipped(
                Verdict::Notable,
                "only one CPU is online: there is no other CPU to wake".to_string(),
            ));
            return;
        };
        self.measured(f, |c, f| {
            match switch_cost(
                Pinning::Two {
                    ping: cpu_a,
                    pong: b,
                },
                c.budget.switch,
                &c.opts.stop,
            ) {
                Ok(p) => {
                    let cross = p.us_per_op();
                    c.data.switch_cost.push((
                        format!("cpu{cpu_a} <-> cpu{b}"),
                        cross,
                        p.chunk_range(),
                    ));
                    let judged = verdict::verdict_switch_cross(cross, same_us, c.vm);
                    let ratio = (same_us > 0.0).then(|| cross / same_us);
                    findings::switch_finding(f, &p, judged, ratio)
                }
                Err(e) => f.skipped(Verdict::Problem, format!("could not measure: {e:#}")),
            }
        });
    }

    /// Step 5: the pipe-wakeup preset as SCHED_OTHER, then as SCHED_BATCH.
    fn pipe_wakeup_batch_ratio(&mut self) {
        self.progress.next("pipe-wakeup, OTHER vs BATCH");
        let f = finding(
            "pipe_wakeup_batch_ratio",
            "pipe-wakeup BATCH/OTHER speedup",
            "x",
            &verdict::batch_healthy(),
            format!(
                "schedlab run pipe-wakeup for {:.1} s as is, then with --variant batch (writer and reader SCHED_BATCH, both pinned to CPU 0): writer bytes/s BATCH / OTHER; a BATCH writer with more than {SLOW_REGIME_INVOLUNTARY_PER_S:.0} involuntary switches/s is in the slow regime of a pipe that was polled",
                self.budget.preset_run.as_secs_f64(),
            ),
        );
        self.measured(f, |c, f| match c.run_pipe_wakeup() {
            Ok(runs) => runs.fill(f),
            Err(e) => f.skipped(
                Verdict::Problem,
                format!("could not run pipe-wakeup: {e:#}"),
            ),
        });
    }

    fn run_pipe_wakeup(&mut self) -> Result<PipeWakeup> {
        let duration = self.budget.preset_run;
        let other = self.preset_run("pipe-wakeup", &[], duration)?;
        if self.stopped() {
            return Err(anyhow!("interrupted before the BATCH run"));
        }
        let batch = vec![self.preset_run("pipe-wakeup", &["batch"], duration)?];
        Ok(PipeWakeup { other, batch })
    }

    /// Step 6: the nice-ladder preset's fairness error.
    fn nice_fairness(&mut self) {
        self.progress.next("nice-ladder fairness");
        let f = finding(
            "nice_fairness_error",
            "nice-ladder fairness error",
            "%",
            &verdict::fairness_healthy(),
            format!(
                "schedlab run nice-ladder for {:.1} s (21 busy loops at nice 0..20 on every CPU): metrics.fairness_error = half the summed |CPU share - ideal share| over the ideal total, ideal from the kernel's nice weights water-filled over the CPUs; the split error rescales the shares to the CPU time the ladder got",
                self.budget.ladder.as_secs_f64()
            ),
        );
        self.measured(f, |c, f| {
            match c.preset_run("nice-ladder", &[], c.budget.ladder) {
                Ok(r) => findings::fairness_finding(f, &r),
                Err(e) => f.skipped(
                    Verdict::Problem,
                    format!("could not run nice-ladder: {e:#}"),
                ),
            }
        });
    }

    /// Step 7: what a FIFO spinner leaves a fair thread on its CPU (rt-throttle preset).
    fn fifo_fair_share(&mut self) {
        self.progress.next("rt-throttle fair share");
        let rt = RtBandwidth::running();
        let against = match rt {
            RtBandwidth::Throttling => "1 - sched_rt_runtime_us/sched_rt_period_us read now (RT throttling; no fair server before 6.12)",
            RtBandwidth::ThrottlingAndFairServer => "max(1 - sched_rt_runtime_us/sched_rt_period_us read now, fair server runtime/period): this kernel has RT throttling (RT group scheduling) and the fair server",
            RtBandwidth::FairServerOnly => "the fair server's runtime/period: this kernel (6.12+ without RT group scheduling) throttles no RT task, whatever sched_rt_runtime_us says",
        };
        let f = finding(
            "fifo_fair_share",
            "fair share under a FIFO spinner",
            "% of a CPU",
            &verdict::fifo_healthy(rt),
            format!(
                "schedlab run rt-throttle for {:.1} s, sampled every 100 ms (a SCHED_FIFO 1 spinner and a nice -20 thread, both on CPU 0): the fair thread's CPU share over whole RT periods after its first throttled window (a stretched first window is named and left out; without samples to find it, after the preset's {:.1} s warm-up) against {against}",
                self.budget.rt.as_secs_f64(),
                preset::load("rt-throttle").map_or(0.0, |p| p.warmup.as_secs_f64())
            ),
        );
        self.measured(f, move |c, f| c.run_rt_throttle(f, rt));
    }

    /// rt-throttle against the promised share, watched for others changing RT throttling
    /// or competing for RT time meanwhile.
    fn run_rt_throttle(&mut self, f: Finding, rt: RtBandwidth) -> Finding {
        let promise = match findings::promised_fair_share(self.sys, rt)
            .context("cannot read the RT settings")
        {
            Ok(v) => v,
            Err(e) => return f.skipped(Verdict::Problem, format!("{e:#}")),
        };
        if promise.1["sched_rt_runtime_us"]
            .as_i64()
            .is_some_and(|r| r < 0)
        {
            // Safety first: without throttling a FIFO spinner can take its CPU for good
            // (where only the fair server acts, -1 is no less safe; the check still
            // starts no spinner under a setting that says "unlimited").
            let why = if rt.throttles() {
                "RT throttling is off (sched_rt_runtime_us = -1): the check starts no FIFO spinner without it; one would starve fair tasks on its CPU"
            } else {
                "sched_rt_runtime_us = -1 (no SCHED_DEADLINE admission limit; RT throttling does not exist on this kernel, only the fair server): the check starts no FIFO spinner under it"
            };
            return f.skipped(Verdict::Notable, why.to_string());
        }
        let watch = watch::Watch::start(self.budget.rt + Duration::from_secs(30));
        // Samples every 100 ms: the throttled windows are 50 ms, and the finding finds
        // the first one in the samples (see throttle.rs).
        let result = self.preset_run_every(
            "rt-throttle",
            &[],
            self.budget.rt,
            Duration::from_millis(100),
        );
        let seen = watch.finish();
        match result {
            Ok(r) => findings::fifo_share_finding(f, promise, &r, &seen, rt),
            Err(e) => f.skipped(
                Verdict::Problem,
                format!("could not run rt-throttle: {e:#}"),
            ),
        }
    }

    /// Step 8: a pinned spin loop on each CPU in turn.
    fn cpu_speed(&mut self) {
        self.progress.next("spin rate on each CPU");
        let slice = (self.budget.spin_total
            / (self.online.len().max(1) * self.budget.spin_rounds) as u32)
            .max(Duration::from_millis(10));
        let f = finding(
            "cpu_speed",
            "spin rate spread across CPUs",
            "% spread",
            verdict::SPEED_HEALTHY,
            format!(
                "a thread pinned to each CPU in turn runs a multiply-add loop for {:.0} ms, {} rounds over the CPUs; the best iterations per second of the thread's own CPU time (other load sharing the CPU does not count; per wall second in details); spread = 1 - slowest / fastest",
                slice.as_secs_f64() * 1e3,
                self.budget.spin_rounds
            ),
        );
        self.measured(f, |c, f| {
            match measure::spin_rates(&c.online, slice, c.budget.spin_rounds, &c.opts.stop) {
                Ok(spin) => findings::speed_finding(f, &c.online, &spin, &mut c.data),
                Err(e) => f.skipped(Verdict::Problem, format!("could not measure: {e:#}")),
            }
        });
    }

    /// Step 9: which system knobs could be changed here (nothing is written).
    fn knobs(&mut self) {
        self.progress.next("which knobs can change");
        let f = finding(
            "knobs",
            "changeable system knobs",
            "writable",
            verdict::KNOBS_HEALTHY,
            "schedlab knobs: every system knob (RT sysctls, autogroup, debugfs tunables, fair server, features) with whether it can be written here and why not".to_string(),
        );
        self.findings.push(findings::knobs_finding(f, self.sys));
    }

    /// Steal time over `whole`, the window of the whole check.
    fn steal_time(&mut self, whole: &LoadWindow) {
        let f = finding(
            "steal_time",
            "steal time during the check",
            "%",
            verdict::STEAL_HEALTHY,
            "/proc/stat steal ticks over all ticks between the start and the end of the check, per CPU and total".to_string(),
        );
        self.findings
            .push(match (whole.stat(), measure::read_proc_stat()) {
                (Some(a), Some(b)) => {
                    findings::steal_finding(f, a, &b, std::mem::take(&mut self.step_steal))
                }
                _ => f.skipped(
                    Verdict::Notable,
                    "not measured: /proc/stat is unreadable".to_string(),
                ),
            });
    }

    /// The findings in report order, with the machine and the time it all took.
    fn report(mut self, started: Instant, whole: &LoadWindow) -> CheckReport {
        self.findings
            .sort_by_key(|f| IDS.iter().position(|id| *id == f.id));
        self.progress.done();
        CheckReport {
            kernel: crate::system::kernel_release(),
            cpus: self.online.len(),
            quick: self.opts.quick,
            duration_s: started.elapsed().as_secs_f64(),
            budget_s: if self.opts.quick {
                QUICK_BUDGET_S
            } else {
                BUDGET_S
            },
            vm: self.vm,
            other_load_cpus: whole.other_load().unwrap_or(0.0),
            interrupted: self.stopped(),
            findings: self.findings,
            data: self.data,
        }
    }

    /// One run of preset `name` with `variant`s applied, as `schedlab run` does it.
    fn preset_run(
        &mut self,
        name: &str,
        variant: &[&str],
        duration: Duration,
    ) -> Result<RunReport> {
        // Fewer samples than the default 100 ms: most steps need whole-run summaries only.
        self.preset_run_every(name, variant, duration, Duration::from_millis(200))
    }

    fn preset_run_every(
        &mut self,
        name: &str,
        variant: &[&str],
        duration: Duration,
        interval: Duration,
    ) -> Result<RunReport> {
        let mut p: Preset = preset::load(name)?;
        for v in variant {
            let settings = p.variant(v)?.set.clone();
            p.apply_all(&settings)?;
        }
        let mut ro = RunOptions::new(self.exe.to_path_buf());
        ro.duration = duration;
        ro.interval = interval;
        ro.stop = Arc::clone(&self.opts.stop);
        ro.overrides = variant.iter().map(|v| format!("--variant {v}")).collect();
        run(&p, &ro, self.sys)
    }
}
