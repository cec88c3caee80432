//! Building the timeline: switches and wakings turned into running slices per CPU and
//! per task, wake-up instants and flow arrows, in the order they are written.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::{TimelineEvent, TimelineInput};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum EndState {
    Preempted,
    Blocked,
    Running,
    Unknown,
}

impl EndState {
    pub(super) fn as_str(self) -> &'static str {
        match self {
            EndState::Preempted => "preempted",
            EndState::Blocked => "blocked",
            EndState::Running => "running",
            EndState::Unknown => "unknown",
        }
    }

    pub(super) fn of_switch(prev_runnable: bool) -> Self {
        if prev_runnable {
            EndState::Preempted
        } else {
            EndState::Blocked
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub(super) struct Slice {
    pub(super) start: u64,
    /// Set when the slice closes; every slice is closed before writing.
    pub(super) end: u64,
    pub(super) tid: i32,
    pub(super) cpu: u32,
    /// On the task's own track rather than the CPU's.
    pub(super) task_track: bool,
    pub(super) end_state: EndState,
    pub(super) from_trace_start: bool,
}

/// One output event (or flow half), small enough to hold 10^6 of them.
#[derive(Debug, Clone, Copy)]
pub(super) enum Rec {
    Slice(Slice),
    Wake(Wake),
    Migrate {
        t: u64,
        pid: i32,
        orig_cpu: i32,
        dest_cpu: i32,
    },
    /// `from`/`to` index the waker's and the wakee's CPU-track slices.
    FlowStart {
        id: u64,
        t: u64,
        from: usize,
        to: usize,
    },
    FlowEnd {
        id: u64,
        t_wake: u64,
        from: usize,
        to: usize,
    },
    Mark {
        t: u64,
        idx: usize,
    },
}

/// A wakeup instant on the woken task's track.
#[derive(Debug, Clone, Copy)]
pub(super) struct Wake {
    pub(super) t: u64,
    pub(super) pid: i32,
    pub(super) waker: i32,
    pub(super) cpu: u32,
    pub(super) target_cpu: i32,
    pub(super) latency: Option<u64>,
    pub(super) was_running: bool,
}

pub(super) struct PendingWake {
    pub(super) rec: usize,
    pub(super) t: u64,
    /// The waker's CPU-track slice, when the waker was the task running there.
    pub(super) waker_slice: Option<usize>,
}

pub(super) struct Builder<'a> {
    pub(super) input: &'a TimelineInput<'a>,
    pub(super) targets: HashSet<i32>,
    pub(super) recs: Vec<Rec>,
    /// What runs on each CPU that had a switch: the task and its CPU-track slice (None: idle).
    pub(super) cpus: BTreeMap<u32, Option<(i32, usize)>>,
    /// Targets running now: their CPU and task-track slice.
    pub(super) task_open: BTreeMap<i32, (u32, usize)>,
    pub(super) pending: HashMap<i32, Vec<PendingWake>>,
    pub(super) next_flow: u64,
}

pub(super) struct Built {
    pub(super) recs: Vec<Rec>,
    /// Indices into `recs` in output order.
    pub(super) order: Vec<usize>,
    pub(super) cpus: Vec<u32>,
    pub(super) targets: Vec<i32>,
    pub(super) origin: u64,
}

impl<'a> Builder<'a> {
    pub(super) fn new(input: &'a TimelineInput<'a>) -> Self {
        Builder {
            input,
            // Perfetto needs a non-negative tid for a track; 0 is the idle task.
            targets: input.targets.iter().copied().filter(|&t| t > 0).collect(),
            recs: Vec::with_capacity(input.events.len() * 2 + input.marks.len()),
            cpus: BTreeMap::new(),
            task_open: BTreeMap::new(),
            pending: HashMap::new(),
            next_flow: 1,
        }
    }

    pub(super) fn build(mut self) -> Built {
        let events = self.input.events;
        let first = events.iter().map(TimelineEvent::t_ns).min();
        let last = events.iter().map(TimelineEvent::t_ns).max();
        let first_mark = self.input.marks.iter().map(|m| m.0).min();
        let origin = match (first, first_mark) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(0),
        };

        if let (Some(first), Some(last)) = (first, last) {
            self.open_initial(first);
            for ev in events {
                self.apply(ev);
            }
            self.close_all(last);
        }
        for (idx, &(t, _)) in self.input.marks.iter().enumerate() {
            self.recs.push(Rec::Mark { t, idx });
        }

        let recs = self.recs;
        let mut order: Vec<usize> = (0..recs.len())
            .filter(|&i| flow_ok(&recs, &recs[i]))
            .collect();
        // Stable, so equal keys keep the order they were made in (deterministic output).
        order.sort_by_key(|&i| sort_key(&recs, &recs[i]));

        let mut targets = Vec::new();
        let mut seen = HashSet::new();
        for &t in self.input.targets {
            if self.targets.contains(&t) && seen.insert(t) {
                targets.push(t);
            }
        }
        Built {
            recs,
            order,
            cpus: self.cpus.keys().copied().collect(),
            targets,
            origin,
        }
    }

    /// A CPU's first switch names the task that ran there before it; with a complete event
    /// stream that task ran since the first event, so its slice starts there.
    fn open_initial(&mut self, first: u64) {
        let mut initial: BTreeMap<u32, i32> = BTreeMap::new();
        for ev in self.input.events {
            if let TimelineEvent::Switch { cpu, prev, .. } = *ev {
                initial.entry(cpu).or_insert(prev);
            }
        }
        for (cpu, prev) in initial {
            let running = (prev != 0).then(|| (prev, self.open_cpu_slice(cpu, prev, first, true)));
            self.cpus.insert(cpu, running);
            if prev != 0 && self.targets.contains(&prev) && !self.task_open.contains_key(&prev) {
                let idx = self.push_slice(prev, cpu, first, true, true);
                self.task_open.insert(prev, (cpu, idx));
            }
        }
    }

    fn apply(&mut self, ev: &TimelineEvent) {
        match *ev {
            TimelineEvent::Switch {
                t_ns,
                cpu,
                prev,
                next,
                prev_runnable,
            } => self.switch(t_ns, cpu, prev, next, prev_runnable),
            TimelineEvent::Waking {
                t_ns,
                cpu,
                pid,
                waker,
                target_cpu,
            } => self.waking(t_ns, cpu, pid, waker, target_cpu),
            TimelineEvent::Migrate {
                t_ns,
                pid,
                orig_cpu,
                dest_cpu,
            } => {
                if self.targets.contains(&pid) {
                    self.recs.push(Rec::Migrate {
                        t: t_ns,
                        pid,
                        orig_cpu,
                        dest_cpu,
                    });
                }
            }
        }
    }

    fn switch(&mut self, t: u64, cpu: u32, prev: i32, next: i32, prev_runnable: bool) {
        if let Some(Some((running, idx))) = self.cpus.get(&cpu).copied() {
            // A switch that names another task than the one we saw start means lost events.
            let state = if running == prev {
                EndState::of_switch(prev_runnable)
            } else {
                EndState::Unknown
            };
            self.close(idx, t, state);
            self.close_task(running, cpu, t, state);
        }
        if next == 0 {
            self.cpus.insert(cpu, None);
            return;
        }
        let idx = self.open_cpu_slice(cpu, next, t, false);
        self.cpus.insert(cpu, Some((next, idx)));
        if !self.targets.contains(&next) {
            return;
        }
        // Running on two CPUs at once means a lost switch-out: end the old stretch here so the
        // task's track stays properly nested.
        if let Some((_, old)) = self.task_open.remove(&next) {
            self.close(old, t, EndState::Unknown);
        }
        let task_idx = self.push_slice(next, cpu, t, true, false);
        self.task_open.insert(next, (cpu, task_idx));
        for wake in self.pending.remove(&next).unwrap_or_default() {
            if let Rec::Wake(Wake { latency, .. }) = &mut self.recs[wake.rec] {
                *latency = Some(t.saturating_sub(wake.t));
            }
            if let Some(from) = wake.waker_slice {
                let id = self.next_flow;
                self.next_flow += 1;
                self.recs.push(Rec::FlowStart {
                    id,
                    t: wake.t,
                    from,
                    to: idx,
                });
                self.recs.push(Rec::FlowEnd {
                    id,
                    t_wake: wake.t,
                    from,
                    to: idx,
                });
            }
        }
    }

    fn waking(&mut self, t: u64, cpu: u32, pid: i32, waker: i32, target_cpu: i32) {
        if !self.targets.contains(&pid) {
            return;
        }
        let was_running = self.task_open.contains_key(&pid);
        let rec = self.recs.len();
        self.recs.push(Rec::Wake(Wake {
            t,
            pid,
            waker,
            cpu,
            target_cpu,
            latency: None,
            was_running,
        }));
        // A task still on a CPU has no wait to measure: its next switch-in is a later story.
        if was_running {
            return;
        }
        let waker_slice = match self.cpus.get(&cpu) {
            Some(Some((running, idx))) if *running == waker && waker != 0 => Some(*idx),
            _ => None,
        };
        self.pending.entry(pid).or_default().push(PendingWake {
            rec,
            t,
            waker_slice,
        });
    }

    fn close_all(&mut self, last: u64) {
        let cpus: Vec<(u32, usize)> = self
            .cpus
            .iter()
            .filter_map(|(&cpu, run)| run.map(|(_, idx)| (cpu, idx)))
            .collect();
        for (_, idx) in cpus {
            self.close(idx, last, EndState::Running);
        }
        let tasks: Vec<usize> = self.task_open.values().map(|&(_, idx)| idx).collect();
        for idx in tasks {
            self.close(idx, last, EndState::Running);
        }
        self.task_open.clear();
    }

    fn open_cpu_slice(&mut self, cpu: u32, tid: i32, t: u64, from_trace_start: bool) -> usize {
        self.push_slice(tid, cpu, t, false, from_trace_start)
    }

    fn push_slice(
        &mut self,
        tid: i32,
        cpu: u32,
        start: u64,
        task_track: bool,
        from_trace_start: bool,
    ) -> usize {
        self.recs.push(Rec::Slice(Slice {
            start,
            end: start,
            tid,
            cpu,
            task_track,
            end_state: EndState::Running,
            from_trace_start,
        }));
        self.recs.len() - 1
    }

    fn close(&mut self, idx: usize, t: u64, state: EndState) {
        if let Some(Rec::Slice(s)) = self.recs.get_mut(idx) {
            // Out-of-order input must not make a negative duration.
            s.end = t.max(s.start);
            s.end_state = state;
        }
    }

    fn close_task(&mut self, tid: i32, cpu: u32, t: u64, state: EndState) {
        if let Some(&(on, idx)) = self.task_open.get(&tid) {
            if on == cpu {
                self.task_open.remove(&tid);
                self.close(idx, t, state);
            }
        }
    }
}

pub(super) fn slice_at(recs: &[Rec], idx: usize) -> Option<&Slice> {
    match recs.get(idx) {
        Some(Rec::Slice(s)) => Some(s),
        _ => None,
    }
}

/// A flow is written only where both ends bind to the right slice: the waking strictly inside
/// the waker's slice, and the wakee's slice longer than the 1 ns its `f` sits after the start.
fn flow_ok(recs: &[Rec], rec: &Rec) -> bool {
    let (t_wake, from, to) = match *rec {
        Rec::FlowStart { t, from, to, .. } => (t, from, to),
        Rec::FlowEnd {
            t_wake, from, to, ..
        } => (t_wake, from, to),
        _ => return true,
    };
    match (slice_at(recs, from), slice_at(recs, to)) {
        (Some(f), Some(w)) => f.start < t_wake && t_wake < f.end && w.start + 1 < w.end,
        _ => false,
    }
}

/// (time, class): at equal times slices come before what binds to or nests in them.
fn sort_key(recs: &[Rec], rec: &Rec) -> (u64, u8) {
    match *rec {
        Rec::Slice(s) => (s.start, u8::from(s.task_track)),
        Rec::Wake(Wake { t, .. }) | Rec::Migrate { t, .. } | Rec::Mark { t, .. } => (t, 2),
        Rec::FlowStart { t, .. } => (t, 2),
        Rec::FlowEnd { to, .. } => (slice_at(recs, to).map_or(0, |s| s.start + 1), 2),
    }
}
