//! The structural checks a preset must pass after loading and after any overrides.

use std::collections::{BTreeMap, BTreeSet};

use super::setting::NiceLadder;
use super::{instance_name, names_or_none, valid_name, Headline, Preset, TaskGroup};
use crate::error::Invalid;
use crate::policy::Policy;
use crate::workload::kinds::{kind_name, WorkerKind};
use crate::workload::MAX_COUNT;

impl Preset {
    /// Structural checks that must hold after any set of overrides.
    pub fn validate(&self) -> Result<(), Invalid> {
        let mut seen = BTreeSet::new();
        for g in &self.groups {
            validate_group(g, &mut seen)?;
        }
        let total: usize = self.groups.iter().map(|g| g.count).sum();
        if total > MAX_COUNT {
            return Err(Invalid(format!(
                "{total} tasks in all: allowed at most {MAX_COUNT} in one experiment (the counts of every [[task]] added up)"
            )));
        }
        self.validate_metric()?;
        self.validate_connections()?;
        self.validate_cgroup_refs()
    }

    /// Deadline parameters only on deadline tasks, as a priority only on FIFO and RR
    /// ones: checked once every setting is in (a preset file, the command line's `--set`s,
    /// a lesson's step), since one setting at a time goes through runtime before policy.
    pub fn check_deadline_fields(&self) -> Result<(), Invalid> {
        for g in self.groups.iter().filter(|g| g.policy != Policy::Deadline) {
            let given = [
                ("runtime", g.dl_runtime_ns),
                ("deadline", g.dl_deadline_ns),
                ("period", g.dl_period_ns),
            ];
            if let Some((field, _)) = given.iter().find(|(_, v)| v.is_some()) {
                return Err(Invalid(format!(
                    "task \"{}\": {field} applies only to policy deadline; {} takes no runtime, deadline or period",
                    g.name, g.policy
                )));
            }
        }
        Ok(())
    }

    fn validate_metric(&self) -> Result<(), Invalid> {
        let names: Vec<&str> = self.groups.iter().map(|g| g.name.as_str()).collect();
        let Some(metric) = self.group(&self.metric_task) else {
            return Err(Invalid(format!(
                "[metric] task \"{}\" is not one of the tasks ({})",
                self.metric_task,
                names.join(", ")
            )));
        };
        if self.headline == Headline::Latency
            && !metric
                .program
                .kind()
                .is_some_and(WorkerKind::measures_latency)
        {
            return Err(Invalid(format!(
                "[metric] latency needs a task that measures latency (worker yield, lock-waiter or ticker), not \"{}\"",
                metric.name
            )));
        }
        Ok(())
    }

    fn validate_connections(&self) -> Result<(), Invalid> {
        let mut writers: BTreeMap<&str, &str> = BTreeMap::new();
        let mut readers: BTreeMap<&str, &str> = BTreeMap::new();
        for g in &self.groups {
            validate_wiring(g)?;
            // A group of none takes no part in a pipe.
            if g.count == 0 {
                continue;
            }
            for (pipe, map) in [(&g.stdin, &mut readers), (&g.stdout, &mut writers)] {
                if let Some(p) = pipe {
                    if let Some(other) = map.insert(p.as_str(), g.name.as_str()) {
                        return Err(Invalid(format!(
                            "pipe \"{p}\" has two ends of the same side (tasks \"{other}\" and \"{}\")",
                            g.name
                        )));
                    }
                }
            }
        }
        for (pipe, w) in &writers {
            if !readers.contains_key(pipe) {
                return Err(Invalid(format!(
                    "pipe \"{pipe}\" written by \"{w}\" has no reader (stdin = \"{pipe}\")"
                )));
            }
        }
        for (pipe, r) in &readers {
            if !writers.contains_key(pipe) {
                return Err(Invalid(format!(
                    "pipe \"{pipe}\" read by \"{r}\" has no writer (stdout = \"{pipe}\")"
                )));
            }
        }
        Ok(())
    }

    fn validate_cgroup_refs(&self) -> Result<(), Invalid> {
        for g in &self.groups {
            if let Some(c) = &g.cgroup {
                if !self.cgroups.contains_key(c) {
                    let names: Vec<&str> = self.cgroups.keys().map(String::as_str).collect();
                    return Err(Invalid(format!(
                        "task \"{}\": cgroup \"{c}\" is not defined; add a [cgroup.{c}] table (defined: {})",
                        g.name,
                        names_or_none(&names)
                    )));
                }
            }
        }
        Ok(())
    }
}

/// One group on its own: its name, its instance names (none used by an earlier group,
/// `seen`), its nice ladder against its count, and its scheduling settings.
fn validate_group(g: &TaskGroup, seen: &mut BTreeSet<String>) -> Result<(), Invalid> {
    if !valid_name(&g.name) {
        return Err(Invalid(format!(
            "task name \"{}\" is not allowed: use letters, digits, '-' and '_' (start with a letter)",
            g.name
        )));
    }
    for i in 0..g.count.max(1) {
        if !seen.insert(instance_name(&g.name, i, g.count)) {
            return Err(Invalid(format!("task name \"{}\" is used twice", g.name)));
        }
    }
    if let NiceLadder::Each(v) = &g.nice {
        if v.len() != g.count {
            return Err(Invalid(format!(
                "task \"{}\": count {} does not match its nice ladder of {} values (set nice to a single value, or count to {})",
                g.name,
                g.count,
                v.len(),
                v.len()
            )));
        }
    }
    g.settings(0)
        .validate()
        .map_err(|e| Invalid(format!("task \"{}\": {e}", g.name)))?;
    for n in g.nice.values() {
        if !(-20..=20).contains(&n) {
            return Err(Invalid(format!(
                "task \"{}\": nice {n} is out of range: allowed -20..19 (20 is clamped to 19)",
                g.name
            )));
        }
    }
    Ok(())
}

/// What a group's program allows of pipes and shared processes.
fn validate_wiring(g: &TaskGroup) -> Result<(), Invalid> {
    if let Some(kind) = g.program.kind() {
        let needs = |yes: bool| if yes { "needs" } else { "takes no" };
        if kind.reads_stdin() != g.stdin.is_some() {
            return Err(Invalid(format!(
                "task \"{}\": worker {} {} stdin = \"PIPE\"",
                g.name,
                kind_name(kind),
                needs(kind.reads_stdin())
            )));
        }
        if kind.writes_stdout() != g.stdout.is_some() {
            return Err(Invalid(format!(
                "task \"{}\": worker {} {} stdout = \"PIPE\"",
                g.name,
                kind_name(kind),
                needs(kind.writes_stdout())
            )));
        }
        if g.process.is_some() && kind.needs_own_process() {
            return Err(Invalid(format!(
                "task \"{}\": worker {} needs its own process and cannot share process \"{}\"",
                g.name,
                kind_name(kind),
                g.process.as_deref().unwrap_or_default()
            )));
        }
    } else if g.process.is_some() && !g.program.is_attached() {
        return Err(Invalid(format!(
            "task \"{}\": an external command runs as its own process; remove process = ...",
            g.name
        )));
    }
    if (g.stdin.is_some() || g.stdout.is_some()) && g.count > 1 {
        return Err(Invalid(format!(
            "task \"{}\": a task connected by a pipe must have count 1",
            g.name
        )));
    }
    Ok(())
}
