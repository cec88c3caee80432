//! What the commands that run experiments share: the preset with its overrides, timing
//! and signals checked before anything starts, and the journal restored after.

use std::time::Duration;

use anyhow::{Context, Result};

use super::{usage, Partial};
use crate::cli::{HeadlessArgs, SettingsArgs, SystemArgs};
use crate::headless::run::RunOptions;
use crate::knob::journal;
use crate::knob::sys::{self, SysKnob, SysSetting, SystemKnobs};
use crate::lab::session::{route_typed, split_typed, untyped, Routed};
use crate::preset::setting::{parse_duration, Setting};
use crate::preset::Preset;

/// Everything `run`, `sweep` and `compare` share: the preset with its overrides, timing,
/// signals.
pub struct Prepared {
    pub preset: Preset,
    pub opts: RunOptions,
    pub system: SystemKnobs,
}

/// The experiment of a headless command that runs for `duration`.
pub fn prepare(preset: Option<&str>, duration: &str, headless: &HeadlessArgs) -> Result<Prepared> {
    let p = super::target::preset_for(preset, &headless.target)?;
    let timing = timing(
        duration,
        headless.warmup.as_deref(),
        &headless.settings.interval,
    )?;
    let shaped = shape(p, &headless.settings)?;
    let exe = std::env::current_exe().context("finding the schedlab binary")?;
    let stop = crate::system::stop_on_signals().context("installing signal handlers")?;
    let mut opts = RunOptions::new(exe);
    opts.duration = timing.duration;
    opts.interval = timing.interval;
    opts.warmup = timing.warmup;
    opts.trace = headless.trace || headless.trace_every_waking;
    if headless.trace_every_waking {
        opts.wakings = crate::trace::Wakings::All;
    }
    opts.stop = stop;
    opts.allow_unthrottled_rt = headless.system.allow_unthrottled_rt;
    for (knob, s) in &shaped.system_sets {
        let set = SysSetting::parse(knob.clone(), &s.value).map_err(usage)?;
        if sys::unthrottled_with_rt(&set, shaped.preset.rt_tasks(), opts.allow_unthrottled_rt) {
            return Err(usage(sys::UNTHROTTLED_WITH_RT));
        }
    }
    opts.overrides = shaped.overrides;
    opts.system_sets = shaped.system_sets;
    Ok(Prepared {
        preset: shaped.preset,
        opts,
        system: system_knobs(&headless.system, headless.target.keep)?,
    })
}

/// How long a headless run lasts, how often it samples, and what it leaves out at the
/// start.
struct Timing {
    duration: Duration,
    interval: Duration,
    warmup: Option<Duration>,
}

/// `--duration`, `--warmup` and `--interval` checked, and checked against each other.
fn timing(duration: &str, warmup: Option<&str>, interval: &str) -> Result<Timing> {
    let duration = parse_duration(duration).map_err(|e| usage(format!("--duration: {e}")))?;
    let interval_d = sampling_interval(interval)?;
    let warmup = warmup
        .map(|w| {
            let d = parse_duration(w).map_err(|e| usage(format!("--warmup: {e}")))?;
            if d >= duration {
                return Err(usage(format!(
                    "--warmup {w}: allowed 0s up to (not including) --duration"
                )));
            }
            Ok(d)
        })
        .transpose()?;
    // A rate needs two samples an interval apart, and a summary at least two intervals.
    if duration < 2 * interval_d {
        return Err(usage(format!(
            "--duration {}: allowed at least two sampling intervals ({} at --interval {interval})",
            humantime::format_duration(duration),
            humantime::format_duration(2 * interval_d)
        )));
    }
    Ok(Timing {
        duration,
        interval: interval_d,
        warmup,
    })
}

/// `--interval`, for a headless run and the workbench alike.
pub fn sampling_interval(interval: &str) -> Result<Duration> {
    let d = parse_duration(interval).map_err(|e| usage(format!("--interval: {e}")))?;
    if d < Duration::from_millis(10) || d > Duration::from_secs(60) {
        return Err(usage(format!("--interval {interval}: allowed 10ms..60s")));
    }
    Ok(d)
}

/// A preset as `--variant` and `--set` shape it.
pub struct Shaped {
    /// With the task and cgroup settings applied and its tasks resolved.
    pub preset: Preset,
    /// The flags that shaped it, as the report names them.
    pub overrides: Vec<String>,
    /// The system settings, checked here but written only when the experiment starts.
    pub system_sets: Vec<(SysKnob, Setting)>,
}

/// Apply the variant's settings, then the `--set`s, in order, to `preset`.
pub fn shape(mut preset: Preset, args: &SettingsArgs) -> Result<Shaped> {
    let mut overrides = Vec::new();
    let mut settings = Vec::new();
    if let Some(v) = args.variant.as_deref() {
        let variant = preset.variant(v).map_err(usage)?;
        settings.extend(variant.set.iter().cloned());
        overrides.push(format!("--variant {v}"));
    }
    for s in &args.set {
        settings.push(s.parse::<Setting>().map_err(usage)?);
        overrides.push(format!("--set {s}"));
    }
    let (task_sets, system_sets) = split_typed(&settings).map_err(usage)?;
    sys::precheck(
        system_sets.iter().map(|(set, _)| set),
        &sys::Probe::detect(),
    )
    .map_err(usage)?;
    preset.apply_all(&task_sets).map_err(usage)?;
    preset.check_deadline_fields().map_err(usage)?;
    preset.tasks(&crate::system::online_cpus()).map_err(usage)?;
    crate::knob::cgroup::precheck(&preset.cgroups).map_err(usage)?;
    Ok(Shaped {
        preset,
        overrides,
        system_sets: untyped(system_sets),
    })
}

/// The journal that restores the system knobs, with what the command line allows.
pub fn system_knobs(args: &SystemArgs, keep_foreign: bool) -> Result<SystemKnobs> {
    let mut system = SystemKnobs::new(journal::default_path()?);
    system.allow_unthrottled_rt = args.allow_unthrottled_rt;
    system.keep_foreign = keep_foreign;
    if args.mount_debugfs {
        system.mount_debugfs()?;
    }
    Ok(system)
}

/// Restore the journal and say what could not be restored.
pub fn finish(mut system: SystemKnobs) -> Result<()> {
    let failed: Vec<String> = system
        .restore()
        .iter()
        .filter(|r| !r.ok())
        .map(|r| r.to_string())
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        anyhow::bail!(
            "{}; the journal stays at {} for `schedlab restore`",
            failed.join("; "),
            system.journal_path().display()
        )
    }
}

/// A bad `--plot` name is found before the run, not after it.
pub fn check_plot(path: Option<&std::path::Path>) -> Result<()> {
    match path {
        Some(p) => crate::plot::format_of(p)
            .map(|_| ())
            .map_err(|e| usage(format!("--plot: {e}"))),
        None => Ok(()),
    }
}

/// Check a setting that is applied later (`--at`, a sweep value) now, so bad input
/// fails before anything starts.
pub fn check_later(preset: &Preset, opts: &RunOptions, s: &Setting) -> Result<()> {
    if let Routed::Sys(later) = route_typed(s).map_err(usage)? {
        // The run options carry the start's settings untyped: parsed again, as routed.
        let mut sets = opts
            .system_sets
            .iter()
            .map(|(k, s)| SysSetting::parse(k.clone(), &s.value))
            .collect::<Result<Vec<_>, _>>()
            .map_err(usage)?;
        if sys::unthrottled_with_rt(&later, preset.rt_tasks(), opts.allow_unthrottled_rt) {
            return Err(usage(sys::UNTHROTTLED_WITH_RT));
        }
        sets.push(later);
        sys::precheck(&sets, &sys::Probe::detect()).map_err(usage)?;
    } else {
        let mut changed = preset.clone();
        changed.apply_all(std::slice::from_ref(s)).map_err(usage)?;
        changed.check_deadline_fields().map_err(usage)?;
        crate::knob::cgroup::precheck(&changed.cgroups).map_err(usage)?;
    }
    Ok(())
}

/// Exit code 3 after a result that is not the experiment (unless --allow-partial).
pub fn partial_exit(headless: &HeadlessArgs, refused: Option<String>) -> Result<()> {
    match refused {
        Some(what) if !headless.allow_partial => Err(anyhow::Error::new(Partial(format!(
            "the result is not the experiment: the kernel refused {what} (--allow-partial exits 0 anyway)"
        )))),
        _ => Ok(()),
    }
}
