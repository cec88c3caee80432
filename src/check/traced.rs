//! The traced ping-pong: two threads pinned to one otherwise idle CPU pass a byte back
//! and forth through two pipes while the sched tracepoints time each wakeup (the woken
//! side's sched_waking to its switch-in).

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Barrier};
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};

use super::measure::{join, pin};
use crate::cpuset::CpuSet;
use crate::knob::journal::Journal;
use crate::trace::{TraceFinal, TraceTarget, Tracer};

/// How long a side may take to pin itself and say who it is.
const GRACE: Duration = Duration::from_secs(2);

/// Trace a ping-pong pinned to `cpu` for `duration`: the totals of both sides.
pub fn traced_pingpong(
    cpu: usize,
    duration: Duration,
    stop: &Arc<AtomicBool>,
    journal: &mut Journal,
) -> Result<TraceFinal> {
    let (to_pong_r, to_pong_w) = nix::unistd::pipe().context("creating a pipe")?;
    let (to_ping_r, to_ping_w) = nix::unistd::pipe().context("creating a pipe")?;
    let (tid_tx, tid_rx) = mpsc::channel::<Result<(String, i32)>>();
    // Both sides and this thread: the sides start passing bytes once the tracer runs.
    let go = Arc::new(Barrier::new(3));
    let abort = Arc::new(AtomicBool::new(false));
    let side = |name: &'static str| {
        let (tx, go) = (tid_tx.clone(), Arc::clone(&go));
        // Pinned (or why not), named, then held until the tracer runs; a side that could
        // not pin still waits, and the ping side then does not start (see `abort`).
        move || {
            let pinned = pin(cpu).map(|()| (name.to_string(), nix::unistd::gettid().as_raw()));
            let _ = tx.send(pinned);
            go.wait();
        }
    };
    let pong = spawn_pong(side("pong"), File::from(to_pong_r), File::from(to_ping_w))?;
    let ping = spawn_ping(
        side("ping"),
        (File::from(to_pong_w), File::from(to_ping_r)),
        duration,
        [Arc::clone(stop), Arc::clone(&abort)],
    )?;
    drop(tid_tx);
    let mut targets = Vec::new();
    let mut failure = None;
    for _ in 0..2 {
        match tid_rx.recv_timeout(GRACE) {
            Ok(Ok((name, tid))) => targets.push(TraceTarget { tid, name }),
            Ok(Err(e)) => failure = Some(e),
            Err(_) => failure = Some(anyhow!("a ping-pong thread did not start")),
        }
    }
    let tracer = match failure {
        None => Tracer::start(&CpuSet::single(cpu), targets, duration, None, journal)
            .map_err(anyhow::Error::new),
        Some(e) => Err(e),
    };
    abort.store(tracer.is_err(), Ordering::Relaxed);
    go.wait();
    let pinged = join(ping, "ping");
    let fin = tracer.map(Tracer::stop);
    let ponged = join(pong, "pong");
    let fin = fin?;
    pinged?;
    ponged?;
    Ok(fin)
}

/// The woken side: echoes every byte until EOF, when the ping side's write end closes,
/// however it ended.
fn spawn_pong(
    ready: impl FnOnce() + Send + 'static,
    mut r: File,
    mut w: File,
) -> Result<std::thread::JoinHandle<Result<()>>> {
    std::thread::Builder::new()
        .name("check-tpong".into())
        .spawn(move || {
            ready();
            let mut b = [0u8; 1];
            loop {
                match r.read_exact(&mut b) {
                    Ok(()) => w.write_all(&b).context("pong writing")?,
                    Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(()),
                    Err(e) => return Err(e).context("pong reading"),
                }
            }
        })
        .context("starting the pong thread")
}

/// The waking side: a byte there and back until `duration` passes or a flag in `stop`
/// (the user's, or the start's failure) is set.
fn spawn_ping(
    ready: impl FnOnce() + Send + 'static,
    (mut w, mut r): (File, File),
    duration: Duration,
    stop: [Arc<AtomicBool>; 2],
) -> Result<std::thread::JoinHandle<Result<()>>> {
    std::thread::Builder::new()
        .name("check-tping".into())
        .spawn(move || {
            ready();
            let mut b = [0u8; 1];
            let start = Instant::now();
            while start.elapsed() < duration && !stop.iter().any(|s| s.load(Ordering::Relaxed)) {
                w.write_all(&b).context("ping writing")?;
                r.read_exact(&mut b).context("ping reading")?;
            }
            Ok(())
        })
        .context("starting the ping thread")
}
