//! `schedlab presets [NAME]`: list the presets, or show one.

use std::fmt::Write as _;

use anyhow::Result;

use super::output::emit;
use super::target::load_preset;
use crate::preset::{self, setting::Setting, Preset, TaskGroup};

pub fn presets(name: Option<&str>) -> Result<()> {
    let text = match name {
        None => list_presets()?,
        Some(name) => describe_preset(&load_preset(name)?)?,
    };
    emit(&text)
}

/// One line per preset, broken ones included so a typo in a user file is seen.
fn list_presets() -> Result<String> {
    let mut out = String::new();
    for p in preset::list() {
        match p {
            Ok(p) => writeln!(out, "{:<16} {}", p.name, p.summary)?,
            Err(e) => writeln!(out, "{:<16} {e:#}", "(broken)")?,
        }
    }
    if let Some(dir) = preset::user_dir() {
        writeln!(out, "\nYour own presets go in {}", dir.display())?;
    }
    Ok(out)
}

fn describe_preset(p: &Preset) -> Result<String> {
    let mut out = String::new();
    writeln!(out, "{} - {}\n(source: {})\n", p.name, p.summary, p.source)?;
    describe_tasks(&mut out, p)?;
    describe_knobs(&mut out, p)?;
    describe_headline(&mut out, p)?;
    describe_variants(&mut out, p)?;
    writeln!(out, "\n{}", p.note)?;
    Ok(out)
}

fn describe_tasks(out: &mut String, p: &Preset) -> Result<()> {
    writeln!(out, "Tasks:")?;
    for g in &p.groups {
        let count = if g.count == 1 {
            String::new()
        } else {
            format!(" x{}", g.count)
        };
        writeln!(
            out,
            "  {}{count}: {} {}",
            g.name,
            g.program.describe(),
            task_links(g)
        )?;
    }
    Ok(())
}

/// The pipes and the process a group shares with other groups, space-separated.
fn task_links(g: &TaskGroup) -> String {
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
    links.join(" ")
}

/// Every knob with its value; the preset's focus is starred so the reader knows what to
/// vary first.
fn describe_knobs(out: &mut String, p: &Preset) -> Result<()> {
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
    // System knobs are not in the task table, so a focus on one would go unseen.
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
    Ok(())
}

/// The headline as words: "the CPU share", not the enum's `Share`.
fn headline_words(h: &preset::Headline) -> &'static str {
    match h {
        preset::Headline::Throughput => "the throughput (progress per second)",
        preset::Headline::Latency => "the latency percentiles",
        preset::Headline::Share => "the CPU share",
        preset::Headline::Fairness => "the fairness error (shares against the nice weights)",
    }
}

/// What a headless run reports as the result, and how much of its start it ignores.
fn describe_headline(out: &mut String, p: &Preset) -> Result<()> {
    writeln!(
        out,
        "\nHeadline metric: {} of task group \"{}\"",
        headline_words(&p.headline),
        p.metric_task
    )?;
    if !p.warmup.is_zero() {
        writeln!(
            out,
            "Summaries leave out the first {:.1} s of a run (--warmup; runs shorter than twice that keep it all)",
            p.warmup.as_secs_f64()
        )?;
    }
    Ok(())
}

fn describe_variants(out: &mut String, p: &Preset) -> Result<()> {
    if p.variants.is_empty() {
        return Ok(());
    }
    writeln!(out, "\nVariants (--variant NAME):")?;
    for v in &p.variants {
        let sets: Vec<String> = v.set.iter().map(Setting::to_string).collect();
        writeln!(out, "  {:<12} {} [{}]", v.name, v.summary, sets.join(" "))?;
    }
    Ok(())
}
