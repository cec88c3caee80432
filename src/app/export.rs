//! The trace's timeline export as the App sees it: asked for with a key, written by a
//! worker off the controller thread, its progress and outcome on the status line.

use super::keys::Command;
use super::{App, Effect};
use crate::report::perfetto::{grouped, KeptWindow, Written};

/// Why the trace's timeline was not written.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum TimelineError {
    #[error("no workload is running, so there is no trace to write")]
    NoWorkload,
    #[error("the scheduler trace is not running: start it first")]
    NotTracing,
    #[error("a timeline is being written already: wait for it")]
    Busy,
    #[error("timeline not written: {0}")]
    Write(String),
}

/// A timeline written: where, what window, how much.
#[derive(Clone, Debug, PartialEq)]
pub struct Exported {
    pub path: String,
    pub window: KeptWindow,
    pub written: Written,
}

impl App {
    pub(super) fn export_trace(&mut self) -> Vec<Effect> {
        if !self.tracing {
            let trace = self.key_label(Command::Trace);
            self.complain(format!(
                "no trace to write: press {trace} to start the scheduler trace first"
            ));
            return Vec::new();
        }
        if self.exporting {
            self.complain(TimelineError::Busy.to_string());
            return Vec::new();
        }
        self.exporting = true;
        self.say("writing the timeline...");
        vec![Effect::ExportTrace]
    }

    /// The footer's progress; the log keeps only the start and the outcome.
    pub(super) fn export_progress(&mut self, written: usize, total: usize) {
        if !self.exporting {
            return;
        }
        let pct = (written * 100).checked_div(total).unwrap_or(100);
        self.ui.status = format!(
            "writing the timeline: {pct} % ({} of {} events)",
            grouped(written as u64),
            grouped(total as u64)
        );
        self.ui.status_is_error = false;
    }

    pub(super) fn trace_exported(&mut self, r: Result<Exported, TimelineError>) {
        // Busy is the answer to a second ask; the first export is still running.
        if r != Err(TimelineError::Busy) {
            self.exporting = false;
        }
        match r {
            Ok(e) => {
                let w = e.written;
                let marks = match w.marks {
                    0 => String::new(),
                    1 => ", 1 knob change".to_string(),
                    n => format!(", {n} knob changes"),
                };
                // The counts before the window: a long path may push the end off the
                // two status lines (the log keeps it whole).
                self.say(format!(
                    "timeline written: {}: {} switches, {} wake-ups{marks}; {}; open it in ui.perfetto.dev",
                    e.path,
                    grouped(w.switches),
                    grouped(w.wakeups),
                    e.window
                ));
            }
            Err(e) => self.complain(e.to_string()),
        }
    }
}
