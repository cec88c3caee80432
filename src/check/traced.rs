//! The traced ping-pong: two threads pinned to one otherwise idle CPU pass a byte back
//! and forth through two pipes while the sched tracepoints time each wakeup (the woken
//! side's sched_waking to its switch-in).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;

use crate::cpuset::CpuSet;
use crate::knob::journal::Journal;
use crate::lab::pingpong::{PingPong, Setup};
use crate::trace::{TraceFinal, TraceTarget, Tracer};

/// Trace a ping-pong pinned to `cpu` for `duration`: the totals of both sides.
pub fn traced_pingpong(
    cpu: usize,
    duration: Duration,
    stop: &Arc<AtomicBool>,
    journal: &mut Journal,
) -> Result<TraceFinal> {
    let pp = PingPong::start(&Setup {
        stop: Some(Arc::clone(stop)),
        ..Setup::one_cpu(cpu, duration)
    })?;
    let targets = ["ping", "pong"]
        .iter()
        .zip(pp.tids)
        .map(|(name, tid)| TraceTarget {
            tid,
            name: (*name).to_string(),
        })
        .collect();
    // Started before the gate opens, so the trace sees the pair from its first switch;
    // a tracer that cannot start leaves the pair at the gate (dropped unrun). A tenth
    // of the run per interval: the intervals' p99s are the finding's repeats.
    let interval = (duration / 10).max(Duration::from_millis(20));
    let tracer = Tracer::start(&CpuSet::single(cpu), targets, interval, None, journal)?;
    pp.go();
    let finished = pp.finish(duration + Duration::from_secs(10));
    let fin = tracer.stop();
    finished?;
    Ok(fin)
}
