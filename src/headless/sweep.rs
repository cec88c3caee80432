//! `schedlab sweep`: run a preset once per value of one knob, a row per value.

use std::sync::atomic::Ordering;

use anyhow::Result;

use crate::headless::run::{run, RunOptions};
use crate::knob::sys::SystemKnobs;
use crate::lab::session::{route, Route};
use crate::preset::setting::Setting;
use crate::preset::Preset;
use crate::report::sweep::{SweepReport, SweepRow};

/// Run `preset` once per value of `knob`. System knobs stay journaled in `sys` across
/// the runs, so the original value comes back once, at the end.
pub fn sweep(
    preset: &Preset,
    knob: &str,
    values: &[String],
    opts: &RunOptions,
    sys: &mut SystemKnobs,
) -> Result<SweepReport> {
    let mut rows = Vec::new();
    let mut interrupted = false;
    let (mut duration_s, mut summary_from_s) = (0.0, 0.0);
    let progress = crate::report::progress::steps("sweep", values.len() as u64, true);
    for value in values {
        // Drawn on the terminal: the value is the command line's, escaped.
        progress.set_message(crate::safe_text::echo(&format!("{knob}={value}")));
        if opts.stop.load(Ordering::Relaxed) {
            interrupted = true;
            break;
        }
        let setting: Setting = format!("{knob}={value}").parse()?;
        let mut p = preset.clone();
        let mut o = opts.clone();
        match route(&setting)? {
            Route::Sys(k) => o.system_sets.push((k, setting)),
            Route::Task | Route::Cgroup { .. } => p.apply_all(std::slice::from_ref(&setting))?,
        }
        let r = run(&p, &o, sys)?;
        if let Some(why) = r.failure_text() {
            return Err(anyhow::Error::new(super::run::Failed(format!(
                "the run at {knob}={value} failed, and a failed run is not swept:{why}"
            ))));
        }
        progress.inc(1);
        duration_s = r.duration_s;
        summary_from_s = r.summary_from_s;
        interrupted |= r.interrupted;
        rows.push(SweepRow::from_run(value, &r));
        if r.interrupted {
            break;
        }
    }
    Ok(SweepReport {
        preset: preset.name.clone(),
        kernel: crate::system::kernel_release(),
        cpus: crate::system::online_cpus().count(),
        knob: knob.to_string(),
        duration_s,
        summary_from_s,
        rows,
        interrupted,
    })
}
