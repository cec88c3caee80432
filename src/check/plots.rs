//! PNGs for `schedlab check --plot-dir`: wakeup latency histograms, switch cost and CPU speed.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::histogram::{bucket_bounds, Histogram};
use crate::report::check::CheckReport;

/// Log-linear buckets are SUB per power of two; a quarter of them make one plotted bin, so a
/// curve has 4 points per doubling: smooth enough, and still a histogram on a log axis.
const MERGE: usize = crate::histogram::REPORT_MERGE;

/// Histogram as (latency in µs, % of wakeups) per bin, every bin between the first and
/// the last non-empty one (empty bins as 0 so the curve drops to the axis).
pub fn histogram_curve(h: &Histogram) -> Vec<(f64, f64)> {
    let total: u64 = h.buckets.iter().sum();
    if total == 0 {
        return Vec::new();
    }
    let bins: Vec<(usize, u64)> = h
        .buckets
        .chunks(MERGE)
        .enumerate()
        .map(|(i, c)| (i, c.iter().sum()))
        .collect();
    let first = bins.iter().position(|(_, n)| *n > 0).unwrap_or(0);
    let last = bins.iter().rposition(|(_, n)| *n > 0).unwrap_or(0);
    bins[first..=last]
        .iter()
        .map(|&(i, n)| {
            let lo = bucket_bounds(i * MERGE).0 as f64;
            let hi = bucket_bounds(i * MERGE + MERGE - 1).1 as f64 + 1.0;
            // Geometric middle: the bin's centre on a log axis.
            let mid_us = (lo.max(1.0) * hi).sqrt() / 1e3;
            (mid_us, n as f64 * 100.0 / total as f64)
        })
        .collect()
}

/// A histogram as steps (bin low and high in µs, % of wakeups) with p50, p99 and max:
/// the same quarter-octave bins a run's JSON reports.
pub fn latency_curve(name: &str, h: &Histogram) -> Option<crate::plot::LatencyCurve> {
    let p = h.percentiles()?;
    Some(crate::plot::LatencyCurve::from_buckets(
        name,
        &h.report_buckets(),
        &p,
    ))
}

/// Write the check's plots into `dir` (created if needed); returns the files written.
pub fn write_plots(report: &CheckReport, dir: &Path) -> Result<Vec<PathBuf>> {
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut written = Vec::new();
    let footer = |samples: &str| crate::plot::footer(&report.kernel, report.cpus, samples);
    let wakeups: u64 = report
        .data
        .latency
        .iter()
        .map(|(_, h)| h.buckets.iter().sum::<u64>())
        .sum();
    let curves: Vec<crate::plot::LatencyCurve> = report
        .data
        .latency
        .iter()
        .filter_map(|(name, h)| latency_curve(name, h))
        .collect();
    if !curves.is_empty() {
        let path = dir.join("wakeup_latency.png");
        crate::plot::plot_latency(
            &path,
            "Timer wakeup latency, 1 ms clock_nanosleep (cyclictest)",
            &curves,
            &footer(&crate::format::counted(wakeups, "wakeup")),
        )?;
        written.push(path);
    }
    if !report.data.switch_cost.is_empty() {
        let path = dir.join("switch_cost.png");
        crate::plot::plot_bars_footed(
            &path,
            "Pipe ping-pong (perf bench sched pipe): time per round trip",
            "µs per round trip (bar: whole run; whisker: fastest to slowest tenth of it)",
            &report.data.switch_cost,
            &footer(&format!(
                "{}, each timed in tenths",
                crate::format::counted(report.data.switch_cost.len() as u64, "run")
            )),
        )?;
        written.push(path);
    }
    if !report.data.cpu_speed.is_empty() {
        let path = dir.join("cpu_speed.png");
        crate::plot::plot_bars_footed(
            &path,
            "Pinned spin loop per CPU",
            "M iterations/s (bar: best slice; whisker: slowest to fastest slice)",
            &report.data.cpu_speed,
            &footer(&format!(
                "{} measured",
                crate::format::counted(report.data.cpu_speed.len() as u64, "CPU")
            )),
        )?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curve_covers_the_samples_in_percent() {
        let h = Histogram::from_values([60_000, 61_000, 62_000, 10_000_000]);
        let c = histogram_curve(&h);
        let sum: f64 = c.iter().map(|(_, y)| y).sum();
        assert!((sum - 100.0).abs() < 1e-9);
        assert!(
            c.first().is_some_and(|(x, _)| (50.0..70.0).contains(x)),
            "{c:?}"
        );
        assert!(
            c.last()
                .is_some_and(|(x, _)| (8_000.0..12_000.0).contains(x)),
            "{c:?}"
        );
        assert!(c.windows(2).all(|w| w[0].0 < w[1].0), "x increases");
        assert!(histogram_curve(&Histogram::default()).is_empty());
    }

    #[test]
    fn latency_steps_cover_the_samples_and_mark_percentiles() {
        let h = Histogram::from_values([60_000, 61_000, 62_000, 10_000_000]);
        let c = latency_curve("idle", &h).expect("a curve");
        let sum: f64 = c.bins.iter().map(|b| b.2).sum();
        assert!((sum - 100.0).abs() < 1e-9, "{:?}", c.bins);
        assert!(c.bins.windows(2).all(|w| w[0].1 == w[1].0), "steps touch");
        let names: Vec<&str> = c.marks.iter().map(|m| m.0.as_str()).collect();
        assert_eq!(names, ["p50", "p99", "max"]);
        // p50 is in the 60 µs cluster, max is the 10 ms outlier.
        assert!((50.0..70.0).contains(&c.marks[0].1), "{:?}", c.marks);
        assert!((9_000.0..11_000.0).contains(&c.marks[2].1), "{:?}", c.marks);
        assert!(latency_curve("none", &Histogram::default()).is_none());
    }
}
