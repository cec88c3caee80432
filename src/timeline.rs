//! Timeline export: scheduler events written as a Chrome JSON trace that the Perfetto UI (ui.perfetto.dev) opens.
//!
//! [`write_chrome_json`] turns switches, wakings and migrations (plus knob changes) into the
//! trace-event format, streamed one event at a time through serde_json.
//!
//! # What the file holds
//!
//! `{"displayTimeUnit":"ns","otherData":{..},"traceEvents":[..]}`. `displayTimeUnit` only sets
//! the display unit (`ts` stays µs) and comes first because older trace processors look for it
//! only at the start of the file. `otherData` carries
//! the preset title, the clock and `t0_ns`, the CLOCK_MONOTONIC time that `ts` 0 stands for.
//!
//! - **Time**: `ts` and `dur` are microseconds (floats, the format's unit) since `t0_ns`, the
//!   earliest scheduler event or mark. Every `ts` is written half a nanosecond late (a trailing
//!   `5` in the fourth decimal): Perfetto turns µs into ns by multiplying and truncating, so an
//!   exact `1234.567` can come out as 1234566 ns, which makes one slice overlap the next by 1 ns
//!   and Perfetto then nests or drops it. With the half-ns bias every `ts` truncates to its exact
//!   ns; `dur` is written exact, so a slice may end 1 ns early in Perfetto but never overlaps.
//! - **Process "CPUs"** (pid 0): one thread track per CPU that had a switch, "CPU n" with
//!   tid n+1 (tid 0 is the idle task's). It holds an `X` slice per stretch a task ran there, from
//!   its switch-in to the next switch on that CPU, named after the task (its name, else
//!   `pid N`), args `{tid, cpu, state_at_end}`. `state_at_end` is `preempted` (still runnable),
//!   `blocked`, `running` (still running at the last event, where the slice ends) or `unknown`
//!   (the next switch named another task: events were lost). Idle time is a gap. The task that a
//!   CPU's first switch switches out ran since the first event (given a complete event stream):
//!   its slice starts there and has `from_trace_start: true`.
//! - **Process "tasks"** (pid 1): one thread track per target task (tid = the task's tid, named
//!   after it), holding the same running slices, so a person can follow one task across CPUs;
//!   `i` instants (scope `t`) "woken by NAME" at each waking of the task, args `{waker,
//!   waker_name, cpu, target_cpu}` plus `latency_us` (waking to its next switch-in) when that
//!   switch-in is in the trace, or `was_running: true` when the task was still on a CPU; and
//!   "migrated CPU a -> b" instants. The process's own metadata events carry the first target's
//!   tid, not the default tid = pid = 1: that is CPU 0's track, and Perfetto applies a
//!   thread_name by tid alone.
//! - **Flows** (`s`/`f`, name "wakeup", cat "sched", `bp: "e"`): an arrow from the waker's slice
//!   at the waking to the wakee's next slice, drawn only when the waker's slice is on the
//!   timeline (not for wakeups from idle or irq context, nor for wakings no switch-in followed).
//!   Perfetto binds a flow to the slice open on the track when the flow event is read, so the
//!   `f` sits 1 ns after the slice's start and the `s` strictly inside the waker's slice, which
//!   keeps the binding right whatever order equal timestamps are read in.
//! - **Knob changes**: global instants (`"ph":"i","s":"g"`) named by the mark's text.
//!
//! Metadata (`M`: process_name, process_sort_index, thread_name, thread_sort_index) comes first,
//! then every other event sorted by `ts`, so each track's timestamps never decrease. Only the
//! compact event records are held in memory (tens of bytes each), never the JSON text.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::io::{self, BufWriter, Write};

use serde::{Serialize, Serializer};

/// One scheduler event for the timeline (CLOCK_MONOTONIC ns).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TimelineEvent {
    /// On `cpu`, `prev` stopped running and `next` started; `prev_runnable`: it was preempted (still runnable) rather than blocked.
    Switch {
        t_ns: u64,
        cpu: u32,
        prev: i32,
        next: i32,
        prev_runnable: bool,
    },
    /// `pid` was woken by `waker` (running on `cpu`), to run on `target_cpu`.
    Waking {
        t_ns: u64,
        cpu: u32,
        pid: i32,
        waker: i32,
        target_cpu: i32,
    },
    Migrate {
        t_ns: u64,
        pid: i32,
        orig_cpu: i32,
        dest_cpu: i32,
    },
}

impl TimelineEvent {
    fn t_ns(&self) -> u64 {
        match *self {
            TimelineEvent::Switch { t_ns, .. }
            | TimelineEvent::Waking { t_ns, .. }
            | TimelineEvent::Migrate { t_ns, .. } => t_ns,
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct TimelineInput<'a> {
    pub events: &'a [TimelineEvent], // oldest first
    pub names: &'a std::collections::BTreeMap<i32, String>, // tid -> name: the experiment's tasks, and other tasks seen (e.g. preemptors' comm)
    pub targets: &'a [i32],                                 // the experiment's task tids
    pub marks: &'a [(u64, String)], // knob changes: (t_ns, "writer.policy=batch -> ok: applied")
    pub title: &'a str,             // preset name
}

/// What was written: `slices` counts every `X` event (CPU and task tracks), `wakeups` the
/// "woken by" instants, `marks` the knob-change instants.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Summary {
    pub slices: usize,
    pub wakeups: usize,
    pub marks: usize,
}

const CPUS_PID: u32 = 0;
const TASKS_PID: u32 = 1;

/// Writes the timeline as a Chrome JSON trace to `out` (buffered here, flushed at the end).
pub fn write_chrome_json(input: &TimelineInput, out: &mut impl Write) -> io::Result<Summary> {
    let built = Builder::new(input).build();
    let mut w = BufWriter::new(out);
    let summary = built.write(input, &mut w)?;
    w.flush()?;
    Ok(summary)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EndState {
    Preempted,
    Blocked,
    Running,
    Unknown,
}

impl EndState {
    fn as_str(self) -> &'static str {
        match self {
            EndState::Preempted => "preempted",
            EndState::Blocked => "blocked",
            EndState::Running => "running",
            EndState::Unknown => "unknown",
        }
    }

    fn of_switch(prev_runnable: bool) -> Self {
        if prev_runnable {
            EndState::Preempted
        } else {
            EndState::Blocked
        }
    }
}

#[derive(Debug, Clone, Copy)]
struct Slice {
    start: u64,
    /// Set when the slice closes; every slice is closed before writing.
    end: u64,
    tid: i32,
    cpu: u32,
    /// On the task's own track rather than the CPU's.
    task_track: bool,
    end_state: EndState,
    from_trace_start: bool,
}

/// One output event (or flow half), small enough to hold 10^6 of them.
#[derive(Debug, Clone, Copy)]
enum Rec {
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
struct Wake {
    t: u64,
    pid: i32,
    waker: i32,
    cpu: u32,
    target_cpu: i32,
    latency: Option<u64>,
    was_running: bool,
}

struct PendingWake {
    rec: usize,
    t: u64,
    /// The waker's CPU-track slice, when the waker was the task running there.
    waker_slice: Option<usize>,
}

struct Builder<'a> {
    input: &'a TimelineInput<'a>,
    targets: HashSet<i32>,
    recs: Vec<Rec>,
    /// What runs on each CPU that had a switch: the task and its CPU-track slice (None: idle).
    cpus: BTreeMap<u32, Option<(i32, usize)>>,
    /// Targets running now: their CPU and task-track slice.
    task_open: BTreeMap<i32, (u32, usize)>,
    pending: HashMap<i32, Vec<PendingWake>>,
    next_flow: u64,
}

struct Built {
    recs: Vec<Rec>,
    /// Indices into `recs` in output order.
    order: Vec<usize>,
    cpus: Vec<u32>,
    targets: Vec<i32>,
    origin: u64,
}

impl<'a> Builder<'a> {
    fn new(input: &'a TimelineInput<'a>) -> Self {
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

    fn build(mut self) -> Built {
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

fn slice_at(recs: &[Rec], idx: usize) -> Option<&Slice> {
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

/// Microseconds since `origin` for `ts`, half a nanosecond late so that Perfetto's
/// multiply-and-truncate lands on the exact nanosecond (see the module doc).
fn ts_us(t: u64, origin: u64) -> f64 {
    let ns = t.saturating_sub(origin);
    (ns.saturating_mul(10).saturating_add(5)) as f64 / 10_000.0
}

fn dur_us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// A task as a person reads it.
#[derive(Debug, Clone, Copy)]
enum TaskName<'a> {
    Named(&'a str),
    Pid(i32),
    /// The idle task (pid 0) of a CPU, as the kernel names it.
    Idle(u32),
}

impl fmt::Display for TaskName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TaskName::Named(n) => f.write_str(n),
            TaskName::Pid(p) => write!(f, "pid {p}"),
            TaskName::Idle(cpu) => write!(f, "swapper/{cpu}"),
        }
    }
}

/// An event name or string arg, formatted straight into the JSON (serde_json escapes it), so
/// no String is built per event.
#[derive(Debug, Clone, Copy)]
enum Label<'a> {
    Text(&'a str),
    Task(TaskName<'a>),
    WokenBy(TaskName<'a>),
    Migrated { from: i32, to: i32 },
    Cpu(u32),
}

impl fmt::Display for Label<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Label::Text(s) => f.write_str(s),
            Label::Task(t) => t.fmt(f),
            Label::WokenBy(t) => write!(f, "woken by {t}"),
            Label::Migrated { from, to } => write!(f, "migrated CPU {from} -> {to}"),
            Label::Cpu(c) => write!(f, "CPU {c}"),
        }
    }
}

impl Serialize for Label<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

fn not(b: &bool) -> bool {
    !*b
}

#[derive(Serialize)]
#[serde(untagged)]
enum Args<'a> {
    Name {
        name: Label<'a>,
    },
    SortIndex {
        sort_index: i64,
    },
    Slice {
        tid: i32,
        cpu: u32,
        state_at_end: &'static str,
        #[serde(skip_serializing_if = "not")]
        from_trace_start: bool,
    },
    Wake {
        waker: i32,
        waker_name: Label<'a>,
        cpu: u32,
        target_cpu: i32,
        #[serde(skip_serializing_if = "Option::is_none")]
        latency_us: Option<f64>,
        #[serde(skip_serializing_if = "not")]
        was_running: bool,
    },
    Migrate {
        orig_cpu: i32,
        dest_cpu: i32,
    },
}

/// One trace event; absent fields are left out, as the format expects.
#[derive(Serialize)]
struct Ev<'a> {
    name: Label<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    cat: Option<&'static str>,
    ph: &'static str,
    pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    tid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    s: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    bp: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Args<'a>>,
}

impl<'a> Ev<'a> {
    fn new(name: Label<'a>, ph: &'static str, pid: u32, tid: Option<u32>) -> Self {
        Ev {
            name,
            cat: None,
            ph,
            pid,
            tid,
            ts: None,
            dur: None,
            s: None,
            id: None,
            bp: None,
            args: None,
        }
    }

    fn meta(kind: &'static str, pid: u32, tid: Option<u32>, args: Args<'a>) -> Self {
        Ev {
            args: Some(args),
            ..Ev::new(Label::Text(kind), "M", pid, tid)
        }
    }
}

fn cpu_tid(cpu: u32) -> u32 {
    cpu.saturating_add(1)
}

fn task_tid(tid: i32) -> u32 {
    u32::try_from(tid).unwrap_or(0)
}

fn task_name<'a>(names: &'a BTreeMap<i32, String>, tid: i32, cpu: u32) -> TaskName<'a> {
    match names.get(&tid) {
        Some(n) if !n.is_empty() => TaskName::Named(n),
        _ if tid == 0 => TaskName::Idle(cpu),
        _ => TaskName::Pid(tid),
    }
}

#[derive(Serialize)]
struct OtherData<'a> {
    title: &'a str,
    generator: &'static str,
    clock: &'static str,
    t0_ns: u64,
}

/// Writes events with a separator before all but the first.
struct EventWriter<'w, W: Write> {
    w: &'w mut W,
    first: bool,
}

impl<W: Write> EventWriter<'_, W> {
    fn put(&mut self, ev: &Ev) -> io::Result<()> {
        self.w.write_all(if self.first { b"\n" } else { b",\n" })?;
        self.first = false;
        serde_json::to_writer(&mut *self.w, ev).map_err(io::Error::from)
    }
}

impl Built {
    fn write<W: Write>(&self, input: &TimelineInput, w: &mut W) -> io::Result<Summary> {
        w.write_all(b"{\"displayTimeUnit\":\"ns\",\"otherData\":")?;
        let other = OtherData {
            title: input.title,
            generator: "schedlab timeline",
            clock: "CLOCK_MONOTONIC",
            t0_ns: self.origin,
        };
        serde_json::to_writer(&mut *w, &other).map_err(io::Error::from)?;
        w.write_all(b",\"traceEvents\":[")?;
        let mut out = EventWriter { w, first: true };
        self.write_metadata(input, &mut out)?;
        let summary = self.write_events(input, &mut out)?;
        out.w.write_all(b"\n]}\n")?;
        Ok(summary)
    }

    fn write_metadata<W: Write>(
        &self,
        input: &TimelineInput,
        out: &mut EventWriter<W>,
    ) -> io::Result<()> {
        if !self.cpus.is_empty() {
            // tid left out: it defaults to the pid, 0, the idle task's, which no track uses.
            let name = Args::Name {
                name: Label::Text("CPUs"),
            };
            out.put(&Ev::meta("process_name", CPUS_PID, None, name))?;
            let sort = Args::SortIndex { sort_index: 0 };
            out.put(&Ev::meta("process_sort_index", CPUS_PID, None, sort))?;
            for &cpu in &self.cpus {
                let tid = Some(cpu_tid(cpu));
                let name = Args::Name {
                    name: Label::Cpu(cpu),
                };
                out.put(&Ev::meta("thread_name", CPUS_PID, tid, name))?;
                let sort = Args::SortIndex {
                    sort_index: i64::from(cpu),
                };
                out.put(&Ev::meta("thread_sort_index", CPUS_PID, tid, sort))?;
            }
        }
        if let Some(&first) = self.targets.first() {
            // The process events carry a target's tid: left out, tid would default to the pid,
            // 1, which is CPU 0's track, and Perfetto looks thread names up by tid alone.
            let main = Some(task_tid(first));
            let name = Args::Name {
                name: Label::Text("tasks"),
            };
            out.put(&Ev::meta("process_name", TASKS_PID, main, name))?;
            let sort = Args::SortIndex { sort_index: 1 };
            out.put(&Ev::meta("process_sort_index", TASKS_PID, main, sort))?;
            for (i, &t) in self.targets.iter().enumerate() {
                let tid = Some(task_tid(t));
                let name = Args::Name {
                    name: Label::Task(task_name(input.names, t, 0)),
                };
                out.put(&Ev::meta("thread_name", TASKS_PID, tid, name))?;
                let sort = Args::SortIndex {
                    sort_index: i64::try_from(i).unwrap_or(i64::MAX),
                };
                out.put(&Ev::meta("thread_sort_index", TASKS_PID, tid, sort))?;
            }
        }
        Ok(())
    }

    fn write_events<W: Write>(
        &self,
        input: &TimelineInput,
        out: &mut EventWriter<W>,
    ) -> io::Result<Summary> {
        let names = input.names;
        let origin = self.origin;
        let mut summary = Summary::default();
        for &i in &self.order {
            let ev = match self.recs[i] {
                Rec::Slice(s) => {
                    summary.slices += 1;
                    slice_event(&s, names, origin)
                }
                Rec::Wake(w) => {
                    summary.wakeups += 1;
                    wake_event(&w, names, origin)
                }
                Rec::Migrate {
                    t,
                    pid,
                    orig_cpu,
                    dest_cpu,
                } => Ev {
                    ts: Some(ts_us(t, origin)),
                    s: Some("t"),
                    args: Some(Args::Migrate { orig_cpu, dest_cpu }),
                    ..Ev::new(
                        Label::Migrated {
                            from: orig_cpu,
                            to: dest_cpu,
                        },
                        "i",
                        TASKS_PID,
                        Some(task_tid(pid)),
                    )
                },
                Rec::FlowStart { id, t, from, .. } => {
                    let cpu = slice_at(&self.recs, from).map_or(0, |s| s.cpu);
                    Ev {
                        cat: Some("sched"),
                        ts: Some(ts_us(t, origin)),
                        id: Some(id),
                        ..Ev::new(Label::Text("wakeup"), "s", CPUS_PID, Some(cpu_tid(cpu)))
                    }
                }
                Rec::FlowEnd { id, to, .. } => {
                    let (cpu, start) =
                        slice_at(&self.recs, to).map_or((0, 0), |s| (s.cpu, s.start));
                    Ev {
                        cat: Some("sched"),
                        ts: Some(ts_us(start + 1, origin)),
                        id: Some(id),
                        bp: Some("e"),
                        ..Ev::new(Label::Text("wakeup"), "f", CPUS_PID, Some(cpu_tid(cpu)))
                    }
                }
                Rec::Mark { t, idx } => {
                    summary.marks += 1;
                    let text = input.marks.get(idx).map_or("", |m| m.1.as_str());
                    Ev {
                        ts: Some(ts_us(t, origin)),
                        s: Some("g"),
                        ..Ev::new(Label::Text(text), "i", CPUS_PID, None)
                    }
                }
            };
            out.put(&ev)?;
        }
        Ok(summary)
    }
}

/// A run of a task on a CPU: on the CPU's track, or on the task's own.
fn slice_event<'a>(s: &Slice, names: &'a BTreeMap<i32, String>, origin: u64) -> Ev<'a> {
    let (pid, tid) = if s.task_track {
        (TASKS_PID, task_tid(s.tid))
    } else {
        (CPUS_PID, cpu_tid(s.cpu))
    };
    Ev {
        ts: Some(ts_us(s.start, origin)),
        dur: Some(dur_us(s.end.saturating_sub(s.start))),
        args: Some(Args::Slice {
            tid: s.tid,
            cpu: s.cpu,
            state_at_end: s.end_state.as_str(),
            from_trace_start: s.from_trace_start,
        }),
        ..Ev::new(
            Label::Task(task_name(names, s.tid, s.cpu)),
            "X",
            pid,
            Some(tid),
        )
    }
}

/// A wakeup as an instant on the woken task's track, named by its waker.
fn wake_event<'a>(w: &Wake, names: &'a BTreeMap<i32, String>, origin: u64) -> Ev<'a> {
    let waker_name = task_name(names, w.waker, w.cpu);
    Ev {
        ts: Some(ts_us(w.t, origin)),
        s: Some("t"),
        args: Some(Args::Wake {
            waker: w.waker,
            waker_name: Label::Task(waker_name),
            cpu: w.cpu,
            target_cpu: w.target_cpu,
            latency_us: w.latency.map(dur_us),
            was_running: w.was_running,
        }),
        ..Ev::new(
            Label::WokenBy(waker_name),
            "i",
            TASKS_PID,
            Some(task_tid(w.pid)),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::collections::BTreeSet;

    const B: u64 = 5_000_000_000;

    fn names() -> BTreeMap<i32, String> {
        BTreeMap::from([
            (100, "writer".to_string()),
            (200, "reader".to_string()),
            (300, "kworker/0:1".to_string()),
        ])
    }

    fn sw(t: u64, cpu: u32, prev: i32, next: i32, prev_runnable: bool) -> TimelineEvent {
        TimelineEvent::Switch {
            t_ns: B + t,
            cpu,
            prev,
            next,
            prev_runnable,
        }
    }

    fn wk(t: u64, cpu: u32, pid: i32, waker: i32, target_cpu: i32) -> TimelineEvent {
        TimelineEvent::Waking {
            t_ns: B + t,
            cpu,
            pid,
            waker,
            target_cpu,
        }
    }

    /// Two CPUs, writer (100) and reader (200) as targets, kworker (300, named) and 400
    /// (unnamed) as others.
    fn events() -> Vec<TimelineEvent> {
        vec![
            wk(0, 1, 200, 0, 1),
            sw(1000, 0, 400, 100, true),
            sw(1500, 1, 0, 200, false),
            sw(3000, 1, 200, 0, false),
            wk(4000, 0, 200, 100, 1),
            sw(4500, 1, 0, 200, false),
            sw(6000, 0, 100, 300, true),
            TimelineEvent::Migrate {
                t_ns: B + 7000,
                pid: 100,
                orig_cpu: 0,
                dest_cpu: 1,
            },
            sw(8000, 1, 200, 100, true),
            sw(9000, 0, 300, 0, false),
            wk(10_000, 1, 200, 100, 0),
            sw(12_000, 0, 0, 200, false),
            wk(15_000, 0, 400, 200, 0),
        ]
    }

    fn marks() -> Vec<(u64, String)> {
        vec![
            (B + 5000, "writer.policy=batch -> ok: applied".to_string()),
            (
                B + 11_000,
                "reader.nice=\"5\" -> ok\nsecond line".to_string(),
            ),
        ]
    }

    fn render(input: &TimelineInput) -> (Summary, String, Value) {
        let mut buf = Vec::new();
        let summary = match write_chrome_json(input, &mut buf) {
            Ok(s) => s,
            Err(e) => panic!("write failed: {e}"),
        };
        let text = String::from_utf8(buf).expect("utf8");
        let json: Value = serde_json::from_str(&text).expect("valid JSON");
        (summary, text, json)
    }

    fn sample() -> (Summary, String, Value) {
        let names = names();
        let events = events();
        let marks = marks();
        let input = TimelineInput {
            events: &events,
            names: &names,
            targets: &[100, 200],
            marks: &marks,
            title: "pipe \"demo\"",
        };
        render(&input)
    }

    fn trace_events(json: &Value) -> &Vec<Value> {
        json["traceEvents"].as_array().expect("traceEvents array")
    }

    /// ns as Perfetto reads `ts` (multiply, truncate), which the half-ns bias makes exact.
    fn ts_ns(v: &Value) -> u64 {
        (v.as_f64().expect("ts") * 1000.0) as u64
    }

    fn dur_ns(v: &Value) -> u64 {
        (v.as_f64().expect("dur") * 1000.0).round() as u64
    }

    /// (name, start ns, dur ns, state_at_end) of the X slices on one track.
    fn slices(json: &Value, pid: u64, tid: u64) -> Vec<(String, u64, u64, String)> {
        trace_events(json)
            .iter()
            .filter(|e| e["ph"] == "X" && e["pid"] == pid && e["tid"] == tid)
            .map(|e| {
                (
                    e["name"].as_str().expect("name").to_string(),
                    ts_ns(&e["ts"]),
                    dur_ns(&e["dur"]),
                    e["args"]["state_at_end"]
                        .as_str()
                        .expect("state")
                        .to_string(),
                )
            })
            .collect()
    }

    fn s(name: &str, start: u64, dur: u64, state: &str) -> (String, u64, u64, String) {
        (name.to_string(), start, dur, state.to_string())
    }

    fn meta_name(json: &Value, kind: &str, pid: u64, tid: Option<u64>) -> Option<String> {
        trace_events(json)
            .iter()
            .find(|e| {
                e["ph"] == "M"
                    && e["name"] == kind
                    && e["pid"] == pid
                    && tid.is_none_or(|t| e["tid"] == t)
            })
            .and_then(|e| e["args"]["name"].as_str().map(str::to_string))
    }

    #[test]
    fn metadata_names_processes_and_tracks() {
        let (_, _, json) = sample();
        assert_eq!(json["displayTimeUnit"], "ns");
        assert_eq!(json["otherData"]["title"], "pipe \"demo\"");
        assert_eq!(json["otherData"]["t0_ns"], B);
        assert_eq!(
            meta_name(&json, "process_name", 0, None).as_deref(),
            Some("CPUs")
        );
        assert_eq!(
            meta_name(&json, "process_name", 1, None).as_deref(),
            Some("tasks")
        );
        assert_eq!(
            meta_name(&json, "thread_name", 0, Some(1)).as_deref(),
            Some("CPU 0")
        );
        assert_eq!(
            meta_name(&json, "thread_name", 0, Some(2)).as_deref(),
            Some("CPU 1")
        );
        assert_eq!(
            meta_name(&json, "thread_name", 1, Some(100)).as_deref(),
            Some("writer")
        );
        assert_eq!(
            meta_name(&json, "thread_name", 1, Some(200)).as_deref(),
            Some("reader")
        );
        let evs = trace_events(&json);
        let sort = |pid: u64, tid: u64| {
            evs.iter()
                .find(|e| e["name"] == "thread_sort_index" && e["pid"] == pid && e["tid"] == tid)
                .map(|e| e["args"]["sort_index"].clone())
        };
        assert_eq!(sort(0, 2), Some(Value::from(1)));
        assert_eq!(sort(1, 200), Some(Value::from(1)));
        // No process event may fall back to tid = pid = 1, which is CPU 0's track.
        assert!(evs.iter().filter(|e| e["pid"] == 1).all(|e| e["tid"] != 1));
        // Metadata comes before everything else.
        let first_other = evs.iter().position(|e| e["ph"] != "M").expect("events");
        assert!(evs[first_other..].iter().all(|e| e["ph"] != "M"));
    }

    #[test]
    fn cpu_tracks_hold_one_slice_per_run() {
        let (summary, _, json) = sample();
        assert_eq!(
            slices(&json, 0, 1),
            vec![
                s("pid 400", 0, 1000, "preempted"),
                s("writer", 1000, 5000, "preempted"),
                s("kworker/0:1", 6000, 3000, "blocked"),
                s("reader", 12_000, 3000, "running"),
            ]
        );
        assert_eq!(
            slices(&json, 0, 2),
            vec![
                s("reader", 1500, 1500, "blocked"),
                s("reader", 4500, 3500, "preempted"),
                s("writer", 8000, 7000, "running"),
            ]
        );
        let evs = trace_events(&json);
        let first = evs
            .iter()
            .find(|e| e["ph"] == "X" && e["name"] == "pid 400")
            .expect("pid 400 slice");
        assert_eq!(first["args"]["tid"], 400);
        assert_eq!(first["args"]["from_trace_start"], true);
        let kw = evs
            .iter()
            .find(|e| e["ph"] == "X" && e["name"] == "kworker/0:1")
            .expect("kworker slice");
        assert_eq!(kw["args"]["tid"], 300);
        assert!(kw["args"].get("from_trace_start").is_none());
        assert_eq!(summary.slices, 4 + 3 + 2 + 3);
    }

    #[test]
    fn task_tracks_follow_a_task_across_cpus() {
        let (_, _, json) = sample();
        assert_eq!(
            slices(&json, 1, 100),
            vec![
                s("writer", 1000, 5000, "preempted"),
                s("writer", 8000, 7000, "running")
            ]
        );
        assert_eq!(
            slices(&json, 1, 200),
            vec![
                s("reader", 1500, 1500, "blocked"),
                s("reader", 4500, 3500, "preempted"),
                s("reader", 12_000, 3000, "running"),
            ]
        );
        let cpus: Vec<Value> = trace_events(&json)
            .iter()
            .filter(|e| e["ph"] == "X" && e["pid"] == 1 && e["tid"] == 100)
            .map(|e| e["args"]["cpu"].clone())
            .collect();
        assert_eq!(cpus, vec![Value::from(0), Value::from(1)]);
    }

    #[test]
    fn wakings_are_instants_with_latency() {
        let (summary, _, json) = sample();
        let wakes: Vec<&Value> = trace_events(&json)
            .iter()
            .filter(|e| e["ph"] == "i" && e["s"] == "t" && e["tid"] == 200)
            .collect();
        let got: Vec<(String, u64, f64, i64, i64)> = wakes
            .iter()
            .map(|e| {
                (
                    e["name"].as_str().expect("name").to_string(),
                    ts_ns(&e["ts"]),
                    e["args"]["latency_us"].as_f64().expect("latency"),
                    e["args"]["waker"].as_i64().expect("waker"),
                    e["args"]["target_cpu"].as_i64().expect("target_cpu"),
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("woken by swapper/1".to_string(), 0, 1.5, 0, 1),
                ("woken by writer".to_string(), 4000, 0.5, 100, 1),
                ("woken by writer".to_string(), 10_000, 2.0, 100, 0),
            ]
        );
        assert!(wakes.iter().all(|e| e["pid"] == 1));
        assert_eq!(wakes[1]["args"]["waker_name"], "writer");
        // Non-targets get no instants: pid 400's waking is not there.
        assert_eq!(summary.wakeups, 3);
        let migrated: Vec<&Value> = trace_events(&json)
            .iter()
            .filter(|e| e["name"] == "migrated CPU 0 -> 1")
            .collect();
        assert_eq!(migrated.len(), 1);
        assert_eq!(migrated[0]["tid"], 100);
        assert_eq!(ts_ns(&migrated[0]["ts"]), 7000);
    }

    #[test]
    fn flows_link_waker_slice_to_wakee_slice() {
        let (_, _, json) = sample();
        let evs = trace_events(&json);
        let flows: Vec<(String, u64, u64, u64)> = evs
            .iter()
            .filter(|e| e["ph"] == "s" || e["ph"] == "f")
            .map(|e| {
                (
                    e["ph"].as_str().expect("ph").to_string(),
                    e["id"].as_u64().expect("id"),
                    e["tid"].as_u64().expect("tid"),
                    ts_ns(&e["ts"]),
                )
            })
            .collect();
        // Waker writer on CPU 0 at 4000 -> reader's run on CPU 1 from 4500; writer on CPU 1 at
        // 10000 -> reader on CPU 0 from 12000. The wakeup from idle has no flow.
        assert_eq!(
            flows,
            vec![
                ("s".to_string(), 1, 1, 4000),
                ("f".to_string(), 1, 2, 4501),
                ("s".to_string(), 2, 2, 10_000),
                ("f".to_string(), 2, 1, 12_001),
            ]
        );
        assert!(evs
            .iter()
            .filter(|e| e["ph"] == "f")
            .all(|e| e["bp"] == "e" && e["cat"] == "sched" && e["name"] == "wakeup"));
    }

    #[test]
    fn marks_are_global_instants_escaped() {
        let (summary, text, json) = sample();
        let marks: Vec<(String, u64)> = trace_events(&json)
            .iter()
            .filter(|e| e["ph"] == "i" && e["s"] == "g")
            .map(|e| {
                (
                    e["name"].as_str().expect("name").to_string(),
                    ts_ns(&e["ts"]),
                )
            })
            .collect();
        assert_eq!(
            marks,
            vec![
                ("writer.policy=batch -> ok: applied".to_string(), 5000),
                ("reader.nice=\"5\" -> ok\nsecond line".to_string(), 11_000),
            ]
        );
        assert_eq!(summary.marks, 2);
        assert!(text.contains(r#"reader.nice=\"5\" -> ok\nsecond line"#));
    }

    #[test]
    fn timestamps_never_decrease_per_track_or_overall() {
        let (_, _, json) = sample();
        let mut last: BTreeMap<(u64, u64), u64> = BTreeMap::new();
        let mut overall = 0;
        for e in trace_events(&json).iter().filter(|e| e["ph"] != "M") {
            let t = ts_ns(&e["ts"]);
            assert!(t >= overall, "out of order: {e}");
            overall = t;
            let key = (
                e["pid"].as_u64().expect("pid"),
                e["tid"].as_u64().unwrap_or(0),
            );
            let prev = last.insert(key, t).unwrap_or(0);
            assert!(t >= prev, "track {key:?} goes back: {e}");
        }
    }

    #[test]
    fn empty_input_is_a_valid_empty_trace() {
        let names = BTreeMap::new();
        let input = TimelineInput {
            events: &[],
            names: &names,
            targets: &[],
            marks: &[],
            title: "empty",
        };
        let (summary, _, json) = render(&input);
        assert_eq!(summary, Summary::default());
        assert_eq!(trace_events(&json).len(), 0);
        assert_eq!(json["otherData"]["title"], "empty");

        // Targets but no events: only their track names.
        let input = TimelineInput {
            targets: &[7],
            ..input
        };
        let (summary, _, json) = render(&input);
        assert_eq!(summary, Summary::default());
        assert!(trace_events(&json).iter().all(|e| e["ph"] == "M"));
        assert_eq!(
            meta_name(&json, "thread_name", 1, Some(7)).as_deref(),
            Some("pid 7")
        );
    }

    #[test]
    fn a_mark_before_the_first_event_moves_t0() {
        let names = names();
        let events = vec![sw(2000, 0, 100, 200, false)];
        let marks = vec![(B + 500, "early".to_string())];
        let input = TimelineInput {
            events: &events,
            names: &names,
            targets: &[100],
            marks: &marks,
            title: "t",
        };
        let (_, _, json) = render(&input);
        // t0 is the mark, so nothing has a negative time. Writer ran from the first event; reader
        // (named, not a target) starts at the last one and gets a zero-length slice there.
        assert_eq!(json["otherData"]["t0_ns"], B + 500);
        assert_eq!(
            slices(&json, 0, 1),
            vec![
                s("writer", 1500, 0, "blocked"),
                s("reader", 1500, 0, "running")
            ]
        );
        assert_eq!(
            ts_ns(&trace_events(&json).last().expect("an event")["ts"]),
            1500
        );
        assert_eq!(
            trace_events(&json).iter().filter(|e| e["s"] == "g").count(),
            1
        );
    }

    #[test]
    fn lost_switch_out_keeps_task_track_nested() {
        let names = names();
        // writer switched in on CPU 0, then in on CPU 1 without a switch-out on CPU 0.
        let events = vec![
            sw(0, 0, 0, 100, false),
            sw(1000, 1, 0, 100, false),
            sw(2000, 0, 300, 0, false),
            sw(3000, 1, 100, 0, false),
        ];
        let input = TimelineInput {
            events: &events,
            names: &names,
            targets: &[100],
            marks: &[],
            title: "t",
        };
        let (_, _, json) = render(&input);
        assert_eq!(
            slices(&json, 1, 100),
            vec![
                s("writer", 0, 1000, "unknown"),
                s("writer", 1000, 2000, "blocked")
            ]
        );
        // CPU 0's switch named kworker as prev, not writer: state unknown.
        assert_eq!(slices(&json, 0, 1), vec![s("writer", 0, 2000, "unknown")]);
    }

    /// Perfetto's own number parser (integer part, then the fraction as digits / 10^k), then
    /// multiply by 1000 and truncate: what a `ts` becomes in its tables.
    fn perfetto_ns(text: &str) -> u64 {
        let (int, frac) = text.split_once('.').unwrap_or((text, ""));
        let mut out = 0.0f64;
        for c in int.bytes() {
            out = out * 10.0 + f64::from(c - b'0');
        }
        if !frac.is_empty() {
            let (mut f, mut div) = (0.0f64, 1.0f64);
            for c in frac.bytes() {
                f = f * 10.0 + f64::from(c - b'0');
                div *= 10.0;
            }
            out += f / div;
        }
        (out * 1000.0) as u64
    }

    #[test]
    fn ts_survives_perfetto_truncation() {
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        for base in [
            0u64,
            1_000_000,
            1_000_000_000,
            100_000_000_000,
            10_000_000_000_000,
        ] {
            for _ in 0..20_000 {
                x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
                let n = base + (x >> 40);
                let text = serde_json::to_string(&ts_us(n, 0)).expect("f64");
                assert!(!text.contains('e'), "{text}");
                assert_eq!(perfetto_ns(&text), n, "{n} written as {text}");
                // The exact form would not survive for every n; that is why the bias exists.
                let dur = serde_json::to_string(&dur_us(n)).expect("f64");
                assert!(perfetto_ns(&dur) + 1 >= n && perfetto_ns(&dur) <= n);
            }
        }
    }

    /// A generated run over 4 CPUs: every track's slices, as Perfetto reads them, are sorted
    /// and never overlap, and every flow has both ends.
    #[test]
    fn generated_run_has_no_overlaps_as_perfetto_reads_it() {
        let mut x: u64 = 42;
        let mut rnd = |m: u64| {
            x = x
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (x >> 33) % m
        };
        let mut running = [0i32; 4];
        let mut t = 1_000_000u64;
        let mut events = Vec::new();
        for _ in 0..40_000 {
            t += 1 + rnd(5000);
            let cpu = rnd(4) as usize;
            if rnd(3) == 0 {
                let pid = 10 + rnd(8) as i32;
                events.push(TimelineEvent::Waking {
                    t_ns: t,
                    cpu: cpu as u32,
                    pid,
                    waker: running[cpu],
                    target_cpu: rnd(4) as i32,
                });
            } else {
                let mut next = if rnd(5) == 0 { 0 } else { 10 + rnd(8) as i32 };
                if next != 0 && running.contains(&next) {
                    next = 0;
                }
                events.push(TimelineEvent::Switch {
                    t_ns: t,
                    cpu: cpu as u32,
                    prev: running[cpu],
                    next,
                    prev_runnable: rnd(2) == 0,
                });
                running[cpu] = next;
            }
        }
        let names: BTreeMap<i32, String> = (10..14).map(|p| (p, format!("task-{p}"))).collect();
        let targets: Vec<i32> = (10..18).collect();
        let input = TimelineInput {
            events: &events,
            names: &names,
            targets: &targets,
            marks: &[],
            title: "gen",
        };
        let mut buf = Vec::new();
        let summary = write_chrome_json(&input, &mut buf).expect("write");
        let text = String::from_utf8(buf).expect("utf8");
        let json: Value = serde_json::from_str(&text).expect("json");
        let mut tracks: BTreeMap<(u64, u64), Vec<(u64, u64)>> = BTreeMap::new();
        let mut flows: BTreeMap<u64, BTreeSet<String>> = BTreeMap::new();
        for e in trace_events(&json) {
            let ts = || perfetto_ns(&e["ts"].to_string());
            match e["ph"].as_str() {
                Some("X") => {
                    let key = (
                        e["pid"].as_u64().expect("pid"),
                        e["tid"].as_u64().expect("tid"),
                    );
                    let dur = perfetto_ns(&e["dur"].to_string());
                    tracks.entry(key).or_default().push((ts(), ts() + dur));
                }
                Some(ph @ ("s" | "f")) => {
                    flows
                        .entry(e["id"].as_u64().expect("id"))
                        .or_default()
                        .insert(ph.to_string());
                }
                _ => {}
            }
        }
        let mut n = 0;
        for (key, spans) in &tracks {
            for pair in spans.windows(2) {
                assert!(pair[0].1 <= pair[1].0, "track {key:?}: {pair:?} overlap");
            }
            n += spans.len();
        }
        assert_eq!(n, summary.slices);
        assert!(summary.slices > 20_000);
        assert!(!flows.is_empty());
        assert!(flows.values().all(|ends| ends.len() == 2));
    }
}
