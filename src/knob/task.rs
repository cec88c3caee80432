//! Per-task knobs: policy with RT priority or deadline parameters, nice, affinity, slice.

use nix::errno::Errno;
use serde::{Deserialize, Serialize};

use crate::error::Invalid;
use crate::policy::Policy;

use super::errno::{explain, WriteKind};
use crate::cpuset::CpuSet;

/// SCHED_DEADLINE's three parameters, in ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deadline {
    pub runtime_ns: u64,
    pub deadline_ns: u64,
    pub period_ns: u64,
}

impl Deadline {
    /// The kernel's own rule (sched_dl_overflow aside), checked before the syscall so the
    /// user learns which parameter is wrong.
    pub fn validate(&self) -> Result<(), Invalid> {
        if self.runtime_ns < 1024 {
            return Err(Invalid(format!(
                "deadline runtime {} ns is below the kernel's minimum of 1024 ns",
                self.runtime_ns
            )));
        }
        if !(self.runtime_ns <= self.deadline_ns && self.deadline_ns <= self.period_ns) {
            return Err(Invalid(format!(
                "deadline parameters need runtime <= deadline <= period, got {} / {} / {} ns",
                self.runtime_ns, self.deadline_ns, self.period_ns
            )));
        }
        let (min, max) = dl_period_bounds_ns();
        if !(min..=max).contains(&self.period_ns) {
            let show = |ns: u64| humantime::format_duration(std::time::Duration::from_nanos(ns));
            return Err(Invalid(format!(
                "deadline period {} is out of range: allowed {}..{} (kernel.sched_deadline_period_min_us and _max_us)",
                show(self.period_ns),
                show(min),
                show(max)
            )));
        }
        Ok(())
    }
}

/// The periods the kernel accepts for SCHED_DEADLINE, in ns: its sysctls, else their
/// defaults (100 us and 2^22 us).
fn dl_period_bounds_ns() -> (u64, u64) {
    let read = |name: &str, default_us: u64| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()
            .and_then(|s| s.trim().parse::<u64>().ok())
            .unwrap_or(default_us)
            .saturating_mul(1000)
    };
    (
        read("sched_deadline_period_min_us", 100),
        read("sched_deadline_period_max_us", 1 << 22),
    )
}

/// Everything the kernel lets us set on one task.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchedSettings {
    pub policy: Policy,
    /// RT priority 1..99 for FIFO/RR, 0 otherwise.
    pub priority: u32,
    pub nice: i32,
    /// None: leave the inherited affinity alone.
    pub cpus: Option<CpuSet>,
    /// Custom slice for fair tasks (6.12+); None: the kernel's default.
    pub slice_ns: Option<u64>,
    pub deadline: Option<Deadline>,
    /// Utilization clamps 0..1024 (CONFIG_UCLAMP_TASK); None: leave alone.
    pub uclamp_min: Option<u32>,
    pub uclamp_max: Option<u32>,
}

impl Default for SchedSettings {
    fn default() -> Self {
        SchedSettings {
            policy: Policy::Other,
            priority: 0,
            nice: 0,
            cpus: None,
            slice_ns: None,
            deadline: None,
            uclamp_min: None,
            uclamp_max: None,
        }
    }
}

impl SchedSettings {
    /// Check the combination before any syscall; errors name the value and what is allowed.
    pub fn validate(&self) -> Result<(), Invalid> {
        if self.policy.is_realtime() && !(1..=99).contains(&self.priority) {
            return Err(Invalid(format!(
                "priority {} is out of range for {}: allowed 1..99",
                self.priority, self.policy
            )));
        }
        if !self.policy.is_realtime() && self.priority != 0 {
            return Err(Invalid(format!(
                "priority {} applies only to fifo and rr (1..99); {} takes 0",
                self.priority, self.policy
            )));
        }
        if !(-20..=20).contains(&self.nice) {
            return Err(Invalid(format!(
                "nice {} is out of range: allowed -20..19 (20 is clamped to 19)",
                self.nice
            )));
        }
        if let Some(slice) = self.slice_ns {
            if slice != 0 && !(100_000..=100_000_000).contains(&slice) {
                return Err(Invalid(format!(
                    "slice {slice} ns is out of range: allowed 0.1ms..100ms (0 = kernel default)"
                )));
            }
        }
        if self.policy == Policy::Deadline {
            match &self.deadline {
                None => {
                    return Err(Invalid::new(
                        "deadline policy needs runtime, deadline and period (e.g. runtime=2ms,deadline=10ms,period=10ms)",
                    ))
                }
                Some(dl) => dl.validate()?,
            }
        }
        for (name, v) in [
            ("uclamp_min", self.uclamp_min),
            ("uclamp_max", self.uclamp_max),
        ] {
            if v.is_some_and(|v| v > 1024) {
                return Err(Invalid(format!(
                    "{name} {} is out of range: allowed 0..1024",
                    v.unwrap_or(0)
                )));
            }
        }
        if self.cpus.is_some_and(|c| c.is_empty()) {
            return Err(Invalid::new(
                "the CPU list is empty: allow at least one CPU",
            ));
        }
        Ok(())
    }
}

/// "setting uclamp_min=10, uclamp_max=512": the values asked for, as the user wrote them.
fn uclamp_words(min: Option<u32>, max: Option<u32>) -> String {
    let parts: Vec<String> = [("uclamp_min", min), ("uclamp_max", max)]
        .into_iter()
        .filter_map(|(name, v)| Some(format!("{name}={}", v?)))
        .collect();
    format!("setting {}", parts.join(", "))
}

/// A knob write the kernel refused, with its explanation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{task}: {what} failed: {why}")]
pub struct TaskKnobError {
    pub task: String,
    pub what: String,
    pub why: String,
    pub errno: i32,
}

/// The kernel's `struct sched_attr` (SCHED_ATTR_SIZE_VER1): libc has no wrapper.
#[repr(C)]
#[derive(Default, Debug, Clone, Copy)]
struct SchedAttr {
    size: u32,
    sched_policy: u32,
    sched_flags: u64,
    sched_nice: i32,
    sched_priority: u32,
    sched_runtime: u64,
    sched_deadline: u64,
    sched_period: u64,
    sched_util_min: u32,
    sched_util_max: u32,
}

fn sched_setattr(tid: i32, attr: &SchedAttr) -> Result<(), Errno> {
    // SAFETY: attr points to a properly sized, initialised sched_attr for the call's duration.
    let rc = unsafe { libc::syscall(libc::SYS_sched_setattr, tid, attr as *const SchedAttr, 0u32) };
    Errno::result(rc).map(drop)
}

fn sched_getattr(tid: i32) -> Result<SchedAttr, Errno> {
    let mut attr = SchedAttr::default();
    let size = std::mem::size_of::<SchedAttr>() as u32;
    // SAFETY: the kernel writes at most `size` bytes into attr.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut attr as *mut SchedAttr,
            size,
            0u32,
        )
    };
    Errno::result(rc).map(|_| attr)
}

/// What the kernel reports for a task right now (via sched_getattr / getaffinity).
pub fn read_back(tid: i32) -> Result<SchedSettings, Errno> {
    let attr = sched_getattr(tid)?;
    let policy = Policy::from_kernel(attr.sched_policy).unwrap_or(Policy::Other);
    let cpus = affinity(tid).ok();
    Ok(SchedSettings {
        policy,
        priority: attr.sched_priority,
        nice: attr.sched_nice,
        cpus,
        slice_ns: (policy.is_fair() && attr.sched_runtime != 0).then_some(attr.sched_runtime),
        deadline: (policy == Policy::Deadline).then_some(Deadline {
            runtime_ns: attr.sched_runtime,
            deadline_ns: attr.sched_deadline,
            period_ns: attr.sched_period,
        }),
        uclamp_min: Some(attr.sched_util_min),
        uclamp_max: Some(attr.sched_util_max),
    })
}

const SCHED_FLAG_RESET_ON_FORK: u64 = 0x01;
const SCHED_FLAG_KEEP_POLICY: u64 = 0x08;
const SCHED_FLAG_KEEP_PARAMS: u64 = 0x10;
const SCHED_FLAG_UTIL_CLAMP_MIN: u64 = 0x20;
const SCHED_FLAG_UTIL_CLAMP_MAX: u64 = 0x40;

/// How schedlab's own threads (controller, sampler, UI) ask to be scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elevation {
    /// As any task (the default, and all a user without CAP_SYS_NICE gets).
    None,
    /// SCHED_OTHER at nice -20: a headless run is not starved by hundreds of spinners
    /// (a nice-0 sampler beside 256 of them got one sample in seconds), yet stays out of
    /// the RT class, whose throttling would stop it together with an RT experiment (a
    /// FIFO controller writing sched_rt_runtime_us waited ~1 s for the next period).
    Fair,
    /// SCHED_FIFO 99: the workbench stays responsive while FIFO spinners hold every CPU
    /// (and shares their throttled windows).
    Realtime,
}

static ELEVATE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Ask schedlab's own threads to run as `e` from now on (each thread applies it with
/// [`elevate_if_requested`]). They sleep almost always, so they take from the workload
/// only the time they need; RESET_ON_FORK keeps workers from inheriting it.
pub fn request_elevation(e: Elevation) {
    let v = match e {
        Elevation::None => 0,
        Elevation::Fair => 1,
        Elevation::Realtime => 2,
    };
    ELEVATE.store(v, std::sync::atomic::Ordering::Relaxed);
}

/// Elevate the calling thread if requested (and possible: root). Threads that start
/// workers pass `reset_on_fork`; the UI thread does not, so the terminal-input thread it
/// starts inherits the priority. Returns whether it did.
pub fn elevate_if_requested(reset_on_fork: bool) -> bool {
    match ELEVATE.load(std::sync::atomic::Ordering::Relaxed) {
        1 => set_own_fair(-20, reset_on_fork).is_ok(),
        2 => set_own_realtime(99, reset_on_fork).is_ok(),
        _ => false,
    }
}

/// Make the calling thread SCHED_FIFO at `priority`. With `reset_on_fork`, anything it
/// starts (workers!) begins as SCHED_OTHER; without, helper threads inherit it.
pub fn set_own_realtime(priority: u32, reset_on_fork: bool) -> Result<(), Errno> {
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: Policy::Fifo.to_kernel(),
        sched_flags: if reset_on_fork {
            SCHED_FLAG_RESET_ON_FORK
        } else {
            0
        },
        sched_priority: priority,
        ..SchedAttr::default()
    };
    sched_setattr(0, &attr)
}

/// Make the calling thread SCHED_OTHER at `nice`; with `reset_on_fork`, what it starts
/// begins at nice 0.
pub fn set_own_fair(nice: i32, reset_on_fork: bool) -> Result<(), Errno> {
    let attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: Policy::Other.to_kernel(),
        sched_flags: if reset_on_fork {
            SCHED_FLAG_RESET_ON_FORK
        } else {
            0
        },
        sched_nice: nice,
        ..SchedAttr::default()
    };
    sched_setattr(0, &attr)
}

/// Set utilization clamps, keeping policy and parameters.
pub fn set_uclamp(tid: i32, min: Option<u32>, max: Option<u32>) -> Result<(), Errno> {
    let mut attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_flags: SCHED_FLAG_KEEP_POLICY | SCHED_FLAG_KEEP_PARAMS,
        ..SchedAttr::default()
    };
    if let Some(v) = min {
        attr.sched_flags |= SCHED_FLAG_UTIL_CLAMP_MIN;
        attr.sched_util_min = v;
    }
    if let Some(v) = max {
        attr.sched_flags |= SCHED_FLAG_UTIL_CLAMP_MAX;
        attr.sched_util_max = v;
    }
    sched_setattr(tid, &attr)
}

/// The task's allowed CPUs.
pub fn affinity(tid: i32) -> Result<CpuSet, Errno> {
    // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid cpu_set_t of the size passed.
    let rc =
        unsafe { libc::sched_getaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    Errno::result(rc).map(|_| CpuSet::from_libc(&set))
}

pub fn set_affinity(tid: i32, cpus: &CpuSet) -> Result<(), Errno> {
    let set = cpus.to_libc();
    // SAFETY: set is a valid cpu_set_t of the size passed.
    let rc = unsafe { libc::sched_setaffinity(tid, std::mem::size_of::<libc::cpu_set_t>(), &set) };
    Errno::result(rc).map(drop)
}

pub fn set_nice(tid: i32, nice: i32) -> Result<(), Errno> {
    // SAFETY: plain syscall; PRIO_PROCESS with a TID addresses one thread on Linux.
    let rc = unsafe { libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, nice) };
    Errno::result(rc).map(drop)
}

/// Set policy, priority, nice, slice and deadline parameters in one sched_setattr.
pub fn set_policy(tid: i32, s: &SchedSettings) -> Result<(), Errno> {
    let mut attr = SchedAttr {
        size: std::mem::size_of::<SchedAttr>() as u32,
        sched_policy: s.policy.to_kernel(),
        sched_nice: s.nice.min(19),
        sched_priority: if s.policy.is_realtime() {
            s.priority
        } else {
            0
        },
        ..SchedAttr::default()
    };
    if let (Policy::Deadline, Some(dl)) = (s.policy, s.deadline) {
        attr.sched_runtime = dl.runtime_ns;
        attr.sched_deadline = dl.deadline_ns;
        attr.sched_period = dl.period_ns;
    } else if s.policy.is_fair() {
        // 0 asks for the default slice; older kernels ignore the field for fair tasks.
        attr.sched_runtime = s.slice_ns.unwrap_or(0);
    }
    sched_setattr(tid, &attr)
}

/// Apply every setting to a live task. Each part is tried even if another fails, so a
/// user without root still gets the affinity and nice they asked for.
pub fn apply(task: &str, tid: i32, s: &SchedSettings) -> Vec<TaskKnobError> {
    let mut errors = Vec::new();
    let fail = |what: String, errno: Errno, kind: WriteKind| TaskKnobError {
        task: task.to_string(),
        what,
        why: explain(errno, kind),
        errno: errno as i32,
    };
    // Affinity first: a deadline task must already be allowed on its whole root domain.
    if let Some(cpus) = &s.cpus {
        if let Err(e) = set_affinity(tid, cpus) {
            errors.push(fail(format!("setting cpus={cpus}"), e, WriteKind::Affinity));
        }
    }
    let kind = WriteKind::Policy {
        realtime: s.policy.is_realtime() || s.policy == Policy::Deadline,
        deadline: s.policy == Policy::Deadline,
    };
    let what = match s.policy {
        p if p.is_realtime() => format!("setting policy {p} priority {}", s.priority),
        Policy::Deadline => "setting policy deadline".to_string(),
        p => format!("setting policy {p} nice {}", s.nice),
    };
    if let Err(e) = set_policy(tid, s) {
        // The policy write carries nice for fair tasks, so either part may be what the
        // kernel refused: try the policy with the nice the task has, then nice alone,
        // and report each refused part once.
        let current_nice = read_back(tid).map(|r| r.nice).ok();
        let policy_alone = current_nice
            .filter(|_| s.policy.is_fair())
            .map(|nice| set_policy(tid, &SchedSettings { nice, ..s.clone() }));
        match policy_alone {
            Some(Ok(())) => {
                if let Err(e) = set_nice(tid, s.nice) {
                    errors.push(fail(
                        format!("setting nice {}", s.nice),
                        e,
                        WriteKind::Nice { lowering: true },
                    ));
                }
            }
            _ => errors.push(fail(what, e, kind)),
        }
    } else if !s.policy.is_fair() {
        // sched_setattr ignores nice for non-fair policies; the kernel keeps it for later.
        if let Err(e) = set_nice(tid, s.nice) {
            errors.push(fail(
                format!("setting nice {}", s.nice),
                e,
                WriteKind::Nice { lowering: true },
            ));
        }
    }
    if s.uclamp_min.is_some() || s.uclamp_max.is_some() {
        if let Err(e) = set_uclamp(tid, s.uclamp_min, s.uclamp_max) {
            errors.push(fail(
                uclamp_words(s.uclamp_min, s.uclamp_max),
                e,
                WriteKind::Uclamp,
            ));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn policy_round_trips_names_and_kernel_numbers() {
        for p in Policy::ALL {
            assert_eq!(p.name().parse::<Policy>(), Ok(p));
            assert_eq!(Policy::from_kernel(p.to_kernel()), Some(p));
        }
        assert_eq!("SCHED_NORMAL".parse::<Policy>(), Ok(Policy::Other));
        let err = "fast".parse::<Policy>().unwrap_err().0;
        assert!(
            err.contains("other, batch, idle, fifo, rr, deadline"),
            "{err}"
        );
    }

    #[test]
    fn validation_names_the_bad_value_and_the_range() {
        let rt = SchedSettings {
            policy: Policy::Fifo,
            priority: 0,
            ..Default::default()
        };
        assert!(rt.validate().unwrap_err().0.contains("1..99"));
        let other_with_prio = SchedSettings {
            priority: 5,
            ..Default::default()
        };
        assert!(other_with_prio
            .validate()
            .unwrap_err()
            .0
            .contains("fifo and rr"));
        let nice = SchedSettings {
            nice: 25,
            ..Default::default()
        };
        assert!(nice.validate().unwrap_err().0.contains("-20..19"));
        let dl = SchedSettings {
            policy: Policy::Deadline,
            deadline: Some(Deadline {
                runtime_ns: 5_000_000,
                deadline_ns: 1_000_000,
                period_ns: 10_000_000,
            }),
            ..Default::default()
        };
        assert!(dl
            .validate()
            .unwrap_err()
            .0
            .contains("runtime <= deadline <= period"));
        assert!(SchedSettings::default().validate().is_ok());
    }

    #[test]
    fn sched_attr_has_the_kernel_layout() {
        assert_eq!(std::mem::size_of::<SchedAttr>(), 56);
    }

    #[test]
    fn read_back_of_this_thread_matches_what_was_set() {
        // Runs on a throwaway thread so the test runner's threads keep their settings.
        let handle = std::thread::spawn(|| {
            let tid = nix::unistd::gettid().as_raw();
            let wanted = SchedSettings {
                policy: Policy::Batch,
                nice: 7,
                ..Default::default()
            };
            let errors = apply("self", tid, &wanted);
            assert!(errors.is_empty(), "{errors:?}");
            let got = read_back(tid).expect("sched_getattr on self");
            assert_eq!(got.policy, Policy::Batch);
            assert_eq!(got.nice, 7);
        });
        handle.join().expect("thread");
    }
}
