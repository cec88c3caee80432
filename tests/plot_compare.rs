//! `schedlab compare` and `--plot` as a user runs them: JSON shape, and plot files that
//! are real PNG/SVG images.

use crate::common;

use std::path::Path;

use serde_json::Value;

const PNG_MAGIC: &[u8] = b"\x89PNG\r\n\x1a\n";

fn ok(args: &[&str]) -> Vec<u8> {
    let out = common::schedlab(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn assert_png(path: &Path) {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(bytes.starts_with(PNG_MAGIC), "{} is no PNG", path.display());
    assert!(
        bytes.len() > 20_000,
        "{}: only {} bytes",
        path.display(),
        bytes.len()
    );
}

#[test]
fn compare_runs_both_sides_each_round_and_plots() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let png = dir.path().join("compare.png");
    let stdout = ok(&[
        "compare",
        "pipe-wakeup",
        "--a",
        "writer.policy=other",
        "--b",
        "writer.policy=batch,reader.policy=batch",
        "--rounds",
        "2",
        "--duration",
        "1s",
        "--json",
        "-",
        "--plot",
        png.to_str().expect("utf-8 path"),
    ]);
    let r: Value = serde_json::from_slice(&stdout).expect("JSON report");
    assert_eq!(r["preset"], "pipe-wakeup");
    assert_eq!(r["rounds"], 2);
    assert_eq!(r["interrupted"], false);
    assert_eq!(r["a"], serde_json::json!(["writer.policy=other"]));
    assert_eq!(
        r["b"],
        serde_json::json!(["writer.policy=batch", "reader.policy=batch"])
    );
    let metrics = r["metrics"].as_array().expect("metrics");
    let names: Vec<&str> = metrics.iter().filter_map(|m| m["name"].as_str()).collect();
    for name in [
        "writer throughput",
        "writer CPU share",
        "reader CPU share",
        "writer switches",
    ] {
        assert!(names.contains(&name), "{name} missing from {names:?}");
    }
    for m in metrics {
        for side in ["a", "b"] {
            let values = m[side]["values"].as_array().expect("values");
            assert_eq!(values.len(), 2, "{side} of {m}");
            for key in ["min", "median", "max"] {
                assert!(m[side][key].is_f64(), "{side}.{key} of {m}");
            }
        }
        assert_eq!(m["ratios"].as_array().expect("ratios").len(), 2, "{m}");
        assert!(
            m["ratio_median"].as_f64().is_some_and(f64::is_finite),
            "{m}"
        );
    }
    let throughput = metrics
        .iter()
        .find(|m| m["name"] == "writer throughput")
        .expect("throughput");
    assert_eq!(throughput["unit"], "bytes/s");
    assert!(throughput["a"]["min"].as_f64().expect("min") > 0.0);
    assert_png(&png);
}

#[test]
fn compare_prints_a_table_without_json() {
    let _guard = common::serial();
    let stdout = ok(&[
        "compare",
        "pipe-wakeup",
        "--a",
        "writer.policy=other",
        "--b",
        "writer.policy=batch",
        "--rounds",
        "1",
        "--duration",
        "500ms",
    ]);
    let text = String::from_utf8_lossy(&stdout);
    assert!(text.starts_with("compare pipe-wakeup on Linux"), "{text}");
    assert!(text.contains("\nA: writer.policy=other\n"), "{text}");
    assert!(text.contains("B/A PER ROUND"), "{text}");
    assert!(text.contains("writer throughput  MB/s"), "{text}");
}

#[test]
fn bad_compare_and_plot_input_is_a_one_line_usage_error() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["run", "pipe-wakeup", "--plot", "x.jpg"],
            "--plot: plot file must end in .png or .svg, not \"x.jpg\"",
        ),
        (
            &[
                "sweep",
                "pipe-wakeup",
                "--knob",
                "writer.nice=0,5",
                "--plot",
                "x",
            ],
            "plot file must end in .png or .svg",
        ),
        (
            &[
                "compare",
                "pipe-wakeup",
                "--a",
                "writer=batch",
                "--b",
                "writer.policy=batch",
            ],
            "--a: bad setting \"writer=batch\"",
        ),
        (
            &[
                "compare",
                "pipe-wakeup",
                "--a",
                "writer.policy=other",
                "--b",
                "nosuch.policy=batch",
            ],
            "--b: ",
        ),
        (
            &[
                "compare",
                "pipe-wakeup",
                "--a",
                "writer.policy=other",
                "--b",
                "writer.policy=batch",
                "--rounds",
                "0",
            ],
            "--rounds 0: allowed 1..100",
        ),
    ];
    for (args, want) in cases {
        let out = common::schedlab(args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn run_plots_svg_with_the_preset_name() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("run.svg");
    ok(&[
        "run",
        "pipe-wakeup",
        "--duration",
        "1s",
        "--at",
        "500ms:writer.policy=batch",
        "--plot",
        svg.to_str().expect("utf-8 path"),
    ]);
    let text = std::fs::read_to_string(&svg).expect("SVG written");
    assert!(text.contains("<svg"), "not an SVG");
    assert!(text.contains("pipe-wakeup"), "no preset name in the SVG");
    assert!(text.contains("writer.policy=batch"), "no knob change label");
}

#[test]
fn sweep_plots_png() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let png = dir.path().join("sweep.png");
    ok(&[
        "sweep",
        "pipe-wakeup",
        "--knob",
        "writer.policy=other,batch",
        "--duration",
        "500ms",
        "--plot",
        png.to_str().expect("utf-8 path"),
    ]);
    assert_png(&png);
}

#[test]
fn sigint_ends_a_compare_early_with_the_complete_rounds() {
    use std::process::{Command, Stdio};
    use std::time::Duration;

    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("c.json");
    let mut run = common::Spawned::new(
        Command::new(common::exe())
            .args([
                "compare",
                "pipe-wakeup",
                "--a",
                "writer.policy=other",
                "--b",
                "writer.policy=batch",
                "--rounds",
                "50",
                "--duration",
                "1s",
                "--json",
                json.to_str().expect("utf-8 path"),
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn schedlab"),
    );
    // Each side of a round starts its own workers: the third set of workers is round
    // 2's A, so round 1 is complete by then (however slow the machine).
    let pid = run.id() as i32;
    let mut generations = 0;
    let mut last: Vec<i32> = Vec::new();
    let seen_round = common::wait_until(Duration::from_secs(120), || {
        let now = common::children(pid);
        if !now.is_empty() && now.iter().all(|p| !last.contains(p)) {
            generations += 1;
            last = now;
        }
        generations >= 3
    });
    assert!(
        seen_round,
        "compare never started round 2 ({generations} worker sets)"
    );
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT");
    let status = run
        .wait_for_exit(Duration::from_secs(30))
        .expect("compare ends within 30 s of SIGINT");
    assert_eq!(status.code(), Some(130), "128 + SIGINT, after a clean end");
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("JSON");
    assert_eq!(r["interrupted"], true);
    let rounds = r["rounds"].as_u64().expect("rounds") as usize;
    assert!(
        (1..50).contains(&rounds),
        "{rounds} rounds: the complete round before SIGINT, not all 50"
    );
    for m in r["metrics"].as_array().expect("metrics") {
        let len = |side: &str| m[side]["values"].as_array().map_or(0, Vec::len);
        assert_eq!(len("b"), rounds, "{m}");
        assert!(len("a") == rounds || len("a") == rounds + 1, "{m}");
        assert_eq!(m["ratios"].as_array().expect("ratios").len(), rounds, "{m}");
    }
}
