//! The check's report for people: one aligned line per finding, verdict first.

use std::fmt::Write as _;

use super::{CheckReport, Finding, Verdict, OTHER_LOAD_NOTE};

/// The readable report: a header, one aligned line per finding (verdict first), how
/// each was measured, and the time it all took.
pub fn render_text(r: &CheckReport) -> String {
    let mut out = header(r);
    out.push_str(&table(&r.findings));
    out.push_str(&methods(&r.findings));
    out.push_str(&summary(r));
    out
}

/// The machine, and a warning when other processes disturbed the numbers.
fn header(r: &CheckReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "schedlab check on Linux {} ({}{}){}",
        r.kernel,
        crate::format::counted(r.cpus as u64, "CPU"),
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
    out
}

const HEADER: [&str; 5] = ["VERDICT", "FINDING", "VALUE", "HEALTHY", "WHY"];

/// The findings as aligned columns under a header line.
fn table(findings: &[Finding]) -> String {
    let rows: Vec<[String; 5]> = findings
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
    let w = column_widths(&rows);
    let mut out = String::new();
    let _ = writeln!(out, "{}", table_line(HEADER, w));
    for row in &rows {
        let _ = writeln!(
            out,
            "{}",
            table_line([&row[0], &row[1], &row[2], &row[3], &row[4]], w)
        );
    }
    out
}

/// Widths of the first four columns (the last one is not padded).
fn column_widths(rows: &[[String; 5]]) -> [usize; 4] {
    // The healthy column gets no more than 40 characters of alignment: a long one (the
    // RT promise) would push every explanation far right.
    let width = |c: usize, cap: usize| {
        rows.iter()
            .map(|row| row[c].chars().count())
            .chain([HEADER[c].len()])
            .max()
            .unwrap_or(0)
            .min(cap)
    };
    [7, width(1, 40), width(2, 48), width(3, 40)]
}

fn table_line(cells: [&str; 5], w: [usize; 4]) -> String {
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
}

/// One line per finding on how it was measured.
fn methods(findings: &[Finding]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "\nHow each was measured:");
    for f in findings {
        let _ = writeln!(out, "  {:<24} {}", f.id, f.method);
    }
    out
}

/// How many findings got each verdict, and what the check took against its budget.
fn summary(r: &CheckReport) -> String {
    let counts: Vec<String> = [Verdict::Ok, Verdict::Notable, Verdict::Problem]
        .iter()
        .map(|v| {
            format!(
                "{} {v}",
                r.findings.iter().filter(|f| f.verdict == *v).count()
            )
        })
        .collect();
    let mut out = String::new();
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
    use crate::report::check::{sample, IDS};

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
        assert!(text.contains("12 ok, 0 notable, 0 problem"), "{text}");
    }
}
