//! The two sides' loops, as perf bench sched pipe runs them: a write and a read per round.

use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::Length;

/// Round trips done between two looks at the clock and the stop flag: reading the
/// clock every 16 round trips costs < 1 % of one.
const BATCH: u64 = 16;

/// The shortest chunk the run is timed in (and each chunk of a run of rounds).
const MIN_CHUNK: Duration = Duration::from_millis(20);

/// What the waking side measured.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    /// Round trips: one write+read on each side.
    pub loops: u64,
    pub elapsed: Duration,
    /// us per round trip of each ~tenth of the run (for the spread).
    pub chunks_us: Vec<f64>,
}

impl Measured {
    /// perf bench sched pipe's usecs/op.
    pub fn us_per_op(&self) -> f64 {
        if self.loops == 0 {
            return 0.0;
        }
        self.elapsed.as_secs_f64() * 1e6 / self.loops as f64
    }

    pub fn chunk_range(&self) -> Option<(f64, f64)> {
        let min = self.chunks_us.iter().copied().reduce(f64::min)?;
        let max = self.chunks_us.iter().copied().reduce(f64::max)?;
        Some((min, max))
    }
}

/// The waking side: a message there and back until the length is reached or `stop` is
/// set, timed per chunk. Returning drops its write end: the echo side sees EOF and ends.
pub(super) fn ping(
    mut w: File,
    mut r: File,
    size: usize,
    length: Length,
    stop: Option<&AtomicBool>,
) -> Result<Measured> {
    let (run, mut left, chunk) = match length {
        Length::For(d) => (d, u64::MAX, (d / 10).max(MIN_CHUNK)),
        Length::Rounds(n) => (Duration::MAX, n, MIN_CHUNK),
    };
    let stopped = || stop.is_some_and(|s| s.load(Ordering::Relaxed));
    let mut buf = vec![0u8; size.max(1)];
    let mut loops = 0u64;
    let mut chunks_us = Vec::new();
    let start = Instant::now();
    while left > 0 && start.elapsed() < run && !stopped() {
        let chunk_start = Instant::now();
        let mut n = 0u64;
        while left > 0 && (n == 0 || chunk_start.elapsed() < chunk) {
            let batch = left.min(BATCH);
            for _ in 0..batch {
                w.write_all(&buf).context("ping side writing")?;
                r.read_exact(&mut buf).context("ping side reading")?;
            }
            n += batch;
            left -= batch;
        }
        chunks_us.push(chunk_start.elapsed().as_secs_f64() * 1e6 / n as f64);
        loops += n;
    }
    Ok(Measured {
        loops,
        elapsed: start.elapsed(),
        chunks_us,
    })
}

/// The woken side: sends back every message until the ping side closes its end (EOF),
/// whatever way it ended. Returns its echoes.
pub(super) fn echo(mut r: File, mut w: File, size: usize) -> Result<u64> {
    let mut buf = vec![0u8; size.max(1)];
    let mut n = 0;
    loop {
        match r.read_exact(&mut buf) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(n),
            Err(e) => return Err(e).context("echo side reading"),
        }
        w.write_all(&buf).context("echo side writing")?;
        n += 1;
    }
}
