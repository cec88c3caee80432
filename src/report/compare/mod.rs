//! What `schedlab compare` reports: each metric on both sides, B/A per round, built from the runs.

mod render;
#[cfg(test)]
mod tests;

use std::collections::BTreeSet;

use serde::Serialize;

use crate::preset::setting::Setting;
use crate::report::RunReport;

pub use render::{display_unit, ratio_text, render, short};

/// Min, median and max of one metric on one side, and every value in run order.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Stats {
    pub min: f64,
    pub median: f64,
    pub max: f64,
    pub values: Vec<f64>,
}

/// One metric on both sides.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct MetricStats {
    pub name: String,
    pub unit: String,
    pub a: Stats,
    pub b: Stats,
    /// B_i / A_i for each round that has both (see [`ratios`] for a zero A).
    pub ratios: Vec<f64>,
    /// The round (from 1) each of `ratios` comes from: a round missing a side, or with
    /// a zero A, has none, so positions and rounds can differ.
    pub ratio_rounds: Vec<usize>,
    /// Median of `ratios`; 0 when there is none.
    pub ratio_median: f64,
    /// Rounds (from 1) whose B/A lies more than 25 % from the median of the others: the
    /// machine (or the kernel) was in another regime then.
    pub outlier_rounds: Vec<usize>,
}

/// A round's ratio this far (as a factor) from the median counts as another regime.
pub const REGIME_FACTOR: f64 = 1.25;

/// Rounds (from 1) whose ratio is more than [`REGIME_FACTOR`] away from the median of
/// all rounds; needs three rounds to say which side of a split is the odd one.
pub fn outliers(ratios: &[f64]) -> Vec<usize> {
    if ratios.len() < 3 {
        return Vec::new();
    }
    let median = stats(ratios).median;
    if median <= 0.0 {
        return Vec::new();
    }
    ratios
        .iter()
        .enumerate()
        .filter(|(_, &r)| r <= 0.0 || (r / median).ln().abs() > REGIME_FACTOR.ln())
        .map(|(i, _)| i + 1)
        .collect()
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CompareReport {
    pub preset: String,
    pub kernel: String,
    pub cpus: usize,
    /// Side A's settings as given (`writer.policy=other`), plus the current value of a
    /// system knob that only side B sets.
    pub a: Vec<String>,
    pub b: Vec<String>,
    /// Rounds with both an A and a B run.
    pub rounds: usize,
    /// Length of each run as asked for.
    pub duration_s: f64,
    pub metrics: Vec<MetricStats>,
    /// Settings the kernel refused in any run, foreign load, regimes: each once.
    pub warnings: Vec<String>,
    /// Runs in which a setting that defines the experiment was refused.
    pub partial_runs: usize,
    /// Runs during which other programs took more than the limit of the CPUs.
    pub foreign_load_runs: usize,
    pub interrupted: bool,
}

/// Min, median and max of `values`; the median of an even count is the mean of the two
/// middle values. An empty list gives zeros (and no values).
pub fn stats(values: &[f64]) -> Stats {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    let median = match n {
        0 => 0.0,
        _ if n % 2 == 1 => sorted[n / 2],
        _ => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
    };
    Stats {
        min: sorted.first().copied().unwrap_or(0.0),
        median,
        max: sorted.last().copied().unwrap_or(0.0),
        values: values.to_vec(),
    }
}

/// B_i / A_i for the pairs (a_i, b_i) in order. A zero A has no finite ratio: 0/0 counts
/// as 1 (nothing changed) and x/0 is left out, so the list may be shorter than the
/// pairs but never holds NaN or infinity (JSON has neither).
pub fn ratios(a: &[f64], b: &[f64]) -> Vec<f64> {
    a.iter().zip(b).filter_map(|(&a, &b)| ratio(a, b)).collect()
}

/// B/A, or none for x/0 (0/0 is 1).
fn ratio(a: f64, b: f64) -> Option<f64> {
    if a == 0.0 && b == 0.0 {
        Some(1.0)
    } else {
        Some(b / a).filter(|r| r.is_finite())
    }
}

/// Name, unit and value of every number a run is compared by.
fn metrics_of(r: &RunReport) -> Vec<(String, String, f64)> {
    let m = &r.metrics;
    let h = &m.headline;
    let group = &h.task;
    let mut out = Vec::new();
    // The headline repeats the throughput or the p50 latency; each number appears once.
    match h.kind.as_str() {
        "throughput" => out.push((format!("{group} throughput"), h.unit.clone(), h.value)),
        "latency" => out.push((format!("{group} latency p50"), h.unit.clone(), h.value)),
        "share" => out.push((format!("{group} CPU share"), "%".into(), h.value * 100.0)),
        "fairness" => out.push((
            format!("{group} fairness error"),
            "%".into(),
            h.value * 100.0,
        )),
        kind => out.push((format!("{group} {kind}"), h.unit.clone(), h.value)),
    }
    if h.kind != "throughput" && !m.throughput_unit.is_empty() {
        out.push((
            format!("{group} throughput"),
            format!("{}/s", m.throughput_unit),
            m.throughput_per_s,
        ));
    }
    if let Some(l) = &m.latency {
        if h.kind != "latency" {
            out.push(("latency p50".into(), "ns".into(), l.p50 as f64));
        }
        out.push(("latency p99".into(), "ns".into(), l.p99 as f64));
    }
    for t in &r.tasks {
        let name = format!("{} CPU share", t.name);
        // A group of one task has the task's name: its share headline is this number.
        if !out.iter().any(|(n, _, _)| *n == name) {
            out.push((name, "%".into(), t.cpu_share * 100.0));
        }
    }
    let switches: f64 = r
        .tasks
        .iter()
        .filter(|t| &t.group == group)
        .map(|t| t.switches_per_s)
        .sum();
    out.push((format!("{group} switches"), "switches/s".into(), switches));
    out
}

/// Name, unit and value of each metric of one run, in [`metrics_of`] order.
pub type RunMetrics = Vec<(String, String, f64)>;

/// Side A's and side B's run of one round; `None` for a run that did not complete.
pub type Round = [Option<RunMetrics>; 2];

/// What the runs of a comparison left, before the metrics are set side by side.
#[derive(Default)]
pub struct Runs {
    /// Every round begun, in run order, with the runs it completed.
    pub rounds: Vec<Round>,
    /// A run was stopped: the comparison ended in its round.
    pub interrupted: bool,
    warnings: Vec<String>,
    kernel: Option<String>,
    cpus: Option<usize>,
    partial_runs: usize,
    foreign_load_runs: usize,
}

/// What a comparison ran, as its report names it.
pub struct Compared<'a> {
    pub preset: &'a str,
    /// Each side's settings, completed with the other side's system knobs.
    pub a: &'a [Setting],
    pub b: &'a [Setting],
    /// Length of each run as asked for.
    pub duration_s: f64,
}

impl Runs {
    /// Keeps what the report needs of a completed run; the kernel and CPU count of the
    /// first one stand for all (they cannot change between runs).
    pub fn record(&mut self, r: &RunReport) -> RunMetrics {
        self.kernel.get_or_insert_with(|| r.kernel.clone());
        self.cpus.get_or_insert(r.cpus);
        self.warnings.extend(r.warnings.iter().cloned());
        self.partial_runs += usize::from(r.partial);
        self.foreign_load_runs += usize::from(r.foreign_load);
        metrics_of(r)
    }

    /// Rounds with both an A and a B run.
    fn complete(&self) -> usize {
        self.rounds
            .iter()
            .filter(|r| r[0].is_some() && r[1].is_some())
            .count()
    }

    /// The report of these runs. `machine` gives the kernel release and CPU count when
    /// no run completed to report its own.
    pub fn into_report(
        mut self,
        compared: &Compared<'_>,
        machine: impl FnOnce() -> (String, usize),
    ) -> CompareReport {
        let metrics = metric_stats(&self.rounds);
        self.warnings.extend(regime_warnings(&metrics));
        dedup(&mut self.warnings);
        let rounds = self.complete();
        let (kernel, cpus) = match (self.kernel, self.cpus) {
            (Some(kernel), Some(cpus)) => (kernel, cpus),
            _ => machine(),
        };
        CompareReport {
            preset: compared.preset.to_string(),
            kernel,
            cpus,
            a: compared.a.iter().map(Setting::to_string).collect(),
            b: compared.b.iter().map(Setting::to_string).collect(),
            rounds,
            duration_s: compared.duration_s,
            metrics,
            warnings: self.warnings,
            partial_runs: self.partial_runs,
            foreign_load_runs: self.foreign_load_runs,
            interrupted: self.interrupted,
        }
    }
}

/// Every metric any run has, in the order the runs first name them, on both sides.
fn metric_stats(rounds: &[Round]) -> Vec<MetricStats> {
    let mut names: Vec<(String, String)> = Vec::new();
    for (name, unit, _) in rounds.iter().flatten().flatten().flatten() {
        if !names.iter().any(|(n, _)| n == name) {
            names.push((name.clone(), unit.clone()));
        }
    }
    names
        .into_iter()
        .map(|(name, unit)| metric_across_rounds(rounds, name, unit))
        .collect()
}

/// One metric over the rounds. The ratios pair only rounds where both sides have it, so
/// a missing run does not shift B's values against A's.
fn metric_across_rounds(rounds: &[Round], name: String, unit: String) -> MetricStats {
    let value = |run: &Option<RunMetrics>| {
        run.as_ref()
            .and_then(|m| m.iter().find(|(n, _, _)| *n == name).map(|(_, _, v)| *v))
    };
    let a: Vec<f64> = rounds.iter().filter_map(|r| value(&r[0])).collect();
    let b: Vec<f64> = rounds.iter().filter_map(|r| value(&r[1])).collect();
    let paired: Vec<(usize, f64, f64)> = rounds
        .iter()
        .enumerate()
        .filter_map(|(i, r)| Some((i + 1, value(&r[0])?, value(&r[1])?)))
        .collect();
    let ratio_rounds: Vec<usize> = paired
        .iter()
        .filter(|&&(_, a, b)| ratio(a, b).is_some())
        .map(|&(i, _, _)| i)
        .collect();
    let (pa, pb): (Vec<f64>, Vec<f64>) = paired.iter().map(|&(_, a, b)| (a, b)).unzip();
    let ratios = ratios(&pa, &pb);
    MetricStats {
        ratio_median: stats(&ratios).median,
        outlier_rounds: outliers(&ratios)
            .into_iter()
            .filter_map(|p| ratio_rounds.get(p - 1).copied())
            .collect(),
        ratios,
        ratio_rounds,
        a: stats(&a),
        b: stats(&b),
        name,
        unit,
    }
}

/// A warning for each metric whose rounds split into regimes, naming the odd rounds.
fn regime_warnings(metrics: &[MetricStats]) -> Vec<String> {
    metrics
        .iter()
        .filter(|m| !m.outlier_rounds.is_empty())
        .map(|m| {
            let which: Vec<String> = m
                .outlier_rounds
                .iter()
                .filter_map(|&r| {
                    let at = m.ratio_rounds.iter().position(|&x| x == r)?;
                    Some(format!("round {r} ({})", ratio_text(m.ratios[at])))
                })
                .collect();
            format!(
                "{}: the rounds split into regimes: B/A of {} is more than 25 % from the median {} (every round is shown)",
                m.name,
                which.join(", "),
                ratio_text(m.ratio_median)
            )
        })
        .collect()
}

/// Every run repeats the same refusals and load warnings; each is worth saying once.
fn dedup(warnings: &mut Vec<String>) {
    let mut seen = BTreeSet::new();
    warnings.retain(|w| seen.insert(w.clone()));
}
