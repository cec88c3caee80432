//! The `schedlab` binary as a user runs it: presets, headless runs with JSON and CSV,
//! bad input, and interruption.

use crate::common;

use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::Value;

fn task<'a>(report: &'a Value, name: &str) -> &'a Value {
    report["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no task {name} in {report}"))
}

/// The report's `metrics.cpu` entry of CPU `n`.
fn cpu(report: &Value, n: u64) -> &Value {
    report["metrics"]["cpu"]
        .as_array()
        .expect("metrics.cpu")
        .iter()
        .find(|c| c["cpu"] == n)
        .unwrap_or_else(|| panic!("no cpu{n} in {}", report["metrics"]["cpu"]))
}

#[test]
fn presets_lists_all_six_and_shows_one() {
    let out = common::schedlab(&["presets"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    for name in [
        "pipe-wakeup",
        "pipe-affinity",
        "yield-latency",
        "rt-throttle",
        "nice-ladder",
        "parallel-build",
    ] {
        assert!(text.contains(name), "{name} missing from:\n{text}");
    }
    let out = common::schedlab(&["presets", "rt-throttle"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("fifo.priority = 1"), "{text}");
    assert!(
        text.contains("sched_rt_runtime_us"),
        "teaching note shown:\n{text}"
    );
    assert!(text.contains("thread of process rt"), "{text}");
}

#[test]
fn json_report_has_the_documented_shape_and_kernel_read_back() {
    let _guard = common::serial();
    let r = common::run_json(&["pipe-wakeup", "--duration", "1s"]);
    for key in [
        "preset",
        "kernel",
        "cpus",
        "duration_s",
        "settings",
        "tasks",
        "metrics",
    ] {
        assert!(!r[key].is_null(), "missing {key}");
    }
    assert_eq!(r["preset"], "pipe-wakeup");
    assert!(r["duration_s"].as_f64().expect("duration") > 0.8);
    assert_eq!(r["settings"]["writer.cpus"], "0");
    for t in r["tasks"].as_array().expect("tasks") {
        for key in [
            "name",
            "pid",
            "tid",
            "policy",
            "nice",
            "rt_priority",
            "cpus",
            "cpu_share",
            "wait_share",
            "switches_per_s",
            "voluntary_per_s",
            "involuntary_per_s",
            "migrations_per_s",
            "progress_per_s",
            "progress_unit",
        ] {
            assert!(t.get(key).is_some(), "task lacks {key}: {t}");
        }
        assert_eq!(t["policy"], "other");
        assert_eq!(t["cpus"], "0");
    }
    let writer = task(&r, "writer");
    assert!(writer["progress_per_s"].as_f64().expect("rate") > 0.0);
    assert_eq!(writer["progress_unit"], "bytes");
    // Writer and reader share CPU 0 (both pinned there). The writer never blocks (30-byte
    // writes into a 64 KiB pipe that the reader drains at every wake-up), so CPU 0 is
    // never idle: /proc/stat's idle, counted in 10 ms ticks, is 0 but for one tick of
    // the ~1 s run (0.01) and the run's edges.
    let share = |t: &Value| t["cpu_share"].as_f64().expect("share");
    let (w, rd) = (share(writer), share(task(&r, "reader")));
    let cpu0 = cpu(&r, 0);
    assert!(
        cpu0["idle_share"].as_f64().expect("idle_share") <= 0.02,
        "CPU 0 idle while an always-runnable writer is pinned there: {cpu0}"
    );
    // What the pair gets depends on what other programs take of CPU 0 (steal, foreign
    // load: 0.1-0.5 CPU on a loaded CI machine), so the split is judged within the
    // pair. Both are nice 0: while both are runnable EEVDF splits the CPU evenly, and
    // only the writer also runs while the reader sleeps, so the writer gets at least
    // half of the pair's time, short of at most the lag bound (one 1.4 ms base slice
    // plus a 4 ms tick, HZ=250) per task and a tick of run-time lag at each end: about
    // 0.02 of a 1 s run. (Measured: 0.64-0.65, the reader pays for every wake-up.)
    let writer_part = w / (w + rd);
    assert!(
        (0.48..1.0).contains(&writer_part),
        "writer {w:.3}, reader {rd:.3}: the always-runnable writer gets at least half the pair's CPU"
    );
    assert!(rd > 0.0, "the reader runs: it drains every byte");
    let m = &r["metrics"];
    assert_eq!(m["throughput_unit"], "bytes/s");
    assert!(m["throughput_per_s"].as_f64().expect("throughput") > 0.0);
}

#[test]
fn batch_pipeline_is_not_wakeup_preempted() {
    let _guard = common::serial();
    let invol = |r: &Value| {
        task(r, "writer")["involuntary_per_s"]
            .as_f64()
            .expect("rate")
    };
    let other = common::run_json(&["pipe-wakeup", "--duration", "1.5s"]);
    // On 6.18 the pinned pipeline is bistable: one BATCH run in five to ten stays in
    // the ping-pong regime it would have under OTHER on a quiet machine, and with work
    // coming and going on the other CPU (a build beside the tests) most runs can
    // (README, "bistable"); a CPU hog beside it left 2 of 5 in it here. Ten tries make
    // a false failure rare even then.
    let mut seen = Vec::new();
    for _ in 0..10 {
        let batch = common::run_json(&["pipe-wakeup", "--duration", "1.5s", "--variant", "batch"]);
        assert_eq!(task(&batch, "writer")["policy"], "batch");
        assert_eq!(task(&batch, "reader")["policy"], "batch");
        // Under OTHER nearly every write preempts the writer; under BATCH almost none does.
        if invol(&batch) * 5.0 < invol(&other) {
            return;
        }
        seen.push(invol(&batch));
    }
    panic!(
        "writer involuntary switches/s: batch {seen:?} vs other {}",
        invol(&other)
    );
}

#[test]
fn every_preset_runs_headless_and_reports_what_the_kernel_applied() {
    let _guard = common::serial();
    assert_rt_throttle_applies_fifo_and_the_spinner_owns_cpu0();
    assert_nice_ladder_applies_the_ladder_and_nice_decides_the_split();
    assert_yield_latency_applies_its_knobs_and_reports_latencies();
    let r = common::run_json(&["pipe-affinity", "--duration", "1s", "--variant", "distinct"]);
    assert_eq!(task(&r, "producer")["cpus"], "0");
    assert_eq!(task(&r, "consumer")["cpus"], "1");
    assert_eq!(r["metrics"]["throughput_unit"], "loops/s");
    assert_parallel_build_runs_its_stages_to_the_end();
}

fn assert_rt_throttle_applies_fifo_and_the_spinner_owns_cpu0() {
    let r = common::run_json(&["rt-throttle", "--duration", "1.2s"]);
    let fifo = task(&r, "fifo");
    assert_eq!(
        (fifo["policy"].as_str(), fifo["rt_priority"].as_u64()),
        (Some("fifo"), Some(1))
    );
    let fair = task(&r, "fair");
    assert_eq!(
        (
            fair["policy"].as_str(),
            fair["nice"].as_i64(),
            fair["cpus"].as_str()
        ),
        (Some("other"), Some(-20), Some("0"))
    );
    assert_eq!(fifo["pid"], fair["pid"], "one process, two threads");
    assert_ne!(fifo["tid"], fair["tid"]);
    // The spinner holds CPU 0 but for what RT throttling (950000 of 1000000 us) and the
    // fair server (50 ms of every 1 s, 6.12+) leave the fair thread: the two overlap
    // (measured: the fair thread gets 50-53 ms a second, not 100). A 1.2 s run has no
    // warm-up (the preset's 1 s applies from 2 s runs), so the window T = summary_s
    // starts anywhere in the RT period:
    // - at most T - 50 ms for FIFO: the fair thread is starved from the start, so the
    //   deferred fair server runs it 50 ms within the first second;
    // - at least T - 100 ms for FIFO: T < 2 s touches at most two periods' fair windows.
    // Shares are run time (task clock, without steal) over wall time, so steal comes
    // out of the spinner's part: the lower bound also loses cpu0's steal. Each end can
    // lag a tick (4 ms) of run time: 0.01 either way covers that.
    let t = r["summary_s"].as_f64().expect("summary_s");
    let steal = cpu(&r, 0)["steal_share"].as_f64().expect("steal");
    let fifo_share = fifo["cpu_share"].as_f64().expect("share");
    let (low, high) = ((t - 0.1) / t - steal - 0.01, (t - 0.05) / t + 0.01);
    assert!(
        (low..=high).contains(&fifo_share),
        "the spinner owns CPU 0 but for the throttled 5 %: {fifo_share:.4} not in {low:.3}..={high:.3} (T {t:.3} s, steal {steal:.3})"
    );
    assert_eq!(r["metrics"]["headline"]["kind"], "share");
}

fn assert_nice_ladder_applies_the_ladder_and_nice_decides_the_split() {
    let r = common::run_json(&[
        "nice-ladder",
        "--duration",
        "1.5s",
        "--set",
        "busy.nice=-20..20:4",
    ]);
    let tasks = r["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), 11);
    assert_eq!(
        tasks[10]["nice"], 19,
        "nice 20 is clamped to 19 by the kernel"
    );
    assert!(tasks.iter().all(|t| t["ideal_share"].is_f64()));
    // Nice decides the split: the nice -20 rung gets the most, and the three highest
    // rungs together far more than the five lowest. (How close the split comes to the
    // weights is the kernel's business and `check`'s finding: 1-6 % here, but a
    // 1.5 s run on a busy CI machine saw 20 % while the balancer was still settling.)
    let shares: Vec<f64> = tasks
        .iter()
        .map(|t| t["cpu_share"].as_f64().expect("share"))
        .collect();
    let top = shares[0];
    assert!(
        shares[1..].iter().all(|s| *s < top),
        "nice -20 gets the most: {shares:?}"
    );
    let high: f64 = shares[..3].iter().sum();
    let low: f64 = shares[6..].iter().sum();
    assert!(high > 4.0 * low, "weights decide: {shares:?}");
    let error = r["metrics"]["fairness_error"].as_f64().expect("error");
    assert!((0.0..=1.0).contains(&error), "{error}");
}

fn assert_yield_latency_applies_its_knobs_and_reports_latencies() {
    let r = common::run_json(&["yield-latency", "--duration", "1s", "--set", "hog.count=2"]);
    assert_eq!(task(&r, "yield-0")["policy"], "fifo");
    assert_eq!(task(&r, "hog-1")["nice"], 10);
    let lat = &r["metrics"]["latency"];
    for key in [
        "min_ns", "p50_ns", "p90_ns", "p99_ns", "p999_ns", "max_ns", "mean_ns", "count",
    ] {
        assert!(lat[key].is_u64(), "latency lacks {key}: {lat}");
    }
    assert!(
        lat["min_ns"].as_u64() <= lat["p50_ns"].as_u64()
            && lat["p50_ns"].as_u64() <= lat["max_ns"].as_u64()
    );
}

fn assert_parallel_build_runs_its_stages_to_the_end() {
    let r = common::run_json(&[
        "parallel-build",
        "--duration",
        "30s",
        "--set",
        "build.depend_jobs=20",
        "--set",
        "build.compile_jobs=4",
    ]);
    let stages = r["metrics"]["stages"].as_array().expect("stages");
    let names: Vec<&str> = stages.iter().filter_map(|s| s["name"].as_str()).collect();
    assert_eq!(names, ["depend", "compile", "link"]);
    assert_eq!(stages[0]["jobs"], 20);
    assert_eq!(
        task(&r, "build")["state"],
        "exited",
        "the build finished before 30 s"
    );
    assert!(r["duration_s"].as_f64().expect("duration") < 30.0);
}

#[test]
fn csv_has_a_row_per_task_per_sample() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = dir.path().join("series.csv");
    let out = common::schedlab(&[
        "run",
        "rt-throttle",
        "--duration",
        "1s",
        "--interval",
        "100ms",
        "--csv",
        csv.to_str().expect("utf8"),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&csv).expect("csv written");
    let mut lines = text.lines();
    let header = lines.next().expect("header");
    assert!(
        header.starts_with("t_s,task,pid,tid,policy,nice,cpu,cpu_share,wait_share"),
        "{header}"
    );
    let rows: Vec<&str> = lines.collect();
    let fifo_rows = rows.iter().filter(|r| r.contains(",fifo,")).count();
    assert!(
        fifo_rows >= 8,
        "about 10 samples of the fifo thread, got {fifo_rows}:\n{text}"
    );
    assert!(rows.iter().any(|r| r.contains(",fair,")));
}

#[test]
fn bad_input_is_one_line_naming_what_is_allowed_with_exit_code_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broken = dir.path().join("broken.toml");
    std::fs::write(
        &broken,
        "name = 'x'\nsummary = 's'\nnote = 'n'\n[metric]\nheadline = 'speed'\ntask = 'a'\n",
    )
    .expect("write");
    let broken = broken.to_str().expect("utf8").to_string();
    let bad_warmup = dir.path().join("warmup.toml");
    std::fs::write(
        &bad_warmup,
        "name = 'x'\nsummary = 's'\nnote = 'n'\n[metric]\nheadline = 'share'\ntask = 'a'\nwarmup = 'soon'\n[[task]]\nname = 'a'\nworker = 'spin'\n",
    )
    .expect("write");
    let bad_warmup = bad_warmup.to_str().expect("utf8").to_string();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["run", "pipe-wakeup", "--set", "nobody.nice=1"],
            "unknown task \"nobody\"",
        ),
        (
            vec!["run", "pipe-wakeup", "--set", "writer.colour=red"],
            "allowed are policy, priority, nice",
        ),
        (
            vec!["run", "pipe-wakeup", "--set", "writer.policy=fast"],
            "other, batch, idle, fifo, rr, deadline",
        ),
        (
            vec!["run", "pipe-wakeup", "--set", "writer.nice=99"],
            "allowed -20..19",
        ),
        (
            vec!["run", "pipe-wakeup", "--set", "writer.cpus=7"],
            "not online here",
        ),
        (
            vec!["run", "pipe-wakeup", "--set", "writer"],
            "TASK.KNOB=VALUE",
        ),
        (vec!["run", "no-such-preset"], "available are"),
        (
            vec!["run", "pipe-wakeup", "--variant", "turbo"],
            "its variants are batch",
        ),
        (
            vec!["run", "pipe-wakeup", "--duration", "soon"],
            "--duration",
        ),
        (
            vec!["run", "rt-throttle", "--duration", "2s", "--warmup", "2s"],
            "--warmup 2s: allowed 0s up to (not including) --duration",
        ),
        (vec!["run", bad_warmup.as_str()], "[metric] warmup"),
        (vec!["run", broken.as_str()], "line 5"),
        (vec!["presets", "no-such-preset"], "unknown preset"),
    ];
    for (args, want) in cases {
        let out = common::schedlab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: want {want:?} in {err}");
        assert_eq!(
            err.trim_end().lines().count(),
            1,
            "{args:?}: one line: {err}"
        );
    }
}

fn spawn_run(args: &[&str]) -> std::process::Child {
    Command::new(common::exe())
        .arg("run")
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn schedlab")
}

#[test]
fn sigterm_ends_the_run_cleanly_with_a_report_and_no_workers_left() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("r.json");
    let mut run = common::Spawned::new(spawn_run(&[
        "nice-ladder",
        "--duration",
        "60s",
        "--json",
        json.to_str().expect("utf8"),
    ]));
    let pid = run.id() as i32;
    assert!(common::wait_until(
        Duration::from_secs(5),
        || common::children(pid).len() == 21
    ));
    let workers = common::children(pid);
    std::thread::sleep(Duration::from_millis(500));
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("kill");
    let status = run
        .wait_for_exit(Duration::from_secs(30))
        .expect("schedlab ends within 30 s of SIGTERM");
    assert_eq!(status.code(), Some(143), "128 + SIGTERM, after a clean end");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
    assert_eq!(report["interrupted"], true);
    for w in workers {
        assert!(
            common::wait_until(common::PATIENCE, || !common::alive(w)),
            "worker {w} survived"
        );
    }
}

#[test]
fn sigkill_of_schedlab_takes_its_workers_down_too() {
    let _guard = common::serial();
    let mut run = common::Spawned::new(spawn_run(&["rt-throttle", "--duration", "60s"]));
    let pid = run.id() as i32;
    assert!(common::wait_until(common::PATIENCE, || {
        !common::children(pid).is_empty()
    }));
    std::thread::sleep(Duration::from_millis(200));
    let workers = common::children(pid);
    run.child().kill().expect("SIGKILL");
    run.child().wait().expect("wait");
    for w in workers {
        assert!(
            common::wait_until(common::PATIENCE, || !common::alive(w)),
            "worker {w} outlived a SIGKILLed schedlab"
        );
    }
}

#[test]
fn without_root_a_preset_says_what_it_cannot_do_and_runs_the_rest() {
    // Drop to `nobody` the way an ordinary user would run schedlab.
    let setpriv = std::path::Path::new("/usr/bin/setpriv");
    if !common::require(
        "root and setpriv (to become an ordinary user)",
        common::is_root() && setpriv.exists(),
    ) {
        return;
    }
    let _guard = common::serial();
    let home = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(
        home.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .expect("chmod");
    let out = rt_throttle_as_nobody(setpriv, home.path(), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // FIFO and nice -20 define this experiment: without them the numbers are printed,
    // marked, and the exit code says the result is not the experiment.
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(r["partial"], true);
    assert_eq!(
        r["refused"].as_array().map(Vec::len),
        Some(2),
        "{}",
        r["refused"]
    );
    let fifo = task(&r, "fifo");
    assert_eq!(fifo["policy"], "other", "an ordinary user cannot make FIFO");
    assert_two_other_threads_split_cpu0_evenly(&r);
    assert_the_refusals_are_said_once(&r, &stderr);
    let out = rt_throttle_as_nobody(setpriv, home.path(), &["--allow-partial"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("JSON report");
    assert_eq!(r["partial"], true, "still marked");
}

/// A 1 s rt-throttle run as `nobody` (through `setpriv`, with `home` as its home), with
/// `extra` arguments.
fn rt_throttle_as_nobody(
    setpriv: &std::path::Path,
    home: &std::path::Path,
    extra: &[&str],
) -> std::process::Output {
    Command::new(setpriv)
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(common::exe())
        .args(["run", "rt-throttle", "--duration", "1s", "--json", "-"])
        .args(extra)
        .env("HOME", home)
        .env("TMPDIR", home)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("SCHEDLAB_JOURNAL")
        .env_remove("SCHEDLAB_STATE_DIR")
        .output()
        .expect("run as nobody")
}

fn assert_two_other_threads_split_cpu0_evenly(r: &Value) {
    // Two SCHED_OTHER nice-0 threads pinned to CPU 0, both always runnable: CPU 0 is
    // never idle (one 10 ms /proc/stat tick over the run at most, plus its edges) and
    // the two split what other programs leave (0.5 each on an idle machine, 0.12 each
    // seen beside 0.76 CPU of foreign load) evenly. EEVDF keeps each task's lag within
    // a base slice (1.4 ms) plus a tick (4 ms), and each end of the run can miss a tick
    // of run time: the difference stays within 2 * (5.4 + 4) ms over T seconds.
    let (a, b) = (
        task(r, "fifo")["cpu_share"].as_f64().expect("share"),
        task(r, "fair")["cpu_share"].as_f64().expect("share"),
    );
    let t = r["summary_s"].as_f64().expect("summary_s");
    assert!(
        (a - b).abs() <= 0.019 / t,
        "fifo {a:.4} and fair {b:.4} split CPU 0 evenly (T {t:.3} s)"
    );
    assert!(a > 0.0 && b > 0.0, "both ran: {a} {b}");
    let cpu0 = cpu(r, 0);
    assert!(
        cpu0["idle_share"].as_f64().expect("idle_share") <= 0.02,
        "two spinners keep CPU 0 busy: {cpu0}"
    );
}

/// The report and the terminal say what was refused and why, each refusal once.
fn assert_the_refusals_are_said_once(r: &Value, stderr: &str) {
    let warnings = r["warnings"].to_string();
    assert!(
        warnings.contains("fifo") && warnings.contains("root"),
        "the report says what was refused and why: {warnings}"
    );
    assert!(
        stderr.contains("root"),
        "the terminal says so too: {stderr}"
    );
    // Each refusal once on the terminal: the nice -20 refusal is one line, not two.
    assert_eq!(stderr.matches("nice -20").count(), 1, "{stderr}");
}
