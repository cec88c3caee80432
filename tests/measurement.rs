//! The instrument must not change the experiment, and what it prints must be possible:
//! no poll on an experiment's pipe, no yield batch timed without a switch, no interval
//! with more CPU plus waiting than its length.

use crate::common;

use std::process::Command;

use serde_json::Value;

/// Every poll-family call `strace -f -y` saw on a pipe during `schedlab ARGS`.
fn polls_on_pipes(args: &[&str]) -> Vec<String> {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("strace.log");
    // Output to files, so the only pipes in the trace are the experiment's.
    let stdout = std::fs::File::create(dir.path().join("out")).expect("out file");
    let stderr_path = dir.path().join("err");
    let stderr = std::fs::File::create(&stderr_path).expect("err file");
    let status = Command::new("strace")
        .args(["-f", "-qq", "-y", "-o"])
        .arg(&log)
        .args(["-e", "trace=poll,ppoll,select,pselect6,epoll_ctl"])
        .arg(common::exe())
        .args(args)
        .stdin(std::process::Stdio::null())
        .stdout(stdout)
        .stderr(stderr)
        .status()
        .expect("run strace");
    assert!(
        status.success(),
        "schedlab under strace failed: {}",
        std::fs::read_to_string(&stderr_path).unwrap_or_default()
    );
    let text = std::fs::read_to_string(&log).expect("strace log");
    text.lines()
        .filter(|l| l.contains("pipe:["))
        .map(str::to_string)
        .collect()
}

#[test]
fn no_worker_polls_an_experiments_pipe_and_the_polled_variant_does() {
    if !common::require("strace", common::have("strace")) {
        return;
    }
    let _guard = common::serial();
    // Both pipe presets: a poll on either end sets the pipe's poll_usage for life and
    // turns every later write into a wake-up call (README, "Observer effects").
    for preset in ["pipe-wakeup", "pipe-affinity"] {
        let polls = polls_on_pipes(&["run", preset, "--duration", "500ms"]);
        assert!(
            polls.is_empty(),
            "{preset}: schedlab's own processes polled the experiment's pipe:\n{}",
            polls.join("\n")
        );
    }
    // The control: the `polled` lesson polls the reader's pipe once, on purpose, and the
    // same trace must see it - so an empty trace above means no poll, not a blind check.
    let polls = polls_on_pipes(&[
        "run",
        "pipe-wakeup",
        "--variant",
        "polled",
        "--duration",
        "500ms",
    ]);
    assert_eq!(
        polls.len(),
        1,
        "the polled variant polls exactly once:\n{}",
        polls.join("\n")
    );
    assert!(polls[0].contains("fd=0<pipe:["), "{}", polls[0]);
}

#[test]
fn yield_batches_without_a_switch_are_dropped_and_counted() {
    if !common::require("root (SCHED_FIFO)", common::is_root()) {
        return;
    }
    let _guard = common::serial();
    // On two CPUs the yielders never hand over to each other: each sched_yield returns
    // at once. None of those batches may be timed as a switch.
    let r = common::run_json(&[
        "yield-latency",
        "--duration",
        "1s",
        "--set",
        "yield-1.cpus=1",
    ]);
    assert!(r["metrics"]["latency"].is_null(), "{}", r["metrics"]);
    let dropped = r["metrics"]["latency_dropped"].as_u64().expect("dropped");
    // At ~0.3 us per yield the pair runs hundreds of thousands of 10-yield batches.
    assert!(dropped > 1000, "{dropped}");
    let text = r["metrics"]["headline"]["text"].as_str().expect("text");
    assert!(text.contains("timed no switch"), "{text}");

    // Together on CPU 0 nearly every batch counts (a few at the start, before the
    // partner has left its start gate, may not).
    let r = common::run_json(&["yield-latency", "--duration", "1s"]);
    let lat = &r["metrics"]["latency"];
    let count = lat["count"].as_u64().expect("count");
    let dropped = r["metrics"]["latency_dropped"].as_u64().expect("dropped");
    assert!(dropped * 100 < count, "{dropped} dropped of {count}: {lat}");
    // The 1998 experiment used two processes: so does the default, the `threads`
    // variant shares one address space.
    let pids = |r: &Value| -> Vec<i64> {
        r["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .filter(|t| t["group"] == "yield")
            .map(|t| t["pid"].as_i64().expect("pid"))
            .collect()
    };
    let own = pids(&r);
    assert_eq!(own.len(), 2);
    assert_ne!(own[0], own[1], "two processes by default");
    let threads = common::run_json(&[
        "yield-latency",
        "--duration",
        "500ms",
        "--variant",
        "threads",
    ]);
    let shared = pids(&threads);
    assert_eq!(shared[0], shared[1], "one process in the threads variant");
}

#[test]
fn every_interval_of_the_csv_is_physically_possible() {
    if !common::require("root (SCHED_FIFO)", common::is_root()) {
        return;
    }
    let _guard = common::serial();
    // rt-throttle's fair thread waits ~950 ms of every second behind the FIFO spinner
    // and schedstat credits that wait only when it runs: at 20 ms a sample would show
    // 47x its length of waiting unless it is apportioned.
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = dir.path().join("run.csv");
    let out = common::schedlab(&[
        "run",
        "rt-throttle",
        "--duration",
        "2500ms",
        "--interval",
        "20ms",
        "--csv",
        csv.to_str().expect("path"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut rows = csv::Reader::from_path(&csv).expect("csv");
    let headers = rows.headers().expect("headers").clone();
    let col = |name: &str| headers.iter().position(|h| h == name).expect(name);
    let (cpu, wait) = (col("cpu_share"), col("wait_share"));
    let mut seen_wait = 0.0f64;
    for row in rows.records() {
        let row = row.expect("row");
        let (Ok(c), Ok(w)) = (row[cpu].parse::<f64>(), row[wait].parse::<f64>()) else {
            continue;
        };
        assert!(c <= 1.0 + 1e-6, "cpu share above one CPU: {row:?}");
        assert!(
            c + w <= 1.0 + 1e-6,
            "running plus waiting above 100 %: {row:?}"
        );
        seen_wait = seen_wait.max(w);
    }
    assert!(
        seen_wait > 0.5,
        "the fair thread does wait: max wait share {seen_wait}"
    );
}
