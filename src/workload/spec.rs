//! What one task of a run is: the program it runs and the settings it starts with, as a
//! preset expands into them and the workload starts them.

use std::collections::BTreeMap;

use super::kinds::{kind_name, WorkerKind};
use crate::knob::task::SchedSettings;

/// What a task runs.
#[derive(Clone, Debug, PartialEq)]
pub enum Program {
    Worker {
        kind: WorkerKind,
        params: BTreeMap<String, i64>,
    },
    Command(Vec<String>),
    /// A task schedlab did not start (`--pid`, `--name`): it is sampled and its knobs
    /// are turned, and whatever schedlab changed on it is put back at exit.
    Attached {
        pid: i32,
        tid: i32,
    },
}

impl Program {
    pub fn kind(&self) -> Option<WorkerKind> {
        match self {
            Program::Worker { kind, .. } => Some(*kind),
            Program::Command(_) | Program::Attached { .. } => None,
        }
    }

    pub fn is_attached(&self) -> bool {
        matches!(self, Program::Attached { .. })
    }

    pub fn describe(&self) -> String {
        match self {
            Program::Worker { kind, params } if params.is_empty() => kind_name(*kind),
            Program::Worker { kind, params } => {
                let p: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
                format!("{} ({})", kind_name(*kind), p.join(" "))
            }
            Program::Command(argv) => format!("command: {}", argv.join(" ")),
            Program::Attached { pid, tid } if pid == tid => format!("attached: pid {pid}"),
            Program::Attached { pid, tid } => format!("attached: pid {pid} thread {tid}"),
        }
    }
}

/// One concrete task of a run.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskSpec {
    pub name: String,
    pub group: String,
    pub index: usize,
    pub program: Program,
    pub sched: SchedSettings,
    pub stdin: Option<String>,
    pub stdout: Option<String>,
    pub process: Option<String>,
    pub cgroup: Option<String>,
    pub poll_stdin: bool,
}
