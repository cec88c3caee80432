//! `--set` overrides: one `TASK.KNOB=VALUE` applied to a group, an instance or a
//! preset cgroup, each value checked as it is applied.

use super::setting::{duration_ns, NiceLadder, Setting, MAX_COUNT};
use super::{names_or_none, valid_name, CpuChoice, Preset, TaskGroup, TASK_KNOBS};
use crate::error::Invalid;
use crate::knob::cgroup::{self, CgroupValue};
use crate::policy::Policy;
use crate::workload::kinds::check_param;
use crate::workload::spec::Program;

impl Preset {
    /// Apply one `--set`. Errors name the unknown task or knob and what is allowed.
    pub fn apply(&mut self, s: &Setting) -> Result<(), Invalid> {
        if s.target == "sys" {
            return Err(Invalid(format!(
                "{s}: system knobs (sys.*) are not preset settings; they go through the knob layer"
            )));
        }
        if s.target == "cgroup" {
            return self.apply_cgroup(s);
        }
        if let Some(g) = self.groups.iter_mut().find(|g| g.name == s.target) {
            return g
                .apply(&s.knob, &s.value)
                .map_err(|e| Invalid(format!("{s}: {e}")));
        }
        self.apply_instance(s)
    }

    /// Apply settings in order, then re-validate the whole preset.
    pub fn apply_all(&mut self, settings: &[Setting]) -> Result<(), Invalid> {
        for s in settings {
            self.apply(s)?;
        }
        self.validate()
    }

    /// `GROUP-INDEX.KNOB=VALUE`: kept on the group and applied when the instance is
    /// expanded, since the group's other instances keep the group's value.
    fn apply_instance(&mut self, s: &Setting) -> Result<(), Invalid> {
        let Some((pos, idx)) = self.find_instance(&s.target) else {
            return Err(Invalid(format!(
                "unknown task \"{}\" in {s}: tasks are {}",
                s.target,
                self.task_names()
            )));
        };
        let group = &self.groups[pos];
        if s.knob == "count"
            || group
                .program
                .kind()
                .and_then(|k| k.param(&s.knob))
                .is_some()
        {
            return Err(Invalid(format!(
                "{s}: {} applies to the whole group; use {}.{}",
                s.knob, group.name, s.knob
            )));
        }
        // Check the value now, on a scratch copy, so a bad one fails here.
        let mut scratch = group.clone();
        scratch.nice = NiceLadder::One(scratch.nice.get(idx));
        scratch.count = 1;
        scratch
            .apply(&s.knob, &s.value)
            .map_err(|e| Invalid(format!("{s}: {e}")))?;
        self.groups[pos]
            .instance_overrides
            .entry(idx)
            .or_default()
            .push(s.clone());
        Ok(())
    }

    /// An instance name `GROUP-INDEX` -> (the group's position, the index).
    fn find_instance(&self, target: &str) -> Option<(usize, usize)> {
        let (group, idx) = target.rsplit_once('-')?;
        let idx: usize = idx.parse().ok()?;
        let pos = self
            .groups
            .iter()
            .position(|g| g.name == group && idx < g.count && g.count > 1)?;
        Some((pos, idx))
    }

    /// `cgroup.NAME.KNOB=VALUE`: a value for one of the preset's cgroups, parsed here.
    fn apply_cgroup(&mut self, s: &Setting) -> Result<(), Invalid> {
        let Some((group, knob)) = s.knob.split_once('.') else {
            return Err(Invalid(format!(
                "{s}: expected cgroup.NAME.KNOB=VALUE (knobs: {})",
                cgroup::KNOBS
            )));
        };
        let value = CgroupValue::parse(knob, &s.value).map_err(|e| Invalid(format!("{s}: {e}")))?;
        self.set_cgroup(group, value)
            .map_err(|e| Invalid(format!("{s}: {e}")))
    }

    /// Keep a value the kernel took (or will take at start) for one of the cgroups.
    pub fn set_cgroup(&mut self, group: &str, value: CgroupValue) -> Result<(), Invalid> {
        let names: Vec<String> = self.cgroups.keys().cloned().collect();
        let Some(values) = self.cgroups.get_mut(group) else {
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            return Err(Invalid(format!(
                "unknown cgroup \"{group}\": this preset's cgroups are {}",
                names_or_none(&names)
            )));
        };
        values.insert(value.knob().to_string(), value);
        Ok(())
    }

    /// The task and instance names a setting may target, for error messages.
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

    /// Every knob a user can `--set` on this preset, with its current value.
    pub fn knob_table(&self) -> Vec<(String, String)> {
        let mut rows = Vec::new();
        for g in &self.groups {
            g.knob_rows(&mut rows);
        }
        for (name, values) in &self.cgroups {
            for (k, v) in values {
                rows.push((format!("cgroup.{name}.{k}"), v.to_string()));
            }
        }
        rows
    }
}

impl TaskGroup {
    /// Apply one knob to the group.
    pub fn apply(&mut self, knob: &str, value: &str) -> Result<(), Invalid> {
        match knob {
            "policy" => self.set_policy(value)?,
            "priority" | "prio" => self.set_priority(value)?,
            "nice" => self.set_nice(value)?,
            "cpus" | "affinity" => self.cpus = CpuChoice::parse(value)?,
            "count" => self.set_count(value)?,
            "slice" => self.set_slice(value)?,
            "uclamp_min" | "uclamp_max" => self.set_uclamp(knob, value)?,
            "process" => self.set_process(value)?,
            "poll_stdin" => self.set_poll_stdin(value)?,
            "runtime" => self.dl_runtime_ns = Some(duration_ns("runtime", value)?),
            "deadline" => self.dl_deadline_ns = Some(duration_ns("deadline", value)?),
            "period" => self.dl_period_ns = Some(duration_ns("period", value)?),
            other => self.set_param(other, value)?,
        }
        Ok(())
    }

    /// A policy switch keeps the priority valid for the new policy, and leaves deadline
    /// parameters only to the deadline policy.
    fn set_policy(&mut self, value: &str) -> Result<(), Invalid> {
        let p: Policy = value.parse()?;
        if p.is_realtime() && self.priority == 0 {
            self.priority = 1;
        } else if !p.is_realtime() {
            self.priority = 0;
        }
        if p != Policy::Deadline {
            (self.dl_runtime_ns, self.dl_deadline_ns, self.dl_period_ns) = (None, None, None);
        }
        self.policy = p;
        Ok(())
    }

    fn set_priority(&mut self, value: &str) -> Result<(), Invalid> {
        let v: u32 = value.parse().map_err(|_| {
            Invalid(format!(
                "bad priority \"{value}\": allowed 1..99 for fifo and rr"
            ))
        })?;
        if !self.policy.is_realtime() {
            return Err(Invalid(format!(
                "priority applies to fifo and rr, and this task is {} (set policy=fifo first)",
                self.policy
            )));
        }
        if !(1..=99).contains(&v) {
            return Err(Invalid(format!(
                "priority {v} is out of range: allowed 1..99"
            )));
        }
        self.priority = v;
        Ok(())
    }

    /// A ladder sets the count too: one instance per rung.
    fn set_nice(&mut self, value: &str) -> Result<(), Invalid> {
        let ladder = NiceLadder::parse(value)?;
        for n in ladder.values() {
            if !(-20..=20).contains(&n) {
                return Err(Invalid(format!(
                    "nice {n} is out of range: allowed -20..19 (20 is clamped to 19)"
                )));
            }
        }
        if let NiceLadder::Each(v) = &ladder {
            self.count = v.len();
        }
        self.nice = ladder;
        Ok(())
    }

    fn set_count(&mut self, value: &str) -> Result<(), Invalid> {
        let c: usize = value
            .parse()
            .ok()
            .filter(|c| *c <= MAX_COUNT)
            .ok_or_else(|| Invalid(format!("bad count \"{value}\": allowed 0..{MAX_COUNT}")))?;
        self.count = c;
        Ok(())
    }

    fn set_slice(&mut self, value: &str) -> Result<(), Invalid> {
        let ns = if value == "default" {
            0
        } else {
            duration_ns("slice", value)?
        };
        if ns != 0 && !(100_000..=100_000_000).contains(&ns) {
            return Err(Invalid(format!(
                "slice {value} is out of range: allowed 0.1ms..100ms, or default"
            )));
        }
        self.slice_ns = (ns != 0).then_some(ns);
        Ok(())
    }

    fn set_uclamp(&mut self, knob: &str, value: &str) -> Result<(), Invalid> {
        let v: u32 = value
            .parse()
            .ok()
            .filter(|v| *v <= 1024)
            .ok_or_else(|| Invalid(format!("bad {knob} \"{value}\": allowed 0..1024")))?;
        if knob == "uclamp_min" {
            self.uclamp_min = Some(v);
        } else {
            self.uclamp_max = Some(v);
        }
        Ok(())
    }

    fn set_process(&mut self, value: &str) -> Result<(), Invalid> {
        self.process = match value {
            "own" | "none" => None,
            name if valid_name(name) => Some(name.to_string()),
            _ => {
                return Err(Invalid(format!(
                    "bad process \"{value}\": a name (tasks naming the same process run as its threads) or own"
                )))
            }
        };
        Ok(())
    }

    fn set_poll_stdin(&mut self, value: &str) -> Result<(), Invalid> {
        if self.stdin.is_none() {
            return Err(Invalid::new(
                "poll_stdin applies to a task that reads a pipe (stdin = \"PIPE\")",
            ));
        }
        self.poll_stdin = match value {
            "on" | "1" | "true" => true,
            "off" | "0" | "false" => false,
            _ => {
                return Err(Invalid(format!(
                    "bad poll_stdin \"{value}\": allowed on or off"
                )))
            }
        };
        Ok(())
    }

    /// A knob that is none of [`TASK_KNOBS`]: a parameter of the group's worker kind.
    fn set_param(&mut self, name: &str, value: &str) -> Result<(), Invalid> {
        let Program::Worker { kind, params } = &mut self.program else {
            return Err(Invalid(format!(
                "unknown knob \"{name}\": allowed are {TASK_KNOBS}"
            )));
        };
        if kind.param(name).is_none() {
            let names: Vec<&str> = kind.params().iter().map(|s| s.name).collect();
            let extra = if names.is_empty() {
                String::new()
            } else {
                format!(", {}", names.join(", "))
            };
            return Err(Invalid(format!(
                "unknown knob \"{name}\": allowed are {TASK_KNOBS}{extra}"
            )));
        }
        let v: i64 = value.parse().map_err(|_| {
            Invalid(format!(
                "bad value \"{value}\" for {name}: expected a whole number"
            ))
        })?;
        check_param(*kind, name, v)?;
        params.insert(name.to_string(), v);
        Ok(())
    }

    /// This group's rows of [`Preset::knob_table`]; knobs that do not apply (a
    /// priority for a fair task, poll_stdin without a pipe) are left out.
    fn knob_rows(&self, rows: &mut Vec<(String, String)>) {
        let n = &self.name;
        rows.push((format!("{n}.count"), self.count.to_string()));
        rows.push((format!("{n}.policy"), self.policy.to_string()));
        if self.policy.is_realtime() {
            rows.push((format!("{n}.priority"), self.priority.to_string()));
        }
        let nice = match &self.nice {
            NiceLadder::One(v) => v.to_string(),
            NiceLadder::Each(v) => v.iter().map(i32::to_string).collect::<Vec<_>>().join("/"),
        };
        rows.push((format!("{n}.nice"), nice));
        rows.push((format!("{n}.cpus"), self.cpus.describe()));
        if let Some(s) = self.slice_ns {
            rows.push((format!("{n}.slice"), format!("{s}ns")));
        }
        for (knob, ns) in [
            ("runtime", self.dl_runtime_ns),
            ("deadline", self.dl_deadline_ns),
            ("period", self.dl_period_ns),
        ] {
            if let Some(ns) = ns {
                rows.push((format!("{n}.{knob}"), format!("{ns}ns")));
            }
        }
        if let Program::Worker { params, .. } = &self.program {
            for (k, v) in params {
                rows.push((format!("{n}.{k}"), v.to_string()));
            }
        }
        if let Some(c) = &self.cgroup {
            rows.push((format!("{n}.cgroup"), c.clone()));
        }
        if let Some(p) = &self.process {
            rows.push((format!("{n}.process"), p.clone()));
        }
        if self.stdin.is_some() {
            let poll = if self.poll_stdin { "on" } else { "off" };
            rows.push((format!("{n}.poll_stdin"), poll.to_string()));
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::fixtures::{builtin, set, two_cpus};
    use crate::cpuset::CpuSet;
    use crate::policy::Policy;
    use crate::workload::kinds::WorkerKind;
    use crate::workload::spec::Program;

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
    fn deadline_parameters_are_in_the_knob_table() {
        let mut p = builtin("pipe-wakeup");
        for s in [
            "writer.runtime=500us",
            "writer.deadline=5ms",
            "writer.period=20ms",
            "writer.policy=deadline",
        ] {
            set(&mut p, s).expect(s);
        }
        let table: BTreeMap<String, String> = p.knob_table().into_iter().collect();
        assert_eq!(table["writer.runtime"], "500000ns");
        assert_eq!(table["writer.deadline"], "5000000ns");
        assert_eq!(table["writer.period"], "20000000ns");
        assert!(!table.contains_key("reader.runtime"));
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
            let err = set(&mut p, s).unwrap_err().0;
            assert!(err.contains(want), "{s}: {err}");
            assert!(!err.contains('\n'), "{s}: one line: {err}");
        }
        let mut rt = builtin("rt-throttle");
        let err = set(&mut rt, "fifo.priority=100").unwrap_err().0;
        assert!(err.contains("allowed 1..99"), "{err}");
        let err = rt.tasks(&CpuSet::single(0)).map(drop);
        assert!(err.is_ok(), "CPU 0 exists everywhere");
        let mut pw = builtin("pipe-wakeup");
        set(&mut pw, "writer.cpus=5").expect("syntactically fine");
        let err = pw.tasks(&two_cpus()).unwrap_err().0;
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
}
