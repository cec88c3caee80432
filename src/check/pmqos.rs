//! The PM QoS finding: SCHED_FIFO timer wake-up latency with and without
//! /dev/cpu_dma_latency held at 0, measured in alternating chunks (A B A B).

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use serde_json::{json, Value};

use super::measure::{self, Latency};
use crate::format::ns;
use crate::knob::sys::pmqos::{self, Request};
use crate::report::check::{Finding, Verdict};

/// FIFO priority of the measuring thread, as cyclictest -p80.
pub const PRIORITY: u32 = 80;

/// Without/with ratio of the average latency from which the difference is notable.
const NOTABLE_RATIO: f64 = 1.3;

/// What a healthy machine shows, in words.
pub const HEALTHY: &str =
    "ratio ~1 where leaving idle is cheap; ~2x on a haltpoll VM (30 -> 14 us here)";

/// One chunk of 1 ms wakeups.
#[derive(Clone, Debug)]
pub struct Chunk {
    /// /dev/cpu_dma_latency was held at 0 by this chunk.
    pub held: bool,
    pub latency: Latency,
    /// The machine's target just before the chunk, us (another process' request shows
    /// here; 2000000000 is nobody's).
    pub target_before_us: Option<i32>,
}

impl Chunk {
    /// Mean wake-up latency of the chunk, ns (what cyclictest prints as Avg).
    pub fn avg_ns(&self) -> f64 {
        let h = &self.latency.hist;
        if h.count == 0 {
            0.0
        } else {
            h.sum as f64 / h.count as f64
        }
    }

    pub fn samples(&self) -> u64 {
        self.latency.hist.count
    }
}

/// One chunk as `cyclictest -m -p80 -i1000 -t1` (`held`) or the same with `--laptop`:
/// the request is opened before the measuring thread starts and closed after it ends.
pub fn chunk(held: bool, duration: Duration, stop: &Arc<AtomicBool>) -> Result<Chunk> {
    let target_before_us = pmqos::read_target(Path::new(pmqos::DEVICE)).ok();
    let request = held
        .then(|| Request::open(0))
        .transpose()
        .with_context(|| format!("holding {} at 0", pmqos::DEVICE))?;
    let latency = measure::timer_latency(Some(PRIORITY), duration, stop)?;
    drop(request);
    Ok(Chunk {
        held,
        latency,
        target_before_us,
    })
}

/// `chunks` chunks of `each`, without the request first, then with it, and so on.
pub fn measure(chunks: usize, each: Duration, stop: &Arc<AtomicBool>) -> Result<Vec<Chunk>> {
    let mut out = Vec::with_capacity(chunks);
    for i in 0..chunks {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        out.push(chunk(i % 2 == 1, each, stop)?);
    }
    Ok(out)
}

/// One side's numbers: the average is the median of its chunks' averages, so a chunk
/// in which the host took the vCPU away for a long time does not decide it.
#[derive(Clone, Debug, PartialEq)]
pub struct Side {
    pub avg_ns: f64,
    pub chunk_avg_ns: Vec<f64>,
    pub mean_ns: u64,
    pub p99_ns: u64,
    pub max_ns: u64,
    pub samples: u64,
    pub overruns: u64,
}

/// The median of `v` (0 when empty).
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    match s.len() {
        0 => 0.0,
        n if n % 2 == 1 => s[n / 2],
        n => (s[n / 2 - 1] + s[n / 2]) / 2.0,
    }
}

/// The chunks with (`held`) or without the request, summed up.
pub fn side(chunks: &[Chunk], held: bool) -> Option<Side> {
    let mine: Vec<&Chunk> = chunks.iter().filter(|c| c.held == held).collect();
    let mut hist = mine.first()?.latency.hist.clone();
    for c in &mine[1..] {
        hist.merge(&c.latency.hist);
    }
    let p = hist.percentiles()?;
    let chunk_avg_ns: Vec<f64> = mine.iter().map(|c| c.avg_ns()).collect();
    Some(Side {
        avg_ns: median(&chunk_avg_ns),
        chunk_avg_ns,
        mean_ns: p.mean,
        p99_ns: p.p99,
        max_ns: p.max,
        samples: p.count,
        overruns: mine.iter().map(|c| c.latency.overruns).sum(),
    })
}

fn side_json(s: &Side) -> Value {
    json!({
        "avg_ns": s.avg_ns, "chunk_avg_ns": s.chunk_avg_ns, "mean_ns": s.mean_ns,
        "p99_ns": s.p99_ns, "max_ns": s.max_ns, "samples": s.samples, "overruns": s.overruns,
    })
}

/// This machine's cpuidle driver, governor and idle states (name, exit latency us).
pub struct Cpuidle {
    pub driver: Option<String>,
    pub governor: Option<String>,
    pub states: Vec<(String, u64)>,
}

impl Cpuidle {
    pub fn read() -> Cpuidle {
        let base = Path::new("/sys/devices/system/cpu");
        let text = |p: &Path| {
            std::fs::read_to_string(p)
                .ok()
                .map(|s| s.trim().to_string())
        };
        let states = (0..16)
            .map(|i| base.join(format!("cpu0/cpuidle/state{i}")))
            .take_while(|d| d.is_dir())
            .filter_map(|d| {
                let latency = text(&d.join("latency"))?.parse().ok()?;
                Some((text(&d.join("name"))?, latency))
            })
            .collect();
        Cpuidle {
            driver: text(&base.join("cpuidle/current_driver")),
            governor: text(&base.join("cpuidle/current_governor"))
                .or_else(|| text(&base.join("cpuidle/current_governor_ro"))),
            states,
        }
    }

    /// What holding the target at 0 does with this driver, in one sentence.
    fn what_it_does(&self) -> String {
        match self.driver.as_deref() {
            Some("haltpoll") => "with the haltpoll cpuidle driver (a VM's) an idle vCPU halts, which exits to the host, and a timer interrupt must first get the vCPU scheduled and resumed there; at a 0 us target cpuidle only polls (state POLL), so the interrupt finds the vCPU running".to_string(),
            Some(d) => format!("with the {d} cpuidle driver an idle CPU sits in an idle state (C-state) that takes its exit latency to leave on an interrupt; at a 0 us target cpuidle only polls, so the timer interrupt finds the CPU running"),
            None => "without a cpuidle driver the idle loop halts the CPU (default_idle), and the target changes little".to_string(),
        }
    }
}

/// What the finding knows about the machine besides the chunks.
pub struct Seen {
    pub idle: Cpuidle,
    /// Other processes that held the device (read after the chunks).
    pub others: Vec<String>,
    /// CPUs other processes kept busy while the chunks ran, and the CPUs online.
    pub other_load_cpus: Option<f64>,
    pub cpus: usize,
}

impl Seen {
    /// Other load that leaves a wake-up (almost) no idle CPU to leave: with it, no
    /// difference says nothing about PM QoS.
    fn busy(&self) -> Option<f64> {
        let busy_from = (self.cpus as f64 - 0.5).max(0.5);
        self.other_load_cpus.filter(|&l| l >= busy_from)
    }
}

/// The finding from the chunks (in the order measured) and what else was seen.
pub fn pm_qos_finding(mut f: Finding, chunks: &[Chunk], ctx: &Seen) -> Finding {
    let (Some(without), Some(with)) = (side(chunks, false), side(chunks, true)) else {
        return f.skipped(
            Verdict::Notable,
            "not measured: no chunk on one of the two sides".to_string(),
        );
    };
    let ratio = if with.avg_ns > 0.0 {
        without.avg_ns / with.avg_ns
    } else {
        0.0
    };
    f.value = ratio;
    f.shown = format!(
        "{ratio:.2}x: avg {} -> {}, p99 {} -> {}",
        ns(without.avg_ns as u64),
        ns(with.avg_ns as u64),
        ns(without.p99_ns),
        ns(with.p99_ns)
    );
    let lowest_foreign = chunks
        .iter()
        .filter_map(|c| c.target_before_us)
        .filter(|&t| t < pmqos::DEFAULT_US)
        .min();
    f.details = json!({
        "without": side_json(&without),
        "with": side_json(&with),
        "latency_ratio": ratio,
        "chunks": chunks.iter().map(|c| json!({
            "held": c.held, "avg_ns": c.avg_ns(), "p99_ns": c.latency.hist.quantile(0.99),
            "samples": c.samples(), "target_before_us": c.target_before_us,
        })).collect::<Vec<_>>(),
        "priority": PRIORITY,
        "interval_ns": measure::INTERVAL.as_nanos() as u64,
        "held_target_us": 0,
        "foreign_target_us": lowest_foreign,
        "other_holders": ctx.others,
        "chunks_other_load_cpus": ctx.other_load_cpus,
        "cpus": ctx.cpus,
        "cpuidle_driver": ctx.idle.driver,
        "cpuidle_governor": ctx.idle.governor,
        "idle_states": ctx.idle.states.iter().map(|(n, l)| json!({ "name": n, "exit_latency_us": l })).collect::<Vec<_>>(),
    });
    let judged = verdict(&without, &with, ratio, lowest_foreign, ctx);
    f.judged(judged)
}

fn verdict(
    without: &Side,
    with: &Side,
    ratio: f64,
    foreign: Option<i32>,
    ctx: &Seen,
) -> (Verdict, String) {
    let (a, b) = (ns(without.avg_ns as u64), ns(with.avg_ns as u64));
    if let Some(t) = foreign {
        let who = if ctx.others.is_empty() {
            "another process".to_string()
        } else {
            ctx.others.join(", ")
        };
        return (
            Verdict::Notable,
            format!("{who} held /dev/cpu_dma_latency at {t} us meanwhile, so the side without ours was not without one: avg {a} vs {b} with ours is not the difference PM QoS makes"),
        );
    }
    let does = ctx.idle.what_it_does();
    let slower = ratio > 0.0 && ratio <= 1.0 / NOTABLE_RATIO;
    if let Some(load) = ctx.busy().filter(|_| ratio < NOTABLE_RATIO && !slower) {
        return (
            Verdict::Notable,
            format!("no difference seen (avg {a} without, {b} with /dev/cpu_dma_latency held at 0), but other processes kept {load:.1} of {} CPUs busy: a wake-up then seldom leaves an idle state, so this says nothing about PM QoS here; run the check on an idle machine ({does})", ctx.cpus),
        );
    }
    if ratio >= NOTABLE_RATIO {
        (
            Verdict::Notable,
            format!("holding /dev/cpu_dma_latency at 0 cuts the average FIFO timer wake-up from {a} to {b} ({ratio:.2}x): {does}; a latency-sensitive RT program here should hold it (cyclictest does by default, not with --laptop), at the cost of CPUs that never rest"),
        )
    } else if slower {
        (
            Verdict::Notable,
            format!("wake-ups were slower with /dev/cpu_dma_latency held at 0 (avg {a} without, {b} with): polling idle CPUs may take host time from this vCPU; {does}"),
        )
    } else {
        (
            Verdict::Ok,
            format!("leaving idle costs little here: avg {a} without and {b} with /dev/cpu_dma_latency held at 0 ({ratio:.2}x); {does}"),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::Histogram;

    fn chunk_of(held: bool, values: &[u64]) -> Chunk {
        Chunk {
            held,
            latency: Latency {
                hist: Histogram::from_values(values.iter().copied()),
                chunk_p99_ns: Vec::new(),
                overruns: 0,
                timer_slack_ns: Some(0),
                ended_as: None,
            },
            target_before_us: Some(pmqos::DEFAULT_US),
        }
    }

    fn finding_of(chunks: &[Chunk]) -> Finding {
        let f = crate::report::check::finding("pm_qos_latency", "t", "x", HEALTHY, "m".into());
        pm_qos_finding(f, chunks, &context(Some(0.1)))
    }

    fn context(other_load_cpus: Option<f64>) -> Seen {
        Seen {
            idle: Cpuidle {
                driver: Some("haltpoll".into()),
                governor: None,
                states: vec![("POLL".into(), 0)],
            },
            others: Vec::new(),
            other_load_cpus,
            cpus: 2,
        }
    }

    #[test]
    fn the_average_is_the_median_chunk_and_one_stalled_chunk_does_not_decide_it() {
        let chunks = [
            chunk_of(false, &[30_000, 30_000]),
            chunk_of(true, &[14_000, 16_000]),
            chunk_of(false, &[30_000, 800_000_000]),
            chunk_of(true, &[15_000, 15_000]),
            chunk_of(false, &[28_000, 32_000]),
            chunk_of(true, &[15_000, 15_000]),
        ];
        let f = finding_of(&chunks);
        assert_eq!(f.verdict, Verdict::Notable, "{}", f.explanation);
        assert!((f.value - 2.0).abs() < 1e-9, "{}", f.value);
        assert_eq!(
            f.details["with"]["chunk_avg_ns"],
            json!([15000.0, 15000.0, 15000.0])
        );
        assert_eq!(f.details["chunks"].as_array().map(Vec::len), Some(6));
        assert!(f.explanation.contains("haltpoll"), "{}", f.explanation);
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), 2.5);
    }

    #[test]
    fn no_difference_is_ok_and_a_foreign_request_is_named() {
        let same = [chunk_of(false, &[20_000]), chunk_of(true, &[19_000])];
        assert_eq!(finding_of(&same).verdict, Verdict::Ok);
        let mut foreign = same.clone();
        foreign[0].target_before_us = Some(0);
        let f = finding_of(&foreign);
        assert_eq!(f.verdict, Verdict::Notable);
        assert!(
            f.explanation.contains("at 0 us meanwhile"),
            "{}",
            f.explanation
        );
        let one_side = finding_of(&same[..1]);
        assert_eq!(one_side.details["skipped"], true);
        // No difference while other load held the CPUs: not judged ok.
        let f = crate::report::check::finding("pm_qos_latency", "t", "x", HEALTHY, "m".into());
        let busy = pm_qos_finding(f, &same, &context(Some(1.6)));
        assert_eq!(busy.verdict, Verdict::Notable);
        assert!(
            busy.explanation.contains("1.6 of 2 CPUs busy"),
            "{}",
            busy.explanation
        );
    }
}
