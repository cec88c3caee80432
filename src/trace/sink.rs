//! Where the tracer's released events go: the aggregation, the kept window of raw
//! events, and the interval batches sent to the [`super::Tracer`]'s owner.

use std::collections::VecDeque;
use std::sync::mpsc;
use std::time::Duration;

use super::{order, Aggregator, SchedEvent, TraceBatch, TraceTarget, KEEP_MAX_EVENTS};
use crate::sampler::Interval;

/// Where released events go: the aggregation, the kept window, the interval batches.
pub(super) struct Sink {
    pub(super) agg: Aggregator,
    tx: mpsc::Sender<TraceBatch>,
    /// Followed as it changes: each interval closed is as long as the sampler's now.
    pub(super) interval: Interval,
    next_boundary: u64,
    keep_ns: Option<u64>,
    kept: VecDeque<SchedEvent>,
    pub(super) handled: u64,
    pub(super) lost: u64,
    pub(super) undecodable: u64,
    interval_events: u64,
    pub(super) interval_lost: u64,
    pub(super) lost_since_release: bool,
    pub(super) started_ns: u64,
    pub(super) pending: Vec<TraceBatch>,
    /// The receiver is gone (the Tracer was dropped): stop sending.
    orphaned: bool,
}

impl Sink {
    pub(super) fn new(
        targets: &[TraceTarget],
        interval: Interval,
        keep: Option<Duration>,
        tx: mpsc::Sender<TraceBatch>,
        started_ns: u64,
    ) -> Sink {
        Sink {
            agg: Aggregator::new(targets),
            tx,
            next_boundary: started_ns.saturating_add(nanos(&interval)),
            interval,
            keep_ns: keep.map(|k| u64::try_from(k.as_nanos()).unwrap_or(u64::MAX)),
            kept: VecDeque::new(),
            handled: 0,
            lost: 0,
            undecodable: 0,
            interval_events: 0,
            interval_lost: 0,
            lost_since_release: false,
            started_ns,
            pending: Vec::new(),
            orphaned: false,
        }
    }

    /// Records were lost somewhere before the events just read: what a task was doing
    /// across the gap is unknown, so no latency is measured across it.
    pub(super) fn forget_if_lost(&mut self) {
        if self.lost_since_release {
            self.agg.forget();
            self.lost_since_release = false;
        }
    }

    /// Queue an event that concerns a target for ordering; only count the others (no
    /// aggregate depends on their order, and most events of a busy machine are theirs).
    #[inline]
    pub(super) fn route(&mut self, merger: &mut order::Merger, q: usize, ev: SchedEvent) {
        if self.agg.touches(&ev) {
            merger.push(q, ev);
        } else {
            self.handled += 1;
            self.interval_events += 1;
        }
    }

    #[inline]
    pub(super) fn account(&mut self, ev: &SchedEvent) {
        if ev.t_ns >= self.next_boundary {
            self.close_intervals(ev.t_ns);
        }
        self.handled += 1;
        self.interval_events += 1;
        self.agg.record(ev);
        if let Some(keep) = self.keep_ns {
            // Only target events reach here. Bounded: each turn removes one event.
            while self.kept.len() >= KEEP_MAX_EVENTS
                || self
                    .kept
                    .front()
                    .is_some_and(|f| f.t_ns.saturating_add(keep) < ev.t_ns)
            {
                self.kept.pop_front();
            }
            self.kept.push_back(*ev);
        }
    }

    /// Send a batch for every interval that ends at or before `t`.
    pub(super) fn close_intervals(&mut self, t: u64) {
        while self.next_boundary <= t {
            let batch = self.batch(self.next_boundary);
            if !self.orphaned && self.tx.send(batch).is_err() {
                self.orphaned = true;
            }
            self.next_boundary = self.next_boundary.saturating_add(nanos(&self.interval));
        }
    }

    pub(super) fn batch(&mut self, t_ns: u64) -> TraceBatch {
        TraceBatch {
            t_ns,
            tasks: self.agg.take_interval(),
            events: std::mem::take(&mut self.interval_events),
            lost: std::mem::take(&mut self.interval_lost),
            preemptors: self.agg.preemptors(),
        }
    }

    pub(super) fn kept_window(&self, end: u64) -> Vec<SchedEvent> {
        let Some(keep) = self.keep_ns else {
            return Vec::new();
        };
        let from = end.saturating_sub(keep);
        self.kept
            .iter()
            .filter(|e| e.t_ns >= from)
            .copied()
            .collect()
    }
}

/// An interval's length in ns, as the boundaries count it.
pub(super) fn nanos(interval: &Interval) -> u64 {
    u64::try_from(interval.get().as_nanos()).unwrap_or(u64::MAX)
}
