//! A system knob's value parsed into its typed form: the one place its form is checked.

use super::catalogue::SysKnob;
use crate::error::Invalid;

/// A value of the form its knob takes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SysValue {
    /// A number within the knob's own range (ranges that depend on other knobs, like
    /// runtime <= period, are checked against the machine when written).
    Int(i64),
    /// On or off (autogroup, a feature).
    Switch(bool),
    /// The kernel's default (sys.rr_timeslice_ms=default).
    Default,
    /// A preemption model (which ones this kernel offers is checked when written).
    Model(&'static str),
    /// A program to run (sys.sched_ext's scheduler), found when parsed.
    Program(std::path::PathBuf),
}

/// A system knob with a value of its form. Only `parse` makes one, so whatever takes a
/// `SysSetting` has a checked value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SysSetting {
    knob: SysKnob,
    value: SysValue,
    /// As the user wrote it, for messages.
    text: String,
}

const MODELS: [&str; 4] = ["none", "voluntary", "full", "lazy"];

fn int_in(text: &str, min: i64, max: i64) -> Option<SysValue> {
    text.parse::<i64>()
        .ok()
        .filter(|v| (min..=max).contains(v))
        .map(SysValue::Int)
}

fn switch(text: &str) -> Option<SysValue> {
    match text {
        "1" | "on" | "true" => Some(SysValue::Switch(true)),
        "0" | "off" | "false" => Some(SysValue::Switch(false)),
        _ => None,
    }
}

impl SysSetting {
    /// `knob=text` in its typed form, or "NAME=VALUE: allowed ..." saying what the knob
    /// takes.
    pub fn parse(knob: SysKnob, text: &str) -> Result<SysSetting, Invalid> {
        let i32_max = i32::MAX as i64;
        let value = match &knob {
            SysKnob::RtRuntime => int_in(text, -1, i64::MAX),
            SysKnob::RtPeriod => int_in(text, 1, i32_max),
            SysKnob::RrTimeslice if text == "default" => Some(SysValue::Default),
            SysKnob::RrTimeslice => int_in(text, 1, i32_max),
            SysKnob::Autogroup | SysKnob::Feature(_) => switch(text),
            SysKnob::Tunable("nr_migrate") => int_in(text, 1, i32_max),
            SysKnob::Tunable(_) => int_in(text, 0, u32::MAX as i64),
            SysKnob::Preempt => MODELS
                .iter()
                .find(|m| **m == text)
                .map(|m| SysValue::Model(m)),
            SysKnob::FairServer { .. } => int_in(text, 0, i64::MAX),
            SysKnob::SchedExt if text == "off" => Some(SysValue::Switch(false)),
            SysKnob::SchedExt => {
                let path = std::env::var_os("PATH");
                let program = crate::knob::scx::resolve(text, path.as_deref()).map_err(|why| {
                    let allowed = knob.allowed();
                    Invalid(format!("{}={text}: {why}; allowed {allowed}", knob.name()))
                })?;
                Some(SysValue::Program(program))
            }
            SysKnob::CpuDmaLatency if matches!(text, "off" | "default") => Some(SysValue::Default),
            SysKnob::CpuDmaLatency => int_in(text, 0, super::pmqos::DEFAULT_US.into()),
        };
        match value {
            Some(value) => Ok(SysSetting {
                knob,
                value,
                text: text.to_string(),
            }),
            None => Err(knob.not_allowed(text)),
        }
    }

    pub fn knob(&self) -> &SysKnob {
        &self.knob
    }

    pub fn value(&self) -> &SysValue {
        &self.value
    }

    /// The value as the user wrote it.
    pub fn text(&self) -> &str {
        &self.text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(knob: SysKnob, text: &str) -> Result<SysValue, Invalid> {
        SysSetting::parse(knob, text).map(|s| s.value)
    }

    #[test]
    fn each_knob_takes_its_form_and_says_what_it_allows() {
        assert_eq!(parse(SysKnob::RtRuntime, "-1"), Ok(SysValue::Int(-1)));
        assert_eq!(
            parse(SysKnob::RtRuntime, "-2"),
            Err(Invalid("sys.rt_runtime_us=-2: allowed -1 (no RT throttling; refused while RT spinners run) or 0..sched_rt_period_us, in us (1.. with RT group scheduling; 6.12+: at least the fair servers' share of the period, 50000 of 1000000 by default, else EBUSY)".to_string()))
        );
        assert!(parse(SysKnob::RtPeriod, "0").is_err());
        assert_eq!(
            parse(SysKnob::RrTimeslice, "default"),
            Ok(SysValue::Default)
        );
        assert_eq!(
            parse(SysKnob::Autogroup, "off"),
            Ok(SysValue::Switch(false))
        );
        assert_eq!(
            parse(SysKnob::Feature("WA_IDLE".into()), "maybe"),
            Err(Invalid(
                "sys.feature.WA_IDLE=maybe: allowed on or off".into()
            ))
        );
        assert_eq!(
            parse(SysKnob::Tunable("nr_migrate"), "0").map_err(|e| e.0.contains("1..2147483647")),
            Err(true)
        );
        assert_eq!(
            parse(SysKnob::Tunable("base_slice_ns"), "4294967295"),
            Ok(SysValue::Int(u32::MAX as i64))
        );
        assert!(parse(SysKnob::Tunable("base_slice_ns"), "4294967296").is_err());
        assert_eq!(parse(SysKnob::Preempt, "full"), Ok(SysValue::Model("full")));
        assert!(parse(SysKnob::Preempt, "rt").is_err());
        let fair = SysKnob::FairServer {
            cpu: 0,
            field: "runtime",
        };
        assert!(parse(fair.clone(), "-1").is_err());
        let s = SysSetting::parse(fair.clone(), "50000000").expect("fair server");
        assert_eq!((s.knob(), s.text()), (&fair, "50000000"));
        let qos = SysKnob::CpuDmaLatency;
        assert_eq!(parse(qos.clone(), "0"), Ok(SysValue::Int(0)));
        assert_eq!(parse(qos.clone(), "off"), Ok(SysValue::Default));
        assert_eq!(parse(qos.clone(), "default"), Ok(SysValue::Default));
        assert_eq!(
            parse(qos.clone(), "2000000000"),
            Ok(SysValue::Int(2_000_000_000))
        );
        for bad in ["-1", "2000000001", "0x10", "10us", ""] {
            assert_eq!(
                parse(qos.clone(), bad),
                Err(Invalid(format!("sys.cpu_dma_latency={bad}: allowed 0..2000000000 us (held while schedlab runs), or off/default (drops the request)"))),
                "{bad}"
            );
        }
    }

    #[test]
    fn sched_ext_takes_off_or_a_program_found_when_parsed() {
        assert_eq!(parse(SysKnob::SchedExt, "off"), Ok(SysValue::Switch(false)));
        match parse(SysKnob::SchedExt, "sh") {
            Ok(SysValue::Program(p)) => assert!(p.is_absolute() && p.ends_with("sh"), "{p:?}"),
            other => panic!("sh is on PATH: {other:?}"),
        }
        let err = parse(SysKnob::SchedExt, "scx_not_installed_here").unwrap_err();
        let no_program = "sys.sched_ext=scx_not_installed_here: no program \"scx_not_installed_here\" on PATH; allowed off, or an scx scheduler program";
        assert!(err.0.starts_with(no_program), "{err}");
        let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/Cargo.toml");
        assert!(parse(SysKnob::SchedExt, manifest).is_err_and(|e| e
            .0
            .contains("/Cargo.toml is not an executable file; allowed off")));
    }
}
