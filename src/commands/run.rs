//! `schedlab run`: one headless run, its report, CSV, recording and plot.

use anyhow::Result;

use super::output::print_report;
use super::prepare::{check_later, check_plot, finish, partial_exit, prepare, Prepared};
use super::usage;
use crate::cli::RunArgs;
use crate::headless::run::run;
use crate::preset::setting::parse_at;
use crate::report::render_table;

pub fn run_command(args: RunArgs) -> Result<()> {
    check_plot(args.plot.as_deref())?;
    if let Some(path) = &args.trace_out {
        // Found before the run, not after it: a timeline never overwrites a file.
        if path.symlink_metadata().is_ok() {
            return Err(usage(format!(
                "--trace-out {}: that file already exists; give a new file name",
                path.display()
            )));
        }
    }
    let csv_to_stdout = args.csv.as_deref() == Some(std::path::Path::new("-"));
    if csv_to_stdout && args.json.as_deref() == Some("-") {
        return Err(usage(
            "--csv - and --json - both want stdout; give one of them a file name",
        ));
    }
    let mut at = Vec::new();
    for a in &args.at {
        at.push(parse_at(a).map_err(usage)?);
    }
    let Prepared {
        preset,
        mut opts,
        mut system,
    } = prepare(args.preset.as_deref(), &args.duration, &args.headless)?;
    for (a, (t, s)) in args.at.iter().zip(&at) {
        if *t >= opts.duration {
            return Err(usage(format!(
                "--at {a}: {} is not within the run: allowed 0s up to (not including) --duration ({})",
                humantime::format_duration(*t),
                humantime::format_duration(opts.duration)
            )));
        }
        check_later(&preset, &opts, s)?;
    }
    opts.at = at;
    opts.csv = args.csv.clone();
    opts.record = args.record.clone();
    opts.trace |= args.trace_out.is_some();
    opts.trace_out = args.trace_out.clone();
    let result = run(&preset, &opts, &mut system);
    let restored = finish(system);
    let report = result?;
    restored?;
    if args.json.as_deref() == Some("-") || csv_to_stdout {
        // The table (with its warnings) is not printed: say on stderr what was refused.
        for w in &report.warnings {
            eprintln!("schedlab: warning: {}", crate::safe_text::message(w));
        }
    }
    if csv_to_stdout {
        // Stdout is the CSV: only a JSON file is still written.
        if let Some(path) = args.json.as_deref() {
            super::output::write_json(path, &report)?;
        }
    } else {
        print_report(args.json.as_deref(), &report, render_table(&report))?;
    }
    if let Some(path) = &args.plot {
        crate::plot::plot_run(&report, path)?;
    }
    if let Some(why) = report.failure_text() {
        return Err(anyhow::Error::new(crate::headless::run::Failed(format!(
            "the run failed:{why}"
        ))));
    }
    partial_exit(
        &args.headless,
        report
            .partial
            .then(|| format!("{} setting(s) (see the warnings)", report.refused.len())),
    )
}
