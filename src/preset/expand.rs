//! Expansion of a preset into the concrete tasks of a run: one [`TaskSpec`] per
//! instance, its own overrides applied and its CPUs resolved against the machine.

use super::setting::NiceLadder;
use super::{instance_name, Preset, TaskGroup};
use crate::cpuset::CpuSet;
use crate::error::Invalid;
use crate::workload::spec::TaskSpec;

impl Preset {
    /// The concrete tasks of a run, with CPU choices resolved against the online CPUs.
    pub fn tasks(&self, online: &CpuSet) -> Result<Vec<TaskSpec>, Invalid> {
        let mut out = Vec::new();
        for g in &self.groups {
            for i in 0..g.count {
                out.push(expand_instance(g, i, online)?);
            }
        }
        if out.is_empty() {
            return Err(Invalid(format!(
                "preset {} has no tasks to run (every count is 0)",
                self.name
            )));
        }
        Ok(out)
    }

    /// Whether any task starts with a real-time policy (FIFO or RR), as a run sees it.
    pub fn rt_tasks(&self) -> bool {
        self.tasks(&crate::system::online_cpus())
            .is_ok_and(|t| t.iter().any(|s| s.sched.policy.is_realtime()))
    }
}

/// Instance `i` of group `g`: the group's settings, its rung of the nice ladder, then
/// the settings aimed at this instance alone.
fn expand_instance(g: &TaskGroup, i: usize, online: &CpuSet) -> Result<TaskSpec, Invalid> {
    let mut single = g.clone();
    single.nice = NiceLadder::One(g.nice.get(i));
    single.count = 1;
    for s in g.instance_overrides.get(&i).into_iter().flatten() {
        single
            .apply(&s.knob, &s.value)
            .map_err(|e| Invalid(format!("{s}: {e}")))?;
    }
    let name = instance_name(&g.name, i, g.count);
    let mut sched = single.settings(0);
    let cpus = single.cpus.resolve(online);
    // A preset written on a bigger machine may name CPUs this one lacks.
    if !cpus.is_subset(online) {
        return Err(Invalid(format!(
            "task \"{name}\": cpus={} names CPUs that are not online here (online: {online})",
            cpus
        )));
    }
    sched.cpus = Some(cpus);
    sched
        .validate()
        .map_err(|e| Invalid(format!("task \"{name}\": {e}")))?;
    Ok(TaskSpec {
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
    })
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::{builtin, set, two_cpus};

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
        let err = set(&mut p, "busy.count=3").unwrap_err().0;
        assert!(err.contains("nice ladder of 11 values"), "{err}");
    }
}
