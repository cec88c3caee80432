//! The [`Tracer`] handle: opening the perf events and starting the tracer thread, taking
//! its batches, and stopping it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use super::{
    grow, ring, tracefs, Aggregator, Decoder, TraceBatch, TraceError, TraceFinal, TraceTarget,
    Unusable, Wakings, Worker,
};
use crate::clock::monotonic_ns;
use crate::sampler::Interval;

/// The running tracer: a thread named "schedlab-trace" that owns the rings.
pub struct Tracer {
    stop: Arc<AtomicBool>,
    rx: mpsc::Receiver<TraceBatch>,
    /// Tasks that joined the experiment, for the thread to account from now on.
    join_tx: mpsc::Sender<Vec<TraceTarget>>,
    /// Told once the thread has turned the events off (before it drains and closes).
    disabled_rx: mpsc::Receiver<()>,
    waking_cross_cpu_only: bool,
    thread: Option<std::thread::JoinHandle<()>>,
    /// The thread's totals, sent before it closes its perf events.
    final_rx: mpsc::Receiver<TraceFinal>,
    started_ns: u64,
    targets: Vec<TraceTarget>,
}

impl Tracer {
    /// Mount tracefs if needed (journaled first-success like mount_debugfs; leave it
    /// mounted only through the journal), read each tracepoint's id and format, open one
    /// perf event per tracepoint per CPU in `cpus` (all pids, that CPU), mmap the rings,
    /// start the thread. Events start flowing at once.
    ///
    /// `interval` is followed as it changes (a [`Duration`] for one that does not). `keep`: how much of the end of the trace
    /// to return as raw events in [`TraceFinal::events_kept`] (None: none). Every
    /// sched_waking is written ([`Wakings::All`]); see [`Tracer::start_with`].
    pub fn start(
        cpus: &crate::cpuset::CpuSet,
        targets: Vec<TraceTarget>,
        interval: impl Into<Interval>,
        keep: Option<Duration>,
        journal: &mut crate::knob::journal::Journal,
    ) -> Result<Tracer, TraceError> {
        Tracer::start_with(cpus, targets, interval, keep, Wakings::All, journal)
    }

    /// [`Tracer::start`], choosing which sched_waking events the kernel writes.
    pub fn start_with(
        cpus: &crate::cpuset::CpuSet,
        targets: Vec<TraceTarget>,
        interval: impl Into<Interval>,
        keep: Option<Duration>,
        wakings: Wakings,
        journal: &mut crate::knob::journal::Journal,
    ) -> Result<Tracer, TraceError> {
        let pages = ring::initial_pages(cpus.count());
        Tracer::start_sized(cpus, targets, interval, keep, wakings, pages, journal)
    }

    /// [`Tracer::start_with`], each CPU's ring starting at `pages` data pages (a power of
    /// two) rather than [`ring::initial_pages`]: the tests start small to see a ring grow.
    pub fn start_sized(
        cpus: &crate::cpuset::CpuSet,
        targets: Vec<TraceTarget>,
        interval: impl Into<Interval>,
        keep: Option<Duration>,
        wakings: Wakings,
        pages: usize,
        journal: &mut crate::knob::journal::Journal,
    ) -> Result<Tracer, TraceError> {
        may_trace(cpus)?;
        let (decoder, ids) = read_tracepoints(journal)?;
        let mut rings = Vec::with_capacity(cpus.count());
        for cpu in cpus.iter() {
            // A locked-memory limit that refuses the larger first ring still takes the
            // old 4 MiB one (which then grows on loss, as far as the limit lets it).
            let opened = ring::CpuRing::open(cpu as u32, &ids, pages, wakings).or_else(|e| {
                if pages > ring::RING_PAGES {
                    ring::CpuRing::open(cpu as u32, &ids, ring::RING_PAGES, wakings)
                } else {
                    Err(e)
                }
            })?;
            rings.push(opened);
        }
        let waking_cross_cpu_only = rings.iter().all(|r| r.waking_filtered);
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        // Stamped before the first ring is enabled: every event the trace holds lies in
        // its window (an event written between the enabling and a later stamp would
        // start a wake-up before the window that other tools, cut to it, leave out).
        let started_ns = monotonic_ns();
        enable_all(&mut rings)?;
        let (join_tx, join_rx) = mpsc::channel();
        let (disabled_tx, disabled_rx) = mpsc::channel();
        let mut worker = Worker::new(
            rings,
            decoder,
            &targets,
            interval.into(),
            keep,
            tx,
            started_ns,
        );
        worker.joins = Some(join_rx);
        worker.disabled = Some(disabled_tx);
        worker.waking_cross_cpu_only = waking_cross_cpu_only;
        worker.grow = grow::Grower::new(ids, wakings);
        let (thread, final_rx) = spawn(worker, stop.clone())?;
        Ok(Tracer {
            stop,
            rx,
            join_tx,
            disabled_rx,
            waking_cross_cpu_only,
            thread: Some(thread),
            final_rx,
            started_ns,
            targets,
        })
    }

    /// The next interval batch if one is ready (non-blocking; the thread sends one per
    /// `interval`).
    pub fn try_recv(&self) -> Option<TraceBatch> {
        self.rx.try_recv().ok()
    }

    /// Account these tasks too from now on (they joined the running experiment).
    pub fn add_targets(&mut self, targets: Vec<TraceTarget>) {
        if targets.is_empty() {
            return;
        }
        self.targets.extend(targets.iter().cloned());
        // A dead thread has nothing to account them in; stop() says why.
        let _ = self.join_tx.send(targets);
    }

    /// Whether the kernel writes sched_waking for cross-CPU wake-ups only.
    pub fn waking_cross_cpu_only(&self) -> bool {
        self.waking_cross_cpu_only
    }

    /// Stop, drain what is left, and return the totals.
    pub fn stop(self) -> TraceFinal {
        self.stop_then(|| ())
    }

    /// Stop, run `at_stop` as soon as the events are off (what the kernel counted up to
    /// the trace's end: closing the perf events afterwards takes a grace period per
    /// event, ~200 ms on a VM, while the experiment goes on), then drain what is left
    /// and return the totals.
    pub fn stop_then(mut self, at_stop: impl FnOnce()) -> TraceFinal {
        self.stop.store(true, Ordering::Release);
        // Bounded: the thread looks at the flag at least every drain period; a dead
        // thread drops the sender and this returns at once.
        let _ = self.disabled_rx.recv_timeout(Duration::from_secs(2));
        at_stop();
        // The thread sends its totals and then closes its events on its own; it is
        // joined only when it died without sending them, for why.
        let joined = match self.final_rx.recv() {
            Ok(fin) => {
                drop(self.thread.take());
                Ok(fin)
            }
            Err(_) => match self.thread.take() {
                Some(t) => match t.join() {
                    Ok(()) => Err("ended without its totals".to_string()),
                    Err(panic) => Err(panic
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "panicked".into())),
                },
                None => Err("already stopped".into()),
            },
        };
        let mut fin = joined.unwrap_or_else(|why| TraceFinal {
            tasks: Aggregator::new(&self.targets).totals(),
            events_kept: Vec::new(),
            handled: 0,
            lost: 0,
            cpu_ns: 0,
            started_ns: self.started_ns,
            elapsed_ns: monotonic_ns().saturating_sub(self.started_ns),
            pending: Vec::new(),
            undecodable: 0,
            late: 0,
            idle_switches_filled: 0,
            idle_switches_inferred: 0,
            rings_grown: 0,
            waking_cross_cpu_only: self.waking_cross_cpu_only,
            failure: Some(format!("the tracer thread died: {why}")),
        });
        let mut pending: Vec<TraceBatch> = self.rx.try_iter().collect();
        pending.append(&mut fin.pending);
        fin.pending = pending;
        fin
    }
}

impl Drop for Tracer {
    /// A tracer dropped without `stop` still stops its thread (and so its events).
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Whether this process may trace `cpus`: some CPU, and root or a
/// perf_event_paranoid that lets anyone open system-wide tracepoint events.
fn may_trace(cpus: &crate::cpuset::CpuSet) -> Result<(), TraceError> {
    if cpus.is_empty() {
        return Err(TraceError::NoCpus);
    }
    let paranoid = ring::paranoid();
    if !nix::unistd::geteuid().is_root() && paranoid.is_none_or(|p| p > -1) {
        return Err(TraceError::NotRoot {
            paranoid: paranoid.map_or("unreadable".into(), |p| p.to_string()),
        });
    }
    Ok(())
}

/// The tracepoints' formats from tracefs (mounted through `journal` if need be): the
/// decoder built from them, and each tracepoint's perf id.
fn read_tracepoints(
    journal: &mut crate::knob::journal::Journal,
) -> Result<(Decoder, Vec<ring::TracepointId>), TraceError> {
    let root = tracefs::ensure(journal)?;
    let formats = tracefs::read_formats(&root)?;
    // The decoder's messages start with the tracepoint's name.
    let decoder = Decoder::new(&formats).map_err(|Unusable(why)| TraceError::BadFormat {
        name: why
            .split([' ', ':'])
            .next()
            .unwrap_or("sched_switch")
            .to_string(),
        why,
    })?;
    let ids: Vec<ring::TracepointId> = formats
        .all()
        .iter()
        .map(|f| ring::TracepointId {
            name: f.name.clone(),
            id: u64::from(f.id),
        })
        .collect();
    Ok((decoder, ids))
}

/// Turn every ring's events on; if one refuses, all off again.
fn enable_all(rings: &mut [ring::CpuRing]) -> Result<(), TraceError> {
    for q in 0..rings.len() {
        if let Err(e) = rings[q].enable() {
            rings.iter_mut().for_each(ring::CpuRing::disable);
            return Err(e);
        }
    }
    Ok(())
}

/// Start the "schedlab-trace" thread running `worker` until `stop`; the receiver of
/// the totals it sends before closing its events.
fn spawn(
    mut worker: Worker,
    stop: Arc<AtomicBool>,
) -> Result<(std::thread::JoinHandle<()>, mpsc::Receiver<TraceFinal>), TraceError> {
    let (final_tx, final_rx) = mpsc::channel();
    let thread = std::thread::Builder::new()
        .name("schedlab-trace".into())
        .spawn(move || {
            // The tracer is the instrument, like the sampler: as the sampler runs
            // (nice -20 headless, FIFO 99 in the workbench), or a nice-0 thread
            // beside a busy experiment falls behind and the rings overflow.
            crate::knob::task::elevate_if_requested(true);
            let fin = worker.run(&stop);
            let _ = final_tx.send(fin);
            // Closing the perf events takes a grace period each (~200 ms in all on
            // a VM): after the totals are handed over, so that whoever stops the
            // trace (the workbench's controller) does not stand still for it.
            drop(worker);
        })
        .map_err(|e| TraceError::Thread(e.to_string()))?;
    Ok((thread, final_rx))
}
