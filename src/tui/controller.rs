//! The controller thread: drives the workbench's [`Experiment`] and owns the journal; the
//! only place the TUI's knob changes touch the kernel. The UI thread sends it the App's
//! [`Effect`]s and it answers with [`Action`]s, the App's own input: one message type
//! each way.

use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::Result;
use tokio::sync::mpsc::UnboundedSender;

use crate::app::{Action, Effect, TimelineError, TRACE_KEEP};
use crate::error::KnobError;
use crate::knob::sys;
use crate::knob::sys::SystemKnobs;
use crate::lab::experiment::{self, Experiment};
use crate::lab::record::{RecordError, Recorder};
use crate::preset::setting::Setting;
use crate::preset::Preset;
use crate::sampler::Interval;
use crate::trace::TraceError;

/// A process attached with the picker (`a`), as it was then: a restart attaches it
/// again only while the same process runs (its pid with the same start time; a pid
/// reused by another process is never taken for it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Picked {
    pub pid: i32,
    /// Clock ticks after boot (/proc/PID/stat field 22).
    pub start: u64,
    pub comm: String,
}

impl Picked {
    /// `sleep (pid 123)`, as the status line names it.
    pub fn label(&self) -> String {
        format!("{} (pid {})", self.comm, self.pid)
    }
}

/// The picked processes that still run as they were picked, and those gone (exited,
/// or their pid now another process's): `start_of` says a pid's start time now.
pub fn still_running(
    picked: Vec<Picked>,
    start_of: impl Fn(i32) -> Option<u64>,
) -> (Vec<Picked>, Vec<Picked>) {
    picked
        .into_iter()
        .partition(|p| start_of(p.pid) == Some(p.start))
}

/// Opens a recorder for a path; given by the TUI so the controller stays format-agnostic.
pub type OpenRecorder = Box<dyn Fn(&std::path::Path) -> Result<Box<dyn Recorder>> + Send>;

/// How long a sampled batch may wait before it is forwarded to the UI (which redraws
/// data every 100 ms at most). At 20 ms, 64 tasks sampled at 50 Hz woke the UI thread
/// for every batch: a third of its CPU (benches/tui-cpu.sh).
const FORWARD_EVERY: Duration = Duration::from_millis(100);

/// What the controller starts with.
pub struct Setup {
    /// The preset a restart starts again (with the live changes made so far).
    pub preset: Preset,
    /// The schedlab binary, whose hidden subcommands are the workers.
    pub exe: PathBuf,
    /// The workbench's one interval: each experiment started samples at it.
    pub interval: Interval,
    /// Which sched_waking events a trace asks the kernel for.
    pub wakings: crate::trace::Wakings,
    pub sys: SystemKnobs,
    pub open_recorder: OpenRecorder,
    /// Where recordings and timelines go: a new file each, named by the time.
    pub record_dir: PathBuf,
}

/// Start the controller thread with the setup's preset running; its news goes to
/// `events`.
pub fn spawn(
    setup: Setup,
    events: UnboundedSender<Action>,
) -> std::io::Result<(Sender<Effect>, JoinHandle<()>)> {
    let (tx, rx): (Sender<Effect>, Receiver<Effect>) = mpsc::channel();
    let handle = std::thread::Builder::new()
        .name("schedlab-controller".into())
        .spawn(move || {
            crate::knob::task::elevate_if_requested(true);
            let mut ctl = Controller {
                setup,
                events,
                running: None,
                recorder: None,
                tracing: false,
                picked: Vec::new(),
                export: None,
            };
            ctl.start();
            ctl.send(Action::SystemKnobs(sys::list(&ctl.setup.sys.probe)));
            ctl.serve(&rx);
            // A timeline half-written is abandoned (its .part file removed), not awaited.
            if let Some(export) = ctl.export.take() {
                export.cancel();
            }
            ctl.stop();
            let restored = ctl
                .setup
                .sys
                .restore()
                .iter()
                .map(ToString::to_string)
                .collect();
            ctl.send(Action::Stopped(restored));
        })?;
    Ok((tx, handle))
}

/// What the controller thread holds between requests.
struct Controller {
    /// What it started with; the preset takes the live changes, for a restart.
    setup: Setup,
    events: UnboundedSender<Action>,
    running: Option<Experiment>,
    /// A recording while no experiment runs (between a failed restart and the next).
    recorder: Option<Box<dyn Recorder>>,
    /// The user turned the trace on: a restarted experiment is traced too.
    tracing: bool,
    /// Processes attached with the picker: a restarted experiment attaches them again.
    picked: Vec<Picked>,
    /// The timeline being written, if any.
    export: Option<super::export::Export>,
}

impl Controller {
    fn send(&self, e: Action) {
        // The UI is gone only when it is quitting; nothing is left to tell.
        let _ = self.events.send(e);
    }

    /// Until the UI quits or hangs up: forward every round, serve every request.
    fn serve(&mut self, rx: &Receiver<Effect>) {
        loop {
            if let Some(exp) = self.running.as_mut() {
                while let Some(polled) = exp.poll(Duration::ZERO) {
                    // Before the batch that may carry their first samples.
                    if !polled.joined.is_empty() {
                        let _ = self.events.send(Action::Joined(polled.joined));
                    }
                    // The batch goes to the UI, which keeps the store.
                    let _ = self.events.send(Action::Batch(Box::new(polled.batch)));
                    for tb in polled.trace {
                        let _ = self.events.send(Action::Trace(Box::new(tb)));
                    }
                }
            }
            // A request wakes this at once; batches wait at most FORWARD_EVERY. Each wake-up
            // of this FIFO thread preempts whatever runs on its CPU (the trace shows it
            // among the experiment's preemptors), so it wakes 10 times a second, not 200.
            let request = match rx.recv_timeout(FORWARD_EVERY) {
                Ok(Effect::Quit) | Err(RecvTimeoutError::Disconnected) => return,
                Ok(r) => r,
                Err(RecvTimeoutError::Timeout) => continue,
            };
            self.handle(request);
        }
    }

    fn handle(&mut self, request: Effect) {
        match request {
            Effect::Apply(s) => self.apply(&s),
            Effect::IntervalChanged => {
                if let Some(exp) = &self.running {
                    exp.reschedule();
                }
            }
            Effect::Pause(p) => {
                if let Some(exp) = &self.running {
                    exp.pause(p);
                }
            }
            Effect::Restart(name) => self.restart(name),
            Effect::ToggleRecord => self.toggle_record(),
            Effect::SetTracing(on) => {
                let result = self.set_tracing(on);
                self.send(Action::Tracing(result));
            }
            Effect::ExportTrace => {
                let path = self
                    .setup
                    .record_dir
                    .join(format!("schedlab-trace-{}.pftrace", unix_time()));
                let (started, restarted) = self.export_trace(path);
                if let Err(e) = started {
                    self.send(Action::TraceExported(Err(e)));
                }
                // After the file's news: a trace that could not start again is what
                // the user has to act on.
                if let Err(e) = restarted {
                    self.send(Action::Tracing(Err(e)));
                }
            }
            Effect::Attach(pid) => self.attach(pid),
            // The UI thread's own (the process list) or a replay's; Quit ends `serve`.
            Effect::ListProcesses | Effect::Step(_) | Effect::Seek(_) | Effect::Quit => {}
        }
    }

    /// Start `self.setup.preset`; a failure is news for the UI, not the end of the workbench.
    fn start(&mut self) {
        let opts = experiment::Options {
            interval: self.setup.interval.clone(),
            trace: experiment::Trace::Off,
            wakings: self.setup.wakings,
        };
        match Experiment::start(
            self.setup.preset.clone(),
            &[],
            &self.setup.exe,
            &mut self.setup.sys,
            &opts,
        ) {
            Ok(mut exp) => {
                self.send(Action::Started(Box::new(exp.started().clone())));
                if let Some(rec) = self.recorder.take() {
                    exp.record(Some(rec), &self.setup.sys);
                }
                self.running = Some(exp);
                // Only a refusal is news: the UI still shows the trace as on.
                if self.tracing {
                    if let Err(e) = self.set_tracing(true) {
                        self.send(Action::Tracing(Err(e)));
                    }
                }
            }
            Err(e) => self.send(Action::Error(format!("{e:#}"))),
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
            Some(exp) => exp.apply(s, &mut self.setup.sys).result.clone(),
            None => Err(KnobError::invalid(format!("{s}: no workload is running"))),
        };
        self.send(Action::KnobResult {
            setting: s.to_string(),
            result,
        });
        if s.target == "sys" {
            self.send(Action::SystemKnobs(sys::list(&self.setup.sys.probe)));
        }
    }

    /// Attach to a process the user picked, and remember it for restarts.
    fn attach(&mut self, pid: i32) {
        // Who it is before attaching: the start time is the one of the process attached.
        let who = crate::workload::attach::identity(pid);
        match self.running.as_mut().map(|exp| exp.attach(pid)) {
            Some(Ok(joined)) => {
                if let Some((pid, start, comm)) = who {
                    let p = Picked { pid, start, comm };
                    if !self.picked.contains(&p) {
                        self.picked.push(p);
                    }
                }
                self.send(Action::Joined(joined));
            }
            Some(Err(e)) => self.send(Action::Error(e.to_string())),
            None => self.send(Action::Error(
                "no experiment is running to attach to (restart it first)".into(),
            )),
        }
    }

    /// After a start: attach the picked processes again, those still running as they
    /// were picked; the others are dropped, and the UI told in one line.
    fn reattach(&mut self) {
        let Some(exp) = self.running.as_mut() else {
            return;
        };
        if self.picked.is_empty() {
            return;
        }
        let (running, mut gone) = still_running(
            std::mem::take(&mut self.picked),
            crate::workload::attach::running_start,
        );
        let mut tasks = Vec::new();
        let mut kept = Vec::new();
        for p in running {
            match exp.attach(p.pid) {
                Ok(joined) => {
                    tasks.extend(joined);
                    kept.push(p.label());
                    self.picked.push(p);
                }
                // Still the process picked, yet not attachable: the preset started
                // attached to it already (its tasks are in), or it just exited.
                Err(_) => {
                    if crate::workload::attach::running_start(p.pid) == Some(p.start) {
                        self.picked.push(p);
                    } else {
                        gone.push(p);
                    }
                }
            }
        }
        if !kept.is_empty() || !gone.is_empty() {
            self.send(Action::Reattached {
                tasks,
                kept,
                gone: gone.iter().map(Picked::label).collect(),
            });
        }
    }

    /// Start again: the same preset with the live changes made so far, or `name`; then
    /// the processes picked with `a` join again.
    fn restart(&mut self, name: Option<String>) {
        if let Some(exp) = &self.running {
            let started = self.setup.preset.groups.len();
            self.setup.preset = exp.session().preset.clone();
            // What joined while it ran (picked processes, new threads and children, each
            // a group after the preset's) is not started again by its pid and tid, which
            // may name other tasks by now: picked processes are attached again below,
            // checked by start time, and new threads and children are followed again.
            self.setup.preset.groups.truncate(started);
        }
        if let Some(name) = name {
            match crate::preset::load(&name) {
                Ok(p) => self.setup.preset = p,
                Err(e) => {
                    self.send(Action::Error(format!("{e:#}")));
                    return;
                }
            }
        }
        self.stop();
        self.start();
        self.reattach();
    }

    /// Stop the recording, or start one in a new file.
    fn toggle_record(&mut self) {
        let recording = match &self.running {
            Some(exp) => exp.recording(),
            None => self.recorder.is_some(),
        };
        let path = (!recording).then(|| {
            self.setup
                .record_dir
                .join(format!("schedlab-{}.jsonl", unix_time()))
        });
        self.record(path);
    }

    fn record(&mut self, path: Option<PathBuf>) {
        let Some(path) = path else {
            if let Some(exp) = self.running.as_mut() {
                exp.record(None, &self.setup.sys);
            }
            self.recorder = None;
            self.send(Action::Recording(Ok(None)));
            return;
        };
        match (self.setup.open_recorder)(&path) {
            Ok(rec) => {
                match self.running.as_mut() {
                    Some(exp) => exp.record(Some(rec), &self.setup.sys),
                    None => {
                        let mut rec = rec;
                        rec.system_knobs(&sys::list(&self.setup.sys.probe));
                        self.recorder = Some(rec);
                    }
                }
                self.send(Action::Recording(Ok(Some(path.display().to_string()))));
            }
            Err(e) => self.send(Action::Recording(Err(RecordError(format!("{e:#}"))))),
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
        let result = exp.set_tracing(on, Some(TRACE_KEEP), &mut self.setup.sys);
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
            self.send(Action::Trace(Box::new(tb)));
        }
    }

    /// Trace on afresh and hand the running trace to a worker that stops it and writes
    /// its kept window to `path`: whether the worker started, and what came of starting
    /// the fresh trace. The controller only opens the fresh trace's events (milliseconds);
    /// the old trace's last drain, the timeline's building and the writing (a second or
    /// more for a busy preset in a debug build) are the worker's, so the workbench stays
    /// live.
    fn export_trace(
        &mut self,
        path: PathBuf,
    ) -> (Result<(), TimelineError>, Result<bool, TraceError>) {
        if self.export.as_ref().is_some_and(|e| !e.finished()) {
            return (Err(TimelineError::Busy), Ok(true));
        }
        let Some(exp) = self.running.as_mut() else {
            return (Err(TimelineError::NoWorkload), Ok(false));
        };
        let (old, restarted) = exp.hand_over_trace(Some(TRACE_KEEP), &mut self.setup.sys);
        self.tracing = restarted.is_ok();
        let Some(old) = old else {
            return (Err(TimelineError::NotTracing), Ok(false));
        };
        let events = exp.events().to_vec();
        let start_ns = exp.start_ns().unwrap_or(0);
        let title = exp.started().preset.name.clone();
        let started: Vec<(i32, i32)> = exp
            .started()
            .tasks
            .iter()
            .map(|task| (task.tid, task.pid))
            .collect();
        let build: super::export::Build = Box::new(move || {
            let fin = old.stop();
            let tasks = crate::report::trace::task_names(&fin);
            let mut t = crate::report::trace::timeline(
                &tasks,
                fin.events_kept,
                &events,
                start_ns,
                &title,
                TRACE_KEEP,
            );
            t.tgids.extend(started);
            t
        });
        self.export = Some(super::export::Export::start(
            build,
            path,
            self.events.clone(),
        ));
        (Ok(()), restarted.map(|()| true))
    }
}

/// Seconds since the epoch, for recording and timeline file names.
fn unix_time() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn picked(pid: i32, start: u64, comm: &str) -> Picked {
        Picked {
            pid,
            start,
            comm: comm.into(),
        }
    }

    #[test]
    fn a_picked_process_is_kept_only_while_its_pid_has_its_start_time() {
        let list = vec![
            picked(10, 500, "sleep"),
            // Exited.
            picked(11, 600, "make"),
            // Its pid now another process's, started later.
            picked(12, 700, "cc1"),
        ];
        let now = |pid| match pid {
            10 => Some(500),
            12 => Some(9_000),
            _ => None,
        };
        let (running, gone) = still_running(list, now);
        assert_eq!(running, [picked(10, 500, "sleep")]);
        assert_eq!(
            gone.iter().map(Picked::label).collect::<Vec<_>>(),
            ["make (pid 11)", "cc1 (pid 12)"]
        );
    }

    #[test]
    fn a_real_process_is_known_by_its_start_time_until_it_exits() {
        let mut child = std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep");
        let (pid, start, comm) =
            crate::workload::attach::identity(child.id() as i32).expect("it runs");
        assert_eq!((pid, comm.as_str()), (child.id() as i32, "sleep"));
        let p = vec![picked(pid, start, "sleep")];
        let now = crate::workload::attach::running_start;
        let (running, gone) = still_running(p.clone(), now);
        assert_eq!((running.len(), gone.len()), (1, 0));
        let _ = child.kill();
        // Killed, not reaped yet: a zombie, gone already (bounded: 2 s).
        let zombie = std::time::Instant::now();
        while crate::state::process_start_ticks(pid).is_some()
            && now(pid).is_some()
            && zombie.elapsed() < std::time::Duration::from_secs(2)
        {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(
            crate::state::process_start_ticks(pid),
            Some(start),
            "a zombie"
        );
        let (running, gone) = still_running(p.clone(), now);
        assert_eq!((running.len(), gone.len()), (0, 1), "a zombie is gone");
        let _ = child.wait();
        let (running, gone) = still_running(p, now);
        assert_eq!((running.len(), gone.len()), (0, 1), "reaped: gone");
    }
}
