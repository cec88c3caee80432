//! The tracer thread's loop: drain the rings, release the merged events to the sink,
//! close the intervals, and hand over the totals at the stop.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use super::{grow, order, ring, Decoder, IdleGap, Sink, TraceBatch, TraceFinal, TraceTarget};
use crate::clock::monotonic_ns;
use crate::sampler::Interval;

/// How often the rings are drained (or more often when an interval is shorter).
const DRAIN_PERIOD_NS: u64 = 10_000_000;
/// How far behind the drain's clock reading events are released: the kernel takes an
/// event's timestamp a moment before its record is visible in the ring.
const SLACK_NS: u64 = 2_000_000;

/// The tracer thread's state: the rings and their reading, and what is done with the
/// events (kept apart so the merger can hand events to the sink).
pub(super) struct Worker {
    pub(super) rings: Vec<ring::CpuRing>,
    pub(super) decoder: Decoder,
    pub(super) merger: order::Merger,
    pub(super) scratch: Box<[u8; ring::MAX_RECORD]>,
    pub(super) sink: Sink,
    pub(super) idle: IdleGap,
    pub(super) joins: Option<mpsc::Receiver<Vec<TraceTarget>>>,
    pub(super) disabled: Option<mpsc::Sender<()>>,
    pub(super) waking_cross_cpu_only: bool,
    /// How to open a larger ring for a CPU that lost records.
    pub(super) grow: grow::Grower,
}

impl Worker {
    pub(super) fn new(
        rings: Vec<ring::CpuRing>,
        decoder: Decoder,
        targets: &[TraceTarget],
        interval: Interval,
        keep: Option<Duration>,
        tx: mpsc::Sender<TraceBatch>,
        started_ns: u64,
    ) -> Worker {
        let cpus: Vec<u32> = rings.iter().map(|r| r.cpu).collect();
        Worker {
            idle: IdleGap::new(&cpus),
            merger: order::Merger::new(rings.len()),
            rings,
            decoder,
            joins: None,
            disabled: None,
            waking_cross_cpu_only: false,
            grow: grow::Grower::default(),
            scratch: Box::new([0u8; ring::MAX_RECORD]),
            sink: Sink::new(targets, interval, keep, tx, started_ns),
        }
    }

    pub(super) fn run(&mut self, stop: &AtomicBool) -> TraceFinal {
        let cpu_start = thread_cpu_ns();
        let mut fds: Vec<libc::pollfd> = self
            .rings
            .iter()
            .map(|r| libc::pollfd {
                fd: r.fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let period_ns = DRAIN_PERIOD_NS.min(super::sink::nanos(&self.sink.interval));
        let timeout_ms = (period_ns / 1_000_000).clamp(1, 1000) as libc::c_int;
        // Ends when asked to stop; every wait in it is bounded by the drain period.
        loop {
            let stopping = stop.load(Ordering::Acquire);
            if stopping {
                self.rings.iter_mut().for_each(ring::CpuRing::disable);
                if let Some(tx) = self.disabled.take() {
                    let _ = tx.send(());
                }
            }
            if let Some(joins) = &self.joins {
                for targets in joins.try_iter() {
                    self.sink.agg.add(&targets);
                }
            }
            // The clock first: whatever the rings hold afterwards is at least as new.
            let now = monotonic_ns();
            let lossy = self.drain_all(now);
            if !stopping {
                self.grow_rings(&lossy, &mut fds);
            }
            let horizon = if stopping {
                u64::MAX
            } else {
                now.saturating_sub(SLACK_NS)
            };
            self.sink.forget_if_lost();
            let sink = &mut self.sink;
            self.merger.release(horizon, |ev| sink.account(ev));
            if stopping {
                self.sink.close_intervals(now);
                let last = self.sink.batch(now);
                self.sink.pending.push(last);
                break;
            }
            self.sink.close_intervals(horizon);
            // SAFETY: fds is a valid array of pollfd for the duration of the call.
            unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
        }
        let end = monotonic_ns();
        let s = &mut self.sink;
        TraceFinal {
            tasks: s.agg.totals(),
            events_kept: s.kept_window(end),
            handled: s.handled,
            lost: s.lost,
            cpu_ns: thread_cpu_ns().saturating_sub(cpu_start),
            started_ns: s.started_ns,
            elapsed_ns: end.saturating_sub(s.started_ns),
            pending: std::mem::take(&mut s.pending),
            undecodable: s.undecodable,
            late: self.merger.late(),
            idle_switches_filled: self.idle.filled,
            idle_switches_inferred: self.idle.inferred + s.agg.inferred(),
            rings_grown: self.grow.grown,
            waking_cross_cpu_only: self.waking_cross_cpu_only,
            failure: None,
        }
    }
}

/// This thread's CPU time in nanoseconds.
fn thread_cpu_ns() -> u64 {
    nix::time::clock_gettime(nix::time::ClockId::CLOCK_THREAD_CPUTIME_ID)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64)
        .unwrap_or(0)
}
