//! `schedlab check` through the binary: every finding, within budget, interruptible, no leftovers.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The documented finding ids, in report order (spelled out here rather than taken from
/// the library, so the test holds the JSON to the documentation).
const IDS: [&str; 11] = [
    "wakeup_latency_other",
    "wakeup_latency_fifo",
    "switch_cost_same_cpu",
    "traced_wakeup_latency",
    "switch_cost_cross_cpu",
    "pipe_wakeup_batch_ratio",
    "nice_fairness_error",
    "fifo_fair_share",
    "steal_time",
    "cpu_speed",
    "knobs",
];

/// The longest any check here may take before the test kills it.
const LIMIT: Duration = Duration::from_secs(60);

/// Spawn `schedlab check ARGS` with stdout and stderr read on threads (a full pipe must
/// not stall the child while we wait for it).
fn spawn_check(args: &[&str]) -> (Child, std::thread::JoinHandle<(String, String)>) {
    let mut child = Command::new(common::exe())
        .arg("check")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn schedlab check");
    let mut out = child.stdout.take().expect("stdout");
    let mut err = child.stderr.take().expect("stderr");
    let readers = std::thread::spawn(move || {
        let e = std::thread::spawn(move || {
            let mut s = String::new();
            let _ = err.read_to_string(&mut s);
            s
        });
        let mut o = String::new();
        let _ = out.read_to_string(&mut o);
        (o, e.join().unwrap_or_default())
    });
    (child, readers)
}

/// Wait for the child at most `limit`; kill it past that and fail.
fn finish(
    mut child: Child,
    readers: std::thread::JoinHandle<(String, String)>,
    limit: Duration,
) -> (std::process::ExitStatus, String, String, Duration) {
    let start = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            break status;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("schedlab check still running after {limit:?}: killed");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let (out, err) = readers.join().expect("reader threads");
    (status, out, err, start.elapsed())
}

fn rt_runtime() -> String {
    std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
        .expect("sched_rt_runtime_us")
        .trim()
        .to_string()
}

/// Processes running this test's schedlab binary (workers included).
fn schedlab_processes() -> Vec<i32> {
    let exe = std::fs::canonicalize(common::exe()).unwrap_or_else(|_| common::exe());
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|p| p == exe)
                && common::alive(*pid)
        })
        .collect()
}

fn assert_every_finding(report: &Value) {
    let findings = report["findings"].as_array().expect("findings");
    let ids: Vec<&str> = findings.iter().filter_map(|f| f["id"].as_str()).collect();
    assert_eq!(ids, IDS, "every finding, in order");
    for f in findings {
        let id = &f["id"];
        assert!(
            ["ok", "notable", "problem"].contains(&f["verdict"].as_str().unwrap_or("")),
            "{id}: verdict {}",
            f["verdict"]
        );
        assert!(
            f["value"].as_f64().is_some_and(f64::is_finite),
            "{id}: value {}",
            f["value"]
        );
        for key in ["title", "unit", "healthy", "explanation", "method"] {
            assert!(
                f[key].as_str().is_some_and(|s| !s.is_empty()),
                "{id}: {key} is empty"
            );
        }
        assert!(f["details"].is_object(), "{id}: details");
    }
}

fn assert_nothing_left(rt_before: &str) {
    assert!(
        common::wait_until(Duration::from_secs(3), || schedlab_processes().is_empty()),
        "schedlab processes left running: {:?}",
        schedlab_processes()
    );
    assert_eq!(rt_runtime(), rt_before, "sched_rt_runtime_us changed");
}

#[test]
fn quick_check_reports_every_finding_within_its_budget() {
    let _guard = common::serial();
    let rt_before = rt_runtime();
    let plots = tempfile::tempdir().expect("temp dir");
    let plot_dir = plots.path().to_str().expect("utf-8 path");
    let (child, readers) = spawn_check(&["--quick", "--json", "-", "--plot-dir", plot_dir]);
    let (status, out, err, wall) = finish(child, readers, LIMIT);
    assert!(status.success(), "{status}: {err}");
    let report: Value = serde_json::from_str(&out).expect("JSON report on stdout");
    let duration = report["duration_s"].as_f64().expect("duration_s");
    eprintln!(
        "schedlab check --quick took {duration:.1} s (process wall {:.1} s)",
        wall.as_secs_f64()
    );
    // 15 s is the budget; CI noise gets some slack.
    assert!(duration <= 20.0, "check --quick took {duration:.1} s");
    assert_eq!(report["quick"], true);
    assert!(report["cpus"].as_u64().is_some_and(|n| n >= 1));
    assert!(report["kernel"].as_str().is_some_and(|k| !k.is_empty()));
    assert_eq!(report["interrupted"], false);
    assert_every_finding(&report);

    // Progress goes to stderr, one plain line per step when it is not a terminal.
    assert!(err.contains("check: [1/10]"), "{err}");
    assert!(err.contains("check: [10/10]"), "{err}");
    for png in ["wakeup_latency.png", "switch_cost.png", "cpu_speed.png"] {
        let path = Path::new(plot_dir).join(png);
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        assert!(size > 0, "{} missing or empty", path.display());
    }
    assert_nothing_left(&rt_before);
}

#[test]
fn an_interrupted_check_still_reports_every_finding_and_ends_promptly() {
    let _guard = common::serial();
    let rt_before = rt_runtime();
    let (child, readers) = spawn_check(&["--json", "-"]);
    // Into the SCHED_FIFO latency measurement (the second, after ~6 s of the first) or
    // the first: either way the FIFO thread must end SCHED_OTHER and the rest be skipped.
    std::thread::sleep(Duration::from_millis(1500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .expect("SIGINT");
    let (status, out, err, wall) = finish(child, readers, Duration::from_secs(15));
    assert!(status.success(), "{status}: {err}");
    assert!(wall < Duration::from_secs(10), "took {wall:?} after SIGINT");
    let report: Value = serde_json::from_str(&out).expect("JSON report on stdout");
    assert_eq!(report["interrupted"], true);
    assert_every_finding(&report);
    let skipped = report["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["details"]["skipped"] == true)
        .count();
    assert!(skipped >= 5, "what had not run is marked skipped: {out}");
    assert_nothing_left(&rt_before);
}
