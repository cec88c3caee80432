//! Attach and command modes against real processes: knobs reach a process schedlab did
//! not start (read back from /proc), are put back at exit, after SIGKILL by `schedlab
//! restore`, or kept with --keep; new threads and children join; a command's output
//! is counted by its probe.

use crate::common;

use std::process::{Child, Command, Stdio};

use common::{exe, json_output, schedlab, serial, wait_until};

/// A process schedlab did not start; killed when the test ends, however it ends.
struct Foreign(Child);

impl Foreign {
    /// `sleep 60`: one thread that never runs, so nothing it does disturbs the run.
    fn sleeper() -> Foreign {
        Foreign(
            Command::new("sleep")
                .arg("60")
                .spawn()
                .expect("start sleep"),
        )
    }

    /// A shell busy loop that gets most of a CPU however busy the host is, so what it
    /// runs is never lost in the host's noise: nice -10, in a session of its own whose
    /// autogroup (where the kernel has them) weighs nice -10 too, as a group of its own
    /// competes with each other session as a whole whatever its tasks' nice.
    fn spinner() -> Foreign {
        let child = Command::new("nice")
            .args(["-n", "-10", "setsid", "sh", "-c", "while :; do :; done"])
            .spawn()
            .expect("start a busy loop");
        let pid = child.id();
        let spinner = Foreign(child);
        // setsid runs in the same process (it forks only for a group leader): wait
        // for the exec so the autogroup written is the loop's own.
        let own_session = wait_until(common::PATIENCE, || {
            common::stat_field(pid as i32, 6) == Some(i64::from(pid))
        });
        assert!(own_session, "the busy loop {pid} never got its own session");
        let _ = std::fs::write(format!("/proc/{pid}/autogroup"), "-10");
        spinner
    }

    fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for Foreign {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// nice (field 19) and policy (field 41) of a task, from /proc/PID/stat.
fn nice_and_policy(pid: i32) -> (i64, i64) {
    let field = |n| common::stat_field(pid, n).expect("stat field");
    (field(19), field(41))
}

const SCHED_BATCH: i64 = 3;

#[test]
fn a_knob_turned_on_an_attached_process_reaches_it_and_is_put_back_at_exit() {
    let _s = serial();
    let p = Foreign::sleeper();
    let pid = p.pid().to_string();
    // OTHER at the nice it inherited (0, or the test runner's own).
    let found = nice_and_policy(p.pid());
    assert_eq!(found.1, 0, "sleep starts as OTHER");
    let run = Command::new(exe())
        .args(["run", "--pid", &pid, "--duration", "3s", "--json", "-"])
        .args(["--set", "sleep.policy=batch", "--set", "sleep.nice=5"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("schedlab run --pid");
    // Applied before the gate opens; schedlab starts in well under the 3 s it runs.
    let applied = wait_until(common::PATIENCE, || {
        nice_and_policy(p.pid()) == (5, SCHED_BATCH)
    });
    let out = run.wait_with_output().expect("run ends");
    let report = json_output(&out);
    assert!(applied, "the kernel never showed batch nice 5 on {pid}");
    assert_eq!(report["preset"], "attached");
    let task = &report["tasks"][0];
    assert_eq!(task["name"], "sleep");
    assert_eq!(task["pid"].as_i64(), Some(i64::from(p.pid())));
    // What the sampler read from /proc during the run.
    assert_eq!(task["policy"], "batch");
    assert_eq!(task["nice"], 5);
    // A sleeping process takes no CPU: its share is 0 to the sampler's resolution.
    assert!(task["cpu_share"].as_f64().expect("share") < 0.01, "{task}");
    assert_eq!(
        nice_and_policy(p.pid()),
        found,
        "put back as found when schedlab exits"
    );
    assert!(
        p.0.id() > 0 && common::alive(p.pid()),
        "the process lives on"
    );
}

#[test]
fn keep_leaves_the_change_and_restore_puts_one_back_after_sigkill() {
    let _s = serial();
    let p = Foreign::sleeper();
    let pid = p.pid().to_string();
    let out = schedlab(&[
        "run",
        "--pid",
        &pid,
        "--keep",
        "--set",
        "sleep.nice=7",
        "--duration",
        "1s",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(nice_and_policy(p.pid()).0, 7, "--keep: not put back");

    // A schedlab killed mid-run cannot put anything back: the journal can.
    let mut run = Command::new(exe())
        .args([
            "run",
            "--pid",
            &pid,
            "--set",
            "sleep.nice=3",
            "--duration",
            "30s",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("schedlab run");
    let applied = wait_until(common::PATIENCE, || nice_and_policy(p.pid()).0 == 3);
    let _ = run.kill();
    let _ = run.wait();
    assert!(applied, "nice 3 never reached {pid}");
    assert_eq!(nice_and_policy(p.pid()).0, 3, "SIGKILL restores nothing");
    let out = schedlab(&["restore"]);
    let text =
        String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{text}");
    // The journal holds the task as found by that run: nice 7 (left by --keep).
    assert_eq!(nice_and_policy(p.pid()).0, 7, "restore put it back: {text}");
    assert!(
        text.contains("task sleep"),
        "restore names the task: {text}"
    );
}

#[test]
fn new_children_of_a_command_join_and_its_probe_counts_every_line() {
    let _s = serial();
    // The child starts 0.3 s in and sleeps to the end: the next look for new tasks (one
    // a second) finds it, so it is in the report.
    let out = schedlab(&[
        "run",
        "--duration",
        "3s",
        "--json",
        "-",
        "--progress",
        "stdout-lines",
        "--",
        "sh",
        "-c",
        "seq 1 1000; sleep 0.3; sleep 10 & wait",
    ]);
    let report = json_output(&out);
    let tasks = report["tasks"].as_array().expect("tasks");
    let names: Vec<&str> = tasks.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names[..2], ["sh", "probe"], "{names:?}");
    assert!(
        tasks
            .iter()
            .skip(2)
            .any(|t| t["name"].as_str().is_some_and(|n| n.starts_with("sleep"))),
        "the sleep sh forked after 0.3 s joined: {names:?}"
    );
    // seq writes exactly 1000 lines into the pipe; the probe counts each once.
    assert_eq!(tasks[1]["progress_total"].as_u64(), Some(1000));
    assert_eq!(tasks[1]["progress_unit"], "lines");
}

#[test]
fn tasks_that_join_a_traced_run_are_traced_from_then_on() {
    if !common::require("root", common::is_root()) {
        return;
    }
    let _s = serial();
    // sh forks a subshell 0.3 s in that sleeps 10 ms at a time (a switch and a wake-up
    // each): it joins at the next look (about 1 s in) and the running tracer must count
    // it from then on, without a restart.
    let out = schedlab(&[
        "run",
        "--duration",
        "3s",
        "--trace",
        "--json",
        "-",
        "--",
        "sh",
        "-c",
        "sleep 0.3; (i=0; while [ $i -lt 400 ]; do sleep 0.01; i=$((i+1)); done) & wait",
    ]);
    let report = json_output(&out);
    let tasks = report["tasks"].as_array().expect("tasks");
    let joined: Vec<&serde_json::Value> = tasks
        .iter()
        .skip(1)
        .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with("sh")))
        .collect();
    assert!(!joined.is_empty(), "the subshell joined: {tasks:?}");
    // About 1.5-2 s of it traced at ~100 switches/s (each sleep is one); the sampler's
    // /proc count over the same time is the reference.
    // The subshell is the joined sh with the most switches (a child caught between its
    // fork and its exec of sleep is an "sh" too, and exits at once).
    let sched = joined
        .iter()
        .map(|t| &t["sched"])
        .max_by_key(|s| s["switches_in"].as_u64().unwrap_or(0))
        .expect("a joined sh");
    let traced = sched["switches_in"].as_u64().unwrap_or(0);
    assert!(traced > 50, "the joined subshell was traced: {sched}");
    let ratio = sched["switches_vs_procfs"].as_f64().expect("ratio");
    assert!((0.9..=1.1).contains(&ratio), "{sched}");
}

#[test]
fn refusals_are_one_line_usage_errors() {
    for (args, says) in [
        (vec!["run", "--pid", "2"], "kernel thread"),
        (vec!["run", "--pid", "2147483000"], "no such process"),
        (vec!["run", "--name", "("], "not a regular expression"),
        (
            vec!["run", "pipe-wakeup", "--pid", "1"],
            "give one experiment",
        ),
        (vec!["run", "--keep"], "--keep applies"),
        (
            vec!["run", "--progress", "stdout-lines"],
            "needs -- COMMAND",
        ),
    ] {
        let out = schedlab(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
    }
}

/// `schedlab run --pid` on `pid` for 2 s: the report, and what its foreign load must be
/// if the attached tasks are the experiment (see [`foreign_if_attached_are_the_experiment`]).
fn attached_run(pid: i32) -> (serde_json::Value, f64) {
    let pid = pid.to_string();
    let out = schedlab(&["run", "--pid", &pid, "--duration", "2s", "--json", "-"]);
    let report = json_output(&out);
    let expected = foreign_if_attached_are_the_experiment(&report);
    (report, expected)
}

/// Foreign load as it must be when the attached tasks count as the experiment: the
/// CPUs' busy and steal time, less the tasks' CPU time and schedlab's own, all from
/// the report's own /proc/stat reads and samples over the same window. Foreign load
/// that still holds the attached tasks' time is this plus their CPU share.
fn foreign_if_attached_are_the_experiment(report: &serde_json::Value) -> f64 {
    let metrics = &report["metrics"];
    let taken: f64 = metrics["cpu"]
        .as_array()
        .expect("cpus")
        .iter()
        .map(|c| c["busy_share"].as_f64().unwrap_or(0.0) + c["steal_share"].as_f64().unwrap_or(0.0))
        .sum();
    let tasks: f64 = report["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .map(|t| t["cpu_share"].as_f64().expect("share"))
        .sum();
    let observer = report["observer"]["cpu_share"].as_f64().expect("observer");
    (taken - tasks - observer).max(0.0)
}

/// The attached busy loop's CPU share in `report` (the first task).
fn attached_share(report: &serde_json::Value) -> f64 {
    report["tasks"][0]["cpu_share"].as_f64().expect("share")
}

#[test]
fn a_process_attached_to_is_the_experiment_not_foreign_load() {
    let _s = serial();
    let p = Foreign::spinner();
    let (report, expected) = attached_run(p.pid());
    let share = attached_share(&report);
    // At nice -10 it runs most of a CPU even beside a build: enough to tell the two
    // readings apart, whatever else the host runs.
    assert!(
        share > 0.5,
        "the busy loop ran only {share:.2} of a CPU: {report}"
    );
    let foreign = report["metrics"]["foreign_cpus"].as_f64().expect("foreign");
    assert!(
        (foreign - expected).abs() < 0.15,
        "foreign load {foreign:.2}, but the CPUs' busy time less the attached loop's \
         {share:.2} and schedlab's own leaves {expected:.2}: {report}"
    );
}

#[test]
fn a_hog_beside_a_process_attached_to_is_foreign_load() {
    let _s = serial();
    let p = Foreign::spinner();
    let hog = Foreign::spinner();
    let (report, expected) = attached_run(p.pid());
    let foreign = report["metrics"]["foreign_cpus"].as_f64().expect("foreign");
    assert!(
        (foreign - expected).abs() < 0.15,
        "foreign load {foreign:.2}, expected {expected:.2} (attached loop {:.2}): {report}",
        attached_share(&report)
    );
    // The hog, not attached, took most of a CPU: it is seen, and the result flagged.
    assert!(
        foreign > 0.5,
        "the hog (pid {}) is foreign: {report}",
        hog.pid()
    );
    assert_eq!(report["foreign_load"], true, "{report}");
    let warned = report["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .any(|w| {
            w.as_str()
                .is_some_and(|w| w.contains("other programs took"))
        });
    assert!(warned, "{report}");
}

/// A schedlab command run in `dir` (a command's working directory is schedlab's).
fn schedlab_in(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    Command::new(exe())
        .args(args)
        .current_dir(dir)
        .output()
        .expect("run schedlab")
}

#[test]
fn a_command_that_fails_fails_the_run_with_its_status_and_stderr() {
    let _s = serial();
    let empty = tempfile::tempdir().expect("temp dir");
    // As a user's first try: make where there is no Makefile.
    let out = schedlab_in(
        empty.path(),
        &["run", "--duration", "10s", "--", "make", "-j4"],
    );
    let table = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{table}{err}");
    assert!(
        table.contains("=> FAILED (make ended with exit status: 2 before the run ended)"),
        "{table}"
    );
    assert!(
        err.contains("ended with exit status: 2") && err.contains("no makefile found"),
        "the status and make's own words: {err}"
    );

    // The JSON has them too; the run ended when the command did, not after 10 s.
    let out = schedlab_in(
        empty.path(),
        &[
            "run",
            "--duration",
            "10s",
            "--json",
            "-",
            "--",
            "sh",
            "-c",
            "echo starting >&2; echo 'cannot open input' >&2; exit 3",
        ],
    );
    assert_eq!(out.status.code(), Some(1));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let failed = &report["failed"][0];
    assert_eq!(failed["task"], "sh", "{report}");
    assert_eq!(failed["status"], "exit status: 3", "{report}");
    let tail: Vec<&str> = failed["stderr_tail"]
        .as_array()
        .expect("tail")
        .iter()
        .filter_map(|l| l.as_str())
        .collect();
    assert_eq!(tail, ["starting", "cannot open input"], "{report}");
    assert!(report["duration_s"].as_f64().expect("duration") < 9.0);

    // One that ends well, or is still running when the time is up, is no failure.
    for command in ["exit 0", "sleep 30"] {
        let out = schedlab(&[
            "run",
            "--duration",
            "1s",
            "--json",
            "-",
            "--",
            "sh",
            "-c",
            command,
        ]);
        let report = json_output(&out);
        assert_eq!(
            report["failed"],
            serde_json::json!([]),
            "{command}: {report}"
        );
    }
}

#[test]
fn compare_refuses_to_compare_a_failed_round() {
    let _s = serial();
    let empty = tempfile::tempdir().expect("temp dir");
    let out = schedlab_in(
        empty.path(),
        &[
            "compare",
            "--a",
            "make.nice=0",
            "--b",
            "make.nice=5",
            "--duration",
            "5s",
            "--",
            "make",
            "-j4",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}{err}");
    assert!(
        err.contains("round 1 A failed, and a failed run is not compared")
            && err.contains("exit status: 2")
            && err.contains("no makefile found"),
        "{err}"
    );
    assert!(!text.contains("B/A"), "no ratio of failed runs: {text}");
}
