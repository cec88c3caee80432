//! A progress bar with an ETA for long commands (sweep, compare, check): on stderr when
//! it is a terminal, nothing when piped.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar counting `total` steps named `what`; hidden unless stderr is a terminal (a
/// log or a pipe gets no control sequences). `enabled` false hides it outright.
pub fn steps(what: &str, total: u64, enabled: bool) -> ProgressBar {
    let target = if enabled {
        // indicatif's stderr target draws nothing when stderr is not a terminal.
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    // Dropped early (an error, Ctrl-C): the bar goes, the report's lines stay.
    let bar = ProgressBar::with_draw_target(Some(total), target)
        .with_finish(indicatif::ProgressFinish::AndClear);
    if let Ok(style) = ProgressStyle::with_template(
        "{prefix}: [{bar:24}] {pos}/{len} {msg}  {elapsed} elapsed, ETA {eta}",
    ) {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_prefix(what.to_string());
    // The steps take seconds each: redraw so the elapsed time moves between them.
    bar.enable_steady_tick(Duration::from_millis(500));
    bar
}
