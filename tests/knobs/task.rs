//! Per-task knobs against the kernel: policy, nice, priority, affinity, deadline parameters and custom slices, read back from /proc.

use super::*;

#[test]
fn every_per_task_knob_reaches_a_live_task() {
    let Some(_g) = guard() else { return };
    let t = Sleeper::new();
    let tid = t.tid();
    for want in per_task_cases() {
        assert_applies_and_reads_back(tid, &want);
    }
    // SCHED_DEADLINE needs the whole root domain (cpus=all), which the last case set.
    let dl = SchedSettings {
        policy: Policy::Deadline,
        deadline: Some(Deadline {
            runtime_ns: 2_000_000,
            deadline_ns: 10_000_000,
            period_ns: 10_000_000,
        }),
        ..Default::default()
    };
    let errors = apply("sleeper", tid, &dl);
    assert!(errors.is_empty(), "{errors:?}");
    let got = read_back(tid).expect("getattr");
    assert_eq!(got.policy, Policy::Deadline);
    assert_eq!(got.deadline, dl.deadline);
    assert_eq!(proc_sched_field(tid, "policy").as_deref(), Some("6"));
    // Deadline on a task pinned to one CPU: the kernel refuses, and says why.
    let pinned = SchedSettings {
        cpus: Some(schedlab::cpuset::CpuSet::single(0)),
        ..dl.clone()
    };
    let t2 = Sleeper::new();
    let errors = apply("pinned", t2.tid(), &pinned);
    if schedlab::system::online_cpus().count() > 1 {
        assert!(
            errors.iter().any(|e| e.why.contains("root domain")),
            "{errors:?}"
        );
    }
    assert_uclamp_works_or_says_it_is_not_compiled_in(t2.tid());
}

#[test]
fn deadline_parameters_given_as_durations_reach_the_kernel_exactly() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    // A deadline spinner with its parameters as strings in the preset, and a deadline
    // sleeper whose parameters come from --set and one --at.
    let preset = write_deadline_preset(dir.path());
    let json = dir.path().join("r.json");
    let mut child = Running(
        schedlab_with_journal(&journal_path(&dir))
            .arg("run")
            .arg(&preset)
            .args(["--duration", "2s"])
            .args(["--set", "dl2.runtime=500us", "--set", "dl2.deadline=5ms"])
            .args(["--set", "dl2.period=20ms", "--at", "1s:dl2.period=40ms"])
            .arg("--json")
            .arg(&json)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run"),
    );
    let (status, seen) = watch_deadline_parameters(&mut child);
    assert!(status.success(), "{status:?}");
    let r = read_json(&json);
    let (dl, dl2) = (report_task(&r, "dl"), report_task(&r, "dl2"));
    assert_the_kernel_held_the_given_parameters(&seen, &dl, &dl2);
    assert_eq!(r["events"][0]["ok"], true, "{}", r["events"]);
    assert_the_report_says_which_parameters_ran(&r["settings"]);
    assert_the_spinner_gets_its_budget(&r, &dl);
}

#[test]
fn custom_slices_reach_the_kernel_and_default_gives_the_kernels_back() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    // What the kernel gives a task that asked for nothing: a fresh sleeper's slice.
    let fresh = Sleeper::new();
    let default: u64 = proc_sched_field(fresh.tid(), "se.slice")
        .and_then(|s| s.parse().ok())
        .expect("se.slice of a fresh task (EEVDF, 6.6+)");
    drop(fresh);
    let preset = sleepers_preset(
        dir.path(),
        &[
            ("small", "slice = \"0.1ms\""),
            ("large", "slice = \"100ms\""),
            ("live", ""),
            ("plain", ""),
        ],
    );
    // The ends of the range schedlab allows are the kernel's clamp (0.1..100 ms), so
    // they must arrive unclamped; outside it schedlab refuses before anything starts.
    let out = schedlab_with_journal(&journal_path(&dir))
        .arg("run")
        .arg(&preset)
        .args(["--set", "small.slice=0.05ms"])
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("0.1ms..100ms"), "{err}");
    let json = dir.path().join("r.json");
    let mut child = Running(
        schedlab_with_journal(&journal_path(&dir))
            .arg("run")
            .arg(&preset)
            .args(["--duration", "2s", "--set", "live.slice=3ms"])
            .args(["--at", "1s:live.slice=default", "--json"])
            .arg(&json)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run"),
    );
    // Each task's se.slice in /proc and sched_getattr's sched_runtime (the slice of a fair
    // task), in the order seen; only once the shim has become `sleep` (after the start
    // gate, so after the settings).
    let mut seen: std::collections::BTreeMap<i32, Vec<(u64, u64)>> = Default::default();
    let status = poll_while_running(&mut child, Duration::from_secs(20), |pid| {
        for tid in child_threads(pid) {
            let comm = std::fs::read_to_string(format!("/proc/{tid}/comm")).unwrap_or_default();
            if comm.trim() != "sleep" {
                continue;
            }
            let proc_slice = proc_sched_field(tid, "se.slice").and_then(|s| s.parse().ok());
            if let (Some(p), Some(a)) = (proc_slice, sched_getattr(tid)) {
                push_change(seen.entry(tid).or_default(), (p, a.runtime));
            }
        }
    });
    assert!(status.success(), "{status:?}");
    let r = read_json(&json);
    let slices = |name: &str| {
        let tid = report_task(&r, name)["tid"].as_i64().expect("tid") as i32;
        seen.get(&tid).cloned().unwrap_or_default()
    };
    assert_eq!(slices("small"), [(100_000, 100_000)], "{seen:?}");
    assert_eq!(slices("large"), [(100_000_000, 100_000_000)], "{seen:?}");
    assert_eq!(
        slices("live"),
        [(3_000_000, 3_000_000), (default, default)],
        "--set 3ms, then default at 1 s: {seen:?}"
    );
    assert_eq!(slices("plain"), [(default, default)], "{seen:?}");
    assert_eq!(r["events"][0]["ok"], true, "{}", r["events"]);
    assert_eq!(r["settings"]["small.slice"], "100000ns");
    assert_eq!(r["settings"]["large.slice"], "100000000ns");
}

/// Every policy with its own parameters, the last one leaving the task on every CPU.
fn per_task_cases() -> [SchedSettings; 5] {
    [
        SchedSettings {
            policy: Policy::Batch,
            nice: 7,
            ..Default::default()
        },
        SchedSettings {
            policy: Policy::Idle,
            ..Default::default()
        },
        SchedSettings {
            policy: Policy::Fifo,
            priority: 42,
            cpus: Some(schedlab::cpuset::CpuSet::single(0)),
            ..Default::default()
        },
        SchedSettings {
            policy: Policy::Rr,
            priority: 7,
            ..Default::default()
        },
        SchedSettings {
            policy: Policy::Other,
            nice: -5,
            slice_ns: Some(3_000_000),
            cpus: Some(schedlab::system::online_cpus()),
            ..Default::default()
        },
    ]
}

/// Applies `want` to `tid`, then reads it back through sched_getattr and /proc.
fn assert_applies_and_reads_back(tid: i32, want: &SchedSettings) {
    let errors = apply("sleeper", tid, want);
    assert!(errors.is_empty(), "{want:?}: {errors:?}");
    let got = read_back(tid).expect("sched_getattr");
    assert_eq!(got.policy, want.policy);
    assert_eq!(got.priority, want.priority);
    if want.policy.is_fair() {
        assert_eq!(got.nice, want.nice);
    }
    if let Some(cpus) = want.cpus {
        assert_eq!(got.cpus, Some(cpus));
    }
    let policy = proc_sched_field(tid, "policy").expect("policy in /proc");
    assert_eq!(policy, want.policy.to_kernel().to_string(), "/proc agrees");
    if let Some(slice) = want.slice_ns {
        assert_eq!(
            proc_sched_field(tid, "se.slice"),
            Some(slice.to_string()),
            "custom slice in /proc"
        );
    }
}

/// uclamp: not compiled into this kernel; the message says so.
fn assert_uclamp_works_or_says_it_is_not_compiled_in(tid: i32) {
    let probe = Probe::detect();
    let clamp = SchedSettings {
        uclamp_min: Some(512),
        ..Default::default()
    };
    let errors = apply("sleeper", tid, &clamp);
    if !probe.uclamp {
        assert!(
            errors.iter().any(|e| e.why
                == "uclamp is not supported by this kernel (CONFIG_UCLAMP_TASK off)"
                && e.what == "setting uclamp_min=512"),
            "{errors:?}"
        );
    } else {
        assert!(errors.is_empty(), "{errors:?}");
    }
}

/// A deadline spinner (2ms/10ms/10ms) and a deadline sleeper (1ms/10ms/10ms), their
/// parameters as duration strings.
fn write_deadline_preset(dir: &Path) -> PathBuf {
    let preset = dir.join("dl.toml");
    std::fs::write(
        &preset,
        r#"name = "dl"
summary = "deadline tasks"
note = "n"
[metric]
headline = "share"
task = "dl"
[[task]]
name = "dl"
worker = "spin"
policy = "deadline"
runtime = "2ms"
deadline = "10ms"
period = "10ms"
[[task]]
name = "dl2"
command = ["sleep", "30"]
policy = "deadline"
runtime = "1ms"
deadline = "10ms"
period = "10ms"
"#,
    )
    .expect("write preset");
    preset
}

fn watch_deadline_parameters(child: &mut Running) -> (std::process::ExitStatus, DeadlineSeen) {
    let mut seen: std::collections::BTreeMap<i32, Vec<(u64, u64, u64)>> = Default::default();
    let mut proc_policy: std::collections::BTreeMap<i32, String> = Default::default();
    let status = poll_while_running(child, Duration::from_secs(20), |pid| {
        for tid in child_threads(pid) {
            // A DEADLINE task killed at the end reads 0/0/0 as a zombie (checked here
            // with a C program); a live one has a runtime of at least 1024 ns.
            let Some(a) = sched_getattr(tid)
                .filter(|a| a.policy == libc::SCHED_DEADLINE as u32 && a.runtime > 0)
            else {
                continue;
            };
            push_change(
                seen.entry(tid).or_default(),
                (a.runtime, a.deadline, a.period),
            );
            if let Some(p) = proc_sched_field(tid, "policy") {
                proc_policy.insert(tid, p);
            }
        }
    });
    (
        status,
        DeadlineSeen {
            params: seen,
            proc_policy,
        },
    )
}

fn assert_the_kernel_held_the_given_parameters(
    seen: &DeadlineSeen,
    dl: &serde_json::Value,
    dl2: &serde_json::Value,
) {
    let DeadlineSeen {
        params: seen,
        proc_policy,
    } = seen;
    let tid = |t: &serde_json::Value| t["tid"].as_i64().expect("tid") as i32;
    assert_eq!(
        seen.get(&tid(dl)),
        Some(&vec![(2_000_000, 10_000_000, 10_000_000)]),
        "\"2ms\"/\"10ms\"/\"10ms\" from the preset: {seen:?}"
    );
    assert_eq!(
        seen.get(&tid(dl2)),
        Some(&vec![
            (500_000, 5_000_000, 20_000_000),
            (500_000, 5_000_000, 40_000_000)
        ]),
        "--set 500us/5ms/20ms, then --at 1s period=40ms: {seen:?}"
    );
    assert_eq!(seen.len(), 2, "no other deadline threads: {seen:?}");
    for t in [dl, dl2] {
        assert_eq!(proc_policy.get(&tid(t)).map(String::as_str), Some("6"));
        assert_eq!(t["policy"], "deadline");
    }
}

fn assert_the_report_says_which_parameters_ran(settings: &serde_json::Value) {
    assert_eq!(
        (
            &settings["dl.runtime"],
            &settings["dl.deadline"],
            &settings["dl.period"]
        ),
        (
            &serde_json::json!("2000000ns"),
            &serde_json::json!("10000000ns"),
            &serde_json::json!("10000000ns")
        ),
        "the report says which parameters ran: {settings}"
    );
    assert_eq!(settings["dl2.period"], "40000000ns", "{settings}");
}

/// The effect: the spinner gets runtime/period = 0.2 of a CPU, ahead of every fair
/// and RT task (so other programs' load does not matter).
fn assert_the_spinner_gets_its_budget(r: &serde_json::Value, dl: &serde_json::Value) {
    // The kernel enforces the budget at ticks (HZ=250, HRTICK_DL off: an overrun of up
    // to 4 ms is paid back in the next periods), so over the ~2 s run the run time is
    // 0.2 T within an overrun and a budget (6 ms), and each end can lag a tick: 0.01
    // covers both. Steal can cost the task periods it could not run in: at most its
    // share of the steal.
    let share = dl["cpu_share"].as_f64().expect("share");
    let steal = r["metrics"]["cpu"]
        .as_array()
        .expect("cpus")
        .iter()
        .filter_map(|c| c["steal_share"].as_f64())
        .fold(0.0, f64::max);
    let low = 0.2 * (1.0 - steal) - 0.01;
    assert!(
        (low..=0.21).contains(&share),
        "a 2ms/10ms deadline spinner gets 0.2 of a CPU: {share:.4} (steal {steal:.3})"
    );
}

/// Every thread of `pid`'s children: the tasks of a running schedlab.
fn child_threads(pid: i32) -> Vec<i32> {
    common::children(pid)
        .into_iter()
        .flat_map(|c| {
            std::fs::read_dir(format!("/proc/{c}/task"))
                .map(|d| {
                    d.flatten()
                        .filter_map(|e| e.file_name().to_str()?.parse().ok())
                        .collect::<Vec<i32>>()
                })
                .unwrap_or_default()
        })
        .collect()
}

/// Pushes `v` unless it repeats the last value: the values a knob took, in order.
fn push_change<T: PartialEq>(seen: &mut Vec<T>, v: T) {
    if seen.last() != Some(&v) {
        seen.push(v);
    }
}

/// What the kernel held for the run's DEADLINE threads while `child` ran.
struct DeadlineSeen {
    /// Each thread's (runtime, deadline, period) as sched_getattr reads them, in the
    /// order they were seen.
    params: std::collections::BTreeMap<i32, Vec<(u64, u64, u64)>>,
    /// Each thread's policy in /proc.
    proc_policy: std::collections::BTreeMap<i32, String>,
}

/// sched_getattr(2) straight from the kernel, not through schedlab's own reader.
fn sched_getattr(tid: i32) -> Option<SchedAttr> {
    let mut attr = SchedAttr::default();
    let size = std::mem::size_of::<SchedAttr>() as libc::c_uint;
    // SAFETY: the kernel writes at most `size` bytes into `attr`, which is that large.
    let rc = unsafe {
        libc::syscall(
            libc::SYS_sched_getattr,
            tid,
            &mut attr as *mut SchedAttr,
            size,
            0 as libc::c_uint,
        )
    };
    (rc == 0).then_some(attr)
}

/// `struct sched_attr` as the kernel defines it (include/uapi/linux/sched/types.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
struct SchedAttr {
    size: u32,
    policy: u32,
    flags: u64,
    nice: i32,
    priority: u32,
    runtime: u64,
    deadline: u64,
    period: u64,
    util_min: u32,
    util_max: u32,
}
