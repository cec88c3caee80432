//! Cgroups on fake directories, and on a real v1 hierarchy where the machine has one.

use super::*;

/// A value as a preset or a `--set` hands it over: parsed, so valid.
fn value(knob: &str, text: &str) -> CgroupValue {
    CgroupValue::parse(knob, text).expect("a valid value")
}
use crate::knob::cgroup::{detect, KNOBS};
use std::collections::HashMap;

/// Fake cgroup directories in a tempdir: files are plain files, so each set's target is
/// emptied first (a plain file is not truncated by the write the way a cgroup file
/// replaces its value).
fn fake(version: Version, files: &[(&str, &str)]) -> (tempfile::TempDir, Cgroups) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let base = tmp.path().join("schedlab-1");
    let mut groups = Vec::new();
    for name in ["a", "b"] {
        let dir = base.join(name);
        std::fs::create_dir_all(&dir).expect("mkdir");
        for (file, text) in files {
            std::fs::write(dir.join(file), text).expect("write");
        }
        groups.push((name.to_string(), dir));
    }
    for (file, text) in files {
        std::fs::write(base.join(file), text).expect("write");
    }
    let cg = Cgroups {
        root: CgroupRoot {
            version,
            mount: tmp.path().to_path_buf(),
        },
        base,
        groups,
        rt_lock: Mutex::new(()),
    };
    (tmp, cg)
}

fn empty(cg: &Cgroups, group: &str, file: &str) {
    std::fs::write(cg.dir(group).expect("group").join(file), "").expect("truncate");
}

fn content(cg: &Cgroups, group: &str, file: &str) -> String {
    std::fs::read_to_string(cg.dir(group).expect("group").join(file)).expect("read")
}

#[test]
fn v2_files_are_written_and_read_in_v2_shapes() {
    let _machine = crate::testing::machine_lock();
    let (_tmp, cg) = fake(
        Version::V2,
        &[
            ("cpu.weight", "100\n"),
            ("cpu.max", "max 100000\n"),
            ("cpu.idle", "0\n"),
        ],
    );
    assert_eq!(cg.get("a", "weight"), Ok("100".into()));
    assert_eq!(cg.get("a", "shares"), Ok("1024".into()));
    assert_eq!(cg.get("a", "quota"), Ok("max".into()));
    assert_eq!(cg.get("a", "idle"), Ok("0".into()));
    empty(&cg, "a", "cpu.weight");
    assert_eq!(cg.set("a", &value("shares", "512")), Ok("512".into()));
    assert_eq!(content(&cg, "a", "cpu.weight"), "50");
    empty(&cg, "a", "cpu.weight");
    assert_eq!(cg.set("a", &value("weight", "300")), Ok("300".into()));
    assert_eq!(content(&cg, "a", "cpu.weight"), "300");
    empty(&cg, "a", "cpu.max");
    assert_eq!(
        cg.set("a", &value("quota", "20ms/50ms")),
        Ok("20000/50000".into())
    );
    assert_eq!(content(&cg, "a", "cpu.max"), "20000 50000");
    empty(&cg, "a", "cpu.max");
    assert_eq!(cg.set("a", &value("quota", "max/100ms")), Ok("max".into()));
    assert_eq!(content(&cg, "a", "cpu.max"), "max 100000");
    let e = cg
        .set("a", &value("rt_runtime_us", "1000"))
        .expect_err("v2 has no RT groups")
        .to_string();
    assert!(e.contains("only in cgroup v1"), "{e}");
    assert!(cg
        .get("a", "rt_runtime_us")
        .expect_err("v2")
        .to_string()
        .contains("only in cgroup v1"));
}

#[test]
fn v1_missing_files_and_unknown_names_get_clear_errors() {
    let _machine = crate::testing::machine_lock();
    let (_tmp, cg) = fake(
        Version::V1,
        &[
            ("cpu.shares", "1024\n"),
            ("cpu.cfs_quota_us", "-1\n"),
            ("cpu.cfs_period_us", "100000\n"),
        ],
    );
    assert_eq!(cg.get("b", "weight"), Ok("100".into()));
    assert_eq!(cg.get("b", "quota"), Ok("max".into()));
    assert_eq!(
        cg.set("b", &value("idle", "1")),
        Err(KnobError::refused(NO_IDLE))
    );
    assert_eq!(cg.get("b", "idle"), Err(KnobError::refused(NO_IDLE)));
    assert_eq!(
        cg.set("b", &value("rt_runtime_us", "1000")),
        Err(KnobError::refused(NO_RT_GROUP))
    );
    assert_eq!(
        cg.get("b", "rt_runtime_us"),
        Err(KnobError::refused(NO_RT_GROUP))
    );
    assert_eq!(
        cg.set("c", &value("weight", "5")),
        Err(KnobError::invalid(
            "unknown cgroup \"c\": this preset's cgroups are a, b"
        ))
    );
    assert!(cg
        .get("a", "nice")
        .expect_err("knob")
        .to_string()
        .contains(KNOBS));
    // An out-of-range value never reaches `set`: parsing it is where it is refused.
    let e = CgroupValue::parse("weight", "0")
        .expect_err("range")
        .to_string();
    assert!(e.contains("1..10000"), "{e}");
    assert_eq!(cg.names(), vec!["a".to_string(), "b".to_string()]);
    assert!(cg.dir("a").is_some_and(|d| d.ends_with("schedlab-1/a")));
}

#[test]
fn create_rejects_bad_and_duplicate_names_before_touching_anything() {
    let _machine = crate::testing::machine_lock();
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = CgroupRoot {
        version: Version::V1,
        mount: tmp.path().join("nowhere"),
    };
    let mut journal = Journal::new(tmp.path().join("journal.jsonl")).allow_under(tmp.path());
    for names in [
        vec!["a b".to_string()],
        vec!["../x".into()],
        vec!["".into()],
        vec!["a".into(), "a".into()],
    ] {
        let e = Cgroups::create(root.clone(), &names, &mut journal)
            .expect_err("bad names")
            .to_string();
        assert!(e.to_string().contains("cgroup name"), "{e}");
    }
    assert!(journal.entries().is_empty());
    assert!(!tmp.path().join("journal.jsonl").exists());
}

#[test]
fn v2_create_journals_minus_cpu_before_enabling_cpu_at_the_root() {
    let _machine = crate::testing::machine_lock();
    let tmp = tempfile::tempdir().expect("tempdir");
    let subtree = tmp.path().join("cgroup.subtree_control");
    std::fs::write(&subtree, "").expect("write");
    let root = CgroupRoot {
        version: Version::V2,
        mount: tmp.path().to_path_buf(),
    };
    let jpath = tmp.path().join("journal.jsonl");
    let mut journal = Journal::new(jpath.clone()).allow_under(tmp.path());
    // A plain directory has no cgroup.subtree_control, so enabling cpu in the base
    // fails: the failure path must still leave the undo journaled and the base gone.
    let e = Cgroups::create(root, &["a".to_string()], &mut journal)
        .expect_err("fake fs")
        .to_string();
    let base = tmp.path().join(format!("schedlab-{}", std::process::id()));
    let text = e.to_string();
    assert!(
        text.contains(&format!(
            "writing +cpu to {}",
            base.join("cgroup.subtree_control").display()
        )),
        "{text}"
    );
    assert!(!text.contains('\n'), "{text}");
    assert_eq!(std::fs::read_to_string(&subtree).expect("read"), "+cpu");
    assert!(!base.exists());
    use crate::knob::journal::Entry;
    assert_eq!(
        journal.entries(),
        &[
            Entry::File {
                path: subtree.clone(),
                old: "-cpu".into()
            },
            Entry::Dir { path: base }
        ]
    );
    std::fs::write(&subtree, "").expect("truncate");
    let restored = journal.restore();
    assert!(restored.iter().all(|r| r.ok()), "{restored:?}");
    assert_eq!(std::fs::read_to_string(&subtree).expect("read"), "-cpu");
    assert!(!jpath.exists());
}

#[test]
fn v2_create_leaves_an_enabled_root_alone() {
    let _machine = crate::testing::machine_lock();
    let tmp = tempfile::tempdir().expect("tempdir");
    let subtree = tmp.path().join("cgroup.subtree_control");
    std::fs::write(&subtree, "cpu memory\n").expect("write");
    let mut journal = Journal::new(tmp.path().join("journal.jsonl")).allow_under(tmp.path());
    ensure_v2_cpu_enabled(tmp.path(), &mut journal).expect("already on");
    assert!(journal.entries().is_empty());
    assert_eq!(
        std::fs::read_to_string(&subtree).expect("read"),
        "cpu memory\n"
    );
}

// ---- real cgroup v1 tests: root only, one at a time ----

static REAL: Mutex<()> = Mutex::new(());

fn real_v1() -> Option<CgroupRoot> {
    if !crate::testing::require("root", crate::system::is_root()) {
        return None;
    }
    let root = detect().filter(|r| r.version == Version::V1);
    if root.is_none() {
        // The v2 side runs against a private cgroup2 mount (tests/cgroup_v2.rs).
        crate::testing::host_lacks("a cgroup v1 cpu controller");
    }
    root
}

/// Kills the child and restores the journal even when an assertion fails, in that order
/// (a group with a live task cannot be removed).
struct Guard {
    child: Option<std::process::Child>,
    journal: Journal,
    _tmp: tempfile::TempDir,
}

impl Guard {
    fn new() -> Guard {
        let tmp = tempfile::tempdir().expect("tempdir");
        let journal = Journal::new(tmp.path().join("journal.jsonl")).allow_under(tmp.path());
        Guard {
            child: None,
            journal,
            _tmp: tmp,
        }
    }

    fn finish(&mut self) -> Vec<crate::knob::journal::Restored> {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.journal.restore()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        for r in self.finish() {
            if !r.ok() {
                eprintln!("cleanup: {r}");
            }
        }
    }
}

fn proc_cgroup_path(pid: u32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).ok()?;
    text.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let _id = f.next()?;
        let controllers = f.next()?;
        let path = f.next()?;
        controllers
            .split(',')
            .any(|c| c == "cpu")
            .then(|| path.to_string())
    })
}

/// Weight (as shares), quota and idle on a real v1 hierarchy.
fn v1_weight_quota_idle(cg: &Cgroups) {
    assert_eq!(cg.get("fast", "weight"), Ok("100".into()));
    assert_eq!(cg.set("fast", &value("weight", "50")), Ok("50".into()));
    assert_eq!(content(cg, "fast", "cpu.shares").trim(), "512");
    assert_eq!(cg.set("slow", &value("shares", "2048")), Ok("2048".into()));
    assert_eq!(cg.get("slow", "weight"), Ok("200".into()));
    assert_eq!(cg.set("fast", &value("weight", "3")), Ok("3".into()));

    assert_eq!(cg.get("fast", "quota"), Ok("max".into()));
    assert_eq!(
        cg.set("fast", &value("quota", "50ms/100ms")),
        Ok("50000/100000".into())
    );
    assert_eq!(content(cg, "fast", "cpu.cfs_quota_us").trim(), "50000");
    assert_eq!(
        cg.set("fast", &value("quota", "150ms/200ms")),
        Ok("150000/200000".into())
    );
    assert_eq!(cg.set("fast", &value("quota", "max")), Ok("max".into()));
    assert_eq!(content(cg, "fast", "cpu.cfs_quota_us").trim(), "-1");

    assert_eq!(cg.set("slow", &value("idle", "1")), Ok("1".into()));
    let e = cg
        .set("slow", &value("weight", "10"))
        .expect_err("idle group has no weight")
        .to_string();
    assert!(e.contains("EINVAL") && e.contains("idle 0"), "{e}");
    assert_eq!(cg.set("slow", &value("idle", "0")), Ok("0".into()));
}

/// rt_runtime_us: the base group holds the sum of its groups', within the root's.
fn v1_rt_runtime_keeps_the_base_in_step(cg: &Cgroups, base: &Path) {
    assert_eq!(cg.get("fast", "rt_runtime_us"), Ok("0".into()));
    assert_eq!(
        cg.set("fast", &value("rt_runtime_us", "100ms")),
        Ok("100000".into())
    );
    assert_eq!(
        std::fs::read_to_string(base.join("cpu.rt_runtime_us"))
            .expect("base")
            .trim(),
        "100000"
    );
    assert_eq!(
        cg.set("slow", &value("rt_runtime_us", "50000")),
        Ok("50000".into())
    );
    assert_eq!(
        std::fs::read_to_string(base.join("cpu.rt_runtime_us"))
            .expect("base")
            .trim(),
        "150000"
    );
    assert_eq!(cg.set("fast", &value("rt_runtime_us", "0")), Ok("0".into()));
    assert_eq!(
        std::fs::read_to_string(base.join("cpu.rt_runtime_us"))
            .expect("base")
            .trim(),
        "50000"
    );
    let e = cg
        .set("fast", &value("rt_runtime_us", "2000000"))
        .expect_err("above the period")
        .to_string();
    assert!(e.contains("0..1000000"), "{e}");
    let e = cg
        .set("fast", &value("rt_runtime_us", "920000"))
        .expect_err("more than the root has")
        .to_string();
    assert!(e.contains("EINVAL") || e.contains("EBUSY"), "{e}");
    assert!(e.contains("root cgroup"), "{e}");
    assert_eq!(cg.get("fast", "rt_runtime_us"), Ok("0".into()));
    assert_eq!(
        std::fs::read_to_string(base.join("cpu.rt_runtime_us"))
            .expect("base")
            .trim(),
        "50000"
    );
}

/// Moving a task: a FIFO one only into a group with RT runtime, which then cannot lose it.
fn v1_moves_follow_rt_runtime(cg: &Cgroups, guard: &mut Guard, base: &Path) {
    let child = std::process::Command::new("sleep")
        .arg("5")
        .spawn()
        .expect("spawn sleep");
    let pid = child.id();
    guard.child = Some(child);
    let id = i32::try_from(pid).expect("pid");
    let me = std::process::id();
    cg.add_task("slow", id, id).expect("move into slow");
    assert_eq!(proc_cgroup_path(pid), Some(format!("/schedlab-{me}/slow")));

    // The kernel refuses FIFO inside a group without RT runtime; "slow" has some.
    let param = libc::sched_param { sched_priority: 1 };
    // SAFETY: a plain syscall on our own sleeping child with a valid param.
    let rc = unsafe { libc::sched_setscheduler(id, libc::SCHED_FIFO, &param) };
    assert_eq!(
        rc,
        0,
        "make the child FIFO: {}",
        std::io::Error::last_os_error()
    );
    let e = cg
        .add_task("fast", id, id)
        .expect_err("an RT task into a group without runtime")
        .to_string();
    assert!(e.contains("EINVAL") && e.contains("rt_runtime_us"), "{e}");
    assert_eq!(proc_cgroup_path(pid), Some(format!("/schedlab-{me}/slow")));
    assert_eq!(
        cg.set("fast", &value("rt_runtime_us", "10000")),
        Ok("10000".into())
    );
    cg.add_task("fast", id, id)
        .expect("an RT task into a group with runtime");
    assert_eq!(proc_cgroup_path(pid), Some(format!("/schedlab-{me}/fast")));
    let e = cg
        .set("fast", &value("rt_runtime_us", "0"))
        .expect_err("busy")
        .to_string();
    assert!(e.contains("EBUSY") && e.contains("real-time"), "{e}");
    assert_eq!(cg.get("fast", "rt_runtime_us"), Ok("10000".into()));
    assert_eq!(
        std::fs::read_to_string(base.join("cpu.rt_runtime_us"))
            .expect("base")
            .trim(),
        "60000"
    );

    let e = cg
        .add_task("nope", id, id)
        .expect_err("unknown group")
        .to_string();
    assert_eq!(
        e,
        "unknown cgroup \"nope\": this preset's cgroups are fast, slow"
    );
}

#[test]
fn real_v1_create_set_get_move_and_restore() {
    let _machine = crate::testing::machine_lock();
    let _serial = REAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(root) = real_v1() else { return };
    let root_rt = std::fs::read_to_string(root.mount.join("cpu.rt_runtime_us")).expect("root rt");
    let mut guard = Guard::new();
    let names = vec!["fast".to_string(), "slow".to_string()];
    let cg = Cgroups::create(root.clone(), &names, &mut guard.journal).expect("create");
    let base = cg.base().to_path_buf();
    assert_eq!(
        base,
        root.mount.join(format!("schedlab-{}", std::process::id()))
    );
    assert!(base.join("fast").is_dir() && base.join("slow").is_dir());
    assert_eq!(guard.journal.entries().len(), 3);
    assert_eq!(cg.version(), Version::V1);

    v1_weight_quota_idle(&cg);
    v1_rt_runtime_keeps_the_base_in_step(&cg, &base);
    v1_moves_follow_rt_runtime(&cg, &mut guard, &base);

    let restored = guard.finish();
    assert_eq!(restored.len(), 3);
    assert!(restored.iter().all(|r| r.ok()), "{restored:?}");
    assert!(!base.exists());
    let root_rt_after =
        std::fs::read_to_string(root.mount.join("cpu.rt_runtime_us")).expect("root rt");
    assert_eq!(root_rt_after, root_rt);
}

#[test]
fn real_v1_failed_create_removes_what_it_made() {
    let _machine = crate::testing::machine_lock();
    let _serial = REAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(root) = real_v1() else { return };
    let mut guard = Guard::new();
    // "tasks" is a file of every v1 cgroup: the second mkdir fails after the first worked.
    let names = vec!["ok".to_string(), "tasks".to_string()];
    let e = Cgroups::create(root.clone(), &names, &mut guard.journal)
        .expect_err("clash")
        .to_string();
    assert!(e.to_string().contains("already exists"), "{e}");
    let base = root.mount.join(format!("schedlab-{}", std::process::id()));
    assert!(!base.exists(), "cleaned up at once");
    let restored = guard.finish();
    assert!(restored.iter().all(|r| r.ok()), "{restored:?}");
}

#[test]
fn real_v1_groups_use_all_knob_names() {
    let _machine = crate::testing::machine_lock();
    let _serial = REAL.lock().unwrap_or_else(|e| e.into_inner());
    let Some(root) = real_v1() else { return };
    let mut guard = Guard::new();
    let cg = Cgroups::create(root, &["g".to_string()], &mut guard.journal).expect("create");
    let mut seen = HashMap::new();
    for knob in KNOBS.split(", ") {
        seen.insert(knob, cg.get("g", knob).expect(knob));
    }
    assert_eq!(seen["weight"], "100");
    assert_eq!(seen["shares"], "1024");
    assert_eq!(seen["quota"], "max");
    assert_eq!(seen["idle"], "0");
    assert_eq!(seen["rt_runtime_us"], "0");
    let restored = guard.finish();
    assert!(restored.iter().all(|r| r.ok()), "{restored:?}");
}
