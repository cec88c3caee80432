//! The finding builders: from what an experiment measured to a judged, explained finding.

use anyhow::{anyhow, Result};
use serde_json::{json, Value};

use super::measure::{self, LoadWindow, StatSnapshot};
use super::noise;
use super::throttle;
use super::verdict;
use super::watch::Watched;
use crate::facts::RtBandwidth;
use crate::format::{ns, si};
use crate::ideal::fairness_error;
use crate::knob::sys::{self, SysKnob, SystemKnobs};
use crate::lab::pingpong::Measured;
use crate::report::check::{CheckData, Finding, Noise, Verdict, Worse, OTHER_LOAD_NOTE};
use crate::report::{RunReport, TaskReport};
use crate::trace::TraceFinal;

/// Other load (in CPUs) from which a problem verdict is only notable.
const OTHER_LOAD_DISTURBS: f64 = 0.5;

/// Under BATCH the writer fills the pipe before the reader runs: ~30-200 involuntary
/// switches/s here. A writer preempted on most writes (60-80k/s) is in the slow regime a
/// pipe falls into once something polled it (its poll_usage then wakes the reader on
/// every write; see the `polled` variant): schedlab's own workers never do.
pub(super) const SLOW_REGIME_INVOLUNTARY_PER_S: f64 = 10_000.0;

fn us(v: u64) -> f64 {
    v as f64 / 1e3
}

fn pct(v: f64) -> String {
    format!("{:.1} %", v * 100.0)
}

/// Record how busy other processes kept the CPUs while `f` was measured.
pub(super) fn with_load(f: Finding, w: &LoadWindow) -> Finding {
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

pub(super) fn latency_finding(
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
        "min_ns": p.min, "avg_ns": p.mean, "p50_ns": p.p50, "p90_ns": p.p90,
        "p99_ns": p.p99, "p999_ns": p.p999, "max_ns": p.max,
        "samples": p.count, "overruns": l.overruns, "interval_ns": measure::INTERVAL.as_nanos() as u64,
        "policy": if fifo.is_some() { "fifo" } else { "other" },
        "priority": fifo.unwrap_or(0),
        "timer_slack_ns": if fifo.is_some() { Some(0) } else { l.timer_slack_ns },
        "policy_at_end": l.ended_as.map(|p| p.name()),
    });
    data.latency.push((label.to_string(), l.hist.clone()));
    f.spread(Worse::Higher, Some(noise::latency(l)))
        .judged(verdict::verdict_wakeup(p.p99, p.max, vm))
}

pub(super) fn switch_finding(
    mut f: Finding,
    p: &Measured,
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
        "us_per_op": f.value,
        "ops_per_s": if f.value > 0.0 { 1e6 / f.value } else { 0.0 },
        "chunk_min_us": range.map(|r| r.0),
        "chunk_max_us": range.map(|r| r.1),
        "ratio_to_same_cpu": ratio,
    });
    f.spread(Worse::Higher, Some(noise::switch(p)))
        .judged(judged)
}

/// The traced ping-pong: the woken side's wakeup latency, judged; both sides' counts in
/// the details.
pub(super) fn traced_wakeup_finding(mut f: Finding, fin: &TraceFinal, vm: bool) -> Finding {
    let Some(pong) = fin.tasks.iter().find(|t| t.name == "pong") else {
        return f.skipped(
            Verdict::Notable,
            "not measured: the trace has no pong side".into(),
        );
    };
    let w = &pong.wakeup_latency;
    if w.count == 0 {
        return f.skipped(
            Verdict::Notable,
            "not measured: the trace saw no wakeup of the pong side".into(),
        );
    }
    f.value = w.p99_us;
    f.shown = format!("{:.1} us p99 (p50 {:.1})", w.p99_us, w.p50_us);
    f.details = json!({
        "wakeups": pong.wakeups,
        "switches_in": pong.switches_in,
        "wakeup_latency": crate::trace::LatencyNs::from(w),
        "events": fin.handled,
        "lost": fin.lost,
    });
    if fin.lost > 0 {
        return f.skipped(
            Verdict::Notable,
            format!(
                "not judged: the trace lost {}",
                crate::format::counted(fin.lost, "event")
            ),
        );
    }
    f.spread(Worse::Higher, Some(noise::traced(fin, pong.tid)))
        .judged(verdict::verdict_traced_wakeup(w.p50_us, w.p99_us, vm))
}

/// pipe-wakeup's runs.
pub(super) struct PipeWakeup {
    pub(super) other: RunReport,
    pub(super) batch: Vec<RunReport>,
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
    pub(super) fn fill(self, mut f: Finding) -> Finding {
        let other = self.other.metrics.throughput_per_s;
        let best = self
            .batch
            .iter()
            .map(|r| r.metrics.throughput_per_s)
            .fold(0.0, f64::max);
        let ratio = if other > 0.0 { best / other } else { 0.0 };
        f.value = ratio;
        let (div, unit) = crate::format::bytes_unit(best.max(other));
        f.shown = format!(
            "{ratio:.2}x ({:.1} vs {:.1} {unit})",
            best / div,
            other / div
        );
        f.details = self.details(other, best);
        let best_run = self.batch.iter().max_by(|a, b| {
            a.metrics
                .throughput_per_s
                .total_cmp(&b.metrics.throughput_per_s)
        });
        f = f.spread(
            Worse::Lower,
            best_run.map(|b| noise::batch_ratio(&self.other, b)),
        );
        if other <= 0.0 {
            return f.skipped(
                Verdict::Problem,
                "the OTHER run moved no bytes: pipe-wakeup did not run (is `wc` installed?)"
                    .to_string(),
            );
        }
        f.judged(self.judge(ratio))
    }

    fn details(&self, other: f64, best: f64) -> Value {
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
        json!({
            "other_bytes_per_s": other,
            "other_writer_involuntary_per_s": writer_involuntary(&self.other),
            "batch_best_bytes_per_s": best,
            "batch_runs": runs,
            "warnings": warnings,
        })
    }

    /// A BATCH run in the slow regime says nothing about BATCH itself, whatever the ratio.
    fn judge(&self, ratio: f64) -> (Verdict, String) {
        if !self.batch.iter().any(slow_regime) {
            return verdict::verdict_batch_ratio(ratio);
        }
        (
            Verdict::Notable,
            format!(
                "under BATCH the writer was still preempted {:.0} times a second: the pipe behaved as one that was polled (every write wakes the reader), which schedlab's workers never do - another process touching it, or a kernel that wakes on every write",
                self.batch.iter().map(writer_involuntary).fold(0.0, f64::max)
            ),
        )
    }
}

pub(super) fn fairness_finding(mut f: Finding, r: &RunReport) -> Finding {
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
        .map(|(t, d)| json!({ "task": t.name, "nice": t.nice, "share": t.cpu_share, "off_by_share": d }));
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
    f.spread(Worse::Higher, Some(noise::fairness(r)))
        .judged(verdict::verdict_fairness(error, split_error))
}

/// The fair share RT throttling and the fair server promise on a kernel with `rt`, with
/// how it was found. The sysctls are read (and reported) either way; they promise
/// nothing where they throttle nothing (6.12+ without RT group scheduling).
pub(super) fn promised_fair_share(sys: &SystemKnobs, rt: RtBandwidth) -> Result<(f64, Value)> {
    let read = |k: SysKnob| -> Result<i64> {
        let text = sys::get(&k, &sys.probe)?;
        text.trim()
            .parse()
            .map_err(|_| anyhow!("{}: \"{text}\" is not a number", k.name()))
    };
    let runtime = read(SysKnob::RtRuntime)?;
    let period = read(SysKnob::RtPeriod)?;
    let throttle = throttle_share(rt, runtime, period);
    // The fair server (6.12+) reserves runtime/period of each CPU for fair tasks; its
    // debugfs files are unreadable without debugfs (or under lockdown): assume its
    // default of 50 ms per 1 s then, and say so.
    let (server, source) = if rt.has_fair_server() {
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
            "rt_bandwidth": rt.name(),
            "throttle_share": throttle,
            "fair_server_share": server,
            "fair_server_source": source,
        }),
    ))
}

/// What RT throttling leaves fair tasks: 1 - runtime/period where the sysctls throttle,
/// nothing where they are off (-1) or throttle nothing on this kernel.
pub(super) fn throttle_share(rt: RtBandwidth, runtime: i64, period: i64) -> f64 {
    if !rt.throttles() || runtime < 0 || period <= 0 {
        0.0
    } else {
        (1.0 - runtime as f64 / period as f64).clamp(0.0, 1.0)
    }
}

/// The rt-throttle run against the share promised by `promise` (from
/// `promised_fair_share`), given what changed around the run.
pub(super) fn fifo_share_finding(
    mut f: Finding,
    (expected, mut details): (f64, Value),
    r: &RunReport,
    seen: &Watched,
    rt: RtBandwidth,
) -> Finding {
    let task = |group: &str| r.tasks.iter().find(|t| t.group == group);
    let (Some(fair), Some(fifo)) = (task("fair"), task("fifo")) else {
        return f.skipped(
            Verdict::Problem,
            "rt-throttle reported no fair or fifo task".to_string(),
        );
    };
    let period_us = details["sched_rt_period_us"].as_f64().unwrap_or(0.0);
    let period_s = period_us / 1e6;
    // Judged over whole RT periods after the fair thread's first stretch on the CPU, so a
    // first throttled window the kernel stretched (see throttle.rs) is not taken for
    // the machine's steady share; the run's own summary when the samples cannot say.
    let windows = throttle::windows(r, &fair.name, period_s);
    let steady = windows.as_ref().and_then(|w| w.steady);
    let (measured, fifo_share) = match steady {
        Some((share, from, to)) => (
            share,
            throttle::share_between(r, &fifo.name, from, to).unwrap_or(fifo.cpu_share),
        ),
        None => (fair.cpu_share, fifo.cpu_share),
    };
    f = f.spread(Worse::Lower, Some(noise::fifo_share(period_us)));
    f.value = measured * 100.0;
    f.shown = format!("{} (promised {})", pct(measured), pct(expected));
    details["measured_share"] = json!(measured);
    details["expected_share"] = json!(expected);
    details["fifo_share"] = json!(fifo_share);
    details["summary"] = json!({"fair_share": fair.cpu_share, "fifo_share": fifo.cpu_share});
    details["first_window_s"] = json!(windows.as_ref().map(|w| w.first_s));
    details["first_window_unended"] = json!(windows.as_ref().map(|w| w.first_unended));
    details["steady_window_s"] = json!(steady.map(|(_, from, to)| [from, to]));
    details["fifo_policy"] = json!(fifo.policy);
    // How each thread was kept off the CPU: a throttled spinner waits runnable
    // (run-queue wait, involuntary switches), a blocked one sleeps (voluntary switches).
    details["threads"] = json!([thread_details(fifo), thread_details(fair)]);
    details["summary_window_s"] = json!([r.summary_from_s, r.summary_from_s + r.summary_s]);
    details["samples"] = samples(r);
    details["duration_s"] = json!(r.duration_s);
    details["warnings"] = json!(r.warnings);
    details["rt_runtime_period_seen"] = json!(seen.rt_sysctls);
    details["foreign_rt_tasks"] = json!(seen.foreign_rt);
    f.details = details;
    // Only where something is promised: with nothing promised no window is stretched.
    let stretched = windows
        .as_ref()
        .filter(|_| expected >= 0.005)
        .and_then(|w| w.stretched(expected * period_s));
    match (why_fifo_share_unjudgeable(r, fifo, seen), stretched) {
        (Some(why), _) => f.judged((Verdict::Notable, why)),
        (None, Some(transient)) if steady.is_none() => f.judged((
            Verdict::Notable,
            format!(
                "{transient}; no whole RT period was left after it to measure the steady share"
            ),
        )),
        (None, Some(transient)) => {
            let (v, why) = verdict::verdict_fifo_share(measured, expected, rt);
            f.judged((v, format!("{why}; {transient}, left out")))
        }
        (None, None) => f.judged(verdict::verdict_fifo_share(measured, expected, rt)),
    }
}

/// What says where a thread's time went: its share, its run-queue wait, its switches
/// by kind, and the CPU it was allowed and last seen on.
fn thread_details(t: &TaskReport) -> Value {
    json!({
        "task": t.name,
        "cpu_share": t.cpu_share,
        "wait_share": t.wait_share,
        "voluntary_per_s": t.voluntary_per_s,
        "involuntary_per_s": t.involuntary_per_s,
        "cpus": t.cpus,
        "last_cpu": t.last_cpu,
    })
}

/// The run sample by sample, "t_s task share wait" per task and "cpuN busy steal" per
/// CPU: a share far from its promise shows whether it was one long gap or every period.
fn samples(r: &RunReport) -> Value {
    let name = |i: usize| r.series.tasks.get(i).map_or("?", String::as_str);
    let tasks = r.series.points.iter().map(|p| {
        format!(
            "{:.1} {} {:.3} {}",
            p.t_s,
            name(p.task),
            p.cpu_share,
            p.wait_share.map_or("-".into(), |w| format!("{w:.3}"))
        )
    });
    let cpus = r
        .series
        .cpus
        .iter()
        .map(|c| format!("{:.1} cpu{} {:.3} {:.3}", c.t_s, c.cpu, c.busy, c.steal));
    json!(tasks.chain(cpus).collect::<Vec<_>>())
}

/// Judging the share needs the promise to hold still, the RT bandwidth to be ours and
/// the spinner to be FIFO; otherwise why not.
fn why_fifo_share_unjudgeable(r: &RunReport, fifo: &TaskReport, seen: &Watched) -> Option<String> {
    if seen.rt_sysctls.len() > 1 {
        return Some(format!(
            "sched_rt_runtime_us/sched_rt_period_us changed during the run ({}): another program is changing RT throttling, so the share cannot be judged",
            seen.rt_sysctls.join(" -> ")
        ));
    }
    if !seen.foreign_rt.is_empty() {
        return Some(format!(
            "other programs' real-time tasks ran meanwhile ({}): they share the RT bandwidth and the CPU, so the share cannot be judged",
            seen.foreign_rt.join(", ")
        ));
    }
    if fifo.policy != "fifo" {
        let why = r
            .warnings
            .first()
            .cloned()
            .unwrap_or_else(|| format!("it ran {}", fifo.policy));
        return Some(format!(
            "the spinner could not be made SCHED_FIFO ({why}), so nothing was throttled"
        ));
    }
    None
}

pub(super) fn speed_finding(
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
        return f.interrupted();
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
    f.details = json!({ "per_cpu": per_cpu, "spread_fraction": spread });
    f.spread(Worse::Higher, Some(noise::speed(spin)))
        .judged(verdict::verdict_cpu_speed(&values))
}

/// Steal over the whole check; `steps`: the steal % of each step, its repeats.
pub(super) fn steal_finding(
    mut f: Finding,
    a: &StatSnapshot,
    b: &StatSnapshot,
    steps: Vec<f64>,
) -> Finding {
    let (total, per_cpu) = measure::steal_shares(a, b);
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
        "steal_share": total,
        "per_cpu": per_cpu.iter().map(|(c, s)| json!({ "cpu": c, "steal_share": s })).collect::<Vec<_>>(),
        "worst_cpu": worst.0,
    });
    let steps = Noise::repeats("%", "steal % during each step of the check", steps);
    f.spread(Worse::Higher, Some(steps))
        .judged(verdict::verdict_steal(total, worst.1))
}

pub(super) fn knobs_finding(mut f: Finding, sys: &SystemKnobs) -> Finding {
    // What the machine lets you change; a kernel without sched_ext is its own line.
    let knobs: Vec<_> = sys::list(&sys.probe)
        .into_iter()
        .filter(|k| k.name != "sys.sched_ext")
        .collect();
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
                "sys.rt_runtime_us"
                    | "sys.rt_period_us"
                    | "sys.rr_timeslice_ms"
                    | "sys.autogroup"
                    | "sys.cpu_dma_latency"
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
        "sched_ext": crate::knob::scx::detect(std::path::Path::new("/")).summary(),
    });
    f.spread(Worse::Lower, Some(noise::knobs()))
        .judged(verdict::verdict_knobs(
            sys.probe.root,
            rt_why.as_deref(),
            debugfs_why.as_deref(),
        ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::check::finding;

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

    /// An rt-throttle run of `samples` 0.1 s samples whose fair thread ran 0.95-1.5 s
    /// (a stretched first window, as the C reference showed it), then 50 ms a period.
    fn stretched_run(samples: usize) -> RunReport {
        let mut r = crate::plot::tests::fixtures::run_report(2, "loops");
        let fair: Vec<f64> = (0..samples)
            .map(|i| match i {
                9 | 24 | 34 => 0.5,
                10..=14 => 1.0,
                _ => 0.0,
            })
            .collect();
        for (t, (name, share)) in r.tasks.iter_mut().zip([("fifo", 0.7), ("fair", 0.3)]) {
            (t.name, t.group, t.cpu_share) = (name.into(), name.into(), share);
            t.wait_share = Some(1.0 - share);
            t.policy = if name == "fifo" { "fifo" } else { "other" }.into();
        }
        r.summary_from_s = 1.0;
        r.summary_s = samples as f64 / 10.0 - 1.0;
        r.series.tasks = vec!["fifo".into(), "fair".into()];
        r.series.points = fair
            .iter()
            .enumerate()
            .flat_map(|(i, &share)| {
                let t_s = (i + 1) as f64 / 10.0;
                [(0, 1.0 - share), (1, share)].map(|(task, cpu_share)| crate::report::SeriesPoint {
                    t_s,
                    task,
                    cpu_share,
                    wait_share: Some(share),
                    ..Default::default()
                })
            })
            .collect();
        r.series.cpus = vec![crate::report::CpuPoint {
            t_s: 0.1,
            cpu: 0,
            busy: 1.0,
            steal: 0.0,
        }];
        r
    }

    fn fifo_finding(r: &RunReport) -> Finding {
        let seen = Watched {
            rt_sysctls: vec!["950000/1000000".into()],
            foreign_rt: Vec::new(),
        };
        let promise = (0.05, json!({"sched_rt_period_us": 1_000_000}));
        fifo_share_finding(
            finding("fifo_fair_share", "x", "%", "h", String::new()),
            promise,
            r,
            &seen,
            RtBandwidth::ThrottlingAndFairServer,
        )
    }

    /// The sysctls promise a share only where they throttle: before 6.12, and on 6.12+
    /// with RT group scheduling; without it 600000 of 1000000 leaves nothing.
    #[test]
    fn the_sysctls_promise_a_share_only_where_they_throttle() {
        let share = |rt| throttle_share(rt, 600_000, 1_000_000);
        assert!((share(RtBandwidth::Throttling) - 0.4).abs() < 1e-12);
        assert!((share(RtBandwidth::ThrottlingAndFairServer) - 0.4).abs() < 1e-12);
        assert_eq!(share(RtBandwidth::FairServerOnly), 0.0);
        assert_eq!(throttle_share(RtBandwidth::Throttling, -1, 1_000_000), 0.0);
    }

    /// A stretched first window is reported and left out: the share is judged over the
    /// whole periods after it, with what tells a throttled spinner from a blocked one.
    #[test]
    fn the_fifo_share_is_judged_after_a_stretched_first_window() {
        let f = fifo_finding(&stretched_run(40));
        let d = &f.details;
        let near = |v: &Value, x: f64| v.as_f64().is_some_and(|v| (v - x).abs() < 1e-9);
        assert!(near(&d["measured_share"], 0.05), "{d}");
        assert!(near(&d["fifo_share"], 0.95), "{d}");
        assert!(near(&d["first_window_s"], 0.55), "{d}");
        assert_eq!(d["first_window_unended"], false);
        assert!(
            near(&d["steady_window_s"][0], 1.5) && near(&d["steady_window_s"][1], 3.5),
            "{d}"
        );
        assert_eq!(d["summary"], json!({"fair_share": 0.3, "fifo_share": 0.7}));
        assert_eq!(d["threads"][0]["task"], "fifo");
        assert_eq!(d["threads"][1]["wait_share"], 0.7);
        assert_eq!(d["summary_window_s"], json!([1.0, 4.0]));
        assert_eq!(d["samples"][1], "0.1 fair 0.000 0.000");
        assert_eq!(d["samples"][80], "0.1 cpu0 1.000 0.000");
        assert_eq!(f.verdict, Verdict::Ok, "{}", f.explanation);
        assert!(
            f.explanation
                .contains("the first throttled window lasted 550.0 ms where 50 ms is promised")
                && f.explanation.ends_with("left out"),
            "{}",
            f.explanation
        );
    }

    /// With no whole period after the stretched window, nothing is judged.
    #[test]
    fn a_stretched_first_window_with_no_period_after_it_is_not_judged() {
        let f = fifo_finding(&stretched_run(21));
        assert_eq!(f.verdict, Verdict::Notable, "{}", f.explanation);
        assert!(
            f.explanation.contains("lasted 550.0 ms")
                && f.explanation.contains("no whole RT period was left"),
            "{}",
            f.explanation
        );
        // The run's own summary is what is shown then.
        assert_eq!(f.details["measured_share"], 0.3);
        assert_eq!(f.details["steady_window_s"], Value::Null);
        // Not stretched: judged as before, on the share after the first window.
        let mut r = stretched_run(21);
        for p in r.series.points.iter_mut().filter(|p| p.task == 1) {
            if (1.05..1.6).contains(&p.t_s) {
                p.cpu_share = 0.0;
            }
        }
        let f = fifo_finding(&r);
        let first = f.details["first_window_s"].as_f64().unwrap_or(0.0);
        assert!((first - 0.05).abs() < 1e-9, "{first}");
        assert!(
            !f.explanation.contains("first throttled window"),
            "{}",
            f.explanation
        );
    }

    #[test]
    fn the_knobs_finding_says_what_sched_ext_is_here() {
        let sys = SystemKnobs::new(std::env::temp_dir().join("schedlab-unused-journal"));
        let f = knobs_finding(finding("knobs", "k", "", "h", String::new()), &sys);
        let line = f.details["sched_ext"].as_str().expect("a line").to_string();
        let expected = crate::knob::scx::detect(std::path::Path::new("/")).summary();
        assert_eq!(line, expected);
        if !std::path::Path::new("/sys/kernel/sched_ext").is_dir() {
            assert!(line.starts_with("sched_ext: unavailable ("), "{line}");
        }
        // Counted apart from the knobs the machine lets you change.
        let counted = f.details["writable"].as_u64().unwrap_or(0)
            + f.details["read_only"].as_u64().unwrap_or(0);
        assert_eq!(counted as usize, sys::list(&sys.probe).len() - 1);
        let reasons = f.details["reasons"].to_string();
        assert!(!reasons.contains("SCHED_CLASS_EXT"), "{reasons}");
    }
}
