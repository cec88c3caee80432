//! Helpers shared by the integration tests: the binary, a lock that keeps real
//! workloads from running side by side, and bounded waits.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The schedlab binary cargo built for these tests.
pub fn exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_schedlab"))
}

pub mod docs;
pub mod documents;
pub mod hostile;
pub mod tmux;

/// The unit tests' helpers, the same file: one definition of the machine-wide lock and
/// of when a test may skip.
#[path = "../../src/testing.rs"]
mod testing;

static SERIAL: Mutex<()> = Mutex::new(());

/// Held while a test runs a real workload: the thread lock inside this test binary and
/// a flock across every test binary and checkout on the machine (two `cargo test`s at
/// once would otherwise disturb each other's numbers and knobs).
pub struct Serial {
    _thread: MutexGuard<'static, ()>,
    _machine: testing::MachineLock,
}

/// Real workloads pin tasks and run FIFO spinners: one at a time, or they disturb each
/// other's numbers.
pub fn serial() -> Serial {
    let thread = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    Serial {
        _thread: thread,
        _machine: testing::machine_lock(),
    }
}

/// Whether a filesystem of type `fstype` is mounted anywhere (/proc/mounts' third field).
pub fn fs_mounted(fstype: &str) -> bool {
    std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(2) == Some(fstype))
}

pub fn tracefs_mounted() -> bool {
    fs_mounted("tracefs")
}

/// Whether debugfs is mounted at its place, /sys/kernel/debug.
pub fn debugfs_mounted() -> bool {
    std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .lines()
        .any(|l| l.split_whitespace().nth(1) == Some("/sys/kernel/debug"))
}

/// `schedlab run ARGS --json -`: its report (a failure shows its stderr).
pub fn run_json(args: &[&str]) -> serde_json::Value {
    let mut full = vec!["run"];
    full.extend_from_slice(args);
    full.extend_from_slice(&["--json", "-"]);
    json_output(&schedlab(&full))
}

pub fn schedlab(args: &[&str]) -> Output {
    Command::new(exe())
        .args(args)
        .output()
        .expect("run schedlab")
}

/// The JSON a successful schedlab printed on stdout; a failure shows its stderr.
pub fn json_output(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "schedlab failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON on stdout")
}

/// How long a test waits for a process or a screen to reach a state: a bound on a
/// hang, not a speed target. A loaded machine takes seconds where an idle one takes
/// milliseconds, and a wait returns as soon as its condition holds.
pub const PATIENCE: Duration = Duration::from_secs(60);

/// Wait until `f` holds, at most `limit`.
pub fn wait_until(limit: Duration, mut f: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    f()
}

/// Threads of this test process spawning `true` over and over, as other tests' threads
/// do: each child holds a copy of every descriptor the process has open from its fork to
/// its exec, so what a close is meant to end (a lock, a request) can outlive the close.
struct Spawners {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    spawned: std::sync::Arc<std::sync::atomic::AtomicU32>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Spawners {
    fn start(n: usize) -> Spawners {
        use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
        use std::sync::Arc;
        let stop = Arc::new(AtomicBool::new(false));
        let spawned = Arc::new(AtomicU32::new(0));
        let threads = (0..n)
            .map(|_| {
                let (stop, spawned) = (Arc::clone(&stop), Arc::clone(&spawned));
                std::thread::spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        if let Ok(mut c) = Command::new("true").spawn() {
                            let _ = c.wait();
                            spawned.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                })
            })
            .collect();
        Spawners {
            stop,
            spawned,
            threads,
        }
    }

    /// Programs started so far.
    fn spawned(&self) -> u32 {
        self.spawned.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Stop, wait for the threads, and say how many programs they started.
    fn finish(mut self) -> u32 {
        self.end();
        self.spawned()
    }

    fn end(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

impl Drop for Spawners {
    fn drop(&mut self) {
        self.end();
    }
}

/// Runs `round` over and over beside two threads spawning programs until they have
/// started 1000 (a bare close lost its race in about one round in eight here), at most
/// 30 s; a round returns what went wrong, if anything. Fails naming the first few.
pub fn rounds_beside_spawns<T: std::fmt::Debug>(what: &str, mut round: impl FnMut() -> Option<T>) {
    let spawners = Spawners::start(2);
    let (mut rounds, mut wrong) = (0u32, Vec::new());
    let deadline = Instant::now() + Duration::from_secs(30);
    while spawners.spawned() < 1000 && Instant::now() < deadline {
        if let Some(w) = round() {
            wrong.push((rounds, w));
        }
        rounds += 1;
    }
    let spawned = spawners.finish();
    eprintln!(
        "{what}: {rounds} rounds beside {spawned} spawns, {} wrong",
        wrong.len()
    );
    assert!(
        spawned >= 100,
        "only {spawned} spawns in 30 s: nothing raced"
    );
    assert!(
        wrong.is_empty(),
        "{what}: wrong in {} of {rounds} rounds, the first: {:?}",
        wrong.len(),
        &wrong[..wrong.len().min(5)]
    );
}

pub fn alive(pid: i32) -> bool {
    // A zombie still has /proc/PID; count it as gone.
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(s) => !s
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
        Err(_) => false,
    }
}

/// Direct children of a process (from /proc, all threads).
pub fn children(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for t in tasks.flatten() {
        let path = t.path().join("children");
        if let Ok(s) = std::fs::read_to_string(path) {
            out.extend(s.split_whitespace().filter_map(|p| p.parse::<i32>().ok()));
        }
    }
    out
}

/// Tests that need root, or a tool, fail loudly without it: CI must not pass on tests
/// that never ran. `SCHEDLAB_ALLOW_SKIP=1` turns that into a skip (returns false) for a
/// developer who knows what they are leaving out; `SCHEDLAB_REQUIRE_ALL=1` (.ci/run)
/// always fails.
pub fn require(what: &str, available: bool) -> bool {
    testing::require(what, available)
}

/// See [`testing::host_lacks`]: a property of the host, not a missing install.
pub fn host_lacks(what: &str) {
    testing::host_lacks(what)
}

pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// Whether `tool` is on PATH.
pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A field of /proc/PID/stat by its number in proc(5) (field 19 is nice, 41 policy);
/// the comm (field 2) may hold spaces, so counting starts after its last ')'.
pub fn stat_field(pid: i32, field: usize) -> Option<i64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat[stat.rfind(')')? + 2..]
        .split(' ')
        .nth(field.checked_sub(3)?)?
        .parse()
        .ok()
}

/// A schedlab (or any) child that is put down when the test ends, pass or panic: asked
/// with SIGTERM (schedlab then restores its knobs and unmounts what it mounted), given
/// up to 20 s, then SIGKILLed and its journal replayed with `schedlab restore`. A
/// std `Child` dropped by a failed assertion would run on, spinning, into the next test.
pub struct Spawned {
    child: Option<std::process::Child>,
    /// The SCHEDLAB_JOURNAL it was given, for the restore after a SIGKILL.
    journal: Option<PathBuf>,
}

impl Spawned {
    pub fn new(child: std::process::Child) -> Spawned {
        Spawned {
            child: Some(child),
            journal: None,
        }
    }

    /// Spawn `cmd`; its journal (if it sets SCHEDLAB_JOURNAL) is named by `journal`.
    pub fn spawn(cmd: &mut Command, journal: Option<&std::path::Path>) -> Spawned {
        let child = cmd.spawn().expect("spawn the child");
        Spawned {
            child: Some(child),
            journal: journal.map(PathBuf::from),
        }
    }

    pub fn id(&self) -> u32 {
        self.child.as_ref().map_or(0, std::process::Child::id)
    }

    pub fn child(&mut self) -> &mut std::process::Child {
        self.child.as_mut().expect("the child is still held")
    }

    /// Wait for the child's exit, at most `limit`: `None` when it still runs then.
    pub fn wait_for_exit(&mut self, limit: Duration) -> Option<std::process::ExitStatus> {
        let start = Instant::now();
        loop {
            if let Ok(Some(status)) = self.child().try_wait() {
                return Some(status);
            }
            if start.elapsed() > limit {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Hand the child back for `wait_with_output` and the like; the caller owns it.
    pub fn into_inner(mut self) -> std::process::Child {
        self.child.take().expect("the child is still held")
    }

    /// SIGTERM, a bounded wait, then SIGKILL and `schedlab restore`.
    fn put_down(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        let pid = nix::unistd::Pid::from_raw(child.id() as i32);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(20) {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        restore_journal(self.journal.as_deref());
    }
}

impl Drop for Spawned {
    fn drop(&mut self) {
        self.put_down();
    }
}

/// `schedlab restore` with the given journal (the default one when `None`).
pub fn restore_journal(journal: Option<&std::path::Path>) {
    let mut cmd = Command::new(exe());
    cmd.arg("restore");
    if let Some(j) = journal {
        cmd.env("SCHEDLAB_JOURNAL", j);
    }
    let _ = cmd.output();
}

/// `check diff` of a check report (JSON text) against itself: exit 0, no regression,
/// and each finding of `with_repeats` that was measured compared by its own repeats.
pub fn assert_diff_against_itself(report: &str, with_repeats: &[&str]) {
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("check.json");
    std::fs::write(&path, report).expect("save the report");
    let file = path.to_str().expect("utf-8 path");
    let out = schedlab(&["check", "diff", file, file, "--json", "-"]);
    let diff = json_output(&out);
    assert_eq!(diff["regressed"], 0, "{diff}");
    let doc: serde_json::Value = serde_json::from_str(report).expect("JSON report");
    for id in with_repeats {
        let found = |d: &serde_json::Value| {
            d["findings"]
                .as_array()
                .and_then(|a| a.iter().find(|f| f["id"] == *id).cloned())
                .unwrap_or_else(|| panic!("no finding {id}"))
        };
        if found(&doc)["details"]["skipped"] == true {
            continue;
        }
        let repeats = found(&doc)["noise"]["repeats"]
            .as_array()
            .map_or(0, Vec::len);
        assert!(repeats >= 2, "{id}: {repeats} repeats recorded");
        let compared = found(&diff);
        assert_eq!(compared["verdict"], "same", "{compared}");
        assert!(
            compared["tolerance"]
                .as_str()
                .is_some_and(|t| t.contains("repeats")),
            "{compared}"
        );
    }
}
