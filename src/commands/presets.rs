//! `schedlab presets [NAME]`: list the presets, or show one.

use std::fmt::Write as _;

use anyhow::Result;

use super::output::emit;
use super::prepare::load_preset;
use crate::preset::{self, setting::Setting};

pub fn presets(name: Option<&str>) -> Result<()> {
    let mut out = String::new();
    let Some(name) = name else {
        for p in preset::list() {
            match p {
                Ok(p) => writeln!(out, "{:<16} {}", p.name, p.summary)?,
                Err(e) => writeln!(out, "{:<16} {e:#}", "(broken)")?,
            }
        }
        if let Some(dir) = preset::user_dir() {
            writeln!(out, "\nYour own presets go in {}", dir.display())?;
        }
        return emit(&out);
    };
    let p = load_preset(name)?;
    writeln!(out, "{} - {}\n(source: {})\n", p.name, p.summary, p.source)?;
    writeln!(out, "Tasks:")?;
    for g in &p.groups {
        let count = if g.count == 1 {
            String::new()
        } else {
            format!(" x{}", g.count)
        };
        let mut links = Vec::new();
        if let Some(s) = &g.stdin {
            links.push(format!("stdin<-{s}"));
        }
        if let Some(s) = &g.stdout {
            links.push(format!("stdout->{s}"));
        }
        if let Some(s) = &g.process {
            links.push(format!("thread of process {s}"));
        }
        writeln!(
            out,
            "  {}{count}: {} {}",
            g.name,
            g.program.describe(),
            links.join(" ")
        )?;
    }
    writeln!(out, "\nKnobs (--set TASK.KNOB=VALUE):")?;
    let focus: Vec<&str> = p.focus.iter().map(String::as_str).collect();
    for (k, v) in p.knob_table() {
        let star = if focus.contains(&k.as_str()) {
            "*"
        } else {
            " "
        };
        writeln!(out, "  {star} {k} = {v}")?;
    }
    let sys: Vec<&str> = focus
        .iter()
        .copied()
        .filter(|f| f.starts_with("sys."))
        .collect();
    if !sys.is_empty() {
        writeln!(
            out,
            "  * system knobs that matter here: {} (see `schedlab knobs`)",
            sys.join(", ")
        )?;
    }
    writeln!(out, "  (* = the knobs this experiment is about)")?;
    writeln!(
        out,
        "\nHeadline metric: {:?} of {}",
        p.headline, p.metric_task
    )?;
    if !p.warmup.is_zero() {
        writeln!(
            out,
            "Summaries leave out the first {:.1} s of a run (--warmup; runs shorter than twice that keep it all)",
            p.warmup.as_secs_f64()
        )?;
    }
    if !p.variants.is_empty() {
        writeln!(out, "\nVariants (--variant NAME):")?;
        for v in &p.variants {
            let sets: Vec<String> = v.set.iter().map(Setting::to_string).collect();
            writeln!(out, "  {:<12} {} [{}]", v.name, v.summary, sets.join(" "))?;
        }
    }
    writeln!(out, "\n{}", p.note)?;
    emit(&out)
}
