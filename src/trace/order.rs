//! Putting the per-CPU event streams into one time order. Each CPU's ring already holds
//! that CPU's events in the order they happened; across CPUs an event is only final once
//! every ring has been read past its time. The tracer reads the clock, then drains all
//! rings, and releases only events older than that reading minus a slack (an event's
//! record is written a little after its timestamp is taken), merging the queues by time.
//! Ties keep ring order (then CPU order), so events of one CPU never swap.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::SchedEvent;

/// Per-ring queues of events not yet released.
pub struct Merger {
    queues: Vec<VecDeque<SchedEvent>>,
    /// The fronts of the queues that have an event to release: (time, queue), min first.
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// Everything before this has been released.
    released_to: u64,
    late: u64,
}

impl Merger {
    pub fn new(queues: usize) -> Merger {
        Merger {
            queues: (0..queues)
                .map(|_| VecDeque::with_capacity(1 << 14))
                .collect(),
            heap: BinaryHeap::with_capacity(queues),
            released_to: 0,
            late: 0,
        }
    }

    /// Queue an event read from ring `q`. An event older than what was already
    /// released is still queued (and counted as late): it is out of order, not wrong.
    #[inline]
    pub fn push(&mut self, q: usize, ev: SchedEvent) {
        if ev.t_ns < self.released_to {
            self.late += 1;
        }
        let Some(queue) = self.queues.get_mut(q) else {
            return;
        };
        match queue.back() {
            Some(last) if last.t_ns > ev.t_ns => {
                // Rare (an interrupt's event written between another's timestamp and
                // its record): insert in place, after events of the same time.
                let at = queue.partition_point(|e| e.t_ns <= ev.t_ns);
                queue.insert(at, ev);
            }
            _ => queue.push_back(ev),
        }
    }

    /// Release, oldest first, every queued event older than `horizon`.
    pub fn release(&mut self, horizon: u64, mut f: impl FnMut(&SchedEvent)) {
        let Merger { queues, heap, .. } = self;
        heap.clear();
        for (q, queue) in queues.iter().enumerate() {
            if let Some(e) = queue.front().filter(|e| e.t_ns < horizon) {
                heap.push(Reverse((e.t_ns, q)));
            }
        }
        while let Some(Reverse((_, q))) = heap.pop() {
            let queue = &mut queues[q];
            // Take from this queue while it stays ahead of every other front (in the
            // heap's order: time, then queue): no heap traffic for runs of one CPU.
            while let Some(n) = queue.front() {
                let ahead = heap.peek().is_none_or(|Reverse(top)| (n.t_ns, q) < *top);
                if n.t_ns >= horizon || !ahead {
                    break;
                }
                if let Some(n) = queue.pop_front() {
                    f(&n);
                }
            }
            if let Some(n) = queue.front().filter(|n| n.t_ns < horizon) {
                heap.push(Reverse((n.t_ns, q)));
            }
        }
        self.released_to = self.released_to.max(horizon);
    }

    /// Events queued, not yet released.
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.queues.iter().map(VecDeque::len).sum()
    }

    /// Events that arrived after their time had been released.
    pub fn late(&self) -> u64 {
        self.late
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::EventKind;

    fn ev(t_ns: u64, cpu: u32, pid: i32) -> SchedEvent {
        SchedEvent {
            t_ns,
            cpu,
            kind: EventKind::Wakeup {
                pid,
                waker: 0,
                target_cpu: cpu as i32,
            },
        }
    }

    fn released(m: &mut Merger, horizon: u64) -> Vec<(u64, u32)> {
        let mut out = Vec::new();
        m.release(horizon, |e| out.push((e.t_ns, e.cpu)));
        out
    }

    #[test]
    fn interleaves_cpus_by_time_and_holds_back_the_recent() {
        let mut m = Merger::new(2);
        for t in [10, 20, 30, 40, 90] {
            m.push(0, ev(t, 0, 1));
        }
        for t in [5, 25, 26, 27, 35, 95] {
            m.push(1, ev(t, 1, 2));
        }
        assert_eq!(
            released(&mut m, 50),
            vec![
                (5, 1),
                (10, 0),
                (20, 0),
                (25, 1),
                (26, 1),
                (27, 1),
                (30, 0),
                (35, 1),
                (40, 0)
            ]
        );
        assert_eq!(m.pending(), 2);
        // CPU 1 reports an event older than CPU 0's held-back one.
        m.push(1, ev(60, 1, 2));
        assert_eq!(m.late(), 0);
        assert_eq!(released(&mut m, 100), vec![(60, 1), (90, 0), (95, 1)]);
        m.push(0, ev(70, 0, 1));
        assert_eq!(m.late(), 1, "older than what was released");
        assert_eq!(released(&mut m, u64::MAX), vec![(70, 0)]);
        assert_eq!(m.pending(), 0);
    }

    #[test]
    fn an_out_of_order_event_within_a_ring_is_put_in_place() {
        let mut m = Merger::new(1);
        for t in [10, 30, 20, 30, 25] {
            m.push(0, ev(t, 0, 1));
        }
        let got: Vec<u64> = released(&mut m, u64::MAX).iter().map(|x| x.0).collect();
        assert_eq!(got, vec![10, 20, 25, 30, 30]);
    }

    #[test]
    fn ties_keep_ring_order_and_then_cpu_order() {
        let mut m = Merger::new(3);
        m.push(0, ev(10, 0, 1));
        m.push(0, ev(10, 0, 2));
        m.push(1, ev(10, 1, 3));
        m.push(2, ev(5, 2, 4));
        m.push(2, ev(10, 2, 5));
        let mut pids = Vec::new();
        m.release(u64::MAX, |e| {
            if let EventKind::Wakeup { pid, .. } = e.kind {
                pids.push(pid)
            }
        });
        assert_eq!(pids, vec![4, 1, 2, 3, 5]);
    }

    #[test]
    fn matches_a_sort_on_random_streams() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for round in 0..50 {
            let cpus = 1 + (round % 4);
            let mut m = Merger::new(cpus);
            let mut all = Vec::new();
            let mut clocks = vec![0u64; cpus];
            let mut out = Vec::new();
            for step in 0..40 {
                for _ in 0..(next() % 30) {
                    let c = (next() % cpus as u64) as usize;
                    clocks[c] += next() % 7;
                    let e = ev(clocks[c], c as u32, 0);
                    all.push(e.t_ns);
                    m.push(c, e);
                }
                let horizon = *clocks.iter().min().unwrap_or(&0);
                m.release(if step == 39 { u64::MAX } else { horizon }, |e| {
                    out.push(e.t_ns)
                });
            }
            m.release(u64::MAX, |e| out.push(e.t_ns));
            all.sort_unstable();
            assert_eq!(out, all, "round {round}");
        }
    }
}
