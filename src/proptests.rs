//! Property tests of the parsers of what users hand schedlab: durations, presets and
//! `--set`s, lessons, recordings. Whatever the text, they answer Ok or an error, never
//! a panic; the case counts are kept small so the whole file takes a few seconds.

use std::time::Duration;

use proptest::prelude::*;
use proptest::test_runner::Config;

use crate::cpuset::CpuSet;
use crate::lab::record::{self, FileRecorder, Recorder};
use crate::preset::setting::{parse_duration, Setting, MAX_DURATION};
use crate::preset::Preset;

fn config(cases: u32) -> Config {
    Config {
        cases,
        // A failure is shown with its smallest input; no regression files in the tree.
        failure_persistence: None,
        ..Config::default()
    }
}

/// A unit as users write one, a wrong one, or none.
fn unit() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "", "s", "s", "s", "ms", "us", "µs", "ns", "m", "h", "d", "y", "sec", "x", " s", "s s",
    ])
}

/// A number as it may be written: whole, fractional, signed, huge, in exponent form.
fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<u64>().prop_map(|n| n.to_string()),
        any::<i64>().prop_map(|n| n.to_string()),
        any::<f64>().prop_map(|f| f.to_string()),
        (0u32..400).prop_map(|e| format!("1e{e}")),
        "[0-9]{15,30}",
        Just("NaN".to_string()),
        Just("inf".to_string()),
        Just("-0".to_string()),
    ]
}

/// A duration as a hostile file or command line may write one.
fn duration_text() -> impl Strategy<Value = String> {
    (number(), unit()).prop_map(|(n, u)| format!("{n}{u}"))
}

/// A value a hostile file or command line may give any field.
fn hostile() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => duration_text(),
        1 => (number(), number(), number()).prop_map(|(a, b, c)| format!("{a}..{b}:{c}")),
        1 => prop::collection::vec(number(), 1..5).prop_map(|v| v.join("/")),
        1 => "\\PC{0,12}",
        1 => ".{0,8}",
    ]
}

/// `text` with `cut` characters at `at` (both taken modulo its length) replaced by
/// `insert`.
fn spliced(text: &str, at: usize, cut: usize, insert: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let at = at % (chars.len() + 1);
    let end = (at + cut).min(chars.len());
    let mut out: String = chars[..at].iter().collect();
    out.push_str(insert);
    out.extend(&chars[end..]);
    out
}

/// A TOML string literal holding `s`.
fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn two_cpus() -> CpuSet {
    "0-1".parse().expect("cpu list")
}

const TASK_KNOBS: &[&str] = &[
    "policy",
    "priority",
    "nice",
    "cpus",
    "count",
    "slice",
    "runtime",
    "deadline",
    "period",
    "uclamp_min",
    "process",
];

proptest! {
    #![proptest_config(config(512))]

    #[test]
    fn a_duration_is_bounded_and_has_a_unit(n in number(), u in unit(), text in hostile()) {
        for s in [format!("{n}{u}"), text] {
            if let Ok(d) = parse_duration(&s) {
                prop_assert!(d <= MAX_DURATION, "{s:?} gave {d:?}");
                let bare = s.trim().parse::<f64>().is_ok();
                prop_assert!(!bare || d == Duration::ZERO, "bare {s:?} gave {d:?}");
            }
        }
    }
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn a_preset_with_hostile_fields_or_sets_parses_or_is_refused(
        preset in 0..crate::preset::BUILTIN.len(),
        field in prop::sample::select(TASK_KNOBS),
        value in hostile(),
        warmup in duration_text(),
        knob in prop::sample::select(TASK_KNOBS),
        set in hostile(),
    ) {
        let (_, builtin) = crate::preset::BUILTIN[preset];
        // The field under the first task; the warm-up under [metric] (one at a time: a
        // field of the wrong type stops the parse before the other is read).
        let with_field = builtin
            .replacen("[[task]]\n", &format!("[[task]]\n{field} = {}\n", toml_str(&value)), 1);
        let with_warmup = builtin
            .replacen("[metric]\n", &format!("[metric]\nwarmup = {}\n", toml_str(&warmup)), 1);
        for text in [with_field, with_warmup] {
            let _ = Preset::parse(&text, "proptest").map(|p| p.tasks(&two_cpus()));
        }
        let mut p = Preset::parse(builtin, "built-in").expect("a built-in parses");
        let task = p.groups.first().map(|g| g.name.clone()).unwrap_or_default();
        let s = Setting { target: task, knob: knob.to_string(), value: set };
        if p.apply_all(&[s]).is_ok() {
            let _ = p.tasks(&two_cpus());
        }
    }

    #[test]
    fn a_spliced_preset_parses_or_is_refused(
        preset in 0..crate::preset::BUILTIN.len(),
        at in any::<usize>(),
        cut in 0usize..16,
        insert in hostile(),
    ) {
        let (_, builtin) = crate::preset::BUILTIN[preset];
        if let Ok(p) = Preset::parse(&spliced(builtin, at, cut, &insert), "proptest") {
            let _ = p.tasks(&two_cpus());
        }
    }

    #[test]
    fn a_lesson_with_hostile_fields_parses_or_is_refused(
        lesson in 0..crate::lesson::BUILTIN.len(),
        duration in duration_text(),
        settle in duration_text(),
        set in hostile(),
        at in any::<usize>(),
        cut in 0usize..16,
        insert in hostile(),
    ) {
        let (_, builtin) = crate::lesson::BUILTIN[lesson];
        let step = |duration: &str, set: &str, settle: &str| {
            let step = format!(
                "[[step]]\ncaption = \"c\"\nlook = \"column:switches\"\nduration = {}\nset = [{}]\n[step.check]\nmetric = \"involuntary\"\ntask = \"writer\"\nat_least = 1\nsays = \"s\"\nsettle = {}\n",
                toml_str(duration),
                toml_str(set),
                toml_str(settle),
            );
            builtin.replacen("[[step]]\n", &format!("{step}\n[[step]]\n"), 1)
        };
        let preset_of = |name: &str| crate::preset::load_in(name, None);
        // One hostile field at a time: the first refused stops the parse.
        for text in [
            step(&duration, "writer.nice=1", "1s"),
            step("key", &set, "1s"),
            step("10s", "writer.nice=1", &settle),
            spliced(builtin, at, cut, &insert),
        ] {
            let _ = crate::lesson::parse_with(&text, "proptest", preset_of);
        }
    }
}

/// A real recording: the header, a start, system knobs, batches and knob changes.
fn recording_text() -> String {
    use crate::lab::fixtures::{batch, knobs, started};
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("r.jsonl");
    {
        let mut rec = FileRecorder::create(&path).expect("create");
        rec.started(1_000, &started());
        rec.system_knobs(&knobs());
        for t in 0..3 {
            rec.batch(&batch(t));
        }
        rec.knob("fair.policy=batch", &Ok("applied to fair".into()));
    }
    std::fs::read_to_string(&path).expect("read")
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn a_spliced_recording_reads_or_is_refused(
        edits in prop::collection::vec((any::<usize>(), 0usize..16, prop_oneof![
            number(),
            hostile(),
            Just("\n".to_string()),
        ]), 1..4),
    ) {
        let mut text = recording_text();
        for (at, cut, insert) in &edits {
            text = spliced(&text, *at, *cut, insert);
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.jsonl");
        std::fs::write(&path, &text).expect("write");
        if let Ok(records) = record::read(&path) {
            // What replay does with them: play them, jump to the end and back, step.
            let mut player = crate::tui::player::Player::new(records, 100.0);
            let _ = player.due();
            let _ = player.next_due_in();
            let _ = player.seek(1e12);
            let _ = player.seek(-1e12);
            let _ = player.step(3);
            let _ = player.step(-3);
        }
    }
}
