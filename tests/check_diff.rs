//! `schedlab check diff` through the binary, on the shipped reference result and forged copies of it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;

/// The reference result shipped for this machine class (a real `check --json` run).
fn reference_path() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/reference/firecracker-2cpu-linux-6.18.json")
}

fn reference() -> Value {
    let text = std::fs::read_to_string(reference_path()).expect("the reference result");
    serde_json::from_str(&text).expect("the reference is JSON")
}

fn finding_mut<'a>(doc: &'a mut Value, id: &str) -> &'a mut Value {
    doc["findings"]
        .as_array_mut()
        .and_then(|a| a.iter_mut().find(|f| f["id"] == id))
        .unwrap_or_else(|| panic!("no finding {id}"))
}

/// The reference with switch_cost_same_cpu's value and repeats passed through `f`.
fn forged(f: impl Fn(f64) -> f64) -> Value {
    let mut doc = reference();
    let s = finding_mut(&mut doc, "switch_cost_same_cpu");
    let value = s["value"].as_f64().expect("value");
    s["value"] = f(value).into();
    let chunks: Vec<f64> = s["noise"]["repeats"]
        .as_array()
        .expect("the reference records the ping-pong's chunks")
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    assert!(chunks.len() >= 2, "repeats: {chunks:?}");
    // Halved or doubled moves beyond the spread only if it spans less than 2x: a
    // reference taken on a quiet machine does (a few %); one that does not is unusable.
    let hi = chunks.iter().copied().fold(value, f64::max);
    let lo = chunks.iter().copied().fold(value, f64::min);
    assert!(
        hi < 2.0 * lo,
        "the reference's one-CPU switch cost spans {lo}..{hi}: too noisy to be a reference"
    );
    let repeats: Vec<f64> = chunks.into_iter().map(&f).collect();
    s["noise"]["repeats"] = repeats.into();
    doc
}

/// `check diff REFERENCE CURRENT [ARGS]` with CURRENT written to a temp file.
fn diff_with(current: &Value, args: &[&str]) -> Output {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("current.json");
    std::fs::write(&path, current.to_string()).expect("write current");
    let reference = reference_path();
    let mut all = vec![
        "check",
        "diff",
        reference.to_str().expect("utf-8"),
        path.to_str().expect("utf-8"),
    ];
    all.extend_from_slice(args);
    common::schedlab(&all)
}

fn text(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The table line of a finding (by its title) in the text diff.
fn line_of<'a>(stdout: &'a str, title: &str) -> &'a str {
    stdout
        .lines()
        .find(|l| l.contains(title))
        .unwrap_or_else(|| panic!("no line for {title}:\n{stdout}"))
}

#[test]
fn the_reference_against_itself_has_no_regression() {
    // The shipped reference is a check document like any other.
    let errors = common::documents::schema_errors("check", &reference());
    assert!(errors.is_empty(), "the reference: {}", errors.join("\n"));
    assert!(common::documents::unitless_numbers(&reference()).is_empty());
    let started = std::time::SystemTime::now();
    let out = diff_with(&reference(), &["--json", "-"]);
    assert_eq!(out.status.code(), Some(0), "{:?}", text(&out));
    let doc: Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    common::documents::assert_header(&doc, "check", started);
    let errors = common::documents::schema_errors("check-diff", &doc);
    assert!(errors.is_empty(), "{}", errors.join("\n"));
    let unitless = common::documents::unitless_numbers(&doc);
    assert!(unitless.is_empty(), "numbers without a unit: {unitless:?}");
    assert_eq!(doc["regressed"], 0);
    assert_eq!(doc["better"], 0);
    let findings = doc["findings"].as_array().expect("findings");
    let same = findings.iter().filter(|f| f["verdict"] == "same").count();
    assert!(same >= 5, "most findings compared and the same: {doc}");
    for f in findings.iter().filter(|f| f["verdict"] == "same") {
        assert_eq!(f["ratio"], 1.0, "{f}");
    }
    assert_eq!(doc["machine_differences"].as_array().map(Vec::len), Some(0));
    let out = diff_with(&reference(), &[]);
    let (stdout, _) = text(&out);
    assert!(stdout.contains("=> no regression"), "{stdout}");
    assert!(stdout.contains("machine facts: the same"), "{stdout}");
}

#[test]
fn a_forged_twice_slower_pipe_switch_regresses() {
    let mut slower = forged(|v| v * 2.0);
    slower["kernel"] = "6.19.0-forged".into();
    let out = diff_with(&slower, &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    let line = line_of(&stdout, "pipe switch cost, one CPU");
    assert!(line.starts_with("regressed"), "{line}");
    assert!(line.contains("2.00x"), "the ratio: {line}");
    assert!(stdout.contains("=> REGRESSED: 1 finding"), "{stdout}");
    assert!(stdout.contains("machine differs: kernel: "), "{stdout}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("pipe switch cost, one CPU"), "{stderr}");
}

#[test]
fn a_move_within_the_baselines_noise_is_not_a_regression() {
    let r = reference();
    let s = &r["findings"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["id"] == "switch_cost_same_cpu"))
        .expect("finding")["noise"]["repeats"];
    let chunks: Vec<f64> = s
        .as_array()
        .expect("repeats")
        .iter()
        .filter_map(Value::as_f64)
        .collect();
    let lo = chunks.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = chunks.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    assert!(hi > lo, "the reference's chunks differ: {chunks:?}");
    // Every repeat moved to just inside the top of the baseline's spread.
    let inside = hi - (hi - lo) * 0.01;
    let moved = forged(|_| inside);
    let out = diff_with(&moved, &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(
        line_of(&stdout, "pipe switch cost, one CPU").starts_with("same"),
        "{stdout}"
    );
}

#[test]
fn a_better_value_is_better_not_a_regression() {
    let out = diff_with(&forged(|v| v / 2.0), &[]);
    let (stdout, stderr) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let line = line_of(&stdout, "pipe switch cost, one CPU");
    assert!(line.starts_with("better"), "{line}");
    assert!(line.contains("0.500x"), "{line}");
}

#[test]
fn bad_files_are_one_line_errors_with_exit_code_2() {
    let dir = tempfile::tempdir().expect("temp dir");
    let write = |name: &str, text: &str| {
        let p = dir.path().join(name);
        std::fs::write(&p, text).expect("write");
        p.to_str().expect("utf-8").to_string()
    };
    let mut future = reference();
    future["schema_version"] = 99.into();
    let cases = [
        (
            dir.path()
                .join("missing.json")
                .to_str()
                .expect("utf-8")
                .to_string(),
            "cannot read the check report",
        ),
        (write("garbage.json", "{not json"), "is not JSON"),
        (
            write(
                "run.json",
                r#"{"schema_version": 3, "preset": "pipe-wakeup"}"#,
            ),
            "not a schedlab check report",
        ),
        (
            write("future.json", &future.to_string()),
            "schema_version 99 is not one this schedlab reads",
        ),
    ];
    let reference = reference_path();
    for (file, says) in &cases {
        for args in [
            [
                "check",
                "diff",
                file.as_str(),
                reference.to_str().expect("utf-8"),
            ],
            [
                "check",
                "diff",
                reference.to_str().expect("utf-8"),
                file.as_str(),
            ],
        ] {
            let out = common::schedlab(&args);
            let (stdout, stderr) = text(&out);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
            assert!(
                stderr.starts_with("schedlab: ") && stderr.contains(says),
                "{args:?}: {stderr}"
            );
            assert!(
                stderr.contains(file.rsplit('/').next().unwrap_or("")),
                "names the file: {stderr}"
            );
            assert!(stdout.is_empty(), "{stdout}");
        }
    }
}
