//! The preset file format: serde structs that mirror the TOML, and their conversion
//! into a checked [`Preset`].

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{anyhow, Result};
use serde::Deserialize;

use super::setting::{duration_ns, parse_duration, NiceLadder, Setting, MAX_COUNT};
use super::{valid_name, CpuChoice, Headline, Preset, TaskGroup, Variant};
use crate::error::Invalid;
use crate::knob::cgroup::CgroupValue;
use crate::policy::Policy;
use crate::workload::kinds::{resolve_params, WorkerKind};
use crate::workload::spec::Program;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPreset {
    name: String,
    summary: String,
    note: String,
    #[serde(default)]
    focus: Vec<String>,
    metric: RawMetric,
    #[serde(rename = "task")]
    tasks: Vec<RawTask>,
    #[serde(default, rename = "variant")]
    variants: Vec<RawVariant>,
    /// cgroups the preset creates: name -> cpu controller knob -> value.
    #[serde(default)]
    cgroup: BTreeMap<String, BTreeMap<String, toml::Value>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetric {
    headline: Headline,
    task: String,
    /// Start-up time the summaries leave out, e.g. "1s".
    warmup: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTask {
    name: String,
    worker: Option<WorkerKind>,
    command: Option<Vec<String>>,
    #[serde(default)]
    params: BTreeMap<String, i64>,
    count: Option<usize>,
    policy: Option<Policy>,
    priority: Option<u32>,
    /// A number, a list of numbers or a ladder string: read as any value, so a wrong one
    /// is told what is allowed (an untagged enum only said it matched no variant).
    nice: Option<toml::Value>,
    cpus: Option<String>,
    slice: Option<String>,
    runtime: Option<String>,
    deadline: Option<String>,
    period: Option<String>,
    stdin: Option<String>,
    stdout: Option<String>,
    process: Option<String>,
    cgroup: Option<String>,
    poll_stdin: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVariant {
    name: String,
    summary: String,
    set: Vec<String>,
}

/// Where a toml error is, as `line L, column C`.
pub(crate) fn locate(text: &str, err: &toml::de::Error) -> String {
    match err.span() {
        Some(span) => {
            let before = &text[..span.start.min(text.len())];
            let line = before.matches('\n').count() + 1;
            let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
            format!("line {line}, column {col}: {}", err.message().trim())
        }
        None => err.message().trim().to_string(),
    }
}

impl Preset {
    /// Parse and validate preset TOML. Errors name the source, where, and what is allowed.
    pub fn parse(text: &str, source: &str) -> Result<Preset> {
        let raw: RawPreset =
            toml::from_str(text).map_err(|e| anyhow!("preset {source}: {}", locate(text, &e)))?;
        from_raw(raw, source).map_err(|e| anyhow!("preset {source}: {e}"))
    }
}

fn from_raw(raw: RawPreset, source: &str) -> Result<Preset, Invalid> {
    if !valid_name(&raw.name) {
        return Err(Invalid(format!(
            "name \"{}\" is not allowed: use letters, digits, '-' and '_' (start with a letter)",
            raw.name
        )));
    }
    if raw.tasks.is_empty() {
        return Err(Invalid::new(
            "has no [[task]]: a preset needs at least one task",
        ));
    }
    let groups = groups_from_raw(raw.tasks)?;
    let variants = variants_from_raw(raw.variants)?;
    let cgroups = cgroups_from_raw(raw.cgroup)?;
    let warmup = warmup_from_raw(raw.metric.warmup.as_deref())?;
    let preset = Preset {
        name: raw.name,
        summary: raw.summary.trim().to_string(),
        // A note may say what this kernel does where kernels differ.
        note: crate::facts::expand(raw.note.trim(), crate::facts::RtBandwidth::running()),
        focus: raw.focus,
        headline: raw.metric.headline,
        metric_task: raw.metric.task,
        warmup,
        groups,
        variants,
        cgroups,
        source: source.to_string(),
    };
    preset.validate()?;
    preset.check_deadline_fields()?;
    check_variants(&preset)?;
    Ok(preset)
}

fn groups_from_raw(tasks: Vec<RawTask>) -> Result<Vec<TaskGroup>, Invalid> {
    tasks
        .into_iter()
        .map(|t| {
            let name = t.name.clone();
            group_from_raw(t).map_err(|e| Invalid(format!("task \"{name}\": {e}")))
        })
        .collect()
}

fn variants_from_raw(variants: Vec<RawVariant>) -> Result<Vec<Variant>, Invalid> {
    variants
        .into_iter()
        .map(|v| {
            let set: Result<Vec<Setting>, Invalid> = v.set.iter().map(|s| s.parse()).collect();
            Ok(Variant {
                set: set.map_err(|e| Invalid(format!("variant \"{}\": {e}", v.name)))?,
                name: v.name,
                summary: v.summary,
            })
        })
        .collect()
}

/// `[cgroup.NAME]` tables, with every knob value checked and normalised.
fn cgroups_from_raw(
    tables: BTreeMap<String, BTreeMap<String, toml::Value>>,
) -> Result<BTreeMap<String, BTreeMap<String, CgroupValue>>, Invalid> {
    let mut cgroups = BTreeMap::new();
    for (name, knobs) in tables {
        if !valid_name(&name) {
            return Err(Invalid(format!(
                "cgroup name \"{name}\" is not allowed: use letters, digits, '-' and '_'"
            )));
        }
        let mut values = BTreeMap::new();
        for (knob, v) in knobs {
            // cgroup files take text: `weight = 100` means the same as `weight = "100"`.
            let text = match v {
                toml::Value::String(s) => s,
                other => other.to_string(),
            };
            let value = CgroupValue::parse(&knob, &text)
                .map_err(|e| Invalid(format!("[cgroup.{name}]: {e}")))?;
            values.insert(knob, value);
        }
        cgroups.insert(name, values);
    }
    Ok(cgroups)
}

fn warmup_from_raw(warmup: Option<&str>) -> Result<Duration, Invalid> {
    let warmup = match warmup {
        Some(w) => parse_duration(w).map_err(|e| Invalid(format!("[metric] warmup: {e}")))?,
        None => Duration::ZERO,
    };
    if warmup > Duration::from_secs(60) {
        return Err(Invalid::new("[metric] warmup: allowed 0s..60s"));
    }
    Ok(warmup)
}

/// Every variant must apply cleanly, so a broken one fails at load, not in class.
fn check_variants(preset: &Preset) -> Result<(), Invalid> {
    for v in &preset.variants {
        let mut copy = preset.clone();
        copy.apply_all(&v.set)
            .and_then(|()| copy.check_deadline_fields())
            .map_err(|e| Invalid(format!("variant \"{}\": {e}", v.name)))?;
    }
    Ok(())
}

fn group_from_raw(t: RawTask) -> Result<TaskGroup, Invalid> {
    let program = program_from_raw(t.worker, t.command, &t.params)?;
    let nice = nice_from_raw(t.nice)?;
    let count = count_from_raw(&nice, t.count)?;
    let policy = t.policy.unwrap_or(Policy::Other);
    let opt_ns =
        |field: &str, v: &Option<String>| v.as_deref().map(|s| duration_ns(field, s)).transpose();
    Ok(TaskGroup {
        name: t.name,
        program,
        count,
        priority: t
            .priority
            .unwrap_or(if policy.is_realtime() { 1 } else { 0 }),
        policy,
        nice,
        cpus: t
            .cpus
            .as_deref()
            .map(CpuChoice::parse)
            .transpose()?
            .unwrap_or(CpuChoice::All),
        slice_ns: opt_ns("slice", &t.slice)?,
        dl_runtime_ns: opt_ns("runtime", &t.runtime)?,
        dl_deadline_ns: opt_ns("deadline", &t.deadline)?,
        dl_period_ns: opt_ns("period", &t.period)?,
        uclamp_min: None,
        uclamp_max: None,
        stdin: t.stdin,
        stdout: t.stdout,
        process: t.process,
        cgroup: t.cgroup,
        poll_stdin: t.poll_stdin.unwrap_or(false),
        instance_overrides: BTreeMap::new(),
    })
}

fn program_from_raw(
    worker: Option<WorkerKind>,
    command: Option<Vec<String>>,
    params: &BTreeMap<String, i64>,
) -> Result<Program, Invalid> {
    match (worker, command) {
        (Some(kind), None) => Ok(Program::Worker {
            kind,
            params: resolve_params(kind, params)?,
        }),
        (None, Some(argv)) if !argv.is_empty() => {
            if !params.is_empty() {
                return Err(Invalid::new("params apply to workers, not to a command"));
            }
            Ok(Program::Command(argv))
        }
        (None, Some(_)) => Err(Invalid::new("command is empty")),
        _ => Err(Invalid(format!(
            "needs exactly one of worker = \"KIND\" ({}) or command = [\"prog\", \"arg\"]",
            WorkerKind::ALLOWED
        ))),
    }
}

fn nice_from_raw(nice: Option<toml::Value>) -> Result<NiceLadder, Invalid> {
    let one = |v: &toml::Value| {
        match v {
        toml::Value::Integer(n) => i32::try_from(*n)
            .ok()
            .filter(|n| (-20..=20).contains(n))
            .ok_or_else(|| {
                Invalid(format!(
                    "nice {n} is out of range: allowed -20..19 (20 is clamped to 19)"
                ))
            }),
        other => Err(Invalid(format!(
            "nice = {other}: allowed a whole number -20..19, a list of them, or a ladder like \"-5..5:5\""
        ))),
    }
    };
    Ok(match nice {
        None => NiceLadder::One(0),
        Some(toml::Value::String(s)) => NiceLadder::parse(&s)?,
        Some(toml::Value::Array(v)) => {
            NiceLadder::Each(v.iter().map(one).collect::<Result<Vec<i32>, Invalid>>()?)
        }
        Some(v) => NiceLadder::One(one(&v)?),
    })
}

/// A ladder without a count has one instance per rung.
fn count_from_raw(nice: &NiceLadder, count: Option<usize>) -> Result<usize, Invalid> {
    let count = match (nice, count) {
        (NiceLadder::Each(v), None) => v.len(),
        (_, Some(c)) => c,
        (NiceLadder::One(_), None) => 1,
    };
    if count > MAX_COUNT {
        return Err(Invalid(format!(
            "count {count} is out of range: allowed 0..{MAX_COUNT}"
        )));
    }
    Ok(count)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_presets_fail_with_location_and_allowed_values() {
        let cases = [
            ("name = ", "line 1"),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\nworker='warp'\n",
                "line 9",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\nworker='spin'\npolicy='fast'\n",
                "line 10",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='b'\n[[task]]\nname='a'\nworker='spin'\n",
                "is not one of the tasks (a)",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\nworker='pipe-writer'\n",
                "needs stdout",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\nworker='pipe-writer'\nstdout='p'\n",
                "has no reader",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='latency'\ntask='a'\n[[task]]\nname='a'\nworker='spin'\n",
                "measures latency",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\nworker='spin'\ncolour='red'\n",
                "unknown field",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\nworker='spin'\n[[variant]]\nname='v'\nsummary='s'\nset=['a.nice=99']\n",
                "variant \"v\"",
            ),
            (
                "name='x'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\n",
                "exactly one of worker",
            ),
        ];
        for (text, want) in cases {
            let err = Preset::parse(text, "test.toml").unwrap_err().to_string();
            assert!(err.contains(want), "want {want:?} in: {err}");
            assert!(err.starts_with("preset test.toml"), "{err}");
        }
    }
}
