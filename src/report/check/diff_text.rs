//! `check diff` for people: both sides, differing machine facts, one line per finding, the verdict.

use std::fmt::Write as _;

use super::diff::{short, Compared, DiffReport, Moved, Side};
use super::OTHER_LOAD_NOTE;

fn side(s: &Side) -> String {
    let mut out = format!("{} ({}", s.source, s.start_time);
    if !s.host.is_empty() {
        let _ = write!(out, ", host {}", s.host);
    }
    if s.quick {
        out.push_str(", quick");
    }
    if s.other_load_cpus >= OTHER_LOAD_NOTE {
        let _ = write!(out, ", other load {:.1} CPUs", s.other_load_cpus);
    }
    out.push(')');
    out
}

fn value(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_string(), short)
}

fn row(c: &Compared) -> [String; 7] {
    [
        c.verdict.name().to_string(),
        c.title.clone(),
        c.unit.clone(),
        value(c.baseline),
        value(c.current),
        c.ratio
            .map_or_else(|| "-".to_string(), |r| format!("{}x", short(r))),
        if c.verdict == Moved::NotCompared {
            c.reason.clone()
        } else {
            format!(
                "{}; {} is worse",
                c.tolerance,
                c.worse.map_or("-", |w| w.name())
            )
        },
    ]
}

const HEADER: [&str; 7] = [
    "VERDICT",
    "FINDING",
    "UNIT",
    "BASELINE",
    "CURRENT",
    "RATIO",
    "NOISE USED",
];

/// The diff as aligned columns, the differing machine facts, and a closing verdict.
pub fn render_diff(d: &DiffReport) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "check diff");
    let _ = writeln!(out, "baseline: {}", side(&d.baseline));
    let _ = writeln!(out, "current:  {}", side(&d.current));
    if d.machine_differences.is_empty() {
        let _ = writeln!(out, "machine facts: the same");
    }
    for f in &d.machine_differences {
        let _ = writeln!(
            out,
            "machine differs: {}: {} -> {}",
            f.fact, f.baseline, f.current
        );
    }
    let rows: Vec<[String; 7]> = d.findings.iter().map(row).collect();
    let mut w = HEADER.map(|h| h.chars().count());
    for r in &rows {
        for (i, cell) in r.iter().enumerate() {
            w[i] = w[i].max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 7]| {
        let mut l = String::new();
        for (i, cell) in cells.iter().enumerate() {
            let numeric = (3..=5).contains(&i);
            let pad = w[i].saturating_sub(cell.chars().count());
            if numeric {
                l.push_str(&" ".repeat(pad));
                l.push_str(cell);
            } else {
                l.push_str(cell);
                if i + 1 < cells.len() {
                    l.push_str(&" ".repeat(pad));
                }
            }
            if i + 1 < cells.len() {
                l.push_str("  ");
            }
        }
        l
    };
    let _ = writeln!(out, "{}", line(HEADER));
    for r in &rows {
        let _ = writeln!(out, "{}", line(r.each_ref().map(String::as_str)));
    }
    out.push_str(&closing(d));
    out
}

fn closing(d: &DiffReport) -> String {
    let counts = format!(
        "{} better, {} within the baseline's noise, {} not compared",
        d.better, d.same, d.not_compared
    );
    if d.regressed > 0 {
        format!(
            "=> REGRESSED: {} worse than the baseline beyond its noise ({}); {counts}\n",
            crate::format::counted(d.regressed as u64, "finding"),
            d.regressed_titles().join(", ")
        )
    } else {
        format!("=> no regression: {counts}\n")
    }
}
