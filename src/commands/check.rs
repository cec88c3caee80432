//! `schedlab check`: the machine sanity check, its report and plots.

use anyhow::{Context, Result};

use super::output::print_report;
use super::prepare::finish;
use crate::cli::CheckArgs;
use crate::knob::journal;
use crate::knob::sys::SystemKnobs;

pub fn check(args: CheckArgs) -> Result<()> {
    let exe = std::env::current_exe().context("finding the schedlab binary")?;
    let mut opts = crate::check::CheckOptions::new(args.quick);
    opts.stop = crate::system::stop_on_signals().context("installing signal handlers")?;
    let mut system = SystemKnobs::new(journal::default_path()?);
    let result = crate::check::check(&exe, &opts, &mut system);
    let restored = finish(system);
    let report = result?;
    restored?;
    let text = crate::report::check::render_text(&report);
    print_report(args.json.as_deref(), &report, text)?;
    if let Some(dir) = &args.plot_dir {
        let written = crate::check::write_plots(&report, dir)?;
        let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        eprintln!("schedlab: plots written: {}", names.join(", "));
    }
    Ok(())
}
