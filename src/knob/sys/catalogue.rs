//! The catalogue of system knobs: their `sys.` names, files, allowed values, current
//! values and whether they can be changed here (`schedlab knobs`).

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::pmqos;
use super::probe::{lockdown_reason, read_trim, Probe, SYSCTL};
use crate::error::{Invalid, KnobError};
use crate::facts::RtBandwidth;
use crate::knob::features::{self, ORDER_6_12, ORDER_6_12_KERNELS};
use crate::knob::scx;

/// sched_ext's state file: the knob's path in `schedlab knobs`.
const SCX_STATE: &str = "/sys/kernel/sched_ext/state";

/// The debugfs tunables besides features and preempt: (name, what it does).
pub const TUNABLES: [(&str, &str); 3] = [
    ("base_slice_ns", "EEVDF base slice of fair tasks, ns"),
    (
        "migration_cost_ns",
        "a task that ran within this many ns is cache-hot and not migrated",
    ),
    ("nr_migrate", "most tasks moved in one load-balance pass"),
];

/// A system-wide knob, by its `sys.` name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SysKnob {
    RtRuntime,
    RtPeriod,
    RrTimeslice,
    Autogroup,
    Feature(String),
    Tunable(&'static str),
    Preempt,
    FairServer {
        cpu: usize,
        field: &'static str,
    },
    SchedExt,
    /// A PM QoS CPU latency request (/dev/cpu_dma_latency), held, not written.
    CpuDmaLatency,
}

/// Every `sys.` name, for error messages.
pub const NAMES: &str = "rt_runtime_us, rt_period_us, rr_timeslice_ms, autogroup, feature.NAME, base_slice_ns, migration_cost_ns, nr_migrate, preempt, fair_server.cpuN.runtime, fair_server.cpuN.period, sched_ext, cpu_dma_latency";

impl SysKnob {
    pub fn parse(name: &str) -> Result<SysKnob, Invalid> {
        let unknown = || {
            Invalid(format!(
                "unknown system knob \"sys.{name}\": system knobs are {NAMES}"
            ))
        };
        Ok(match name {
            "rt_runtime_us" => SysKnob::RtRuntime,
            "rt_period_us" => SysKnob::RtPeriod,
            "rr_timeslice_ms" => SysKnob::RrTimeslice,
            "autogroup" | "autogroup_enabled" => SysKnob::Autogroup,
            "preempt" => SysKnob::Preempt,
            "sched_ext" => SysKnob::SchedExt,
            "cpu_dma_latency" => SysKnob::CpuDmaLatency,
            _ => {
                if let Some(f) = name.strip_prefix("feature.") {
                    if f.is_empty()
                        || !f
                            .chars()
                            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                    {
                        return Err(Invalid(format!(
                            "bad feature name \"{f}\": features are upper-case, like WA_IDLE"
                        )));
                    }
                    SysKnob::Feature(f.to_string())
                } else if let Some((tunable, _)) = TUNABLES.iter().find(|(n, _)| *n == name) {
                    SysKnob::Tunable(tunable)
                } else if let Some(rest) = name.strip_prefix("fair_server.cpu") {
                    let (cpu, field) = rest.split_once('.').ok_or_else(unknown)?;
                    let cpu = cpu.parse().map_err(|_| unknown())?;
                    let field = match field {
                        "runtime" => "runtime",
                        "period" => "period",
                        _ => return Err(unknown()),
                    };
                    SysKnob::FairServer { cpu, field }
                } else {
                    return Err(unknown());
                }
            }
        })
    }

    pub fn name(&self) -> String {
        match self {
            SysKnob::RtRuntime => "sys.rt_runtime_us".into(),
            SysKnob::RtPeriod => "sys.rt_period_us".into(),
            SysKnob::RrTimeslice => "sys.rr_timeslice_ms".into(),
            SysKnob::Autogroup => "sys.autogroup".into(),
            SysKnob::Feature(f) => format!("sys.feature.{f}"),
            SysKnob::Tunable(t) => format!("sys.{t}"),
            SysKnob::Preempt => "sys.preempt".into(),
            SysKnob::FairServer { cpu, field } => format!("sys.fair_server.cpu{cpu}.{field}"),
            SysKnob::SchedExt => "sys.sched_ext".into(),
            SysKnob::CpuDmaLatency => "sys.cpu_dma_latency".into(),
        }
    }

    /// The file behind the knob.
    pub fn path(&self, probe: &Probe) -> Option<PathBuf> {
        let sysctl = |f: &str| Some(Path::new(SYSCTL).join(f));
        match self {
            SysKnob::RtRuntime => sysctl("sched_rt_runtime_us"),
            SysKnob::RtPeriod => sysctl("sched_rt_period_us"),
            SysKnob::RrTimeslice => sysctl("sched_rr_timeslice_ms"),
            SysKnob::Autogroup => sysctl("sched_autogroup_enabled"),
            SysKnob::Feature(_) => probe.features_path.clone(),
            SysKnob::Tunable(t) => probe.sched_dir.as_ref().map(|d| d.join(t)),
            SysKnob::Preempt => probe.sched_dir.as_ref().map(|d| d.join("preempt")),
            SysKnob::FairServer { cpu, field } => probe
                .sched_dir
                .as_ref()
                .map(|d| d.join("fair_server").join(format!("cpu{cpu}")).join(field)),
            SysKnob::SchedExt => Some(PathBuf::from(SCX_STATE)),
            SysKnob::CpuDmaLatency => Some(PathBuf::from(pmqos::DEVICE)),
        }
    }

    pub(super) fn is_debugfs(&self) -> bool {
        !matches!(
            self,
            SysKnob::RtRuntime
                | SysKnob::RtPeriod
                | SysKnob::RrTimeslice
                | SysKnob::Autogroup
                | SysKnob::SchedExt
                | SysKnob::CpuDmaLatency
        )
    }

    /// "NAME=VALUE: allowed ...".
    pub fn not_allowed(&self, value: &str) -> Invalid {
        Invalid(format!(
            "{}={value}: allowed {}",
            self.name(),
            self.allowed()
        ))
    }

    /// What a user should know beyond the allowed values (`schedlab knobs` prints it).
    pub fn note(&self) -> Option<&'static str> {
        match self {
            SysKnob::CpuDmaLatency => Some(
                "not journaled: schedlab holds /dev/cpu_dma_latency open while it runs, and closing it (also when schedlab is killed) drops the request; the value is the machine's current target, the smallest request of any process",
            ),
            _ => None,
        }
    }

    /// Which values are allowed, in words.
    pub fn allowed(&self) -> String {
        match self {
            SysKnob::RtRuntime => "-1 (no RT throttling; refused while RT spinners run) or 0..sched_rt_period_us, in us (1.. with RT group scheduling; 6.12+: at least the fair servers' share of the period, 50000 of 1000000 by default, else EBUSY)".into(),
            SysKnob::RtPeriod => "1..2147483647 us, at least sched_rt_runtime_us".into(),
            SysKnob::RrTimeslice => "1..2147483647 ms (rounded to ticks), or default".into(),
            SysKnob::Autogroup => "0 or 1 (on/off)".into(),
            SysKnob::Feature(_) => "on or off".into(),
            SysKnob::Tunable("nr_migrate") => "1..2147483647".into(),
            SysKnob::Tunable(_) => "0..4294967295 ns".into(),
            SysKnob::Preempt => "none, voluntary, full, lazy (what the kernel offers)".into(),
            SysKnob::FairServer { field, .. } => format!("{field} in ns (runtime <= period)"),
            SysKnob::SchedExt => "off, or an scx scheduler program (a path, or a name on PATH like scx_simple) that schedlab runs until it exits".into(),
            SysKnob::CpuDmaLatency => format!(
                "0..{} us (held while schedlab runs), or off/default (drops the request)",
                pmqos::DEFAULT_US
            ),
        }
    }
}

/// One knob for `schedlab knobs`.
#[derive(Clone, Debug, Serialize, serde::Deserialize, PartialEq)]
pub struct KnobInfo {
    pub name: String,
    pub value: Option<String>,
    pub allowed: String,
    pub writable: bool,
    /// Why it cannot be changed here, in words a user can act on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why_not: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    pub help: String,
}

/// The features as the kernel reports them, and where that came from.
pub fn read_features(probe: &Probe) -> Option<(Vec<(String, bool)>, String)> {
    if let Some(text) = probe.features_path.as_deref().and_then(read_trim) {
        return Some((features::parse_features_file(&text), "features file".into()));
    }
    let debug = probe
        .sched_dir
        .as_ref()
        .and_then(|d| std::fs::read_to_string(d.join("debug")).ok())?;
    let mask = features::parse_debug_mask(&debug)?;
    Some((
        features::decode(mask, &ORDER_6_12),
        format!("decoded from sched/debug's bitmask with the {ORDER_6_12_KERNELS} feature order"),
    ))
}

/// The current value of a knob as text.
pub fn get(knob: &SysKnob, probe: &Probe) -> Result<String, KnobError> {
    let missing = || KnobError::Refused(probe.debugfs_missing());
    match knob {
        SysKnob::Feature(name) => {
            let (all, _) = read_features(probe).ok_or_else(missing)?;
            all.iter()
                .find(|(n, _)| n == name)
                .map(|(_, on)| if *on { "on" } else { "off" }.to_string())
                .ok_or_else(|| KnobError::Refused(features::missing_reason(name, &all)))
        }
        SysKnob::Preempt => {
            let path = knob.path(probe).ok_or_else(missing)?;
            let text = std::fs::read_to_string(&path).map_err(|e| read_error(&path, e))?;
            current_choice(&text).ok_or_else(|| {
                KnobError::Refused(format!(
                    "cannot read the preemption mode from \"{}\"",
                    text.trim()
                ))
            })
        }
        SysKnob::SchedExt => {
            let scx = scx::detect(Path::new("/"));
            scx.value()
                .ok_or_else(|| KnobError::Refused(scx.unavailable().unwrap_or_default()))
        }
        SysKnob::CpuDmaLatency => {
            let path = Path::new(pmqos::DEVICE);
            pmqos::read_target(path)
                .map(|us| us.to_string())
                .map_err(|e| match e.raw_os_error() {
                    Some(libc::EACCES) => {
                        KnobError::Refused(format!("not root ({} is mode 0600)", pmqos::DEVICE))
                    }
                    _ => read_error(path, e),
                })
        }
        _ => {
            let path = knob.path(probe).ok_or_else(missing)?;
            std::fs::read_to_string(&path)
                .map(|s| s.trim().to_string())
                .map_err(|e| read_error(&path, e))
        }
    }
}

pub(super) fn read_error(path: &Path, e: std::io::Error) -> KnobError {
    KnobError::Refused(match e.raw_os_error() {
        Some(libc::EPERM) => lockdown_reason(),
        Some(libc::ENOENT) => format!("this kernel has no {}", path.display()),
        _ => format!("cannot read {}: {e}", path.display()),
    })
}

/// `none (voluntary) full lazy` -> `voluntary`.
pub(super) fn current_choice(text: &str) -> Option<String> {
    let start = text.find('(')?;
    let end = text[start..].find(')')?;
    Some(text[start + 1..start + end].to_string())
}

/// Why `knob` cannot be written here, if it cannot.
pub fn why_not_writable(knob: &SysKnob, probe: &Probe) -> Option<String> {
    if !probe.root {
        return Some("not root".into());
    }
    if *knob == SysKnob::SchedExt {
        return scx::detect(Path::new("/")).unavailable();
    }
    if knob.is_debugfs() {
        if let Err(e) = &probe.debugfs_write {
            return Some(e.to_string());
        }
    }
    match knob.path(probe) {
        None => Some(probe.debugfs_missing()),
        Some(p) if !p.exists() => Some(format!("this kernel has no {}", p.display())),
        Some(_) => None,
    }
}

/// Every system knob with its value and whether it can be changed here.
pub fn list(probe: &Probe) -> Vec<KnobInfo> {
    let mut knobs = vec![
        SysKnob::RtRuntime,
        SysKnob::RtPeriod,
        SysKnob::RrTimeslice,
        SysKnob::Autogroup,
        SysKnob::SchedExt,
    ];
    knobs.extend(TUNABLES.iter().map(|(n, _)| SysKnob::Tunable(n)));
    knobs.push(SysKnob::Preempt);
    knobs.push(SysKnob::CpuDmaLatency);
    for cpu in crate::system::online_cpus().iter() {
        knobs.push(SysKnob::FairServer {
            cpu,
            field: "runtime",
        });
        knobs.push(SysKnob::FairServer {
            cpu,
            field: "period",
        });
    }
    let rt = RtBandwidth::running();
    let mut out: Vec<KnobInfo> = knobs
        .iter()
        .map(|k| {
            let why = why_not_writable(k, probe);
            let value = get(k, probe);
            KnobInfo {
                name: k.name(),
                writable: why.is_none(),
                why_not: why.or_else(|| value.as_ref().err().map(ToString::to_string)),
                value: value.ok(),
                allowed: k.allowed(),
                path: k.path(probe).map(|p| p.display().to_string()),
                help: help(k, rt),
            }
        })
        .collect();
    match read_features(probe) {
        Some((features, source)) => {
            for (name, on) in features {
                let k = SysKnob::Feature(name.clone());
                let why = why_not_writable(&k, probe);
                out.push(KnobInfo {
                    name: k.name(),
                    value: Some(if on { "on" } else { "off" }.into()),
                    allowed: k.allowed(),
                    writable: why.is_none(),
                    why_not: why,
                    path: probe
                        .features_path
                        .as_ref()
                        .map(|p| p.display().to_string()),
                    help: format!("scheduler feature ({source})"),
                });
            }
        }
        None => out.push(KnobInfo {
            name: "sys.feature.NAME".into(),
            value: None,
            allowed: "on or off".into(),
            writable: false,
            why_not: Some(probe.debugfs_missing()),
            path: None,
            help: "scheduler features".into(),
        }),
    }
    out
}

/// What a knob does on a kernel with the RT mechanism `rt`.
fn help(k: &SysKnob, rt: RtBandwidth) -> String {
    match k {
        SysKnob::RtRuntime if rt.throttles() => {
            "RT tasks may run this many us of every period per CPU (RT throttling), and SCHED_DEADLINE tasks together no more".into()
        }
        SysKnob::RtRuntime => {
            "the SCHED_DEADLINE admission limit per period; it throttles no RT task on this kernel (6.12+ without RT group scheduling: the fair server alone keeps fair tasks running)".into()
        }
        SysKnob::RtPeriod if rt.throttles() => "the RT throttling period".into(),
        SysKnob::RtPeriod => {
            "the period of the SCHED_DEADLINE admission limit (no RT throttling on this kernel)".into()
        }
        SysKnob::RrTimeslice => "SCHED_RR time slice".into(),
        SysKnob::Autogroup => "group fair tasks by session (autogroup)".into(),
        SysKnob::Feature(_) => "scheduler feature".into(),
        SysKnob::Tunable(t) => TUNABLES
            .iter()
            .find(|(n, _)| n == t)
            .map_or("", |(_, h)| h)
            .to_string(),
        SysKnob::Preempt => "preemption model (PREEMPT_DYNAMIC)".into(),
        SysKnob::FairServer { .. } => "time reserved for fair tasks under RT load (6.12+)".into(),
        SysKnob::SchedExt => {
            "the scheduler class: a sched_ext BPF scheduler, or off (6.12+)".into()
        }
        SysKnob::CpuDmaLatency => {
            "PM QoS CPU latency limit: cpuidle uses no idle state slower to leave than this".into()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The RT sysctls' help says what they do on each kind of kernel: without RT group
    /// scheduling (6.12+) they throttle nothing.
    #[test]
    fn rt_sysctl_help_follows_the_kernels_rt_mechanism() {
        let throttling = help(&SysKnob::RtRuntime, RtBandwidth::ThrottlingAndFairServer);
        assert!(throttling.contains("(RT throttling)"), "{throttling}");
        let fair = help(&SysKnob::RtRuntime, RtBandwidth::FairServerOnly);
        assert!(
            fair.contains("throttles no RT task") && fair.contains("fair server"),
            "{fair}"
        );
        assert!(help(&SysKnob::RtPeriod, RtBandwidth::FairServerOnly).contains("no RT throttling"));
        assert!(SysKnob::RtRuntime.allowed().contains("EBUSY"));
    }
}
