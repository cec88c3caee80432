//! The check's progress line on stderr, a step at a time.

/// The progress bar on stderr (a terminal only; see `report::progress`).
pub(super) struct Progress {
    bar: indicatif::ProgressBar,
}

impl Progress {
    pub(super) fn new(enabled: bool, total: usize) -> Progress {
        Progress {
            bar: crate::report::progress::steps("check", total as u64, enabled),
        }
    }

    /// Step `what` begins: the steps before it are done.
    pub(super) fn next(&mut self, what: &str) {
        if self.bar.message().is_empty() && self.bar.position() == 0 {
            self.bar.set_message(what.to_string());
            return;
        }
        self.bar.inc(1);
        self.bar.set_message(what.to_string());
    }

    pub(super) fn done(&self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done();
    }
}
