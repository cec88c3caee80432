//! The worker kinds a preset can ask for, their parameters and what their progress counts.

use std::collections::BTreeMap;

use crate::error::Invalid;

use serde::{Deserialize, Serialize};

/// What a task runs when it is not an external command.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WorkerKind {
    /// Counts iterations in a tight loop.
    Spin,
    /// Loops on getppid(), like the 1998 background hogs.
    Hog,
    /// Writes `bytes`-sized chunks to stdout (a pipe).
    PipeWriter,
    /// Reads stdin (a pipe) and counts bytes.
    PipeReader,
    /// Reads stdin (a pipe) and counts lines (`--progress stdout-lines`).
    LineReader,
    /// memsets a buffer `repeats` times, then writes a one-byte token to stdout.
    MemsetProducer,
    /// Reads a token from stdin, then memsets a buffer `repeats` times.
    MemsetConsumer,
    /// Calls sched_yield() in batches and times each switch.
    Yield,
    /// Burns `ms` of CPU, sleeps `sleep_ms`, repeats: a job stream in one task.
    Burn,
    /// Runs the real make -jN on a generated Makefile of short burn jobs.
    Make,
    /// Holds its process's mutex almost always: sleeps `hold_ms` and burns `burn_ms`
    /// inside it, then unlocks and takes it again (priority inversion's low task).
    LockHolder,
    /// Every `period_ms` takes its process's mutex and times the wait (priority
    /// inversion's high task).
    LockWaiter,
    /// Sleeps `period_ms` and records how late each wake-up ran (a periodic task's
    /// latency: throttling and waiting for a CPU show in it).
    Ticker,
}

/// One numeric parameter of a worker kind.
#[derive(Clone, Copy, Debug)]
pub struct ParamSpec {
    pub name: &'static str,
    pub default: i64,
    pub min: i64,
    pub max: i64,
    pub help: &'static str,
}

const fn p(name: &'static str, default: i64, min: i64, max: i64, help: &'static str) -> ParamSpec {
    ParamSpec {
        name,
        default,
        min,
        max,
        help,
    }
}

const PIPE_WRITER: &[ParamSpec] = &[
    p("bytes", 30, 1, 1 << 20, "bytes per write()"),
    p(
        "writes",
        0,
        0,
        i64::MAX,
        "number of writes, 0 = until the run ends",
    ),
];
const PIPE_READER: &[ParamSpec] = &[p("bytes", 65536, 1, 1 << 20, "bytes per read()")];
const MEMSET_PRODUCER: &[ParamSpec] = &[
    p("buffer_kib", 1024, 1, 1 << 20, "buffer size in KiB"),
    p("repeats", 100, 1, 100_000, "memsets of the buffer per loop"),
];
const MEMSET_CONSUMER: &[ParamSpec] = &[
    p("buffer_kib", 1024, 1, 1 << 20, "buffer size in KiB"),
    p("repeats", 20, 1, 100_000, "memsets of the buffer per token"),
];
const YIELD: &[ParamSpec] = &[p("batch", 10, 1, 100_000, "yields per timed batch")];
const BURN: &[ParamSpec] = &[
    p(
        "ms",
        10,
        0,
        60_000,
        "CPU burst per job in ms (thread CPU time)",
    ),
    p("sleep_ms", 5, 0, 60_000, "sleep after each burst in ms"),
];
const MAKE: &[ParamSpec] = &[
    p("jobs", 16, 1, 1024, "make -j"),
    p("depend_jobs", 120, 0, 100_000, "tiny jobs in stage depend"),
    p("depend_ms", 3, 0, 60_000, "CPU burst of a depend job in ms"),
    p("depend_io_ms", 5, 0, 60_000, "sleep of a depend job in ms"),
    p(
        "compile_jobs",
        24,
        0,
        100_000,
        "heavy jobs in stage compile",
    ),
    p(
        "compile_ms",
        120,
        0,
        60_000,
        "CPU burst of a compile job in ms",
    ),
    p(
        "compile_io_ms",
        10,
        0,
        60_000,
        "sleep of a compile job in ms",
    ),
    p(
        "link_ms",
        200,
        0,
        60_000,
        "CPU burst of the single link job in ms",
    ),
];

const PI: ParamSpec = p(
    "pi",
    0,
    0,
    1,
    "1: a priority-inheritance mutex (PTHREAD_PRIO_INHERIT, a PI futex); holder and waiter share a lock only if they agree",
);
const LOCK_HOLDER: &[ParamSpec] = &[
    p(
        "hold_ms",
        9,
        0,
        10_000,
        "sleep while holding the lock, in ms",
    ),
    p(
        "burn_ms",
        1,
        0,
        10_000,
        "CPU burnt while holding the lock before unlocking, in ms",
    ),
    PI,
];
const LOCK_WAITER: &[ParamSpec] = &[
    p(
        "period_ms",
        20,
        1,
        10_000,
        "sleep between lock acquisitions, in ms",
    ),
    PI,
];

const TICKER: &[ParamSpec] = &[p("period_ms", 10, 1, 10_000, "sleep between ticks, in ms")];

impl WorkerKind {
    pub const ALLOWED: &'static str =
        "spin, hog, pipe-writer, pipe-reader, line-reader, memset-producer, memset-consumer, yield, burn, make, lock-holder, lock-waiter, ticker";

    pub fn params(self) -> &'static [ParamSpec] {
        match self {
            WorkerKind::Spin | WorkerKind::Hog => &[],
            WorkerKind::PipeWriter => PIPE_WRITER,
            WorkerKind::PipeReader | WorkerKind::LineReader => PIPE_READER,
            WorkerKind::MemsetProducer => MEMSET_PRODUCER,
            WorkerKind::MemsetConsumer => MEMSET_CONSUMER,
            WorkerKind::Yield => YIELD,
            WorkerKind::Burn => BURN,
            WorkerKind::Make => MAKE,
            WorkerKind::LockHolder => LOCK_HOLDER,
            WorkerKind::LockWaiter => LOCK_WAITER,
            WorkerKind::Ticker => TICKER,
        }
    }

    pub fn param(self, name: &str) -> Option<&'static ParamSpec> {
        self.params().iter().find(|s| s.name == name)
    }

    /// What one unit of progress is.
    pub fn progress_unit(self) -> &'static str {
        match self {
            WorkerKind::Spin => "iterations",
            WorkerKind::Hog | WorkerKind::MemsetProducer | WorkerKind::MemsetConsumer => "loops",
            WorkerKind::PipeWriter | WorkerKind::PipeReader => "bytes",
            WorkerKind::LineReader => "lines",
            WorkerKind::Yield => "yields",
            WorkerKind::Burn | WorkerKind::Make => "jobs",
            WorkerKind::LockHolder => "sections",
            WorkerKind::LockWaiter => "acquisitions",
            WorkerKind::Ticker => "ticks",
        }
    }

    pub fn reads_stdin(self) -> bool {
        matches!(
            self,
            WorkerKind::PipeReader | WorkerKind::LineReader | WorkerKind::MemsetConsumer
        )
    }

    pub fn writes_stdout(self) -> bool {
        matches!(self, WorkerKind::PipeWriter | WorkerKind::MemsetProducer)
    }

    /// Kinds that run as their own process (not as a thread beside others).
    pub fn needs_own_process(self) -> bool {
        self.reads_stdin() || self.writes_stdout() || self == WorkerKind::Make
    }

    /// Yield times each switch; lock-waiter each wait for the lock; ticker each wake-up.
    pub fn measures_latency(self) -> bool {
        matches!(
            self,
            WorkerKind::Yield | WorkerKind::LockWaiter | WorkerKind::Ticker
        )
    }
}

/// A kind's parameters with defaults filled in, validated against its specs.
pub fn resolve_params(
    kind: WorkerKind,
    given: &BTreeMap<String, i64>,
) -> Result<BTreeMap<String, i64>, Invalid> {
    let mut out = BTreeMap::new();
    for (name, &value) in given {
        check_param(kind, name, value)?;
        out.insert(name.clone(), value);
    }
    for spec in kind.params() {
        out.entry(spec.name.to_string()).or_insert(spec.default);
    }
    Ok(out)
}

/// One parameter against its spec; the error names the allowed names or range.
pub fn check_param(kind: WorkerKind, name: &str, value: i64) -> Result<(), Invalid> {
    let Some(spec) = kind.param(name) else {
        let names: Vec<_> = kind.params().iter().map(|s| s.name).collect();
        let allowed = if names.is_empty() {
            "none".to_string()
        } else {
            names.join(", ")
        };
        return Err(Invalid(format!(
            "unknown parameter \"{name}\" for worker {}: its parameters are {allowed}",
            kind_name(kind)
        )));
    };
    if value < spec.min || value > spec.max {
        return Err(Invalid(format!(
            "{name}={value} is out of range for worker {}: allowed {}..{} ({})",
            kind_name(kind),
            spec.min,
            spec.max,
            spec.help
        )));
    }
    Ok(())
}

pub fn kind_name(kind: WorkerKind) -> String {
    serde_json::to_value(kind)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_else(|| format!("{kind:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_in_and_unknown_names_are_listed() {
        let got = resolve_params(WorkerKind::PipeWriter, &BTreeMap::new()).expect("defaults");
        assert_eq!(got["bytes"], 30);
        let bad = BTreeMap::from([("size".to_string(), 3)]);
        let err = resolve_params(WorkerKind::PipeWriter, &bad).unwrap_err().0;
        assert!(err.contains("bytes, writes"), "{err}");
        let err = check_param(WorkerKind::Spin, "x", 1).unwrap_err().0;
        assert!(err.contains("parameters are none"), "{err}");
        let err = check_param(WorkerKind::Make, "jobs", 0).unwrap_err().0;
        assert!(err.contains("allowed 1..1024"), "{err}");
        assert_eq!(kind_name(WorkerKind::MemsetProducer), "memset-producer");
    }
}
