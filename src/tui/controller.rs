//! The controller thread: owns the workload, the sampler and the journal; the only place
//! the TUI's knob changes touch the kernel. The UI thread talks to it by messages.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedSender;

use crate::knob::sys;
use crate::knob::sys::SystemKnobs;
use crate::lab::describe::Started;
use crate::lab::record::Recorder;
use crate::lab::session::Session;
use crate::preset::setting::Setting;
use crate::preset::Preset;
use crate::sampler::{Batch, Command as SamplerCommand, Sampler};

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
        result: Result<String, String>,
    },
    SystemKnobs(Vec<sys::KnobInfo>),
    Recording(Result<Option<String>, String>),
    Error(String),
    /// The workload is gone and the knobs restored; the lines say what was restored.
    Stopped(Vec<String>),
}

struct Running {
    session: Session,
    sampler: Sampler,
}

/// Opens a recorder for a path; given by the TUI so the controller stays format-agnostic.
pub type OpenRecorder = Box<dyn Fn(&std::path::Path) -> Result<Box<dyn Recorder>, String> + Send>;

fn start(
    preset: &Preset,
    exe: &std::path::Path,
    interval: Duration,
    sys: &mut SystemKnobs,
) -> Result<(Running, Started), String> {
    let (session, warnings) =
        Session::start(preset.clone(), &[], exe, sys).map_err(|e| format!("{e:#}"))?;
    let targets = session.sampler_targets();
    session.open_gate();
    let sampler = Sampler::spawn(
        targets,
        Some(session.workload.shm()),
        session.workload.usage().cloned(),
        interval,
    )
    .map_err(|e| format!("starting the sampler: {e}"))?;
    let started = session.started_info(warnings);
    Ok((Running { session, sampler }, started))
}

fn stop(running: Option<Running>) {
    if let Some(mut r) = running {
        drop(r.sampler);
        r.session.workload.stop();
    }
}

/// Start the controller thread with `preset` running.
pub fn spawn(
    preset: Preset,
    exe: PathBuf,
    interval: Duration,
    mut sys: SystemKnobs,
    open_recorder: OpenRecorder,
    events: UnboundedSender<Event>,
) -> std::io::Result<(Sender<Request>, JoinHandle<()>)> {
    let (tx, rx): (Sender<Request>, Receiver<Request>) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("schedlab-controller".into())
        .spawn(move || {
            crate::knob::task::elevate_if_requested(true);
            let send = |e: Event| {
                let _ = events.send(e);
            };
            let mut preset = preset;
            let mut interval = interval;
            let mut recorder: Option<Box<dyn Recorder>> = None;
            let mut running = match start(&preset, &exe, interval, &mut sys) {
                Ok((r, s)) => {
                    send(Event::Started(Box::new(s)));
                    Some(r)
                }
                Err(e) => {
                    send(Event::Error(e));
                    None
                }
            };
            send(Event::SystemKnobs(sys::list(&sys.probe)));
            loop {
                if let Some(r) = &running {
                    while let Some(b) = r.sampler.recv_timeout(Duration::ZERO) {
                        if let Some(rec) = recorder.as_mut() {
                            rec.batch(&b);
                        }
                        send(Event::Batch(Box::new(b)));
                    }
                }
                let request = match rx.recv_timeout(Duration::from_millis(5)) {
                    Ok(r) => r,
                    Err(RecvTimeoutError::Timeout) => continue,
                    Err(RecvTimeoutError::Disconnected) => break,
                };
                match request {
                    Request::Apply(s) => {
                        let result = match running.as_mut() {
                            Some(r) => {
                                let res = r.session.apply(&s, &mut sys);
                                r.sampler.send(SamplerCommand::RefreshStatus);
                                res
                            }
                            None => Err("no workload is running".into()),
                        };
                        if let Some(rec) = recorder.as_mut() {
                            rec.knob(&s.to_string(), &result);
                        }
                        send(Event::KnobResult {
                            setting: s.to_string(),
                            result,
                        });
                        if s.target == "sys" {
                            send(Event::SystemKnobs(sys::list(&sys.probe)));
                        }
                    }
                    Request::SetInterval(d) => {
                        interval = d;
                        if let Some(r) = &running {
                            r.sampler.send(SamplerCommand::SetInterval(d));
                        }
                    }
                    Request::Pause(p) => {
                        if let Some(r) = &running {
                            r.sampler.send(SamplerCommand::Pause(p));
                        }
                    }
                    Request::Restart(name) => {
                        if let Some(r) = &running {
                            // Restart keeps the live changes made so far.
                            preset = r.session.preset.clone();
                        }
                        if let Some(name) = name {
                            match crate::preset::load(&name) {
                                Ok(p) => preset = p,
                                Err(e) => {
                                    send(Event::Error(format!("{e:#}")));
                                    continue;
                                }
                            }
                        }
                        stop(running.take());
                        match start(&preset, &exe, interval, &mut sys) {
                            Ok((r, s)) => {
                                if let Some(rec) = recorder.as_mut() {
                                    rec.started(&s);
                                }
                                send(Event::Started(Box::new(s)));
                                running = Some(r);
                            }
                            Err(e) => send(Event::Error(e)),
                        }
                    }
                    Request::Record(Some(path)) => match open_recorder(&path) {
                        Ok(mut rec) => {
                            if let Some(r) = &running {
                                rec.started(&r.session.started_info(Vec::new()));
                            }
                            rec.system_knobs(&sys::list(&sys.probe));
                            recorder = Some(rec);
                            send(Event::Recording(Ok(Some(path.display().to_string()))));
                        }
                        Err(e) => send(Event::Recording(Err(e))),
                    },
                    Request::Record(None) => {
                        recorder = None;
                        send(Event::Recording(Ok(None)));
                    }
                    Request::Quit => break,
                }
            }
            drop(recorder);
            stop(running);
            let restored = sys.restore().iter().map(ToString::to_string).collect();
            send(Event::Stopped(restored));
        })?;
    Ok((tx, handle))
}
