//! Lesson files: the built-ins embedded from `presets/lessons/`, the user's directory and
//! paths; parsed and validated against their preset with one-line errors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{anyhow, bail, Context, Result};
use serde::Deserialize;

use super::{Bound, Check, Lesson, Look, Metric, Pace, Step, COLUMNS, GRAPHS, METRICS};
use crate::error::Invalid;
use crate::facts::RtBandwidth;
use crate::lab::session::{route_typed, Routed};
use crate::preset::setting::{parse_duration, Setting};
use crate::preset::Preset;

/// The built-in lessons, one per built-in preset.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "pipe-wakeup",
        include_str!("../../presets/lessons/pipe-wakeup.toml"),
    ),
    (
        "pipe-affinity",
        include_str!("../../presets/lessons/pipe-affinity.toml"),
    ),
    (
        "yield-latency",
        include_str!("../../presets/lessons/yield-latency.toml"),
    ),
    (
        "rt-throttle",
        include_str!("../../presets/lessons/rt-throttle.toml"),
    ),
    (
        "nice-ladder",
        include_str!("../../presets/lessons/nice-ladder.toml"),
    ),
    (
        "parallel-build",
        include_str!("../../presets/lessons/parallel-build.toml"),
    ),
    (
        "cgroup-fairness",
        include_str!("../../presets/lessons/cgroup-fairness.toml"),
    ),
    (
        "eevdf-slice",
        include_str!("../../presets/lessons/eevdf-slice.toml"),
    ),
    (
        "deadline-cbs",
        include_str!("../../presets/lessons/deadline-cbs.toml"),
    ),
    (
        "load-balance",
        include_str!("../../presets/lessons/load-balance.toml"),
    ),
    (
        "priority-inversion",
        include_str!("../../presets/lessons/priority-inversion.toml"),
    ),
    (
        "cpu-bandwidth",
        include_str!("../../presets/lessons/cpu-bandwidth.toml"),
    ),
];

/// The rt-throttle lesson for kernels where only the fair server acts (6.12+ without RT
/// group scheduling): there the sysctl steps teach what does not happen.
pub const RT_THROTTLE_FAIR_SERVER: &str =
    include_str!("../../presets/lessons/rt-throttle-fair-server.toml");

/// The text of built-in lesson `name` for a kernel whose RT mechanism is `rt`.
pub fn builtin_text(name: &str, rt: RtBandwidth) -> Option<&'static str> {
    if name == "rt-throttle" && !rt.throttles() {
        return Some(RT_THROTTLE_FAIR_SERVER);
    }
    BUILTIN.iter().find(|(n, _)| *n == name).map(|(_, t)| *t)
}

/// A caption is read aloud from a projector: one or two sentences.
const CAPTION_MAX: usize = 320;
const STEP_MIN: Duration = Duration::from_secs(1);
const STEP_MAX: Duration = Duration::from_secs(600);
const STEPS_MAX: usize = 20;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLesson {
    name: String,
    title: String,
    preset: String,
    #[serde(default)]
    plot: bool,
    #[serde(default, rename = "step")]
    steps: Vec<RawStep>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    caption: String,
    question: Option<String>,
    #[serde(default)]
    set: Vec<String>,
    look: String,
    duration: String,
    #[serde(default)]
    if_not: Vec<String>,
    /// The oldest kernel ("6.12") on which the step can show its effect; older kernels
    /// skip it and show `skip_why` instead.
    needs_kernel: Option<String>,
    skip_why: Option<String>,
    /// Changes of `set` the kernel should refuse (the step shows admission control).
    #[serde(default)]
    expect_refused: Vec<String>,
    check: Option<RawCheck>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    metric: String,
    task: Option<String>,
    at_least: Option<f64>,
    at_most: Option<f64>,
    ratio_at_least: Option<f64>,
    ratio_at_most: Option<f64>,
    than_step: Option<usize>,
    settle: Option<String>,
    says: String,
}

/// `$XDG_CONFIG_HOME/schedlab/lessons`, or `~/.config/schedlab/lessons`.
pub fn user_dir() -> Option<PathBuf> {
    crate::preset::user_dir().and_then(|p| p.parent().map(|d| d.join("lessons")))
}

/// A lesson by name (user dir first, then built-in) or by path to a TOML file.
pub fn load(name_or_path: &str) -> Result<Lesson> {
    load_in(name_or_path, user_dir().as_deref())
}

/// [`load`] with an explicit user lesson directory.
pub fn load_in(name_or_path: &str, user_dir: Option<&Path>) -> Result<Lesson> {
    if name_or_path.contains('/') || name_or_path.ends_with(".toml") {
        return load_file(Path::new(name_or_path));
    }
    if let Some(dir) = user_dir {
        let p = dir.join(format!("{name_or_path}.toml"));
        if p.is_file() {
            return load_file(&p);
        }
    }
    if let Some(text) = builtin_text(name_or_path, RtBandwidth::running()) {
        return parse(text, "built-in");
    }
    let names: Vec<String> = list_in(user_dir)
        .into_iter()
        .filter_map(|r| r.ok())
        .map(|l| l.name)
        .collect();
    bail!(
        "unknown lesson \"{name_or_path}\": available are {} (or give a path to a .toml file)",
        names.join(", ")
    )
}

fn load_file(path: &Path) -> Result<Lesson> {
    let text = crate::input::read_bounded(path, crate::input::MAX_CONFIG_BYTES, "the lesson file")
        .with_context(|| format!("cannot read lesson file {}", path.display()))?;
    parse(&text, &path.display().to_string())
}

/// Every lesson: built-ins, replaced or joined by the user's own (a broken file is an
/// error entry).
pub fn list() -> Vec<Result<Lesson>> {
    list_in(user_dir().as_deref())
}

/// [`list`] with an explicit user lesson directory.
pub fn list_in(user_dir: Option<&Path>) -> Vec<Result<Lesson>> {
    let rt = RtBandwidth::running();
    let builtins = BUILTIN
        .iter()
        .filter_map(|(name, _)| builtin_text(name, rt))
        .map(|text| parse(text, "built-in"))
        .collect();
    crate::input::with_user_files(builtins, user_dir, load_file, |l: &Lesson| &l.name)
}

/// Parse and validate a lesson; its preset is loaded by name (user presets included).
pub fn parse(text: &str, source: &str) -> Result<Lesson> {
    parse_with(text, source, crate::preset::load)
}

/// [`parse`] with the preset found by `preset_of` (the tests' own presets).
pub fn parse_with(
    text: &str,
    source: &str,
    preset_of: impl Fn(&str) -> Result<Preset>,
) -> Result<Lesson> {
    let kernel = crate::facts::version(&crate::system::kernel_release());
    parse_on(text, source, preset_of, kernel)
}

/// [`parse_with`] as played on kernel `kernel` (major, minor): steps that need a newer
/// one are skipped.
pub fn parse_on(
    text: &str,
    source: &str,
    preset_of: impl Fn(&str) -> Result<Preset>,
    kernel: (u32, u32),
) -> Result<Lesson> {
    let raw: RawLesson = toml::from_str(text)
        .map_err(|e| anyhow!("lesson {source}: {}", crate::preset::locate(text, &e)))?;
    let preset = preset_of(&raw.preset).map_err(|e| anyhow!("lesson {source}: {e:#}"))?;
    from_raw(raw, preset, source, kernel).map_err(|e| anyhow!("lesson {source}: {e}"))
}

fn from_raw(
    raw: RawLesson,
    mut preset: Preset,
    source: &str,
    kernel: (u32, u32),
) -> Result<Lesson, Invalid> {
    let name_ok = !raw.name.is_empty()
        && raw.name.len() <= 32
        && raw
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !name_ok {
        return Err(Invalid(format!(
            "name \"{}\" is not allowed: use letters, digits, '-' and '_' (at most 32)",
            raw.name
        )));
    }
    if raw.title.trim().is_empty() {
        return Err(Invalid::new(
            "title is empty: say in a few words what it teaches",
        ));
    }
    if raw.steps.is_empty() || raw.steps.len() > STEPS_MAX {
        return Err(Invalid(format!(
            "has {} [[step]]s: allowed 1..{STEPS_MAX}",
            raw.steps.len()
        )));
    }
    let headline = preset.headline;
    // As a run decides it: by the tasks' policies at the start.
    let rt_tasks = preset.rt_tasks();
    let mut steps: Vec<Step> = Vec::new();
    let mut skipped: Vec<usize> = Vec::new();
    for (i, rs) in raw.steps.into_iter().enumerate() {
        let needs = needs_kernel(&rs).map_err(|e| Invalid(format!("step {}: {e}", i + 1)))?;
        let step = step_from_raw(rs, i, &mut preset, rt_tasks)
            .and_then(|step| preset.check_deadline_fields().map(|()| step))
            .map_err(|e| Invalid(format!("step {}: {e}", i + 1)))?;
        // Checked on every kernel; played only where it can show its effect.
        let compares_with = match step.check.as_ref().map(|c| c.bound) {
            Some(Bound::Ratio { step: n, .. }) if skipped.contains(&n) => Some(n),
            _ => None,
        };
        let why = match (needs, compares_with) {
            (Some((version, why)), _) if kernel < version => {
                Some(format!("needs kernel {}.{}+: {why}", version.0, version.1))
            }
            (_, Some(n)) => Some(format!(
                "it compares with step {}, which this kernel skips",
                n + 1
            )),
            _ => None,
        };
        let step = match why {
            Some(why) => {
                skipped.push(i);
                skip(step, &why)
            }
            None => step,
        };
        steps.push(step);
    }
    Ok(Lesson {
        name: raw.name,
        title: raw.title.trim().to_string(),
        preset: preset.name.clone(),
        headline,
        steps,
        plot: raw.plot,
        source: source.to_string(),
    })
}

/// What a skipped step's caption starts with.
pub const SKIPPED: &str = "Skipped on this kernel";

/// A kernel version (major, minor) and why older kernels cannot show the step.
type Requirement = ((u32, u32), String);

/// The step's kernel requirement, if it has one.
fn needs_kernel(rs: &RawStep) -> Result<Option<Requirement>, Invalid> {
    match (&rs.needs_kernel, &rs.skip_why) {
        (None, None) => Ok(None),
        (Some(v), Some(why)) => {
            let version = crate::facts::version(v);
            let why = why.split_whitespace().collect::<Vec<_>>().join(" ");
            if version.0 == 0 || !v.trim().chars().all(|c| c.is_ascii_digit() || c == '.') {
                return Err(Invalid(format!(
                    "needs_kernel \"{v}\" is not a kernel version: write it as 6.12"
                )));
            }
            if why.is_empty() || why.len() > CAPTION_MAX - 60 {
                return Err(Invalid(format!(
                    "skip_why must say in 1..{} characters why older kernels cannot show the step",
                    CAPTION_MAX - 60
                )));
            }
            Ok(Some((version, why)))
        }
        _ => Err(Invalid::new(
            "needs_kernel and skip_why go together: the version, and why older kernels cannot show the step",
        )),
    }
}

/// A step this kernel cannot show: its caption says why, it changes and checks nothing.
fn skip(step: Step, why: &str) -> Step {
    Step {
        caption: format!(
            "{SKIPPED} ({}): {why}",
            crate::system::kernel_release().trim()
        ),
        set: Vec::new(),
        undo: Vec::new(),
        check: None,
        expect_refused: Vec::new(),
        // A question waits for changes the skipped step no longer makes.
        question: None,
        ..step
    }
}

/// One step, with `preset` advanced by its settings (the next step's undo starts there).
fn step_from_raw(
    rs: RawStep,
    index: usize,
    preset: &mut Preset,
    rt_tasks: bool,
) -> Result<Step, Invalid> {
    let caption = rs.caption.split_whitespace().collect::<Vec<_>>().join(" ");
    if caption.is_empty() {
        return Err(Invalid::new(
            "caption is empty: one or two sentences for the class",
        ));
    }
    if caption.len() > CAPTION_MAX {
        return Err(Invalid(format!(
            "caption is {} characters: allowed at most {CAPTION_MAX} (one or two sentences; put more in the preset's note)",
            caption.len()
        )));
    }
    let question = rs.question.as_deref().map(question_of).transpose()?;
    if question.is_some() && rs.set.is_empty() {
        return Err(Invalid::new(
            "question is asked before the step's changes, and the step has no set: ask it in the caption, or give set",
        ));
    }
    let pace = parse_pace(&rs.duration)?;
    let look = parse_look(&rs.look)?;
    let (set, undo) = settings(&rs.set, preset, rt_tasks)?;
    let check = rs
        .check
        .map(|c| check_from_raw(c, index, pace, preset))
        .transpose()?;
    if rs.if_not.iter().any(|r| r.trim().is_empty()) {
        return Err(Invalid::new("if_not has an empty reason"));
    }
    let mut expect_refused = Vec::new();
    for text in &rs.expect_refused {
        let written = text.parse::<Setting>()?.to_string();
        if !set.iter().any(|s| s.to_string() == written) {
            return Err(Invalid(format!(
                "expect_refused \"{text}\" is not one of the step's set changes"
            )));
        }
        expect_refused.push(written);
    }
    Ok(Step {
        caption,
        question,
        set,
        undo,
        look,
        pace,
        check,
        if_not: rs.if_not.iter().map(|r| r.trim().to_string()).collect(),
        expect_refused,
    })
}

/// A step's question, on one line like the caption and as short.
fn question_of(text: &str) -> Result<String, Invalid> {
    let q = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if q.is_empty() {
        return Err(Invalid::new(
            "question is empty: ask what the class should predict, or leave it out",
        ));
    }
    if q.len() > CAPTION_MAX {
        return Err(Invalid(format!(
            "question is {} characters: allowed at most {CAPTION_MAX} (one sentence)",
            q.len()
        )));
    }
    Ok(q)
}

fn parse_pace(d: &str) -> Result<Pace, Invalid> {
    if d.trim() == "key" {
        return Ok(Pace::Key);
    }
    // The parser's message quotes the value already.
    let dur = parse_duration(d).map_err(|e| {
        Invalid(format!(
            "{e} (or \"key\": the step waits for the right arrow)"
        ))
    })?;
    if !(STEP_MIN..=STEP_MAX).contains(&dur) {
        return Err(Invalid(format!(
            "duration \"{d}\" is out of range: allowed 1s..10m, or \"key\""
        )));
    }
    Ok(Pace::Timed(dur))
}

fn parse_look(look: &str) -> Result<Look, Invalid> {
    let graphs = || GRAPHS.map(|(n, _)| format!("graph:{n}")).join(", ");
    let columns = || COLUMNS.map(|(n, _)| format!("column:{n}")).join(", ");
    let unknown = || {
        Invalid(format!(
            "look \"{look}\" is unknown: allowed are {}, {}",
            graphs(),
            columns()
        ))
    };
    match look.split_once(':') {
        Some(("graph", n)) => GRAPHS
            .iter()
            .find(|(name, _)| *name == n)
            .map(|(_, g)| Look::Graph(*g))
            .ok_or_else(unknown),
        Some(("column", n)) => COLUMNS
            .iter()
            .find(|(name, _)| *name == n)
            .map(|(_, c)| Look::Column(*c))
            .ok_or_else(unknown),
        _ => Err(unknown()),
    }
}

/// The step's settings, checked as the workbench would apply them live, and what puts
/// back the values they replace. A lesson never turns RT throttling off beside its
/// preset's RT tasks (`rt_tasks`): it cannot insist as `--allow-unthrottled-rt` does.
fn settings(
    texts: &[String],
    preset: &mut Preset,
    rt_tasks: bool,
) -> Result<(Vec<Setting>, Vec<Setting>), Invalid> {
    let online = crate::system::online_cpus();
    let before: BTreeMap<String, String> = preset.knob_table().into_iter().collect();
    let mut set = Vec::new();
    let mut undo = Vec::new();
    for text in texts {
        let s: Setting = text.parse()?;
        match route_typed(&s)? {
            Routed::Sys(set) if crate::knob::sys::unthrottled_with_rt(&set, rt_tasks, false) => {
                return Err(Invalid(format!(
                    "set \"{s}\": a lesson may not turn RT throttling off while its preset runs RT tasks (a FIFO spinner per CPU can then freeze the machine)"
                )));
            }
            // The machine's value is what undo puts back: the workbench knows it then.
            Routed::Sys(_) => {}
            Routed::Task | Routed::Cgroup { .. } => {
                let mut next = preset.clone();
                next.apply_all(std::slice::from_ref(&s))?;
                let (old, new) = (preset.tasks(&online)?, next.tasks(&online)?);
                let same = old.len() == new.len()
                    && old.iter().zip(&new).all(|(a, b)| {
                        a.name == b.name && a.program == b.program && a.poll_stdin == b.poll_stdin
                    });
                if !same {
                    return Err(Invalid(format!(
                        "set \"{s}\": changes which tasks run, so it cannot be changed live; use a knob such as policy, nice, cpus or a cgroup value"
                    )));
                }
                *preset = next;
                let key = format!("{}.{}", s.target, s.knob);
                if let Some(v) = before.get(&key).cloned().or_else(|| cgroup_default(&s)) {
                    undo.push(Setting {
                        value: v,
                        ..s.clone()
                    });
                }
            }
        }
        set.push(s);
    }
    Ok((set, undo))
}

/// A cgroup value the preset leaves at the kernel's default.
fn cgroup_default(s: &Setting) -> Option<String> {
    let knob = s.knob.rsplit_once('.').map(|(_, k)| k)?;
    let v = match (s.target.as_str(), knob) {
        ("cgroup", "weight") => "100",
        ("cgroup", "shares") => "1024",
        ("cgroup", "quota") => "max",
        ("cgroup", "idle") => "0",
        _ => return None,
    };
    Some(v.to_string())
}

fn check_from_raw(
    c: RawCheck,
    index: usize,
    pace: Pace,
    preset: &Preset,
) -> Result<Check, Invalid> {
    let metric = METRICS
        .iter()
        .find(|(n, _)| *n == c.metric)
        .map(|(_, m)| *m)
        .ok_or_else(|| {
            let names: Vec<&str> = METRICS.iter().map(|(n, _)| *n).collect();
            Invalid(format!(
                "check metric \"{}\" is unknown: allowed are {}",
                c.metric,
                names.join(", ")
            ))
        })?;
    if let Some(t) = &c.task {
        if metric == Metric::Headline {
            return Err(Invalid(format!(
                "check: metric headline is the preset's ({}), so it takes no task (\"{t}\")",
                preset.metric_task
            )));
        }
        let names: Vec<String> = preset
            .tasks(&crate::system::online_cpus())?
            .iter()
            .flat_map(|s| [s.name.clone(), s.group.clone()])
            .collect();
        if !names.contains(t) {
            let mut groups: Vec<&str> = preset.groups.iter().map(|g| g.name.as_str()).collect();
            groups.dedup();
            return Err(Invalid(format!(
                "check task \"{t}\" is unknown: tasks of {} are {}",
                preset.name,
                groups.join(", ")
            )));
        }
    }
    let bound = bound_from_raw(&c, index)?;
    let settle = match c.settle.as_deref() {
        Some(s) => parse_duration(s).map_err(|e| Invalid(format!("check settle \"{s}\": {e}")))?,
        None => Duration::from_secs(1),
    };
    if let Pace::Timed(d) = pace {
        if settle * 2 > d {
            return Err(Invalid(format!(
                "check settle {} leaves less than half of the step's {} to measure: allowed up to half",
                humantime::format_duration(settle),
                humantime::format_duration(d)
            )));
        }
    }
    if c.says.trim().is_empty() {
        return Err(Invalid::new(
            "check says nothing: say the expected effect in words",
        ));
    }
    Ok(Check {
        metric,
        task: c.task,
        bound,
        settle,
        says: c.says.trim().to_string(),
    })
}

fn bound_from_raw(c: &RawCheck, index: usize) -> Result<Bound, Invalid> {
    for (name, v) in [
        ("at_least", c.at_least),
        ("at_most", c.at_most),
        ("ratio_at_least", c.ratio_at_least),
        ("ratio_at_most", c.ratio_at_most),
    ] {
        if v.is_some_and(|v| !v.is_finite() || v < 0.0) {
            return Err(Invalid(format!("check {name} must be a number 0 or above")));
        }
    }
    let absolute = c.at_least.is_some() || c.at_most.is_some();
    let ratio = c.ratio_at_least.is_some() || c.ratio_at_most.is_some();
    let ordered = |lo: Option<f64>, hi: Option<f64>| match (lo, hi) {
        (Some(l), Some(h)) if l > h => Err(Invalid::new(
            "check: the lower bound is above the upper bound",
        )),
        _ => Ok(()),
    };
    match (absolute, ratio, c.than_step) {
        (true, false, None) => {
            ordered(c.at_least, c.at_most)?;
            Ok(Bound::Absolute {
                min: c.at_least,
                max: c.at_most,
            })
        }
        (false, true, Some(n)) if n >= 1 && n <= index => {
            ordered(c.ratio_at_least, c.ratio_at_most)?;
            Ok(Bound::Ratio {
                step: n - 1,
                min: c.ratio_at_least,
                max: c.ratio_at_most,
            })
        }
        (false, true, Some(n)) => Err(Invalid(format!(
            "check than_step {n}: allowed an earlier step, 1..{index}"
        ))),
        (false, true, None) => Err(Invalid::new(
            "check: ratio_at_least/ratio_at_most need than_step (the earlier step it compares with)",
        )),
        _ => Err(Invalid::new(
            "check needs at_least and/or at_most (an absolute bound), or ratio_at_least and/or ratio_at_most with than_step - not both kinds",
        )),
    }
}
