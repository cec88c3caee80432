//! Presets: TOML experiment descriptions -> raw serde structs -> a validated [`Preset`],
//! `--set` overrides, and expansion into the concrete tasks of a run.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::cpuset::CpuSet;
use crate::knob::cgroup;
use crate::knob::task::{Deadline, Policy, SchedSettings};

pub mod setting;
use crate::preset::setting::{parse_duration, NiceLadder, Setting};
use crate::workload::kinds::{check_param, kind_name, resolve_params, WorkerKind};
use crate::workload::spec::{Program, TaskSpec};

/// The preset `schedlab` and `schedlab run` use when none is named.
pub const DEFAULT_PRESET: &str = "pipe-wakeup";

/// The built-in presets, embedded in the binary.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "pipe-wakeup",
        include_str!("../../presets/pipe-wakeup.toml"),
    ),
    (
        "pipe-affinity",
        include_str!("../../presets/pipe-affinity.toml"),
    ),
    (
        "yield-latency",
        include_str!("../../presets/yield-latency.toml"),
    ),
    (
        "rt-throttle",
        include_str!("../../presets/rt-throttle.toml"),
    ),
    (
        "nice-ladder",
        include_str!("../../presets/nice-ladder.toml"),
    ),
    (
        "parallel-build",
        include_str!("../../presets/parallel-build.toml"),
    ),
    (
        "cgroup-fairness",
        include_str!("../../presets/cgroup-fairness.toml"),
    ),
];

/// The most instances one task group may have.
pub const MAX_COUNT: usize = 256;

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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPreset {
    name: String,
    summary: String,
    note: String,
    #[serde(default)]
    focus: Vec<String>,
    metric: RawMetric,
    #[serde(rename = "task")]
    tasks: Vec<RawTask>,
    #[serde(default, rename = "variant")]
    variants: Vec<RawVariant>,
    /// cgroups the preset creates: name -> cpu controller knob -> value.
    #[serde(default)]
    cgroup: BTreeMap<String, BTreeMap<String, toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetric {
    headline: Headline,
    task: String,
    /// Start-up time the summaries leave out, e.g. "1s".
    warmup: Option<String>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawNice {
    One(i32),
    List(Vec<i32>),
    Ladder(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    name: String,
    worker: Option<WorkerKind>,
    command: Option<Vec<String>>,
    #[serde(default)]
    params: BTreeMap<String, i64>,
    count: Option<usize>,
    policy: Option<Policy>,
    priority: Option<u32>,
    nice: Option<RawNice>,
    cpus: Option<String>,
    slice: Option<String>,
    runtime: Option<String>,
    deadline: Option<String>,
    period: Option<String>,
    stdin: Option<String>,
    stdout: Option<String>,
    process: Option<String>,
    cgroup: Option<String>,
    poll_stdin: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    name: String,
    summary: String,
    set: Vec<String>,
}

/// Where a task may run: every online CPU, or a fixed set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuChoice {
    All,
    Set(CpuSet),
}

impl CpuChoice {
    pub fn parse(s: &str) -> Result<CpuChoice, String> {
        if s.trim().eq_ignore_ascii_case("all") {
            return Ok(CpuChoice::All);
        }
        s.parse::<CpuSet>()
            .map(CpuChoice::Set)
            .map_err(|e| format!("{e} (or \"all\")"))
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
    /// cgroups the preset creates for its tasks: name -> knob -> value (validated).
    pub cgroups: BTreeMap<String, BTreeMap<String, String>>,
    /// "built-in" or the file it came from.
    pub source: String,
}

/// The knobs every task group has, besides its worker kind's parameters.
pub const TASK_KNOBS: &str =
    "policy, priority, nice, cpus, count, slice, runtime, deadline, period, process, poll_stdin";

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 32
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && name.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
}

fn duration_ns(field: &str, s: &str) -> Result<u64, String> {
    parse_duration(s)
        .map(|d| d.as_nanos().min(u64::MAX as u128) as u64)
        .map_err(|e| format!("{field}: {e}"))
}

/// Where a toml error is, as `line L, column C`.
fn locate(text: &str, err: &toml::de::Error) -> String {
    match err.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {col}: {}", err.message().trim())
        }
        None => err.message().trim().to_string(),
    }
}

impl Preset {
    /// Parse and validate preset TOML. Errors name the source, where, and what is allowed.
    pub fn parse(text: &str, source: &str) -> Result<Preset> {
        let raw: RawPreset =
            toml::from_str(text).map_err(|e| anyhow!("preset {source}: {}", locate(text, &e)))?;
        Self::from_raw(raw, source).map_err(|e| anyhow!("preset {source}: {e}"))
    }

    fn from_raw(raw: RawPreset, source: &str) -> Result<Preset, String> {
        if !valid_name(&raw.name) {
            return Err(format!(
                "name \"{}\" is not allowed: use letters, digits, '-' and '_' (start with a letter)",
                raw.name
            ));
        }
        if raw.tasks.is_empty() {
            return Err("has no [[task]]: a preset needs at least one task".into());
        }
        let mut groups = Vec::new();
        for t in raw.tasks {
            let name = t.name.clone();
            groups.push(group_from_raw(t).map_err(|e| format!("task \"{name}\": {e}"))?);
        }
        let mut variants = Vec::new();
        for v in raw.variants {
            let set: Result<Vec<Setting>, String> = v.set.iter().map(|s| s.parse()).collect();
            variants.push(Variant {
                set: set.map_err(|e| format!("variant \"{}\": {e}", v.name))?,
                name: v.name,
                summary: v.summary,
            });
        }
        let mut cgroups = BTreeMap::new();
        for (name, knobs) in raw.cgroup {
            if !valid_name(&name) {
                return Err(format!(
                    "cgroup name \"{name}\" is not allowed: use letters, digits, '-' and '_'"
                ));
            }
            let mut values = BTreeMap::new();
            for (knob, v) in knobs {
                let text = match v {
                    toml::Value::String(s) => s,
                    other => other.to_string(),
                };
                let normal =
                    cgroup::validate(&knob, &text).map_err(|e| format!("[cgroup.{name}]: {e}"))?;
                values.insert(knob, normal);
            }
            cgroups.insert(name, values);
        }
        let warmup = match &raw.metric.warmup {
            Some(w) => parse_duration(w).map_err(|e| format!("[metric] warmup: {e}"))?,
            None => std::time::Duration::ZERO,
        };
        if warmup > std::time::Duration::from_secs(60) {
            return Err("[metric] warmup: allowed 0s..60s".into());
        }
        let preset = Preset {
            name: raw.name,
            summary: raw.summary.trim().to_string(),
            note: raw.note.trim().to_string(),
            focus: raw.focus,
            headline: raw.metric.headline,
            metric_task: raw.metric.task,
            warmup,
            groups,
            variants,
            cgroups,
            source: source.to_string(),
        };
        preset.validate()?;
        // Every variant must apply cleanly, so a broken one fails at load, not in class.
        for v in &preset.variants {
            let mut copy = preset.clone();
            copy.apply_all(&v.set)
                .map_err(|e| format!("variant \"{}\": {e}", v.name))?;
        }
        Ok(preset)
    }

    /// Structural checks that must hold after any set of overrides.
    pub fn validate(&self) -> Result<(), String> {
        let mut seen = BTreeSet::new();
        for g in &self.groups {
            if !valid_name(&g.name) {
                return Err(format!(
                    "task name \"{}\" is not allowed: use letters, digits, '-' and '_' (start with a letter)",
                    g.name
                ));
            }
            for i in 0..g.count.max(1) {
                if !seen.insert(instance_name(&g.name, i, g.count)) {
                    return Err(format!("task name \"{}\" is used twice", g.name));
                }
            }
            if let NiceLadder::Each(v) = &g.nice {
                if v.len() != g.count {
                    return Err(format!(
                        "task \"{}\": count {} does not match its nice ladder of {} values (set nice to a single value, or count to {})",
                        g.name,
                        g.count,
                        v.len(),
                        v.len()
                    ));
                }
            }
            g.settings(0)
                .validate()
                .map_err(|e| format!("task \"{}\": {e}", g.name))?;
            for n in g.nice.values() {
                if !(-20..=20).contains(&n) {
                    return Err(format!(
                        "task \"{}\": nice {n} is out of range: allowed -20..19 (20 is clamped to 19)",
                        g.name
                    ));
                }
            }
        }
        let names: Vec<&str> = self.groups.iter().map(|g| g.name.as_str()).collect();
        let Some(metric) = self.group(&self.metric_task) else {
            return Err(format!(
                "[metric] task \"{}\" is not one of the tasks ({})",
                self.metric_task,
                names.join(", ")
            ));
        };
        if self.headline == Headline::Latency
            && !metric
                .program
                .kind()
                .is_some_and(WorkerKind::measures_latency)
        {
            return Err(format!(
                "[metric] latency needs a task that measures latency (worker yield), not \"{}\"",
                metric.name
            ));
        }
        self.validate_connections()?;
        for g in &self.groups {
            if let Some(c) = &g.cgroup {
                if !self.cgroups.contains_key(c) {
                    let names: Vec<&str> = self.cgroups.keys().map(String::as_str).collect();
                    return Err(format!(
                        "task \"{}\": cgroup \"{c}\" is not defined; add a [cgroup.{c}] table (defined: {})",
                        g.name,
                        if names.is_empty() { "none".to_string() } else { names.join(", ") }
                    ));
                }
            }
        }
        Ok(())
    }

    fn validate_connections(&self) -> Result<(), String> {
        let mut writers: BTreeMap<&str, &str> = BTreeMap::new();
        let mut readers: BTreeMap<&str, &str> = BTreeMap::new();
        for g in &self.groups {
            if let Some(kind) = g.program.kind() {
                if kind.reads_stdin() != g.stdin.is_some() {
                    return Err(format!(
                        "task \"{}\": worker {} {} stdin = \"PIPE\"",
                        g.name,
                        kind_name(kind),
                        if kind.reads_stdin() {
                            "needs"
                        } else {
                            "takes no"
                        }
                    ));
                }
                if kind.writes_stdout() != g.stdout.is_some() {
                    return Err(format!(
                        "task \"{}\": worker {} {} stdout = \"PIPE\"",
                        g.name,
                        kind_name(kind),
                        if kind.writes_stdout() {
                            "needs"
                        } else {
                            "takes no"
                        }
                    ));
                }
                if g.process.is_some() && kind.needs_own_process() {
                    return Err(format!(
                        "task \"{}\": worker {} needs its own process and cannot share process \"{}\"",
                        g.name,
                        kind_name(kind),
                        g.process.as_deref().unwrap_or_default()
                    ));
                }
            } else if g.process.is_some() {
                return Err(format!(
                    "task \"{}\": an external command runs as its own process; remove process = ...",
                    g.name
                ));
            }
            if (g.stdin.is_some() || g.stdout.is_some()) && g.count > 1 {
                return Err(format!(
                    "task \"{}\": a task connected by a pipe must have count 1",
                    g.name
                ));
            }
            if g.count == 0 {
                continue;
            }
            for (pipe, map) in [(&g.stdin, &mut readers), (&g.stdout, &mut writers)] {
                if let Some(p) = pipe {
                    if let Some(other) = map.insert(p.as_str(), g.name.as_str()) {
                        return Err(format!(
                            "pipe \"{p}\" has two ends of the same side (tasks \"{other}\" and \"{}\")",
                            g.name
                        ));
                    }
                }
            }
        }
        for (pipe, w) in &writers {
            if !readers.contains_key(pipe) {
                return Err(format!(
                    "pipe \"{pipe}\" written by \"{w}\" has no reader (stdin = \"{pipe}\")"
                ));
            }
        }
        for (pipe, r) in &readers {
            if !writers.contains_key(pipe) {
                return Err(format!(
                    "pipe \"{pipe}\" read by \"{r}\" has no writer (stdout = \"{pipe}\")"
                ));
            }
        }
        Ok(())
    }

    pub fn group(&self, name: &str) -> Option<&TaskGroup> {
        self.groups.iter().find(|g| g.name == name)
    }

    fn task_names(&self) -> String {
        let mut out = Vec::new();
        for g in &self.groups {
            if g.count > 1 {
                out.push(format!(
                    "{} ({}-0..{}-{})",
                    g.name,
                    g.name,
                    g.name,
                    g.count - 1
                ));
            } else {
                out.push(g.name.clone());
            }
        }
        out.join(", ")
    }

    /// Apply one `--set`. Errors name the unknown task or knob and what is allowed.
    pub fn apply(&mut self, s: &Setting) -> Result<(), String> {
        if s.target == "sys" {
            return Err(format!(
                "{s}: system knobs (sys.*) are not preset settings; they go through the knob layer"
            ));
        }
        if s.target == "cgroup" {
            return self.apply_cgroup(s);
        }
        if let Some(g) = self.groups.iter_mut().find(|g| g.name == s.target) {
            return g.apply(&s.knob, &s.value).map_err(|e| format!("{s}: {e}"));
        }
        // An instance name: GROUP-INDEX.
        let instance = s.target.rsplit_once('-').and_then(|(group, idx)| {
            let idx: usize = idx.parse().ok()?;
            let pos = self
                .groups
                .iter()
                .position(|g| g.name == group && idx < g.count && g.count > 1)?;
            Some((pos, idx))
        });
        let Some((pos, idx)) = instance else {
            return Err(format!(
                "unknown task \"{}\" in {s}: tasks are {}",
                s.target,
                self.task_names()
            ));
        };
        if s.knob == "count"
            || self.groups[pos]
                .program
                .kind()
                .and_then(|k| k.param(&s.knob))
                .is_some()
        {
            return Err(format!(
                "{s}: {} applies to the whole group; use {}.{}",
                s.knob, self.groups[pos].name, s.knob
            ));
        }
        // Check the value now, on a scratch copy, so a bad one fails here.
        let mut scratch = self.groups[pos].clone();
        scratch.nice = NiceLadder::One(scratch.nice.get(idx));
        scratch.count = 1;
        scratch
            .apply(&s.knob, &s.value)
            .map_err(|e| format!("{s}: {e}"))?;
        self.groups[pos]
            .instance_overrides
            .entry(idx)
            .or_default()
            .push(s.clone());
        Ok(())
    }

    /// `cgroup.NAME.KNOB=VALUE`: a value for one of the preset's cgroups.
    fn apply_cgroup(&mut self, s: &Setting) -> Result<(), String> {
        let names: Vec<String> = self.cgroups.keys().cloned().collect();
        let Some((group, knob)) = s.knob.split_once('.') else {
            return Err(format!(
                "{s}: expected cgroup.NAME.KNOB=VALUE (knobs: {})",
                cgroup::KNOBS
            ));
        };
        let Some(values) = self.cgroups.get_mut(group) else {
            return Err(format!(
                "{s}: unknown cgroup \"{group}\": this preset's cgroups are {}",
                if names.is_empty() {
                    "none".to_string()
                } else {
                    names.join(", ")
                }
            ));
        };
        let normal = cgroup::validate(knob, &s.value).map_err(|e| format!("{s}: {e}"))?;
        values.insert(knob.to_string(), normal);
        Ok(())
    }

    /// Apply settings in order, then re-validate the whole preset.
    pub fn apply_all(&mut self, settings: &[Setting]) -> Result<(), String> {
        for s in settings {
            self.apply(s)?;
        }
        self.validate()
    }

    pub fn variant(&self, name: &str) -> Result<&Variant, String> {
        self.variants
            .iter()
            .find(|v| v.name == name)
            .ok_or_else(|| {
                let names: Vec<&str> = self.variants.iter().map(|v| v.name.as_str()).collect();
                format!(
                    "preset {} has no variant \"{name}\": its variants are {}",
                    self.name,
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                )
            })
    }

    /// The concrete tasks of a run, with CPU choices resolved against the online CPUs.
    pub fn tasks(&self, online: &CpuSet) -> Result<Vec<TaskSpec>, String> {
        let mut out = Vec::new();
        for g in &self.groups {
            for i in 0..g.count {
                let mut single = g.clone();
                single.nice = NiceLadder::One(g.nice.get(i));
                single.count = 1;
                for s in g.instance_overrides.get(&i).into_iter().flatten() {
                    single
                        .apply(&s.knob, &s.value)
                        .map_err(|e| format!("{s}: {e}"))?;
                }
                let name = instance_name(&g.name, i, g.count);
                let mut sched = single.settings(0);
                let cpus = single.cpus.resolve(online);
                if !cpus.is_subset(online) {
                    return Err(format!(
                        "task \"{name}\": cpus={} names CPUs that are not online here (online: {online})",
                        cpus
                    ));
                }
                sched.cpus = Some(cpus);
                sched
                    .validate()
                    .map_err(|e| format!("task \"{name}\": {e}"))?;
                out.push(TaskSpec {
                    name,
                    group: g.name.clone(),
                    index: i,
                    program: single.program.clone(),
                    sched,
                    stdin: g.stdin.clone(),
                    stdout: g.stdout.clone(),
                    process: g.process.clone(),
                    cgroup: g.cgroup.clone(),
                    poll_stdin: g.poll_stdin,
                });
            }
        }
        if out.is_empty() {
            return Err(format!(
                "preset {} has no tasks to run (every count is 0)",
                self.name
            ));
        }
        Ok(out)
    }

    /// Every knob a user can `--set` on this preset, with its current value.
    pub fn knob_table(&self) -> Vec<(String, String)> {
        let mut rows = Vec::new();
        for g in &self.groups {
            let n = &g.name;
            rows.push((format!("{n}.count"), g.count.to_string()));
            rows.push((format!("{n}.policy"), g.policy.to_string()));
            if g.policy.is_realtime() {
                rows.push((format!("{n}.priority"), g.priority.to_string()));
            }
            let nice = match &g.nice {
                NiceLadder::One(v) => v.to_string(),
                NiceLadder::Each(v) => v.iter().map(i32::to_string).collect::<Vec<_>>().join("/"),
            };
            rows.push((format!("{n}.nice"), nice));
            rows.push((format!("{n}.cpus"), g.cpus.describe()));
            if let Some(s) = g.slice_ns {
                rows.push((format!("{n}.slice"), format!("{s}ns")));
            }
            if let Program::Worker { params, .. } = &g.program {
                for (k, v) in params {
                    rows.push((format!("{n}.{k}"), v.to_string()));
                }
            }
            if let Some(c) = &g.cgroup {
                rows.push((format!("{n}.cgroup"), c.clone()));
            }
            if let Some(p) = &g.process {
                rows.push((format!("{n}.process"), p.clone()));
            }
            if g.stdin.is_some() {
                let poll = if g.poll_stdin { "on" } else { "off" };
                rows.push((format!("{n}.poll_stdin"), poll.to_string()));
            }
        }
        for (name, values) in &self.cgroups {
            for (k, v) in values {
                rows.push((format!("cgroup.{name}.{k}"), v.clone()));
            }
        }
        rows
    }
}

/// `hog-0`, `hog-1`, ... for groups of more than one; the group name otherwise.
pub fn instance_name(group: &str, index: usize, count: usize) -> String {
    if count > 1 {
        format!("{group}-{index}")
    } else {
        group.to_string()
    }
}

fn group_from_raw(t: RawTask) -> Result<TaskGroup, String> {
    let program = match (t.worker, t.command) {
        (Some(kind), None) => Program::Worker {
            kind,
            params: resolve_params(kind, &t.params)?,
        },
        (None, Some(argv)) if !argv.is_empty() => {
            if !t.params.is_empty() {
                return Err("params apply to workers, not to a command".into());
            }
            Program::Command(argv)
        }
        (None, Some(_)) => return Err("command is empty".into()),
        _ => {
            return Err(format!(
                "needs exactly one of worker = \"KIND\" ({}) or command = [\"prog\", \"arg\"]",
                WorkerKind::ALLOWED
            ))
        }
    };
    let nice = match t.nice {
        None => NiceLadder::One(0),
        Some(RawNice::One(n)) => NiceLadder::One(n),
        Some(RawNice::List(v)) => NiceLadder::Each(v),
        Some(RawNice::Ladder(s)) => NiceLadder::parse(&s)?,
    };
    let count = match (&nice, t.count) {
        (NiceLadder::Each(v), None) => v.len(),
        (_, Some(c)) => c,
        (NiceLadder::One(_), None) => 1,
    };
    if count > MAX_COUNT {
        return Err(format!(
            "count {count} is out of range: allowed 0..{MAX_COUNT}"
        ));
    }
    let policy = t.policy.unwrap_or(Policy::Other);
    let opt_ns =
        |field: &str, v: &Option<String>| v.as_deref().map(|s| duration_ns(field, s)).transpose();
    Ok(TaskGroup {
        name: t.name,
        program,
        count,
        priority: t
            .priority
            .unwrap_or(if policy.is_realtime() { 1 } else { 0 }),
        policy,
        nice,
        cpus: t
            .cpus
            .as_deref()
            .map(CpuChoice::parse)
            .transpose()?
            .unwrap_or(CpuChoice::All),
        slice_ns: opt_ns("slice", &t.slice)?,
        dl_runtime_ns: opt_ns("runtime", &t.runtime)?,
        dl_deadline_ns: opt_ns("deadline", &t.deadline)?,
        dl_period_ns: opt_ns("period", &t.period)?,
        uclamp_min: None,
        uclamp_max: None,
        stdin: t.stdin,
        stdout: t.stdout,
        process: t.process,
        cgroup: t.cgroup,
        poll_stdin: t.poll_stdin.unwrap_or(false),
        instance_overrides: BTreeMap::new(),
    })
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

    /// Apply one knob to the group.
    pub fn apply(&mut self, knob: &str, value: &str) -> Result<(), String> {
        match knob {
            "policy" => {
                let p: Policy = value.parse()?;
                if p.is_realtime() && self.priority == 0 {
                    self.priority = 1;
                } else if !p.is_realtime() {
                    self.priority = 0;
                }
                self.policy = p;
            }
            "priority" | "prio" => {
                let v: u32 = value.parse().map_err(|_| {
                    format!("bad priority \"{value}\": allowed 1..99 for fifo and rr")
                })?;
                if !self.policy.is_realtime() {
                    return Err(format!(
                        "priority applies to fifo and rr, and this task is {} (set policy=fifo first)",
                        self.policy
                    ));
                }
                if !(1..=99).contains(&v) {
                    return Err(format!("priority {v} is out of range: allowed 1..99"));
                }
                self.priority = v;
            }
            "nice" => {
                let ladder = NiceLadder::parse(value)?;
                for n in ladder.values() {
                    if !(-20..=20).contains(&n) {
                        return Err(format!(
                            "nice {n} is out of range: allowed -20..19 (20 is clamped to 19)"
                        ));
                    }
                }
                if let NiceLadder::Each(v) = &ladder {
                    self.count = v.len();
                }
                self.nice = ladder;
            }
            "cpus" | "affinity" => self.cpus = CpuChoice::parse(value)?,
            "count" => {
                let c: usize = value
                    .parse()
                    .ok()
                    .filter(|c| *c <= MAX_COUNT)
                    .ok_or_else(|| format!("bad count \"{value}\": allowed 0..{MAX_COUNT}"))?;
                self.count = c;
            }
            "slice" => {
                let ns = if value == "default" {
                    0
                } else {
                    duration_ns("slice", value)?
                };
                if ns != 0 && !(100_000..=100_000_000).contains(&ns) {
                    return Err(format!(
                        "slice {value} is out of range: allowed 0.1ms..100ms, or default"
                    ));
                }
                self.slice_ns = (ns != 0).then_some(ns);
            }
            "uclamp_min" | "uclamp_max" => {
                let v: u32 = value
                    .parse()
                    .ok()
                    .filter(|v| *v <= 1024)
                    .ok_or_else(|| format!("bad {knob} \"{value}\": allowed 0..1024"))?;
                if knob == "uclamp_min" {
                    self.uclamp_min = Some(v);
                } else {
                    self.uclamp_max = Some(v);
                }
            }
            "process" => {
                self.process = match value {
                    "own" | "none" => None,
                    name if valid_name(name) => Some(name.to_string()),
                    _ => {
                        return Err(format!(
                            "bad process \"{value}\": a name (tasks naming the same process run as its threads) or own"
                        ))
                    }
                };
            }
            "poll_stdin" => {
                if self.stdin.is_none() {
                    return Err(
                        "poll_stdin applies to a task that reads a pipe (stdin = \"PIPE\")".into(),
                    );
                }
                self.poll_stdin = match value {
                    "on" | "1" | "true" => true,
                    "off" | "0" | "false" => false,
                    _ => return Err(format!("bad poll_stdin \"{value}\": allowed on or off")),
                };
            }
            "runtime" => self.dl_runtime_ns = Some(duration_ns("runtime", value)?),
            "deadline" => self.dl_deadline_ns = Some(duration_ns("deadline", value)?),
            "period" => self.dl_period_ns = Some(duration_ns("period", value)?),
            other => {
                let Program::Worker { kind, params } = &mut self.program else {
                    return Err(format!(
                        "unknown knob \"{other}\": allowed are {TASK_KNOBS}"
                    ));
                };
                if kind.param(other).is_none() {
                    let names: Vec<&str> = kind.params().iter().map(|s| s.name).collect();
                    let extra = if names.is_empty() {
                        String::new()
                    } else {
                        format!(", {}", names.join(", "))
                    };
                    return Err(format!(
                        "unknown knob \"{other}\": allowed are {TASK_KNOBS}{extra}"
                    ));
                }
                let v: i64 = value.parse().map_err(|_| {
                    format!("bad value \"{value}\" for {other}: expected a whole number")
                })?;
                check_param(*kind, other, v)?;
                params.insert(other.to_string(), v);
            }
        }
        Ok(())
    }
}

/// `$XDG_CONFIG_HOME/schedlab/presets`, or `~/.config/schedlab/presets`.
pub fn user_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("schedlab").join("presets"))
}

fn load_file(path: &Path) -> Result<Preset> {
    let text = crate::input::read_bounded(path, crate::input::MAX_CONFIG_BYTES, "the preset file")
        .with_context(|| format!("cannot read preset file {}", path.display()))?;
    Preset::parse(&text, &path.display().to_string())
}

/// A preset by name (user dir first, then built-in) or by path to a TOML file.
pub fn load(name_or_path: &str) -> Result<Preset> {
    load_in(name_or_path, user_dir().as_deref())
}

/// [`load`] with an explicit user preset directory.
pub fn load_in(name_or_path: &str, user_dir: Option<&Path>) -> Result<Preset> {
    let as_path = Path::new(name_or_path);
    if name_or_path.contains('/') || name_or_path.ends_with(".toml") {
        return load_file(as_path);
    }
    if let Some(dir) = user_dir {
        let p = dir.join(format!("{name_or_path}.toml"));
        if p.is_file() {
            return load_file(&p);
        }
    }
    if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
        return Preset::parse(text, "built-in");
    }
    let names: Vec<String> = list_in(user_dir)
        .into_iter()
        .filter_map(|r| r.ok())
        .map(|p| p.name)
        .collect();
    bail!(
        "unknown preset \"{name_or_path}\": available are {} (or give a path to a .toml file)",
        names.join(", ")
    )
}

/// Every preset: built-ins, replaced or joined by the user's own. A broken user file
/// shows up as an error entry instead of hiding the rest.
pub fn list() -> Vec<Result<Preset>> {
    list_in(user_dir().as_deref())
}

/// [`list`] with an explicit user preset directory.
pub fn list_in(user_dir: Option<&Path>) -> Vec<Result<Preset>> {
    let mut out: Vec<Result<Preset>> = BUILTIN
        .iter()
        .map(|(_, text)| Preset::parse(text, "built-in"))
        .collect();
    let Some(dir) = user_dir else { return out };
    let Ok(entries) = std::fs::read_dir(dir) else {
        return out;
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for f in files {
        let loaded = load_file(&f);
        if let Ok(p) = &loaded {
            out.retain(|o| o.as_ref().map_or(true, |b| b.name != p.name));
        }
        out.push(loaded);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn builtin(name: &str) -> Preset {
        let text = BUILTIN
            .iter()
            .find(|(n, _)| *n == name)
            .expect("built-in")
            .1;
        Preset::parse(text, "built-in").expect("built-in presets parse")
    }

    fn set(p: &mut Preset, s: &str) -> Result<(), String> {
        p.apply_all(&[s.parse()?])
    }

    fn two_cpus() -> CpuSet {
        CpuSet::first_n(2)
    }

    #[test]
    fn every_builtin_parses_and_expands() {
        for (name, text) in BUILTIN {
            let p = Preset::parse(text, "built-in").expect(name);
            assert_eq!(p.name, *name);
            assert!(!p.note.is_empty() && !p.summary.is_empty());
            let tasks = p.tasks(&two_cpus()).expect(name);
            assert!(!tasks.is_empty());
            for v in &p.variants {
                let mut copy = p.clone();
                copy.apply_all(&v.set).expect("variant applies");
            }
        }
    }

    #[test]
    fn nice_ladder_has_21_instances_and_the_wide_one_11() {
        let mut p = builtin("nice-ladder");
        let tasks = p.tasks(&two_cpus()).expect("expands");
        assert_eq!(tasks.len(), 21);
        assert_eq!(tasks[0].name, "busy-0");
        assert_eq!(tasks[20].sched.nice, 20);
        set(&mut p, "busy.nice=-20..20:4").expect("wide ladder");
        let tasks = p.tasks(&two_cpus()).expect("expands");
        let nices: Vec<i32> = tasks.iter().map(|t| t.sched.nice).collect();
        assert_eq!(nices, [-20, -16, -12, -8, -4, 0, 4, 8, 12, 16, 20]);
        let err = set(&mut p, "busy.count=3").unwrap_err();
        assert!(err.contains("nice ladder of 11 values"), "{err}");
    }

    #[test]
    fn sets_reach_groups_and_instances() {
        let mut p = builtin("pipe-wakeup");
        set(&mut p, "writer.policy=batch").expect("policy");
        set(&mut p, "reader.cpus=0-1").expect("cpus");
        set(&mut p, "writer.bytes=64").expect("param");
        let tasks = p.tasks(&two_cpus()).expect("expands");
        let writer = tasks.iter().find(|t| t.name == "writer").expect("writer");
        assert_eq!(writer.sched.policy, Policy::Batch);
        assert_eq!(
            writer.program,
            Program::Worker {
                kind: WorkerKind::PipeWriter,
                params: BTreeMap::from([("bytes".into(), 64), ("writes".into(), 0)]),
            }
        );
        assert_eq!(tasks[1].sched.cpus, Some(two_cpus()));

        let mut y = builtin("yield-latency");
        set(&mut y, "hog.count=3").expect("count");
        set(&mut y, "hog-1.nice=5").expect("instance");
        set(&mut y, "yield.priority=50").expect("priority");
        let tasks = y.tasks(&two_cpus()).expect("expands");
        let names: Vec<&str> = tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["yield-0", "yield-1", "hog-0", "hog-1", "hog-2"]);
        assert_eq!(tasks[3].sched.nice, 5);
        assert_eq!(tasks[2].sched.nice, 10);
        assert_eq!(tasks[0].sched.priority, 50);
    }

    #[test]
    fn bad_sets_name_what_is_allowed() {
        let mut p = builtin("pipe-wakeup");
        let cases = [
            ("nobody.nice=1", "unknown task \"nobody\""),
            ("nobody.nice=1", "tasks are writer, reader"),
            ("writer.speed=1", "allowed are policy, priority, nice"),
            ("writer.speed=1", "bytes, writes"),
            (
                "writer.policy=fast",
                "other, batch, idle, fifo, rr, deadline",
            ),
            ("writer.nice=30", "allowed -20..19"),
            ("writer.priority=5", "set policy=fifo first"),
            ("writer.cpus=x", "CPU"),
            ("writer.bytes=0", "allowed 1..1048576"),
            ("reader.bytes=5", "allowed are policy"),
            ("writer.slice=1s", "0.1ms..100ms"),
            ("sys.rt_runtime_us=5", "system knobs"),
        ];
        for (s, want) in cases {
            let err = set(&mut p, s).unwrap_err();
            assert!(err.contains(want), "{s}: {err}");
            assert!(!err.contains('\n'), "{s}: one line: {err}");
        }
        let mut rt = builtin("rt-throttle");
        let err = set(&mut rt, "fifo.priority=100").unwrap_err();
        assert!(err.contains("allowed 1..99"), "{err}");
        let err = rt.tasks(&CpuSet::single(0)).map(drop);
        assert!(err.is_ok(), "CPU 0 exists everywhere");
        let mut pw = builtin("pipe-wakeup");
        set(&mut pw, "writer.cpus=5").expect("syntactically fine");
        let err = pw.tasks(&two_cpus()).unwrap_err();
        assert!(err.contains("not online here (online: 0-1)"), "{err}");
    }

    #[test]
    fn policy_switches_fix_up_priority() {
        let mut p = builtin("rt-throttle");
        set(&mut p, "fifo.policy=other").expect("to other");
        assert_eq!(p.group("fifo").expect("group").priority, 0);
        set(&mut p, "fair.policy=rr").expect("to rr");
        assert_eq!(p.group("fair").expect("group").priority, 1);
    }

    #[test]
    fn malformed_presets_fail_with_location_and_allowed_values() {
        let cases = [
            ("name = ", "line 1"),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\nworker='warp'\n",
                "line 9",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\nworker='spin'\npolicy='fast'\n",
                "line 10",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='b'\n[[task]]\nname='a'\nworker='spin'\n",
                "is not one of the tasks (a)",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\nworker='pipe-writer'\n",
                "needs stdout",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\nworker='pipe-writer'\nstdout='p'\n",
                "has no reader",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='latency'\ntask='a'\n[[task]]\nname='a'\nworker='spin'\n",
                "measures latency",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\nworker='spin'\ncolour='red'\n",
                "unknown field",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\nworker='spin'\n[[variant]]\nname='v'\nsummary='s'\nset=['a.nice=99']\n",
                "variant \"v\"",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\n",
                "exactly one of worker",
            ),
        ];
        for (text, want) in cases {
            let err = Preset::parse(text, "test.toml").unwrap_err().to_string();
            assert!(err.contains(want), "want {want:?} in: {err}");
            assert!(err.starts_with("preset test.toml"), "{err}");
        }
    }

    #[test]
    fn user_presets_load_by_path_and_from_the_config_dir() {
        let dir = tempfile::tempdir().expect("tempdir");
        let presets = dir.path().join("schedlab").join("presets");
        std::fs::create_dir_all(&presets).expect("mkdir");
        let text = "name='mine'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\nworker='spin'\n";
        let file = presets.join("mine.toml");
        std::fs::write(&file, text).expect("write");
        let by_path = load(file.to_str().expect("utf8")).expect("by path");
        assert_eq!(by_path.name, "mine");
        let by_name = load_in("mine", Some(&presets)).expect("from the config dir");
        assert_eq!(by_name.source, file.display().to_string());
        // A user file named like a built-in replaces it.
        let own = text.replace("'mine'", "'pipe-wakeup'");
        std::fs::write(presets.join("pipe-wakeup.toml"), own).expect("write");
        let listed = list_in(Some(&presets));
        let pw: Vec<_> = listed
            .iter()
            .flatten()
            .filter(|p| p.name == "pipe-wakeup")
            .collect();
        assert_eq!(pw.len(), 1);
        assert_ne!(pw[0].source, "built-in");
        std::fs::write(presets.join("broken.toml"), "name=").expect("write");
        assert!(list_in(Some(&presets)).iter().any(|r| r.is_err()));
        assert!(load("/nonexistent/x.toml")
            .unwrap_err()
            .to_string()
            .contains("cannot read preset file"));
        let err = load("no-such-preset").unwrap_err().to_string();
        assert!(
            err.contains("pipe-wakeup") && err.contains("nice-ladder"),
            "{err}"
        );
    }
}
