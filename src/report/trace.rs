//! The scheduler trace in a run's report: per task what the tracepoints saw, checked
//! against /proc's own switch counters in the same run, the tracer's cost, and the
//! timeline export for the Perfetto UI.

use std::collections::BTreeMap;
use std::io::BufWriter;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;

use super::perfetto::{KeptWindow, Timeline, Written};
use super::timeline::{write_chrome_json, TimelineEvent, TimelineInput};
use super::RunReport;
use crate::lab::experiment::{Finished, KnobEvent};
use crate::lab::store::Store;
use crate::lab::switches::WindowCount;
use crate::trace::{
    comm_str, EventKind, SchedEvent, TaskSched, TraceFinal, WakeupOnce, KEEP_MAX_EVENTS,
};

/// One task as the trace saw it, beside the kernel's own counters of the same run.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SchedReport {
    #[serde(flatten)]
    pub trace: TaskSched,
    /// Switches /proc counted over the trace's own window (read from
    /// /proc/PID/task/TID/status as the trace started and stopped; for a task that
    /// exited before, nr_switches between the first and last samples): the independent
    /// reference for `switches_in`.
    pub procfs_switches: Option<u64>,
    /// Voluntary switches (the task blocked): each is followed by one wakeup.
    pub procfs_voluntary: Option<u64>,
    /// switches_in / procfs_switches: 1.00 when the trace saw every switch.
    pub switches_vs_procfs: Option<f64>,
}

/// The trace as a whole: how much it handled, lost and cost.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TraceReport {
    /// Events decoded (every task on the traced CPUs, not only the experiment's).
    pub events: u64,
    pub events_per_s: f64,
    /// Records the kernel could not write because a ring was full: counts are low by
    /// about this many.
    pub lost: u64,
    pub undecodable: u64,
    /// The tracer thread's own CPU time, in seconds and per event.
    pub tracer_cpu_s: f64,
    pub tracer_ns_per_event: f64,
    /// The traced window on CLOCK_MONOTONIC, in seconds (what `perf record -k mono`
    /// prints), to line the trace up with other tools' of the same run.
    pub window_monotonic_s: [f64; 2],
    /// Whether the kernel wrote sched_waking for cross-CPU wake-ups only (the default:
    /// same-CPU wake-up latencies start at sched_wakeup); false with
    /// --trace-every-waking or a kernel that refuses tracepoint filters.
    pub waking_cross_cpu_only: bool,
    /// Switches from idle this kernel did not show as sched_switch, taken from perf's
    /// context-switch records (timed) and inferred from the task's next switch-out
    /// (counted, untimed).
    pub idle_switches_filled: u64,
    pub idle_switches_inferred: u64,
    /// The Perfetto timeline written, if asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<String>,
}

/// Add the trace to `report`: a `sched` object per task and a `trace` summary, and say
/// in the warnings when tracing was refused, failed or lost events.
pub fn add_trace(report: &mut RunReport, f: &Finished, store: &Store) {
    if let Some(why) = &f.trace_error {
        report.warnings.push(format!(
            "tracing refused: {why}; the run went on without it"
        ));
    }
    let Some(trace) = &f.trace else {
        return;
    };
    if let Some(why) = &trace.failure {
        report.warnings.push(format!(
            "tracing stopped mid-run: {why}; the trace's counts are incomplete"
        ));
    }
    if trace.lost > 0 {
        report.warnings.push(format!(
            "the trace lost {} (its rings were full): its counts are low by about that many",
            crate::format::counted(trace.lost, "event")
        ));
    }
    // The report's tasks are the workload's, in order: the same index as the store's.
    for (id, task) in report.tasks.iter_mut().enumerate() {
        if let Some(t) = trace.tasks.iter().find(|t| t.tid == task.tid) {
            let counted = f.trace_counted.iter().find(|c| c.tid == task.tid);
            task.sched = Some(sched_report(store, id, t, counted));
        }
    }
    let secs = trace.elapsed_ns as f64 / 1e9;
    report.trace = Some(TraceReport {
        events: trace.handled,
        events_per_s: if secs > 0.0 {
            trace.handled as f64 / secs
        } else {
            0.0
        },
        lost: trace.lost,
        undecodable: trace.undecodable,
        tracer_cpu_s: trace.cpu_ns as f64 / 1e9,
        tracer_ns_per_event: trace.cpu_ns as f64 / trace.handled.max(1) as f64,
        window_monotonic_s: [
            trace.started_ns as f64 / 1e9,
            (trace.started_ns + trace.elapsed_ns) as f64 / 1e9,
        ],
        waking_cross_cpu_only: trace.waking_cross_cpu_only,
        idle_switches_filled: trace.idle_switches_filled,
        idle_switches_inferred: trace.idle_switches_inferred,
        timeline: None,
    });
}

/// The trace's counts beside /proc's: over the trace's own window where /proc was read
/// at its start and stop (`counted`), else between the first and last samples.
fn sched_report(
    store: &Store,
    id: usize,
    t: &TaskSched,
    counted: Option<&WindowCount>,
) -> SchedReport {
    let series = store.tasks.get(id);
    let delta = |f: fn(&crate::sampler::TaskSample) -> Option<u64>| {
        let series = series?;
        let (_, first) = series.origin.as_ref()?;
        let (_, last) = series.last.as_ref()?;
        Some(f(last)?.saturating_sub(f(first)?))
    };
    let (procfs_switches, procfs_voluntary) = match counted {
        Some(c) => (Some(c.switches), Some(c.voluntary)),
        None => (
            delta(|s| s.sched.nr_switches),
            delta(|s| s.sched.nr_voluntary_switches),
        ),
    };
    SchedReport {
        trace: t.clone(),
        procfs_switches,
        procfs_voluntary,
        switches_vs_procfs: procfs_switches
            .filter(|&n| n > 0)
            .map(|n| t.switches_in as f64 / n as f64),
    }
}

/// Write the kept events as a timeline (see [`write_file`]), knob changes marked; the
/// path goes into the report.
pub fn write_timeline(
    report: &mut RunReport,
    f: &Finished,
    path: &Path,
) -> Result<Option<Written>> {
    let Some(trace) = &f.trace else {
        return Ok(None);
    };
    // `run` keeps the whole run (twice its duration, up to the event cap).
    let asked = Duration::from_nanos(trace.elapsed_ns);
    let mut t = timeline(
        &task_names(trace),
        trace.events_kept.clone(),
        &f.events,
        f.start_ns.unwrap_or(0),
        &report.preset,
        asked,
    );
    // The tasks have exited by now: their processes as the experiment started them.
    t.tgids
        .extend(f.started.tasks.iter().map(|task| (task.tid, task.pid)));
    let written = write_file(&t, path, &mut |_| true)?;
    if let Some(r) = report.trace.as_mut() {
        r.timeline = Some(path.display().to_string());
    }
    Ok(Some(written))
}

/// The traced tasks' ids and names: what a timeline names its threads after.
pub fn task_names(trace: &TraceFinal) -> Vec<(i32, String)> {
    trace
        .tasks
        .iter()
        .map(|t| (t.tid, t.name.clone()))
        .collect()
}

/// The kept window of a trace of `tasks` (tid, name) (its events `kept`, taken out of it or copied) with
/// `events` (knob changes, on the samples' clock from `start_ns`) as marks: owned, so a
/// worker can write it while the tracer goes on.
pub fn timeline(
    tasks: &[(i32, String)],
    kept: Vec<SchedEvent>,
    events: &[KnobEvent],
    start_ns: u64,
    title: &str,
    asked: Duration,
) -> Timeline {
    let mut names: BTreeMap<i32, String> = BTreeMap::new();
    for (tid, name) in tasks {
        names.insert(*tid, name.clone());
    }
    for e in &kept {
        if let EventKind::Switch {
            prev_pid,
            next_pid,
            prev_comm,
            next_comm,
            ..
        } = e.kind
        {
            for (pid, comm) in [(prev_pid, prev_comm), (next_pid, next_comm)] {
                if pid != 0 && comm[0] != 0 {
                    names.entry(pid).or_insert_with(|| comm_str(&comm));
                }
            }
        }
    }
    let targets: Vec<i32> = tasks.iter().map(|(tid, _)| *tid).collect();
    // Best effort: a task that has exited is a thread without a process.
    let tgids = targets
        .iter()
        .filter_map(|&tid| Some((tid, crate::state::tgid_of(tid)?)))
        .collect();
    // Worded as the report's table and the CSV word them.
    let marks: Vec<(u64, String)> = events
        .iter()
        .map(|e| {
            (
                start_ns + (e.t_s * 1e9) as u64,
                super::EventReport::of(e).line(),
            )
        })
        .collect();
    let window = KeptWindow::of(&kept, asked, KEEP_MAX_EVENTS);
    Timeline {
        events: kept,
        names,
        targets,
        tgids,
        marks,
        title: title.to_string(),
        window,
    }
}

/// Write `t` to the new file `path`: the Chrome JSON trace format for a `.json` name,
/// else Perfetto's protobuf format (a fifth of the size, written several times faster).
/// The file is written under a `.part` name and linked to `path` only when complete,
/// so a file under `path` is never half-written; an existing `path` is refused.
pub fn write_file(
    t: &Timeline,
    path: &Path,
    progress: &mut dyn FnMut(usize) -> bool,
) -> Result<Written> {
    let mut part = path.as_os_str().to_owned();
    part.push(".part");
    let part = std::path::PathBuf::from(part);
    let file = crate::state::create_new(&part)
        .with_context(|| format!("creating the timeline {}", part.display()))?;
    let result =
        write_to(t, path, BufWriter::with_capacity(1 << 20, file), progress).and_then(|w| {
            name_it(&part, path)
                .with_context(|| format!("naming the timeline {}", path.display()))?;
            Ok(w)
        });
    let _ = std::fs::remove_file(&part);
    result
}

/// Give the finished `part` the name `path`: a hard link, which unlike rename refuses a
/// file that appeared in the meantime; a rename where the file system has no links.
fn name_it(part: &Path, path: &Path) -> std::io::Result<()> {
    match std::fs::hard_link(part, path) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists && !path.exists() => {
            std::fs::rename(part, path)
        }
        other => other,
    }
}

fn write_to(
    t: &Timeline,
    path: &Path,
    mut out: BufWriter<std::fs::File>,
    progress: &mut dyn FnMut(usize) -> bool,
) -> Result<Written> {
    let json = path.extension().is_some_and(|e| e == "json");
    let written = if json {
        write_json(t, &mut out)
    } else {
        super::perfetto::write(t, &mut out, progress)
    }
    .with_context(|| format!("writing the timeline {}", path.display()))?;
    std::io::Write::flush(&mut out).with_context(|| format!("writing {}", path.display()))?;
    Ok(written)
}

/// The Chrome JSON trace format: slices built here (the protobuf leaves that to the UI).
fn write_json(t: &Timeline, out: &mut impl std::io::Write) -> std::io::Result<Written> {
    let mut names = t.names.clone();
    let mut once = WakeupOnce::default();
    let timeline: Vec<TimelineEvent> = t
        .events
        .iter()
        .filter_map(|e| timeline_event(e, &mut names, &mut once))
        .collect();
    let summary = write_chrome_json(
        &TimelineInput {
            events: &timeline,
            names: &names,
            targets: &t.targets,
            marks: &t.marks,
            title: &t.title,
        },
        out,
    )?;
    let switches = timeline
        .iter()
        .filter(|e| matches!(e, TimelineEvent::Switch { .. }))
        .count();
    Ok(Written {
        switches: switches as u64,
        wakeups: summary.wakeups as u64,
        marks: summary.marks as u64,
    })
}

/// One traced event for the timeline; switches also name the tasks they show. A wake-up
/// is drawn at its sched_waking, or at its sched_wakeup when no sched_waking came first
/// (the kernel writes sched_waking only for cross-CPU wake-ups unless
/// --trace-every-waking; a same-CPU wakeup's common_pid is the waker).
fn timeline_event(
    e: &SchedEvent,
    names: &mut BTreeMap<i32, String>,
    once: &mut WakeupOnce,
) -> Option<TimelineEvent> {
    let starts_a_wakeup = once.starts(&e.kind);
    Some(match e.kind {
        EventKind::Switch {
            prev_pid,
            prev_state,
            next_pid,
            prev_comm,
            next_comm,
        } => {
            for (pid, comm) in [(prev_pid, prev_comm), (next_pid, next_comm)] {
                if pid != 0 {
                    names.entry(pid).or_insert_with(|| comm_str(&comm));
                }
            }
            TimelineEvent::Switch {
                t_ns: e.t_ns,
                cpu: e.cpu,
                prev: prev_pid,
                next: next_pid,
                prev_runnable: prev_state & 0xff == 0,
            }
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
            // A sched_wakeup whose sched_waking was drawn already adds nothing.
            if !starts_a_wakeup {
                return None;
            }
            TimelineEvent::Waking {
                t_ns: e.t_ns,
                cpu: e.cpu,
                pid,
                waker,
                target_cpu,
            }
        }
        // Inferred without a time: nothing to draw.
        EventKind::SwitchedIn { .. } => return None,
        EventKind::Migrate {
            pid,
            orig_cpu,
            dest_cpu,
        } => TimelineEvent::Migrate {
            t_ns: e.t_ns,
            pid,
            orig_cpu,
            dest_cpu,
        },
    })
}

/// The trace's part of the readable table: one row per traced task, then the cost.
pub fn write_table(out: &mut String, r: &RunReport) {
    use std::fmt::Write as _;
    let Some(t) = &r.trace else {
        return;
    };
    let _ = writeln!(
        out,
        "scheduler trace: {} ({:.0}/s), {} lost, tracer {:.0} ns/event",
        crate::format::counted(t.events, "event"),
        t.events_per_s,
        t.lost,
        t.tracer_ns_per_event
    );
    if t.waking_cross_cpu_only {
        out.push_str("  wakeup latency from sched_waking for cross-CPU wake-ups, from sched_wakeup for same-CPU ones (--trace-every-waking: all from sched_waking)\n");
    }
    let mut rows: Vec<Vec<String>> = vec![[
        "  task",
        "switches",
        "vs /proc",
        "preempted",
        "blocked",
        "wakeup p50/p99/max us",
        "runq p99 us",
        "top preemptor",
    ]
    .map(String::from)
    .to_vec()];
    for task in &r.tasks {
        let Some(s) = &task.sched else { continue };
        let w = &s.trace.wakeup_latency;
        let top = s
            .trace
            .preemptors
            .first()
            .map_or("-".to_string(), |p| format!("{} x{}", p.comm, p.count));
        rows.push(vec![
            format!("  {}", task.name),
            s.trace.switches_in.to_string(),
            s.switches_vs_procfs
                .map_or("-".to_string(), |x| format!("{x:.3}")),
            s.trace.preempted.to_string(),
            s.trace.blocked.to_string(),
            if w.count == 0 {
                "-".to_string()
            } else {
                format!("{:.1}/{:.1}/{:.1}", w.p50_us, w.p99_us, w.max_us)
            },
            if s.trace.runq_delay.count == 0 {
                "-".to_string()
            } else {
                format!("{:.1}", s.trace.runq_delay.p99_us)
            },
            top,
        ]);
    }
    out.push_str(&super::align(&rows, |c| c == 0 || c == 7));
}
