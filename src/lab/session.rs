//! A running preset: its workload and settings, and the one place where knobs change
//! while it runs (task knobs on live tasks, system knobs through the journal).

use std::path::Path;

use anyhow::{anyhow, Result};

use crate::cpuset::CpuSet;
use crate::error::{Invalid, KnobError};
use crate::knob::cgroup::{self, CgroupValue, Cgroups};
use crate::knob::sys::{SysKnob, SysSetting, SystemKnobs};
use crate::knob::task::{apply, SchedSettings};
use crate::lab::describe::{PresetView, Started, TaskInfo};
use crate::preset::setting::Setting;
use crate::preset::{adhoc, Preset};

/// What a task knob change answers when no task's settings differ after it: the tasks
/// had the value already (a lesson's step does not judge its check then).
pub const NO_CHANGE: &str = "no change";
use crate::workload::attach::ForeignTask;
use crate::workload::kinds::WorkerKind;
use crate::workload::spec::{Program, TaskSpec};
use crate::workload::MAX_COUNT;
use crate::workload::{RunningTask, Workload};

/// Where a setting goes.
#[derive(Clone, Debug, PartialEq)]
pub enum Route {
    /// A task group or instance of the preset.
    Task,
    /// A system-wide knob.
    Sys(SysKnob),
    /// A cpu controller value of one of the preset's cgroups.
    Cgroup { group: String, knob: String },
}

/// Where a setting goes, a system or cgroup value in its typed form.
#[derive(Clone, Debug, PartialEq)]
pub enum Routed {
    Task,
    Sys(SysSetting),
    Cgroup { group: String, value: CgroupValue },
}

/// Route a setting and check its form, before anything starts: a system value is parsed
/// into its typed form here, once.
pub fn route_typed(s: &Setting) -> Result<Routed, Invalid> {
    if s.target == "sys" {
        let knob = SysKnob::parse(&s.knob)?;
        return Ok(Routed::Sys(SysSetting::parse(knob, &s.value)?));
    }
    if s.target == "cgroup" {
        let (group, knob) = s.knob.split_once('.').ok_or_else(|| {
            Invalid(format!(
                "{s}: expected cgroup.NAME.KNOB=VALUE (knobs: {})",
                cgroup::KNOBS
            ))
        })?;
        let value = CgroupValue::parse(knob, &s.value).map_err(|e| Invalid(format!("{s}: {e}")))?;
        return Ok(Routed::Cgroup {
            group: group.to_string(),
            value,
        });
    }
    Ok(Routed::Task)
}

/// Route a setting and check its form, before anything starts.
pub fn route(s: &Setting) -> Result<Route, Invalid> {
    Ok(match route_typed(s)? {
        Routed::Task => Route::Task,
        Routed::Sys(set) => Route::Sys(set.knob().clone()),
        Routed::Cgroup { group, value } => Route::Cgroup {
            group,
            knob: value.knob().to_string(),
        },
    })
}

/// Task and cgroup settings (they change the preset) and system settings.
pub type Split = (Vec<Setting>, Vec<(SysKnob, Setting)>);

/// Task and cgroup settings, and system ones in their typed form.
pub type SplitTyped = (Vec<Setting>, Vec<(SysSetting, Setting)>);

/// Split settings into those applied to the preset and system ones, typed.
pub fn split_typed(settings: &[Setting]) -> Result<SplitTyped, Invalid> {
    let mut task = Vec::new();
    let mut system = Vec::new();
    for s in settings {
        match route_typed(s)? {
            Routed::Task | Routed::Cgroup { .. } => task.push(s.clone()),
            Routed::Sys(set) => system.push((set, s.clone())),
        }
    }
    Ok((task, system))
}

/// Split settings into those applied to the preset and system ones.
pub fn split(settings: &[Setting]) -> Result<Split, Invalid> {
    let (task, system) = split_typed(settings)?;
    Ok((task, untyped(system)))
}

/// System settings as the run options carry them (the knob and the setting).
pub fn untyped(system: Vec<(SysSetting, Setting)>) -> Vec<(SysKnob, Setting)> {
    system
        .into_iter()
        .map(|(set, s)| (set.knob().clone(), s))
        .collect()
}

/// A preset's workload, started and configured.
pub struct Session {
    pub preset: Preset,
    pub specs: Vec<TaskSpec>,
    pub workload: Workload,
    pub online: CpuSet,
    /// The preset's cgroups (removed by the journal when the run ends).
    pub cgroups: Option<Cgroups>,
}

impl Session {
    /// Start the preset's tasks (waiting at the gate), apply their settings and the
    /// system settings. Task settings the kernel refuses become warnings (the run goes
    /// on without them); a refused system setting the user asked for is an error.
    pub fn start(
        preset: Preset,
        system_sets: &[(SysKnob, Setting)],
        exe: &Path,
        sys: &mut SystemKnobs,
    ) -> Result<(Session, Vec<String>)> {
        let online = crate::system::online_cpus();
        let specs = preset.tasks(&online)?;
        if !preset.cgroups.is_empty() || !system_sets.is_empty() {
            // Another schedlab changing knobs is found before anything starts (exit 4).
            sys.journal.hold_lock()?;
        }
        let workload = Workload::start(&specs, exe)?;
        let mut warnings = Vec::new();
        // Into the cgroups first: with RT group scheduling a FIFO task may only enter a
        // group that has RT runtime, and its policy is checked against its group.
        let cgroups = if preset.cgroups.is_empty() {
            None
        } else {
            match setup_cgroups(&preset, &workload, &specs, sys) {
                Ok(c) => Some(c),
                // Bad input and a held lock keep their own exit codes (2, 4): the run is
                // not made without cgroups for them.
                Err(e) if crate::error::kind_of(&e).is_some() => return Err(e),
                Err(e) => {
                    warnings.push(format!("{e:#}; running without cgroups"));
                    None
                }
            }
        };
        for (task, spec) in workload.tasks.iter().zip(&specs) {
            // A foreign task is changed only where a setting asked for something else
            // than what it was found with.
            if task.foreign
                && crate::knob::foreign::as_found(task.tid).is_ok_and(|s| s == spec.sched)
            {
                continue;
            }
            for e in apply_to(task, &spec.sched, sys) {
                warnings.push(format!("{e}; running without it"));
            }
        }
        let session = Session {
            preset,
            specs,
            workload,
            online,
            cgroups,
        };
        for (knob, s) in system_sets {
            // The run options carry the knob and the setting: its value is parsed into
            // its typed form at this boundary, with the same check as when it was routed.
            let set = SysSetting::parse(knob.clone(), &s.value)?;
            // Typed, so a held knob lock keeps its own exit code.
            sys.set(&set, session.rt_running())?;
        }
        Ok((session, warnings))
    }

    /// What the UI (and a recording) needs to know about this workload.
    pub fn started_info(&self, warnings: Vec<String>) -> Started {
        let p = &self.preset;
        Started {
            preset: PresetView {
                name: p.name.clone(),
                summary: p.summary.clone(),
                note: p.note.clone(),
                focus: p.focus.clone(),
                headline: p.headline,
                metric_task: p.metric_task.clone(),
            },
            tasks: self.workload.tasks.iter().map(task_info).collect(),
            kernel: crate::system::kernel_release(),
            scheduler: crate::knob::scx::detect(std::path::Path::new("/")).class(),
            cpus: self.online.count(),
            warnings,
        }
    }

    /// What the sampler reads for each task, in task order.
    pub fn sampler_targets(&self) -> Vec<crate::sampler::Target> {
        // Asked of the kernel, not inferred from who started a task: a command's
        // children are inside, a process attached to is not.
        let inside = self.workload.contained_threads();
        self.workload
            .tasks
            .iter()
            .enumerate()
            .map(|(id, t)| crate::sampler::Target {
                id,
                pid: t.pid,
                tid: t.tid,
                slot: (!t.foreign).then_some(t.slot),
                latency: t.kind.is_some_and(WorkerKind::measures_latency),
                outside: inside.as_ref().is_some_and(|set| !set.contains(&t.tid)),
            })
            .collect()
    }

    /// The processes whose new threads and children join the experiment as they start:
    /// those attached to and the commands it started.
    pub fn follow_roots(&self) -> Vec<i32> {
        let mut roots: Vec<i32> = self
            .workload
            .tasks
            .iter()
            .zip(&self.specs)
            .filter(|(_, s)| matches!(s.program, Program::Attached { .. } | Program::Command(_)))
            .map(|(t, _)| t.pid)
            .collect();
        roots.sort_unstable();
        roots.dedup();
        roots
    }

    /// Take in the threads and processes of [`Session::follow_roots`] that started since
    /// the last look (at most [`MAX_COUNT`] tasks in all): each joins as a foreign task
    /// with its settings as found. Returns the tasks that joined, and how many could not.
    pub fn follow(&mut self) -> (Vec<TaskInfo>, usize) {
        let roots = self.follow_roots();
        self.join_trees(&roots)
    }

    /// Attach to one more process while the experiment runs (the workbench's picker):
    /// its threads and children join, and are followed from then on.
    pub fn attach(&mut self, pid: i32) -> Result<(Vec<TaskInfo>, usize), Invalid> {
        let roots = crate::workload::attach::roots(&crate::workload::attach::Selector {
            pids: vec![pid],
            name: None,
        })?;
        let (joined, left_out) = self.join_trees(&roots);
        if joined.is_empty() && left_out == 0 {
            return Err(Invalid(format!(
                "pid {pid}: its threads are already in the experiment"
            )));
        }
        Ok((joined, left_out))
    }

    /// The tasks of `roots`' trees the experiment does not have yet join it.
    fn join_trees(&mut self, roots: &[i32]) -> (Vec<TaskInfo>, usize) {
        if roots.is_empty() {
            return (Vec::new(), 0);
        }
        let known: std::collections::BTreeSet<i32> =
            self.workload.tasks.iter().map(|t| t.tid).collect();
        let fresh: Vec<_> = crate::workload::attach::tree(roots)
            .into_iter()
            .filter(|t| !known.contains(&t.tid))
            .filter_map(|t| Some((crate::knob::foreign::as_found(t.tid).ok()?, t)))
            .collect();
        let room = MAX_COUNT.saturating_sub(self.workload.tasks.len());
        let left_out = fresh.len().saturating_sub(room);
        if fresh.is_empty() {
            return (Vec::new(), left_out);
        }
        let before = self.preset.groups.len();
        let names: Vec<(String, ForeignTask)> = fresh
            .into_iter()
            .take(room)
            .map(|(settings, t)| (adhoc::join(&mut self.preset, &t, &settings), t))
            .collect();
        // One expansion for the whole batch; each joined group is a task of its own,
        // expanded after the others, so its spec sits at its task's index.
        let specs = match self.preset.tasks(&self.online) {
            Ok(specs) => specs,
            Err(_) => {
                self.preset.groups.truncate(before);
                return (Vec::new(), left_out + names.len());
            }
        };
        self.specs = specs;
        let mut joined = Vec::new();
        for (name, t) in names {
            let slot = self.workload.tasks.len();
            let task = RunningTask {
                group: name.clone(),
                name,
                pid: t.pid,
                tid: t.tid,
                slot,
                kind: None,
                progress_unit: "",
                foreign: true,
            };
            joined.push(task_info(&task));
            self.workload.tasks.push(task);
        }
        (joined, left_out)
    }

    pub fn open_gate(&self) {
        self.workload.open_gate();
    }

    /// RT tasks of this run (FIFO/RR) exist.
    pub fn rt_running(&self) -> bool {
        self.specs.iter().any(|s| s.sched.policy.is_realtime())
    }

    /// Change a knob while the workload runs. Returns what the kernel reports now.
    pub fn apply(&mut self, s: &Setting, sys: &mut SystemKnobs) -> Result<String, KnobError> {
        match route_typed(s)? {
            Routed::Sys(set) => sys.set(&set, self.rt_running()),
            Routed::Task => self.apply_task(s, sys),
            Routed::Cgroup { group, value } => {
                let cgroups = self
                    .cgroups
                    .as_ref()
                    .ok_or_else(|| KnobError::invalid("this run has no cgroups"))?;
                let got = cgroups.set(&group, &value)?;
                self.preset
                    .set_cgroup(&group, value)
                    .map_err(|e| KnobError::invalid(format!("{s}: {e}")))?;
                Ok(got)
            }
        }
    }

    fn apply_task(&mut self, s: &Setting, sys: &mut SystemKnobs) -> Result<String, KnobError> {
        let mut next = self.preset.clone();
        next.apply_all(std::slice::from_ref(s))?;
        let specs = next.tasks(&self.online)?;
        let same_tasks = specs.len() == self.specs.len()
            && specs.iter().zip(&self.specs).all(|(a, b)| {
                a.name == b.name && a.program == b.program && a.poll_stdin == b.poll_stdin
            });
        if !same_tasks {
            return Err(KnobError::Invalid(format!(
                "{s}: changes which tasks run; it takes effect when the workload restarts"
            )));
        }
        let mut errors = Vec::new();
        let mut changed = Vec::new();
        for ((task, old), new) in self.workload.tasks.iter().zip(&self.specs).zip(&specs) {
            if old.sched != new.sched {
                errors.extend(apply_to(task, &new.sched, sys));
                changed.push(task.name.clone());
            }
        }
        if !errors.is_empty() {
            return Err(KnobError::Refused(errors.join("; ")));
        }
        self.preset = next;
        self.specs = specs;
        Ok(if changed.is_empty() {
            NO_CHANGE.to_string()
        } else {
            format!("applied to {}", changed.join(", "))
        })
    }
}

fn task_info(t: &RunningTask) -> TaskInfo {
    TaskInfo {
        name: t.name.clone(),
        group: t.group.clone(),
        pid: t.pid,
        tid: t.tid,
        progress_unit: t.progress_unit.to_string(),
        measures_latency: t.kind.is_some_and(WorkerKind::measures_latency),
    }
}

/// Apply settings to a live task; one schedlab did not start is journaled as found
/// first (unless `--keep`), and is not touched when that fails.
fn apply_to(task: &RunningTask, new: &SchedSettings, sys: &mut SystemKnobs) -> Vec<String> {
    if task.foreign && !sys.keep_foreign {
        let journaled = crate::knob::foreign::before_change(task.pid, task.tid, new)
            .map_err(|e| match e {
                nix::errno::Errno::ESRCH => format!("{}: the task has exited", task.name),
                e => format!("{}: reading its settings failed: {}", task.name, e.desc()),
            })
            .and_then(|found| {
                sys.journal
                    .record_task(found)
                    .map_err(|e| format!("{}: not changed: journaling it failed: {e:#}", task.name))
            });
        if let Err(e) = journaled {
            return vec![e];
        }
    }
    apply(&task.name, task.tid, new)
        .into_iter()
        .map(|e| e.to_string())
        .collect()
}

/// Create the preset's cgroups, set their values and move each task into its group.
fn setup_cgroups(
    preset: &Preset,
    workload: &Workload,
    specs: &[TaskSpec],
    sys: &mut SystemKnobs,
) -> Result<Cgroups> {
    let root = cgroup::detect().ok_or_else(|| {
        anyhow!(
            "preset {} puts tasks in cgroups, but no cgroup cpu controller is mounted (v1 or v2)",
            preset.name
        )
    })?;
    let names: Vec<String> = preset.cgroups.keys().cloned().collect();
    let cgroups = Cgroups::create(root, &names, &mut sys.journal)?;
    for (name, values) in &preset.cgroups {
        for value in values.values() {
            cgroups.set(name, value)?;
        }
    }
    for (task, spec) in workload.tasks.iter().zip(specs) {
        if let Some(group) = &spec.cgroup {
            cgroups
                .add_task(group, task.pid, task.tid)
                .map_err(|e| anyhow!("{}: {e}", task.name))?;
        }
    }
    Ok(cgroups)
}
