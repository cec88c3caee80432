//! `schedlab compare`: run a preset with settings A and B in turns (A B A B ...) and compare the numbers.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{anyhow, Result};
use serde::Serialize;

use crate::error::Invalid;
use crate::headless::run::{run, RunOptions};
use crate::knob::sys::SysKnob;
use crate::knob::sys::SystemKnobs;
use crate::lab::session::split;
use crate::preset::setting::{parse_list, Setting};
use crate::preset::Preset;
use crate::report::RunReport;

/// One side of a comparison: its label ("A") and the settings it runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct Side {
    pub label: String,
    pub settings: Vec<Setting>,
}

impl Side {
    /// A side from `--a`/`--b` text: settings in the `--set` syntax, comma-separated.
    pub fn parse(label: &str, list: &str) -> Result<Side, Invalid> {
        Ok(Side {
            label: label.to_string(),
            settings: parse_list(list)
                .map_err(|e| Invalid(format!("--{}: {e}", label.to_lowercase())))?,
        })
    }
}

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

/// The preset and run options of one side: task and cgroup settings change the preset,
/// system settings go after the `--set` ones so the side's value wins.
pub fn prepare_side(
    preset: &Preset,
    opts: &RunOptions,
    settings: &[Setting],
) -> Result<(Preset, RunOptions), Invalid> {
    let (task_sets, system_sets) = split(settings)?;
    let mut p = preset.clone();
    p.apply_all(&task_sets)?;
    p.tasks(&crate::system::online_cpus())?;
    let mut o = opts.clone();
    o.system_sets.extend(system_sets);
    // Every run would write the same file over the one before.
    o.csv = None;
    o.record = None;
    Ok((p, o))
}

/// A system knob set on one side only would keep that value in the other side's runs
/// (the journal restores it only at the end), so the other side gets the value the knob
/// has now, before any run.
fn complete_system_sets(
    a: &[Setting],
    b: &[Setting],
    sys: &SystemKnobs,
) -> Result<(Vec<Setting>, Vec<Setting>)> {
    let (_, sys_a) = split(a).map_err(|e| anyhow!("--a: {e}"))?;
    let (_, sys_b) = split(b).map_err(|e| anyhow!("--b: {e}"))?;
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    fill_missing(&sys_a, &sys_b, &mut b, "--b", sys)?;
    fill_missing(&sys_b, &sys_a, &mut a, "--a", sys)?;
    Ok((a, b))
}

fn fill_missing(
    from: &[(SysKnob, Setting)],
    present: &[(SysKnob, Setting)],
    to: &mut Vec<Setting>,
    to_label: &str,
    sys: &SystemKnobs,
) -> Result<()> {
    for (knob, setting) in from {
        if present.iter().any(|(k, _)| k == knob) {
            continue;
        }
        let now = crate::knob::sys::get(knob, &sys.probe).map_err(|e| {
            anyhow!(
                "{setting} is set on one side only and its current value cannot be read ({e}); give {} on {to_label} too",
                knob.name()
            )
        })?;
        to.push(Setting {
            value: now,
            ..setting.clone()
        });
    }
    Ok(())
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
type RunMetrics = Vec<(String, String, f64)>;

/// Side A's and side B's run of one round; `None` for a run that did not complete.
type Round = [Option<RunMetrics>; 2];

/// What the runs of a comparison left, before the metrics are set side by side.
#[derive(Default)]
struct Runs {
    rounds: Vec<Round>,
    warnings: Vec<String>,
    kernel: Option<String>,
    cpus: Option<usize>,
    interrupted: bool,
    partial_runs: usize,
    foreign_load_runs: usize,
}

impl Runs {
    /// Keeps what the report needs of a completed run; the kernel and CPU count of the
    /// first one stand for all (they cannot change between runs).
    fn record(&mut self, r: &RunReport) -> RunMetrics {
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
}

/// Run `preset` with settings `a`, then `b`, `rounds` times, so that drift of the machine
/// hits both sides alike. A run cut short by `opts.stop` is left out (it covers a shorter
/// time than its partner) and ends the comparison.
pub fn compare(
    preset: &Preset,
    a: &[Setting],
    b: &[Setting],
    rounds: usize,
    opts: &RunOptions,
    sys: &mut SystemKnobs,
) -> Result<CompareReport> {
    if rounds == 0 {
        anyhow::bail!("rounds 0: allowed at least 1");
    }
    let (a_full, b_full) = complete_system_sets(a, b, sys)?;
    let sides = [
        prepare_side(preset, opts, &a_full).map_err(|e| anyhow!("--a: {e}"))?,
        prepare_side(preset, opts, &b_full).map_err(|e| anyhow!("--b: {e}"))?,
    ];
    let mut runs = run_rounds(&sides, rounds, &opts.stop, sys)?;
    let metrics = metric_stats(&runs.rounds);
    runs.warnings.extend(regime_warnings(&metrics));
    dedup(&mut runs.warnings);
    Ok(CompareReport {
        preset: preset.name.clone(),
        kernel: runs
            .kernel
            .take()
            .unwrap_or_else(crate::system::kernel_release),
        cpus: runs
            .cpus
            .unwrap_or_else(|| crate::system::online_cpus().count()),
        a: a_full.iter().map(Setting::to_string).collect(),
        b: b_full.iter().map(Setting::to_string).collect(),
        rounds: runs.complete(),
        duration_s: opts.duration.as_secs_f64(),
        metrics,
        warnings: runs.warnings,
        partial_runs: runs.partial_runs,
        foreign_load_runs: runs.foreign_load_runs,
        interrupted: runs.interrupted,
    })
}

/// A B, A B, ... until `rounds` rounds are done or a run is stopped; the round a stop
/// falls in is kept with the runs it completed.
fn run_rounds(
    sides: &[(Preset, RunOptions); 2],
    rounds: usize,
    stop: &AtomicBool,
    sys: &mut SystemKnobs,
) -> Result<Runs> {
    let mut runs = Runs::default();
    let progress = crate::report::progress::steps("compare", 2 * rounds as u64, true);
    for n in 0..rounds {
        let mut round: Round = [None, None];
        for (slot, ((p, o), side)) in round.iter_mut().zip(sides.iter().zip(["A", "B"])) {
            progress.set_message(format!("round {} {side}", n + 1));
            let result = run_unless_stopped(p, o, stop, sys);
            progress.inc(1);
            match result? {
                Some(r) => *slot = Some(runs.record(&r)),
                None => runs.interrupted = true,
            }
            if runs.interrupted {
                break;
            }
        }
        runs.rounds.push(round);
        if runs.interrupted {
            break;
        }
    }
    Ok(runs)
}

/// One run, or `None` if the user stopped the comparison before or during it.
fn run_unless_stopped(
    p: &Preset,
    o: &RunOptions,
    stop: &AtomicBool,
    sys: &mut SystemKnobs,
) -> Result<Option<RunReport>> {
    if stop.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let r = run(p, o, sys)?;
    Ok(Some(r).filter(|r| !r.interrupted))
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

/// How values in `unit` are shown, given the largest of them: (divide by, unit shown).
/// Bytes per second are scaled in one family (kB/s, MB/s, GB/s) like everywhere else.
pub fn display_unit(unit: &str, max_abs: f64) -> (f64, String) {
    match unit {
        "bytes/s" => {
            let (div, shown) = crate::report::bytes_unit(max_abs);
            (div, shown.into())
        }
        "ns" if max_abs >= 1e6 => (1e6, "ms".into()),
        "ns" if max_abs >= 1e3 => (1e3, "us".into()),
        "%" | "ns" => (1.0, unit.into()),
        u if max_abs >= 1e9 => (1e9, format!("G {u}")),
        u if max_abs >= 1e6 => (1e6, format!("M {u}")),
        u if max_abs >= 1e4 => (1e3, format!("k {u}")),
        u => (1.0, u.into()),
    }
}

/// Three significant digits or so, without exponent.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

/// A ratio with two significant digits at least: `2.43`, `0.66`, `0.0016`.
pub fn ratio_text(r: f64) -> String {
    if r == 0.0 || r >= 0.1 || !r.is_finite() {
        format!("{r:.2}")
    } else {
        let digits = (-r.log10()).ceil() as usize + 1;
        format!("{r:.digits$}")
    }
}

/// The comparison as a table: a row per metric, both sides' min/median/max, the ratio
/// of each round and their median.
pub fn render(r: &CompareReport) -> String {
    let mut out = render_heading(r);
    let mut rows: Vec<Vec<String>> = vec![TABLE_HEADER.iter().map(|h| h.to_string()).collect()];
    rows.extend(r.metrics.iter().map(metric_row));
    out.push_str(&crate::report::align(&rows, |c| {
        c < 2 || c == PER_ROUND_COLUMN
    }));
    out.push_str(&render_warnings(r));
    out
}

const TABLE_HEADER: [&str; 10] = [
    "METRIC",
    "UNIT",
    "A MIN",
    "A MEDIAN",
    "A MAX",
    "B MIN",
    "B MEDIAN",
    "B MAX",
    "B/A PER ROUND",
    "B/A",
];

/// Left-aligned like the names: it holds a list of ratios, not one number.
const PER_ROUND_COLUMN: usize = 8;

/// What was compared, where, and how long: the line that says what the numbers mean.
fn render_heading(r: &CompareReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "compare {} on Linux {} ({}): {} of A then B, {:.1} s each{}",
        r.preset,
        r.kernel,
        crate::report::counted(r.cpus as u64, "CPU"),
        crate::report::counted(r.rounds as u64, "round"),
        r.duration_s,
        if r.interrupted { " (interrupted)" } else { "" }
    );
    let side = |s: &[String]| {
        if s.is_empty() {
            "(preset as is)".to_string()
        } else {
            s.join(",")
        }
    };
    let _ = writeln!(out, "A: {}", side(&r.a));
    let _ = writeln!(out, "B: {}", side(&r.b));
    out
}

/// One metric's cells, both sides in one display unit so they can be read against
/// each other.
fn metric_row(m: &MetricStats) -> Vec<String> {
    let max = m.a.max.abs().max(m.b.max.abs());
    let (div, unit) = display_unit(&m.unit, max);
    let v = |s: &Stats, x: f64| {
        if s.values.is_empty() {
            "-".to_string()
        } else {
            short(x / div)
        }
    };
    vec![
        m.name.clone(),
        unit,
        v(&m.a, m.a.min),
        v(&m.a, m.a.median),
        v(&m.a, m.a.max),
        v(&m.b, m.b.min),
        v(&m.b, m.b.median),
        v(&m.b, m.b.max),
        per_round_ratios(m),
        if m.ratios.is_empty() {
            "-".into()
        } else {
            format!("{}x", ratio_text(m.ratio_median))
        },
    ]
}

/// Each round's B/A; an odd round is starred: the warning below says which regime it
/// was in.
fn per_round_ratios(m: &MetricStats) -> String {
    if m.ratios.is_empty() {
        return "-".into();
    }
    let per_round: Vec<String> = m
        .ratios
        .iter()
        .enumerate()
        .map(|(i, &x)| {
            let star = if m
                .ratio_rounds
                .get(i)
                .is_some_and(|r| m.outlier_rounds.contains(r))
            {
                "*"
            } else {
                ""
            };
            format!("{}{star}", ratio_text(x))
        })
        .collect();
    per_round.join(" ")
}

/// The warnings, then the verdict if some runs were not the experiment the preset
/// describes: the numbers above still include them.
fn render_warnings(r: &CompareReport) -> String {
    let mut out = String::new();
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    if r.partial_runs > 0 || r.foreign_load_runs > 0 {
        let _ = writeln!(
            out,
            "=> NOT THE EXPERIMENT in {} of the runs ({} with a refused setting, {} under foreign load)",
            r.partial_runs.max(r.foreign_load_runs),
            r.partial_runs,
            r.foreign_load_runs
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_of_odd_even_and_single_counts() {
        let s = stats(&[3.0, 1.0, 2.0]);
        assert_eq!((s.min, s.median, s.max), (1.0, 2.0, 3.0));
        assert_eq!(s.values, vec![3.0, 1.0, 2.0], "values stay in run order");
        let s = stats(&[4.0, 1.0, 3.0, 2.0]);
        assert_eq!((s.min, s.median, s.max), (1.0, 2.5, 4.0));
        let s = stats(&[7.5]);
        assert_eq!((s.min, s.median, s.max), (7.5, 7.5, 7.5));
        let s = stats(&[]);
        assert_eq!((s.min, s.median, s.max), (0.0, 0.0, 0.0));
        assert!(s.values.is_empty());
    }

    #[test]
    fn ratios_pair_in_order_and_skip_a_zero_a() {
        assert_eq!(ratios(&[2.0, 4.0], &[5.0, 2.0]), vec![2.5, 0.5]);
        assert_eq!(ratios(&[10.0], &[25.0]), vec![2.5]);
        // 0/0 is no change; x/0 has no finite ratio and is left out.
        assert_eq!(ratios(&[0.0, 0.0, 1.0], &[0.0, 3.0, 2.0]), vec![1.0, 2.0]);
        assert!(ratios(&[0.0], &[1.0]).is_empty());
        // Unequal lengths pair up to the shorter.
        assert_eq!(ratios(&[1.0, 1.0, 1.0], &[2.0]), vec![2.0]);
        assert!(ratios(&[1.0, 0.0], &[f64::NAN, 1.0])
            .iter()
            .all(|r| r.is_finite()));
    }

    #[test]
    fn a_round_far_from_the_others_is_another_regime() {
        // pipe-wakeup's slow BATCH regime: one round at 0.4x where the rest are 2.2x.
        assert_eq!(outliers(&[2.21, 0.40, 2.43, 2.21]), vec![2]);
        // Within 25 % of the median is one regime.
        assert!(outliers(&[2.0, 2.4, 1.7]).is_empty());
        // Two rounds cannot say which one is odd.
        assert!(outliers(&[1.0, 3.0]).is_empty());
    }

    #[test]
    fn display_units() {
        assert_eq!(display_unit("bytes/s", 5e7), (1e6, "MB/s".to_string()));
        assert_eq!(display_unit("ns", 1800.0), (1e3, "us".to_string()));
        assert_eq!(display_unit("ns", 2e6), (1e6, "ms".to_string()));
        assert_eq!(display_unit("%", 63.0), (1.0, "%".to_string()));
        assert_eq!(
            display_unit("switches/s", 83_000.0),
            (1e3, "k switches/s".to_string())
        );
        assert_eq!(display_unit("loops/s", 450.0), (1.0, "loops/s".to_string()));
        assert_eq!(short(21.456), "21.5");
        assert_eq!(short(0.0), "0");
        assert_eq!(short(1234.4), "1234");
        assert_eq!(ratio_text(2.434), "2.43");
        assert_eq!(ratio_text(0.0016), "0.0016");
        assert_eq!(ratio_text(0.05), "0.050");
        assert_eq!(ratio_text(0.0), "0.00");
    }

    fn synthetic() -> CompareReport {
        let metric = |name: &str, unit: &str, a: &[f64], b: &[f64]| {
            let r = ratios(a, b);
            MetricStats {
                name: name.into(),
                unit: unit.into(),
                a: stats(a),
                b: stats(b),
                ratio_median: stats(&r).median,
                outlier_rounds: outliers(&r),
                ratio_rounds: (1..=r.len()).collect(),
                ratios: r,
            }
        };
        CompareReport {
            preset: "pipe-wakeup".into(),
            kernel: "6.18.44".into(),
            cpus: 2,
            a: vec!["writer.policy=other".into()],
            b: vec!["writer.policy=batch".into(), "reader.policy=batch".into()],
            rounds: 2,
            duration_s: 3.0,
            metrics: vec![
                metric(
                    "writer throughput",
                    "bytes/s",
                    &[21.4e6, 21.6e6],
                    &[52.0e6, 54.0e6],
                ),
                metric("reader CPU share", "%", &[36.0, 35.0], &[2.0, 3.0]),
                metric(
                    "writer switches",
                    "switches/s",
                    &[0.0, 83_000.0],
                    &[130.0, 0.0],
                ),
            ],
            warnings: vec!["reader: something refused; running without it".into()],
            partial_runs: 0,
            foreign_load_runs: 0,
            interrupted: false,
        }
    }

    #[test]
    fn render_has_a_row_per_metric_with_units_and_ratios() {
        let text = render(&synthetic());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("compare pipe-wakeup on Linux 6.18.44 (2 CPUs): 2 rounds"));
        assert_eq!(lines[1], "A: writer.policy=other");
        assert_eq!(lines[2], "B: writer.policy=batch,reader.policy=batch");
        assert!(lines[3].starts_with("METRIC"), "{text}");
        let tp = lines[4];
        assert!(tp.starts_with("writer throughput"), "{text}");
        for cell in [
            "MB/s",
            "21.4",
            "21.5",
            "21.6",
            "52.0",
            "53.0",
            "54.0",
            "2.43 2.50",
            "2.46x",
        ] {
            assert!(tp.contains(cell), "{cell} missing from {tp}");
        }
        assert!(
            lines[5].contains("0.056 0.086") && lines[5].ends_with("0.071x"),
            "{text}"
        );
        // 0 -> 130 has no ratio, 83k -> 0 is 0.
        assert!(lines[6].contains("k switches/s"), "{text}");
        assert!(
            lines[6].ends_with("0.00x") && !lines[6].contains("inf"),
            "{text}"
        );
        assert!(text.ends_with("warning: reader: something refused; running without it\n"));
        // Columns line up: the last one is right-aligned, so every row is as long.
        let lens: BTreeSet<usize> = lines[3..7].iter().map(|l| l.chars().count()).collect();
        assert_eq!(lens.len(), 1, "{text}");
    }

    #[test]
    fn render_marks_odd_rounds_interruption_and_runs_that_are_not_the_experiment() {
        let mut r = synthetic();
        r.rounds = 1;
        r.interrupted = true;
        r.a.clear();
        r.partial_runs = 1;
        r.foreign_load_runs = 2;
        let rs = ratios(&[1.0; 4], &[2.21, 0.40, 2.43, 2.21]);
        r.metrics = vec![MetricStats {
            name: "writer throughput".into(),
            unit: "loops/s".into(),
            a: stats(&[1.0; 4]),
            b: stats(&[2.21, 0.40, 2.43, 2.21]),
            ratio_median: stats(&rs).median,
            outlier_rounds: outliers(&rs),
            ratio_rounds: (1..=rs.len()).collect(),
            ratios: rs,
        }];
        let text = render(&r);
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines[0].contains(": 1 round of A then B, 3.0 s each (interrupted)"),
            "{text}"
        );
        assert_eq!(lines[1], "A: (preset as is)");
        assert!(lines[4].contains("2.21 0.40* 2.43 2.21"), "{text}");
        assert!(lines[4].ends_with("2.21x"), "{text}");
        assert_eq!(
            lines.last().copied(),
            Some("=> NOT THE EXPERIMENT in 2 of the runs (1 with a refused setting, 2 under foreign load)")
        );
    }

    /// A run's metrics as [`metrics_of`] gives them.
    fn run(metrics: &[(&str, &str, f64)]) -> Option<RunMetrics> {
        Some(
            metrics
                .iter()
                .map(|(n, u, v)| (n.to_string(), u.to_string(), *v))
                .collect(),
        )
    }

    #[test]
    fn rounds_become_medians_and_ratios_of_the_rounds_both_sides_have() {
        // Three rounds; round 2's B run lacks the share metric (its task exited early),
        // round 3's B run did not complete (the comparison was stopped in it).
        let rounds: Vec<Round> = vec![
            [
                run(&[("tput", "loops/s", 20.0), ("share", "%", 50.0)]),
                run(&[("tput", "loops/s", 50.0), ("share", "%", 10.0)]),
            ],
            [
                run(&[("tput", "loops/s", 25.0), ("share", "%", 40.0)]),
                run(&[("tput", "loops/s", 55.0)]),
            ],
            [
                run(&[("tput", "loops/s", 30.0), ("share", "%", 60.0)]),
                None,
            ],
        ];
        let m = metric_stats(&rounds);
        let v = serde_json::to_value(&m).expect("json");
        let close = |v: &serde_json::Value, want: f64| {
            let got = v.as_f64().expect("a number");
            assert!((got - want).abs() < 1e-12, "{got} != {want}");
        };
        // Metrics in the order the runs first name them.
        assert_eq!(v[0]["name"], "tput");
        assert_eq!(v[0]["unit"], "loops/s");
        assert_eq!(v[1]["name"], "share");
        assert_eq!(v.as_array().expect("a list").len(), 2);
        // tput: A 20, 25, 30 (median 25); B 50, 55 (median 52.5, the mean of the two);
        // ratios only where both sides ran: 50/20 = 2.5, 55/25 = 2.2, median 2.35.
        assert_eq!(v[0]["a"]["values"], serde_json::json!([20.0, 25.0, 30.0]));
        close(&v[0]["a"]["min"], 20.0);
        close(&v[0]["a"]["max"], 30.0);
        close(&v[0]["a"]["median"], 25.0);
        assert_eq!(v[0]["b"]["values"], serde_json::json!([50.0, 55.0]));
        close(&v[0]["b"]["median"], 52.5);
        close(&v[0]["ratios"][0], 2.5);
        close(&v[0]["ratios"][1], 2.2);
        assert_eq!(v[0]["ratios"].as_array().map(Vec::len), Some(2));
        close(&v[0]["ratio_median"], (2.5 + 2.2) / 2.0);
        // share: A 50, 40, 60 (median 50); B 10 alone; one pair, 10/50 = 0.2.
        close(&v[1]["a"]["median"], 50.0);
        assert_eq!(v[1]["b"]["values"], serde_json::json!([10.0]));
        close(&v[1]["b"]["median"], 10.0);
        assert_eq!(v[1]["ratios"].as_array().map(Vec::len), Some(1));
        close(&v[1]["ratios"][0], 0.2);
        close(&v[1]["ratio_median"], 0.2);
        // Two ratios cannot make a regime; neither can one.
        assert_eq!(v[0]["outlier_rounds"], serde_json::json!([]));
        assert_eq!(v[1]["outlier_rounds"], serde_json::json!([]));
        assert!(regime_warnings(&m).is_empty());
    }

    /// Rounds of one metric, "tput", from (A, B) values.
    fn tput_rounds(ab: &[(f64, f64)]) -> Vec<Round> {
        ab.iter()
            .map(|&(a, b)| {
                [
                    run(&[("tput", "loops/s", a)]),
                    run(&[("tput", "loops/s", b)]),
                ]
            })
            .collect()
    }

    #[test]
    fn a_round_in_another_regime_is_named_in_a_warning() {
        // B/A per round: 2.0, 2.0, 0.4. The median is 2.0; 0.4 is 5x off it, past the
        // 1.25x that still counts as one regime.
        let rounds = tput_rounds(&[(10.0, 20.0), (20.0, 40.0), (50.0, 20.0)]);
        let m = metric_stats(&rounds);
        assert_eq!(m[0].ratios, [2.0, 2.0, 0.4]);
        assert_eq!(m[0].ratio_median, 2.0);
        assert_eq!(m[0].outlier_rounds, [3]);
        assert_eq!(
            regime_warnings(&m),
            ["tput: the rounds split into regimes: B/A of round 3 (0.40) is more than 25 % from the median 2.00 (every round is shown)"]
        );
        let v = serde_json::to_value(&m[0]).expect("json");
        assert_eq!(v["outlier_rounds"], serde_json::json!([3]));
    }

    #[test]
    fn an_odd_round_is_named_by_its_round_even_after_a_round_without_a_ratio() {
        // Round 1's A is 0 (x/0 has no ratio): the ratios come from rounds 2-5, and the
        // odd one (0.4) is round 5, the fourth ratio.
        let rounds = tput_rounds(&[
            (0.0, 5.0),
            (10.0, 20.0),
            (20.0, 40.0),
            (5.0, 10.0),
            (50.0, 20.0),
        ]);
        let m = metric_stats(&rounds);
        assert_eq!(m[0].ratios, [2.0, 2.0, 2.0, 0.4]);
        assert_eq!(m[0].ratio_rounds, [2, 3, 4, 5]);
        assert_eq!(m[0].outlier_rounds, [5]);
        assert!(
            regime_warnings(&m)[0].contains("round 5 (0.40)"),
            "{:?}",
            regime_warnings(&m)
        );
        assert_eq!(per_round_ratios(&m[0]), "2.00 2.00 2.00 0.40*");
    }

    #[test]
    fn sides_parse_comma_lists() {
        let s = Side::parse("A", "writer.policy=batch,reader.cpus=0,1").unwrap();
        assert_eq!(s.settings.len(), 2);
        assert_eq!(s.settings[1].value, "0,1");
        let e = Side::parse("B", "writer=batch").unwrap_err().0;
        assert!(e.starts_with("--b: bad setting"), "{e}");
    }
}
