//! One run's cgroups: create them (journaled), set and read their knobs, move tasks in.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{bail, Context};
use nix::errno::Errno;

use super::files::{errno_of, read_num, read_trimmed, unexpected, write};
use super::mount::{enable_cpu, ensure_v2_cpu_enabled, CgroupRoot, Version};
use super::values::{
    shares_as_weight, shares_to_weight, unknown_knob, valid_name, weight_as_shares,
    weight_to_shares, CgroupValue, Quota,
};
use crate::error::KnobError;
use crate::knob::errno::{explain, WriteKind};
use crate::knob::journal::Journal;

const NO_IDLE: &str = "cpu.idle needs Linux 5.15+";
const NO_RT_GROUP: &str = "this kernel has no RT group scheduling (CONFIG_RT_GROUP_SCHED off)";
const RT_ONLY_V1: &str =
    "rt_runtime_us: RT group scheduling exists only in cgroup v1 (cgroup v2 has no cpu.rt_runtime_us)";

/// The cgroups of one run.
#[derive(Debug)]
pub struct Cgroups {
    root: CgroupRoot,
    base: PathBuf,
    groups: Vec<(String, PathBuf)>,
    /// RT runtime changes read and write the base's budget and its siblings': serialised.
    rt_lock: Mutex<()>,
}

impl Cgroups {
    /// Make `schedlab-<pid>` under the mount and one group per name, journaling each
    /// directory right after it exists so a crash between steps still gets it removed.
    pub fn create(
        root: CgroupRoot,
        names: &[String],
        journal: &mut Journal,
    ) -> anyhow::Result<Cgroups> {
        for (i, name) in names.iter().enumerate() {
            if !valid_name(name) {
                bail!("cgroup name \"{name}\" is not allowed: use letters, digits, '-' and '_'");
            }
            if names[..i].contains(name) {
                bail!("cgroup name \"{name}\" is given twice");
            }
        }
        let base = root.mount.join(format!("schedlab-{}", std::process::id()));
        let mut made: Vec<PathBuf> = Vec::new();
        let result = Self::build(&root, &base, names, journal, &mut made);
        if result.is_err() {
            // The journal would remove these at exit; do it now so a run that carries on
            // without cgroups leaves none behind. Their entries then undo as no-ops.
            for dir in made.iter().rev() {
                let _ = std::fs::remove_dir(dir);
            }
        }
        let groups = result?;
        Ok(Cgroups {
            root,
            base,
            groups,
            rt_lock: Mutex::new(()),
        })
    }

    fn build(
        root: &CgroupRoot,
        base: &Path,
        names: &[String],
        journal: &mut Journal,
        made: &mut Vec<PathBuf>,
    ) -> anyhow::Result<Vec<(String, PathBuf)>> {
        if root.version == Version::V2 {
            ensure_v2_cpu_enabled(&root.mount, journal)?;
        }
        make_dir(base, journal, made)?;
        if root.version == Version::V2 {
            // Inside our own base, so it goes away with the rmdir: nothing to journal.
            enable_cpu(&base.join("cgroup.subtree_control"))?;
        }
        let mut groups = Vec::with_capacity(names.len());
        for name in names {
            let dir = base.join(name);
            make_dir(&dir, journal, made)?;
            groups.push((name.clone(), dir));
        }
        Ok(groups)
    }

    pub fn version(&self) -> Version {
        self.root.version
    }

    /// The per-run parent directory, `schedlab-<pid>` under the mount.
    pub fn base(&self) -> &Path {
        &self.base
    }

    pub fn dir(&self, group: &str) -> Option<&Path> {
        self.groups
            .iter()
            .find(|(n, _)| n == group)
            .map(|(_, d)| d.as_path())
    }

    /// The group's bandwidth counters (cpu.stat), None where it has none.
    pub fn throttling(&self, group: &str) -> Option<super::stat::Throttling> {
        let text = std::fs::read_to_string(self.dir(group)?.join("cpu.stat")).ok()?;
        super::stat::parse(&text, self.root.version)
    }

    pub fn names(&self) -> Vec<String> {
        self.groups.iter().map(|(n, _)| n.clone()).collect()
    }

    fn group_dir(&self, group: &str) -> Result<&Path, KnobError> {
        self.dir(group).ok_or_else(|| {
            let names = self.names();
            KnobError::Invalid(if names.is_empty() {
                format!("unknown cgroup \"{group}\": this preset has no cgroups")
            } else {
                format!(
                    "unknown cgroup \"{group}\": this preset's cgroups are {}",
                    names.join(", ")
                )
            })
        })
    }

    /// Write a value (validated when it was parsed) and return what the kernel then holds.
    pub fn set(&self, group: &str, value: &CgroupValue) -> Result<String, KnobError> {
        let dir = self.group_dir(group)?;
        let v1 = self.root.version == Version::V1;
        match *value {
            CgroupValue::Weight(n) | CgroupValue::Shares(n) => {
                let (file, text) = match (v1, value) {
                    (true, CgroupValue::Weight(_)) => ("cpu.shares", weight_to_shares(n)),
                    (true, _) => ("cpu.shares", n),
                    (false, CgroupValue::Weight(_)) => ("cpu.weight", n),
                    (false, _) => ("cpu.weight", shares_to_weight(n)),
                };
                write(&dir.join(file), &text.to_string(), |errno| {
                    (errno == Errno::EINVAL
                        && read_trimmed(&dir.join("cpu.idle")).is_ok_and(|s| s == "1"))
                    .then(|| {
                        "the group is idle (idle = 1), which fixes its weight: set idle 0 first"
                            .to_string()
                    })
                })?;
            }
            CgroupValue::Quota(q) => set_quota(dir, q, v1)?,
            CgroupValue::Idle(on) => {
                let path = dir.join("cpu.idle");
                if !path.exists() {
                    return Err(KnobError::refused(NO_IDLE));
                }
                write(&path, if on { "1" } else { "0" }, |_| None)?;
            }
            CgroupValue::RtRuntimeUs(runtime) => {
                if !v1 {
                    return Err(KnobError::refused(RT_ONLY_V1));
                }
                self.set_rt_runtime(group, dir, runtime)?;
            }
        }
        self.get(group, value.knob())
    }

    /// A child's RT runtime must fit in its parent's, and the base starts at 0: keep the
    /// base at exactly the sum its groups need, raising it before a child grows and
    /// lowering it after a child shrinks, so the root keeps every us nobody uses (a preset
    /// lowering the root's cpu.rt_runtime_us must not be blocked by idle budget here).
    fn set_rt_runtime(&self, group: &str, dir: &Path, runtime: u64) -> Result<(), KnobError> {
        let file = dir.join("cpu.rt_runtime_us");
        if !file.exists() {
            return Err(KnobError::refused(NO_RT_GROUP));
        }
        let _serial = self.rt_lock.lock().unwrap_or_else(|e| e.into_inner());
        let period: u64 = read_num(&dir.join("cpu.rt_period_us"))?;
        if runtime > period {
            return Err(KnobError::Invalid(format!(
                "rt_runtime_us {runtime} is out of range: allowed 0..{period} (the group's cpu.rt_period_us)"
            )));
        }
        let base_period: u64 = read_num(&self.base.join("cpu.rt_period_us"))?;
        let mut need = scale_up(runtime, base_period, period);
        for (name, other) in &self.groups {
            if name != group {
                let r: i64 = read_num(&other.join("cpu.rt_runtime_us"))?;
                let p: u64 = read_num(&other.join("cpu.rt_period_us"))?;
                need += scale_up(u64::try_from(r).unwrap_or(0), base_period, p);
            }
        }
        let base_file = self.base.join("cpu.rt_runtime_us");
        let base_now: u64 = read_num::<i64>(&base_file).map(|n| u64::try_from(n).unwrap_or(0))?;
        if need > base_now {
            let root_rt = read_trimmed(&self.root.mount.join("cpu.rt_runtime_us"))
                .unwrap_or_else(|_| "?".into());
            write(&base_file, &need.to_string(), |errno| {
                (errno == Errno::EINVAL || errno == Errno::EBUSY).then(|| {
                    format!(
                        "the groups of this run would need {need} us of RT runtime per {base_period} us, \
                         more than the root cgroup has free (its cpu.rt_runtime_us is {root_rt}, \
                         shared with other cgroups)"
                    )
                })
            })?;
        }
        let written = write(&file, &runtime.to_string(), |errno| {
            match errno {
            Errno::EINVAL => Some(format!(
                "the group's runtime must fit within its parent's ({} holds {need} us) and its period ({period} us)",
                self.base.display()
            )),
            Errno::EBUSY => Some(
                "real-time (FIFO/RR) tasks in the group need that runtime: move them out or make them \
                 non-RT before lowering it to 0"
                    .to_string(),
            ),
            _ => None,
        }
        });
        let settled: u64 = if written.is_ok() { need } else { base_now };
        // Best effort: a base left higher than needed only holds back budget until rmdir.
        if settled < need.max(base_now) {
            let _ = crate::knob::fs::write_file(&base_file, &settled.to_string());
        }
        written
    }

    /// Current value of a knob, read from the kernel (same shapes as `set` returns).
    pub fn get(&self, group: &str, knob: &str) -> Result<String, KnobError> {
        let dir = self.group_dir(group)?;
        let v1 = self.root.version == Version::V1;
        match knob {
            "weight" if v1 => {
                read_num(&dir.join("cpu.shares")).map(|s: u64| shares_as_weight(s).to_string())
            }
            "weight" => read_num(&dir.join("cpu.weight")).map(|w: u64| w.to_string()),
            "shares" if v1 => read_num(&dir.join("cpu.shares")).map(|s: u64| s.to_string()),
            "shares" => {
                read_num(&dir.join("cpu.weight")).map(|w: u64| weight_as_shares(w).to_string())
            }
            "quota" if v1 => {
                let quota: i64 = read_num(&dir.join("cpu.cfs_quota_us"))?;
                let period: u64 = read_num(&dir.join("cpu.cfs_period_us"))?;
                Ok(if quota < 0 {
                    "max".to_string()
                } else {
                    format!("{quota}/{period}")
                })
            }
            "quota" => {
                let path = dir.join("cpu.max");
                let text = read_trimmed(&path)?;
                match text.split_whitespace().collect::<Vec<_>>()[..] {
                    ["max", _] | ["max"] => Ok("max".to_string()),
                    [q, p] if q.parse::<u64>().is_ok() && p.parse::<u64>().is_ok() => {
                        Ok(format!("{q}/{p}"))
                    }
                    _ => Err(unexpected(&path, &text)),
                }
            }
            "idle" => {
                let path = dir.join("cpu.idle");
                if !path.exists() {
                    return Err(KnobError::refused(NO_IDLE));
                }
                read_num(&path).map(|n: i64| n.to_string())
            }
            "rt_runtime_us" if !v1 => Err(KnobError::refused(RT_ONLY_V1)),
            "rt_runtime_us" => {
                let path = dir.join("cpu.rt_runtime_us");
                if !path.exists() {
                    return Err(KnobError::refused(NO_RT_GROUP));
                }
                read_num(&path).map(|n: i64| n.to_string())
            }
            _ => Err(KnobError::Invalid(unknown_knob(knob))),
        }
    }

    /// Move one thread into the group. v1 moves exactly the thread `tid`; v2 (outside
    /// threaded mode) only moves whole processes, so there `pid` and all its threads move.
    pub fn add_task(&self, group: &str, pid: i32, tid: i32) -> Result<(), KnobError> {
        let dir = self.group_dir(group)?;
        let (path, id) = match self.root.version {
            Version::V1 => (dir.join("tasks"), tid),
            Version::V2 => (dir.join("cgroup.procs"), pid),
        };
        write(&path, &id.to_string(), |errno| {
            match (errno, self.root.version) {
            (Errno::EINVAL, Version::V1) if is_realtime(tid) => Some(format!(
                "a real-time (FIFO/RR) thread can only join a group with RT runtime: \
                 set rt_runtime_us on \"{group}\" above 0 first"
            )),
            (Errno::EBUSY, Version::V2) => Some(
                "cgroup v2 puts processes only in leaf groups, and a domain group cannot take a \
                 process from a threaded subtree"
                    .to_string(),
            ),
            (Errno::EOPNOTSUPP, Version::V2) => Some(
                "the cpu controller cannot take this process (with RT group scheduling, real-time \
                 tasks cannot join a v2 cpu group)"
                    .to_string(),
            ),
            _ => None,
        }
        })
    }
}

fn is_realtime(tid: i32) -> bool {
    // SAFETY: sched_getscheduler takes a plain id and touches no memory of ours.
    let policy = unsafe { libc::sched_getscheduler(tid) };
    policy == libc::SCHED_FIFO || policy == libc::SCHED_RR
}

/// `runtime` per `period` expressed per `base_period`, rounded up so the kernel's
/// fixed-point sum of the children never exceeds the parent's.
fn scale_up(runtime: u64, base_period: u64, period: u64) -> u64 {
    if period == 0 || period == base_period {
        return runtime;
    }
    let scaled = (u128::from(runtime) * u128::from(base_period)).div_ceil(u128::from(period));
    u64::try_from(scaled).unwrap_or(u64::MAX)
}

/// mkdir, then journal it at once; a directory that already existed is not ours to remove.
fn make_dir(dir: &Path, journal: &mut Journal, made: &mut Vec<PathBuf>) -> anyhow::Result<()> {
    if let Err(e) = std::fs::create_dir(dir) {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            bail!(
                "{} already exists (a name clashing with a cgroup file, or left by an earlier run: \
                 `schedlab restore` removes those)",
                dir.display()
            );
        }
        bail!(
            "creating the cgroup {}: {}",
            dir.display(),
            explain(errno_of(&e), WriteKind::File)
        );
    }
    made.push(dir.to_path_buf());
    journal
        .record_dir(dir)
        .with_context(|| format!("journaling the new cgroup {}", dir.display()))
}

/// cpu.max (v2), or cpu.cfs_period_us then cpu.cfs_quota_us (v1).
fn set_quota(dir: &Path, q: Quota, v1: bool) -> Result<(), KnobError> {
    let why = |_: Errno| {
        Some(
            "period must be 1ms..1s and quota at least 1ms (and not below cpu.cfs_burst_us on v1)"
                .to_string(),
        )
    };
    if v1 {
        // Period first: each write is checked against the other's current value, and an
        // unlimited quota never conflicts with a period.
        if let Some(p) = q.period_us {
            write(&dir.join("cpu.cfs_period_us"), &p.to_string(), why)?;
        }
        let quota = q
            .quota_us
            .map_or_else(|| "-1".to_string(), |n| n.to_string());
        write(&dir.join("cpu.cfs_quota_us"), &quota, why)
    } else {
        let quota = q
            .quota_us
            .map_or_else(|| "max".to_string(), |n| n.to_string());
        let text = match q.period_us {
            Some(p) => format!("{quota} {p}"),
            None => quota,
        };
        write(&dir.join("cpu.max"), &text, why)
    }
}

#[cfg(test)]
mod tests;
