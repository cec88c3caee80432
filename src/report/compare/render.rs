//! The comparison as a readable table: units scaled per metric, ratios per round.

use std::fmt::Write as _;

use super::{CompareReport, MetricStats, Stats};

/// How values in `unit` are shown, given the largest of them: (divide by, unit shown).
/// Bytes per second are scaled in one family (kB/s, MB/s, GB/s) like everywhere else.
pub fn display_unit(unit: &str, max_abs: f64) -> (f64, String) {
    match unit {
        "bytes/s" => {
            let (div, shown) = crate::format::bytes_unit(max_abs);
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
        crate::format::counted(r.cpus as u64, "CPU"),
        crate::format::counted(r.rounds as u64, "round"),
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
pub(super) fn per_round_ratios(m: &MetricStats) -> String {
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
