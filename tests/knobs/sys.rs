//! System knobs (RT sysctls, round-robin timeslice, autogroup, debugfs features) against the kernel, each put back.

use super::*;

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

/// A value the knob's form allows (the later checks are against the machine).
fn typed(knob: SysKnob, value: &str) -> SysSetting {
    SysSetting::parse(knob, value).unwrap_or_else(|e| panic!("{e}"))
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

/// What the test saw of debugfs while the run ran.
struct DebugfsDuring {
    /// debugfs was mounted at /sys/kernel/debug.
    mounted: bool,
    /// The errno of opening base_slice_ns for writing, once mounted.
    write_refused: Option<Option<i32>>,
    /// sysctl_sched_base_slice as sched/debug showed it.
    base_slice: Option<String>,
}
