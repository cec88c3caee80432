//! System-wide knobs: the RT throttling sysctls (with the root-cgroup ordering that RT
//! group scheduling needs), RR timeslice, autogroup, and the debugfs scheduler tunables
//! and features. Every write is journaled first.

use std::path::{Path, PathBuf};

use nix::errno::Errno;
use serde::Serialize;

use super::errno::{explain, WriteKind};
use super::features::{self, ORDER_6_12, ORDER_6_12_KERNELS};
use super::fs::{write_file, DEBUGFS};
use super::journal::{Journal, Restored};

const SYSCTL: &str = "/proc/sys/kernel";
const CGROUP_V1_CPU: &str = "/sys/fs/cgroup/cpu";

fn read_trim(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// What this machine allows, found once per command.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub root: bool,
    pub kernel: (u32, u32),
    pub debugfs_mounted: bool,
    /// /sys/kernel/debug/sched (5.13+), when debugfs is mounted.
    pub sched_dir: Option<PathBuf>,
    /// The features file: sched/features, or sched_features before 5.13.
    pub features_path: Option<PathBuf>,
    /// Whether debugfs scheduler files can be opened for writing, and if not, why.
    pub debugfs_write: Result<(), String>,
    /// The root cgroup's cpu.rt_runtime_us when RT group scheduling is on (cgroup v1).
    pub rt_group_root: Option<PathBuf>,
    /// CONFIG_UCLAMP_TASK is on.
    pub uclamp: bool,
}

fn kernel_version() -> (u32, u32) {
    let release = crate::system::kernel_release();
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse().ok());
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

fn debugfs_mounted() -> bool {
    std::fs::read_to_string("/proc/mounts").is_ok_and(|m| {
        m.lines()
            .any(|l| l.split_whitespace().nth(1) == Some(DEBUGFS) && l.contains("debugfs"))
    })
}

impl Probe {
    pub fn detect() -> Probe {
        let root = nix::unistd::geteuid().is_root();
        let mounted = debugfs_mounted();
        let sched_dir = Path::new(DEBUGFS).join("sched");
        let sched_dir = (mounted && sched_dir.is_dir()).then_some(sched_dir);
        let features_path = match &sched_dir {
            Some(d) => Some(d.join("features")),
            None if mounted && Path::new(DEBUGFS).join("sched_features").exists() => {
                Some(Path::new(DEBUGFS).join("sched_features"))
            }
            None => None,
        };
        let debugfs_write = Self::probe_debugfs_write(root, mounted, features_path.as_deref());
        let rt_root = Path::new(CGROUP_V1_CPU).join("cpu.rt_runtime_us");
        Probe {
            root,
            kernel: kernel_version(),
            debugfs_mounted: mounted,
            sched_dir,
            features_path,
            debugfs_write,
            rt_group_root: rt_root.exists().then_some(rt_root),
            uclamp: Path::new(SYSCTL).join("sched_util_clamp_min").exists(),
        }
    }

    fn probe_debugfs_write(
        root: bool,
        mounted: bool,
        features: Option<&Path>,
    ) -> Result<(), String> {
        if !root {
            return Err("not root".into());
        }
        if !mounted {
            return Err(format!(
                "debugfs is not mounted - mount it with `mount -t debugfs none {DEBUGFS}` (or pass --mount-debugfs, undone at exit)"
            ));
        }
        let Some(path) = features else {
            return Err("this kernel has no scheduler debugfs files".into());
        };
        // Opening for write changes nothing; lockdown refuses the open itself.
        match std::fs::OpenOptions::new().write(true).open(path) {
            Ok(_) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => Err(lockdown_reason()),
            Err(e) => Err(format!("cannot open {}: {e}", path.display())),
        }
    }

    /// Why per-task uclamp cannot be used here, if it cannot.
    pub fn uclamp_reason(&self) -> Option<String> {
        (!self.uclamp).then(|| "CONFIG_UCLAMP_TASK is off in this kernel".to_string())
    }

    /// Why a fair task's custom slice cannot be set here, if it cannot.
    pub fn slice_reason(&self) -> Option<String> {
        (self.kernel < (6, 12)).then(|| {
            format!(
                "custom slices need Linux 6.12+ (this is {}.{})",
                self.kernel.0, self.kernel.1
            )
        })
    }
}

/// "kernel lockdown (integrity) blocks debugfs writes", with the mode when securityfs says it.
fn lockdown_reason() -> String {
    let mode = read_trim(Path::new("/sys/kernel/security/lockdown")).and_then(|s| {
        let start = s.find('[')?;
        let end = s[start..].find(']')?;
        Some(s[start + 1..start + end].to_string())
    });
    match mode {
        Some(m) => format!("kernel lockdown ({m}) blocks debugfs writes"),
        None => {
            "kernel lockdown blocks debugfs writes (EPERM even for root, see kernel_lockdown(7))"
                .into()
        }
    }
}

/// Mount debugfs for this run; journaled once it is mounted (a mount that failed leaves
/// nothing to undo), so it is unmounted again at exit.
pub fn mount_debugfs(journal: &mut Journal) -> Result<bool, String> {
    if debugfs_mounted() {
        return Ok(false);
    }
    nix::mount::mount(
        Some("none"),
        DEBUGFS,
        Some("debugfs"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .map_err(|e| {
        format!(
            "mounting debugfs on {DEBUGFS} failed: {}",
            explain(e, WriteKind::File)
        )
    })?;
    if let Err(e) = journal.record_mount(Path::new(DEBUGFS), "debugfs") {
        // Unjournaled, it would outlive a crash: undo it now.
        let _ = nix::mount::umount(DEBUGFS);
        return Err(format!("journal: {e:#}; debugfs unmounted again"));
    }
    Ok(true)
}

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
    FairServer { cpu: usize, field: &'static str },
}

/// Every `sys.` name, for error messages.
pub const NAMES: &str = "rt_runtime_us, rt_period_us, rr_timeslice_ms, autogroup, feature.NAME, base_slice_ns, migration_cost_ns, nr_migrate, preempt, fair_server.cpuN.runtime, fair_server.cpuN.period";

impl SysKnob {
    pub fn parse(name: &str) -> Result<SysKnob, String> {
        let unknown = || format!("unknown system knob \"sys.{name}\": system knobs are {NAMES}");
        Ok(match name {
            "rt_runtime_us" => SysKnob::RtRuntime,
            "rt_period_us" => SysKnob::RtPeriod,
            "rr_timeslice_ms" => SysKnob::RrTimeslice,
            "autogroup" | "autogroup_enabled" => SysKnob::Autogroup,
            "preempt" => SysKnob::Preempt,
            _ => {
                if let Some(f) = name.strip_prefix("feature.") {
                    if f.is_empty()
                        || !f
                            .chars()
                            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
                    {
                        return Err(format!(
                            "bad feature name \"{f}\": features are upper-case, like WA_IDLE"
                        ));
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
        }
    }

    fn is_debugfs(&self) -> bool {
        !matches!(
            self,
            SysKnob::RtRuntime | SysKnob::RtPeriod | SysKnob::RrTimeslice | SysKnob::Autogroup
        )
    }

    /// Which values are allowed, in words.
    pub fn allowed(&self) -> String {
        match self {
            SysKnob::RtRuntime => "-1 (no RT throttling; refused while RT spinners run) or 0..sched_rt_period_us, in us (1.. with RT group scheduling)".into(),
            SysKnob::RtPeriod => "1..2147483647 us, at least sched_rt_runtime_us".into(),
            SysKnob::RrTimeslice => "1..2147483647 ms (rounded to ticks), or default".into(),
            SysKnob::Autogroup => "0 or 1 (on/off)".into(),
            SysKnob::Feature(_) => "on or off".into(),
            SysKnob::Tunable("nr_migrate") => "1..2147483647".into(),
            SysKnob::Tunable(_) => "0..4294967295 ns".into(),
            SysKnob::Preempt => "none, voluntary, full, lazy (what the kernel offers)".into(),
            SysKnob::FairServer { field, .. } => format!("{field} in ns (runtime <= period)"),
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
pub fn get(knob: &SysKnob, probe: &Probe) -> Result<String, String> {
    match knob {
        SysKnob::Feature(name) => {
            let (all, _) = read_features(probe).ok_or_else(|| debugfs_reason(probe))?;
            all.iter()
                .find(|(n, _)| n == name)
                .map(|(_, on)| if *on { "on" } else { "off" }.to_string())
                .ok_or_else(|| features::missing_reason(name, &all))
        }
        SysKnob::Preempt => {
            let path = knob.path(probe).ok_or_else(|| debugfs_reason(probe))?;
            let text = std::fs::read_to_string(&path).map_err(|e| read_error(&path, e))?;
            current_choice(&text)
                .ok_or_else(|| format!("cannot read the preemption mode from \"{}\"", text.trim()))
        }
        _ => {
            let path = knob.path(probe).ok_or_else(|| debugfs_reason(probe))?;
            std::fs::read_to_string(&path)
                .map(|s| s.trim().to_string())
                .map_err(|e| read_error(&path, e))
        }
    }
}

fn read_error(path: &Path, e: std::io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::EPERM) => lockdown_reason(),
        Some(libc::ENOENT) => format!("this kernel has no {}", path.display()),
        _ => format!("cannot read {}: {e}", path.display()),
    }
}

/// `none (voluntary) full lazy` -> `voluntary`.
fn current_choice(text: &str) -> Option<String> {
    let start = text.find('(')?;
    let end = text[start..].find(')')?;
    Some(text[start + 1..start + end].to_string())
}

fn debugfs_reason(probe: &Probe) -> String {
    if !probe.debugfs_mounted {
        format!("debugfs is not mounted - mount it with `mount -t debugfs none {DEBUGFS}` (or pass --mount-debugfs, undone at exit)")
    } else {
        "this kernel has no scheduler debugfs files".into()
    }
}

/// Why `knob` cannot be written here, if it cannot.
pub fn why_not_writable(knob: &SysKnob, probe: &Probe) -> Option<String> {
    if !probe.root {
        return Some("not root".into());
    }
    if knob.is_debugfs() {
        if let Err(e) = &probe.debugfs_write {
            return Some(e.clone());
        }
    }
    match knob.path(probe) {
        None => Some(debugfs_reason(probe)),
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
    ];
    knobs.extend(TUNABLES.iter().map(|(n, _)| SysKnob::Tunable(n)));
    knobs.push(SysKnob::Preempt);
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
    let mut out: Vec<KnobInfo> = knobs
        .iter()
        .map(|k| {
            let why = why_not_writable(k, probe);
            let value = get(k, probe);
            KnobInfo {
                name: k.name(),
                writable: why.is_none(),
                why_not: why.or_else(|| value.as_ref().err().cloned()),
                value: value.ok(),
                allowed: k.allowed(),
                path: k.path(probe).map(|p| p.display().to_string()),
                help: help(k),
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
            why_not: Some(debugfs_reason(probe)),
            path: None,
            help: "scheduler features".into(),
        }),
    }
    out
}

fn help(k: &SysKnob) -> String {
    match k {
        SysKnob::RtRuntime => {
            "RT tasks may run this many us of every period per CPU (RT throttling)".into()
        }
        SysKnob::RtPeriod => "the RT throttling period".into(),
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
    }
}

/// What a write needs to know about the run around it.
pub struct SetContext<'a> {
    pub journal: &'a mut Journal,
    pub probe: &'a Probe,
    /// RT (FIFO/RR) tasks of this run are alive: no throttling could freeze the machine.
    pub rt_tasks_running: bool,
    /// The user insisted on sched_rt_runtime_us=-1 anyway.
    pub allow_unthrottled_rt: bool,
}

fn parse_int(knob: &SysKnob, value: &str, min: i64, max: i64) -> Result<i64, String> {
    match value.trim().parse::<i64>() {
        Ok(v) if (min..=max).contains(&v) => Ok(v),
        _ => Err(format!(
            "{}={value}: allowed {}",
            knob.name(),
            knob.allowed()
        )),
    }
}

fn write_error(knob: &SysKnob, path: &Path, value: &str, e: std::io::Error) -> String {
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
    format!(
        "{}={value}: writing \"{value}\" to {} failed: {why}",
        knob.name(),
        path.display()
    )
}

/// Journal then write one file.
fn journaled_write(
    ctx: &mut SetContext,
    knob: &SysKnob,
    path: &Path,
    value: &str,
) -> Result<(), String> {
    ctx.journal
        .record_file(path)
        .map_err(|e| format!("{}: journal: {e:#}", knob.name()))?;
    // EBUSY can be transient (a task that just exited still holds RT or deadline
    // bandwidth): tries 100 ms apart for a second before reporting it.
    let mut tries = 0;
    loop {
        match write_file(path, value) {
            Err(e) if e.raw_os_error() == Some(libc::EBUSY) && tries < 10 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            result => return result.map_err(|e| write_error(knob, path, value, e)),
        }
    }
}

fn read_i64(path: &Path) -> Result<i64, String> {
    read_trim(path)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("cannot read {}", path.display()))
}

/// Check a value's form without touching the system (ranges that depend on other knobs,
/// like runtime <= period, are checked when written).
pub fn validate(knob: &SysKnob, value: &str) -> Result<(), String> {
    let ok = match knob {
        SysKnob::RtRuntime => value.parse::<i64>().is_ok_and(|v| v >= -1),
        SysKnob::RtPeriod => value
            .parse::<i64>()
            .is_ok_and(|v| (1..=i32::MAX as i64).contains(&v)),
        SysKnob::RrTimeslice => {
            value == "default"
                || value
                    .parse::<i64>()
                    .is_ok_and(|v| (1..=i32::MAX as i64).contains(&v))
        }
        SysKnob::Autogroup => matches!(value, "0" | "1" | "on" | "off" | "true" | "false"),
        SysKnob::Feature(_) => matches!(value, "on" | "off" | "1" | "0" | "true" | "false"),
        SysKnob::Tunable("nr_migrate") => value
            .parse::<i64>()
            .is_ok_and(|v| (1..=i32::MAX as i64).contains(&v)),
        SysKnob::Tunable(_) => value.parse::<u32>().is_ok(),
        SysKnob::Preempt => matches!(value, "none" | "voluntary" | "full" | "lazy"),
        SysKnob::FairServer { .. } => value.parse::<u64>().is_ok(),
    };
    if ok {
        Ok(())
    } else {
        Err(format!(
            "{}={value}: allowed {}",
            knob.name(),
            knob.allowed()
        ))
    }
}

/// Check system settings, applied in this order, against the machine as it is now:
/// RT runtime and period depend on each other and on RT group scheduling, so a value
/// out of range is found before anything starts (a usage error, whatever the machine's
/// current values are).
pub fn precheck<'a>(
    sets: impl IntoIterator<Item = (&'a SysKnob, &'a str)>,
    probe: &Probe,
) -> Result<(), String> {
    let mut runtime = read_i64(&Path::new(SYSCTL).join("sched_rt_runtime_us")).ok();
    let mut period = read_i64(&Path::new(SYSCTL).join("sched_rt_period_us")).ok();
    for (knob, value) in sets {
        validate(knob, value)?;
        let v = value.trim().parse::<i64>().ok();
        match (knob, v) {
            (SysKnob::RtRuntime, Some(v)) => {
                if let Some(p) = period.filter(|&p| v > p) {
                    return Err(format!(
                        "sys.rt_runtime_us={value}: allowed -1 or 0..{p} (sched_rt_period_us is {p})"
                    ));
                }
                if v == 0 && probe.rt_group_root.is_some() {
                    return Err(format!(
                        "sys.rt_runtime_us=0: allowed -1 or 1..{} here: with RT group scheduling the kernel refuses 0 for the root group (it would stop its own RT threads)",
                        period.unwrap_or(1_000_000)
                    ));
                }
                runtime = Some(v);
            }
            (SysKnob::RtPeriod, Some(v)) => {
                if let Some(r) = runtime.filter(|&r| r > v) {
                    return Err(format!(
                        "sys.rt_period_us={value}: allowed {r}..2147483647 (sched_rt_runtime_us is {r}; lower it first)"
                    ));
                }
                period = Some(v);
            }
            _ => {}
        }
    }
    Ok(())
}

/// Set a system knob; returns its value read back from the kernel.
pub fn set(knob: &SysKnob, value: &str, ctx: &mut SetContext) -> Result<String, String> {
    // A feature this kernel does not have is the more useful answer than lockdown.
    if let (SysKnob::Feature(name), Some((all, _))) = (knob, read_features(ctx.probe)) {
        if !all.iter().any(|(n, _)| n == name) {
            return Err(format!(
                "{}: {}",
                knob.name(),
                features::missing_reason(name, &all)
            ));
        }
    }
    if let Some(why) = why_not_writable(knob, ctx.probe) {
        return Err(format!("{} cannot be changed here: {why}", knob.name()));
    }
    let path = knob
        .path(ctx.probe)
        .ok_or_else(|| debugfs_reason(ctx.probe))?;
    match knob {
        SysKnob::RtRuntime => set_rt_runtime(ctx, value)?,
        SysKnob::RtPeriod => set_rt_period(ctx, value)?,
        SysKnob::RrTimeslice => {
            let v = if value == "default" {
                0
            } else {
                parse_int(knob, value, 1, i32::MAX as i64)?
            };
            journaled_write(ctx, knob, &path, &v.to_string())?;
        }
        SysKnob::Autogroup => {
            let v = match value {
                "1" | "on" | "true" => "1",
                "0" | "off" | "false" => "0",
                _ => {
                    return Err(format!(
                        "{}={value}: allowed {}",
                        knob.name(),
                        knob.allowed()
                    ))
                }
            };
            journaled_write(ctx, knob, &path, v)?;
        }
        SysKnob::Feature(name) => {
            let on = match value {
                "on" | "1" | "true" => true,
                "off" | "0" | "false" => false,
                _ => return Err(format!("{}={value}: allowed on or off", knob.name())),
            };
            let (all, _) = read_features(ctx.probe).ok_or_else(|| debugfs_reason(ctx.probe))?;
            let Some((_, was_on)) = all.iter().find(|(n, _)| n == name) else {
                return Err(format!(
                    "{}: {}",
                    knob.name(),
                    features::missing_reason(name, &all)
                ));
            };
            let undo = if *was_on {
                name.clone()
            } else {
                format!("NO_{name}")
            };
            ctx.journal
                .record_undo(&format!("feature:{name}"), &path, &undo)
                .map_err(|e| format!("{}: journal: {e:#}", knob.name()))?;
            let text = if on {
                name.clone()
            } else {
                format!("NO_{name}")
            };
            write_file(&path, &text).map_err(|e| write_error(knob, &path, &text, e))?;
        }
        SysKnob::Tunable(t) => {
            let max = if *t == "nr_migrate" {
                i32::MAX as i64
            } else {
                u32::MAX as i64
            };
            let v = parse_int(knob, value, if *t == "nr_migrate" { 1 } else { 0 }, max)?;
            journaled_write(ctx, knob, &path, &v.to_string())?;
        }
        SysKnob::Preempt => {
            let text = std::fs::read_to_string(&path).map_err(|e| read_error(&path, e))?;
            let offered: Vec<String> = text
                .split_whitespace()
                .map(|w| w.trim_matches(|c| c == '(' || c == ')').to_string())
                .collect();
            if !offered.iter().any(|o| o == value) {
                return Err(format!(
                    "sys.preempt={value}: this kernel offers {}",
                    offered.join(", ")
                ));
            }
            let old = current_choice(&text).unwrap_or_default();
            ctx.journal
                .record_undo(&path.display().to_string(), &path, &old)
                .map_err(|e| format!("{}: journal: {e:#}", knob.name()))?;
            write_file(&path, value).map_err(|e| write_error(knob, &path, value, e))?;
        }
        SysKnob::FairServer { .. } => {
            let v = parse_int(knob, value, 0, i64::MAX)?;
            journaled_write(ctx, knob, &path, &v.to_string())?;
        }
    }
    get(knob, ctx.probe)
}

/// sched_rt_runtime_us. With RT group scheduling the root cgroup may never get more
/// than the global runtime: lowering writes the cgroup first, raising the sysctl first.
fn set_rt_runtime(ctx: &mut SetContext, value: &str) -> Result<(), String> {
    let knob = SysKnob::RtRuntime;
    let sysctl = knob.path(ctx.probe).ok_or("no sched_rt_runtime_us")?;
    let period = read_i64(&Path::new(SYSCTL).join("sched_rt_period_us"))?;
    let new = parse_int(&knob, value, -1, period)?;
    if new == -1 && ctx.rt_tasks_running && !ctx.allow_unthrottled_rt {
        return Err(
            "sys.rt_runtime_us=-1 refused: it turns RT throttling off while this run's RT tasks spin, and a FIFO spinner per CPU can then freeze the machine; pass --allow-unthrottled-rt to insist"
                .into(),
        );
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
fn set_rt_period(ctx: &mut SetContext, value: &str) -> Result<(), String> {
    let knob = SysKnob::RtPeriod;
    let sysctl = knob.path(ctx.probe).ok_or("no sched_rt_period_us")?;
    let runtime = read_i64(&Path::new(SYSCTL).join("sched_rt_runtime_us"))?;
    let new = parse_int(&knob, value, runtime.max(1), i32::MAX as i64)?;
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

/// System-wide knob state for one schedlab process: what the machine allows, and the
/// journal that restores every change (also when dropped).
pub struct SystemKnobs {
    pub journal: Journal,
    pub probe: Probe,
    pub allow_unthrottled_rt: bool,
}

impl SystemKnobs {
    pub fn new(journal_path: PathBuf) -> SystemKnobs {
        SystemKnobs {
            journal: Journal::new(journal_path),
            probe: Probe::detect(),
            allow_unthrottled_rt: false,
        }
    }

    /// Mount debugfs for this run (undone at exit) and look at the machine again.
    pub fn mount_debugfs(&mut self) -> Result<(), String> {
        mount_debugfs(&mut self.journal)?;
        self.probe = Probe::detect();
        Ok(())
    }

    /// Set a system knob; `rt_running` says whether RT spinners are alive.
    pub fn set(&mut self, knob: &SysKnob, value: &str, rt_running: bool) -> Result<String, String> {
        let mut ctx = SetContext {
            journal: &mut self.journal,
            probe: &self.probe,
            rt_tasks_running: rt_running,
            allow_unthrottled_rt: self.allow_unthrottled_rt,
        };
        set(knob, value, &mut ctx)
    }

    pub fn restore(&mut self) -> Vec<Restored> {
        self.journal.restore()
    }

    pub fn journal_path(&self) -> &Path {
        self.journal.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_list_the_rest() {
        for name in [
            "rt_runtime_us",
            "rt_period_us",
            "rr_timeslice_ms",
            "autogroup",
            "feature.WA_IDLE",
            "base_slice_ns",
            "migration_cost_ns",
            "nr_migrate",
            "preempt",
            "fair_server.cpu1.runtime",
        ] {
            let k = SysKnob::parse(name).expect(name);
            assert_eq!(k.name(), format!("sys.{name}"));
        }
        let err = SysKnob::parse("turbo").unwrap_err();
        assert!(err.contains("rt_runtime_us, rt_period_us"), "{err}");
        assert!(SysKnob::parse("feature.wa idle")
            .unwrap_err()
            .contains("upper-case"));
        assert!(SysKnob::parse("fair_server.cpuX.runtime").is_err());
    }

    #[test]
    fn preempt_choice_is_the_one_in_parens() {
        assert_eq!(
            current_choice("none (voluntary) full lazy\n"),
            Some("voluntary".into())
        );
        assert_eq!(current_choice("none voluntary"), None);
    }

    #[test]
    fn debugfs_knobs_say_how_to_mount_when_unmounted() {
        let probe = Probe {
            root: true,
            kernel: (6, 18),
            debugfs_mounted: false,
            sched_dir: None,
            features_path: None,
            debugfs_write: Err("x".into()),
            rt_group_root: None,
            uclamp: false,
        };
        let why =
            why_not_writable(&SysKnob::Tunable("base_slice_ns"), &probe).expect("not writable");
        assert_eq!(why, "x");
        assert!(get(&SysKnob::Feature("WA_IDLE".into()), &probe)
            .unwrap_err()
            .contains("mount -t debugfs"));
        assert_eq!(
            probe.uclamp_reason().as_deref(),
            Some("CONFIG_UCLAMP_TASK is off in this kernel")
        );
        let not_root = Probe {
            root: false,
            ..probe
        };
        assert_eq!(
            why_not_writable(&SysKnob::RtRuntime, &not_root).as_deref(),
            Some("not root")
        );
    }
}
