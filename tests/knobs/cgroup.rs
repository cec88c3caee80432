//! cgroup knobs against the kernel: a preset's groups share by weight, RT runtime per group in order with the RT sysctl, and nothing left behind.

use super::*;

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
