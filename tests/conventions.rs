//! Command-line conventions through the binary: completions, man page, --version, exit
//! codes, `--csv -`, and the JSON documents' header and schemas.

use crate::common;

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
fn completions_offer_preset_and_lesson_names_and_no_internal_commands() {
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout_of(&["completions", shell]);
        for internal in ["__worker", "__exec", "__job"] {
            assert!(!script.contains(internal), "{shell} offers {internal}");
        }
        for name in ["nice-ladder", "cgroup-fairness"] {
            assert!(script.contains(name), "{shell}: no {name}");
        }
        if shell == "fish" {
            // clap's fish script has no positionals: the names are schedlab's own lines.
            assert!(script.contains(
                "complete -c schedlab -n \"__fish_schedlab_using_subcommand lesson\" -a 'rt-throttle'"
            ));
        }
    }
    // What bash offers after `schedlab run pipe` and `schedlab lesson rt`, and at the
    // first word.
    let dir = tempfile::tempdir().expect("tempdir");
    let script = dir.path().join("schedlab.bash");
    std::fs::write(&script, stdout_of(&["completions", "bash"])).expect("write");
    let offered = |words: &str| {
        let out = Command::new("bash")
            .arg("-c")
            .arg(format!(
                "source {}; COMP_WORDS=({words}); COMP_CWORD=$((${{#COMP_WORDS[@]}} - 1)); \
                 _schedlab schedlab \"${{COMP_WORDS[COMP_CWORD]}}\" \"${{COMP_WORDS[COMP_CWORD-1]}}\"; \
                 echo \"${{COMPREPLY[@]}}\"",
                script.display()
            ))
            .output()
            .expect("bash");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    assert_eq!(offered("schedlab run pipe"), "pipe-wakeup pipe-affinity");
    assert_eq!(offered("schedlab lesson rt"), "rt-throttle");
    assert_eq!(offered("schedlab __"), "");
}

#[test]
fn every_subcommand_has_its_own_man_page_with_its_flags() {
    let root = stdout_of(&["man"]);
    // The root page names a page per subcommand, `schedlab-run(1)`; each can be printed.
    let named: Vec<&str> = root
        .split("schedlab\\-")
        .skip(1)
        .filter_map(|rest| rest.split_once("(1)").map(|(name, _)| name))
        .collect();
    assert!(
        named.contains(&"run") && named.contains(&"check"),
        "{named:?}"
    );
    assert!(
        !named.contains(&"help"),
        "no page for clap's help: {named:?}"
    );
    for name in &named {
        let page = stdout_of(&["man", name]);
        assert!(page.contains(&format!(".TH schedlab-{name} 1")), "{name}");
    }
    let run = stdout_of(&["man", "run"]);
    for flag in ["\\-\\-duration", "\\-\\-json", "\\-\\-allow\\-partial"] {
        assert!(run.contains(flag), "schedlab-run(1) lists {flag}");
    }
    let diff = stdout_of(&["man", "check", "diff"]);
    assert!(diff.contains(".TH schedlab-check-diff 1"));
    for bad in [
        &["man", "__worker"][..],
        &["man", "nope"],
        &["man", "run", "x"],
    ] {
        let out = common::schedlab(bad);
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.lines().count(), 1, "{err}");
    }
    // --dir: every page as a file.
    let dir = tempfile::tempdir().expect("tempdir");
    stdout_of(&["man", "--dir", dir.path().to_str().expect("utf-8")]);
    for file in ["schedlab.1", "schedlab-run.1", "schedlab-check-diff.1"] {
        let text = std::fs::read_to_string(dir.path().join(file)).expect(file);
        assert!(text.starts_with(".ie"), "{file}");
    }
    assert!(!dir.path().join("schedlab-__worker.1").exists());
}

#[test]
fn knobs_json_takes_dash_for_stdout_and_a_file_like_every_command() {
    // The documents are compared: no other test changes a knob meanwhile.
    let _guard = common::serial();
    let dash = document("knobs", &["--json", "-"]);
    let bare = document("knobs", &["--json"]);
    assert_eq!(dash["system"], bare["system"]);
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("knobs.json");
    let table = stdout_of(&["knobs", "--json", file.to_str().expect("utf-8")]);
    assert!(
        table.starts_with("System knobs"),
        "the table on stdout: {table}"
    );
    let written: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("written")).expect("json");
    assert_eq!(written["system"], bare["system"]);
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

/// What `schedlab COMMAND ARGS` wrote, its conventions checked.
fn document(command: &str, args: &[&str]) -> Value {
    let started = SystemTime::now();
    let mut all = vec![command];
    all.extend_from_slice(args);
    let doc = common::json_output(&common::schedlab(&all));
    common::documents::assert_conventions(command, &doc, started);
    doc
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
        common::documents::unitless_numbers(&doc),
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
    assert_sched_histograms_add_up(&run);

    let run = document("run", &["yield-latency", "--duration", "1s", "--json", "-"]);
    assert_latency_histogram_and_intervals_add_up(&run["metrics"]["latency"]);

    let sweep = document(
        "sweep",
        &[
            "nice-ladder",
            "--knob",
            "busy.nice=0,5",
            // The document's shape, not its numbers: short runs do.
            "--duration",
            "500ms",
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
            "500ms",
            "--json",
            "-",
        ],
    );
    // check's document: in tests/check.rs, which runs `check --quick --json` anyway.
}

/// A traced run's `sched` objects: each histogram holds its percentiles' count.
fn assert_sched_histograms_add_up(run: &Value) {
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
}

/// yield-latency's `metrics.latency`: the histogram and the intervals add up to its
/// count, the intervals in time order.
fn assert_latency_histogram_and_intervals_add_up(lat: &Value) {
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
}

#[test]
fn the_schema_check_rejects_what_each_keyword_forbids_and_every_schema_uses_only_those() {
    use common::documents::validate;
    use serde_json::json;
    let schema = json!({
        "type": "object",
        "required": ["n", "name"],
        "additionalProperties": false,
        "properties": {
            "n": { "type": "integer", "minimum": 0 },
            "name": { "type": "string", "minLength": 1, "pattern": "^[a-z]*$" },
            "kind": { "enum": ["a", "b"] },
            "version": { "const": 3 },
            "list": { "type": "array", "minItems": 1, "maxItems": 2, "items": { "type": "number" } },
            "either": { "type": ["string", "null"] },
        }
    });
    let good =
        json!({ "n": 1.0, "name": "ok", "kind": "a", "version": 3, "list": [1.5], "either": null });
    assert_eq!(validate(&schema, &good), Vec::<String>::new());
    for (bad, says) in each_keywords_violation() {
        let errors = validate(&schema, &bad);
        assert!(
            errors.len() == 1 && errors[0].starts_with(says),
            "{bad}: {errors:?}, expected {says}"
        );
    }
    let unknown = validate(&json!({ "oneOf": [] }), &json!(1));
    assert_eq!(unknown, [": unsupported schema keyword oneOf"]);
    assert_every_shipped_schema_uses_known_keywords();
}

/// For each keyword of the test's schema, a document that breaks it and the start of
/// the error that says so.
fn each_keywords_violation() -> [(Value, &'static str); 12] {
    use serde_json::json;
    [
        (json!({ "name": "ok" }), ": n is required"),
        (
            json!({ "n": 1, "name": "ok", "extra": 1 }),
            "/extra: nothing is allowed here",
        ),
        (
            json!({ "n": 1.5, "name": "ok" }),
            "/n: 1.5 is not of type \"integer\"",
        ),
        (
            json!({ "n": -1, "name": "ok" }),
            "/n: -1 is less than the minimum 0",
        ),
        (
            json!({ "n": 1, "name": "" }),
            "/name: \"\" is shorter than 1",
        ),
        (
            json!({ "n": 1, "name": "A" }),
            "/name: \"A\" does not match ^[a-z]*$",
        ),
        (
            json!({ "n": 1, "name": "ok", "kind": "c" }),
            "/kind: \"c\" is not one of",
        ),
        (
            json!({ "n": 1, "name": "ok", "version": 2 }),
            "/version: 2 is not 3",
        ),
        (
            json!({ "n": 1, "name": "ok", "list": [] }),
            "/list: 0 items, fewer than minItems",
        ),
        (
            json!({ "n": 1, "name": "ok", "list": [1, 2, 3] }),
            "/list: 3 items, more than maxItems",
        ),
        (
            json!({ "n": 1, "name": "ok", "list": ["x"] }),
            "/list/0: \"x\" is not of type",
        ),
        (
            json!({ "n": 1, "name": "ok", "either": 1 }),
            "/either: 1 is not of type",
        ),
    ]
}

/// Every shipped schema is one the check understands (an empty object breaks its
/// required fields, never its keywords).
fn assert_every_shipped_schema_uses_known_keywords() {
    for entry in std::fs::read_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/schema"))
        .expect("schema dir")
    {
        let path = entry.expect("entry").path();
        let schema: Value =
            serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("JSON");
        let errors = common::documents::validate(&schema, &serde_json::json!({}));
        assert!(
            !errors.is_empty() && errors.iter().all(|e| e.ends_with(" is required")),
            "{}: {errors:?}",
            path.display()
        );
    }
}

/// Kernel statements found wrong for Linux 6.6+ / 6.12+ (issue 31), as they were
/// phrased: none may come back into the presets, lessons, assets, sources or README.
/// What holds instead is in docs/src/kernel-facts.md.
const WRONG_KERNEL_STATEMENTS: &[(&str, &str)] = &[
    (
        "gives them a head start when they wake",
        "CFS sleeper credit; EEVDF (6.6+) keeps lag across sleep",
    ),
    (
        "checks whether that CPU is idle first",
        "select_idle_sibling() picks an idle CPU sharing the cache",
    ),
    (
        "checks whether the waker's CPU is idle first",
        "select_idle_sibling() picks an idle CPU sharing the cache",
    ),
    (
        "only runs when crowd does not want the CPU",
        "an idle cgroup weighs 3, about 0.3 % against weight 100",
    ),
    (
        "O(1) pick",
        "the RT pick is a bitmap, EEVDF's O(log n); O(1) names the 2.6.0-2.6.22 scheduler",
    ),
    (
        "On 2.6.26 the\nRT_RUNTIME_SHARE feature",
        "borrowing was unconditional in 2.6.26; the feature came in 3.2",
    ),
    (
        "On 2.6.26 the RT_RUNTIME_SHARE",
        "borrowing was unconditional in 2.6.26; the feature came in 3.2",
    ),
    (
        "Lowering the runtime to 600000 gives it about 40 %",
        "only where RT throttling acts (6.12+: RT group scheduling)",
    ),
    (
        "(RT group limits, RT_RUNTIME_SHARE or the fair server)",
        "the causes depend on the kernel's RT mechanism",
    ),
    (
        ">= 5 % on 6.12+",
        "check's healthy text names this kernel's mechanism",
    ),
    ("about 2.3x", "the BATCH gain is facts::numbers::BATCH_GAIN"),
    ("about 2.5x", "the BATCH gain is facts::numbers::BATCH_GAIN"),
    ("~2.3x", "the BATCH gain is facts::numbers::BATCH_GAIN"),
];

/// The text files under `dir` (recursively) with the given endings.
fn text_files(dir: &Path, endings: &[&str], out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            text_files(&path, endings, out);
        } else if endings.iter().any(|e| path.to_string_lossy().ends_with(e)) {
            out.push(path);
        }
    }
}

#[test]
fn no_kernel_statement_found_wrong_comes_back() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    for dir in ["presets", "assets", "src", "docs"] {
        text_files(
            &root.join(dir),
            &[".toml", ".md", ".rs", ".txt", ".json"],
            &mut files,
        );
    }
    assert!(files.len() > 50, "{} files", files.len());
    // Recorded check reports (the `check diff` baseline) keep what the check printed
    // when they were taken: measurements, not statements schedlab makes now.
    files.retain(|p| !p.starts_with(root.join("assets/reference")));
    let mut found = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap_or_default();
        for (wrong, why) in WRONG_KERNEL_STATEMENTS {
            if text.contains(wrong) {
                found.push(format!("{}: \"{wrong}\" ({why})", path.display()));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

/// Errors are typed (thiserror, or the crate's `Invalid`/`KnobError`): no function in
/// the crate's sources returns or sends a bare `String` as its error.
#[test]
fn no_string_errors_in_the_crate() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    text_files(&root.join("src"), &[".rs"], &mut files);
    let pattern =
        regex_lite::Regex::new(r"Result<[^<>]*(<[^<>]*>)?[^<>]*,\s*String>").expect("pattern");
    let found: Vec<String> = files
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            text.lines()
                .enumerate()
                .filter(|(_, l)| pattern.is_match(l))
                .map(|(n, l)| format!("{}:{}: {}", path.display(), n + 1, l.trim()))
                .collect::<Vec<_>>()
        })
        .collect();
    assert!(
        found.is_empty(),
        "Result<_, String> in:\n{}",
        found.join("\n")
    );
}
