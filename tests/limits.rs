//! What a run leaves and what it refuses: a schedlab SIGKILLed within milliseconds of
//! its start leaves nothing the next start or `schedlab restore` does not remove, and
//! input outside the documented limits is refused before anything starts (exit 2).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Where this process's cgroups are (v2, and v1 cpuacct): a run's containment cgroup is
/// made beside schedlab's own, which is the test's.
fn own_cgroup_dirs() -> Vec<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap_or_default();
    let mine = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    // "0::/x" for v2, "N:cpu,cpuacct:/x" for v1.
    let path_in = |v2: bool| {
        mine.lines().find_map(|l| {
            let mut f = l.splitn(3, ':');
            let (id, ctrls, path) = (f.next()?, f.next()?, f.next()?);
            let ours = if v2 {
                id == "0" && ctrls.is_empty()
            } else {
                ctrls.split(',').any(|c| c == "cpuacct")
            };
            ours.then(|| path.trim_start_matches('/').to_string())
        })
    };
    mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let (target, fstype, options) = (f.get(1)?, *f.get(2)?, f.get(3)?);
            let v2 = fstype == "cgroup2";
            let v1 = fstype == "cgroup" && options.split(',').any(|o| o == "cpuacct");
            (v2 || v1).then(|| Some(Path::new(target).join(path_in(v2)?)))?
        })
        .collect()
}

/// Entries of `dir` whose names start with `prefix`.
fn named(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// What a schedlab with pid `pid` made and left: its cgroups, its run directories, its
/// registry file and half-written registry files.
fn left_by(pid: u32, state: &Path) -> Vec<PathBuf> {
    let mut left: Vec<PathBuf> = own_cgroup_dirs()
        .iter()
        .flat_map(|d| named(d, &format!("schedlab-run-{pid}-")))
        .collect();
    for base in [PathBuf::from("/dev/shm"), std::env::temp_dir()] {
        left.extend(named(&base, &format!("schedlab-{pid}-")));
    }
    left.extend(named(&state.join("runs"), &format!("{pid}.")));
    left
}

/// When a run is killed: as soon as its run directory, its cgroup or its registry file
/// (whole or half written) appears.
#[derive(Clone, Copy, Debug)]
enum KillWhen {
    RunDir,
    Cgroup,
    Registry,
}

fn appeared(when: KillWhen, pid: u32, state: &Path) -> bool {
    match when {
        KillWhen::RunDir => !named(Path::new("/dev/shm"), &format!("schedlab-{pid}-")).is_empty(),
        KillWhen::Cgroup => own_cgroup_dirs()
            .iter()
            .any(|d| !named(d, &format!("schedlab-run-{pid}-")).is_empty()),
        KillWhen::Registry => !named(&state.join("runs"), &format!("{pid}.")).is_empty(),
    }
}

#[test]
fn a_run_killed_within_milliseconds_of_its_start_leaves_nothing_after_restore_or_the_next_start() {
    if !common::require("root (containment cgroups)", common::is_root()) {
        return;
    }
    let _guard = common::serial();
    let state = tempfile::tempdir().expect("state dir");
    let journal = state.path().join("journal.jsonl");
    for next in ["restore", "presets"] {
        let mut pids = Vec::new();
        for (i, when) in [KillWhen::RunDir, KillWhen::Cgroup, KillWhen::Registry]
            .iter()
            .cycle()
            .take(24)
            .enumerate()
        {
            let mut child = common::Spawned::spawn(
                Command::new(common::exe())
                    .args(["run", "pipe-wakeup", "--duration", "5s"])
                    .env("SCHEDLAB_STATE_DIR", state.path())
                    .env("SCHEDLAB_JOURNAL", &journal)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null()),
                Some(&journal),
            );
            let pid = child.id();
            // The moment it appears, give or take a poll (later polls are a few
            // microseconds further in, so the kills fall all over the start).
            let start = Instant::now();
            while !appeared(*when, pid, state.path()) && start.elapsed() < common::PATIENCE {
                std::thread::sleep(Duration::from_micros(20 * (i as u64 % 8)));
            }
            child.child().kill().expect("SIGKILL");
            child.child().wait().expect("reap");
            pids.push(pid);
        }
        let out = Command::new(common::exe())
            .arg(next)
            .env("SCHEDLAB_STATE_DIR", state.path())
            .env("SCHEDLAB_JOURNAL", &journal)
            .output()
            .expect("the next schedlab");
        assert!(
            out.status.success(),
            "{next}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let left: Vec<PathBuf> = pids
            .iter()
            .flat_map(|&pid| left_by(pid, state.path()))
            .collect();
        assert!(left.is_empty(), "after `schedlab {next}`: {left:#?}");
        let tmp = named(&state.path().join("runs"), "");
        assert!(tmp.is_empty(), "after `schedlab {next}`: {tmp:#?}");
    }
}
