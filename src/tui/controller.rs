//! The controller thread: drives the workbench's [`Experiment`] and owns the journal; the
//! only place the TUI's knob changes touch the kernel. The UI thread talks to it by
//! messages.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Result;
use tokio::sync::mpsc::UnboundedSender;

use crate::app::{TimelineError, TRACE_KEEP};
use crate::error::KnobError;
use crate::knob::sys;
use crate::knob::sys::SystemKnobs;
use crate::lab::describe::{Started, TaskInfo};
use crate::lab::experiment::{self, Experiment};
use crate::lab::record::{RecordError, Recorder};
use crate::preset::setting::Setting;
use crate::preset::Preset;
use crate::sampler::Batch;
use crate::trace::{TraceBatch, TraceError};

/// Requests from the UI.
#[derive(Debug)]
pub enum Request {
    Apply(Setting),
    SetInterval(Duration),
    Pause(bool),
    Restart(Option<String>),
    /// Start recording to this file (Some) or stop (None).
    Record(Option<PathBuf>),
    /// Start (true) or stop the scheduler trace; it stays on across restarts.
    Trace(bool),
    /// Write the trace's kept window as a Perfetto timeline to this new file.
    ExportTrace(PathBuf),
    /// Attach to this process (with its threads and children) in the running experiment.
    Attach(i32),
    Quit,
}

/// News for the UI.
#[derive(Debug)]
pub enum Event {
    Started(Box<Started>),
    Joined(Vec<TaskInfo>),
    Batch(Box<Batch>),
    KnobResult {
        setting: String,
        result: Result<String, KnobError>,
    },
    SystemKnobs(Vec<sys::KnobInfo>),
    /// Recording to this file (Some), stopped (None), or why it could not start.
    Recording(Result<Option<String>, RecordError>),
    /// The trace is on (true) or off, or why it could not start.
    Tracing(Result<bool, TraceError>),
    /// One interval of the trace.
    Trace(Box<TraceBatch>),
    /// The timeline's path, or why it was not written.
    TraceExported(Result<String, TimelineError>),
    Error(String),
    /// The workload is gone and the knobs restored; the lines say what was restored.
    Stopped(Vec<String>),
}

/// Opens a recorder for a path; given by the TUI so the controller stays format-agnostic.
pub type OpenRecorder = Box<dyn Fn(&std::path::Path) -> Result<Box<dyn Recorder>> + Send>;

/// How long a sampled batch may wait before it is forwarded to the UI (which redraws
/// data every 100 ms at most). At 20 ms, 64 tasks sampled at 50 Hz woke the UI thread
/// for every batch: a third of its CPU (benches/tui-cpu.sh).
const FORWARD_EVERY: Duration = Duration::from_millis(100);

/// Start the controller thread with `preset` running.
pub fn spawn(
    preset: Preset,
    exe: PathBuf,
    interval: Duration,
    sys: SystemKnobs,
    open_recorder: OpenRecorder,
    events: UnboundedSender<Event>,
) -> std::io::Result<(Sender<Request>, JoinHandle<()>)> {
    let (tx, rx): (Sender<Request>, Receiver<Request>) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("schedlab-controller".into())
        .spawn(move || {
            crate::knob::task::elevate_if_requested(true);
            let mut ctl = Controller {
                preset,
                exe,
                interval,
                sys,
                open_recorder,
                events,
                running: None,
                recorder: None,
                tracing: false,
            };
            ctl.start();
            ctl.send(Event::SystemKnobs(sys::list(&ctl.sys.probe)));
            ctl.serve(&rx);
            ctl.stop();
            let restored = ctl.sys.restore().iter().map(ToString::to_string).collect();
            ctl.send(Event::Stopped(restored));
        })?;
    Ok((tx, handle))
}

/// What the controller thread holds between requests.
struct Controller {
    /// The preset a restart starts again (with the live changes made so far).
    preset: Preset,
    exe: PathBuf,
    interval: Duration,
    sys: SystemKnobs,
    open_recorder: OpenRecorder,
    events: UnboundedSender<Event>,
    running: Option<Experiment>,
    /// A recording while no experiment runs (between a failed restart and the next).
    recorder: Option<Box<dyn Recorder>>,
    /// The user turned the trace on: a restarted experiment is traced too.
    tracing: bool,
}

impl Controller {
    fn send(&self, e: Event) {
        // The UI is gone only when it is quitting; nothing is left to tell.
        let _ = self.events.send(e);
    }

    /// Until the UI quits or hangs up: forward every round, serve every request.
    fn serve(&mut self, rx: &Receiver<Request>) {
        loop {
            if let Some(exp) = self.running.as_mut() {
                while let Some(polled) = exp.poll(Duration::ZERO) {
                    // Before the batch that may carry their first samples.
                    if !polled.joined.is_empty() {
                        let _ = self.events.send(Event::Joined(polled.joined));
                    }
                    // The batch goes to the UI, which keeps the store.
                    let _ = self.events.send(Event::Batch(Box::new(polled.batch)));
                    for tb in polled.trace {
                        let _ = self.events.send(Event::Trace(Box::new(tb)));
                    }
                }
            }
            // A request wakes this at once; batches wait at most FORWARD_EVERY. Each wake-up
            // of this FIFO thread preempts whatever runs on its CPU (the trace shows it
            // among the experiment's preemptors), so it wakes 10 times a second, not 200.
            let request = match rx.recv_timeout(FORWARD_EVERY) {
                Ok(Request::Quit) | Err(RecvTimeoutError::Disconnected) => return,
                Ok(r) => r,
                Err(RecvTimeoutError::Timeout) => continue,
            };
            self.handle(request);
        }
    }

    fn handle(&mut self, request: Request) {
        match request {
            Request::Apply(s) => self.apply(&s),
            Request::SetInterval(d) => {
                self.interval = d;
                if let Some(exp) = self.running.as_mut() {
                    exp.set_interval(d);
                }
            }
            Request::Pause(p) => {
                if let Some(exp) = &self.running {
                    exp.pause(p);
                }
            }
            Request::Restart(name) => self.restart(name),
            Request::Record(path) => self.record(path),
            Request::Trace(on) => {
                let result = self.set_tracing(on);
                self.send(Event::Tracing(result));
            }
            Request::ExportTrace(path) => {
                let (written, restarted) = self.export_trace(&path);
                self.send(Event::TraceExported(written));
                // After the file's news: a trace that could not start again is what
                // the user has to act on.
                if let Err(e) = restarted {
                    self.send(Event::Tracing(Err(e)));
                }
            }
            Request::Attach(pid) => match self.running.as_mut().map(|exp| exp.attach(pid)) {
                Some(Ok(joined)) => self.send(Event::Joined(joined)),
                Some(Err(e)) => self.send(Event::Error(e.to_string())),
                None => self.send(Event::Error(
                    "no experiment is running to attach to (restart it first)".into(),
                )),
            },
            Request::Quit => {}
        }
    }

    /// Start `self.preset`; a failure is news for the UI, not the end of the workbench.
    fn start(&mut self) {
        let opts = experiment::Options {
            interval: self.interval,
            retention: 1,
            warmup: Duration::ZERO,
            aggregate: false,
            trace: experiment::Trace::Off,
            wakings: crate::trace::Wakings::CrossCpu,
        };
        match Experiment::start(self.preset.clone(), &[], &self.exe, &mut self.sys, &opts) {
            Ok(mut exp) => {
                self.send(Event::Started(Box::new(exp.started().clone())));
                if let Some(rec) = self.recorder.take() {
                    exp.record(Some(rec), &self.sys);
                }
                self.running = Some(exp);
                // Only a refusal is news: the UI still shows the trace as on.
                if self.tracing {
                    if let Err(e) = self.set_tracing(true) {
                        self.send(Event::Tracing(Err(e)));
                    }
                }
            }
            Err(e) => self.send(Event::Error(format!("{e:#}"))),
        }
    }

    /// Stop the experiment; its recorder waits for the next one.
    fn stop(&mut self) {
        if let Some(mut exp) = self.running.take() {
            self.recorder = exp.take_recorder();
            drop(exp.stop());
        }
    }

    fn apply(&mut self, s: &Setting) {
        let result = match self.running.as_mut() {
            Some(exp) => exp.apply(s, &mut self.sys).result.clone(),
            None => Err(KnobError::invalid(format!("{s}: no workload is running"))),
        };
        self.send(Event::KnobResult {
            setting: s.to_string(),
            result,
        });
        if s.target == "sys" {
            self.send(Event::SystemKnobs(sys::list(&self.sys.probe)));
        }
    }

    /// Start again: the same preset with the live changes made so far, or `name`.
    fn restart(&mut self, name: Option<String>) {
        if let Some(exp) = &self.running {
            self.preset = exp.session().preset.clone();
        }
        if let Some(name) = name {
            match crate::preset::load(&name) {
                Ok(p) => self.preset = p,
                Err(e) => {
                    self.send(Event::Error(format!("{e:#}")));
                    return;
                }
            }
        }
        self.stop();
        self.start();
    }

    fn record(&mut self, path: Option<PathBuf>) {
        let Some(path) = path else {
            if let Some(exp) = self.running.as_mut() {
                exp.record(None, &self.sys);
            }
            self.recorder = None;
            self.send(Event::Recording(Ok(None)));
            return;
        };
        match (self.open_recorder)(&path) {
            Ok(rec) => {
                match self.running.as_mut() {
                    Some(exp) => exp.record(Some(rec), &self.sys),
                    None => {
                        let mut rec = rec;
                        rec.system_knobs(&sys::list(&self.sys.probe));
                        self.recorder = Some(rec);
                    }
                }
                self.send(Event::Recording(Ok(Some(path.display().to_string()))));
            }
            Err(e) => self.send(Event::Recording(Err(RecordError(format!("{e:#}"))))),
        }
    }

    /// Start or stop the running experiment's trace; what a stopped trace had not
    /// handed over yet still goes to the UI. Without an experiment only the wish is kept
    /// (the next start traces).
    fn set_tracing(&mut self, on: bool) -> Result<bool, TraceError> {
        let Some(exp) = self.running.as_mut() else {
            self.tracing = on;
            return Ok(on);
        };
        let was_on = exp.tracing().0;
        let result = exp.set_tracing(on, Some(TRACE_KEEP), self.interval, &mut self.sys);
        self.tracing = on && result.is_ok();
        if was_on && !on {
            self.forward_pending();
        }
        result.map(|()| on)
    }

    /// The last intervals of the trace just stopped, which no poll will see.
    fn forward_pending(&self) {
        let pending = self
            .running
            .as_ref()
            .and_then(Experiment::stopped_trace)
            .map(|t| t.pending.clone())
            .unwrap_or_default();
        for tb in pending {
            self.send(Event::Trace(Box::new(tb)));
        }
    }

    /// Stop the trace (its events are handed over only then), trace on, and write the
    /// stopped trace's kept window to `path`: what came of the file, and of starting
    /// again. The new trace starts before the write (seconds for a busy preset's 30 s),
    /// so the trace misses only the stop and start.
    fn export_trace(
        &mut self,
        path: &std::path::Path,
    ) -> (Result<String, TimelineError>, Result<bool, TraceError>) {
        let tracing = match &self.running {
            None => return (Err(TimelineError::NoWorkload), Ok(false)),
            Some(exp) => exp.tracing().0,
        };
        if !tracing {
            return (Err(TimelineError::NotTracing), Ok(false));
        }
        // Stopping is never refused.
        let _ = self.set_tracing(false);
        // Starting leaves the stopped trace in place until the next stop.
        let restarted = self.set_tracing(true);
        (self.write_timeline(path), restarted)
    }

    fn write_timeline(&self, path: &std::path::Path) -> Result<String, TimelineError> {
        let exp = self.running.as_ref().ok_or(TimelineError::NoWorkload)?;
        let trace = exp.stopped_trace().ok_or(TimelineError::NotTracing)?;
        crate::report::trace::timeline(
            trace,
            exp.events(),
            exp.store().start_ns.unwrap_or(0),
            &exp.started().preset.name,
            path,
        )
        .map_err(|e| TimelineError::Write(format!("{e:#}")))?;
        Ok(path.display().to_string())
    }
}
