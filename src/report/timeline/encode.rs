//! Encoding the built timeline as Chrome JSON trace events, streamed through serde_json.

use std::collections::BTreeMap;
use std::fmt;
use std::io::{self, Write};

use serde::{Serialize, Serializer};

use super::slices::*;
use super::{Summary, TimelineInput, CPUS_PID, TASKS_PID};

/// Microseconds since `origin` for `ts`, half a nanosecond late so that Perfetto's
/// multiply-and-truncate lands on the exact nanosecond (see the module doc).
pub(super) fn ts_us(t: u64, origin: u64) -> f64 {
    let ns = t.saturating_sub(origin);
    (ns.saturating_mul(10).saturating_add(5)) as f64 / 10_000.0
}

pub(super) fn dur_us(ns: u64) -> f64 {
    ns as f64 / 1000.0
}

/// A task as a person reads it.
#[derive(Debug, Clone, Copy)]
pub(super) enum TaskName<'a> {
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
pub(super) enum Label<'a> {
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
pub(super) enum Args<'a> {
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
pub(super) struct Ev<'a> {
    pub(super) name: Label<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) cat: Option<&'static str>,
    pub(super) ph: &'static str,
    pub(super) pid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) tid: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) ts: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) dur: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) s: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) id: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) bp: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) args: Option<Args<'a>>,
}

impl<'a> Ev<'a> {
    pub(super) fn new(name: Label<'a>, ph: &'static str, pid: u32, tid: Option<u32>) -> Self {
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
pub(super) struct OtherData<'a> {
    pub(super) title: &'a str,
    pub(super) generator: &'static str,
    pub(super) clock: &'static str,
    pub(super) t0_ns: u64,
}

/// Writes events with a separator before all but the first.
pub(super) struct EventWriter<'w, W: Write> {
    pub(super) w: &'w mut W,
    pub(super) first: bool,
}

impl<W: Write> EventWriter<'_, W> {
    fn put(&mut self, ev: &Ev) -> io::Result<()> {
        self.w.write_all(if self.first { b"\n" } else { b",\n" })?;
        self.first = false;
        serde_json::to_writer(&mut *self.w, ev).map_err(io::Error::from)
    }
}

impl Built {
    pub(super) fn write<W: Write>(&self, input: &TimelineInput, w: &mut W) -> io::Result<Summary> {
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
