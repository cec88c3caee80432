//! Command-line conventions through the binary: completions, man page, --version, exit
//! codes, `--csv -`, and the JSON documents' header and schemas.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime};

use serde_json::Value;

fn stdout_of(args: &[&str]) -> String {
    let out = common::schedlab(args);
    assert!(
        out.status.success(),
        "schedlab {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn completions_and_the_man_page_come_from_the_command_definitions() {
    // Each shell's own marker, and a subcommand and a flag from the clap definitions.
    for (shell, marker) in [
        ("bash", "complete -F _schedlab"),
        ("zsh", "#compdef schedlab"),
        ("fish", "complete -c schedlab"),
    ] {
        let script = stdout_of(&["completions", shell]);
        assert!(script.contains(marker), "{shell}: no {marker:?}");
        assert!(script.contains("sweep"), "{shell}: no sweep subcommand");
        assert!(
            script.contains("allow-partial"),
            "{shell}: no --allow-partial"
        );
    }
    let man = stdout_of(&["man"]);
    assert!(
        man.contains(".TH schedlab 1"),
        "{}",
        &man[..man.len().min(300)]
    );
    assert!(
        man.contains("compare"),
        "the man page lists the subcommands"
    );
    let bad = common::schedlab(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2), "an unknown shell is bad input");
}

#[test]
fn version_names_the_git_revision_it_was_built_from() {
    let version = stdout_of(&["--version"]);
    let expected = env!("CARGO_PKG_VERSION");
    assert!(
        version.starts_with(&format!("schedlab {expected}")),
        "{version}"
    );
    let rev = Command::new("git")
        .args(["rev-parse", "--short", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    match rev {
        // cargo reran build.rs when HEAD moved, so the binary names this revision.
        Some(rev) => assert!(version.contains(&format!("({rev})")), "{version} vs {rev}"),
        None => assert_eq!(version.trim(), format!("schedlab {expected}")),
    }
}

#[test]
fn sigint_ends_a_run_with_its_report_and_exit_code_130() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("r.json");
    let mut run = common::Spawned::new(
        Command::new(common::exe())
            .args(["run", "nice-ladder", "--duration", "60s", "--json"])
            .arg(&json)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn schedlab"),
    );
    let pid = run.id() as i32;
    // nice-ladder's 20 workers and its prober: the run has started.
    let started = common::wait_until(Duration::from_secs(30), || {
        common::children(pid).len() == 21
    });
    assert!(started, "the run's workers never appeared");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("kill");
    // The run ends within a sample or two and the restore; 30 s bounds a hang.
    let status = run
        .wait_for_exit(Duration::from_secs(30))
        .expect("schedlab ends within 30 s of SIGINT");
    assert_eq!(status.code(), Some(130), "128 + SIGINT");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
    assert_eq!(report["interrupted"], true);
}

#[test]
fn csv_dash_writes_the_time_series_to_stdout_and_no_file() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let out = Command::new(common::exe())
        .args([
            "run",
            "rt-throttle",
            "--duration",
            "1s",
            "--interval",
            "100ms",
            "--csv",
            "-",
        ])
        .current_dir(dir.path())
        .output()
        .expect("run schedlab");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!dir.path().join("-").exists(), "a file named - was created");
    let mut reader = csv::Reader::from_reader(out.stdout.as_slice());
    let header = reader.headers().expect("header").clone();
    assert_eq!(&header[0], "t_s");
    assert_eq!(&header[1], "task");
    // Every line is a CSV row of the header's width: no table mixed in.
    let rows: Vec<csv::StringRecord> = reader
        .records()
        .map(|r| r.expect("a CSV row of the header's width"))
        .collect();
    // 1 s at 100 ms: about 10 samples of the fifo thread (the first may be a baseline).
    let fifo = rows.iter().filter(|r| &r[4] == "fifo").count();
    assert!(fifo >= 8, "about 10 fifo samples, got {fifo}");
    let both = common::schedlab(&["run", "--csv", "-", "--json", "-"]);
    assert_eq!(both.status.code(), Some(2), "both on stdout is bad input");
}

/// The JSON document's schema from assets/schema, and the errors `doc` has against it.
fn schema_errors(name: &str, doc: &Value) -> Vec<String> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("assets/schema/{name}.schema.json"));
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("schema file"))
        .expect("schema is JSON");
    let validator = jsonschema::validator_for(&schema).expect("a valid JSON Schema");
    validator
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect()
}

/// The header every document carries, checked against what this machine says.
fn assert_header(doc: &Value, command: &str, started: SystemTime) {
    assert_eq!(doc["schema_version"], 3);
    let version = doc["schedlab_version"].as_str().expect("schedlab_version");
    assert!(version.starts_with(env!("CARGO_PKG_VERSION")), "{version}");
    let start = humantime::parse_rfc3339(doc["start_time"].as_str().expect("start_time"))
        .expect("start_time is RFC 3339");
    // Whole seconds: the command started in the second this test launched it or later.
    let started_s = started
        - Duration::from_nanos(u64::from(
            started
                .duration_since(SystemTime::UNIX_EPOCH)
                .expect("clock")
                .subsec_nanos(),
        ));
    assert!(
        start >= started_s && start <= SystemTime::now(),
        "start_time {start:?} outside the command's life"
    );
    let uts = nix::sys::utsname::uname().expect("uname");
    assert_eq!(doc["host"], uts.nodename().to_string_lossy().as_ref());
    assert_eq!(doc["kernel"], uts.release().to_string_lossy().as_ref());
    assert_eq!(doc["argv"][1], command);
    let online = schedlab::system::online_cpus().count();
    assert_eq!(doc["machine"]["cpus"].as_u64(), Some(online as u64));
    assert_eq!(
        doc["machine"]["kernel_version"],
        uts.version().to_string_lossy().as_ref()
    );
}

fn document(command: &str, args: &[&str]) -> Value {
    let started = SystemTime::now();
    let mut all = vec![command];
    all.extend_from_slice(args);
    let doc = common::json_output(&common::schedlab(&all));
    assert_header(&doc, command, started);
    let errors = schema_errors(command, &doc);
    assert!(errors.is_empty(), "{command}: {}", errors.join("\n"));
    let unitless = unitless_numbers(&doc);
    assert!(
        unitless.is_empty(),
        "{command}: numbers whose name says no unit: {}",
        unitless.join(", ")
    );
    doc
}

/// Name endings that say a number's unit: times, rates, sizes, frequencies, CPUs (CPU
/// seconds per second), and fractions (0..1; `_error` is a fraction of CPU time in every
/// document), or a time per thing (`tracer_ns_per_event`, `us_per_op`).
const UNIT_SUFFIXES: &[&str] = &[
    "_ns",
    "_us",
    "_ms",
    "_s",
    "_per_s",
    "_bytes",
    "_hz",
    "_cpus",
    "_share",
    "_fraction",
    "_ratio",
    "_error",
];

/// Numbers with no unit because they are counts, identifiers or ratios; each is checked
/// by name wherever it occurs.
const UNITLESS: &[&str] = &[
    // Counts.
    "count",
    "cpus",
    "jobs",
    "samples",
    "rounds",
    "partial_runs",
    "foreign_load_runs",
    "progress_total",
    "latency_dropped",
    "events",
    "lost",
    "undecodable",
    "switches_in",
    "wakeups",
    "wakeups_unseen",
    "preempted",
    "blocked",
    "migrations",
    "procfs_switches",
    "procfs_voluntary",
    "waking_cross_cpu_only",
    "idle_switches_filled",
    "idle_switches_inferred",
    "loops",
    "overruns",
    "slices",
    "tasks",
    "writable",
    "read_only",
    // Identifiers and levels: which CPU, task, round; a nice value, an RT priority; the
    // document's own version.
    "cpu",
    "last_cpu",
    "worst_cpu",
    "pid",
    "tid",
    "nice",
    "rt_priority",
    "priority",
    "outlier_rounds",
    "schema_version",
    // Ratios: B/A, trace/procfs, cross-CPU/same-CPU switch cost.
    "ratios",
    "ratio_median",
    "switches_vs_procfs",
    "ratio_to_same_cpu",
    // A fraction of a CPU (the singular of `_share`).
    "share",
    // A sweep row's knob value: in the knob's own unit, which its name says
    // (sys.rt_runtime_us).
    "value",
];

/// Every number in `doc` (by path) whose name carries no unit and is not a known count,
/// identifier or ratio. A number beside a `unit` string (a headline's or finding's
/// `value`) is in that unit, and so are the `a` and `b` sides of a compared metric.
fn unitless_numbers(doc: &Value) -> Vec<String> {
    fn named_with_unit(name: &str) -> bool {
        UNIT_SUFFIXES.iter().any(|s| name.ends_with(s))
            || ["_ns_per_", "_us_per_"].iter().any(|s| name.contains(s))
            || name.starts_with("us_per_")
            || UNITLESS.contains(&name)
    }
    fn walk(v: &Value, name: &str, path: &str, has_unit: bool, out: &mut Vec<String>) {
        match v {
            Value::Number(_) if !has_unit && !named_with_unit(name) => out.push(path.into()),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, name, &format!("{path}[{i}]"), has_unit, out);
                }
            }
            Value::Object(map) => {
                let unit = has_unit || map.get("unit").is_some_and(Value::is_string);
                for (k, item) in map {
                    // The unit covers its own object's numbers (and lists of them) and
                    // the compared sides; a nested object (a finding's details) names its
                    // own.
                    let plain = match item {
                        Value::Array(a) => a.iter().all(Value::is_number),
                        other => other.is_number(),
                    };
                    let inherits = unit && (plain || k == "a" || k == "b");
                    walk(item, k, &format!("{path}.{k}"), inherits, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(doc, "", "", false, &mut out);
    out
}

#[test]
fn the_unit_audit_flags_unitless_numbers_and_passes_counts_and_units() {
    let doc = serde_json::json!({
        "duration_s": 1.0,
        "count": 3,
        "metrics": {
            "cpu": [{ "cpu": 0, "busy_share": 0.5, "busy": 0.5 }],
            "latency": { "p50_ns": 1200, "p50": 1200 },
            "headline": { "value": 3.0, "unit": "ns" },
        },
        "compare": [{ "unit": "%", "a": { "min": 1.0, "values": [1.0] }, "ratios": [1.1] }],
        "trace": { "tracer_ns_per_event": 90.0, "window_monotonic_s": [1.0, 2.0] },
        "findings": [{ "unit": "us", "value": 3.0, "details": { "total": 0.1 } }],
    });
    assert_eq!(
        unitless_numbers(&doc),
        [
            ".findings[0].details.total",
            ".metrics.cpu[0].busy",
            ".metrics.latency.p50"
        ]
    );
}

/// A histogram's counts add up to the count its percentiles were taken over.
fn histogram_total(h: &Value) -> u64 {
    h.as_array()
        .expect("histogram")
        .iter()
        .map(|b| {
            let (low, high) = (b["low_ns"].as_u64(), b["high_ns"].as_u64());
            assert!(low <= high, "bucket {b}");
            b["count"].as_u64().expect("count")
        })
        .sum()
}

#[test]
fn every_json_document_has_the_header_and_validates_against_its_schema() {
    let _guard = common::serial();
    let knobs = document("knobs", &["--json"]);
    assert!(!knobs["system"].as_array().expect("system").is_empty());

    let run = document(
        "run",
        &["pipe-wakeup", "--duration", "1s", "--trace", "--json", "-"],
    );
    assert_eq!(run["metrics"]["throughput_unit"], "bytes/s");
    let traced: Vec<&Value> = run["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .filter_map(|t| t.get("sched"))
        .collect();
    // Tracing can be refused (no tracefs): then there is nothing to add up, and the
    // warning says so.
    if traced.is_empty() {
        let warnings = run["warnings"].to_string();
        assert!(
            warnings.contains("tracing"),
            "no sched objects and no reason: {warnings}"
        );
    }
    for s in traced {
        assert_eq!(
            histogram_total(&s["wakeup_latency_histogram"]),
            s["wakeup_latency"]["count"].as_u64().expect("count"),
            "{s}"
        );
        assert_eq!(
            histogram_total(&s["runq_delay_histogram"]),
            s["runq_delay"]["count"].as_u64().expect("count")
        );
    }

    let run = document("run", &["yield-latency", "--duration", "1s", "--json", "-"]);
    let lat = &run["metrics"]["latency"];
    assert_eq!(
        histogram_total(&lat["histogram"]),
        lat["count"].as_u64().expect("count"),
        "{lat}"
    );
    // The latency over the run: every interval's count adds up to the whole run's.
    let intervals = lat["intervals"].as_array().expect("intervals");
    assert!(!intervals.is_empty(), "{lat}");
    // The first sample, at 0 s, holds what the workers timed before it.
    let mut last_t = -1.0;
    for i in intervals {
        let t = i["t_s"].as_f64().expect("t_s");
        let (p50, p99, max) = (
            i["p50_ns"].as_u64(),
            i["p99_ns"].as_u64(),
            i["max_ns"].as_u64(),
        );
        assert!(t > last_t && p50 <= p99 && p99 <= max, "{i}");
        last_t = t;
    }
    let counted: u64 = intervals
        .iter()
        .map(|i| i["count"].as_u64().expect("count"))
        .sum();
    assert_eq!(counted, lat["count"].as_u64().expect("count"));

    let sweep = document(
        "sweep",
        &[
            "nice-ladder",
            "--knob",
            "busy.nice=0,5",
            "--duration",
            "1s",
            "--json",
            "-",
        ],
    );
    let rows = sweep["rows"].as_array().expect("rows");
    assert_eq!(rows[0]["value"], 0.0);
    assert_eq!(rows[1]["value"], 5.0);

    document(
        "compare",
        &[
            "pipe-wakeup",
            "--a",
            "writer.policy=other",
            "--b",
            "writer.policy=batch",
            "--rounds",
            "1",
            "--duration",
            "1s",
            "--json",
            "-",
        ],
    );
    document("check", &["--quick", "--json", "-"]);
}
