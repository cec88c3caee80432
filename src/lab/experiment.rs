//! The control of a running experiment: the session (workload and task knobs), the
//! sampler thread, the tracer, a recorder when asked, and the log of knob changes.
//! `run`, `sweep`, `compare`, `check` and the workbench's controller all drive an
//! [`Experiment`]: start, poll for rounds, apply knobs, stop. What the rounds say is
//! kept by whoever polls, in a [`super::live::Live`].

use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde::Serialize;

use super::describe::{Started, TaskInfo};
use super::record::Recorder;
use super::session::Session;
use super::switches::{ProcSwitches, WindowCount};
use crate::clock::monotonic_ns;
use crate::error::KnobError;
use crate::knob::sys::{SysKnob, SystemKnobs};
use crate::preset::setting::Setting;
use crate::preset::Preset;
use crate::sampler::{Batch, Command, Interval, Sampler};
use crate::trace::{TraceBatch, TraceError, TraceFinal, TraceTarget, Tracer, Wakings};

/// How an experiment samples and summarises.
#[derive(Clone, Debug)]
pub struct Options {
    /// Shared with whoever steps it (the workbench); the sampler and tracer follow it.
    pub interval: Interval,
    pub trace: Trace,
    /// Which sched_waking events a trace asks the kernel for.
    pub wakings: Wakings,
}

/// Whether an experiment is traced with the sched tracepoints.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trace {
    Off,
    /// Per-task statistics only.
    On,
    /// Statistics, and the raw events of the last this-long kept for a timeline.
    Keeping(Duration),
}

/// A knob change and what came of it.
#[derive(Clone, Debug, PartialEq)]
pub struct KnobEvent {
    /// On the samples' clock, taken once the change is in: a sample stamped before it
    /// never shows the new value.
    pub t_s: f64,
    pub setting: Setting,
    pub result: Result<String, KnobError>,
}

/// The instrument's own cost during a run: CPU time of schedlab's threads (not the
/// workers') from the first sample to the last.
#[derive(Clone, Copy, Debug, Default, Serialize, PartialEq)]
pub struct Observer {
    /// schedlab's CPU time in seconds.
    pub cpu_s: f64,
    /// The same as a fraction of one CPU over the run.
    pub cpu_share: f64,
    /// Sampling rounds taken.
    pub samples: u64,
    /// schedlab's CPU per task per round, in microseconds.
    pub per_task_sample_us: f64,
    /// Of that, the sampler's reading and parsing alone (its rounds' wall time).
    pub sampler_per_task_sample_us: f64,
    /// Seconds from the command to the open start gate: spawning every task, waiting
    /// for each to publish itself, applying its settings.
    pub start_s: f64,
    /// Seconds to kill every task and reap it at the end.
    pub stop_s: f64,
}

/// One sampling round: the batch (recorded already; for the live model, a CSV), what
/// the trace saw, and who joined.
pub struct Polled {
    pub batch: Batch,
    /// What the scheduler trace added since the last round (empty when not tracing).
    pub trace: Vec<TraceBatch>,
    /// Tasks that joined since the last round (new threads and children of attached
    /// processes and commands), after the experiment's others in task order.
    pub joined: Vec<TaskInfo>,
}

/// A running experiment. Dropping it stops the workload (every task and what it forked).
pub struct Experiment {
    session: Session,
    sampler: Sampler,
    /// When the sampler was started: before its first round (CLOCK_MONOTONIC ns).
    sampling_from_ns: u64,
    /// The samples' clock: the first and the latest batch's time (CLOCK_MONOTONIC ns).
    first_ns: Option<u64>,
    last_ns: Option<u64>,
    recorder: Option<Box<dyn Recorder>>,
    events: Vec<KnobEvent>,
    started: Started,
    /// When sampling started: the run's clock before its first batch.
    begun: Instant,
    cpu_at_start: u64,
    rounds: u64,
    sampler_ns: u64,
    start_s: f64,
    /// Reaping costs a wait4 per process: done when a sample shows a task gone, and
    /// otherwise every [`REAP_EVERY`] (a process can exit between a task's reads).
    reap_now: bool,
    last_reap: Instant,
    /// When the last round was asked for (CLOCK_MONOTONIC ns).
    last_asked: Option<u64>,
    wakings: Wakings,
    tracer: Option<Tracer>,
    /// Why tracing was asked for and is not running.
    trace_error: Option<String>,
    /// A trace stopped while the experiment goes on (the workbench's `t`).
    trace_done: Option<TraceFinal>,
    /// /proc's switch counters at the running trace's start, and what they counted
    /// over a trace that stopped.
    trace_base: super::switches::ProcSwitches,
    trace_counted: Vec<WindowCount>,
    /// When new threads and children were last looked for (None: nothing to follow).
    last_follow: Option<Instant>,
    /// Tasks that could not join (the task limit), said once.
    left_out: usize,
}

/// How often the processes an experiment follows are looked at for new threads and
/// children (a scan of /proc: ~1 ms on a desktop's few hundred processes).
const FOLLOW_EVERY: Duration = Duration::from_secs(1);

const REAP_EVERY: Duration = Duration::from_millis(100);

impl Experiment {
    /// Start `preset`'s tasks, apply their settings and `system_sets`, open the gate
    /// and start sampling. Task settings the kernel refuses are in
    /// [`Started::warnings`]; a refused system setting is an error.
    pub fn start(
        preset: Preset,
        system_sets: &[(SysKnob, Setting)],
        exe: &Path,
        sys: &mut SystemKnobs,
        opts: &Options,
    ) -> Result<Experiment> {
        let begun = Instant::now();
        let (session, warnings) = Session::start(preset, system_sets, exe, sys)?;
        let targets = session.sampler_targets();
        let started = session.started_info(warnings);
        // Before the gate opens, so the trace sees the experiment from its first switch.
        let keep = match opts.trace {
            Trace::Off => None,
            Trace::On => Some(None),
            Trace::Keeping(d) => Some(Some(d)),
        };
        let (tracer, trace_error) = match keep {
            Some(keep) => match start_tracer(&session, &opts.interval, keep, opts.wakings, sys) {
                Ok(t) => (Some(t), None),
                Err(e) => (None, Some(e.to_string())),
            },
            None => (None, None),
        };
        let trace_base = if tracer.is_some() {
            proc_switches(&session)
        } else {
            ProcSwitches::default()
        };
        session.open_gate();
        let start_s = begun.elapsed().as_secs_f64();
        let sampling_from_ns = monotonic_ns();
        let sampler = Sampler::spawn(
            targets,
            Some(session.workload.shm()),
            session.workload.usage().cloned(),
            opts.interval.clone(),
        )
        .context("starting the sampler thread")?;
        let last_follow = (!session.follow_roots().is_empty()).then(Instant::now);
        Ok(Experiment {
            session,
            sampler,
            sampling_from_ns,
            first_ns: None,
            last_ns: None,
            recorder: None,
            events: Vec::new(),
            started,
            begun: Instant::now(),
            cpu_at_start: crate::system::own_cpu_ns(),
            rounds: 0,
            sampler_ns: 0,
            start_s,
            reap_now: false,
            last_reap: Instant::now(),
            last_asked: None,
            wakings: opts.wakings,
            tracer,
            trace_error,
            trace_done: None,
            trace_base,
            trace_counted: Vec::new(),
            last_follow,
            left_out: 0,
        })
    }

    /// What the experiment is: preset, tasks, machine, and the settings refused at start.
    pub fn started(&self) -> &Started {
        &self.started
    }

    pub fn session(&self) -> &Session {
        &self.session
    }

    /// The first batch's time (CLOCK_MONOTONIC ns): where the run's clock starts.
    pub fn start_ns(&self) -> Option<u64> {
        self.first_ns
    }

    /// Seconds since the first batch at `t_ns` (0 before it).
    fn t_s(&self, t_ns: u64) -> f64 {
        t_ns.saturating_sub(self.first_ns.unwrap_or(t_ns)) as f64 / 1e9
    }

    pub fn events(&self) -> &[KnobEvent] {
        &self.events
    }

    /// Record from now on (`Some`), beginning with what the experiment is and the system
    /// knobs; or stop recording (`None`).
    pub fn record(&mut self, recorder: Option<Box<dyn Recorder>>, sys: &SystemKnobs) {
        self.recorder = recorder;
        if let Some(r) = self.recorder.as_mut() {
            // Just after the last round taken, or before the first: a round already on
            // its way (the sampler's first is taken at once, often before this) is
            // recorded after this and must not sort before it.
            let t_ns = self.last_ns.map_or(self.sampling_from_ns, |t| t + 1);
            r.started(t_ns, &self.started);
            r.system_knobs(&crate::knob::sys::list(&sys.probe));
        }
    }

    /// Whether a recording is being written.
    pub fn recording(&self) -> bool {
        self.recorder.is_some()
    }

    /// Stop recording and hand the recorder back (to go on recording the next
    /// experiment, after a restart).
    pub fn take_recorder(&mut self) -> Option<Box<dyn Recorder>> {
        self.recorder.take()
    }

    /// Note a change made before the start (a system knob of the command line) in the
    /// recording.
    pub fn record_knob(&mut self, setting: &str, result: &Result<String, KnobError>) {
        if let Some(r) = self.recorder.as_mut() {
            r.knob(setting, result);
        }
    }

    /// Time into the run on the samples' clock (from the first batch); before it, since
    /// sampling started.
    pub fn elapsed(&self) -> Duration {
        match self.first_ns {
            Some(t0) => Duration::from_nanos(monotonic_ns().saturating_sub(t0)),
            None => self.begun.elapsed(),
        }
    }

    /// Time until the next reap is due.
    pub fn reap_due_in(&self) -> Duration {
        REAP_EVERY.saturating_sub(self.last_reap.elapsed())
    }

    /// The next round, if one comes within `timeout`: recorded, and for the caller's
    /// live model. Give the batch back with [`Experiment::recycle`] when done with it.
    pub fn poll(&mut self, timeout: Duration) -> Option<Polled> {
        let batch = self.sampler.recv_timeout(timeout)?;
        self.rounds += 1;
        self.sampler_ns += batch.cost_ns;
        self.reap_now |= batch.tasks.iter().any(|t| !t.alive);
        if let Some(r) = self.recorder.as_mut() {
            r.batch(&batch);
        }
        self.first_ns.get_or_insert(batch.t_ns);
        self.last_ns = Some(batch.t_ns);
        let trace: Vec<TraceBatch> = match &self.tracer {
            Some(t) => std::iter::from_fn(|| t.try_recv()).collect(),
            None => Vec::new(),
        };
        let joined = self.follow();
        Some(Polled {
            batch,
            trace,
            joined,
        })
    }

    /// Every [`FOLLOW_EVERY`]: the new threads and children of what the experiment
    /// follows join it (sampled from the next round on).
    fn follow(&mut self) -> Vec<TaskInfo> {
        let due = self
            .last_follow
            .is_some_and(|t| t.elapsed() >= FOLLOW_EVERY);
        if !due {
            return Vec::new();
        }
        self.last_follow = Some(Instant::now());
        let found = self.session.follow();
        self.take_joined(found)
    }

    /// Attach to one more process (the workbench's picker); its tasks join at once.
    pub fn attach(&mut self, pid: i32) -> Result<Vec<TaskInfo>, crate::error::Invalid> {
        let found = self.session.attach(pid)?;
        self.last_follow.get_or_insert_with(Instant::now);
        Ok(self.take_joined(found))
    }

    /// Tasks that joined into the task list, the tracer's and the sampler's targets.
    fn take_joined(&mut self, (joined, left_out): (Vec<TaskInfo>, usize)) -> Vec<TaskInfo> {
        if left_out > self.left_out {
            self.left_out = left_out;
            let what = if left_out == 1 {
                "1 new thread or process was".to_string()
            } else {
                format!("{left_out} new threads or processes were")
            };
            self.started.warnings.push(format!(
                "{what} not followed: an experiment has at most {} tasks",
                crate::workload::MAX_COUNT
            ));
        }
        if joined.is_empty() {
            return joined;
        }
        for t in &joined {
            self.started.tasks.push(t.clone());
        }
        if let Some(tracer) = self.tracer.as_mut() {
            tracer.add_targets(
                joined
                    .iter()
                    .map(|t| trace_target(t.tid, &t.name))
                    .collect(),
            );
            for t in &joined {
                self.trace_base.add(t.pid, t.tid);
            }
        }
        self.sampler
            .send(Command::SetTargets(self.session.sampler_targets()));
        joined
    }

    /// Hand a batch back so the sampler can reuse its buffers.
    pub fn recycle(&self, batch: Batch) {
        self.sampler.recycle(batch);
    }

    /// Change a knob while the experiment runs; the change is logged, recorded and
    /// read back in the next round.
    pub fn apply(&mut self, setting: &Setting, sys: &mut SystemKnobs) -> &KnobEvent {
        // Stamped as the change begins: a round the sampler takes while this thread is
        // preempted between the write and a later stamp would otherwise show the new
        // value before its mark (seen beside a CPU hog).
        let t_s = self.t_s(monotonic_ns());
        let result = self.session.apply(setting, sys);
        self.sampler.send(Command::ReadAllNext);
        self.record_knob(&setting.to_string(), &result);
        self.events.push(KnobEvent {
            t_s,
            setting: setting.clone(),
            result,
        });
        let last = self.events.len() - 1;
        &self.events[last]
    }

    /// Whether the scheduler trace runs, and why not when it was asked for and refused.
    pub fn tracing(&self) -> (bool, Option<&str>) {
        (self.tracer.is_some(), self.trace_error.as_deref())
    }

    /// Start or stop the scheduler trace while the experiment runs (the workbench's
    /// `t`); a refusal is the error, and the experiment goes on without it.
    pub fn set_tracing(
        &mut self,
        on: bool,
        keep: Option<Duration>,
        sys: &mut SystemKnobs,
    ) -> Result<(), TraceError> {
        let interval = self.sampler.interval().clone();
        match (on, self.tracer.take()) {
            (true, Some(t)) => self.tracer = Some(t),
            (true, None) => match start_tracer(&self.session, &interval, keep, self.wakings, sys) {
                Ok(t) => {
                    self.tracer = Some(t);
                    self.trace_error = None;
                    self.trace_base = proc_switches(&self.session);
                }
                Err(e) => {
                    self.trace_error = Some(e.to_string());
                    return Err(e);
                }
            },
            (false, Some(t)) => {
                let base = &self.trace_base;
                let mut counted = Vec::new();
                self.trace_done = Some(t.stop_then(|| counted = base.since()));
                self.trace_counted = counted;
            }
            (false, None) => {}
        }
        Ok(())
    }

    /// Start a fresh trace beside the running one and hand the running one over, still
    /// running: its new owner stops it and takes its events. The stop's last drain then
    /// happens off the caller's thread, and the fresh trace, opened first, keeps the
    /// tracepoints registered, so closing the old events costs no grace periods. The
    /// old trace's batches not yet polled stay with it (the fresh one covers that
    /// time). None when not tracing; when the fresh trace cannot start, tracing is off
    /// and the old one is handed over all the same.
    pub fn hand_over_trace(
        &mut self,
        keep: Option<Duration>,
        sys: &mut SystemKnobs,
    ) -> (Option<Tracer>, Result<(), TraceError>) {
        let Some(old) = self.tracer.take() else {
            return (None, Ok(()));
        };
        let result = self.set_tracing(true, keep, sys);
        (Some(old), result)
    }

    /// The raw events of a trace stopped with [`Experiment::set_tracing`], if any.
    pub fn stopped_trace(&self) -> Option<&TraceFinal> {
        self.trace_done.as_ref()
    }

    /// The kept events of the stopped trace, moved out (up to 72 MiB: the timeline's
    /// worker owns them rather than a copy); the stopped trace keeps its totals.
    pub fn take_stopped_events(&mut self) -> Vec<crate::trace::SchedEvent> {
        self.trace_done
            .as_mut()
            .map(|t| std::mem::take(&mut t.events_kept))
            .unwrap_or_default()
    }

    /// The shared interval changed: the sampler starts its next round one new interval
    /// from now (the tracer's intervals follow by themselves).
    pub fn reschedule(&self) {
        self.sampler.send(Command::Reschedule);
    }

    pub fn pause(&self, paused: bool) {
        self.sampler.send(Command::Pause(paused));
    }

    /// Whether every task's process has exited (reaped at most every 100 ms, or at
    /// once when a sample showed a task gone).
    pub fn all_exited(&mut self) -> bool {
        if !self.reap_now && self.last_reap.elapsed() < REAP_EVERY {
            return false;
        }
        self.reap_now = false;
        self.last_reap = Instant::now();
        self.session.workload.all_exited()
    }

    /// Ask for one more round so a run ends on a fresh sample (the sampler takes it
    /// no sooner than half an interval after its last: see `Command::SampleNow`).
    pub fn ask_last_sample(&mut self) {
        // Taken before asking, or the answer could predate it.
        self.last_asked = Some(monotonic_ns());
        self.sampler.send(Command::SampleNow);
    }

    /// Whether the last round was asked for.
    pub fn ending(&self) -> bool {
        self.last_asked.is_some()
    }

    /// Whether `batch` is the round asked for last: read after the asking (batches
    /// queued before it, while the caller was busy with a slow knob write, are not).
    pub fn is_last(&self, batch: &Batch) -> bool {
        self.last_asked.is_some_and(|asked| batch.t_ns >= asked)
    }

    /// Stop sampling and the workload; what the experiment was and measured stays.
    pub fn stop(self) -> Finished {
        let Experiment {
            mut session,
            sampler,
            first_ns,
            last_ns,
            events,
            started,
            cpu_at_start,
            rounds,
            sampler_ns,
            start_s,
            tracer,
            trace_error,
            trace_done,
            trace_base,
            mut trace_counted,
            ..
        } = self;
        // First: the teardown's kills are not part of the experiment.
        let trace = match tracer {
            Some(t) => Some(t.stop_then(|| trace_counted = trace_base.since())),
            None => trace_done,
        };
        // Before the sampler thread ends: its CPU time goes with it.
        let cpu_ns = crate::system::own_cpu_ns().saturating_sub(cpu_at_start);
        drop(sampler);
        let stopping = Instant::now();
        session.workload.stop();
        let stop_s = stopping.elapsed().as_secs_f64();
        let task_samples = (rounds * session.workload.tasks.len() as u64).max(1) as f64;
        let duration_s = match (first_ns, last_ns) {
            (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1e9,
            _ => 0.0,
        };
        let observer = Observer {
            cpu_s: cpu_ns as f64 / 1e9,
            cpu_share: cpu_ns as f64 / 1e9 / duration_s.max(1e-9),
            samples: rounds,
            per_task_sample_us: cpu_ns as f64 / 1e3 / task_samples,
            sampler_per_task_sample_us: sampler_ns as f64 / 1e3 / task_samples,
            start_s,
            stop_s,
        };
        Finished {
            session,
            start_ns: first_ns,
            events,
            started,
            observer,
            trace,
            trace_error,
            trace_counted,
        }
    }
}

/// An experiment that has stopped: what it ran, what it measured, what changed.
pub struct Finished {
    /// The session with its workload stopped (exit statuses, shared memory).
    pub session: Session,
    /// The first batch's time (CLOCK_MONOTONIC ns): where the run's clock starts.
    pub start_ns: Option<u64>,
    pub events: Vec<KnobEvent>,
    pub started: Started,
    pub observer: Observer,
    /// The scheduler trace, when one ran.
    pub trace: Option<TraceFinal>,
    /// Why tracing was asked for and did not run.
    pub trace_error: Option<String>,
    /// /proc's switch counts over the trace's own window, per task.
    pub trace_counted: Vec<WindowCount>,
}

/// Trace `session`'s tasks on every online CPU (they may run anywhere the kernel lets
/// them; the preemptors that matter are on the same CPUs).
fn start_tracer(
    session: &Session,
    interval: &Interval,
    keep: Option<Duration>,
    wakings: Wakings,
    sys: &mut SystemKnobs,
) -> Result<Tracer, TraceError> {
    let targets = session
        .workload
        .tasks
        .iter()
        .map(|t| trace_target(t.tid, &t.name))
        .collect();
    Tracer::start_with(
        &session.online,
        targets,
        interval.clone(),
        keep,
        wakings,
        &mut sys.journal,
    )
}

/// What the tracer accounts a task under.
fn trace_target(tid: i32, name: &str) -> TraceTarget {
    TraceTarget {
        tid,
        name: name.to_string(),
    }
}

/// /proc's switch counters of the session's tasks, read as a trace starts.
fn proc_switches(session: &Session) -> ProcSwitches {
    let mut p = ProcSwitches::default();
    for t in &session.workload.tasks {
        p.add(t.pid, t.tid);
    }
    p
}
