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

use std::io::{self, BufWriter, Write};

mod encode;
mod slices;

use slices::Builder;

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

#[cfg(test)]
mod tests;
