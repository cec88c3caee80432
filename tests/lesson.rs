//! Lessons end to end: every built-in played through in the workbench (tmux, stepped with
//! the right arrow), and headless with its JSON document checked against the schema.

use crate::common;

use std::process::Command;
use std::time::SystemTime;

use common::tmux::Tmux;
use common::PATIENCE;

/// The RT budget and the cgroup directories schedlab may change: the same after a test.
/// (Another schedlab on this shared machine may hold a directory for a while: wait for
/// what was not there before to go, within PATIENCE.)
fn assert_as_found(before: &(String, Vec<String>), what: &str) {
    let found = common::wait_until(PATIENCE, || {
        let now = machine();
        now.0 == before.0 && now.1.iter().all(|d| before.1.contains(d))
    });
    assert!(
        found,
        "{what}: the machine as found: {before:?} then {:?}",
        machine()
    );
}

fn machine() -> (String, Vec<String>) {
    let rt = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").unwrap_or_default();
    let mut dirs = Vec::new();
    for root in [
        "/sys/fs/cgroup/cpu",
        "/sys/fs/cgroup/cpu,cpuacct",
        "/sys/fs/cgroup",
    ] {
        if let Ok(entries) = std::fs::read_dir(root) {
            dirs.extend(
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().to_string())
                    .filter(|n| n.starts_with("schedlab-")),
            );
        }
    }
    (rt.trim().to_string(), dirs)
}

/// The step the caption's title shows (`step 2/4`), or None at the end.
fn shown_step(screen: &str) -> Option<usize> {
    let rest = &screen[screen.find(" step ")? + 6..];
    rest[..rest.find('/')?].parse().ok()
}

/// The caption's first words, as the panel's first line shows them.
fn opening(caption: &str) -> String {
    caption
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn every_built_in_lesson_plays_through_in_the_workbench() {
    let _guard = common::serial();
    let before = machine();
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, _) in schedlab::lesson::BUILTIN {
        let lesson = schedlab::lesson::load_in(name, None).expect("built-in");
        let n = lesson.steps.len();
        let journal = dir.path().join("j");
        let Some(pane) = Tmux::start_sized(&["lesson", name], &journal, "", (120, 40)) else {
            return;
        };
        pane.wait_until("the first step", |s| s.contains(&format!("step 1/{n}")));
        // Timed steps may move on by themselves: follow whichever step is shown.
        let mut seen = vec![false; n];
        loop {
            let screen = pane.wait_until("a step or the end", |s| {
                s.contains("End of the lesson") || shown_step(s).is_some()
            });
            if screen.contains("End of the lesson") {
                break;
            }
            let k = shown_step(&screen).expect("a step");
            // A step that asks shows its question alone; right makes its change.
            if let Some(q) = &lesson.steps[k - 1].question {
                pane.wait_until(q, |s| s.contains(&opening(q)));
                pane.keys_at_once(&["Right"]);
                pane.wait_until("the question answered", |s| !s.contains(&opening(q)));
            }
            let caption = &lesson.steps[k - 1].caption;
            let screen = pane.wait_until(caption, |s| {
                shown_step(s) != Some(k) || s.contains(&opening(caption))
            });
            if shown_step(&screen) == Some(k) {
                seen[k - 1] = true;
                pane.keys_at_once(&["Right"]);
                pane.wait_until("the next step", |s| shown_step(s) != Some(k));
            }
        }
        assert!(seen.iter().filter(|s| **s).count() >= 1, "{name}: {seen:?}");
        assert!(
            seen.iter()
                .enumerate()
                .all(|(i, s)| *s || !matches!(lesson.steps[i].pace, schedlab::lesson::Pace::Key)),
            "{name}: every key-paced step was shown: {seen:?}"
        );
        pane.keys_at_once(&["q"]);
        pane.wait_until("schedlab exited", |s| s.contains("SCHEDLAB-EXITED-0"));
        drop(pane);
        assert_as_found(&before, name);
    }
}

#[test]
fn headless_lessons_judge_every_step_and_say_why_one_did_not_pass() {
    let _guard = common::serial();
    let before = machine();
    // Every built-in, each step 0.6 s (the shortest allowed): each check passes here or
    // says why it may not. The first also ends with its plot, the steps marked.
    let dir = tempfile::tempdir().expect("tempdir");
    let plot = dir.path().join("lesson.png");
    for (i, (name, _)) in schedlab::lesson::BUILTIN.iter().enumerate() {
        let name = *name;
        let started = SystemTime::now();
        let mut cmd = Command::new(common::exe());
        cmd.args([
            "lesson",
            name,
            "--headless",
            "--json",
            "-",
            "--step-time",
            "600ms",
        ]);
        if i == 0 {
            cmd.arg("--plot").arg(&plot);
        }
        let out = cmd.output().expect("run");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{name}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
        common::documents::assert_header(&doc, "lesson", started);
        let errors = common::documents::schema_errors("lesson", &doc);
        assert!(errors.is_empty(), "{name}: {errors:?}");
        let lesson = schedlab::lesson::load_in(name, None).expect("built-in");
        let steps = doc["steps"].as_array().expect("steps");
        assert_eq!(steps.len(), lesson.steps.len(), "{name}: a result per step");
        for (s, want) in steps.iter().zip(&lesson.steps) {
            // Headless plays a question straight through; the document carries it.
            assert_eq!(s["question"].as_str(), want.question.as_deref());
            let result = s["result"].as_str().expect("result");
            if want.check.is_none() {
                assert_eq!(result, "no-check");
                continue;
            }
            assert!(s["check"]["text"].as_str().is_some_and(|t| !t.is_empty()));
            if result != "pass" {
                assert!(
                    !s["reasons"].as_array().expect("reasons").is_empty(),
                    "{name} step {}: {result} without a reason: {s}",
                    s["step"]
                );
            }
            // Every change of the step is answered.
            assert_eq!(s["changes"].as_array().map(Vec::len), Some(want.set.len()));
        }
        if i == 0 {
            let png = std::fs::read(&plot).expect("the lesson's plot");
            assert!(
                png.starts_with(b"\x89PNG") && png.len() > 10_000,
                "{name}: a PNG"
            );
        }
        // Exit code 1 exactly when a check failed.
        let failed = doc["failed"].as_u64().expect("failed");
        assert_eq!(
            out.status.code(),
            Some(if failed > 0 { 1 } else { 0 }),
            "{name}"
        );
        assert_as_found(&before, name);
    }
}

#[test]
fn lesson_input_errors_are_one_line_with_exit_code_2() {
    for (args, says) in [
        (
            vec!["lesson", "no-such"],
            "unknown lesson \"no-such\": available are",
        ),
        (
            vec!["lesson", "rt-throttle", "--headless", "--pace", "99"],
            "--pace 99: allowed 0.05..10",
        ),
        (
            vec!["lesson", "rt-throttle", "--headless", "--step-time", "10ms"],
            "too short",
        ),
        (
            vec!["lesson", "rt-throttle", "--json", "-"],
            "go with --headless",
        ),
    ] {
        let out = common::schedlab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains(says) && err.trim().lines().count() == 1,
            "{args:?}: {err}"
        );
    }
    let out = common::schedlab(&["lesson"]);
    let listed = String::from_utf8_lossy(&out.stdout);
    for (name, _) in schedlab::lesson::BUILTIN {
        assert!(listed.contains(name), "{listed}");
    }
}

/// Plays built-in `name` headless, 3 s a step, and returns its JSON document (and the
/// machine as found afterwards).
fn play_headless(name: &str) -> serde_json::Value {
    let before = machine();
    let out = Command::new(common::exe())
        .args([
            "lesson",
            name,
            "--headless",
            "--json",
            "-",
            "--step-time",
            "3s",
        ])
        .output()
        .expect("run");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{name}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_as_found(&before, name);
    doc
}

fn step_result(doc: &serde_json::Value, k: usize) -> (&str, &str) {
    let s = &doc["steps"][k];
    (
        s["result"].as_str().unwrap_or(""),
        s["check"]["text"].as_str().unwrap_or(""),
    )
}

/// The plain waiter stalls behind the FIFO medium spinner and the PI waiter does not:
/// the inversion and priority inheritance both happen on this kernel (where FIFO may be
/// set at all), and the medium spinner leaves with the run.
#[test]
fn priority_inversion_stalls_the_plain_waiter_and_not_the_inheriting_one() {
    let _guard = common::serial();
    let doc = play_headless("priority-inversion");
    let refused = doc["steps"][1]["changes"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["ok"] == false));
    if refused {
        eprintln!("skipped: medium cannot become SCHED_FIFO here (no CAP_SYS_NICE?)");
        return;
    }
    for k in [1, 2] {
        let (result, text) = step_result(&doc, k);
        assert_eq!(result, "pass", "step {}: {text}", k + 1);
    }
}

/// The quota holds the pool to a quarter of a CPU and costs the ticker ticks (where the
/// cgroup cpu controller can be written).
#[test]
fn cpu_bandwidth_caps_the_group_and_throttles_the_ticker() {
    let _guard = common::serial();
    let doc = play_headless("cpu-bandwidth");
    let refused = doc["steps"][1]["changes"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c["ok"] == false));
    if refused {
        eprintln!("skipped: the cgroup quota is refused here");
        return;
    }
    for k in [1, 2] {
        let (result, text) = step_result(&doc, k);
        assert_eq!(result, "pass", "step {}: {text}", k + 1);
    }
    // cpu.stat says so too: no throttled period before the quota, some under it.
    let throttled = |k: usize| doc["steps"][k]["throttling"][0]["throttled_periods"].as_u64();
    assert_eq!(throttled(0), Some(0), "step 1: {}", doc["steps"][0]);
    for k in [1, 2] {
        assert!(
            throttled(k).is_some_and(|n| n > 0),
            "step {}: {}",
            k + 1,
            doc["steps"][k]
        );
    }
}

/// `lesson`'s built-in text with only the steps `first..=last` (1-based) and the last
/// one's knob changes removed.
fn suppressed(name: &str, first: usize, last: usize) -> String {
    let text = schedlab::lesson::BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .expect("built-in");
    let parts: Vec<&str> = text.split("[[step]]").collect();
    let mut out = parts[0].to_string();
    for (i, part) in parts.iter().enumerate().take(last + 1).skip(first) {
        out.push_str("[[step]]");
        if i == last {
            let kept: Vec<&str> = part.lines().filter(|l| !l.starts_with("set = ")).collect();
            assert!(
                kept.len() < part.lines().count(),
                "{name} step {last} sets something"
            );
            out.push_str(&kept.join("\n"));
            out.push('\n');
        } else {
            out.push_str(part);
        }
    }
    out
}

/// A built-in step played for real with its knob change left out: its check says NO.
/// yield-latency's step 2 without moving a yielder to CPU 1 (a ratio check against step
/// 1), and cgroup-fairness's step 2 alone without crowd's weight 400 (a portion check,
/// which other programs' load does not excuse: a failure, not "not applicable"). Steps of
/// 3 s leave 2 s after the settle time: enough samples on a busy machine.
#[test]
fn a_built_in_step_played_without_its_change_fails_its_check() {
    let _guard = common::serial();
    let before = machine();
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, first, last) in [("yield-latency", 1, 2), ("cgroup-fairness", 2, 2)] {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, suppressed(name, first, last)).expect("write");
        let out = Command::new(common::exe())
            .args(["lesson", path.to_str().expect("utf-8"), "--headless"])
            .args(["--json", "-", "--step-time", "3s"])
            .output()
            .expect("run");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("{name}: {e}: {}", String::from_utf8_lossy(&out.stderr)));
        let step = &doc["steps"][last - first];
        let text = step["check"]["text"].as_str().unwrap_or_default();
        assert!(text.starts_with("NO: "), "{name}: {step}");
        let result = step["result"].as_str().expect("result");
        let unmade = step["reasons"]
            .as_array()
            .expect("reasons")
            .iter()
            .filter_map(|r| r.as_str())
            .any(|r| r.contains("refused") || r.contains("runs without a setting"));
        if name == "cgroup-fairness" && !unmade {
            assert_eq!(result, "fail", "{name}: {step}");
            assert_eq!(out.status.code(), Some(1), "{name}");
        } else {
            assert!(
                matches!(result, "fail" | "not-applicable"),
                "{name}: {step}"
            );
        }
        assert_as_found(&before, name);
    }
}
