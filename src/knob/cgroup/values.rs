//! The cgroup knobs' value grammar: weight, shares, quota, idle, RT runtime, and the
//! conversions between v1 and v2 shapes.

use crate::error::Invalid;

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
pub(super) fn weight_to_shares(weight: u64) -> u64 {
    (weight * 1024 / 100).max(SHARES_MIN)
}

/// v2 cpu.weight for v1-style shares.
pub(super) fn shares_to_weight(shares: u64) -> u64 {
    (shares * 100 / 1024).clamp(WEIGHT_MIN, WEIGHT_MAX)
}

/// Weight shown for v1 shares. Rounds, unlike [`shares_to_weight`], so that a weight set
/// on v1 reads back as itself: weight_to_shares truncates by less than one share.
pub(super) fn shares_as_weight(shares: u64) -> u64 {
    ((shares * 100 + 512) / 1024).clamp(WEIGHT_MIN, WEIGHT_MAX)
}

/// Weight shown for v2 cpu.weight when asked in shares.
pub(super) fn weight_as_shares(weight: u64) -> u64 {
    (weight * 1024 / 100).clamp(SHARES_MIN, SHARES_MAX)
}

/// A duration in whole microseconds: a plain number is us; ns, us, ms, s suffixes and a
/// decimal fraction are accepted ("50ms", "0.5s", "50000").
pub(super) fn parse_us(text: &str) -> Option<u64> {
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

fn parse_int(knob: &str, value: &str, min: u64, max: u64, note: &str) -> Result<u64, Invalid> {
    let range = format!("allowed {min}..{max}{note}");
    let n: u64 = value
        .parse()
        .map_err(|_| Invalid(format!("{knob} \"{value}\" is not a whole number: {range}")))?;
    if !(min..=max).contains(&n) {
        return Err(Invalid(format!(
            "{knob} \"{value}\" is out of range: {range}"
        )));
    }
    Ok(n)
}

/// A parsed quota: `None` quota means no limit; `None` period keeps the current one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quota {
    pub(super) quota_us: Option<u64>,
    pub(super) period_us: Option<u64>,
}

impl Quota {
    pub(super) fn text(self) -> String {
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

pub(super) fn parse_quota(value: &str) -> Result<Quota, Invalid> {
    let bad = |why: &str| Invalid(format!("quota \"{value}\" {why}: {QUOTA_HELP}"));
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

/// A cgroup knob's value in its typed form. [`CgroupValue::parse`] is the one place a
/// value is validated: a preset's, a `--set`'s and a live change's; writing it and
/// keeping it in the preset take it as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupValue {
    Weight(u64),
    Shares(u64),
    Quota(Quota),
    Idle(bool),
    RtRuntimeUs(u64),
}

impl CgroupValue {
    /// Parse `value` for `knob` without touching the system, or a one-line error naming
    /// the knob, the bad value and the allowed range.
    pub fn parse(knob: &str, value: &str) -> Result<CgroupValue, Invalid> {
        let value = value.trim();
        Ok(match knob {
            "weight" => CgroupValue::Weight(parse_int(
                knob,
                value,
                WEIGHT_MIN,
                WEIGHT_MAX,
                " (100 is the default)",
            )?),
            "shares" => CgroupValue::Shares(parse_int(
                knob,
                value,
                SHARES_MIN,
                SHARES_MAX,
                " (1024 is the default)",
            )?),
            "quota" => CgroupValue::Quota(parse_quota(value)?),
            "idle" => CgroupValue::Idle(
                parse_int(knob, value, 0, 1, " (1 makes the group SCHED_IDLE-like)")? == 1,
            ),
            "rt_runtime_us" => CgroupValue::RtRuntimeUs(parse_rt_runtime(value)?),
            _ => return Err(Invalid(unknown_knob(knob))),
        })
    }

    /// The knob this is a value of.
    pub fn knob(self) -> &'static str {
        match self {
            CgroupValue::Weight(_) => "weight",
            CgroupValue::Shares(_) => "shares",
            CgroupValue::Quota(_) => "quota",
            CgroupValue::Idle(_) => "idle",
            CgroupValue::RtRuntimeUs(_) => "rt_runtime_us",
        }
    }
}

/// The value's normal text: what a preset listing and a report show.
impl std::fmt::Display for CgroupValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            CgroupValue::Weight(n) | CgroupValue::Shares(n) | CgroupValue::RtRuntimeUs(n) => {
                write!(f, "{n}")
            }
            CgroupValue::Quota(q) => f.write_str(&q.text()),
            CgroupValue::Idle(on) => f.write_str(if on { "1" } else { "0" }),
        }
    }
}

fn parse_rt_runtime(value: &str) -> Result<u64, Invalid> {
    let range = "allowed 0..the group's cpu.rt_period_us (1000000 by default), in us or with a unit like \"300ms\"";
    let us = parse_us(value).ok_or_else(|| {
        Invalid(format!(
            "rt_runtime_us \"{value}\" is not a duration in whole us: {range}"
        ))
    })?;
    if us > RT_RUNTIME_MAX_US {
        return Err(Invalid(format!(
            "rt_runtime_us \"{value}\" is out of range: {range}"
        )));
    }
    Ok(us)
}

/// The RT runtime given to cgroups, checked before anything starts: a new group's
/// cpu.rt_period_us is the system's sched_rt_period_us, and no group may have more
/// runtime than its period.
pub fn precheck(
    cgroups: &std::collections::BTreeMap<String, std::collections::BTreeMap<String, CgroupValue>>,
) -> Result<(), Invalid> {
    let period = std::fs::read_to_string("/proc/sys/kernel/sched_rt_period_us")
        .ok()
        .and_then(|s| s.trim().parse::<u64>().ok());
    let Some(period) = period else {
        return Ok(());
    };
    for (group, values) in cgroups {
        for value in values.values() {
            if let CgroupValue::RtRuntimeUs(us) = *value {
                if us > period {
                    return Err(Invalid(format!(
                        "cgroup.{group}.rt_runtime_us={us}: allowed 0..{period} (a new group's cpu.rt_period_us is sys.rt_period_us, {period})"
                    )));
                }
            }
        }
    }
    Ok(())
}

pub(super) fn unknown_knob(knob: &str) -> String {
    format!("unknown cgroup knob \"{knob}\": the knobs are {KNOBS}")
}

pub(super) fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value's normal text, as a preset keeps it.
    fn validate(knob: &str, value: &str) -> Result<String, Invalid> {
        CgroupValue::parse(knob, value).map(|v| v.to_string())
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
            let e = validate(knob, bad).expect_err(bad).to_string();
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
            let e = validate("quota", bad).expect_err(bad).to_string();
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
            let e = validate("rt_runtime_us", bad).expect_err(bad).to_string();
            assert!(e.starts_with(&format!("rt_runtime_us \"{bad}\"")), "{e}");
            assert!(e.contains("0..") && e.contains("rt_period_us"), "{e}");
        }
        let e = validate("cpu.shares", "5")
            .expect_err("unknown")
            .to_string();
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
}
