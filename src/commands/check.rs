//! `schedlab check`: the machine sanity check, its report and plots; `check diff` against a baseline.

use std::path::Path;

use anyhow::{anyhow, Context, Result};

use super::output::print_report;
use super::prepare::finish;
use super::usage;
use crate::cli::{CheckArgs, CheckCmd, CheckDiffArgs};
use crate::knob::journal;
use crate::knob::sys::SystemKnobs;
use crate::report::check::{CheckReport, DiffReport};

/// The largest check report `check diff` reads (a full one is ~40 KiB).
const MAX_REPORT_BYTES: u64 = 16 << 20;

pub fn check(args: CheckArgs) -> Result<()> {
    if let Some(CheckCmd::Diff(d)) = args.command {
        return diff(d);
    }
    let report = run_check(args.quick)?;
    let text = crate::report::check::render_text(&report);
    print_report(args.json.as_deref(), &report, text)?;
    if let Some(dir) = &args.plot_dir {
        let written = crate::check::write_plots(&report, dir)?;
        let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        let names = crate::safe_text::message(&names.join(", "));
        eprintln!("schedlab: plots written: {names}");
    }
    Ok(())
}

fn run_check(quick: bool) -> Result<CheckReport> {
    let exe = std::env::current_exe().context("finding the schedlab binary")?;
    let mut opts = crate::check::CheckOptions::new(quick);
    opts.stop = crate::system::stop_on_signals().context("installing signal handlers")?;
    let mut system = SystemKnobs::new(journal::default_path()?);
    let result = crate::check::check(&exe, &opts, &mut system);
    let restored = finish(system);
    let report = result?;
    restored?;
    Ok(report)
}

/// A check report from `path`, as JSON; unreadable or not JSON is bad input.
fn read_report(path: &Path) -> Result<serde_json::Value> {
    let name = path.display();
    let text = crate::input::read_bounded(path, MAX_REPORT_BYTES, &format!("{name}"))
        .map_err(|e| usage(format!("cannot read the check report {name}: {e}")))?;
    serde_json::from_str(&text).map_err(|e| {
        usage(format!(
            "{name} is not JSON ({e}); expected a report written by `schedlab check --json FILE`"
        ))
    })
}

/// `check diff BASELINE [CURRENT]`: exit 1 (an error naming what regressed) when a
/// finding is worse than the baseline beyond its noise.
fn diff(args: CheckDiffArgs) -> Result<()> {
    let baseline = read_report(&args.baseline)?;
    let base_name = args.baseline.display().to_string();
    let (current, cur_name) = match &args.current {
        Some(p) => (read_report(p)?, p.display().to_string()),
        None => {
            // The baseline is checked before a minute is spent on the check.
            crate::report::check::diff((&base_name, &baseline), (&base_name, &baseline))?;
            let report = run_check(args.quick)?;
            let value = crate::report::meta::stamp(&report)?;
            (value, "this machine now".to_string())
        }
    };
    let d: DiffReport = crate::report::check::diff((&base_name, &baseline), (&cur_name, &current))?;
    let text = crate::report::check::render_diff(&d);
    print_report(args.json.as_deref(), &d, text)?;
    if d.regressed > 0 {
        return Err(anyhow!(
            "check diff: {} worse than {base_name} beyond its noise: {}",
            crate::format::counted(d.regressed as u64, "finding"),
            d.regressed_titles().join(", ")
        ));
    }
    Ok(())
}
