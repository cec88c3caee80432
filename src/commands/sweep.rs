//! `schedlab sweep`: one run per value of a knob, as a table and a plot.

use anyhow::Result;

use super::output::print_report;
use super::prepare::{check_later, check_plot, finish, partial_exit, prepare, Prepared};
use super::usage;
use crate::cli::SweepArgs;
use crate::preset::setting::{parse_sweep, Setting};

pub fn sweep(args: SweepArgs) -> Result<()> {
    check_plot(args.plot.as_deref())?;
    let (knob, values) = parse_sweep(&args.knob).map_err(usage)?;
    let Prepared {
        preset,
        opts,
        mut system,
    } = prepare(args.preset.as_deref(), &args.duration, &args.headless)?;
    for v in &values {
        let s: Setting = format!("{knob}={v}").parse().map_err(usage)?;
        check_later(&preset, &opts, &s)?;
    }
    let result = crate::headless::sweep::sweep(&preset, &knob, &values, &opts, &mut system);
    let restored = finish(system);
    let report = result?;
    restored?;
    print_report(
        args.json.as_deref(),
        &report,
        crate::report::sweep::render(&report),
    )?;
    if let Some(path) = &args.plot {
        crate::plot::plot_sweep(&report, path)?;
    }
    let partial = report.rows.iter().filter(|r| r.partial).count();
    partial_exit(
        &args.headless,
        (partial > 0).then(|| format!("settings in {partial} of the sweep's runs")),
    )
}
