//! The controller thread: drives the workbench's [`Experiment`] and owns the journal; the
//! only place the TUI's knob changes touch the kernel. The UI thread talks to it by
//! messages.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Result;
use tokio::sync::mpsc::UnboundedSender;

use crate::error::KnobError;
use crate::knob::sys;
use crate::knob::sys::SystemKnobs;
use crate::lab::describe::Started;
use crate::lab::experiment::{self, Experiment};
use crate::lab::record::{RecordError, Recorder};
use crate::preset::setting::Setting;
use crate::preset::Preset;
use crate::sampler::Batch;

/// Requests from the UI.
#[derive(Debug)]
pub enum Request {
    Apply(Setting),
    SetInterval(Duration),
    Pause(bool),
    Restart(Option<String>),
    /// Start recording to this file (Some) or stop (None).
    Record(Option<PathBuf>),
    Quit,
}

/// News for the UI.
#[derive(Debug)]
pub enum Event {
    Started(Box<Started>),
    Batch(Box<Batch>),
    KnobResult {
        setting: String,
        result: Result<String, KnobError>,
    },
    SystemKnobs(Vec<sys::KnobInfo>),
    /// Recording to this file (Some), stopped (None), or why it could not start.
    Recording(Result<Option<String>, RecordError>),
    Error(String),
    /// The workload is gone and the knobs restored; the lines say what was restored.
    Stopped(Vec<String>),
}

/// Opens a recorder for a path; given by the TUI so the controller stays format-agnostic.
pub type OpenRecorder = Box<dyn Fn(&std::path::Path) -> Result<Box<dyn Recorder>> + Send>;

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
                    // The batch goes to the UI, which keeps the store.
                    let _ = self.events.send(Event::Batch(Box::new(polled.batch)));
                }
            }
            let request = match rx.recv_timeout(Duration::from_millis(5)) {
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
                if let Some(exp) = &self.running {
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
            trace: None,
        };
        match Experiment::start(self.preset.clone(), &[], &self.exe, &mut self.sys, &opts) {
            Ok(mut exp) => {
                self.send(Event::Started(Box::new(exp.started().clone())));
                if let Some(rec) = self.recorder.take() {
                    exp.record(Some(rec), &self.sys);
                }
                self.running = Some(exp);
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
            None => Err(KnobError::invalid("no workload is running")),
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
}
