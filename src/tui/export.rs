//! The timeline's worker thread: writes the trace's kept window (handed over, not copied)
//! to a file while the controller goes on serving samples and knob changes.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use tokio::sync::mpsc::UnboundedSender;

use super::controller::Event;
use crate::app::{Exported, TimelineError};
use crate::report::perfetto::Timeline;

/// A timeline being written.
pub struct Export {
    cancel: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Export {
    /// Start writing `t` to `path`; progress and the outcome go to `events`.
    pub fn start(t: Timeline, path: PathBuf, events: UnboundedSender<Event>) -> Export {
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
                let result = write(&t, &path, &stop, &tx);
                let _ = tx.send(Event::TraceExported(result));
            });
        match handle {
            Ok(h) => Export {
                cancel,
                handle: Some(h),
            },
            Err(e) => {
                let why = format!("the export thread could not be started: {e}");
                let _ = events.send(Event::TraceExported(Err(TimelineError::Write(why))));
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
    tx: &UnboundedSender<Event>,
) -> Result<Exported, TimelineError> {
    let total = t.events.len();
    let mut progress = |written: usize| {
        let _ = tx.send(Event::TraceExportProgress { written, total });
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
