//! Presets made on the command line: one task running a command (`-- COMMAND`), or the
//! tasks `--pid`/`--name` found, each as a task group of one with its settings as found.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use super::setting::NiceLadder;
use super::{valid_name, CpuChoice, Headline, Preset, TaskGroup};
use crate::error::Invalid;
use crate::knob::task::SchedSettings;
use crate::policy::Policy;
use crate::workload::attach::ForeignTask;
use crate::workload::kinds::WorkerKind;
use crate::workload::spec::Program;

/// What a command's progress is counted by (`--progress`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    StdoutLines,
    StdoutBytes,
}

impl std::str::FromStr for Progress {
    type Err = Invalid;
    fn from_str(s: &str) -> Result<Progress, Invalid> {
        match s {
            "stdout-lines" => Ok(Progress::StdoutLines),
            "stdout-bytes" => Ok(Progress::StdoutBytes),
            _ => Err(Invalid(format!(
                "--progress {s}: allowed stdout-lines, stdout-bytes"
            ))),
        }
    }
}

/// The name a task gets in settings (`NAME.nice=5`): its command name with what a
/// setting cannot hold replaced by `_`, starting with a letter, at most 32 characters.
pub fn task_name(comm: &str) -> String {
    let mut name: String = comm
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(24)
        .collect();
    if !name.chars().next().is_some_and(|c| c.is_ascii_alphabetic()) {
        name.insert(0, 't');
    }
    name
}

fn group(name: String, program: Program, s: &SchedSettings) -> TaskGroup {
    TaskGroup {
        name,
        program,
        count: 1,
        policy: s.policy,
        priority: s.priority,
        nice: NiceLadder::One(s.nice),
        cpus: s.cpus.map_or(CpuChoice::All, CpuChoice::Set),
        slice_ns: s.slice_ns,
        dl_runtime_ns: s.deadline.map(|d| d.runtime_ns),
        dl_deadline_ns: s.deadline.map(|d| d.deadline_ns),
        dl_period_ns: s.deadline.map(|d| d.period_ns),
        uclamp_min: None,
        uclamp_max: None,
        stdin: None,
        stdout: None,
        process: None,
        cgroup: None,
        poll_stdin: false,
        instance_overrides: BTreeMap::new(),
    }
}

fn preset(name: &str, summary: String, note: String, headline: Headline, metric: &str) -> Preset {
    Preset {
        name: name.to_string(),
        summary,
        note,
        focus: Vec::new(),
        headline,
        metric_task: metric.to_string(),
        warmup: Duration::ZERO,
        groups: Vec::new(),
        variants: Vec::new(),
        cgroups: BTreeMap::new(),
        source: "command line".to_string(),
    }
}

/// A one-task preset running `argv` (as SCHED_OTHER nice 0 on every CPU until `--set`
/// says otherwise), with a probe task counting its output when `progress` asks.
pub fn command(argv: &[String], progress: Option<Progress>) -> Result<Preset, Invalid> {
    let program = argv
        .first()
        .ok_or_else(|| Invalid::new("-- needs a command to run, e.g. -- make -j4"))?;
    let base = program.rsplit('/').next().unwrap_or(program);
    let name = task_name(base);
    let mut g = group(
        name.clone(),
        Program::Command(argv.to_vec()),
        &SchedSettings::default(),
    );
    let mut p = preset(
        "command",
        format!("the command `{}`", argv.join(" ")),
        format!(
            "schedlab started `{}` as the experiment: turn its knobs ({name}.policy, \
             {name}.nice, {name}.cpus, ...) and watch its CPU share, wait and switches.",
            argv.join(" ")
        ),
        Headline::Share,
        &name,
    );
    if let Some(progress) = progress {
        let kind = match progress {
            Progress::StdoutLines => WorkerKind::LineReader,
            Progress::StdoutBytes => WorkerKind::PipeReader,
        };
        g.stdout = Some("out".into());
        let mut probe = group(
            "probe".into(),
            Program::Worker {
                kind,
                params: crate::workload::kinds::resolve_params(kind, &BTreeMap::new())?,
            },
            &SchedSettings::default(),
        );
        probe.stdin = Some("out".into());
        if name == "probe" {
            g.name = "cmd-probe".into();
        }
        p.groups.push(g);
        p.groups.push(probe);
        p.headline = Headline::Throughput;
        p.metric_task = "probe".into();
        p.note.push_str(
            " Its stdout goes into a pipe read by the task \"probe\", whose count is the \
             throughput (the pipe and the probe's wake-ups are part of the experiment).",
        );
    } else {
        p.groups.push(g);
    }
    Ok(p)
}

/// Add a task that started while the experiment runs (a new thread or child of an
/// attached process or a command) as a group of one; returns its name.
pub fn join(p: &mut Preset, t: &ForeignTask, s: &SchedSettings) -> String {
    let base = task_name(&t.comm);
    let taken = |n: &str| p.groups.iter().any(|g| g.name == n);
    let name = [
        base.clone(),
        format!("{base}-{}", t.tid),
        format!("t{}", t.tid),
    ]
    .into_iter()
    .find(|n| !taken(n) && valid_name(n))
    .unwrap_or_else(|| format!("t{}-{}", t.tid, p.groups.len()));
    p.groups.push(foreign_group(name.clone(), t, s));
    name
}

/// A group of one for a foreign task, with its settings as found.
fn foreign_group(name: String, t: &ForeignTask, s: &SchedSettings) -> TaskGroup {
    let mut g = group(
        name,
        Program::Attached {
            pid: t.pid,
            tid: t.tid,
        },
        s,
    );
    g.process = Some(task_name(&t.process));
    // An RT task's settings as found; priority 0 is how a fair one is found.
    if !g.policy.is_realtime() {
        g.priority = 0;
    }
    if g.policy != Policy::Deadline {
        (g.dl_runtime_ns, g.dl_deadline_ns, g.dl_period_ns) = (None, None, None);
    }
    g
}

/// A preset of the tasks schedlab attaches to, each a group of one named after its
/// thread's command name (made unique with `-TID`), with its settings as found.
pub fn attached(tasks: &[(ForeignTask, SchedSettings)]) -> Result<Preset, Invalid> {
    let first = tasks
        .first()
        .ok_or_else(|| Invalid::new("no task to attach to"))?;
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for (t, _) in tasks {
        *counts.entry(task_name(&t.comm)).or_default() += 1;
    }
    let mut taken = BTreeSet::new();
    let mut groups = Vec::new();
    for (t, s) in tasks {
        let base = task_name(&t.comm);
        let mut name = if counts[&base] > 1 {
            format!("{base}-{}", t.tid)
        } else {
            base
        };
        while !taken.insert(name.clone()) || !valid_name(&name) {
            name = format!("t{}", t.tid);
        }
        groups.push(foreign_group(name, t, s));
    }
    let processes: BTreeSet<i32> = tasks.iter().map(|(t, _)| t.pid).collect();
    let metric = groups[0].name.clone();
    let mut p = preset(
        "attached",
        format!(
            "{} thread(s) of {} process(es) schedlab did not start ({} first)",
            tasks.len(),
            processes.len(),
            first.0.process
        ),
        "schedlab attached to processes it did not start. Every knob you turn on them is \
         journaled first and put back when schedlab exits (or by `schedlab restore` \
         after a crash), unless you ran with --keep. The numbers are what procfs tells: \
         CPU share, run-queue wait, switches, migrations (with --trace, wakeup latency)."
            .to_string(),
        Headline::Share,
        &metric,
    );
    p.groups = groups;
    Ok(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cpuset::CpuSet;

    fn two_cpus() -> CpuSet {
        "0-1".parse().expect("cpus")
    }

    #[test]
    fn names_are_settings_safe_and_unique() {
        assert_eq!(task_name("kworker/0:1"), "kworker_0_1");
        assert_eq!(task_name("0day"), "t0day");
        assert_eq!(task_name("a.b c"), "a_b_c");
        let t = |tid, comm: &str| {
            (
                ForeignTask {
                    pid: 10,
                    tid,
                    comm: comm.into(),
                    process: "app".into(),
                },
                SchedSettings::default(),
            )
        };
        let p = attached(&[t(10, "app"), t(11, "worker"), t(12, "worker")]).expect("preset");
        let names: Vec<&str> = p.groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["app", "worker-11", "worker-12"]);
        let specs = p.tasks(&two_cpus()).expect("expands");
        assert_eq!(specs[2].program, Program::Attached { pid: 10, tid: 12 });
        assert_eq!(specs[1].process.as_deref(), Some("app"));
        // A setting reaches one attached task by its name.
        let mut q = p.clone();
        q.apply(&"worker-12.nice=5".parse().expect("setting"))
            .expect("applies");
        let specs = q.tasks(&two_cpus()).expect("expands");
        assert_eq!(
            specs.iter().map(|s| s.sched.nice).collect::<Vec<_>>(),
            [0, 0, 5]
        );
    }

    #[test]
    fn a_command_preset_runs_the_command_and_its_probe() {
        let argv = vec!["/usr/bin/yes".to_string()];
        let p = command(&argv, None).expect("preset");
        assert_eq!(p.groups.len(), 1);
        assert_eq!(p.metric_task, "yes");
        assert_eq!(p.groups[0].program, Program::Command(argv.clone()));
        let p = command(&argv, Some(Progress::StdoutLines)).expect("preset");
        assert_eq!(p.metric_task, "probe");
        assert_eq!(p.headline, Headline::Throughput);
        assert_eq!(p.groups[0].stdout.as_deref(), Some("out"));
        assert_eq!(p.groups[1].stdin.as_deref(), Some("out"));
        assert_eq!(p.groups[1].program.kind(), Some(WorkerKind::LineReader));
        assert!(command(&[], None)
            .unwrap_err()
            .0
            .contains("needs a command"));
        let e = "stdout-words".parse::<Progress>().unwrap_err().0;
        assert!(e.contains("allowed stdout-lines, stdout-bytes"), "{e}");
    }
}
