//! Lessons: a scripted walk through a live preset (captions, knob changes, what to look
//! at, a check that the effect happened here), shared by the workbench and `lesson
//! --headless`.

pub mod check;
#[cfg(test)]
mod effect_tests;
#[cfg(test)]
mod effects;
mod load;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod throttling_tests;

use std::time::Duration;

use crate::columns::Column;
use crate::preset::setting::Setting;
use crate::preset::Headline;

pub use load::{list, list_in, load, load_in, parse_on, parse_with, user_dir, BUILTIN, SKIPPED};

/// How long a key-paced step is held when nobody presses a key (`lesson --headless`).
pub const KEY_STEP_HOLD: Duration = Duration::from_secs(6);

/// A validated lesson.
#[derive(Clone, Debug, PartialEq)]
pub struct Lesson {
    pub name: String,
    pub title: String,
    pub preset: String,
    /// The preset's headline, which `metric = "headline"` checks read.
    pub headline: Headline,
    pub steps: Vec<Step>,
    /// Write a plot of the whole session at the end (headless: next to the lesson's
    /// name unless `--plot` names the file).
    pub plot: bool,
    /// "built-in" or the file it came from.
    pub source: String,
}

/// One step of a lesson.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub caption: String,
    /// Asked before the step changes anything ("what will the writer's switches do?"):
    /// the workbench shows it and makes the change when the teacher presses `right`.
    pub question: Option<String>,
    /// Knob changes made when the step starts (the `--set` syntax).
    pub set: Vec<Setting>,
    /// What puts back the values `set` replaced (from the preset and earlier steps;
    /// system knobs are filled in by the workbench from their current values).
    pub undo: Vec<Setting>,
    pub look: Look,
    pub pace: Pace,
    pub check: Option<Check>,
    /// Why this machine may not show the effect (from the lesson file).
    pub if_not: Vec<String>,
    /// Changes of `set` the kernel is expected to refuse (admission control): their
    /// refusal is the effect, not a reason the step could not show it.
    pub expect_refused: Vec<String>,
}

impl Step {
    /// Whether the kernel refusing `setting` (as `set` writes it) is what the step shows.
    pub fn expects_refusal(&self, setting: &str) -> bool {
        self.expect_refused.iter().any(|s| s == setting)
    }
}

/// How a step ends.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Pace {
    Timed(Duration),
    /// When the teacher presses `right` (headless: after [`KEY_STEP_HOLD`]).
    Key,
}

/// The part of the workbench a step points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    Graph(Graph),
    Column(Column),
}

/// The workbench's graphs, by the names lessons use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Graph {
    CpuShare,
    Switches,
    Headline,
    CpuBusy,
}

pub const GRAPHS: [(&str, Graph); 4] = [
    ("cpu-share", Graph::CpuShare),
    ("switches", Graph::Switches),
    ("headline", Graph::Headline),
    ("cpu-busy", Graph::CpuBusy),
];

/// The task table's columns a lesson may point at, by the names lessons use (the task's
/// name and ids are not worth pointing at).
pub const COLUMNS: [(&str, Column); 10] = [
    ("policy", Column::Policy),
    ("nice", Column::Nice),
    ("cpus", Column::Cpus),
    ("now", Column::Now),
    ("cpu", Column::Cpu),
    ("ideal", Column::Ideal),
    ("wait", Column::Wait),
    ("switches", Column::Switches),
    ("migrations", Column::Migrations),
    ("progress", Column::Progress),
];

impl Look {
    /// The name as a lesson file writes it (`graph:headline`, `column:cpu`).
    pub fn name(&self) -> String {
        match self {
            Look::Graph(g) => {
                let n = GRAPHS.iter().find(|(_, x)| x == g).map_or("", |(n, _)| n);
                format!("graph:{n}")
            }
            Look::Column(c) => {
                let n = COLUMNS.iter().find(|(_, x)| x == c).map_or("", |(n, _)| n);
                format!("column:{n}")
            }
        }
    }
}

/// What a step's check compares: a task's (or task group's) rate, or the headline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    Cpu,
    /// The task's CPU time as a fraction of all the experiment's tasks' CPU time: what
    /// other programs take does not move it.
    Portion,
    Wait,
    Switches,
    Voluntary,
    Involuntary,
    Migrations,
    Progress,
    Headline,
}

pub const METRICS: [(&str, Metric); 9] = [
    ("cpu", Metric::Cpu),
    ("portion", Metric::Portion),
    ("wait", Metric::Wait),
    ("switches", Metric::Switches),
    ("voluntary", Metric::Voluntary),
    ("involuntary", Metric::Involuntary),
    ("migrations", Metric::Migrations),
    ("progress", Metric::Progress),
    ("headline", Metric::Headline),
];

impl Metric {
    pub fn name(self) -> &'static str {
        METRICS
            .iter()
            .find(|(_, m)| *m == self)
            .map_or("", |(n, _)| n)
    }
}

/// What the value over this step's window is held to.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Bound {
    /// Between `min` and `max` (either may be open).
    Absolute { min: Option<f64>, max: Option<f64> },
    /// Its ratio to the same metric over an earlier step's window (`step`, 0-based).
    Ratio {
        step: usize,
        min: Option<f64>,
        max: Option<f64>,
    },
}

/// A step's check: "the writer's bytes/s at least doubled against step 1".
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub metric: Metric,
    /// A task group or instance; None: the preset's headline task group.
    pub task: Option<String>,
    pub bound: Bound,
    /// Left out at the start of each window (the change needs time to show).
    pub settle: Duration,
    /// In words, as the caption and the table show it.
    pub says: String,
}

impl Lesson {
    /// Each step's length when played without a teacher: timed steps as written, key
    /// steps held `key_hold`; both scaled by `pace`, or all `fixed` when given.
    pub fn step_times(
        &self,
        key_hold: Duration,
        pace: f64,
        fixed: Option<Duration>,
    ) -> Vec<Duration> {
        self.steps
            .iter()
            .map(|s| match (fixed, s.pace) {
                (Some(f), _) => f,
                (None, Pace::Timed(d)) => d.mul_f64(pace),
                (None, Pace::Key) => key_hold.mul_f64(pace),
            })
            .collect()
    }
}
