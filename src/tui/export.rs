//! The timeline's worker thread: writes the trace's kept window (handed over, not copied)
//! to a file while the controller goes on serving samples and knob changes.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::mpsc::UnboundedSender;

use crate::app::{Action, Exported, TimelineError};
use crate::report::perfetto::Timeline;

/// Builds the timeline to write, on the worker.
pub type Build = Box<dyn FnOnce() -> Timeline + Send>;

/// A timeline being written.
pub struct Export {
    cancel: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Export {
    /// Start building and writing a timeline to `path`; progress and the outcome go to
    /// `events`.
    pub fn start(build: Build, path: PathBuf, events: UnboundedSender<Action>) -> Export {
        let cancel = Arc::new(AtomicBool::new(false));
        let stop = cancel.clone();
        let tx = events.clone();
        let handle = std::thread::Builder::new()
            .name("schedlab-export".into())
            .spawn(move || {
                // Below the experiment (the controller's SCHED_FIFO resets on fork, so
                // this starts as SCHED_OTHER): a second of encoding should disturb it
                // as little as it can.
                // SAFETY: setpriority on the calling thread (who 0), plain integers.
                #[allow(unsafe_code)]
                unsafe {
                    libc::setpriority(libc::PRIO_PROCESS, 0, 10);
                }
                let result = write(&build(), &path, &stop, &tx);
                let _ = tx.send(Action::TraceExported(result));
            });
        match handle {
            Ok(h) => Export {
                cancel,
                handle: Some(h),
            },
            Err(e) => {
                let why = format!("the export thread could not be started: {e}");
                let _ = events.send(Action::TraceExported(Err(TimelineError::Write(why))));
                Export {
                    cancel,
                    handle: None,
                }
            }
        }
    }

    /// The worker is done (or never started).
    pub fn finished(&self) -> bool {
        self.handle.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stop the worker at its next progress report (its .part file is removed) and
    /// wait for it: at most one progress step, tens of milliseconds.
    pub fn cancel(mut self) {
        self.cancel.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn write(
    t: &Timeline,
    path: &std::path::Path,
    stop: &AtomicBool,
    tx: &UnboundedSender<Action>,
) -> Result<Exported, TimelineError> {
    let total = t.events.len();
    let mut progress = |written: usize| {
        let _ = tx.send(Action::TraceExportProgress { written, total });
        !stop.load(Ordering::Relaxed)
    };
    let written = crate::report::trace::write_file(t, path, &mut progress)
        .map_err(|e| TimelineError::Write(format!("{e:#}")))?;
    Ok(Exported {
        path: path.display().to_string(),
        window: t.window,
        written,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// The next outcome from the worker, skipping progress.
    fn outcome(
        rx: &mut tokio::sync::mpsc::UnboundedReceiver<Action>,
    ) -> Result<Exported, TimelineError> {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while std::time::Instant::now() < deadline {
            match rx.try_recv() {
                Ok(Action::TraceExported(r)) => return r,
                Ok(_) => {}
                Err(_) => std::thread::sleep(Duration::from_millis(5)),
            }
        }
        panic!("no outcome within 60 s");
    }

    #[test]
    fn start_returns_while_the_timeline_is_still_being_built_and_the_file_comes_after() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.pftrace");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        // The build waits for the test's word: whatever start does, it cannot wait for it.
        let (go_tx, go_rx) = mpsc::channel::<()>();
        let export = Export::start(
            Box::new(move || {
                let _ = go_rx.recv_timeout(Duration::from_secs(60));
                Timeline {
                    title: "held".into(),
                    ..Timeline::default()
                }
            }),
            path.clone(),
            tx,
        );
        assert!(!export.finished(), "the worker is held in the build");
        assert!(!path.exists());
        go_tx.send(()).expect("the worker waits");
        let done = outcome(&mut rx).expect("written");
        assert_eq!(done.path, path.display().to_string());
        assert!(path.exists(), "the file is there once the outcome is sent");
        assert!(!dir.path().join("t.pftrace.part").exists());
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while !export.finished() && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(export.finished());
    }

    #[test]
    fn an_existing_file_is_refused_and_left_alone() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.pftrace");
        std::fs::write(&path, "mine").expect("write");
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        let export = Export::start(Box::new(Timeline::default), path.clone(), tx);
        assert!(matches!(outcome(&mut rx), Err(TimelineError::Write(_))));
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "mine");
        export.cancel();
    }
}
