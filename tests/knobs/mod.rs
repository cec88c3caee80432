//! The knob layer against the real kernel (as root): every writable knob is changed on a
//! live task or the system, read back from the kernel, and restored from the journal,
//! also after a panic and a SIGKILL. Knobs this machine refuses are tested for their
//! message. Tests here run one at a time and put every global value back even when an
//! assertion fails.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use schedlab::error::KnobError;
use schedlab::knob::sys::SystemKnobs;
use schedlab::knob::sys::{Probe, SysKnob, SysSetting};
use schedlab::knob::task::{apply, read_back, Deadline, SchedSettings};
use schedlab::policy::Policy;

const RT_RUNTIME: &str = "/proc/sys/kernel/sched_rt_runtime_us";
const RT_PERIOD: &str = "/proc/sys/kernel/sched_rt_period_us";
const ROOT_RT_RUNTIME: &str = "/sys/fs/cgroup/cpu/cpu.rt_runtime_us";
const ROOT_RT_PERIOD: &str = "/sys/fs/cgroup/cpu/cpu.rt_period_us";
const RR: &str = "/proc/sys/kernel/sched_rr_timeslice_ms";
const AUTOGROUP: &str = "/proc/sys/kernel/sched_autogroup_enabled";

fn read(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// Puts every global value this file touches back as it was at the start of the test,
/// in an order RT group scheduling accepts, whatever happened in between.
struct Restore {
    values: Vec<(&'static str, String)>,
    debugfs_was_mounted: bool,
    _serial: common::Serial,
}

fn guard() -> Option<Restore> {
    if !common::require("root", common::is_root()) {
        return None;
    }
    let serial = common::serial();
    let files = [
        RT_RUNTIME,
        RT_PERIOD,
        ROOT_RT_RUNTIME,
        ROOT_RT_PERIOD,
        RR,
        AUTOGROUP,
    ];
    Some(Restore {
        values: files
            .iter()
            .filter(|f| Path::new(f).exists())
            .map(|f| (*f, read(f)))
            .collect(),
        debugfs_was_mounted: common::debugfs_mounted(),
        _serial: serial,
    })
}

impl Restore {
    /// What `path` held when the test began ("" where it does not exist).
    fn was(&self, path: &str) -> String {
        self.values
            .iter()
            .find(|(p, _)| *p == path)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        // Raise the sysctls first, then the cgroup, then the rest; twice, so whichever
        // order the failure left things in converges.
        for _ in 0..2 {
            for (path, value) in &self.values {
                let _ = std::fs::write(path, value);
            }
        }
        if !self.debugfs_was_mounted && common::debugfs_mounted() {
            let _ = Command::new("umount")
                .arg("/sys/kernel/debug")
                .stderr(Stdio::null())
                .status();
        }
    }
}

fn journal_path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("journal.jsonl")
}

/// A sleeping child to turn knobs on.
struct Sleeper(std::process::Child);

impl Sleeper {
    fn new() -> Sleeper {
        Sleeper(Command::new("sleep").arg("30").spawn().expect("sleep"))
    }
    fn tid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn proc_sched_field(tid: i32, field: &str) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{tid}/sched")).ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == field).then(|| v.trim().to_string())
    })
}

fn schedlab_with_journal(journal: &Path) -> Command {
    let mut c = Command::new(common::exe());
    c.env("SCHEDLAB_JOURNAL", journal);
    c
}

fn wait_for_value(path: &str, value: &str) -> bool {
    common::wait_until(Duration::from_secs(10), || read(path) == value)
}

/// A long rt-throttle run that has set `sys.rt_runtime_us` to `runtime` (its stderr
/// goes nowhere: callers judge it by what it leaves behind).
/// A schedlab a test started: stopped with SIGTERM (so it restores its knobs) if the
/// test fails before it does.
struct Running(std::process::Child);

impl std::ops::Deref for Running {
    type Target = std::process::Child;
    fn deref(&self) -> &std::process::Child {
        &self.0
    }
}

impl std::ops::DerefMut for Running {
    fn deref_mut(&mut self) -> &mut std::process::Child {
        &mut self.0
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(self.0.id() as i32),
                nix::sys::signal::Signal::SIGTERM,
            );
            let _ = self.0.wait();
        }
    }
}

/// A preset file of tasks that each run `sleep 30` (settings reach real tasks that cost
/// no CPU), with extra TOML lines per task: `(name, lines)`.
fn sleepers_preset(dir: &Path, tasks: &[(&str, &str)]) -> PathBuf {
    let mut text = format!(
        "name = \"sleepers\"\nsummary = \"s\"\nnote = \"n\"\n[metric]\nheadline = \"share\"\ntask = \"{}\"\n",
        tasks[0].0
    );
    for (name, lines) in tasks {
        text.push_str(&format!(
            "[[task]]\nname = \"{name}\"\ncommand = [\"sleep\", \"30\"]\n{lines}\n"
        ));
    }
    let path = dir.join("sleepers.toml");
    std::fs::write(&path, text).expect("write preset");
    path
}

/// Polls `f` every 20 ms while `child` runs (at most `limit`), then waits for its exit
/// status.
fn poll_while_running(
    child: &mut Running,
    limit: Duration,
    mut f: impl FnMut(i32),
) -> std::process::ExitStatus {
    let pid = child.id() as i32;
    let start = std::time::Instant::now();
    while child.try_wait().expect("try_wait").is_none() && start.elapsed() < limit {
        f(pid);
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait().expect("wait")
}

fn report_task(report: &serde_json::Value, name: &str) -> serde_json::Value {
    report["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["name"] == name)
        .unwrap_or_else(|| panic!("no task {name} in {report}"))
        .clone()
}

fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("report written")).expect("json")
}

mod cgroup;
mod journal;
mod sys;
mod task;
