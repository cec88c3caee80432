//! Per-run cpu-controller cgroups (v1 or v2): create, set weight/quota/idle/RT runtime, move tasks.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use anyhow::{bail, Context};
use nix::errno::Errno;

use super::errno::{explain, WriteKind};
use crate::knob::journal::Journal;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupRoot {
    pub version: Version,
    pub mount: PathBuf,
}

/// Find the cpu controller: a v1 mount of type cgroup with option "cpu", else a cgroup2
/// mount whose cgroup.controllers lists "cpu". None if neither.
pub fn detect() -> Option<CgroupRoot> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    detect_from(&mounts, &|dir: &Path| {
        std::fs::read_to_string(dir.join("cgroup.controllers")).ok()
    })
}

/// Pure core of [`detect`]: `mounts` is /proc/mounts text; `controllers(path)` returns the
/// text of <path>/cgroup.controllers.
pub fn detect_from(
    mounts: &str,
    controllers: &dyn Fn(&Path) -> Option<String>,
) -> Option<CgroupRoot> {
    let rows: Vec<(&str, &str, &str)> = mounts
        .lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let _source = f.next()?;
            let target = f.next()?;
            let fstype = f.next()?;
            let options = f.next().unwrap_or("");
            Some((target, fstype, options))
        })
        .collect();
    // A v1 cpu hierarchy wins: on hybrid systems the v2 mount rarely has cpu, and when
    // both exist the kernel only lets one of them own the controller anyway.
    let v1 = rows
        .iter()
        .find(|(_, fstype, options)| *fstype == "cgroup" && options.split(',').any(|o| o == "cpu"));
    if let Some((target, _, _)) = v1 {
        return Some(CgroupRoot {
            version: Version::V1,
            mount: PathBuf::from(unescape_mount(target)),
        });
    }
    rows.iter()
        .filter(|(_, fstype, _)| *fstype == "cgroup2")
        .map(|(target, _, _)| PathBuf::from(unescape_mount(target)))
        .find(|mount| {
            controllers(mount).is_some_and(|text| text.split_whitespace().any(|c| c == "cpu"))
        })
        .map(|mount| CgroupRoot {
            version: Version::V2,
            mount,
        })
}

/// /proc/mounts writes space, tab, newline and backslash in paths as octal escapes.
fn unescape_mount(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let code = bytes[i + 1..i + 4]
                .iter()
                .fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
            if let Ok(byte) = u8::try_from(code) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The knob names a preset/user uses, the same on v1 and v2.
pub const KNOBS: &str = "weight, shares, quota, idle, rt_runtime_us";

const WEIGHT_MIN: u64 = 1;
const WEIGHT_MAX: u64 = 10_000;
const SHARES_MIN: u64 = 2;
const SHARES_MAX: u64 = 262_144;
/// The kernel's min_cfs_quota_period / max_cfs_quota_period, in us.
const PERIOD_MIN_US: u64 = 1_000;
const PERIOD_MAX_US: u64 = 1_000_000;
/// The kernel's max_cfs_runtime (MAX_BW: 2^44 - 1 us).
const QUOTA_MAX_US: u64 = (1 << 44) - 1;
/// Not the kernel's limit (that is the group's period) but keeps the arithmetic in range.
const RT_RUNTIME_MAX_US: u64 = i32::MAX as u64;

/// v1 cpu.shares for a v2-style weight (100 = 1024 shares).
fn weight_to_shares(weight: u64) -> u64 {
    (weight * 1024 / 100).max(SHARES_MIN)
}

/// v2 cpu.weight for v1-style shares.
fn shares_to_weight(shares: u64) -> u64 {
    (shares * 100 / 1024).clamp(WEIGHT_MIN, WEIGHT_MAX)
}

/// Weight shown for v1 shares. Rounds, unlike [`shares_to_weight`], so that a weight set
/// on v1 reads back as itself: weight_to_shares truncates by less than one share.
fn shares_as_weight(shares: u64) -> u64 {
    ((shares * 100 + 512) / 1024).clamp(WEIGHT_MIN, WEIGHT_MAX)
}

/// Weight shown for v2 cpu.weight when asked in shares.
fn weight_as_shares(weight: u64) -> u64 {
    (weight * 1024 / 100).clamp(SHARES_MIN, SHARES_MAX)
}

/// A duration in whole microseconds: a plain number is us; ns, us, ms, s suffixes and a
/// decimal fraction are accepted ("50ms", "0.5s", "50000").
fn parse_us(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let ns_per: u128 = match unit.trim() {
        "" | "us" | "µs" | "usec" => 1_000,
        "ns" | "nsec" => 1,
        "ms" | "msec" => 1_000_000,
        "s" | "sec" => 1_000_000_000,
        _ => return None,
    };
    let (int, frac) = number.split_once('.').unwrap_or((number, ""));
    if (int.is_empty() && frac.is_empty()) || frac.len() > 9 || frac.contains('.') {
        return None;
    }
    let int_v: u128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let frac_v: u128 = if frac.is_empty() {
        0
    } else {
        frac.parse::<u128>().ok()? * 10u128.pow(9 - u32::try_from(frac.len()).ok()?)
    };
    let frac_ns = frac_v * ns_per;
    if !frac_ns.is_multiple_of(1_000_000_000) {
        return None;
    }
    let ns = int_v
        .checked_mul(ns_per)?
        .checked_add(frac_ns / 1_000_000_000)?;
    if !ns.is_multiple_of(1_000) {
        return None;
    }
    u64::try_from(ns / 1_000).ok()
}

fn parse_int(knob: &str, value: &str, min: u64, max: u64, note: &str) -> Result<u64, String> {
    let range = format!("allowed {min}..{max}{note}");
    let n: u64 = value
        .parse()
        .map_err(|_| format!("{knob} \"{value}\" is not a whole number: {range}"))?;
    if !(min..=max).contains(&n) {
        return Err(format!("{knob} \"{value}\" is out of range: {range}"));
    }
    Ok(n)
}

/// A parsed quota: `None` quota means no limit; `None` period keeps the current one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Quota {
    quota_us: Option<u64>,
    period_us: Option<u64>,
}

impl Quota {
    fn text(self) -> String {
        match (self.quota_us, self.period_us) {
            (None, None) => "max".to_string(),
            (None, Some(p)) => format!("max/{p}"),
            (Some(q), Some(p)) => format!("{q}/{p}"),
            (Some(q), None) => q.to_string(),
        }
    }
}

const QUOTA_HELP: &str = "allowed \"max\" or \"QUOTA/PERIOD\" like \"50ms/100ms\" or \"50000/100000\" (us), \
                          period 1ms..1s, quota at least 1ms (more than the period spans several CPUs)";

fn parse_quota(value: &str) -> Result<Quota, String> {
    let bad = |why: &str| format!("quota \"{value}\" {why}: {QUOTA_HELP}");
    let (q, p) = match value.split_once('/') {
        Some((q, p)) => (q.trim(), Some(p.trim())),
        None => (value, None),
    };
    let period_us = match p {
        None => None,
        Some(p) => {
            let us = parse_us(p)
                .ok_or_else(|| bad("has a period that is not a duration in whole us"))?;
            if !(PERIOD_MIN_US..=PERIOD_MAX_US).contains(&us) {
                return Err(bad("has its period out of range"));
            }
            Some(us)
        }
    };
    if q == "max" {
        return Ok(Quota {
            quota_us: None,
            period_us,
        });
    }
    if period_us.is_none() {
        return Err(bad("needs a period"));
    }
    let quota = parse_us(q).ok_or_else(|| bad("has a quota that is not a duration in whole us"))?;
    if !(PERIOD_MIN_US..=QUOTA_MAX_US).contains(&quota) {
        return Err(bad("has its quota out of range"));
    }
    Ok(Quota {
        quota_us: Some(quota),
        period_us,
    })
}

/// Validate a value for a knob without touching the system; Ok(normalised value text) or a
/// one-line error naming the knob, the bad value and the allowed range.
pub fn validate(knob: &str, value: &str) -> Result<String, String> {
    let value = value.trim();
    match knob {
        "weight" => parse_int(knob, value, WEIGHT_MIN, WEIGHT_MAX, " (100 is the default)")
            .map(|n| n.to_string()),
        "shares" => parse_int(
            knob,
            value,
            SHARES_MIN,
            SHARES_MAX,
            " (1024 is the default)",
        )
        .map(|n| n.to_string()),
        "quota" => parse_quota(value).map(Quota::text),
        "idle" => parse_int(knob, value, 0, 1, " (1 makes the group SCHED_IDLE-like)")
            .map(|n| n.to_string()),
        "rt_runtime_us" => {
            let range = "allowed 0..the group's cpu.rt_period_us (1000000 by default), in us or with a unit like \"300ms\"";
            let us = parse_us(value).ok_or_else(|| {
                format!("rt_runtime_us \"{value}\" is not a duration in whole us: {range}")
            })?;
            if us > RT_RUNTIME_MAX_US {
                return Err(format!(
                    "rt_runtime_us \"{value}\" is out of range: {range}"
                ));
            }
            Ok(us.to_string())
        }
        _ => Err(unknown_knob(knob)),
    }
}

fn unknown_knob(knob: &str) -> String {
    format!("unknown cgroup knob \"{knob}\": the knobs are {KNOBS}")
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

fn errno_of(e: &std::io::Error) -> Errno {
    e.raw_os_error()
        .map_or(Errno::UnknownErrno, Errno::from_raw)
}

fn read_trimmed(path: &Path) -> Result<String, String> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .map_err(|e| {
            format!(
                "reading {}: {}",
                path.display(),
                explain(errno_of(&e), WriteKind::File)
            )
        })
}

fn read_num<T: std::str::FromStr>(path: &Path) -> Result<T, String> {
    let text = read_trimmed(path)?;
    text.parse()
        .map_err(|_| format!("reading {}: unexpected content \"{text}\"", path.display()))
}

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

    pub fn names(&self) -> Vec<String> {
        self.groups.iter().map(|(n, _)| n.clone()).collect()
    }

    fn group_dir(&self, group: &str) -> Result<&Path, String> {
        self.dir(group).ok_or_else(|| {
            let names = self.names();
            if names.is_empty() {
                format!("unknown cgroup \"{group}\": this preset has no cgroups")
            } else {
                format!(
                    "unknown cgroup \"{group}\": this preset's cgroups are {}",
                    names.join(", ")
                )
            }
        })
    }

    /// Write a knob (validated first) and return the value the kernel then holds.
    pub fn set(&self, group: &str, knob: &str, value: &str) -> Result<String, String> {
        let dir = self.group_dir(group)?;
        let normal = validate(knob, value)?;
        let v1 = self.root.version == Version::V1;
        match knob {
            "weight" | "shares" => {
                let n: u64 = normal.parse().map_err(|_| unknown_knob(knob))?;
                let (file, text) = match (v1, knob) {
                    (true, "weight") => ("cpu.shares", weight_to_shares(n)),
                    (true, _) => ("cpu.shares", n),
                    (false, "weight") => ("cpu.weight", n),
                    (false, _) => ("cpu.weight", shares_to_weight(n)),
                };
                let path = dir.join(file);
                write(&path, &text.to_string(), |errno| {
                    (errno == Errno::EINVAL
                        && read_trimmed(&dir.join("cpu.idle")).is_ok_and(|s| s == "1"))
                    .then(|| {
                        "the group is idle (idle = 1), which fixes its weight: set idle 0 first"
                            .to_string()
                    })
                })?;
            }
            "quota" => {
                let q = parse_quota(&normal)?;
                let why = |_: Errno| {
                    Some(
                        "period must be 1ms..1s and quota at least 1ms (and not below cpu.cfs_burst_us on v1)"
                            .to_string(),
                    )
                };
                if v1 {
                    // Period first: each write is checked against the other's current value,
                    // and an unlimited quota never conflicts with a period.
                    if let Some(p) = q.period_us {
                        write(&dir.join("cpu.cfs_period_us"), &p.to_string(), why)?;
                    }
                    let quota = q
                        .quota_us
                        .map_or_else(|| "-1".to_string(), |n| n.to_string());
                    write(&dir.join("cpu.cfs_quota_us"), &quota, why)?;
                } else {
                    let quota = q
                        .quota_us
                        .map_or_else(|| "max".to_string(), |n| n.to_string());
                    let text = match q.period_us {
                        Some(p) => format!("{quota} {p}"),
                        None => quota,
                    };
                    write(&dir.join("cpu.max"), &text, why)?;
                }
            }
            "idle" => {
                let path = dir.join("cpu.idle");
                if !path.exists() {
                    return Err(NO_IDLE.to_string());
                }
                write(&path, &normal, |_| None)?;
            }
            "rt_runtime_us" => {
                if !v1 {
                    return Err(RT_ONLY_V1.to_string());
                }
                let runtime: u64 = normal.parse().map_err(|_| unknown_knob(knob))?;
                self.set_rt_runtime(group, dir, runtime, value.trim())?;
            }
            _ => return Err(unknown_knob(knob)),
        }
        self.get(group, knob)
    }

    /// A child's RT runtime must fit in its parent's, and the base starts at 0: keep the
    /// base at exactly the sum its groups need, raising it before a child grows and
    /// lowering it after a child shrinks, so the root keeps every us nobody uses (a preset
    /// lowering the root's cpu.rt_runtime_us must not be blocked by idle budget here).
    fn set_rt_runtime(
        &self,
        group: &str,
        dir: &Path,
        runtime: u64,
        asked: &str,
    ) -> Result<(), String> {
        let file = dir.join("cpu.rt_runtime_us");
        if !file.exists() {
            return Err(NO_RT_GROUP.to_string());
        }
        let _serial = self.rt_lock.lock().unwrap_or_else(|e| e.into_inner());
        let period: u64 = read_num(&dir.join("cpu.rt_period_us"))?;
        if runtime > period {
            return Err(format!(
                "rt_runtime_us \"{asked}\" is out of range: allowed 0..{period} (the group's cpu.rt_period_us)"
            ));
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
            let _ = super::fs::write_file(&base_file, &settled.to_string());
        }
        written
    }

    /// Current value of a knob, read from the kernel (same shapes as `set` returns).
    pub fn get(&self, group: &str, knob: &str) -> Result<String, String> {
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
                    _ => Err(format!(
                        "reading {}: unexpected content \"{text}\"",
                        path.display()
                    )),
                }
            }
            "idle" => {
                let path = dir.join("cpu.idle");
                if !path.exists() {
                    return Err(NO_IDLE.to_string());
                }
                read_num(&path).map(|n: i64| n.to_string())
            }
            "rt_runtime_us" if !v1 => Err(RT_ONLY_V1.to_string()),
            "rt_runtime_us" => {
                let path = dir.join("cpu.rt_runtime_us");
                if !path.exists() {
                    return Err(NO_RT_GROUP.to_string());
                }
                read_num(&path).map(|n: i64| n.to_string())
            }
            _ => Err(unknown_knob(knob)),
        }
    }

    /// Move one thread into the group. v1 moves exactly the thread `tid`; v2 (outside
    /// threaded mode) only moves whole processes, so there `pid` and all its threads move.
    pub fn add_task(&self, group: &str, pid: i32, tid: i32) -> Result<(), String> {
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

/// Write `value` to `path`; a refusal becomes one line: what went where, the errno, and
/// why — `why` gives a knob-specific reason, else the generic one for file writes.
fn write(path: &Path, value: &str, why: impl Fn(Errno) -> Option<String>) -> Result<(), String> {
    super::fs::write_file(path, value).map_err(|e| {
        let errno = errno_of(&e);
        let text = match why(errno) {
            Some(reason) => format!("{errno:?} ({}): {reason}", errno.desc()),
            None => explain(errno, WriteKind::File),
        };
        format!("writing {value} to {}: {text}", path.display())
    })
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

/// cgroup v2 hands a controller to children only when the parent's subtree_control lists
/// it. At the mount root that is a global change, undone by writing "-cpu" (writing the
/// old content back would not disable anything), journaled before the write: "-cpu" on a
/// controller that is not enabled is a no-op, so a crash in between is harmless.
fn ensure_v2_cpu_enabled(mount: &Path, journal: &mut Journal) -> anyhow::Result<()> {
    let subtree = mount.join("cgroup.subtree_control");
    let text = std::fs::read_to_string(&subtree)
        .with_context(|| format!("reading {}", subtree.display()))?;
    if text.split_whitespace().any(|c| c == "cpu") {
        return Ok(());
    }
    journal
        .record_undo(&format!("{} cpu", subtree.display()), &subtree, "-cpu")
        .with_context(|| format!("journaling the undo of +cpu in {}", subtree.display()))?;
    enable_cpu(&subtree)
}

fn enable_cpu(subtree: &Path) -> anyhow::Result<()> {
    write(subtree, "+cpu", |errno| {
        (errno == Errno::EINVAL).then(|| {
            "the cpu controller cannot take every task below (with RT group scheduling, \
             real-time tasks outside the root cgroup block it; make them non-RT or move them \
             to the root)"
                .to_string()
        })
    })
    .map_err(anyhow::Error::msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn no_controllers(_: &Path) -> Option<String> {
        None
    }

    #[test]
    fn detects_this_machines_v1_cpu_mount() {
        let mounts = std::fs::read_to_string("/proc/mounts").expect("read /proc/mounts");
        let real = std::fs::read_to_string("/sys/fs/cgroup/cpu/cpu.shares").is_ok();
        let found = detect_from(&mounts, &no_controllers);
        if real {
            assert_eq!(
                found,
                Some(CgroupRoot {
                    version: Version::V1,
                    mount: PathBuf::from("/sys/fs/cgroup/cpu")
                })
            );
        }
        // The development machine's table, verbatim.
        let table = "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n\
            cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
            cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0\n\
            cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n\
            cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0\n\
            cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        let hugetlb_only = |_: &Path| Some("hugetlb\n".to_string());
        assert_eq!(
            detect_from(table, &hugetlb_only),
            Some(CgroupRoot {
                version: Version::V1,
                mount: PathBuf::from("/sys/fs/cgroup/cpu")
            })
        );
    }

    #[test]
    fn detects_a_combined_cpu_cpuacct_mount_but_not_cpuacct_or_cpuset_alone() {
        let table = "cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,nodev,noexec,relatime,cpuset 0 0\n\
            cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,nodev,noexec,relatime,cpu,cpuacct 0 0\n";
        assert_eq!(
            detect_from(table, &no_controllers),
            Some(CgroupRoot {
                version: Version::V1,
                mount: PathBuf::from("/sys/fs/cgroup/cpu,cpuacct")
            })
        );
        let without = "cgroup /sys/fs/cgroup/cpuacct cgroup rw,cpuacct 0 0\n\
            cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n";
        assert_eq!(detect_from(without, &no_controllers), None);
    }

    #[test]
    fn detects_pure_v2_only_with_cpu_in_its_controllers() {
        let table = "sysfs /sys sysfs rw 0 0\n\
            cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0\n";
        let with_cpu = |p: &Path| {
            assert_eq!(p, Path::new("/sys/fs/cgroup"));
            Some("cpuset cpu io memory hugetlb pids rdma misc\n".to_string())
        };
        assert_eq!(
            detect_from(table, &with_cpu),
            Some(CgroupRoot {
                version: Version::V2,
                mount: PathBuf::from("/sys/fs/cgroup")
            })
        );
        let without_cpu = |_: &Path| Some("cpuset io memory pids\n".to_string());
        assert_eq!(detect_from(table, &without_cpu), None);
        assert_eq!(detect_from(table, &no_controllers), None);
    }

    #[test]
    fn detects_nothing_in_an_empty_or_cgroupless_table() {
        assert_eq!(detect_from("", &no_controllers), None);
        let table = "proc /proc proc rw 0 0\n/dev/sda1 / ext4 rw 0 0\ngarbage\n";
        assert_eq!(
            detect_from(table, &|_: &Path| Some("cpu".to_string())),
            None
        );
    }

    #[test]
    fn mount_paths_are_unescaped() {
        let table = "cgroup /mnt/my\\040cg cgroup rw,cpu 0 0\n";
        assert_eq!(
            detect_from(table, &no_controllers).map(|r| r.mount),
            Some(PathBuf::from("/mnt/my cg"))
        );
    }

    #[test]
    fn weight_and_shares_map_both_ways() {
        assert_eq!(weight_to_shares(100), 1024);
        assert_eq!(weight_to_shares(50), 512);
        assert_eq!(weight_to_shares(1), 10);
        assert_eq!(weight_to_shares(10_000), 102_400);
        assert_eq!(shares_to_weight(1024), 100);
        assert_eq!(shares_to_weight(512), 50);
        assert_eq!(shares_to_weight(2), 1);
        assert_eq!(shares_to_weight(262_144), 10_000);
        assert_eq!(shares_to_weight(1000), 97);
        assert_eq!(weight_as_shares(1), 10);
        assert_eq!(weight_as_shares(10_000), 102_400);
        for w in WEIGHT_MIN..=WEIGHT_MAX {
            assert_eq!(
                shares_as_weight(weight_to_shares(w)),
                w,
                "weight {w} reads back on v1"
            );
        }
    }

    #[test]
    fn validates_weight_shares_idle() {
        assert_eq!(validate("weight", " 100 "), Ok("100".into()));
        assert_eq!(validate("weight", "1"), Ok("1".into()));
        assert_eq!(validate("weight", "10000"), Ok("10000".into()));
        assert_eq!(validate("shares", "2"), Ok("2".into()));
        assert_eq!(validate("shares", "262144"), Ok("262144".into()));
        assert_eq!(validate("idle", "0"), Ok("0".into()));
        assert_eq!(validate("idle", "1"), Ok("1".into()));
        for (knob, bad, range) in [
            ("weight", "0", "1..10000"),
            ("weight", "10001", "1..10000"),
            ("weight", "-5", "1..10000"),
            ("weight", "heavy", "1..10000"),
            ("shares", "1", "2..262144"),
            ("shares", "262145", "2..262144"),
            ("shares", "1.5", "2..262144"),
            ("idle", "2", "0..1"),
            ("idle", "yes", "0..1"),
        ] {
            let e = validate(knob, bad).expect_err(bad);
            assert!(e.starts_with(knob), "{e}");
            assert!(e.contains(&format!("\"{bad}\"")), "{e}");
            assert!(e.contains(range), "{e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn validates_quota() {
        assert_eq!(validate("quota", "max"), Ok("max".into()));
        assert_eq!(validate("quota", "max/100ms"), Ok("max/100000".into()));
        assert_eq!(validate("quota", "50ms/100ms"), Ok("50000/100000".into()));
        assert_eq!(validate("quota", "50000/100000"), Ok("50000/100000".into()));
        assert_eq!(validate("quota", "0.5s / 1s"), Ok("500000/1000000".into()));
        assert_eq!(validate("quota", "150ms/100ms"), Ok("150000/100000".into()));
        assert_eq!(validate("quota", "1000us/1ms"), Ok("1000/1000".into()));
        assert_eq!(validate("quota", "2000000ns/10ms"), Ok("2000/10000".into()));
        for bad in [
            "50ms",
            "500us/100ms",
            "50ms/2s",
            "50ms/500us",
            "half/100ms",
            "50ms/100",
            "1.0005ms/100ms",
            "",
            "50ms/100ms/1",
            "50 parsecs/100ms",
        ] {
            let e = validate("quota", bad).expect_err(bad);
            assert!(e.starts_with(&format!("quota \"{bad}\"")), "{e}");
            assert!(e.contains("1ms..1s"), "{e}");
            assert!(!e.contains('\n'));
        }
    }

    #[test]
    fn validates_rt_runtime_and_unknown_knobs() {
        assert_eq!(validate("rt_runtime_us", "0"), Ok("0".into()));
        assert_eq!(validate("rt_runtime_us", "300000"), Ok("300000".into()));
        assert_eq!(validate("rt_runtime_us", "300ms"), Ok("300000".into()));
        for bad in ["-1", "lots", "5000000000"] {
            let e = validate("rt_runtime_us", bad).expect_err(bad);
            assert!(e.starts_with(&format!("rt_runtime_us \"{bad}\"")), "{e}");
            assert!(e.contains("0..") && e.contains("rt_period_us"), "{e}");
        }
        let e = validate("cpu.shares", "5").expect_err("unknown");
        assert!(e.contains("\"cpu.shares\"") && e.contains(KNOBS), "{e}");
    }

    #[test]
    fn parses_durations() {
        assert_eq!(parse_us("50000"), Some(50_000));
        assert_eq!(parse_us("50ms"), Some(50_000));
        assert_eq!(parse_us("1s"), Some(1_000_000));
        assert_eq!(parse_us("1.5ms"), Some(1_500));
        assert_eq!(parse_us(".5s"), Some(500_000));
        assert_eq!(parse_us("1500ns"), None);
        assert_eq!(parse_us("1.5"), None);
        assert_eq!(parse_us("ms"), None);
        assert_eq!(parse_us("1..5ms"), None);
    }

    /// Fake cgroup directories in a tempdir: files are plain files, so each set's target is
    /// emptied first (a plain file is not truncated by the write the way a cgroup file
    /// replaces its value).
    fn fake(version: Version, files: &[(&str, &str)]) -> (tempfile::TempDir, Cgroups) {
        let tmp = tempfile::tempdir().expect("tempdir");
        let base = tmp.path().join("schedlab-1");
        let mut groups = Vec::new();
        for name in ["a", "b"] {
            let dir = base.join(name);
            std::fs::create_dir_all(&dir).expect("mkdir");
            for (file, text) in files {
                std::fs::write(dir.join(file), text).expect("write");
            }
            groups.push((name.to_string(), dir));
        }
        for (file, text) in files {
            std::fs::write(base.join(file), text).expect("write");
        }
        let cg = Cgroups {
            root: CgroupRoot {
                version,
                mount: tmp.path().to_path_buf(),
            },
            base,
            groups,
            rt_lock: Mutex::new(()),
        };
        (tmp, cg)
    }

    fn empty(cg: &Cgroups, group: &str, file: &str) {
        std::fs::write(cg.dir(group).expect("group").join(file), "").expect("truncate");
    }

    fn content(cg: &Cgroups, group: &str, file: &str) -> String {
        std::fs::read_to_string(cg.dir(group).expect("group").join(file)).expect("read")
    }

    #[test]
    fn v2_files_are_written_and_read_in_v2_shapes() {
        let (_tmp, cg) = fake(
            Version::V2,
            &[
                ("cpu.weight", "100\n"),
                ("cpu.max", "max 100000\n"),
                ("cpu.idle", "0\n"),
            ],
        );
        assert_eq!(cg.get("a", "weight"), Ok("100".into()));
        assert_eq!(cg.get("a", "shares"), Ok("1024".into()));
        assert_eq!(cg.get("a", "quota"), Ok("max".into()));
        assert_eq!(cg.get("a", "idle"), Ok("0".into()));
        empty(&cg, "a", "cpu.weight");
        assert_eq!(cg.set("a", "shares", "512"), Ok("512".into()));
        assert_eq!(content(&cg, "a", "cpu.weight"), "50");
        empty(&cg, "a", "cpu.weight");
        assert_eq!(cg.set("a", "weight", "300"), Ok("300".into()));
        assert_eq!(content(&cg, "a", "cpu.weight"), "300");
        empty(&cg, "a", "cpu.max");
        assert_eq!(cg.set("a", "quota", "20ms/50ms"), Ok("20000/50000".into()));
        assert_eq!(content(&cg, "a", "cpu.max"), "20000 50000");
        empty(&cg, "a", "cpu.max");
        assert_eq!(cg.set("a", "quota", "max/100ms"), Ok("max".into()));
        assert_eq!(content(&cg, "a", "cpu.max"), "max 100000");
        let e = cg
            .set("a", "rt_runtime_us", "1000")
            .expect_err("v2 has no RT groups");
        assert!(e.contains("only in cgroup v1"), "{e}");
        assert!(cg
            .get("a", "rt_runtime_us")
            .expect_err("v2")
            .contains("only in cgroup v1"));
    }

    #[test]
    fn v1_missing_files_and_unknown_names_get_clear_errors() {
        let (_tmp, cg) = fake(
            Version::V1,
            &[
                ("cpu.shares", "1024\n"),
                ("cpu.cfs_quota_us", "-1\n"),
                ("cpu.cfs_period_us", "100000\n"),
            ],
        );
        assert_eq!(cg.get("b", "weight"), Ok("100".into()));
        assert_eq!(cg.get("b", "quota"), Ok("max".into()));
        assert_eq!(cg.set("b", "idle", "1"), Err(NO_IDLE.into()));
        assert_eq!(cg.get("b", "idle"), Err(NO_IDLE.into()));
        assert_eq!(
            cg.set("b", "rt_runtime_us", "1000"),
            Err(NO_RT_GROUP.into())
        );
        assert_eq!(cg.get("b", "rt_runtime_us"), Err(NO_RT_GROUP.into()));
        assert_eq!(
            cg.set("c", "weight", "5"),
            Err("unknown cgroup \"c\": this preset's cgroups are a, b".into())
        );
        assert!(cg.get("a", "nice").expect_err("knob").contains(KNOBS));
        let e = cg.set("a", "weight", "0").expect_err("range");
        assert!(e.contains("1..10000"), "{e}");
        assert_eq!(cg.names(), vec!["a".to_string(), "b".to_string()]);
        assert!(cg.dir("a").is_some_and(|d| d.ends_with("schedlab-1/a")));
    }

    #[test]
    fn create_rejects_bad_and_duplicate_names_before_touching_anything() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = CgroupRoot {
            version: Version::V1,
            mount: tmp.path().join("nowhere"),
        };
        let mut journal = Journal::new(tmp.path().join("journal.jsonl")).allow_under(tmp.path());
        for names in [
            vec!["a b".to_string()],
            vec!["../x".into()],
            vec!["".into()],
            vec!["a".into(), "a".into()],
        ] {
            let e = Cgroups::create(root.clone(), &names, &mut journal).expect_err("bad names");
            assert!(e.to_string().contains("cgroup name"), "{e}");
        }
        assert!(journal.entries().is_empty());
        assert!(!tmp.path().join("journal.jsonl").exists());
    }

    #[test]
    fn v2_create_journals_minus_cpu_before_enabling_cpu_at_the_root() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let subtree = tmp.path().join("cgroup.subtree_control");
        std::fs::write(&subtree, "").expect("write");
        let root = CgroupRoot {
            version: Version::V2,
            mount: tmp.path().to_path_buf(),
        };
        let jpath = tmp.path().join("journal.jsonl");
        let mut journal = Journal::new(jpath.clone()).allow_under(tmp.path());
        // A plain directory has no cgroup.subtree_control, so enabling cpu in the base
        // fails: the failure path must still leave the undo journaled and the base gone.
        let e = Cgroups::create(root, &["a".to_string()], &mut journal).expect_err("fake fs");
        let base = tmp.path().join(format!("schedlab-{}", std::process::id()));
        let text = e.to_string();
        assert!(
            text.contains(&format!(
                "writing +cpu to {}",
                base.join("cgroup.subtree_control").display()
            )),
            "{text}"
        );
        assert!(!text.contains('\n'), "{text}");
        assert_eq!(std::fs::read_to_string(&subtree).expect("read"), "+cpu");
        assert!(!base.exists());
        use crate::knob::journal::Entry;
        assert_eq!(
            journal.entries(),
            &[
                Entry::File {
                    path: subtree.clone(),
                    old: "-cpu".into()
                },
                Entry::Dir { path: base }
            ]
        );
        std::fs::write(&subtree, "").expect("truncate");
        let restored = journal.restore();
        assert!(restored.iter().all(|r| r.result.is_ok()), "{restored:?}");
        assert_eq!(std::fs::read_to_string(&subtree).expect("read"), "-cpu");
        assert!(!jpath.exists());
    }

    #[test]
    fn v2_create_leaves_an_enabled_root_alone() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let subtree = tmp.path().join("cgroup.subtree_control");
        std::fs::write(&subtree, "cpu memory\n").expect("write");
        let mut journal = Journal::new(tmp.path().join("journal.jsonl")).allow_under(tmp.path());
        ensure_v2_cpu_enabled(tmp.path(), &mut journal).expect("already on");
        assert!(journal.entries().is_empty());
        assert_eq!(
            std::fs::read_to_string(&subtree).expect("read"),
            "cpu memory\n"
        );
    }

    // ---- real cgroup v1 tests: root only, one at a time ----

    static REAL: Mutex<()> = Mutex::new(());

    fn real_v1() -> Option<CgroupRoot> {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("skipped: real cgroup tests need root");
            return None;
        }
        match detect() {
            Some(root) if root.version == Version::V1 => Some(root),
            _ => {
                eprintln!("skipped: no cgroup v1 cpu controller here");
                None
            }
        }
    }

    /// Kills the child and restores the journal even when an assertion fails, in that order
    /// (a group with a live task cannot be removed).
    struct Guard {
        child: Option<std::process::Child>,
        journal: Journal,
        _tmp: tempfile::TempDir,
    }

    impl Guard {
        fn new() -> Guard {
            let tmp = tempfile::tempdir().expect("tempdir");
            let journal = Journal::new(tmp.path().join("journal.jsonl")).allow_under(tmp.path());
            Guard {
                child: None,
                journal,
                _tmp: tmp,
            }
        }

        fn finish(&mut self) -> Vec<crate::knob::journal::Restored> {
            if let Some(mut child) = self.child.take() {
                let _ = child.kill();
                let _ = child.wait();
            }
            self.journal.restore()
        }
    }

    impl Drop for Guard {
        fn drop(&mut self) {
            for r in self.finish() {
                if r.result.is_err() {
                    eprintln!("cleanup: {r}");
                }
            }
        }
    }

    fn proc_cgroup_path(pid: u32) -> Option<String> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
        text.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let _id = f.next()?;
            let controllers = f.next()?;
            let path = f.next()?;
            controllers
                .split(',')
                .any(|c| c == "cpu")
                .then(|| path.to_string())
        })
    }

    #[test]
    fn real_v1_create_set_get_move_and_restore() {
        let _serial = REAL.lock().unwrap_or_else(|e| e.into_inner());
        let Some(root) = real_v1() else { return };
        let root_rt =
            std::fs::read_to_string(root.mount.join("cpu.rt_runtime_us")).expect("root rt");
        let mut guard = Guard::new();
        let names = vec!["fast".to_string(), "slow".to_string()];
        let cg = Cgroups::create(root.clone(), &names, &mut guard.journal).expect("create");
        let base = cg.base().to_path_buf();
        assert_eq!(
            base,
            root.mount.join(format!("schedlab-{}", std::process::id()))
        );
        assert!(base.join("fast").is_dir() && base.join("slow").is_dir());
        assert_eq!(guard.journal.entries().len(), 3);
        assert_eq!(cg.version(), Version::V1);

        assert_eq!(cg.get("fast", "weight"), Ok("100".into()));
        assert_eq!(cg.set("fast", "weight", "50"), Ok("50".into()));
        assert_eq!(content(&cg, "fast", "cpu.shares").trim(), "512");
        assert_eq!(cg.set("slow", "shares", "2048"), Ok("2048".into()));
        assert_eq!(cg.get("slow", "weight"), Ok("200".into()));
        assert_eq!(cg.set("fast", "weight", "3"), Ok("3".into()));

        assert_eq!(cg.get("fast", "quota"), Ok("max".into()));
        assert_eq!(
            cg.set("fast", "quota", "50ms/100ms"),
            Ok("50000/100000".into())
        );
        assert_eq!(content(&cg, "fast", "cpu.cfs_quota_us").trim(), "50000");
        assert_eq!(
            cg.set("fast", "quota", "150ms/200ms"),
            Ok("150000/200000".into())
        );
        assert_eq!(cg.set("fast", "quota", "max"), Ok("max".into()));
        assert_eq!(content(&cg, "fast", "cpu.cfs_quota_us").trim(), "-1");

        assert_eq!(cg.set("slow", "idle", "1"), Ok("1".into()));
        let e = cg
            .set("slow", "weight", "10")
            .expect_err("idle group has no weight");
        assert!(e.contains("EINVAL") && e.contains("idle 0"), "{e}");
        assert_eq!(cg.set("slow", "idle", "0"), Ok("0".into()));

        assert_eq!(cg.get("fast", "rt_runtime_us"), Ok("0".into()));
        assert_eq!(
            cg.set("fast", "rt_runtime_us", "100ms"),
            Ok("100000".into())
        );
        assert_eq!(
            std::fs::read_to_string(base.join("cpu.rt_runtime_us"))
                .expect("base")
                .trim(),
            "100000"
        );
        assert_eq!(cg.set("slow", "rt_runtime_us", "50000"), Ok("50000".into()));
        assert_eq!(
            std::fs::read_to_string(base.join("cpu.rt_runtime_us"))
                .expect("base")
                .trim(),
            "150000"
        );
        assert_eq!(cg.set("fast", "rt_runtime_us", "0"), Ok("0".into()));
        assert_eq!(
            std::fs::read_to_string(base.join("cpu.rt_runtime_us"))
                .expect("base")
                .trim(),
            "50000"
        );
        let e = cg
            .set("fast", "rt_runtime_us", "2000000")
            .expect_err("above the period");
        assert!(e.contains("0..1000000"), "{e}");
        let e = cg
            .set("fast", "rt_runtime_us", "920000")
            .expect_err("more than the root has");
        assert!(e.contains("EINVAL") || e.contains("EBUSY"), "{e}");
        assert!(e.contains("root cgroup"), "{e}");
        assert_eq!(cg.get("fast", "rt_runtime_us"), Ok("0".into()));
        assert_eq!(
            std::fs::read_to_string(base.join("cpu.rt_runtime_us"))
                .expect("base")
                .trim(),
            "50000"
        );

        let child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("spawn sleep");
        let pid = child.id();
        guard.child = Some(child);
        let id = i32::try_from(pid).expect("pid");
        let me = std::process::id();
        cg.add_task("slow", id, id).expect("move into slow");
        assert_eq!(proc_cgroup_path(pid), Some(format!("/schedlab-{me}/slow")));

        // The kernel refuses FIFO inside a group without RT runtime; "slow" has some.
        let param = libc::sched_param { sched_priority: 1 };
        // SAFETY: a plain syscall on our own sleeping child with a valid param.
        let rc = unsafe { libc::sched_setscheduler(id, libc::SCHED_FIFO, &param) };
        assert_eq!(
            rc,
            0,
            "make the child FIFO: {}",
            std::io::Error::last_os_error()
        );
        let e = cg
            .add_task("fast", id, id)
            .expect_err("an RT task into a group without runtime");
        assert!(e.contains("EINVAL") && e.contains("rt_runtime_us"), "{e}");
        assert_eq!(proc_cgroup_path(pid), Some(format!("/schedlab-{me}/slow")));
        assert_eq!(cg.set("fast", "rt_runtime_us", "10000"), Ok("10000".into()));
        cg.add_task("fast", id, id)
            .expect("an RT task into a group with runtime");
        assert_eq!(proc_cgroup_path(pid), Some(format!("/schedlab-{me}/fast")));
        let e = cg.set("fast", "rt_runtime_us", "0").expect_err("busy");
        assert!(e.contains("EBUSY") && e.contains("real-time"), "{e}");
        assert_eq!(cg.get("fast", "rt_runtime_us"), Ok("10000".into()));
        assert_eq!(
            std::fs::read_to_string(base.join("cpu.rt_runtime_us"))
                .expect("base")
                .trim(),
            "60000"
        );

        let e = cg.add_task("nope", id, id).expect_err("unknown group");
        assert_eq!(
            e,
            "unknown cgroup \"nope\": this preset's cgroups are fast, slow"
        );

        let restored = guard.finish();
        assert_eq!(restored.len(), 3);
        assert!(restored.iter().all(|r| r.result.is_ok()), "{restored:?}");
        assert!(!base.exists());
        let root_rt_after =
            std::fs::read_to_string(root.mount.join("cpu.rt_runtime_us")).expect("root rt");
        assert_eq!(root_rt_after, root_rt);
    }

    #[test]
    fn real_v1_failed_create_removes_what_it_made() {
        let _serial = REAL.lock().unwrap_or_else(|e| e.into_inner());
        let Some(root) = real_v1() else { return };
        let mut guard = Guard::new();
        // "tasks" is a file of every v1 cgroup: the second mkdir fails after the first worked.
        let names = vec!["ok".to_string(), "tasks".to_string()];
        let e = Cgroups::create(root.clone(), &names, &mut guard.journal).expect_err("clash");
        assert!(e.to_string().contains("already exists"), "{e}");
        let base = root.mount.join(format!("schedlab-{}", std::process::id()));
        assert!(!base.exists(), "cleaned up at once");
        let restored = guard.finish();
        assert!(restored.iter().all(|r| r.result.is_ok()), "{restored:?}");
    }

    #[test]
    fn real_v1_groups_use_all_knob_names() {
        let _serial = REAL.lock().unwrap_or_else(|e| e.into_inner());
        let Some(root) = real_v1() else { return };
        let mut guard = Guard::new();
        let cg = Cgroups::create(root, &["g".to_string()], &mut guard.journal).expect("create");
        let mut seen = HashMap::new();
        for knob in KNOBS.split(", ") {
            seen.insert(knob, cg.get("g", knob).expect(knob));
        }
        assert_eq!(seen["weight"], "100");
        assert_eq!(seen["shares"], "1024");
        assert_eq!(seen["quota"], "max");
        assert_eq!(seen["idle"], "0");
        assert_eq!(seen["rt_runtime_us"], "0");
        let restored = guard.finish();
        assert!(restored.iter().all(|r| r.result.is_ok()), "{restored:?}");
    }
}
