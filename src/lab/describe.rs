//! What a running experiment is, as its front ends (the workbench, a recording) see it:
//! the preset's face, its tasks, the machine.

use crate::preset::Headline;

/// A task of the experiment, as a front end shows it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TaskInfo {
    pub name: String,
    pub group: String,
    pub pid: i32,
    pub tid: i32,
    pub progress_unit: String,
    pub measures_latency: bool,
}

/// The parts of a preset a front end shows.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PresetView {
    pub name: String,
    pub summary: String,
    pub note: String,
    pub focus: Vec<String>,
    pub headline: Headline,
    pub metric_task: String,
}

/// What an experiment reports once its workload runs.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Started {
    pub preset: PresetView,
    pub tasks: Vec<TaskInfo>,
    pub kernel: String,
    /// The class fair tasks run in ("EEVDF", "sched_ext: rusty"); empty in recordings
    /// made before it was recorded.
    #[serde(default)]
    pub scheduler: String,
    pub cpus: usize,
    pub warnings: Vec<String>,
}
