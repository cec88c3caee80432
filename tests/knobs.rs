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

/// A value the knob's form allows (the later checks are against the machine).
fn typed(knob: SysKnob, value: &str) -> SysSetting {
    SysSetting::parse(knob, value).unwrap_or_else(|e| panic!("{e}"))
}

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

#[test]
fn rt_runtime_lowering_and_raising_keep_the_root_cgroup_in_order_and_restore() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sys = SystemKnobs::new(journal_path(&dir));
    let before = (read(RT_RUNTIME), read(ROOT_RT_RUNTIME));
    let got = sys
        .set(&typed(SysKnob::RtRuntime, "600000"), false)
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
    sys.set(&typed(SysKnob::RtRuntime, "900000"), false)
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
    let before_runtime = read(RT_RUNTIME);
    {
        let mut sys = SystemKnobs::new(journal_path(&dir));
        // Seen twice in CI: a transient EBUSY (an earlier test's task still holding
        // bandwidth). schedlab itself retries busy writes for a second.
        assert_eq!(
            sys.set(&typed(SysKnob::RtPeriod, "1100000"), false)
                .expect("longer period"),
            "1100000"
        );
        assert_eq!(
            sys.set(&typed(SysKnob::RtPeriod, "1000000"), false)
                .expect("back"),
            "1000000"
        );
        let rr = sys
            .set(&typed(SysKnob::RrTimeslice, "40"), false)
            .expect("rr timeslice");
        // The kernel rounds to whole ticks (HZ=250 here: 40 ms is 10 ticks).
        assert_eq!(read(RR), rr);
        assert!(rr.parse::<u32>().expect("number") >= 36);
        let flipped = if before[3] == "1" { "0" } else { "1" };
        assert_eq!(
            sys.set(&typed(SysKnob::Autogroup, flipped), false)
                .expect("autogroup"),
            flipped
        );
        let err = sys.set(&typed(SysKnob::RtPeriod, "10"), false).unwrap_err();
        assert!(matches!(err, KnobError::Invalid(_)), "bad input: {err:?}");
        assert!(err.to_string().contains("allowed"), "{err}");
        assert_eq!(
            (read(RT_PERIOD), read(RT_RUNTIME)),
            ("1000000".to_string(), before_runtime.clone()),
            "a period below the runtime is refused before anything is written"
        );
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
    let err = sys.set(&typed(SysKnob::RtRuntime, "-1"), true).unwrap_err();
    assert!(matches!(err, KnobError::Refused(_)), "{err:?}");
    let err = err.to_string();
    assert!(
        err.contains("--allow-unthrottled-rt") && err.contains("freeze"),
        "{err}"
    );
    assert_eq!(read(RT_RUNTIME), _g.was(RT_RUNTIME), "nothing written");
    assert!(!journal_path(&dir).exists(), "nothing journaled");
}

#[test]
fn debugfs_knobs_explain_lockdown_and_missing_features_and_the_mount_is_undone() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let was_mounted = common::debugfs_mounted();
    {
        let mut sys = SystemKnobs::new(journal_path(&dir));
        let unmounted = sys.set(&typed(SysKnob::Tunable("base_slice_ns"), "3000000"), false);
        if !was_mounted {
            assert!(unmounted
                .unwrap_err()
                .to_string()
                .contains("mount -t debugfs"));
        }
        sys.mount_debugfs().expect("mount debugfs");
        assert_a_removed_feature_names_the_ones_now_there(&mut sys);
        match &sys.probe.debugfs_write {
            Err(why) => {
                // This machine: kernel lockdown. Every debugfs knob says so, nothing is
                // written.
                assert!(why.to_string().contains("lockdown"), "{why}");
                assert_lockdown_refuses_every_debugfs_knob(&mut sys, &dir);
            }
            Ok(()) => {
                // A machine without lockdown: flip WA_BIAS and check the journal puts it back.
                flip_wa_bias_and_restore_it(&mut sys);
            }
        }
    }
    assert_eq!(
        common::debugfs_mounted(),
        was_mounted,
        "the journal undid the mount"
    );
}

fn assert_a_removed_feature_names_the_ones_now_there(sys: &mut SystemKnobs) {
    let features =
        schedlab::knob::sys::read_features(&sys.probe).expect("features readable or decodable");
    assert!(features.0.iter().any(|(n, _)| n == "WA_IDLE"));
    let err = sys
        .set(
            &typed(SysKnob::Feature("SYNC_WAKEUPS".into()), "off"),
            false,
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("removed in 2.6.35") && err.contains("WA_IDLE, WA_WEIGHT, WA_BIAS"),
        "{err}"
    );
}

/// Under kernel lockdown: every debugfs knob is refused and says why, and nothing is
/// written or journaled.
fn assert_lockdown_refuses_every_debugfs_knob(sys: &mut SystemKnobs, dir: &tempfile::TempDir) {
    // Each value is one the knob accepts, so only lockdown can refuse it (a parse error
    // would name the allowed values instead).
    assert_eq!(
        write_errno("/sys/kernel/debug/sched/base_slice_ns"),
        Some(libc::EPERM),
        "the kernel itself refuses debugfs writes here"
    );
    let before = (
        sched_debug_value("sysctl_sched_base_slice"),
        sched_debug_value("sysctl_sched_features"),
    );
    assert!(before.0.is_some() && before.1.is_some(), "{before:?}");
    for (knob, value) in [
        (SysKnob::Feature("WA_IDLE".into()), "off"),
        (SysKnob::Tunable("base_slice_ns"), "3000000"),
        (SysKnob::Tunable("migration_cost_ns"), "250000"),
        (SysKnob::Preempt, "full"),
    ] {
        let err = sys.set(&typed(knob.clone(), value), false).unwrap_err();
        assert!(matches!(err, KnobError::Refused(_)), "{err:?}");
        let err = err.to_string();
        assert!(
            err.contains(&knob.name()) && err.contains("lockdown") && err.contains("EPERM"),
            "{err}"
        );
    }
    // Read back from the kernel: the base slice and the feature bits as they were.
    assert_eq!(
        (
            sched_debug_value("sysctl_sched_base_slice"),
            sched_debug_value("sysctl_sched_features"),
        ),
        before
    );
    let journal = std::fs::read_to_string(journal_path(dir)).unwrap_or_default();
    assert!(
        !journal.contains("/sys/kernel/debug/sched"),
        "nothing was journaled for a write that never happened: {journal}"
    );
}

fn flip_wa_bias_and_restore_it(sys: &mut SystemKnobs) {
    let was = schedlab::knob::sys::get(&SysKnob::Feature("WA_BIAS".into()), &sys.probe)
        .expect("readable");
    let flipped = if was == "on" { "off" } else { "on" };
    assert_eq!(
        sys.set(&typed(SysKnob::Feature("WA_BIAS".into()), flipped), false)
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

/// A `name : value` line of debugfs' sched/debug (readable under lockdown), e.g.
/// `.sysctl_sched_base_slice : 1.400000`.
fn sched_debug_value(name: &str) -> Option<String> {
    let text = std::fs::read_to_string("/sys/kernel/debug/sched/debug").ok()?;
    text.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim().trim_start_matches('.') == name).then(|| v.trim().to_string())
    })
}

/// The errno of opening `path` for writing (None: it opened). Opening changes nothing.
fn write_errno(path: &str) -> Option<i32> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .err()
        .and_then(|e| e.raw_os_error())
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
    let steal = report["metrics"]["cpu"][cpu]["steal_share"]
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
    // The cap frees 0.4 of CPU 0 and the fair thread, always runnable, leaves none of it
    // idle; it shares it with whatever else runs there: the hypervisor's steal and other
    // programs, both in `foreign_cpus` (busy + steal on the run's CPUs from /proc/stat,
    // less the experiment's and schedlab's own CPU time; 0.1-0.5 CPU on a loaded CI
    // machine). 0.1 below 0.4 covers the 0.06 the cap's window may miss by, a /proc/stat
    // tick and schedlab's own threads.
    let others = report["metrics"]["foreign_cpus"]
        .as_f64()
        .unwrap_or(steal)
        .max(steal);
    assert!(
        share(&fair) + others > 0.3,
        "the fair thread gets what the cap frees (about 40 %) but for what others take: {context}, others {others:.3}"
    );
    assert_eq!(
        (read(RT_RUNTIME), read(ROOT_RT_RUNTIME)),
        (_g.was(RT_RUNTIME), _g.was(ROOT_RT_RUNTIME))
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
    assert_eq!(read(RT_RUNTIME), _g.was(RT_RUNTIME));
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
            (_g.was(RT_RUNTIME), _g.was(ROOT_RT_RUNTIME)),
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
    assert_eq!(
        child.wait().expect("wait").code(),
        Some(143),
        "128 + SIGTERM"
    );
    assert_eq!(read(RT_RUNTIME), _g.was(RT_RUNTIME), "SIGTERM restores");
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
        (_g.was(RT_RUNTIME), _g.was(ROOT_RT_RUNTIME)),
        "a panic restores"
    );
    assert!(!j.exists());
}

#[test]
fn rt_throttle_sweep_reproduces_the_table_and_restores_both_values() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let before = (read(RT_RUNTIME), read(ROOT_RT_RUNTIME));
    // Three runtimes across the table's range (each run takes its 2 s).
    let out = schedlab_with_journal(&journal_path(&dir))
        .args([
            "sweep",
            "rt-throttle",
            "--knob",
            "sys.rt_runtime_us=200000..700000:250000",
            "--duration",
            "2s",
            "--json",
            "-",
        ])
        .output()
        .expect("sweep");
    let r = common::json_output(&out);
    let rows = r["rows"].as_array().expect("rows");
    assert_eq!(rows.len(), 3);
    let fifo_share = |row: &serde_json::Value| {
        row["cpu_share"]
            .as_array()
            .expect("shares")
            .iter()
            .find(|p| p["task"] == "fifo")
            .and_then(|p| p["cpu_share"].as_f64())
            .expect("fifo")
    };
    // The spinner gets its runtime share of CPU 0: the preset's warm-up leaves out the
    // first period (where it can run two budgets back to back), and the remaining
    // window W is one period P (1 s), give or take a sample I (100 ms). The spinner runs
    // the first R of every period, so any window of exactly P holds R of run time; a
    // window of P - I can miss up to I of it, one of P + I can hold up to R + I. Hence
    // min((R - I)/(P - I), R/(P + I)) <= share <= max(R/(P - I), (R + I)/(P + I)), and
    // a percent of slack for schedstat's tick granularity at the window's ends.
    let (p, i) = (1.0, 0.1);
    for (row, r) in rows.iter().zip([0.2, 0.45, 0.7]) {
        let got = fifo_share(row);
        let low = f64::min((r - i) / (p - i), r / (p + i)) - 0.01;
        let high = f64::max(r / (p - i), (r + i) / (p + i)) + 0.01;
        assert!(
            (low..=high).contains(&got),
            "{}: fifo {got:.3}, allowed {low:.3}..{high:.3}",
            row["value"]
        );
    }
    assert!(
        fifo_share(&rows[2]) > fifo_share(&rows[0]) + 0.25,
        "more runtime, more CPU"
    );
    assert_eq!(
        (read(RT_RUNTIME), read(ROOT_RT_RUNTIME)),
        before,
        "both RT budgets as they were"
    );
}

#[test]
fn cgroup_preset_shares_by_group_and_leaves_no_cgroup_behind() {
    let Some(_g) = guard() else { return };
    let Some(root) = schedlab::knob::cgroup::detect() else {
        common::host_lacks("a cgroup cpu controller");
        let out = common::schedlab(&["run", "cgroup-fairness", "--duration", "1s"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("no cgroup cpu controller is mounted"),
            "refused with its reason: {err}"
        );
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let (json, csv) = (dir.path().join("r.json"), dir.path().join("r.csv"));
    let mut child = Running(
        schedlab_with_journal(&journal_path(&dir))
            .args([
                "run",
                "cgroup-fairness",
                "--duration",
                "1.5s",
                "--at",
                "0.8s:cgroup.crowd.weight=400",
            ])
            .arg("--json")
            .arg(&json)
            .arg("--csv")
            .arg(&csv)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run"),
    );
    assert_the_weight_change_reaches_the_groups_files(&root, child.id());
    assert!(child.wait().expect("wait").success());
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("report")).expect("json");
    assert_the_report_shares_by_group(&r);
    assert_solos_part_follows_the_weights(&std::fs::read_to_string(&csv).expect("csv"));
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

/// crowd's and solo's weights, as the kernel holds them, while the cgroup-fairness run
/// `pid` runs: even, then crowd's 400 from the change at 0.8 s.
fn assert_the_weight_change_reaches_the_groups_files(
    root: &schedlab::knob::cgroup::CgroupRoot,
    pid: u32,
) {
    // The weight as the kernel holds it, in the group's own file: weight 100 is
    // cpu.shares 1024 on v1, 400 is 4096 (cpu.weight 100 and 400 on v2).
    let v1 = root.version == schedlab::knob::cgroup::Version::V1;
    let (file, even, heavy) = if v1 {
        ("cpu.shares", "1024", "4096")
    } else {
        ("cpu.weight", "100", "400")
    };
    let crowd = root
        .mount
        .join(format!("schedlab-{pid}"))
        .join("crowd")
        .join(file);
    let crowd = crowd.to_str().expect("utf8");
    let solo = crowd.replace("/crowd/", "/solo/");
    // Bounded: the groups exist from before the start, the change comes at 0.8 s.
    assert!(
        wait_for_value(crowd, even),
        "crowd's {file} while the groups are even: {}",
        read(crowd)
    );
    // solo's group is made next to crowd's: it may take a moment longer to appear.
    assert!(
        wait_for_value(&solo, even),
        "solo's {file}: {}",
        read(&solo)
    );
    assert!(
        wait_for_value(crowd, heavy),
        "crowd.weight=400 reached the kernel: {file} reads {}",
        read(crowd)
    );
    assert_eq!(read(&solo), even, "solo's weight untouched");
}

/// The cgroup-fairness report: nothing refused, the change applied, and solo far ahead
/// of any one crowd task.
fn assert_the_report_shares_by_group(r: &serde_json::Value) {
    // Nothing refused (the cgroups were made and joined); a foreign-load warning is the
    // machine's, and the parts below are judged within the experiment.
    assert_eq!(r["refused"], serde_json::json!([]), "{}", r["warnings"]);
    assert!(
        r["warnings"].as_array().expect("warnings").iter().all(|w| w
            .as_str()
            .is_some_and(|w| w.starts_with("other programs took"))),
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
}

/// The effect, from the time series in the run's CSV `text`.
fn assert_solos_part_follows_the_weights(text: &str) {
    // All five spin on CPU 0, so the groups split what the experiment gets by weight -
    // solo's part is 100/(100+100) before the change and 100/(100+400) after it
    // (whatever other programs take of CPU 0 comes out of both). Each part is a sum
    // over 0.5-0.8 s; EEVDF keeps a group entity's lag within a slice plus a tick
    // (~5.4 ms) and each window's edges can miss a tick of run time, so the part is
    // within 0.03 of the weights' ratio. The 0.2 s after the change are left out.
    let t_change: f64 = text
        .lines()
        .find(|l| l.contains("cgroup.crowd.weight=400"))
        .and_then(|l| l.split(',').next()?.parse().ok())
        .expect("the change's row in the CSV");
    let rows = share_rows(text);
    let mut times: Vec<f64> = rows.iter().map(|r| r.0).collect();
    times.dedup();
    // No round follows another by less than half an interval, a late one or the run's
    // last included (a round a millisecond after another reads no run time for the
    // spinners: a share of 0 that cannot be true).
    assert!(
        times.windows(2).all(|w| w[1] - w[0] >= 0.045),
        "rows closer than half the 100 ms interval: {times:?}"
    );
    // Each row's part, for a failure's message.
    let parts: Vec<String> = times
        .iter()
        .zip(times.iter().skip(1))
        .map(|(a, b)| format!("{b}:{:.3}", solo_part(&rows, &times, *a, *b)))
        .collect();
    let (before, after) = (
        solo_part(&rows, &times, 0.0, t_change),
        solo_part(&rows, &times, t_change + 0.2, f64::MAX),
    );
    assert!(
        (before - 0.5).abs() <= 0.03,
        "equal weights: solo's part {before:.3}, want 0.5; per row {parts:?}"
    );
    assert!(
        (after - 0.2).abs() <= 0.03,
        "crowd weighs 400: solo's part {after:.3}, want 0.2; per row {parts:?}"
    );
}

/// The CSV's task rows: (time, whether the task is solo, CPU share).
fn share_rows(text: &str) -> Vec<(f64, bool, f64)> {
    let mut rows: Vec<(f64, bool, f64)> = Vec::new();
    for l in text.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        if let (Some(t), Some(share)) = (
            f[0].parse::<f64>().ok(),
            f.get(7).and_then(|v| v.parse::<f64>().ok()),
        ) {
            rows.push((t, f[1] == "solo", share));
        }
    }
    rows
}

/// solo's part of the experiment's CPU time in the rows after `from` up to `to`.
fn solo_part(rows: &[(f64, bool, f64)], times: &[f64], from: f64, to: f64) -> f64 {
    // Rows weighted by the time they span: a short row (a last round soon after a
    // regular one) holds few ticks of run time and must not count like a full one.
    let span = |t: f64| {
        let i = times.iter().position(|&x| x == t).unwrap_or(0);
        if i == 0 {
            0.0
        } else {
            t - times[i - 1]
        }
    };
    let (mut solo, mut all) = (0.0, 0.0);
    for &(t, is_solo, share) in rows {
        if t > from && t <= to {
            all += share * span(t);
            if is_solo {
                solo += share * span(t);
            }
        }
    }
    solo / all
}

/// The knob lock let go is free at once for the next schedlab, also while other threads
/// of the holder are forking (each child shares the lock's open file until its exec).
#[test]
fn the_knob_lock_is_free_the_moment_it_is_let_go_while_other_threads_spawn() {
    use schedlab::knob::journal::{lock_path, KnobLock};
    use std::os::fd::AsRawFd;
    let Some(_guard) = guard() else {
        return;
    };
    common::rounds_beside_spawns("the knob lock let go", || {
        match KnobLock::acquire() {
            Ok(lock) => drop(lock),
            Err(e) => return Some(format!("not taken: {e}")),
        }
        // Another open file, as another schedlab's would be: flocks conflict per open file.
        let other = std::fs::File::open(lock_path().expect("lock path")).expect("open the lock");
        // SAFETY: flock on a descriptor we own.
        let busy = unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0;
        // Unlocked, not only closed, for the same reason as the knob lock itself.
        // SAFETY: as above.
        unsafe { libc::flock(other.as_raw_fd(), libc::LOCK_UN) };
        busy.then(|| "still locked just after it was let go".to_string())
    });
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
    assert_eq!(
        first.wait().expect("wait").code(),
        Some(143),
        "128 + SIGTERM, after restoring"
    );
    assert_eq!(read(RT_RUNTIME), _g.was(RT_RUNTIME));
}

#[test]
fn two_schedlabs_never_change_knobs_at_once_even_with_different_state_directories() {
    let Some(_g) = guard() else { return };
    let (a, b) = (
        tempfile::tempdir().expect("tempdir"),
        tempfile::tempdir().expect("tempdir"),
    );
    // Each with a state directory (and so a journal) of its own: the knob lock is still
    // the machine's one.
    let first = Running(
        Command::new(common::exe())
            .args(["run", "rt-throttle", "--duration", "30s"])
            .args(["--set", "sys.rt_runtime_us=600000"])
            .env("SCHEDLAB_STATE_DIR", a.path())
            .env_remove("SCHEDLAB_JOURNAL")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("spawn"),
    );
    assert!(wait_for_value(RT_RUNTIME, "600000"), "the first run set it");
    let out = Command::new(common::exe())
        .args(["run", "rt-throttle", "--duration", "1s"])
        .args(["--set", "sys.rt_runtime_us=700000"])
        .env("SCHEDLAB_STATE_DIR", b.path())
        .env_remove("SCHEDLAB_JOURNAL")
        .output()
        .expect("second run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "the lock-held exit code: {err}");
    assert!(
        err.contains(&format!("another schedlab (pid {})", first.id())),
        "{err}"
    );
    assert_eq!(read(RT_RUNTIME), "600000", "the second one changed nothing");
    assert!(!b.path().join("journal.jsonl").exists(), "nor journaled it");
    drop(first);
    assert_eq!(
        read(RT_RUNTIME),
        _g.was(RT_RUNTIME),
        "the first one restored it"
    );
    assert!(!a.path().join("journal.jsonl").exists());
}

#[test]
fn a_system_knob_changed_under_a_run_is_reported_and_the_run_is_not_the_experiment() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let j = journal_path(&dir);
    let run = common::Spawned::spawn(
        schedlab_with_journal(&j)
            .args(["run", "pipe-wakeup", "--duration", "3s", "--json", "-"])
            .args(["--set", "sys.rt_runtime_us=800000"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
        Some(&j),
    );
    assert!(wait_for_value(RT_RUNTIME, "800000"), "the run set it");
    // An admin raises it meanwhile (raising the sysctl is allowed whatever the root
    // cgroup's RT runtime is).
    std::fs::write(RT_RUNTIME, "850000").expect("write the sysctl");
    let out = run.into_inner().wait_with_output().expect("the run ends");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "not the experiment: {stderr}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("the JSON report");
    let said = format!("{}", report["refused"]);
    assert!(
        said.contains("sys.rt_runtime_us was changed by someone else")
            && said.contains("schedlab set 800000")
            && said.contains("holds 850000"),
        "{said}"
    );
    assert_eq!(report["partial"], true);
    assert_eq!(
        read(RT_RUNTIME),
        _g.was(RT_RUNTIME),
        "restored all the same"
    );
    assert!(!j.exists());
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

/// Pushes `v` unless it repeats the last value: the values a knob took, in order.
fn push_change<T: PartialEq>(seen: &mut Vec<T>, v: T) {
    if seen.last() != Some(&v) {
        seen.push(v);
    }
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

/// What the kernel held for the run's DEADLINE threads while `child` ran.
struct DeadlineSeen {
    /// Each thread's (runtime, deadline, period) as sched_getattr reads them, in the
    /// order they were seen.
    params: std::collections::BTreeMap<i32, Vec<(u64, u64, u64)>>,
    /// Each thread's policy in /proc.
    proc_policy: std::collections::BTreeMap<i32, String>,
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

/// The global values a run may touch, the debugfs/tracefs mounts and the cgroups named
/// like schedlab's: what "the machine as it was" means here.
fn machine_state() -> Vec<String> {
    let mut state: Vec<String> = [
        RT_RUNTIME,
        RT_PERIOD,
        ROOT_RT_RUNTIME,
        ROOT_RT_PERIOD,
        RR,
        AUTOGROUP,
    ]
    .iter()
    .map(|f| format!("{f} = {}", read(f)))
    .collect();
    let mounts = std::fs::read_to_string("/proc/mounts").expect("mounts");
    state.extend(
        mounts
            .lines()
            .filter(|l| l.contains("debugfs") || l.contains("tracefs"))
            .map(str::to_string),
    );
    if let Ok(d) = std::fs::read_dir("/sys/fs/cgroup/cpu") {
        state.extend(
            d.flatten()
                .map(|e| e.file_name().to_string_lossy().to_string())
                .filter(|n| n.starts_with("schedlab-")),
        );
    }
    state
}

#[test]
fn run_with_mount_debugfs_under_lockdown_says_why_and_leaves_the_machine_as_it_was() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let before = machine_state();
    let was_mounted = common::debugfs_mounted();
    let preset = sleepers_preset(dir.path(), &[("idle", "")]);
    let json = dir.path().join("r.json");
    let table = dir.path().join("table.txt");
    let mut child = Running(
        schedlab_with_journal(&journal_path(&dir))
            .arg("run")
            .arg(&preset)
            .args(["--duration", "2s", "--mount-debugfs"])
            .args(["--at", "0.5s:sys.base_slice_ns=3000000"])
            .args(["--at", "0.5s:sys.feature.WA_IDLE=off"])
            .arg("--json")
            .arg(&json)
            .stdout(std::fs::File::create(&table).expect("table file"))
            .stderr(Stdio::null())
            .spawn()
            .expect("run"),
    );
    let (status, during) = watch_debugfs_while_running(&mut child);
    assert!(status.success(), "{status:?}");
    assert!(
        during.mounted,
        "--mount-debugfs mounted debugfs for the run"
    );
    assert_eq!(
        during.write_refused,
        Some(Some(libc::EPERM)),
        "this test expects kernel lockdown (debugfs writes refused with EPERM)"
    );
    assert_both_changes_refused_for_lockdown(&read_json(&json));
    assert_the_table_says_refused(&table);
    // Nothing changed: the base slice as sched/debug showed it during the run is the
    // kernel's default (what a fresh task gets, in ms), and afterwards every value,
    // mount and cgroup is as before.
    let fresh = Sleeper::new();
    assert_the_shown_base_slice_is_the_default(&fresh, during.base_slice.as_deref());
    assert_eq!(common::debugfs_mounted(), was_mounted, "unmounted at exit");
    assert_eq!(machine_state(), before);

    assert_a_set_refusal_ends_the_run_before_it_starts(&dir, &preset);
    assert_eq!(machine_state(), before);
    assert!(!journal_path(&dir).exists());
}

/// What the test saw of debugfs while the run ran.
struct DebugfsDuring {
    /// debugfs was mounted at /sys/kernel/debug.
    mounted: bool,
    /// The errno of opening base_slice_ns for writing, once mounted.
    write_refused: Option<Option<i32>>,
    /// sysctl_sched_base_slice as sched/debug showed it.
    base_slice: Option<String>,
}

fn watch_debugfs_while_running(child: &mut Running) -> (std::process::ExitStatus, DebugfsDuring) {
    // While it runs: debugfs is mounted at /sys/kernel/debug, and (the premise of this
    // test) the kernel refuses to open its files for writing.
    let mut mounted_during = false;
    let mut write_refused = None;
    let mut base_slice = None;
    let status = poll_while_running(child, Duration::from_secs(20), |_| {
        if common::debugfs_mounted() {
            mounted_during = true;
            write_refused
                .get_or_insert_with(|| write_errno("/sys/kernel/debug/sched/base_slice_ns"));
            if let Some(v) = sched_debug_value("sysctl_sched_base_slice") {
                base_slice.get_or_insert(v);
            }
        }
    });
    (
        status,
        DebugfsDuring {
            mounted: mounted_during,
            write_refused,
            base_slice,
        },
    )
}

fn assert_both_changes_refused_for_lockdown(r: &serde_json::Value) {
    let events = r["events"].as_array().expect("events");
    assert_eq!(events.len(), 2, "{events:?}");
    for (e, knob) in events
        .iter()
        .zip(["sys.base_slice_ns", "sys.feature.WA_IDLE"])
    {
        let result = e["result"].as_str().expect("result");
        assert_eq!(e["ok"], false, "{e}");
        assert!(
            result.contains(knob) && result.contains("lockdown") && result.contains("EPERM"),
            "names the knob and why: {result}"
        );
    }
}

fn assert_the_table_says_refused(table: &Path) {
    let text = std::fs::read_to_string(table).expect("table");
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("sys.base_slice_ns"))
        .collect();
    assert_eq!(lines.len(), 1, "one line on the terminal: {text}");
    assert!(
        lines[0].contains("refused") && lines[0].contains("lockdown"),
        "{text}"
    );
}

fn assert_the_shown_base_slice_is_the_default(fresh: &Sleeper, base_slice: Option<&str>) {
    let default_ns: f64 = proc_sched_field(fresh.tid(), "se.slice")
        .and_then(|s| s.parse().ok())
        .expect("se.slice");
    let shown_ms: f64 = base_slice
        .and_then(|s| s.parse().ok())
        .expect("sysctl_sched_base_slice in sched/debug");
    assert!(
        (shown_ms * 1e6 - default_ns).abs() < 1.0,
        "{shown_ms} ms vs {default_ns} ns"
    );
}

/// Asked for with --set, the refusal ends the run before it starts: one line, exit 1.
fn assert_a_set_refusal_ends_the_run_before_it_starts(dir: &tempfile::TempDir, preset: &Path) {
    let out = schedlab_with_journal(&journal_path(dir))
        .arg("run")
        .arg(preset)
        .args(["--duration", "1s", "--mount-debugfs"])
        .args(["--set", "sys.base_slice_ns=3000000"])
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        err.contains("sys.base_slice_ns") && err.contains("lockdown"),
        "{err}"
    );
}

#[test]
fn knobs_command_shows_what_proc_holds_right_now() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    // Off their defaults first, so a table of defaults cannot pass. The guard puts them
    // back. (The kernel rounds the RR slice to ticks: compare with what it holds.)
    std::fs::write(RR, "40").expect("rr timeslice");
    let flipped = if read(AUTOGROUP) == "1" { "0" } else { "1" };
    std::fs::write(AUTOGROUP, flipped).expect("autogroup");
    let sysctls = [
        ("sys.rt_runtime_us", RT_RUNTIME),
        ("sys.rt_period_us", RT_PERIOD),
        ("sys.rr_timeslice_ms", RR),
        ("sys.autogroup", AUTOGROUP),
    ];
    let knobs = |json: bool| {
        let mut c = schedlab_with_journal(&journal_path(&dir));
        c.arg("knobs");
        if json {
            c.arg("--json");
        }
        let out = c.output().expect("knobs");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        out
    };
    let text = String::from_utf8_lossy(&knobs(false).stdout).to_string();
    for (name, path) in sysctls {
        let line = text
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("no {name} row in:\n{text}"));
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!((f[1], f[2]), (read(path).as_str(), "writable"), "{line}");
    }
    let j: serde_json::Value = serde_json::from_slice(&knobs(true).stdout).expect("json");
    let system = j["system"].as_array().expect("system");
    for (name, path) in sysctls {
        let k = system
            .iter()
            .find(|k| k["name"] == name)
            .unwrap_or_else(|| panic!("no {name} in {j}"));
        assert_eq!(k["path"], path);
        assert_eq!(k["value"], read(path), "{k}");
        assert_eq!(k["writable"], true, "{k}");
    }
    // The debugfs knobs as /proc/mounts has it: without debugfs nothing can be read.
    if !common::debugfs_mounted() {
        for k in system.iter().filter(|k| {
            k["path"]
                .as_str()
                .is_none_or(|p| p.contains("/sys/kernel/debug"))
        }) {
            assert!(k["value"].is_null(), "{k}");
            assert_eq!(k["writable"], false, "{k}");
            assert!(
                k["why_not"]
                    .as_str()
                    .is_some_and(|w| w.contains("not mounted")),
                "{k}"
            );
        }
    }
    assert!(!journal_path(&dir).exists(), "knobs changes nothing");
}

#[test]
fn cgroup_rt_runtime_and_the_rt_sysctl_apply_in_order_and_both_come_back() {
    let Some(_g) = guard() else { return };
    let dir = tempfile::tempdir().expect("tempdir");
    let j = journal_path(&dir);
    let preset = write_rtgroup_preset(dir.path());
    if !Path::new(ROOT_RT_RUNTIME).exists() {
        common::host_lacks("RT group scheduling (v1 cpu.rt_runtime_us)");
        // What can be shown here: the group's RT runtime is refused, named, and the RT
        // sysctl is left as it was.
        let out = schedlab_with_journal(&j)
            .arg("run")
            .arg(&preset)
            .args(["--duration", "1s"])
            .output()
            .expect("run");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && err.contains("rt_runtime_us"),
            "refused with its reason: {err}"
        );
        assert_eq!(
            read(RT_RUNTIME),
            _g.was(RT_RUNTIME),
            "the RT sysctl as it was"
        );
        return;
    }
    let json = dir.path().join("r.json");
    // Lower the RT sysctl at start (the root cgroup goes first), raise it above where it
    // started at 1.5 s (the sysctl goes first). The journal holds each file's value from
    // before the first write, root cgroup then sysctl, so undoing newest first writes
    // 950000 to the sysctl while the root cgroup still has 980000: the kernel refuses
    // that (EINVAL), and only the journal's next pass, after the root cgroup, puts it
    // back.
    let mut child = Running(
        schedlab_with_journal(&j)
            .arg("run")
            .arg(&preset)
            .args(["--duration", "3s", "--set", "sys.rt_runtime_us=600000"])
            .args(["--at", "1.5s:sys.rt_runtime_us=980000", "--json"])
            .arg(&json)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run"),
    );
    let base = format!("/sys/fs/cgroup/cpu/schedlab-{}", child.id());
    let journal = wait_for_the_lowering_then_the_raise(&base, &j);
    assert_journaled_once_each_root_cgroup_first(&journal, &_g);
    let status = child.wait().expect("wait");
    assert!(status.success(), "{status:?}");
    assert_eq!(
        (read(RT_RUNTIME), read(ROOT_RT_RUNTIME)),
        (_g.was(RT_RUNTIME), _g.was(ROOT_RT_RUNTIME)),
        "both restored"
    );
    assert!(!Path::new(&base).exists(), "the run's cgroups are gone");
    assert!(!j.exists());
    let r = read_json(&json);
    assert_eq!(r["events"][0]["ok"], true, "{}", r["events"]);
    assert_eq!(r["settings"]["cgroup.rt.rt_runtime_us"], "300000");
    assert_the_group_gets_its_rt_runtime(&r);
}

/// A preset with a FIFO spinner in a cgroup of 300 ms RT runtime next to a fair one,
/// both on CPU 0.
fn write_rtgroup_preset(dir: &Path) -> PathBuf {
    let preset = dir.join("rtgroup.toml");
    std::fs::write(
        &preset,
        r#"name = "rtgroup"
summary = "a FIFO spinner in a cgroup with its own RT runtime"
note = "n"
[metric]
headline = "share"
task = "fair"
warmup = "1s"
[cgroup.rt]
rt_runtime_us = "300ms"
[[task]]
name = "fifo"
worker = "spin"
policy = "fifo"
priority = 1
cpus = "0"
cgroup = "rt"
[[task]]
name = "fair"
worker = "spin"
cpus = "0"
"#,
    )
    .expect("write preset");
    preset
}

/// Waits for the sysctl and the root cgroup at 600000 and then at 980000, with the run's
/// base cgroup (`base`) and group at 300000 throughout: the journal `j` as it was read
/// in between.
fn wait_for_the_lowering_then_the_raise(base: &str, j: &Path) -> String {
    let group = format!("{base}/rt/cpu.rt_runtime_us");
    let state = || {
        (
            read(RT_RUNTIME),
            read(ROOT_RT_RUNTIME),
            read(&format!("{base}/cpu.rt_runtime_us")),
            read(&group),
        )
    };
    let want = |sys: &str| {
        (
            sys.to_string(),
            sys.to_string(),
            "300000".to_string(),
            "300000".to_string(),
        )
    };
    assert!(
        common::wait_until(Duration::from_secs(10), || state() == want("600000")),
        "sysctl, root cgroup, run's base and group: {:?}",
        state()
    );
    let journal = std::fs::read_to_string(j).expect("journal while running");
    assert!(
        common::wait_until(Duration::from_secs(10), || state() == want("980000")),
        "after the raise: {:?}",
        state()
    );
    journal
}

/// The journal, read while the run holds its changes: each file once, with the value
/// from before the run, the root cgroup's ahead of the sysctl's.
fn assert_journaled_once_each_root_cgroup_first(journal: &str, g: &Restore) {
    let entries: Vec<serde_json::Value> = journal
        .lines()
        .skip(1)
        .map(|l| serde_json::from_str(l).expect("journal line"))
        .collect();
    let at = |path: &str| {
        let hits: Vec<usize> = entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e["path"] == path)
            .map(|(i, _)| i)
            .collect();
        assert_eq!(hits.len(), 1, "{path} journaled once: {journal}");
        assert_eq!(entries[hits[0]]["old"], g.was(path).as_str(), "{journal}");
        hits[0]
    };
    assert!(at(ROOT_RT_RUNTIME) < at(RT_RUNTIME), "{journal}");
}

/// The effect: the group may run RT tasks 300 ms of every 1 s period on CPU 0, which
/// the sysctl's changes (600000, 980000) never go below.
fn assert_the_group_gets_its_rt_runtime(r: &serde_json::Value) {
    // The pattern repeats every period, so a summary window of exactly whole periods
    // holds exactly 0.3 of it; the window is T = summary_s (2 s after the 1 s warm-up,
    // give or take a sample), so up to |T - 2| of it can be all spinner or none, and
    // each end can lag a tick.
    let t = r["summary_s"].as_f64().expect("summary_s");
    let fifo = report_task(r, "fifo")["cpu_share"].as_f64().expect("share");
    assert!(
        (fifo - 0.3).abs() <= (t - 2.0).abs() / t + 0.01,
        "the group's 300 ms per period: fifo {fifo:.4} over {t:.3} s"
    );
}
