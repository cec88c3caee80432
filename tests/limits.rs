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

/// A preset file whose headline is task "a"'s share, with `tasks` as its [[task]]s.
fn preset_with(tasks: &str) -> String {
    format!(
        "name = \"limits\"\nsummary = \"x\"\nnote = \"x\"\n[metric]\nheadline = \"share\"\ntask = \"a\"\n{tasks}"
    )
}

/// One input the README's limits refuse: files to write (name, text), the arguments
/// (`{dir}` is where the files are), and what the one line must say.
struct Refused {
    files: Vec<(&'static str, String)>,
    args: &'static [&'static str],
    says: &'static str,
}

fn refused_inputs() -> Vec<Refused> {
    let spin = |name: &str| format!("[[task]]\nname = \"{name}\"\nworker = \"spin\"\n");
    let many: String = std::iter::once(spin("a"))
        .chain((1..300).map(|i| spin(&format!("t{i}"))))
        .collect();
    vec![
        // No cap on the total forked a process per [[task]] (10,000 of them).
        Refused {
            files: vec![("many.toml", preset_with(&many))],
            args: &["run", "{dir}/many.toml", "--duration", "1s"],
            says: "300 tasks in all: allowed at most 256",
        },
        // "data did not match any variant of untagged enum RawNice".
        Refused {
            files: vec![(
                "nice.toml",
                preset_with(&format!("{}nice = 9223372036854775807\n", spin("a"))),
            )],
            args: &["run", "{dir}/nice.toml", "--duration", "1s"],
            says: "nice 9223372036854775807 is out of range: allowed -20..19",
        },
        // Started, then exit 3 ("running without cgroups").
        Refused {
            files: vec![],
            args: &[
                "run",
                "cgroup-fairness",
                "--duration",
                "1s",
                "--set",
                "cgroup.crowd.rt_runtime_us=99999999",
            ],
            says: "cgroup.crowd.rt_runtime_us=99999999: allowed 0..",
        },
        // Loaded, refused only when played, and the lesson exited 0.
        Refused {
            files: vec![(
                "unthrottled.toml",
                "name = \"unthrottled\"\ntitle = \"x\"\npreset = \"rt-throttle\"\n[[step]]\ncaption = \"Throttling off.\"\nset = [\"sys.rt_runtime_us=-1\"]\nlook = \"column:cpu\"\nduration = \"2s\"\n".into(),
            )],
            args: &["lesson", "{dir}/unthrottled.toml", "--headless"],
            says: "a lesson may not turn RT throttling off while its preset runs RT tasks",
        },
        // The same on the command line was refused by the kernel layer after the start
        // (exit 1).
        Refused {
            files: vec![],
            args: &[
                "run",
                "rt-throttle",
                "--duration",
                "1s",
                "--set",
                "sys.rt_runtime_us=-1",
            ],
            says: "pass --allow-unthrottled-rt to insist",
        },
        // Silently ignored, while priority= on the same task is refused.
        Refused {
            files: vec![(
                "runtime.toml",
                preset_with(&format!("{}runtime = \"1ms\"\n", spin("a"))),
            )],
            args: &["run", "{dir}/runtime.toml", "--duration", "1s"],
            says: "runtime applies only to policy deadline; other takes no runtime",
        },
        Refused {
            files: vec![],
            args: &[
                "run",
                "pipe-wakeup",
                "--duration",
                "1s",
                "--set",
                "reader.period=10ms",
            ],
            says: "period applies only to policy deadline",
        },
        Refused {
            files: vec![],
            args: &[
                "compare",
                "pipe-wakeup",
                "--a",
                "reader.runtime=1ms",
                "--b",
                "reader.nice=1",
                "--rounds",
                "1",
                "--duration",
                "1s",
            ],
            says: "runtime applies only to policy deadline",
        },
        // Silently never applied.
        Refused {
            files: vec![],
            args: &[
                "run",
                "pipe-wakeup",
                "--duration",
                "1s",
                "--at",
                "5s:reader.nice=3",
            ],
            says: "--at 5s:reader.nice=3: 5s is not within the run",
        },
        // The kernel's EINVAL, explained as "need runtime <= deadline <= period", which
        // 1h/1h/1h satisfies: the period is above the kernel's maximum.
        Refused {
            files: vec![(
                "deadline.toml",
                preset_with(&format!(
                    "{}policy = \"deadline\"\nruntime = \"1h\"\ndeadline = \"1h\"\nperiod = \"1h\"\n",
                    spin("a")
                )),
            )],
            args: &["run", "{dir}/deadline.toml", "--duration", "1s"],
            says: "deadline period 1h is out of range: allowed 100us..",
        },
    ]
}

#[test]
fn input_outside_the_documented_limits_is_refused_before_anything_starts() {
    // Before the fixes some of these started workloads.
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    // Every case is tried and every wrong one named, not only the first.
    let mut wrong = Vec::new();
    for case in refused_inputs() {
        for (name, text) in &case.files {
            std::fs::write(dir.path().join(name), text).expect("write");
        }
        let args: Vec<String> = case
            .args
            .iter()
            .map(|a| a.replace("{dir}", &dir.path().display().to_string()))
            .collect();
        let started = Instant::now();
        let out = Command::new(common::exe())
            .args(&args)
            .output()
            .expect("schedlab");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let refused_at_once = out.status.code() == Some(2)
            && stderr.contains(case.says)
            && stderr.trim().lines().count() == 1
            && out.stdout.is_empty()
            && started.elapsed() < Duration::from_secs(10);
        if !refused_at_once {
            wrong.push(format!(
                "{}: exit {:?} after {:.1?}, stdout {} bytes, stderr: {}",
                args.join(" "),
                out.status.code(),
                started.elapsed(),
                out.stdout.len(),
                stderr.trim()
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "not refused at once with exit 2 and one line naming what is allowed:\n{}",
        wrong.join("\n")
    );
}
