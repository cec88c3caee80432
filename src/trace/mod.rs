//! Scheduler tracepoints for the experiment's tasks: sched_switch, sched_waking,
//! sched_wakeup(_new) and sched_migrate_task on every traced CPU, read from perf ring
//! buffers by one thread ("schedlab-trace") and turned into per-task counts, wakeup
//! latencies, run-queue delays and preemptors.
//!
//! The path: tracefs.rs finds (or mounts, journaled) tracefs and reads the format files;
//! format.rs parses them; ring.rs opens one perf event per tracepoint per CPU, all of a
//! CPU's in one ring; decode.rs turns raw samples into [`SchedEvent`]s using the parsed
//! offsets; order.rs merges the CPUs' streams by time; stats.rs aggregates the targets.
//! tracer.rs starts and stops the thread, whose loop is worker.rs (reading the rings:
//! drain.rs and grow.rs, the idle gap: idle.rs); sink.rs takes the ordered events to
//! stats.rs, the kept window and the interval batches; types.rs holds what it reports.
//!
//! Ordering: each CPU's ring is in time order; the CPUs' streams of target events are
//! merged by time (order.rs) up to a horizon 2 ms behind the drain's clock reading, so
//! the aggregation sees one ordered stream (it also survives a stray late event, see
//! stats.rs). Events of non-targets are only counted, in read order.
//!
//! The idle gap: some kernels (the project's 6.18 VMs) deliver no perf event raised
//! while the idle task runs, so a switch from idle to a task never arrives as a
//! sched_switch, nor does a wake-up raised in an idle CPU's interrupt. A sixth event
//! per CPU asks for perf's context-switch records, which the incoming task writes: a
//! switch-in after idle that no sched_switch showed becomes a Switch event (counted in
//! [`TraceFinal::idle_switches_filled`]). The records cost two more records per switch,
//! so they are paced: on only for a CPU that went idle in the last [`IDLE_QUIET_NS`]
//! (a CPU kept busy by a ping-pong writes none), off for good once a kernel proves it
//! shows switches from idle. A switch-in the records missed (the CPU went idle and woke
//! between two drains) is inferred when the task next switches out, without a time
//! ([`TraceFinal::idle_switches_inferred`]). A sleeping task switched in without a
//! wake-up seen still counts one, as [`TaskSched::wakeups_unseen`], without a latency.
//!
//! sched_waking is filtered in the kernel (an ftrace filter on the perf event) to
//! wake-ups of tasks that last ran on another CPU: on this VM writing every sched_waking
//! costs a pipe ping-pong a tenth or more of its speed, and a same-CPU wake-up's
//! sched_wakeup follows its sched_waking within a microsecond on the same CPU, so its
//! latency starts at sched_wakeup instead ([`Wakings::All`] keeps them all).
//!
//! What it costs: the kernel writes one ~100-byte record per event into a per-CPU ring
//! (plus two 40-byte context-switch records per switch on CPUs that go idle);
//! the tracer thread drains every ring every 10 ms (or when one is a quarter full) with
//! no system call per event and no allocation per event once its queues have grown.
//! schedlab's own threads, the tracer included, are traced like any task but counted
//! only if they are targets.

mod decode;
mod drain;
mod format;
mod grow;
mod idle;
mod order;
mod ring;
mod sink;
mod stats;
mod tracefs;
mod tracer;
mod types;
mod worker;

use drain::Reader;
use idle::IdleGap;
use sink::Sink;
use worker::Worker;

pub use decode::{Decoder, SchedFormats, Undecodable, Unusable, TRACEPOINTS};
pub use format::{Field, Format, FormatError};
pub use idle::IDLE_QUIET_NS;
pub use ring::RING_PAGES;
pub use stats::{comm_str, Aggregator, HIST_HIGH_NS};
pub use tracer::Tracer;
pub use types::{
    EventKind, LatencyNs, LatencySummary, Preemptor, SchedEvent, TaskInterval, TaskSched,
    TraceBatch, TraceError, TraceFinal, TraceTarget, WakeRecord, WakeupOnce, Wakings,
    KEEP_MAX_EVENTS,
};
