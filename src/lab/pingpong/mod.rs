//! A pipe ping-pong between two pinned threads, as perf bench sched pipe runs it: the
//! check's switch cost (4-byte messages, one CPU or two) and the pair the scheduler trace
//! is judged on (`check`'s traced step, the trace tests, the trace-cost bench). Both
//! threads wait at a gate until `go`, and after their rounds until dropped, so their
//! /proc counters can be read while they sleep.

mod sides;

use std::fs::File;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{anyhow, Context, Result};

use crate::cpuset::CpuSet;
use crate::knob::errno::{explain, WriteKind};

pub use sides::Measured;

/// How long a side may take to pin itself and say who it is.
const GRACE: Duration = Duration::from_secs(5);

/// perf bench sched pipe's message: one int.
pub const PERF_MESSAGE: usize = 4;

#[derive(Clone, Copy, PartialEq)]
enum Phase {
    /// At the gate.
    Wait,
    Run,
    /// Dropped: leave (without running, if still at the gate).
    Release,
}

struct Gate {
    phase: Mutex<Phase>,
    moved: Condvar,
}

impl Gate {
    fn set(&self, p: Phase) {
        *self.phase.lock().unwrap_or_else(|e| e.into_inner()) = p;
        self.moved.notify_all();
    }

    /// Block while the phase is `while_in`; returns the phase it moved to.
    fn wait(&self, while_in: Phase) -> Phase {
        let mut p = self.phase.lock().unwrap_or_else(|e| e.into_inner());
        while *p == while_in {
            p = self.moved.wait(p).unwrap_or_else(|e| e.into_inner());
        }
        *p
    }
}

/// Where the two sides run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pinning {
    /// Both on one CPU: each round trip is two context switches there.
    Same(usize),
    /// The waking side on `ping`, the echo side on `pong`: each wakeup crosses CPUs.
    Two { ping: usize, pong: usize },
}

impl Pinning {
    fn cpus(self) -> [usize; 2] {
        match self {
            Pinning::Same(c) => [c, c],
            Pinning::Two { ping, pong } => [ping, pong],
        }
    }
}

/// How long the waking side keeps passing the message once the gate opens.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Length {
    /// For this long (checked every few round trips).
    For(Duration),
    /// This many round trips (perf bench's --loops).
    Rounds(u64),
}

/// How the pair is set up.
#[derive(Clone, Debug)]
pub struct Setup {
    pub pin: Pinning,
    /// Bytes per message each way.
    pub message: usize,
    pub length: Length,
    /// The pair's nice value (None: as inherited).
    pub nice: Option<i32>,
    /// Ends the rounds early when set (the user's Ctrl-C).
    pub stop: Option<Arc<AtomicBool>>,
}

impl Setup {
    /// The traced pair: one byte each way, both on `cpu`, for `run`.
    pub fn one_cpu(cpu: usize, run: Duration) -> Setup {
        Setup {
            pin: Pinning::Same(cpu),
            message: 1,
            length: Length::For(run),
            nice: None,
            stop: None,
        }
    }

    /// `perf bench sched pipe -T` pinned as `pin`, timed for `run`.
    pub fn sched_pipe(pin: Pinning, run: Duration, stop: &Arc<AtomicBool>) -> Setup {
        Setup {
            pin,
            message: PERF_MESSAGE,
            length: Length::For(run),
            nice: None,
            stop: Some(Arc::clone(stop)),
        }
    }
}

/// What a side ends with.
enum Done {
    Ping(Measured),
    Echo(u64),
}

/// The pair, started and waiting at the gate.
pub struct PingPong {
    /// Thread ids: the waking side (ping) first, the woken side (pong) second.
    pub tids: [i32; 2],
    gate: Arc<Gate>,
    done: mpsc::Receiver<Result<Done>>,
    threads: Vec<JoinHandle<()>>,
}

/// A pipe closed on exec: a program another thread starts meanwhile (a worker, a
/// reference tool) must not keep the pair's ends open for its whole life.
fn pipe() -> Result<(File, File)> {
    let (r, w) = nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("creating a pipe")?;
    Ok((File::from(r), File::from(w)))
}

/// Pin the calling thread (and renice it) and return its tid.
fn settle(cpu: usize, nice: Option<i32>) -> Result<i32> {
    crate::knob::task::set_affinity(0, &CpuSet::single(cpu)).map_err(|e| {
        anyhow!(
            "pinning to CPU {cpu} failed: {}",
            explain(e, WriteKind::Affinity)
        )
    })?;
    if let Some(n) = nice {
        crate::knob::task::set_nice(0, n).map_err(|e| anyhow!("nice {n}: {}", e.desc()))?;
    }
    Ok(nix::unistd::gettid().as_raw())
}

/// One side's thread: settle, say who it is, wait at the gate, run its loop, then wait
/// until the pair is dropped.
fn side(
    side: usize,
    (w, r): (File, File),
    s: Setup,
    gate: Arc<Gate>,
    tid_tx: mpsc::Sender<(usize, Result<i32>)>,
    done_tx: mpsc::Sender<Result<Done>>,
) {
    let settled = settle(s.pin.cpus()[side], s.nice);
    let ok = settled.is_ok();
    let _ = tid_tx.send((side, settled));
    if !ok || gate.wait(Phase::Wait) == Phase::Release {
        return;
    }
    let done = if side == 0 {
        sides::ping(w, r, s.message, s.length, s.stop.as_deref()).map(Done::Ping)
    } else {
        sides::echo(r, w, s.message).map(Done::Echo)
    };
    let _ = done_tx.send(done);
    gate.wait(Phase::Run);
}

impl PingPong {
    /// Start both threads, pinned; they wait at the gate. Fails if a side cannot pin.
    pub fn start(setup: &Setup) -> Result<PingPong> {
        let (to_pong_r, to_pong_w) = pipe()?;
        let (to_ping_r, to_ping_w) = pipe()?;
        let gate = Arc::new(Gate {
            phase: Mutex::new(Phase::Wait),
            moved: Condvar::new(),
        });
        let (tid_tx, tid_rx) = mpsc::channel::<(usize, Result<i32>)>();
        let (done_tx, done) = mpsc::channel();
        let mut pp = PingPong {
            tids: [0; 2],
            gate: Arc::clone(&gate),
            done,
            threads: Vec::new(),
        };
        let mut ends = [
            Some((to_pong_w, to_ping_r)), // ping writes to pong, reads from pong
            Some((to_ping_w, to_pong_r)),
        ];
        for (n, end) in ends.iter_mut().enumerate() {
            let end = end.take().ok_or_else(|| anyhow!("pipe ends"))?;
            let (gate, tid_tx, done_tx, s) = (
                Arc::clone(&gate),
                tid_tx.clone(),
                done_tx.clone(),
                setup.clone(),
            );
            let t = std::thread::Builder::new()
                .name(["pingpong-ping", "pingpong-pong"][n].into())
                .spawn(move || side(n, end, s, gate, tid_tx, done_tx))
                .context("starting a ping-pong thread")?;
            pp.threads.push(t);
        }
        for _ in 0..2 {
            let (side, tid) = tid_rx
                .recv_timeout(GRACE)
                .map_err(|_| anyhow!("a ping-pong thread did not start"))?;
            pp.tids[side] = tid?;
        }
        Ok(pp)
    }

    /// Open the gate: ping starts passing the message.
    pub fn go(&self) {
        self.gate.set(Phase::Run);
    }

    /// Wait (at most `limit` per side) until both sides are done: what the waking side
    /// measured.
    pub fn measured(&self, limit: Duration) -> Result<Measured> {
        let (mut ping, mut echoes) = (None, None);
        for _ in 0..2 {
            match self
                .done
                .recv_timeout(limit)
                .map_err(|_| anyhow!("the ping-pong did not finish within {limit:?}"))??
            {
                Done::Ping(m) => ping = Some(m),
                Done::Echo(n) => echoes = Some(n),
            }
        }
        match (ping, echoes) {
            (Some(m), Some(n)) if m.loops == n => Ok(m),
            (Some(m), Some(n)) => Err(anyhow!(
                "the echo side answered {n} of {} messages",
                m.loops
            )),
            _ => Err(anyhow!("a ping-pong side did not report")),
        }
    }

    /// Wait (at most `limit` per side) until both sides are done; the round trips.
    pub fn finish(&self, limit: Duration) -> Result<u64> {
        self.measured(limit).map(|m| m.loops)
    }
}

impl Drop for PingPong {
    fn drop(&mut self) {
        self.gate.set(Phase::Release);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// Start the pair, open the gate at once and wait for what it measured: perf bench
/// sched pipe's run. `limit`: how long past its length each side may take to end.
pub fn run(setup: &Setup, limit: Duration) -> Result<Measured> {
    let pp = PingPong::start(setup)?;
    pp.go();
    let wait = match setup.length {
        Length::For(d) => d + limit,
        Length::Rounds(_) => limit,
    };
    pp.measured(wait)
}

#[cfg(test)]
mod tests;
