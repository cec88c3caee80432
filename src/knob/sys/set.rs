//! Writing system knobs: journal first, then the write, in the order RT group
//! scheduling needs, with errors that say what is allowed.

use std::path::Path;

use nix::errno::Errno;

use super::catalogue::{current_choice, get, read_error, read_features, why_not_writable, SysKnob};
use super::pmqos::Hold;
use super::probe::{lockdown_reason, read_trim, Probe, SYSCTL};
use super::value::{SysSetting, SysValue};
use crate::error::{Invalid, KnobError};
use crate::knob::errno::{explain, WriteKind};
use crate::knob::features;
use crate::knob::fs::write_file;
use crate::knob::journal::Journal;
use crate::knob::scx;

/// What a write needs to know about the run around it.
pub struct SetContext<'a> {
    pub journal: &'a mut Journal,
    pub probe: &'a Probe,
    /// RT (FIFO/RR) tasks of this run are alive: no throttling could freeze the machine.
    pub rt_tasks_running: bool,
    /// The user insisted on sched_rt_runtime_us=-1 anyway.
    pub allow_unthrottled_rt: bool,
    /// The PM QoS request `sys.cpu_dma_latency` holds (an open file, not journaled).
    pub pm_qos: &'a mut Hold,
}

/// Why `sys.rt_runtime_us=-1` is refused while RT tasks run.
pub const UNTHROTTLED_WITH_RT: &str = "sys.rt_runtime_us=-1 refused: it turns RT throttling off while this run's RT tasks spin, and a FIFO spinner per CPU can then freeze the machine; pass --allow-unthrottled-rt to insist";

/// Whether `set` turns RT throttling off (`sys.rt_runtime_us=-1`) while RT tasks run
/// and nobody insisted: one rule for the checks before a run and the write itself.
pub fn unthrottled_with_rt(set: &SysSetting, rt_tasks: bool, insisted: bool) -> bool {
    matches!(
        (set.knob(), set.value()),
        (SysKnob::RtRuntime, SysValue::Int(-1))
    ) && rt_tasks
        && !insisted
}

/// The setting's number, if it fits `min..=max` as the machine is now (its own range
/// was checked when it was parsed).
fn int_within(setting: &SysSetting, min: i64, max: i64) -> Result<i64, Invalid> {
    match setting.value() {
        SysValue::Int(v) if (min..=max).contains(v) => Ok(*v),
        _ => Err(setting.knob().not_allowed(setting.text())),
    }
}

fn write_error(knob: &SysKnob, path: &Path, value: &str, e: std::io::Error) -> KnobError {
    let errno = Errno::from_raw(e.raw_os_error().unwrap_or(0));
    let why = match (knob, errno) {
        (SysKnob::RtRuntime | SysKnob::RtPeriod, Errno::EINVAL) => format!(
            "{errno:?} ({}): out of range or in the wrong order (runtime <= period; with RT group scheduling no cgroup may get more than the global runtime)",
            errno.desc()
        ),
        (SysKnob::RtRuntime | SysKnob::RtPeriod, Errno::EBUSY) => format!(
            "{errno:?} ({}): bandwidth in use would not fit (SCHED_DEADLINE tasks and the fair servers reserve runtime out of runtime/period, and a cgroup with RT tasks cannot lose all its RT runtime); still busy after 1 s",
            errno.desc()
        ),
        (_, Errno::EPERM) if knob.is_debugfs() => format!("{errno:?}: {}", lockdown_reason()),
        _ => explain(errno, WriteKind::File),
    };
    KnobError::Refused(format!(
        "{}={value}: writing \"{value}\" to {} failed: {why}",
        knob.name(),
        path.display()
    ))
}

/// The journal could not take the old value (or another schedlab holds its lock), so
/// the knob was not touched.
fn journal_error(knob: &SysKnob, e: anyhow::Error) -> KnobError {
    KnobError::from_journal(e).context(knob.name())
}

/// Journal then write one file.
fn journaled_write(
    ctx: &mut SetContext,
    knob: &SysKnob,
    path: &Path,
    value: &str,
) -> Result<(), KnobError> {
    ctx.journal
        .record_file(path)
        .map_err(|e| journal_error(knob, e))?;
    // EBUSY can be transient (a task that just exited still holds RT or deadline
    // bandwidth): tries 100 ms apart for a second before reporting it.
    let mut tries = 0;
    loop {
        match write_file(path, value) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < 10 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            result => {
                result.map_err(|e| write_error(knob, path, value, e))?;
                ctx.journal.wrote(&knob.name(), path);
                return Ok(());
            }
        }
    }
}

fn read_i64(path: &Path) -> Result<i64, KnobError> {
    read_trim(path)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| KnobError::Refused(format!("cannot read {}", path.display())))
}

/// Check system settings, applied in this order, against the machine as it is now:
/// RT runtime and period depend on each other and on RT group scheduling, so a value
/// out of range is found before anything starts (a usage error, whatever the machine's
/// current values are).
pub fn precheck<'a>(
    sets: impl IntoIterator<Item = &'a SysSetting>,
    probe: &Probe,
) -> Result<(), Invalid> {
    let mut runtime = read_i64(&Path::new(SYSCTL).join("sched_rt_runtime_us")).ok();
    let mut period = read_i64(&Path::new(SYSCTL).join("sched_rt_period_us")).ok();
    for set in sets {
        let value = set.text();
        match (set.knob(), set.value()) {
            (SysKnob::RtRuntime, &SysValue::Int(v)) => {
                if let Some(p) = period.filter(|&p| v > p) {
                    return Err(Invalid(format!(
                        "sys.rt_runtime_us={value}: allowed -1 or 0..{p} (sched_rt_period_us is {p})"
                    )));
                }
                if v == 0 && probe.rt_group_root.is_some() {
                    return Err(Invalid(format!(
                        "sys.rt_runtime_us=0: allowed -1 or 1..{} here: with RT group scheduling the kernel refuses 0 for the root group (it would stop its own RT threads)",
                        period.unwrap_or(1_000_000)
                    )));
                }
                runtime = Some(v);
            }
            (SysKnob::RtPeriod, &SysValue::Int(v)) => {
                if let Some(r) = runtime.filter(|&r| r > v) {
                    return Err(Invalid(format!(
                        "sys.rt_period_us={value}: allowed {r}..2147483647 (sched_rt_runtime_us is {r}; lower it first)"
                    )));
                }
                period = Some(v);
            }
            _ => {}
        }
    }
    Ok(())
}

/// Set a system knob; returns its value read back from the kernel.
pub fn set(setting: &SysSetting, ctx: &mut SetContext) -> Result<String, KnobError> {
    let knob = setting.knob();
    // A feature this kernel does not have is the more useful answer than lockdown.
    if let (SysKnob::Feature(name), Some((all, _))) = (knob, read_features(ctx.probe)) {
        if !all.iter().any(|(n, _)| n == name) {
            return Err(missing_feature(knob, name, &all));
        }
    }
    if let Some(why) = why_not_writable(knob, ctx.probe) {
        return Err(KnobError::Refused(format!(
            "{} cannot be changed here: {why}",
            knob.name()
        )));
    }
    let path = knob
        .path(ctx.probe)
        .ok_or_else(|| KnobError::Refused(ctx.probe.debugfs_missing()))?;
    match (knob, setting.value()) {
        (SysKnob::RtRuntime, _) => set_rt_runtime(ctx, setting)?,
        (SysKnob::RtPeriod, _) => set_rt_period(ctx, setting)?,
        (SysKnob::Feature(name), &SysValue::Switch(on)) => set_feature(ctx, knob, name, &path, on)?,
        (SysKnob::Preempt, SysValue::Model(model)) => set_preempt(ctx, knob, &path, model)?,
        (SysKnob::SchedExt, value) => {
            let program = match value {
                SysValue::Program(p) => Some(p.as_path()),
                _ => None,
            };
            return scx::switch(ctx.journal, program, Path::new("/"), scx::ENABLE_WAIT);
        }
        (SysKnob::CpuDmaLatency, value) => hold_latency(ctx, setting, &path, value)?,
        (_, value) => {
            let text = match value {
                SysValue::Int(v) => v.to_string(),
                SysValue::Switch(on) => u8::from(*on).to_string(),
                // 0 puts the kernel's default back.
                SysValue::Default => "0".to_string(),
                SysValue::Model(m) => m.to_string(),
                SysValue::Program(p) => p.display().to_string(),
            };
            journaled_write(ctx, knob, &path, &text)?;
        }
    }
    get(knob, ctx.probe)
}

fn missing_feature(knob: &SysKnob, name: &str, all: &[(String, bool)]) -> KnobError {
    KnobError::Refused(format!(
        "{}: {}",
        knob.name(),
        features::missing_reason(name, all)
    ))
}

/// A scheduler feature: the features file takes NAME or NO_NAME; the journal keeps the
/// word that puts it back.
fn set_feature(
    ctx: &mut SetContext,
    knob: &SysKnob,
    name: &str,
    path: &Path,
    on: bool,
) -> Result<(), KnobError> {
    let (all, _) =
        read_features(ctx.probe).ok_or_else(|| KnobError::Refused(ctx.probe.debugfs_missing()))?;
    let Some((_, was_on)) = all.iter().find(|(n, _)| n == name) else {
        return Err(missing_feature(knob, name, &all));
    };
    let word = |on: bool| {
        if on {
            name.to_string()
        } else {
            format!("NO_{name}")
        }
    };
    ctx.journal
        .record_undo(&format!("feature:{name}"), path, &word(*was_on))
        .map_err(|e| journal_error(knob, e))?;
    let text = word(on);
    write_file(path, &text).map_err(|e| write_error(knob, path, &text, e))
}

/// The PM QoS request: held open rather than written and journaled (closing the file
/// is what drops it); `Default` closes it.
fn hold_latency(
    ctx: &mut SetContext,
    setting: &SysSetting,
    path: &Path,
    value: &SysValue,
) -> Result<(), KnobError> {
    let not_allowed = || KnobError::from(setting.knob().not_allowed(setting.text()));
    let us = match value {
        SysValue::Default => {
            ctx.pm_qos.release();
            return Ok(());
        }
        SysValue::Int(v) => i32::try_from(*v).map_err(|_| not_allowed())?,
        _ => return Err(not_allowed()),
    };
    ctx.pm_qos
        .set(us)
        .map_err(|e| write_error(setting.knob(), path, setting.text(), e))
}

/// The preemption model: one of the words the file offers, the current one in parens.
fn set_preempt(
    ctx: &mut SetContext,
    knob: &SysKnob,
    path: &Path,
    value: &str,
) -> Result<(), KnobError> {
    let text = std::fs::read_to_string(path).map_err(|e| read_error(path, e))?;
    let offered: Vec<String> = text
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '(' || c == ')').to_string())
        .collect();
    if !offered.iter().any(|o| o == value) {
        return Err(KnobError::Invalid(format!(
            "sys.preempt={value}: this kernel offers {}",
            offered.join(", ")
        )));
    }
    let old = current_choice(&text).unwrap_or_default();
    ctx.journal
        .record_undo(&path.display().to_string(), path, &old)
        .map_err(|e| journal_error(knob, e))?;
    write_file(path, value).map_err(|e| write_error(knob, path, value, e))
}

/// sched_rt_runtime_us. With RT group scheduling the root cgroup may never get more
/// than the global runtime: lowering writes the cgroup first, raising the sysctl first.
fn set_rt_runtime(ctx: &mut SetContext, setting: &SysSetting) -> Result<(), KnobError> {
    let knob = SysKnob::RtRuntime;
    let sysctl = knob
        .path(ctx.probe)
        .ok_or_else(|| KnobError::refused("this kernel has no sched_rt_runtime_us"))?;
    let period = read_i64(&Path::new(SYSCTL).join("sched_rt_period_us"))?;
    let new = int_within(setting, -1, period)?;
    if unthrottled_with_rt(setting, ctx.rt_tasks_running, ctx.allow_unthrottled_rt) {
        return Err(KnobError::refused(UNTHROTTLED_WITH_RT));
    }
    let current = read_i64(&sysctl)?;
    let Some(root) = ctx.probe.rt_group_root.clone() else {
        return journaled_write(ctx, &knob, &sysctl, &new.to_string());
    };
    if new == -1 {
        // Unlimited globally; the root group keeps its value (it can never exceed "unlimited").
        return journaled_write(ctx, &knob, &sysctl, "-1");
    }
    let root_period = read_i64(&root.with_file_name("cpu.rt_period_us")).unwrap_or(period);
    let root_value = (new as i128 * root_period as i128 / period.max(1) as i128) as i64;
    let lowering = current == -1 || new < current;
    if lowering {
        journaled_write(ctx, &knob, &root, &root_value.to_string())?;
        journaled_write(ctx, &knob, &sysctl, &new.to_string())
    } else {
        journaled_write(ctx, &knob, &sysctl, &new.to_string())?;
        journaled_write(ctx, &knob, &root, &root_value.to_string())
    }
}

/// sched_rt_period_us, keeping the root cgroup's period in step: a longer period means a
/// smaller RT share, so the root group goes first; a shorter one, the sysctl first.
fn set_rt_period(ctx: &mut SetContext, setting: &SysSetting) -> Result<(), KnobError> {
    let knob = SysKnob::RtPeriod;
    let sysctl = knob
        .path(ctx.probe)
        .ok_or_else(|| KnobError::refused("this kernel has no sched_rt_period_us"))?;
    let runtime = read_i64(&Path::new(SYSCTL).join("sched_rt_runtime_us"))?;
    let new = int_within(setting, runtime.max(1), i32::MAX as i64)?;
    let current = read_i64(&sysctl)?;
    let Some(root_period) = ctx
        .probe
        .rt_group_root
        .as_ref()
        .map(|r| r.with_file_name("cpu.rt_period_us"))
    else {
        return journaled_write(ctx, &knob, &sysctl, &new.to_string());
    };
    if new > current {
        journaled_write(ctx, &knob, &root_period, &new.to_string())?;
        journaled_write(ctx, &knob, &sysctl, &new.to_string())
    } else {
        journaled_write(ctx, &knob, &sysctl, &new.to_string())?;
        journaled_write(ctx, &knob, &root_period, &new.to_string())
    }
}
