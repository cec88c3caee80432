//! Every built-in preset runs as real tasks: the kernel reports (through /proc, read
//! with the procfs crate, independent of schedlab's own parsers) the policy, nice,
//! priority and affinity the preset asked for, workers make progress, and nothing is
//! left running afterwards.

use crate::common;

use std::sync::atomic::Ordering;

use schedlab::cpuset::CpuSet;
use schedlab::knob::task::apply;
use schedlab::policy::Policy;
use schedlab::preset::setting::Setting;
use schedlab::preset::{load, Preset, BUILTIN};
use schedlab::system::online_cpus;
use schedlab::workload::Workload;

fn kernel_policy(p: Policy) -> u32 {
    p.to_kernel()
}

/// Start `preset`, apply settings, check /proc, stop, check everything is gone.
fn run_and_check(preset: &Preset) {
    let online = online_cpus();
    let specs = preset.tasks(&online).expect("expands");
    let mut workload = Workload::start(&specs, &common::exe()).expect("starts");
    for (task, spec) in workload.tasks.iter().zip(&specs) {
        let errors = apply(&task.name, task.tid, &spec.sched);
        assert!(errors.is_empty(), "{}: {errors:?}", preset.name);
    }
    workload.open_gate();
    // Read back once every worker is past its gate and working, so a worker that
    // changed its own settings on starting would be caught. A fair task beside a FIFO
    // spinner runs only when RT throttling (or the fair server) lets it: within one RT
    // period, 1 s.
    let shm = workload.shm();
    for (task, _) in workload.tasks.iter().zip(&specs) {
        if task.kind.is_some() {
            let moved = common::wait_until(common::PATIENCE, || {
                shm.slot(task.slot).progress.load(Ordering::Relaxed) > 0
            });
            assert!(
                moved,
                "{} / {}: no progress within {:?}",
                preset.name,
                task.name,
                common::PATIENCE
            );
        }
    }
    let pids: Vec<i32> = workload.tasks.iter().map(|t| t.pid).collect();
    for (task, spec) in workload.tasks.iter().zip(&specs) {
        let proc_task = procfs::process::Process::new(task.pid)
            .and_then(|p| p.task_from_tid(task.tid))
            .expect("task in /proc");
        let stat = proc_task.stat().expect("stat");
        let status = proc_task.status().expect("status");
        let ctx = format!("{} / {}", preset.name, task.name);
        assert_eq!(
            stat.policy,
            Some(kernel_policy(spec.sched.policy)),
            "{ctx}: policy"
        );
        assert_eq!(
            stat.rt_priority,
            Some(spec.sched.priority),
            "{ctx}: rt priority"
        );
        if spec.sched.policy.is_fair() {
            assert_eq!(stat.nice, spec.sched.nice.min(19) as i64, "{ctx}: nice");
        }
        let allowed: CpuSet = status
            .cpus_allowed_list
            .expect("Cpus_allowed_list")
            .iter()
            .flat_map(|&(a, b)| a..=b)
            .fold(CpuSet::new(), |mut s, c| {
                s.insert(c as usize);
                s
            });
        assert_eq!(Some(allowed), spec.sched.cpus, "{ctx}: affinity");
    }
    workload.stop();
    for pid in pids {
        assert!(
            common::wait_until(common::PATIENCE, || !common::alive(pid)),
            "{}: pid {pid} still running after stop",
            preset.name
        );
    }
}

#[test]
fn every_builtin_preset_runs_with_the_settings_it_asks_for() {
    let _guard = common::serial();
    for (name, _) in BUILTIN {
        let preset = load(name).expect("built-in loads");
        run_and_check(&preset);
    }
}

#[test]
fn overrides_reach_the_kernel() {
    let _guard = common::serial();
    let mut p = load("nice-ladder").expect("loads");
    let sets: Vec<Setting> = [
        "busy.nice=0..8:4",
        "busy.policy=batch",
        "busy.cpus=0",
        "busy-1.nice=7",
    ]
    .iter()
    .map(|s| s.parse().expect("setting"))
    .collect();
    p.apply_all(&sets).expect("applies");
    run_and_check(&p);
    let mut y = load("yield-latency").expect("loads");
    y.apply_all(&[
        "yield.policy=rr".parse().expect("s"),
        "yield.priority=20".parse().expect("s"),
        "hog.count=3".parse().expect("s"),
    ])
    .expect("applies");
    run_and_check(&y);
}

#[test]
fn dropping_a_workload_kills_every_task_including_makes_jobs() {
    let _guard = common::serial();
    let p = load("parallel-build").expect("loads");
    let specs = p.tasks(&online_cpus()).expect("expands");
    let workload = Workload::start(&specs, &common::exe()).expect("starts");
    workload.open_gate();
    let make = workload.tasks[0].pid;
    // Wait until make has children (jobs) running, then drop the workload.
    assert!(common::wait_until(common::PATIENCE, || {
        !common::children(make).is_empty()
    }));
    let jobs = common::children(make);
    drop(workload);
    for pid in std::iter::once(make).chain(jobs) {
        assert!(
            common::wait_until(common::PATIENCE, || !common::alive(pid)),
            "pid {pid} survived"
        );
    }
}

#[test]
fn a_command_that_cannot_run_is_refused_before_anything_starts() {
    let _guard = common::serial();
    let text = "name='broken'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\ncommand=['/nonexistent/program']\n";
    let p = Preset::parse(text, "test").expect("parses");
    let specs = p.tasks(&online_cpus()).expect("expands");
    let err = Workload::start(&specs, &common::exe())
        .err()
        .expect("no workload starts");
    assert!(err.is::<schedlab::workload::CannotRun>(), "{err:#}");
    assert_eq!(
        err.to_string(),
        "task \"a\": cannot run \"/nonexistent/program\": no such file"
    );
    // A name not in PATH, and a file that is not executable, are refused the same way.
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = dir.path().join("plain");
    std::fs::write(&plain, "not a program").expect("write");
    let plain = plain.to_str().expect("path").to_string();
    for (argv, why) in [
        ("no-such-program-anywhere", "not found in PATH"),
        (plain.as_str(), "not an executable file"),
    ] {
        let text = text.replace("/nonexistent/program", argv);
        let p = Preset::parse(&text, "test").expect("parses");
        let err = Workload::start(&p.tasks(&online_cpus()).expect("expands"), &common::exe())
            .err()
            .expect("refused");
        assert!(err.to_string().ends_with(why), "{err}");
    }
}

/// Every process of a forking preset (make and its jobs) is waited for by the time
/// schedlab exits: none is left as a zombie for init to reap (init reaps late on some
/// machines: `schedlab <defunct>` under pid 1 for a second after the run).
#[test]
fn a_forking_preset_leaves_no_zombie_behind() {
    let _serial = common::serial();
    let mut run = std::process::Command::new(common::exe())
        .args(["run", "parallel-build", "--duration", "1s"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("schedlab run");
    let schedlab = run.id() as i32;
    // Every descendant seen while it runs (make's jobs come and go).
    let mut seen = std::collections::BTreeSet::new();
    let status = loop {
        let mut frontier = vec![schedlab];
        while let Some(p) = frontier.pop() {
            for c in common::children(p) {
                if seen.insert(c) {
                    frontier.push(c);
                }
            }
        }
        if let Some(status) = run.try_wait().expect("try_wait") {
            break status;
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    assert!(status.success(), "{status}");
    assert!(seen.len() > 3, "make and its jobs were seen: {seen:?}");
    let left: Vec<String> = seen
        .iter()
        .filter_map(|pid| std::fs::read_to_string(format!("/proc/{pid}/stat")).ok())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}
