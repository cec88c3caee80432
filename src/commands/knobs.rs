//! `schedlab knobs`: every system and per-task knob, its value and whether it can be
//! changed here.

use std::fmt::Write as _;

use anyhow::Result;

use crate::knob::journal;
use crate::knob::sys::{self, SystemKnobs};

/// The knobs as a table, or as JSON on stdout (`json` is `-`) or into a file.
pub fn knobs(json: Option<&str>, mount_debugfs: bool) -> Result<()> {
    let mut system = SystemKnobs::new(journal::default_path()?);
    if mount_debugfs {
        system.mount_debugfs()?;
    }
    let knobs = sys::list(&system.probe);
    let per_task = per_task_knobs(&system.probe);
    let mut out = String::from("System knobs (--set sys.NAME=VALUE):\n");
    for k in &knobs {
        let value = k.value.clone().unwrap_or_else(|| "?".into());
        let state = match (&k.writable, &k.why_not) {
            (true, _) => "writable".to_string(),
            (false, Some(why)) => format!("read-only: {why}"),
            (false, None) => "read-only".to_string(),
        };
        writeln!(out, "  {:<32} {:<12} {state}", k.name, value)?;
        if k.writable {
            writeln!(out, "  {:<32} allowed: {}", "", k.allowed)?;
        }
        let knob = sys::SysKnob::parse(k.name.trim_start_matches("sys.")).ok();
        if let Some(note) = knob.as_ref().and_then(sys::SysKnob::note) {
            writeln!(out, "  {:<32} note: {note}", "")?;
        }
    }
    if let Some((_, source)) = sys::read_features(&system.probe) {
        writeln!(out, "  (features: {source})")?;
    }
    writeln!(
        out,
        "\nPer-task knobs (--set TASK.KNOB=VALUE, or live in the TUI):"
    )?;
    for k in &per_task {
        let state = match &k.why_not {
            None => "available".to_string(),
            Some(why) => format!("unavailable: {why}"),
        };
        writeln!(out, "  {:<12} {:<58} {state}", k.name, k.allowed)?;
    }
    let value = serde_json::json!({ "system": knobs, "task": per_task });
    super::output::print_report(json, &value, out)
}

/// Per-task knobs and whether this machine lets you use them.
fn per_task_knobs(probe: &sys::Probe) -> Vec<sys::KnobInfo> {
    let root = |why: &str| (!probe.root).then(|| why.to_string());
    let rows: [(&str, &str, Option<String>); 8] = [
        (
            "policy",
            "other, batch, idle, fifo, rr, deadline",
            root("fifo, rr and deadline need root or CAP_SYS_NICE"),
        ),
        (
            "priority",
            "1..99 (fifo, rr)",
            root("needs root or CAP_SYS_NICE"),
        ),
        (
            "nice",
            "-20..19",
            root("lowering nice needs root or CAP_SYS_NICE"),
        ),
        ("cpus", "a CPU list (0-1,3) or all", None),
        (
            "slice",
            "0.1ms..100ms or default (fair tasks)",
            probe.slice_reason(),
        ),
        (
            "runtime",
            "deadline runtime/deadline/period, e.g. 2ms",
            root("SCHED_DEADLINE needs root"),
        ),
        ("uclamp_min", "0..1024", probe.uclamp_reason()),
        ("uclamp_max", "0..1024", probe.uclamp_reason()),
    ];
    rows.into_iter()
        .map(|(name, allowed, why)| sys::KnobInfo {
            name: name.into(),
            value: None,
            allowed: allowed.into(),
            writable: why.is_none(),
            why_not: why,
            path: None,
            help: String::new(),
        })
        .collect()
}
