//! Putting back the switches from idle that some kernels never show as sched_switch
//! (see the module doc of `trace`), and pacing the context-switch records for it.

use super::{decode, EventKind, SchedEvent};

/// Switches from the idle task that the kernel did not deliver as sched_switch, put
/// back from perf's context-switch records or inferred. Per ring it remembers who the
/// last sched_switch switched in: a switch-in record for that task is the same switch
/// (the record comes just after the tracepoint), one for another task after idle is a
/// switch the tracepoint never showed, and a task switching out of a CPU last seen
/// idle was switched in unseen. Kernels that show every switch from idle prove it
/// after [`IDLE_PROOF`] matched switches, and the records stay off from then on.
pub(super) struct IdleGap {
    last_next: Vec<i32>,
    /// When each CPU was last seen idle (going idle, or leaving it as far as shown).
    idle_at: Vec<u64>,
    swapper: Vec<[u8; 16]>,
    /// Switch-ins from idle that the tracepoints showed too.
    matched: u64,
    /// One was missing: this kernel hides switches from idle.
    blind: bool,
    pub(super) filled: u64,
    pub(super) inferred: u64,
}

/// Matched switches from idle, and none missing, after which the tracepoints are
/// trusted to show them all.
const IDLE_PROOF: u64 = 256;

/// A CPU that has not gone idle for this long writes no context-switch records: the
/// records cost two per switch, and a busy CPU has no switch from idle to fill.
pub const IDLE_QUIET_NS: u64 = 100_000_000;

impl IdleGap {
    pub(super) fn new(cpus: &[u32]) -> IdleGap {
        IdleGap {
            last_next: vec![-1; cpus.len()],
            idle_at: vec![0; cpus.len()],
            swapper: cpus.iter().map(|&c| swapper_comm(c)).collect(),
            matched: 0,
            blind: false,
            filled: 0,
            inferred: 0,
        }
    }

    /// An event on ring `q`; for a sched_switch, the untimed switch-in of its prev that
    /// it proves was missed, if the CPU was last seen going idle.
    #[inline]
    pub(super) fn saw_switch(&mut self, q: usize, ev: &SchedEvent) -> Option<SchedEvent> {
        let EventKind::Switch {
            prev_pid, next_pid, ..
        } = ev.kind
        else {
            return None;
        };
        let last = self.last_next.get_mut(q)?;
        let missed = *last == 0 && prev_pid != 0;
        *last = next_pid;
        if next_pid == 0 || prev_pid == 0 || missed {
            self.saw_idle(q, ev.t_ns);
        }
        if !missed {
            return None;
        }
        self.blind = true;
        self.inferred += 1;
        Some(SchedEvent {
            t_ns: ev.t_ns,
            cpu: ev.cpu,
            kind: EventKind::SwitchedIn { pid: prev_pid },
        })
    }

    /// Ring `q`'s CPU was idle at `t` (going idle or leaving it).
    fn saw_idle(&mut self, q: usize, t: u64) {
        if let Some(at) = self.idle_at.get_mut(q) {
            *at = (*at).max(t);
        }
    }

    /// Whether the kernel has proven it shows switches from idle.
    fn proven(&self) -> bool {
        !self.blind && self.matched >= IDLE_PROOF
    }

    /// Whether ring `q`'s CPU should write context-switch records now: it is idle or
    /// went idle within [`IDLE_QUIET_NS`], and the kernel has not proven them useless.
    pub(super) fn wants_records(&self, q: usize, now: u64) -> bool {
        if self.proven() {
            return false;
        }
        let idle_now = self.last_next.get(q) == Some(&0);
        let idle_lately = self
            .idle_at
            .get(q)
            .is_some_and(|&at| at > 0 && now.saturating_sub(at) < IDLE_QUIET_NS);
        idle_now || idle_lately
    }

    /// The Switch event a switch-in record stands for, if the tracepoints missed it.
    #[inline]
    pub(super) fn fill(&mut self, q: usize, s: decode::SwitchIn) -> Option<SchedEvent> {
        let last = self.last_next.get_mut(q)?;
        if s.prev_tid != 0 {
            return None;
        }
        if *last == s.tid {
            self.matched += 1;
            return None;
        }
        *last = s.tid;
        self.blind = true;
        self.filled += 1;
        self.saw_idle(q, s.t_ns);
        Some(SchedEvent {
            t_ns: s.t_ns,
            cpu: s.cpu,
            kind: EventKind::Switch {
                prev_pid: 0,
                prev_state: 0,
                next_pid: s.tid,
                prev_comm: self.swapper[q],
                // Not in the record.
                next_comm: [0; 16],
            },
        })
    }
}

/// "swapper/N", the idle task's name, without allocating per event.
fn swapper_comm(cpu: u32) -> [u8; 16] {
    let mut c = [0u8; 16];
    let text = format!("swapper/{cpu}");
    let n = text.len().min(15);
    c[..n].copy_from_slice(&text.as_bytes()[..n]);
    c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_as_documented() {
        assert_eq!(std::mem::size_of::<SchedEvent>(), 72);
        assert_eq!(swapper_comm(1), *b"swapper/1\0\0\0\0\0\0\0");
        assert_eq!(&swapper_comm(123_456_789)[..15], b"swapper/1234567");
        assert_eq!(swapper_comm(123_456_789)[15], 0);
    }

    fn switch_ev(t_ns: u64, cpu: u32, prev_pid: i32, next_pid: i32) -> SchedEvent {
        SchedEvent {
            t_ns,
            cpu,
            kind: EventKind::Switch {
                prev_pid,
                prev_state: 1,
                next_pid,
                prev_comm: [0; 16],
                next_comm: [0; 16],
            },
        }
    }

    #[test]
    fn idle_gap_fills_only_switches_the_tracepoints_missed() {
        let mut g = IdleGap::new(&[0, 1]);
        let rec = |tid, prev_tid| decode::SwitchIn {
            t_ns: 100,
            cpu: 1,
            tid,
            prev_tid,
        };
        let sw = |t_ns, prev, next| switch_ev(t_ns, 1, prev, next);
        // The tracepoint showed the switch from idle to 7: the record is the same switch.
        assert_eq!(g.saw_switch(1, &sw(50, 0, 7)), None);
        assert_eq!(g.fill(1, rec(7, 0)), None);
        assert_eq!(g.matched, 1);
        // 7 went idle, then a record shows 8 switched in after idle with no tracepoint.
        assert_eq!(g.saw_switch(1, &sw(90, 7, 0)), None);
        let ev = g.fill(1, rec(8, 0)).expect("filled");
        assert_eq!(
            ev.kind,
            EventKind::Switch {
                prev_pid: 0,
                prev_state: 0,
                next_pid: 8,
                prev_comm: swapper_comm(1),
                next_comm: [0; 16],
            }
        );
        assert!(g.blind && g.filled == 1);
        // Records of switches between tasks are never needed.
        assert_eq!(g.fill(1, rec(9, 8)), None);
        assert_eq!(g.fill(5, rec(9, 0)), None, "no such ring");
        assert!(!g.proven());

        let mut healthy = IdleGap::new(&[0]);
        for i in 0..IDLE_PROOF as i32 {
            assert_eq!(healthy.saw_switch(0, &sw(1, 0, 100 + i)), None);
            assert_eq!(healthy.fill(0, rec(100 + i, 0)), None);
        }
        assert!(healthy.proven());
        assert!(!healthy.wants_records(0, 2), "proven: never again");
    }

    #[test]
    fn a_switch_in_missed_after_idle_is_inferred_at_the_next_switch_out() {
        let mut g = IdleGap::new(&[0]);
        let at = |t_ns, prev, next| switch_ev(t_ns, 0, prev, next);
        // Before any switch the CPU's state is unknown: a switch-out proves nothing.
        assert_eq!(g.saw_switch(0, &at(10, 5, 6)), None);
        // 6 goes idle; the switch from idle to 7 is not shown (no record either).
        assert_eq!(g.saw_switch(0, &at(20, 6, 0)), None);
        let inferred = g.saw_switch(0, &at(30, 7, 6)).expect("inferred");
        assert_eq!(inferred.kind, EventKind::SwitchedIn { pid: 7 });
        assert_eq!(inferred.t_ns, 30);
        assert_eq!((g.inferred, g.blind), (1, true));
        // A switch between tasks after that is seen whole.
        assert_eq!(g.saw_switch(0, &at(40, 6, 7)), None);
    }

    #[test]
    fn context_switch_records_are_wanted_only_where_a_cpu_went_idle_lately() {
        let mut g = IdleGap::new(&[0, 1]);
        let at = |t_ns, prev, next| switch_ev(t_ns, 0, prev, next);
        // Nothing seen yet: off (a busy CPU must not pay for them).
        assert!(!g.wants_records(0, 1_000));
        // CPU 0 goes idle at 1 s: on while idle ...
        g.saw_switch(0, &at(1_000_000_000, 5, 0));
        assert!(g.wants_records(0, 1_050_000_000));
        assert!(g.wants_records(0, 9_000_000_000), "still idle");
        // ... and for IDLE_QUIET_NS after it was last seen idle, then off.
        g.saw_switch(0, &at(1_200_000_000, 6, 5));
        assert!(g.wants_records(0, 1_200_000_000 + IDLE_QUIET_NS - 1));
        assert!(!g.wants_records(0, 1_200_000_000 + IDLE_QUIET_NS));
        assert!(
            !g.wants_records(1, 1_100_000_000),
            "the other CPU never went idle"
        );
        assert!(!g.wants_records(7, 0), "no such ring");
    }
}
