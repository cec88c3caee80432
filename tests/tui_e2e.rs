//! The real binary in tmux, driven like a person would: keys in, screen and /proc out.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

struct Tmux {
    socket: String,
}

impl Tmux {
    fn start(args: &[&str], journal: &std::path::Path) -> Option<Tmux> {
        Self::start_with(args, journal, "")
    }

    fn start_with(args: &[&str], journal: &std::path::Path, env: &str) -> Option<Tmux> {
        if !common::require("tmux", Command::new("tmux").arg("-V").output().is_ok()) {
            return None;
        }
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = format!("schedlab-test-{}-{n}", std::process::id());
        let cmd = format!(
            "{env} SCHEDLAB_JOURNAL={} {} {}; echo SCHEDLAB-EXITED-$?; sleep 30",
            journal.display(),
            common::exe().display(),
            args.join(" ")
        );
        // Recordings made with `r` land in the working directory: the test's temp dir.
        let cwd = journal
            .parent()
            .map_or_else(|| ".".to_string(), |d| d.display().to_string());
        let ok = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-c",
                &cwd,
                "-x",
                "110",
                "-y",
                "32",
                &cmd,
            ])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "tmux new-session");
        Some(Tmux { socket })
    }

    fn keys(&self, keys: &[&str]) {
        for k in keys {
            let _ = Command::new("tmux")
                .args(["-L", &self.socket, "send-keys", "-t", "0", k])
                .status();
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    /// Press q and wait until schedlab has exited with status 0.
    fn quit(&self) {
        self.keys(&["q"]);
        let exited = self.wait_for("SCHEDLAB-EXITED-0", Duration::from_secs(10));
        assert!(exited.is_some(), "{}", self.screen());
    }

    fn screen(&self) -> String {
        Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "0"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
            .unwrap_or_default()
    }

    fn wait_for(&self, text: &str, limit: Duration) -> Option<Duration> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if self.screen().contains(text) {
                return Some(start.elapsed());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
    }
}

/// (pid, tid) of a task from its row in the task table.
fn ids(screen: &str, task: &str) -> Option<(i32, i32)> {
    let line = screen
        .lines()
        .find(|l| l.split_whitespace().next() == Some(task))?;
    let (pid, tid) = line.split_whitespace().nth(1)?.split_once('/')?;
    Some((pid.parse().ok()?, tid.parse().ok()?))
}

fn policy_of(pid: i32, tid: i32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/sched")).ok()?;
    text.lines()
        .find(|l| l.starts_with("policy"))
        .and_then(|l| l.split(':').nth(1))
        .map(|v| v.trim().to_string())
}

#[test]
fn changing_a_policy_from_the_keyboard_reaches_the_kernel_and_quit_cleans_up() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(t) = Tmux::start(&["tui", "rt-throttle"], &dir.path().join("j")) else {
        return;
    };
    assert!(
        t.wait_for("rt-throttle running", Duration::from_secs(10))
            .is_some(),
        "{}",
        t.screen()
    );
    assert!(
        t.wait_for("fifo/1", Duration::from_secs(5)).is_some(),
        "{}",
        t.screen()
    );
    let (pid, tid) = ids(&t.screen(), "fair").expect("fair row");
    assert_eq!(policy_of(pid, tid).as_deref(), Some("0"));
    // Select the fair thread, open the policy picker, choose batch.
    t.keys(&["Down", "p", "Down", "Enter"]);
    assert!(
        t.wait_for("fair.policy=batch: applied", Duration::from_secs(5))
            .is_some(),
        "{}",
        t.screen()
    );
    assert_eq!(
        policy_of(pid, tid).as_deref(),
        Some("3"),
        "the kernel has it"
    );
    // The table shows what the kernel reports, from the next sample on.
    let row_shows_batch = common::wait_until(Duration::from_secs(3), || {
        t.screen()
            .lines()
            .any(|l| l.starts_with("fair") && l.contains("batch"))
    });
    assert!(row_shows_batch, "{}", t.screen());
    assert!(
        t.screen().contains("fair.policy -> batch"),
        "the change is marked on the graphs"
    );
    // A refusal is explained, not hidden.
    t.keys(&[":"]);
    t.keys(&["fair.nice=99", "Enter"]);
    assert!(
        t.wait_for("allowed -20..19", Duration::from_secs(5))
            .is_some(),
        "{}",
        t.screen()
    );
    t.quit();
    assert!(
        common::wait_until(Duration::from_secs(2), || !common::alive(pid)),
        "workers gone"
    );
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
            .unwrap_or_default()
            .trim(),
        "950000"
    );
}

#[test]
fn stays_responsive_with_fifo_spinners_on_every_cpu() {
    let _guard = common::serial();
    if !common::require("root (SCHED_FIFO spinners)", common::is_root()) {
        return;
    }
    // tmux and this test's own polling must not be starved either, or the measurement is
    // theirs: run this thread (and the tmux processes it starts) at FIFO 99 too.
    struct Demote;
    impl Drop for Demote {
        fn drop(&mut self) {
            let me = nix::unistd::gettid().as_raw();
            let _ = schedlab::knob::task::set_policy(
                me,
                &schedlab::knob::task::SchedSettings::default(),
            );
        }
    }
    schedlab::knob::task::set_own_realtime(99, false).expect("FIFO 99 for the test thread");
    let _demote = Demote;
    let dir = tempfile::tempdir().expect("tempdir");
    let cpus = schedlab::system::online_cpus().count().to_string();
    let count = format!("busy.count={cpus}");
    let args = [
        "tui",
        "nice-ladder",
        "--set",
        "busy.nice=0",
        "--set",
        count.as_str(),
        "--set",
        "busy.policy=fifo",
    ];
    let trace = dir.path().join("trace");
    let env = format!("SCHEDLAB_TRACE={}", trace.display());
    let Some(t) = Tmux::start_with(&args, &dir.path().join("j"), &env) else {
        return;
    };
    assert!(
        t.wait_for("nice-ladder running", Duration::from_secs(10))
            .is_some(),
        "{}",
        t.screen()
    );
    assert!(
        t.wait_for("fifo/1", Duration::from_secs(5)).is_some(),
        "samples arrive: {}",
        t.screen()
    );
    // Toggle the teaching note and back; each key must show while the spinners run.
    let mut worst = Duration::ZERO;
    for (key, text) in [("n", "What the kernel does"), ("n", "CPU share %")] {
        t.keys(&[key]);
        let took = t
            .wait_for(text, Duration::from_secs(5))
            .unwrap_or_else(|| panic!("no effect of {key}: {}", t.screen()));
        worst = worst.max(took);
    }
    // schedlab's own part (key arrives -> screen drawn) is traced; the rest is the
    // kernel's pty path, whose workers the spinners starve (RT throttling leaves 5 %).
    let traced = std::fs::read_to_string(&trace).unwrap_or_default();
    let own: Vec<u64> = traced
        .lines()
        .filter_map(|l| l.strip_prefix("key_to_draw_us ")?.parse().ok())
        .collect();
    assert!(own.len() >= 2, "every key was handled and drawn: {traced}");
    eprintln!("under FIFO spinners on every CPU: schedlab key->draw {own:?} us; key->visible in tmux at most {worst:?}");
    // schedlab's UI thread is FIFO 99: it waits for no spinner, only for RT throttling
    // of its CPU, at most the 50 ms per second that sched_rt_runtime_us=950000 leaves.
    assert!(
        own.iter().all(|&us| us < 100_000),
        "key to drawn screen took {own:?} us"
    );
    // The screen says why the terminal itself may lag, once two /proc/stat rounds
    // (100 ms apart) show the CPUs held: the keys above may all be done before that.
    assert!(
        t.wait_for("RT HOLDS ALL CPUS", Duration::from_secs(5))
            .is_some(),
        "{}",
        t.screen()
    );
    t.quit();
}

#[test]
fn recording_from_the_workbench_and_replaying_it() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(t) = Tmux::start(&["tui", "rt-throttle"], &dir.path().join("j")) else {
        return;
    };
    assert!(
        t.wait_for("fifo/1", Duration::from_secs(10)).is_some(),
        "{}",
        t.screen()
    );
    t.keys(&["r"]);
    assert!(
        t.wait_for("recording to", Duration::from_secs(5)).is_some(),
        "{}",
        t.screen()
    );
    t.keys(&["Down", "+"]);
    assert!(
        t.wait_for("fair.nice=-19: applied", Duration::from_secs(5))
            .is_some(),
        "{}",
        t.screen()
    );
    std::thread::sleep(Duration::from_millis(600));
    t.keys(&["r"]);
    assert!(
        t.wait_for("recording saved", Duration::from_secs(5))
            .is_some(),
        "{}",
        t.screen()
    );
    t.quit();
    drop(t);
    let file = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a recording in the working directory");
    let records = schedlab::lab::record::read(&file).expect("readable recording");
    assert!(records.iter().any(|r| matches!(r, schedlab::lab::record::Record::Knob { setting, ok: true, .. } if setting == "fair.nice=-19")));
    assert!(
        records
            .iter()
            .filter(|r| matches!(r, schedlab::lab::record::Record::Batch { .. }))
            .count()
            >= 3
    );

    let Some(t) = Tmux::start(
        &["replay", file.to_str().expect("utf8")],
        &dir.path().join("j2"),
    ) else {
        return;
    };
    assert!(
        t.wait_for("REPLAY", Duration::from_secs(5)).is_some(),
        "{}",
        t.screen()
    );
    assert!(
        t.wait_for("fair.nice -> -19", Duration::from_secs(5))
            .is_some(),
        "the knob change is replayed: {}",
        t.screen()
    );
    t.keys(&["p"]);
    assert!(
        t.wait_for("read-only", Duration::from_secs(5)).is_some(),
        "{}",
        t.screen()
    );
    t.quit();
}

/// Whether tracefs is mounted anywhere (/proc/mounts' third field).
fn tracefs_mounted() -> bool {
    std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(2) == Some("tracefs"))
}

#[test]
fn tracing_from_the_workbench_writes_a_perfetto_timeline_and_cleans_up() {
    let _guard = common::serial();
    if !common::require("root (scheduler tracing)", common::is_root()) {
        return;
    }
    let mounted_before = tracefs_mounted();
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(t) = Tmux::start(&["tui", "pipe-wakeup"], &dir.path().join("j")) else {
        return;
    };
    assert!(
        t.wait_for("pipe-wakeup running", Duration::from_secs(10))
            .is_some(),
        "{}",
        t.screen()
    );
    let (pid, _) = ids(&t.screen(), "writer").expect("writer row");
    t.keys(&["t"]);
    assert!(
        t.wait_for("tracing on", Duration::from_secs(10)).is_some(),
        "{}",
        t.screen()
    );
    assert!(t
        .screen()
        .lines()
        .next()
        .is_some_and(|l| l.contains("TRACE")));
    if !mounted_before {
        assert!(tracefs_mounted(), "the trace mounted tracefs for the run");
    }
    // The trace's own graph and the preemptors line fill in from its intervals.
    assert!(
        t.wait_for("wakeup latency (trace)", Duration::from_secs(5))
            .is_some(),
        "{}",
        t.screen()
    );
    assert!(t.screen().contains("preempted by:"), "{}", t.screen());
    std::thread::sleep(Duration::from_millis(1500));
    t.keys(&["x"]);
    assert!(
        t.wait_for("timeline written:", Duration::from_secs(10))
            .is_some(),
        "{}",
        t.screen()
    );
    let file = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("schedlab-trace-") && n.ends_with(".json"))
        })
        .expect("a timeline in the working directory");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&file).expect("read the timeline")).expect("JSON");
    let events = json["traceEvents"].as_array().expect("a traceEvents array");
    assert!(
        events.iter().any(|e| e["ph"] == "X"),
        "slices of the tasks running, not only metadata: {} events",
        events.len()
    );
    // Exporting stops the trace for the file and starts it again.
    assert!(t
        .screen()
        .lines()
        .next()
        .is_some_and(|l| l.contains("TRACE")));
    t.quit();
    assert!(
        common::wait_until(Duration::from_secs(2), || !common::alive(pid)),
        "workers gone"
    );
    if !mounted_before {
        assert!(!tracefs_mounted(), "tracefs left mounted");
    }
}
