//! The trace's kept window as a Perfetto protobuf trace (`.pftrace`): the kernel's own
//! sched_switch/sched_waking records as ftrace event bundles, which the Perfetto UI turns
//! into CPU tracks and thread states itself, the task names, and knob changes as instants.

mod proto;
pub mod read;
pub mod window;

use std::collections::BTreeMap;
use std::io::{self, Write};

use proto::Msg;
pub use window::{grouped, KeptWindow};

use crate::trace::{EventKind, SchedEvent, WakeupOnce};

/// Everything a timeline is written from, owned, so a worker thread can write it while
/// the tracer goes on.
#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// Oldest first: the events touching the experiment's tasks.
    pub events: Vec<SchedEvent>,
    /// tid -> name: the experiment's tasks, then other tasks by the kernel's comm.
    pub names: BTreeMap<i32, String>,
    /// The experiment's tasks (tids).
    pub targets: Vec<i32>,
    /// tid -> process (tgid), where known.
    pub tgids: BTreeMap<i32, i32>,
    /// Knob changes: (CLOCK_MONOTONIC ns, line as the report words it).
    pub marks: Vec<(u64, String)>,
    /// The preset's name.
    pub title: String,
    pub window: KeptWindow,
}

/// What a timeline holds, for the status line and the tests that check the file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Written {
    /// sched_switch records.
    pub switches: u64,
    /// Wake-ups, one each: a sched_waking and the sched_wakeup after it are one
    /// ([`WakeupOnce`], the rule the JSON draws its wake-ups by).
    pub wakeups: u64,
    /// Knob changes.
    pub marks: u64,
}

/// Progress is reported after this many events (and the writer asked whether to go on).
pub const PROGRESS_EVERY: usize = 1 << 16;
/// A CPU's ftrace bundle is written once its events reach this size.
const BUNDLE_BYTES: usize = 64 * 1024;

// Field numbers from perfetto's protos/perfetto/trace/: trace.proto, trace_packet.proto,
// ftrace/ftrace_event_bundle.proto, ftrace/ftrace_event.proto, ftrace/sched.proto,
// ps/process_tree.proto, track_event/track_descriptor.proto, track_event/track_event.proto.
const TRACE_PACKET: u32 = 1;
const PACKET_FTRACE_EVENTS: u32 = 1;
const PACKET_PROCESS_TREE: u32 = 2;
const PACKET_TIMESTAMP: u32 = 8;
const PACKET_SEQUENCE_ID: u32 = 10;
const PACKET_TRACK_EVENT: u32 = 11;
const PACKET_SEQUENCE_FLAGS: u32 = 13;
const PACKET_TRACK_DESCRIPTOR: u32 = 60;
const BUNDLE_CPU: u32 = 1;
const BUNDLE_EVENT: u32 = 2;
const EVENT_TIMESTAMP: u32 = 1;
const EVENT_PID: u32 = 2;
const EVENT_SCHED_SWITCH: u32 = 4;
const EVENT_SCHED_WAKEUP: u32 = 17;
const EVENT_SCHED_WAKING: u32 = 20;
const SWITCH_PREV_COMM: u32 = 1;
const SWITCH_PREV_PID: u32 = 2;
const SWITCH_PREV_STATE: u32 = 4;
const SWITCH_NEXT_COMM: u32 = 5;
const SWITCH_NEXT_PID: u32 = 6;
const WAKE_COMM: u32 = 1;
const WAKE_PID: u32 = 2;
const WAKE_SUCCESS: u32 = 4;
const WAKE_TARGET_CPU: u32 = 5;
const TREE_PROCESSES: u32 = 1;
const TREE_THREADS: u32 = 2;
const PROCESS_PID: u32 = 1;
const PROCESS_CMDLINE: u32 = 3;
const THREAD_TID: u32 = 1;
const THREAD_NAME: u32 = 2;
const THREAD_TGID: u32 = 3;
const TRACK_UUID: u32 = 1;
const TRACK_NAME: u32 = 2;
const TRACK_EVENT_TYPE: u32 = 9;
const TRACK_EVENT_TRACK_UUID: u32 = 11;
const TRACK_EVENT_NAME: u32 = 23;
const TYPE_INSTANT: u64 = 3;
const SEQ_INCREMENTAL_STATE_CLEARED: u64 = 1;
const SEQ_NEEDS_INCREMENTAL_STATE: u64 = 2;
/// The one packet sequence the track events use.
const SEQUENCE: u64 = 1;
const TRACK_SCHEDLAB: u64 = 0x5c4e_d1ab_0001;
const TRACK_KNOBS: u64 = 0x5c4e_d1ab_0002;

/// Write `t` as a Perfetto trace. `progress(events done)` is called every
/// [`PROGRESS_EVERY`] events; when it answers false the write stops with
/// [`io::ErrorKind::Interrupted`].
pub fn write(
    t: &Timeline,
    out: &mut impl Write,
    progress: &mut dyn FnMut(usize) -> bool,
) -> io::Result<Written> {
    let mut w = Writer {
        out,
        packet: Msg::with_capacity(BUNDLE_BYTES + 1024),
        body: Msg::with_capacity(BUNDLE_BYTES + 1024),
        event: Msg::with_capacity(128),
        inner: Msg::with_capacity(96),
        bundles: Vec::new(),
    };
    w.process_tree(t)?;
    let mut written = Written {
        marks: w.marks(t)? as u64,
        ..Written::default()
    };
    let mut once = WakeupOnce::default();
    for (i, e) in t.events.iter().enumerate() {
        if i > 0 && i % PROGRESS_EVERY == 0 && !progress(i) {
            return Err(io::Error::new(io::ErrorKind::Interrupted, "cancelled"));
        }
        let starts_a_wakeup = once.starts(&e.kind);
        match w.event(e, &t.names)? {
            Some(EVENT_SCHED_SWITCH) => written.switches += 1,
            Some(_) if starts_a_wakeup => written.wakeups += 1,
            _ => {}
        }
    }
    for cpu in 0..w.bundles.len() {
        w.flush_bundle(cpu)?;
    }
    progress(t.events.len());
    Ok(written)
}

struct Writer<'a, W: Write> {
    out: &'a mut W,
    /// Scratch messages, reused: a packet, its body, one event and its payload.
    packet: Msg,
    body: Msg,
    event: Msg,
    inner: Msg,
    /// Per CPU: encoded FtraceEvents not yet written.
    bundles: Vec<Msg>,
}

impl<W: Write> Writer<'_, W> {
    /// `self.packet` as the next `Trace.packet`.
    fn put_packet(&mut self) -> io::Result<()> {
        let mut head = Vec::with_capacity(11);
        proto::put_varint(&mut head, u64::from(TRACE_PACKET << 3 | 2));
        proto::put_varint(&mut head, self.packet.len() as u64);
        self.out.write_all(&head)?;
        self.out.write_all(self.packet.bytes())
    }

    /// Who is who: every named task as a thread, in its process where known.
    fn process_tree(&mut self, t: &Timeline) -> io::Result<()> {
        self.body.clear();
        let mut m = Msg::with_capacity(64);
        let mut processes: Vec<i32> = t.tgids.values().copied().collect();
        processes.sort_unstable();
        processes.dedup();
        for pid in processes {
            m.clear();
            m.int(PROCESS_PID, i64::from(pid));
            let name = t.names.get(&pid).map_or(t.title.as_str(), String::as_str);
            m.str(PROCESS_CMDLINE, name);
            self.body.msg(TREE_PROCESSES, &m);
        }
        for (&tid, name) in t.names.iter().filter(|(&tid, _)| tid > 0) {
            m.clear();
            m.int(THREAD_TID, i64::from(tid));
            m.str(THREAD_NAME, name);
            if let Some(&tgid) = t.tgids.get(&tid) {
                m.int(THREAD_TGID, i64::from(tgid));
            }
            self.body.msg(TREE_THREADS, &m);
        }
        self.packet.clear();
        if let Some(first) = t.events.first() {
            self.packet.uint(PACKET_TIMESTAMP, first.t_ns);
        }
        self.packet.msg(PACKET_PROCESS_TREE, &self.body);
        self.put_packet()
    }

    /// A "schedlab" track saying what the window holds, and the knob changes as
    /// instants on their own track.
    fn marks(&mut self, t: &Timeline) -> io::Result<usize> {
        let first = t.events.first().map_or(0, |e| e.t_ns);
        let title = format!("schedlab {}: {}", t.title, t.window);
        self.track(TRACK_SCHEDLAB, &title, SEQ_INCREMENTAL_STATE_CLEARED)?;
        self.instant(TRACK_SCHEDLAB, first, &title)?;
        if t.marks.is_empty() {
            return Ok(0);
        }
        self.track(TRACK_KNOBS, "knob changes", 0)?;
        for (t_ns, line) in &t.marks {
            self.instant(TRACK_KNOBS, *t_ns, line)?;
        }
        Ok(t.marks.len())
    }

    fn track(&mut self, uuid: u64, name: &str, flags: u64) -> io::Result<()> {
        self.body.clear();
        self.body.uint(TRACK_UUID, uuid);
        self.body.str(TRACK_NAME, name);
        self.packet.clear();
        self.packet.uint(PACKET_SEQUENCE_ID, SEQUENCE);
        if flags != 0 {
            self.packet.uint(PACKET_SEQUENCE_FLAGS, flags);
        }
        self.packet.msg(PACKET_TRACK_DESCRIPTOR, &self.body);
        self.put_packet()
    }

    fn instant(&mut self, track: u64, t_ns: u64, name: &str) -> io::Result<()> {
        self.body.clear();
        self.body.uint(TRACK_EVENT_TYPE, TYPE_INSTANT);
        self.body.uint(TRACK_EVENT_TRACK_UUID, track);
        self.body.str(TRACK_EVENT_NAME, name);
        self.packet.clear();
        self.packet.uint(PACKET_TIMESTAMP, t_ns);
        self.packet.uint(PACKET_SEQUENCE_ID, SEQUENCE);
        self.packet
            .uint(PACKET_SEQUENCE_FLAGS, SEQ_NEEDS_INCREMENTAL_STATE);
        self.packet.msg(PACKET_TRACK_EVENT, &self.body);
        self.put_packet()
    }

    /// Add `e` to its CPU's bundle: which FtraceEvent field it became, if any (a
    /// switch inferred without a time and migrations are not written).
    fn event(&mut self, e: &SchedEvent, names: &BTreeMap<i32, String>) -> io::Result<Option<u32>> {
        self.inner.clear();
        let (field, common_pid) = match e.kind {
            EventKind::Switch {
                prev_pid,
                prev_state,
                next_pid,
                ref prev_comm,
                ref next_comm,
            } => {
                self.inner
                    .str(SWITCH_PREV_COMM, name(names, prev_pid, prev_comm));
                self.inner.int(SWITCH_PREV_PID, i64::from(prev_pid));
                self.inner.int(SWITCH_PREV_STATE, prev_state);
                self.inner
                    .str(SWITCH_NEXT_COMM, name(names, next_pid, next_comm));
                self.inner.int(SWITCH_NEXT_PID, i64::from(next_pid));
                (EVENT_SCHED_SWITCH, prev_pid)
            }
            EventKind::Waking {
                pid,
                waker,
                target_cpu,
            }
            | EventKind::Wakeup {
                pid,
                waker,
                target_cpu,
            } => {
                if let Some(n) = names.get(&pid) {
                    self.inner.str(WAKE_COMM, n);
                }
                self.inner.int(WAKE_PID, i64::from(pid));
                self.inner.int(WAKE_SUCCESS, 1);
                self.inner.int(WAKE_TARGET_CPU, i64::from(target_cpu));
                let field = if matches!(e.kind, EventKind::Waking { .. }) {
                    EVENT_SCHED_WAKING
                } else {
                    EVENT_SCHED_WAKEUP
                };
                (field, waker)
            }
            EventKind::SwitchedIn { .. } | EventKind::Migrate { .. } => return Ok(None),
        };
        self.event.clear();
        self.event.uint(EVENT_TIMESTAMP, e.t_ns);
        self.event
            .uint(EVENT_PID, u64::from(common_pid.max(0).unsigned_abs()));
        self.event.msg(field, &self.inner);
        let cpu = e.cpu as usize;
        if self.bundles.len() <= cpu {
            self.bundles
                .resize_with(cpu + 1, || Msg::with_capacity(BUNDLE_BYTES + 256));
        }
        self.bundles[cpu].msg(BUNDLE_EVENT, &self.event);
        if self.bundles[cpu].len() >= BUNDLE_BYTES {
            self.flush_bundle(cpu)?;
        }
        Ok(Some(field))
    }

    fn flush_bundle(&mut self, cpu: usize) -> io::Result<()> {
        if self.bundles[cpu].is_empty() {
            return Ok(());
        }
        self.body.clear();
        self.body.uint(BUNDLE_CPU, cpu as u64);
        self.body.raw(self.bundles[cpu].bytes());
        self.bundles[cpu].clear();
        self.packet.clear();
        self.packet.msg(PACKET_FTRACE_EVENTS, &self.body);
        self.put_packet()
    }
}

/// The experiment's name for a task, else the kernel's comm.
fn name<'a>(names: &'a BTreeMap<i32, String>, pid: i32, comm: &'a [u8; 16]) -> &'a str {
    if let Some(n) = names.get(&pid) {
        return n;
    }
    let end = comm.iter().position(|&b| b == 0).unwrap_or(comm.len());
    std::str::from_utf8(&comm[..end]).unwrap_or("")
}

#[cfg(test)]
mod tests;
