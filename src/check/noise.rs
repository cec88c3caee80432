//! Each finding's own spread, from the repeated measurements its experiment already takes.

use super::measure::{Latency, SpinRates};
use super::verdict;
use crate::ideal::fairness_error;
use crate::lab::pingpong::Measured;
use crate::report::check::Noise;
use crate::report::RunReport;
use crate::trace::TraceFinal;

/// The p99 of each tenth of the timer wakeups, in us.
pub(super) fn latency(l: &Latency) -> Noise {
    Noise::repeats(
        "us (p99)",
        "p99 of each tenth of the wakeups",
        l.chunk_p99_ns.iter().map(|v| *v as f64 / 1e3).collect(),
    )
}

/// us per round trip of each chunk (about a tenth) of the ping-pong.
pub(super) fn switch(p: &Measured) -> Noise {
    Noise::repeats(
        "us/op",
        "us/op of each tenth of the run",
        p.chunks_us.clone(),
    )
}

/// The woken side's wakeup p99 in each tracer interval (a tenth of the run) that saw one.
pub(super) fn traced(fin: &TraceFinal, tid: i32) -> Noise {
    let p99s = fin
        .pending
        .iter()
        .flat_map(|b| b.tasks.iter())
        .filter(|t| t.tid == tid && t.wakeups > 0 && t.wakeup_p99_us > 0.0)
        .map(|t| t.wakeup_p99_us)
        .collect();
    Noise::repeats("us (p99)", "p99 of each tenth of the trace", p99s)
}

/// Per-sample rates of the writer after the warm-up, in order.
fn writer_rates(r: &RunReport) -> Vec<f64> {
    let writers: Vec<usize> = r
        .series
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, name)| {
            r.tasks
                .iter()
                .any(|t| &t.name == *name && t.group == "writer")
        })
        .map(|(i, _)| i)
        .collect();
    r.series
        .points
        .iter()
        .filter(|p| p.t_s >= r.summary_from_s && writers.contains(&p.task))
        .map(|p| p.progress_per_s)
        .collect()
}

/// BATCH / OTHER writer bytes/s of each sample interval, the n-th of one run against
/// the n-th of the other.
pub(super) fn batch_ratio(other: &RunReport, batch: &RunReport) -> Noise {
    let ratios = paired_ratios(&writer_rates(batch), &writer_rates(other));
    Noise::repeats(
        "x",
        "BATCH / OTHER writer bytes/s of each sample interval, paired in order",
        ratios,
    )
}

/// `b[i] / o[i]` for every pair whose `o[i]` is above 0.
fn paired_ratios(b: &[f64], o: &[f64]) -> Vec<f64> {
    b.iter()
        .zip(o)
        .filter(|(_, o)| **o > 0.0)
        .map(|(b, o)| b / o)
        .collect()
}

/// The fairness error (%) of each sample interval after the warm-up: each covers a
/// fraction of the run, so they spread wider than the whole run's error does.
pub(super) fn fairness(r: &RunReport) -> Noise {
    let ideal_of = |task: usize| {
        let name = r.series.tasks.get(task)?;
        r.tasks.iter().find(|t| &t.name == name)?.ideal_share
    };
    let points: Vec<(f64, f64, Option<f64>)> = r
        .series
        .points
        .iter()
        .filter(|p| p.t_s >= r.summary_from_s)
        .map(|p| (p.t_s, p.cpu_share, ideal_of(p.task)))
        .collect();
    Noise::repeats(
        "%",
        "fairness error of each sample interval (a shorter window than the run's)",
        interval_errors(&points),
    )
}

/// The fairness error (%) of each run of points with the same time: (t_s, CPU share,
/// ideal share; None for a task outside the ladder).
fn interval_errors(points: &[(f64, f64, Option<f64>)]) -> Vec<f64> {
    let mut errors = Vec::new();
    let mut i = 0;
    while i < points.len() {
        let t = points[i].0;
        let (mut measured, mut ideal) = (Vec::new(), Vec::new());
        while i < points.len() && points[i].0 == t {
            if let (share, Some(want)) = (points[i].1, points[i].2) {
                measured.push(share);
                ideal.push(want);
            }
            i += 1;
        }
        if !measured.is_empty() {
            errors.push(fairness_error(&measured, &ideal) * 100.0);
        }
    }
    errors
}

/// The tick rate assumed when the kernel's config is unreadable: the coarsest common
/// one, so the tolerance errs wide.
const ASSUMED_HZ: u32 = 100;

/// One measurement over whole RT periods: the kernel accounts RT runtime per tick, so
/// each period's throttle may land a tick either way; two ticks per period is honest.
pub(super) fn fifo_share(period_us: f64) -> Noise {
    let hz = crate::report::meta::tick_hz().unwrap_or(ASSUMED_HZ);
    let tick_s = 1.0 / f64::from(hz.max(1));
    let period_s = if period_us > 0.0 {
        period_us / 1e6
    } else {
        1.0
    };
    Noise::single(
        "% of a CPU",
        &format!(
            "one run: two scheduler ticks ({} Hz) per RT period of {:.0} ms, the granularity of RT throttling",
            hz,
            period_s * 1e3
        ),
        2.0 * tick_s / period_s * 100.0,
    )
}

/// The spread across CPUs (%) of each round of pinned spins.
pub(super) fn speed(spin: &SpinRates) -> Noise {
    let rounds = spin.per_cpu_s.iter().map(Vec::len).min().unwrap_or(0);
    let spreads = (0..rounds)
        .map(|k| {
            let round: Vec<f64> = spin.per_cpu_s.iter().map(|r| r[k]).collect();
            verdict::spread(&round) * 100.0
        })
        .collect();
    Noise::repeats("% spread", "spread across CPUs of each round", spreads)
}

/// How many knobs can be written: a count, exact.
pub(super) fn knobs() -> Noise {
    Noise::single(
        "writable",
        "a count of the machine's writable knobs: exact, any change is real",
        0.0,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speed_spread_is_per_round() {
        let spin = SpinRates {
            per_cpu_s: vec![vec![100.0, 100.0], vec![90.0, 100.0]],
            per_wall_s: Vec::new(),
        };
        let n = speed(&spin);
        assert_eq!(n.repeats.len(), 2);
        assert!((n.repeats[0] - 10.0).abs() < 1e-9, "{:?}", n.repeats);
        assert!(n.repeats[1].abs() < 1e-9);
    }

    #[test]
    fn batch_ratios_pair_intervals_in_order_and_skip_empty_ones() {
        assert_eq!(
            paired_ratios(&[2.0, 4.0, 6.0, 8.0], &[1.0, 2.0, 0.0]),
            vec![2.0, 2.0]
        );
    }

    #[test]
    fn fairness_error_per_interval() {
        // 0.2 s: the ideal split; 0.4 s: 0.8/0.2 where 0.5/0.5 was due, so 0.3 of the
        // CPU time (half of |0.3| + |-0.3|) went to the wrong task: 30 %. The
        // unladdered task (no ideal share) does not count.
        let points = [
            (0.2, 0.5, Some(0.5)),
            (0.2, 0.5, Some(0.5)),
            (0.2, 0.9, None),
            (0.4, 0.8, Some(0.5)),
            (0.4, 0.2, Some(0.5)),
        ];
        let e = interval_errors(&points);
        assert_eq!(e.len(), 2);
        assert!(e[0].abs() < 1e-9 && (e[1] - 30.0).abs() < 1e-9, "{e:?}");
    }

    #[test]
    fn fifo_share_tolerance_is_two_ticks_per_period() {
        let n = fifo_share(1_000_000.0);
        let hz = crate::report::meta::tick_hz().unwrap_or(ASSUMED_HZ);
        // 2 ticks of 1/hz s in 1 s, as a percentage.
        let want = 200.0 / f64::from(hz);
        assert!((n.tolerance.unwrap_or(-1.0) - want).abs() < 1e-9);
        assert!(n.repeats.is_empty());
    }
}
