//! What `schedlab sweep` reports: a row per value of the swept knob, its JSON and its table.

use std::fmt::Write as _;

use serde::Serialize;

use super::{Headline, RunReport};

/// One value of the sweep.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SweepRow {
    /// The knob's value; a number in the JSON when it is one (`batch` stays a string).
    #[serde(serialize_with = "number_if_numeric")]
    pub value: String,
    /// CPU share of each task (fraction of one CPU), in task order; in the JSON a list
    /// of `{"task", "cpu_share"}` objects.
    #[serde(serialize_with = "named_shares")]
    pub cpu_share: Vec<(String, f64)>,
    pub throughput_per_s: f64,
    #[serde(serialize_with = "super::per_s")]
    pub throughput_unit: String,
    pub headline: Headline,
    pub warnings: Vec<String>,
    /// A setting that defines the experiment was refused in this row's run.
    pub partial: bool,
    /// CPU others took on the experiment's CPUs, and whether that flags the row.
    pub foreign_cpus: Option<f64>,
    pub foreign_load: bool,
}

fn number_if_numeric<S: serde::Serializer>(value: &str, s: S) -> Result<S::Ok, S::Error> {
    match value.parse::<f64>() {
        Ok(n) if n.is_finite() => s.serialize_f64(n),
        _ => s.serialize_str(value),
    }
}

fn named_shares<S: serde::Serializer>(shares: &[(String, f64)], s: S) -> Result<S::Ok, S::Error> {
    use serde::ser::SerializeSeq as _;
    #[derive(Serialize)]
    struct Share<'a> {
        task: &'a str,
        cpu_share: f64,
    }
    let mut seq = s.serialize_seq(Some(shares.len()))?;
    for (task, cpu_share) in shares {
        seq.serialize_element(&Share {
            task,
            cpu_share: *cpu_share,
        })?;
    }
    seq.end()
}

#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SweepReport {
    pub preset: String,
    pub kernel: String,
    pub cpus: usize,
    pub knob: String,
    pub duration_s: f64,
    /// Each row's summaries start this far into its run (the preset's warm-up).
    pub summary_from_s: f64,
    pub rows: Vec<SweepRow>,
    pub interrupted: bool,
}

impl SweepRow {
    /// The row of `value` from its run; the headline says when the run was not the
    /// experiment, since the table shows no other column for it.
    pub fn from_run(value: &str, r: &RunReport) -> SweepRow {
        SweepRow {
            value: value.to_string(),
            cpu_share: r
                .tasks
                .iter()
                .map(|t| (t.name.clone(), t.cpu_share))
                .collect(),
            throughput_per_s: r.metrics.throughput_per_s,
            throughput_unit: r.metrics.throughput_unit.clone(),
            headline: Headline {
                text: format!("{}{}", super::verdict_prefix(r), r.metrics.headline.text),
                ..r.metrics.headline.clone()
            },
            warnings: r.warnings.clone(),
            partial: r.partial,
            foreign_cpus: r.metrics.foreign_cpus,
            foreign_load: r.foreign_load,
        }
    }
}

/// The sweep as a table: one row per value, a CPU% column per task, the headline.
pub fn render(r: &SweepReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "sweep of {} on {} (Linux {}, {}), {:.1} s per value{}{}",
        r.knob,
        r.preset,
        r.kernel,
        crate::format::counted(r.cpus as u64, "CPU"),
        r.duration_s,
        if r.summary_from_s > 0.0 {
            format!(", measured after a {:.1} s warm-up", r.summary_from_s)
        } else {
            String::new()
        },
        if r.interrupted { " (interrupted)" } else { "" }
    );
    let tasks: Vec<String> = r.rows.first().map_or_else(Vec::new, |row| {
        row.cpu_share.iter().map(|(n, _)| n.clone()).collect()
    });
    let mut header = format!("{:>12}", "VALUE");
    for t in &tasks {
        let _ = write!(header, "  {:>10}", format!("{t} CPU%"));
    }
    let _ = writeln!(out, "{header}  HEADLINE");
    for row in &r.rows {
        let mut line = format!("{:>12}", row.value);
        for (_, share) in &row.cpu_share {
            let _ = write!(line, "  {:>10.1}", share * 100.0);
        }
        let _ = writeln!(out, "{line}  {}", row.headline.text);
        for w in &row.warnings {
            let _ = writeln!(out, "{:>12}  warning: {w}", "");
        }
    }
    out
}
