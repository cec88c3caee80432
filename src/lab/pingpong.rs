//! A pipe ping-pong between two threads pinned to one CPU, one byte there and back per
//! round: the reference pair the scheduler trace is judged on (`check`, the trace
//! tests, the trace-cost bench). Both threads wait at a gate until `go`, and after
//! their rounds until dropped, so their /proc counters can be read while they sleep.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use crate::cpuset::CpuSet;

/// How long a side may take to pin itself and say who it is.
const GRACE: Duration = Duration::from_secs(5);

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

/// The pair, started and waiting at the gate.
pub struct PingPong {
    /// Thread ids: the waking side (ping) first, the woken side (pong) second.
    pub tids: [i32; 2],
    gate: Arc<Gate>,
    done: mpsc::Receiver<Result<u64>>,
    threads: Vec<JoinHandle<()>>,
}

/// How the pair is set up.
#[derive(Clone, Debug)]
pub struct Setup {
    pub cpu: usize,
    /// The pair's nice value (None: as inherited).
    pub nice: Option<i32>,
    /// How long ping keeps passing the byte once the gate opens.
    pub run: Duration,
    /// Ends the rounds early when set (the user's Ctrl-C).
    pub stop: Option<Arc<AtomicBool>>,
}

fn pipe() -> Result<(File, File)> {
    let (r, w) = nix::unistd::pipe().context("creating a pipe")?;
    Ok((File::from(r), File::from(w)))
}

/// Pin the calling thread (and renice it) and return its tid.
fn settle(cpu: usize, nice: Option<i32>) -> Result<i32> {
    crate::knob::task::set_affinity(0, &CpuSet::single(cpu))
        .map_err(|e| anyhow!("pinning to CPU {cpu}: {}", e.desc()))?;
    if let Some(n) = nice {
        crate::knob::task::set_nice(0, n).map_err(|e| anyhow!("nice {n}: {}", e.desc()))?;
    }
    Ok(nix::unistd::gettid().as_raw())
}

/// The waking side: a byte there and back until `run` passes or `stop` is set, then a
/// 'q' that ends pong. Returns its round trips.
fn ping(mut w: File, mut r: File, run: Duration, stop: Option<&AtomicBool>) -> Result<u64> {
    let mut b = [0u8; 1];
    let start = Instant::now();
    let mut rounds = 0;
    while start.elapsed() < run && !stop.is_some_and(|s| s.load(Ordering::Relaxed)) {
        w.write_all(b"p").context("ping writing")?;
        r.read_exact(&mut b).context("ping reading")?;
        rounds += 1;
    }
    w.write_all(b"q").context("ping ending")?;
    Ok(rounds)
}

/// The woken side: echoes every byte until 'q' (or EOF). Returns its echoes.
fn pong(mut r: File, mut w: File) -> Result<u64> {
    let mut b = [0u8; 1];
    let mut rounds = 0;
    loop {
        match r.read_exact(&mut b) {
            Ok(()) if b[0] == b'q' => return Ok(rounds),
            Ok(()) => w.write_all(&b).context("pong writing")?,
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(rounds),
            Err(e) => return Err(e).context("pong reading"),
        }
        rounds += 1;
    }
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
        for (side, end) in ends.iter_mut().enumerate() {
            let (w, r) = end.take().ok_or_else(|| anyhow!("pipe ends"))?;
            let (gate, tid_tx, done_tx, s) = (
                Arc::clone(&gate),
                tid_tx.clone(),
                done_tx.clone(),
                setup.clone(),
            );
            let name = ["pingpong-ping", "pingpong-pong"][side];
            let t = std::thread::Builder::new()
                .name(name.into())
                .spawn(move || {
                    let settled = settle(s.cpu, s.nice);
                    let ok = settled.is_ok();
                    let _ = tid_tx.send((side, settled));
                    if !ok || gate.wait(Phase::Wait) == Phase::Release {
                        return;
                    }
                    let rounds = if side == 0 {
                        ping(w, r, s.run, s.stop.as_deref())
                    } else {
                        pong(r, w)
                    };
                    let _ = done_tx.send(rounds);
                    gate.wait(Phase::Run);
                })
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

    /// Open the gate: ping starts passing the byte.
    pub fn go(&self) {
        self.gate.set(Phase::Run);
    }

    /// Wait (at most `limit` per side) until both sides are done; the round trips.
    pub fn finish(&self, limit: Duration) -> Result<u64> {
        let mut rounds = 0;
        for _ in 0..2 {
            rounds += self
                .done
                .recv_timeout(limit)
                .map_err(|_| anyhow!("the ping-pong did not finish within {limit:?}"))??;
        }
        // Ping counts round trips, pong its echoes: the same rounds seen from each side.
        Ok(rounds / 2)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_sides_wait_at_the_gate_then_count_the_same_rounds() {
        let pp = PingPong::start(&Setup {
            cpu: 0,
            nice: None,
            run: Duration::from_millis(50),
            stop: None,
        })
        .expect("start");
        assert!(pp.tids.iter().all(|&t| t > 0) && pp.tids[0] != pp.tids[1]);
        // At the gate, nothing is done yet.
        assert!(pp.done.recv_timeout(Duration::from_millis(20)).is_err());
        pp.go();
        let a = pp
            .done
            .recv_timeout(Duration::from_secs(10))
            .expect("one side");
        let b = pp
            .done
            .recv_timeout(Duration::from_secs(10))
            .expect("other side");
        let (a, b) = (a.expect("ok"), b.expect("ok"));
        // Every byte ping sent came back: ping's round trips are pong's echoes.
        assert_eq!(a, b);
        assert!(a > 0);
    }

    #[test]
    fn dropped_at_the_gate_the_threads_leave_without_running() {
        let pp = PingPong::start(&Setup {
            cpu: 0,
            nice: None,
            run: Duration::from_secs(60),
            stop: None,
        })
        .expect("start");
        let t = Instant::now();
        drop(pp);
        // Joined at once: a run of 60 s never started.
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
