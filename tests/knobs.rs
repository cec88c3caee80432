//! The knob layer against the real kernel (as root): every writable knob is changed on a
//! live task or the system, read back from the kernel, and restored from the journal,
//! also after a panic and a SIGKILL. Knobs this machine refuses are tested for their
//! message. Tests here run one at a time and put every global value back even when an
//! assertion fails.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use schedlab::error::KnobError;
use schedlab::knob::sys::SystemKnobs;
use schedlab::knob::sys::{Probe, SysKnob};
use schedlab::knob::task::{apply, read_back, Deadline, Policy, SchedSettings};

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

fn debugfs_mounted() -> bool {
    std::fs::read_to_string("/proc/mounts").is_ok_and(|m| m.contains(" /sys/kernel/debug debugfs"))
}

fn guard() -> Option<Restore> {
    if !nix::unistd::geteuid().is_root() {
        eprintln!("skipped: needs root");
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
        debugfs_was_mounted: debugfs_mounted(),
        _serial: serial,
    })
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
        if !self.debugfs_was_mounted && debugfs_mounted() {
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

#[test]
fn rt_runtime_lowering_and_raising_keep_the_root_cgroup_in_order_and_restore() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sys = SystemKnobs::new(journal_path(&dir));
    let before = (read(RT_RUNTIME), read(ROOT_RT_RUNTIME));
    let got = sys
        .set(&SysKnob::RtRuntime, "600000", false)
        .expect("lowering works");
    assert_eq!(got, "600000");
    assert_eq!(read(RT_RUNTIME), "600000");
    if Path::new(ROOT_RT_RUNTIME).exists() {
        assert_eq!(
            read(ROOT_RT_RUNTIME),
            "600000",
            "the root cgroup was lowered first"
        );
    }
    assert!(journal_path(&dir).exists(), "journaled before the write");
    sys.set(&SysKnob::RtRuntime, "900000", false)
        .expect("raising works");
    assert_eq!(read(RT_RUNTIME), "900000");
    let restored = sys.restore();
    assert!(restored.iter().all(|r| r.ok()), "{restored:?}");
    assert_eq!((read(RT_RUNTIME), read(ROOT_RT_RUNTIME)), before);
    assert!(!journal_path(&dir).exists());
}

#[test]
fn rt_period_rr_timeslice_and_autogroup_apply_and_restore() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let before: Vec<String> = [RT_PERIOD, ROOT_RT_PERIOD, RR, AUTOGROUP]
        .iter()
        .map(|f| read(f))
        .collect();
    {
        let mut sys = SystemKnobs::new(journal_path(&dir));
        // Seen twice in CI: a transient EBUSY (an earlier test's task still holding
        // bandwidth). schedlab itself retries busy writes for a second.
        assert_eq!(
            sys.set(&SysKnob::RtPeriod, "1100000", false)
                .expect("longer period"),
            "1100000"
        );
        assert_eq!(
            sys.set(&SysKnob::RtPeriod, "1000000", false).expect("back"),
            "1000000"
        );
        let rr = sys
            .set(&SysKnob::RrTimeslice, "40", false)
            .expect("rr timeslice");
        // The kernel rounds to whole ticks (HZ=250 here: 40 ms is 10 ticks).
        assert_eq!(read(RR), rr);
        assert!(rr.parse::<u32>().expect("number") >= 36);
        let flipped = if before[3] == "1" { "0" } else { "1" };
        assert_eq!(
            sys.set(&SysKnob::Autogroup, flipped, false)
                .expect("autogroup"),
            flipped
        );
        let err = sys.set(&SysKnob::RtPeriod, "10", false).unwrap_err();
        assert!(matches!(err, KnobError::Invalid(_)), "bad input: {err:?}");
        assert!(err.to_string().contains("allowed"), "{err}");
        // Dropping SystemKnobs restores from the journal.
    }
    let after: Vec<String> = [RT_PERIOD, ROOT_RT_PERIOD, RR, AUTOGROUP]
        .iter()
        .map(|f| read(f))
        .collect();
    assert_eq!(after, before);
    assert!(!journal_path(&dir).exists());
}

#[test]
fn unthrottled_rt_is_refused_while_rt_tasks_run_unless_insisted() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sys = SystemKnobs::new(journal_path(&dir));
    let err = sys.set(&SysKnob::RtRuntime, "-1", true).unwrap_err();
    assert!(matches!(err, KnobError::Refused(_)), "{err:?}");
    let err = err.to_string();
    assert!(
        err.contains("--allow-unthrottled-rt") && err.contains("freeze"),
        "{err}"
    );
    assert_eq!(read(RT_RUNTIME), "950000", "nothing written");
    assert!(!journal_path(&dir).exists(), "nothing journaled");
}

#[test]
fn debugfs_knobs_explain_lockdown_and_missing_features_and_the_mount_is_undone() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let was_mounted = debugfs_mounted();
    {
        let mut sys = SystemKnobs::new(journal_path(&dir));
        let unmounted = sys.set(&SysKnob::Tunable("base_slice_ns"), "3000000", false);
        if !was_mounted {
            assert!(unmounted
                .unwrap_err()
                .to_string()
                .contains("mount -t debugfs"));
        }
        sys.mount_debugfs().expect("mount debugfs");
        let features =
            schedlab::knob::sys::read_features(&sys.probe).expect("features readable or decodable");
        assert!(features.0.iter().any(|(n, _)| n == "WA_IDLE"));
        let err = sys
            .set(&SysKnob::Feature("SYNC_WAKEUPS".into()), "off", false)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("removed in 2.6.35") && err.contains("WA_IDLE, WA_WEIGHT, WA_BIAS"),
            "{err}"
        );
        match &sys.probe.debugfs_write {
            Err(why) => {
                // This machine: kernel lockdown. Every debugfs knob says so, nothing is written.
                assert!(why.to_string().contains("lockdown"), "{why}");
                for knob in [
                    SysKnob::Feature("WA_IDLE".into()),
                    SysKnob::Tunable("base_slice_ns"),
                    SysKnob::Preempt,
                ] {
                    let err = sys.set(&knob, "off", false).unwrap_err().to_string();
                    assert!(err.contains("lockdown") || err.contains("allowed"), "{err}");
                }
            }
            Ok(()) => {
                // A machine without lockdown: flip WA_BIAS and check the journal puts it back.
                let was = schedlab::knob::sys::get(&SysKnob::Feature("WA_BIAS".into()), &sys.probe)
                    .expect("readable");
                let flipped = if was == "on" { "off" } else { "on" };
                assert_eq!(
                    sys.set(&SysKnob::Feature("WA_BIAS".into()), flipped, false)
                        .expect("write"),
                    flipped
                );
                sys.restore();
                assert_eq!(
                    schedlab::knob::sys::get(&SysKnob::Feature("WA_BIAS".into()), &sys.probe)
                        .expect("readable"),
                    was
                );
            }
        }
    }
    assert_eq!(
        debugfs_mounted(),
        was_mounted,
        "the journal undid the mount"
    );
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

#[test]
fn every_per_task_knob_reaches_a_live_task() {
    let Some(_g) = guard() else { return };
    let t = Sleeper::new();
    let tid = t.tid();
    let cases = [
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
    ];
    for want in cases {
        let errors = apply("sleeper", tid, &want);
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
    // uclamp: not compiled into this kernel; the message says so.
    let probe = Probe::detect();
    let clamp = SchedSettings {
        uclamp_min: Some(512),
        ..Default::default()
    };
    let errors = apply("sleeper", t2.tid(), &clamp);
    if !probe.uclamp {
        assert!(
            errors
                .iter()
                .any(|e| e.why.contains("CONFIG_UCLAMP_TASK is off")),
            "{errors:?}"
        );
    } else {
        assert!(errors.is_empty(), "{errors:?}");
    }
}

fn schedlab_with_journal(journal: &Path) -> Command {
    let mut c = Command::new(common::exe());
    c.env("SCHEDLAB_JOURNAL", journal);
    c
}

#[test]
fn a_run_that_changes_rt_runtime_restores_it_and_the_journal_goes() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let j = journal_path(&dir);
    let out = schedlab_with_journal(&j)
        .args([
            "run",
            "rt-throttle",
            "--duration",
            "3s",
            "--set",
            "sys.rt_runtime_us=600000",
            "--json",
            "-",
        ])
        .output()
        .expect("run");
    let report = common::json_output(&out);
    let task = |name: &str| {
        report["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .find(|t| t["name"] == name)
            .expect("task in the report")
            .clone()
    };
    let (fifo, fair) = (task("fifo"), task("fair"));
    let share = |t: &serde_json::Value| t["cpu_share"].as_f64().expect("share");
    // Both threads share one CPU; the hypervisor's steal time comes out of what
    // the throttle leaves to the fair thread, so it is counted on the fair side.
    let cpu = fair["last_cpu"].as_u64().expect("cpu") as usize;
    let steal = report["metrics"]["cpu"][cpu]["steal"]
        .as_f64()
        .expect("steal");
    let context = format!(
        "fifo {:.3}, fair {:.3}, steal on cpu{cpu} {steal:.3}",
        share(&fifo),
        share(&fair)
    );
    assert!(
        (share(&fifo) - 0.6).abs() < 0.06,
        "600000 of 1000000 caps the FIFO thread at 60 % (summaries after the 1 s warm-up): {context}"
    );
    assert!((report["summary_from_s"].as_f64().expect("from") - 1.0).abs() < 0.25);
    assert!(
        share(&fair) + steal > 0.3,
        "the fair thread gets what the cap frees (about 40 %): {context}"
    );
    assert_eq!(
        (read(RT_RUNTIME), read(ROOT_RT_RUNTIME)),
        ("950000".into(), "950000".into())
    );
    assert!(!j.exists());
}

#[test]
fn at_changes_show_in_the_csv_and_the_report() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let csv = dir.path().join("run.csv");
    let out = schedlab_with_journal(&journal_path(&dir))
        .args([
            "run",
            "rt-throttle",
            "--duration",
            "2s",
            "--at",
            "1s:fair.nice=5",
            "--at",
            "1s:sys.rt_runtime_us=500000",
        ])
        .args(["--csv", csv.to_str().expect("utf8"), "--json", "-"])
        .output()
        .expect("run");
    let report = common::json_output(&out);
    let events = report["events"].as_array().expect("events");
    assert_eq!(events.len(), 2);
    assert!(events.iter().all(|e| e["ok"] == true), "{events:?}");
    let text = std::fs::read_to_string(&csv).expect("csv");
    let event_line = text
        .lines()
        .find(|l| l.contains("fair.nice=5"))
        .expect("event row in the CSV");
    let t_event: f64 = event_line
        .split(',')
        .next()
        .and_then(|t| t.parse().ok())
        .expect("time");
    assert!((0.9..2.0).contains(&t_event), "{event_line}");
    // Samples of the fair thread: nice -20 before the change, 5 after.
    let nice_at = |after: bool| {
        text.lines()
            .filter(|l| l.split(',').nth(1) == Some("fair") && !l.ends_with(')'))
            .filter_map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                Some((f[0].parse::<f64>().ok()?, f[5].to_string()))
            })
            .filter(|(t, _)| {
                if after {
                    *t > t_event + 0.3
                } else {
                    *t < t_event
                }
            })
            .map(|(_, n)| n)
            .collect::<Vec<_>>()
    };
    assert!(
        nice_at(false).iter().all(|n| n == "-20"),
        "{:?}",
        nice_at(false)
    );
    assert!(
        !nice_at(true).is_empty() && nice_at(true).iter().all(|n| n == "5"),
        "{:?}",
        nice_at(true)
    );
    assert_eq!(read(RT_RUNTIME), "950000");
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

fn long_run_with_runtime(journal: &Path, runtime: &str) -> Running {
    let child = schedlab_with_journal(journal)
        .args(["run", "rt-throttle", "--duration", "30s", "--set"])
        .arg(format!("sys.rt_runtime_us={runtime}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    assert!(
        wait_for_value(RT_RUNTIME, runtime),
        "the run set sys.rt_runtime_us={runtime}"
    );
    Running(child)
}

#[test]
fn after_sigkill_the_next_start_or_restore_puts_the_knobs_back() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let j = journal_path(&dir);
    for (how, next) in [("next start", vec!["knobs"]), ("restore", vec!["restore"])] {
        let mut child = long_run_with_runtime(&j, "600000");
        child.kill().expect("SIGKILL");
        child.wait().expect("wait");
        assert_eq!(
            read(RT_RUNTIME),
            "600000",
            "{how}: a SIGKILL restores nothing by itself"
        );
        assert!(j.exists(), "{how}: the journal survives");
        let out = schedlab_with_journal(&j)
            .args(&next)
            .output()
            .expect("next schedlab");
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "{how}: {said}");
        assert!(
            said.contains("restored") && said.contains("sched_rt_runtime_us"),
            "{how}: says what it restored: {said}"
        );
        assert_eq!(
            (read(RT_RUNTIME), read(ROOT_RT_RUNTIME)),
            ("950000".into(), "950000".into()),
            "{how}"
        );
        assert!(!j.exists(), "{how}");
    }
    let out = schedlab_with_journal(&j)
        .arg("restore")
        .output()
        .expect("restore");
    assert!(String::from_utf8_lossy(&out.stdout).contains("nothing to restore"));
}

#[test]
fn sigterm_and_panic_both_restore() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let j = journal_path(&dir);
    let mut child = long_run_with_runtime(&j, "700000");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("term");
    assert!(child.wait().expect("wait").success());
    assert_eq!(read(RT_RUNTIME), "950000", "SIGTERM restores");
    assert!(!j.exists());

    let out = schedlab_with_journal(&j)
        .env("SCHEDLAB_FAULT", "panic-after-start")
        .args([
            "run",
            "rt-throttle",
            "--duration",
            "5s",
            "--set",
            "sys.rt_runtime_us=700000",
        ])
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("fault injected"));
    assert_eq!(
        (read(RT_RUNTIME), read(ROOT_RT_RUNTIME)),
        ("950000".into(), "950000".into()),
        "a panic restores"
    );
    assert!(!j.exists());
}

#[test]
fn rt_throttle_sweep_reproduces_the_table_and_restores_both_values() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let out = schedlab_with_journal(&journal_path(&dir))
        .args([
            "sweep",
            "rt-throttle",
            "--knob",
            "sys.rt_runtime_us=200000..700000:100000",
            "--duration",
            "2s",
            "--json",
            "-",
        ])
        .output()
        .expect("sweep");
    let r = common::json_output(&out);
    let rows = r["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 6);
    let fifo_share = |row: &serde_json::Value| {
        row["cpu_share"]
            .as_array()
            .expect("shares")
            .iter()
            .find(|p| p[0] == "fifo")
            .and_then(|p| p[1].as_f64())
            .expect("fifo")
    };
    // The spinner gets its runtime share of CPU 0: the preset's warm-up leaves out the
    // first period (where it can run two budgets back to back), and the remaining
    // second is one whole period, give or take a sample.
    for (row, cap) in rows.iter().zip([0.2, 0.3, 0.4, 0.5, 0.6, 0.7]) {
        let got = fifo_share(row);
        assert!((got - cap).abs() < 0.08, "{}: fifo {got}", row["value"]);
    }
    assert!(
        fifo_share(&rows[5]) > fifo_share(&rows[0]) + 0.25,
        "more runtime, more CPU"
    );
    assert_eq!(
        (read(RT_RUNTIME), read(ROOT_RT_RUNTIME)),
        ("950000".into(), "950000".into())
    );
}

#[test]
fn cgroup_preset_shares_by_group_and_leaves_no_cgroup_behind() {
    let Some(_g) = guard() else { return };
    if schedlab::knob::cgroup::detect().is_none() {
        eprintln!("skipped: no cgroup cpu controller");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let out = schedlab_with_journal(&journal_path(&dir))
        .args([
            "run",
            "cgroup-fairness",
            "--duration",
            "1.5s",
            "--at",
            "0.8s:cgroup.crowd.weight=400",
            "--json",
            "-",
        ])
        .output()
        .expect("run");
    let r = common::json_output(&out);
    assert!(
        r["warnings"].as_array().expect("warnings").is_empty(),
        "{}",
        r["warnings"]
    );
    let share = |name: &str| {
        r["tasks"]
            .as_array()
            .expect("tasks")
            .iter()
            .find(|t| t["name"] == name)
            .and_then(|t| t["cpu_share"].as_f64())
            .expect("share")
    };
    // Group fairness: solo alone in its group gets far more than any one crowd task.
    assert!(
        share("solo") > 2.0 * share("crowd-0"),
        "solo {} crowd-0 {}",
        share("solo"),
        share("crowd-0")
    );
    assert_eq!(r["events"][0]["ok"], true, "{}", r["events"]);
    assert_eq!(r["settings"]["cgroup.crowd.weight"], "400");
    let leftovers: Vec<String> = std::fs::read_dir("/sys/fs/cgroup/cpu")
        .map(|d| {
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.starts_with("schedlab-"))
                .collect()
        })
        .unwrap_or_default();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let out = schedlab_with_journal(&journal_path(&dir))
        .args(["run", "cgroup-fairness", "--set", "cgroup.nope.weight=5"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cgroups are crowd, solo"));
}

#[test]
fn two_schedlabs_never_change_knobs_at_once_even_with_different_journals() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut first = long_run_with_runtime(&dir.path().join("a.jsonl"), "600000");
    let out = schedlab_with_journal(&dir.path().join("b.jsonl"))
        .args([
            "run",
            "rt-throttle",
            "--duration",
            "1s",
            "--set",
            "sys.rt_runtime_us=700000",
        ])
        .output()
        .expect("second run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "the lock-held exit code: {err}");
    assert!(
        err.contains(&format!("another schedlab (pid {})", first.id())),
        "{err}"
    );
    assert_eq!(read(RT_RUNTIME), "600000", "the second one changed nothing");
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(first.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("term");
    assert!(first.wait().expect("wait").success());
    assert_eq!(read(RT_RUNTIME), "950000");
}
