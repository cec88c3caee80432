//! Presets: TOML experiment descriptions -> raw serde structs -> a validated [`Preset`],
//! `--set` overrides, and expansion into the concrete tasks of a run.
//!
//! The types live here; each job has its module: `raw` (the file format), `validate`,
//! `apply` (overrides), `expand` (into task specs) and `load` (built-ins and files).

use std::collections::BTreeMap;

use crate::knob::cgroup::CgroupValue;

use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;
use crate::error::Invalid;
use crate::knob::task::{Deadline, SchedSettings};
use crate::policy::Policy;
use crate::workload::spec::Program;

pub mod adhoc;
mod apply;
mod expand;
#[cfg(test)]
mod fixtures;
mod load;
mod raw;
pub mod setting;
mod validate;

pub use load::{list, list_in, load, load_in, user_dir, BUILTIN, DEFAULT_PRESET};
pub(crate) use raw::locate;

use setting::{NiceLadder, Setting};

/// Which number the preset is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Headline {
    /// Progress per second of the metric's task group.
    Throughput,
    /// Latency percentiles of the metric's task group.
    Latency,
    /// CPU share of the metric's task group.
    Share,
    /// Fairness error of the group's shares against the ideal from nice weights.
    Fairness,
}

/// Where a task may run: every online CPU, or a fixed set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuChoice {
    All,
    Set(CpuSet),
}

impl CpuChoice {
    pub fn parse(s: &str) -> Result<CpuChoice, Invalid> {
        if s.trim().eq_ignore_ascii_case("all") {
            return Ok(CpuChoice::All);
        }
        s.parse::<CpuSet>()
            .map(CpuChoice::Set)
            .map_err(|e| Invalid(format!("{e} (or \"all\")")))
    }

    pub fn resolve(&self, online: &CpuSet) -> CpuSet {
        match self {
            CpuChoice::All => *online,
            CpuChoice::Set(s) => *s,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            CpuChoice::All => "all".into(),
            CpuChoice::Set(s) => s.to_list(),
        }
    }
}

/// A named group of identical tasks (instances differ only in their nice ladder rung).
#[derive(Clone, Debug, PartialEq)]
pub struct TaskGroup {
    pub name: String,
    pub program: Program,
    pub count: usize,
    pub policy: Policy,
    pub priority: u32,
    pub nice: NiceLadder,
    pub cpus: CpuChoice,
    pub slice_ns: Option<u64>,
    pub dl_runtime_ns: Option<u64>,
    pub dl_deadline_ns: Option<u64>,
    pub dl_period_ns: Option<u64>,
    pub uclamp_min: Option<u32>,
    pub uclamp_max: Option<u32>,
    pub stdin: Option<String>,
    pub stdout: Option<String>,
    pub process: Option<String>,
    /// The preset cgroup the group's tasks run in.
    pub cgroup: Option<String>,
    /// The task polls its stdin pipe once before it starts (arms the pipe's poll_usage).
    pub poll_stdin: bool,
    /// Settings aimed at one instance (`hog-1.nice=5`), by instance index.
    pub instance_overrides: BTreeMap<usize, Vec<Setting>>,
}

/// A named set of settings a preset offers (`--variant batch`).
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    pub name: String,
    pub summary: String,
    pub set: Vec<Setting>,
}

/// A validated preset.
#[derive(Clone, Debug, PartialEq)]
pub struct Preset {
    pub name: String,
    pub summary: String,
    pub note: String,
    pub focus: Vec<String>,
    pub headline: Headline,
    pub metric_task: String,
    /// Start-up time a headless run leaves out of its summaries (a transient that is
    /// not the effect, like rt-throttle's first period).
    pub warmup: std::time::Duration,
    pub groups: Vec<TaskGroup>,
    pub variants: Vec<Variant>,
    /// cgroups the preset creates for its tasks: name -> knob -> value (typed).
    pub cgroups: BTreeMap<String, BTreeMap<String, CgroupValue>>,
    /// "built-in" or the file it came from.
    pub source: String,
}

/// The knobs every task group has, besides its worker kind's parameters.
pub const TASK_KNOBS: &str =
    "policy, priority, nice, cpus, count, slice, runtime, deadline, period, process, poll_stdin";

/// Names of presets, tasks, cgroups and processes: short, and safe in file paths and
/// `TASK.KNOB=VALUE` settings.
fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
}

/// `hog-0`, `hog-1`, ... for groups of more than one; the group name otherwise.
pub fn instance_name(group: &str, index: usize, count: usize) -> String {
    if count > 1 {
        format!("{group}-{index}")
    } else {
        group.to_string()
    }
}

/// "a, b" for a list of names, "none" for an empty one.
fn names_or_none(names: &[&str]) -> String {
    if names.is_empty() {
        "none".to_string()
    } else {
        names.join(", ")
    }
}

impl Preset {
    pub fn group(&self, name: &str) -> Option<&TaskGroup> {
        self.groups.iter().find(|g| g.name == name)
    }

    pub fn variant(&self, name: &str) -> Result<&Variant, Invalid> {
        self.variants
            .iter()
            .find(|v| v.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self.variants.iter().map(|v| v.name.as_str()).collect();
                Invalid(format!(
                    "preset {} has no variant \"{name}\": its variants are {}",
                    self.name,
                    names_or_none(&names)
                ))
            })
    }
}

impl TaskGroup {
    /// The settings of instance `index` (CPU choice left for [`Preset::tasks`]).
    pub fn settings(&self, index: usize) -> SchedSettings {
        let deadline = match (self.dl_runtime_ns, self.dl_deadline_ns, self.dl_period_ns) {
            (Some(runtime_ns), d, p) if d.or(p).is_some() => Some(Deadline {
                runtime_ns,
                deadline_ns: d.or(p).unwrap_or(0),
                period_ns: p.or(d).unwrap_or(0),
            }),
            _ => None,
        };
        SchedSettings {
            policy: self.policy,
            priority: self.priority,
            nice: self.nice.get(index),
            cpus: match self.cpus {
                CpuChoice::All => None,
                CpuChoice::Set(s) => Some(s),
            },
            slice_ns: self.slice_ns,
            deadline,
            uclamp_min: self.uclamp_min,
            uclamp_max: self.uclamp_max,
        }
    }
}
