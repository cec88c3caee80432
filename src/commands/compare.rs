//! `schedlab compare`: A and B in alternating rounds, with ratios and their spread.

use anyhow::Result;

use super::output::print_report;
use super::prepare::{check_plot, finish, partial_exit, prepare, Prepared};
use super::usage;
use crate::cli::CompareArgs;

pub fn compare(args: CompareArgs) -> Result<()> {
    use crate::headless::compare::{self, Side};
    check_plot(args.plot.as_deref())?;
    if !(1..=100).contains(&args.rounds) {
        return Err(usage(format!("--rounds {}: allowed 1..100", args.rounds)));
    }
    let a = Side::parse("A", &args.a).map_err(usage)?;
    let b = Side::parse("B", &args.b).map_err(usage)?;
    let Prepared {
        preset,
        opts,
        mut system,
    } = prepare(args.preset.as_deref(), &args.duration, &args.headless)?;
    for side in [&a, &b] {
        compare::prepare_side(&preset, &opts, &side.settings)
            .map_err(|e| usage(format!("--{}: {e}", side.label.to_lowercase())))?;
    }
    let result = compare::compare(
        &preset,
        &a.settings,
        &b.settings,
        args.rounds,
        &opts,
        &mut system,
    );
    let restored = finish(system);
    let report = result?;
    restored?;
    print_report(
        args.json.as_deref(),
        &report,
        crate::report::compare::render(&report),
    )?;
    if let Some(path) = &args.plot {
        crate::plot::plot_compare(&report, path)?;
    }
    partial_exit(
        &args.headless,
        (report.partial_runs > 0)
            .then(|| format!("settings in {} of the runs", report.partial_runs)),
    )
}
