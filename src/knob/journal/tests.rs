//! The knob journal: records, restores, locks and what it refuses, on files in a tempdir.

use super::*;

fn contents(path: &Path) -> String {
    std::fs::read_to_string(path).expect("read")
}

#[test]
fn records_each_change_once_and_restores_newest_first() {
    let _machine = crate::testing::machine_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let (a, b, f) = (
        dir.path().join("a"),
        dir.path().join("b"),
        dir.path().join("features"),
    );
    let made = dir.path().join("made");
    // Values of one length: the journal writes a knob without truncating it (procfs
    // and sysfs take each write whole), so on a plain file a shorter value would
    // leave the tail of a longer one.
    std::fs::write(&a, "950000\n").expect("write");
    std::fs::write(&b, "100000\n").expect("write");
    std::fs::write(&f, "000000").expect("write");
    let jpath = dir.path().join("j").join("journal.jsonl");
    let mut j = Journal::new(jpath.clone()).allow_under(dir.path());
    // Knob a changed twice: only the value before the first change is kept.
    j.record_file(&a).expect("record a");
    std::fs::write(&a, "600000").expect("change a");
    j.record_file(&a).expect("a second record is a no-op");
    std::fs::write(&a, "200000").expect("change a again");
    j.record_file(&b).expect("record b");
    std::fs::write(&b, "500000").expect("change b");
    // One file changed twice in ways undone separately (two scheduler features of
    // the features file): two entries for it.
    j.record_undo("feature one", &f, "111111")
        .expect("first undo");
    std::fs::write(&f, "999999").expect("change f");
    j.record_undo("feature two", &f, "222222")
        .expect("second undo");
    j.record_undo("feature one", &f, "333333")
        .expect("no-op: key seen");
    std::fs::create_dir(&made).expect("mkdir");
    j.record_dir(&made).expect("record the dir");
    let on_disk = contents(&jpath);
    assert!(on_disk.contains("950000") && !on_disk.contains("600000"));
    assert!(!on_disk.contains("333333"), "{on_disk}");
    let undone = |r: &[Restored]| -> Vec<String> { r.iter().map(|r| r.entry.describe()).collect() };
    let d = |p: &Path, v: &str| format!("{} = {v}", p.display());
    let recorded: Vec<String> = j.entries().iter().map(Entry::describe).collect();
    assert_eq!(
        recorded,
        [
            d(&a, "950000"),
            d(&b, "100000"),
            d(&f, "111111"),
            d(&f, "222222"),
            format!("remove {}", made.display()),
        ]
    );
    // The Restored list is in the order the undos ran: newest first.
    let restored = j.restore();
    let mut newest_first = recorded.clone();
    newest_first.reverse();
    assert_eq!(undone(&restored), newest_first);
    assert!(restored.iter().all(Restored::ok), "{restored:?}");
    assert_eq!(contents(&a), "950000");
    assert_eq!(contents(&b), "100000");
    // Newest first, so the older undo of the same file is written last.
    assert_eq!(contents(&f), "111111");
    assert!(!made.exists());
    assert!(!jpath.exists(), "journal removed after a full restore");
    assert!(j.restore().is_empty(), "nothing left to restore");
}

/// An undo that writes like [`undo`] but lets `refuse` (given the path and the value
/// to write) turn a write down first, as the kernel does; every attempt is logged as
/// "name=value".
fn scripted<'a>(
    log: &'a mut Vec<String>,
    mut refuse: impl FnMut(&Path, &str) -> Option<Failure> + 'a,
) -> impl FnMut(&Entry) -> Result<(), Failure> + 'a {
    move |e| {
        let Entry::File { path, old } = e else {
            panic!("files only: {e:?}")
        };
        log.push(format!(
            "{}={old}",
            path.file_name().unwrap_or_default().to_string_lossy()
        ));
        match refuse(path, old) {
            Some(f) => Err(f),
            None => undo(e),
        }
    }
}

fn file(path: &Path, old: &str) -> Entry {
    Entry::File {
        path: path.to_path_buf(),
        old: old.into(),
    }
}

#[test]
fn a_restore_refused_for_its_order_succeeds_on_a_later_pass() {
    let _machine = crate::testing::machine_lock();
    // With RT group scheduling the sysctl cannot go below the root cgroup's runtime
    // (EINVAL), so when both go back down the cgroup has to go first. Here the
    // sysctl was recorded last: it is undone first, refused, and retried once the
    // cgroup is back.
    let dir = tempfile::tempdir().expect("tempdir");
    let (cgroup, sysctl) = (dir.path().join("cgroup"), dir.path().join("sysctl"));
    std::fs::write(&cgroup, "950000").expect("write");
    std::fs::write(&sysctl, "950000").expect("write");
    let entries = [file(&cgroup, "200000"), file(&sysctl, "200000")];
    let extra = [dir.path().to_path_buf()];
    let mut log = Vec::new();
    let root = cgroup.clone();
    let restored = undo_all_by(
        &entries,
        &extra,
        scripted(&mut log, move |p, value| {
            let runtime = |p: &Path| contents(p).trim().parse::<u64>().expect("a number");
            let wanted: u64 = value.parse().expect("a number");
            (p.ends_with("sysctl") && wanted < runtime(&root))
                .then(|| Failure::new("EINVAL".into(), Some(libc::EINVAL)))
        }),
    );
    assert_eq!(log, ["sysctl=200000", "cgroup=200000", "sysctl=200000"]);
    let order: Vec<&Entry> = restored.iter().map(|r| &r.entry).collect();
    assert_eq!(
        order,
        [&entries[0], &entries[1]],
        "in the order they went back"
    );
    assert!(restored.iter().all(Restored::ok), "{restored:?}");
    assert_eq!(contents(&sysctl), "200000");
    assert_eq!(contents(&cgroup), "200000");
}

#[test]
fn an_undo_that_keeps_failing_is_tried_three_times_or_thirteen_when_busy() {
    let _machine = crate::testing::machine_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let (stuck, busy, fine) = (
        dir.path().join("stuck"),
        dir.path().join("busy"),
        dir.path().join("fine"),
    );
    for p in [&stuck, &busy, &fine] {
        std::fs::write(p, "0").expect("write");
    }
    let entries = [file(&fine, "1"), file(&busy, "1"), file(&stuck, "1")];
    let mut log = Vec::new();
    let restored = undo_all_by(
        &entries,
        &[dir.path().to_path_buf()],
        scripted(&mut log, |p, _| {
            if p.ends_with("stuck") {
                Some(Failure::new("EINVAL".into(), Some(libc::EINVAL)))
            } else if p.ends_with("busy") {
                Some(Failure::new("EBUSY".into(), Some(libc::EBUSY)))
            } else {
                None
            }
        }),
    );
    let tries = |name: &str| log.iter().filter(|l| l.starts_with(name)).count();
    // The order passes try everything; past them only what the kernel called busy
    // is tried again, once a pass.
    assert_eq!(tries("fine="), 1);
    assert_eq!(tries("stuck="), ORDER_PASSES);
    assert_eq!(tries("busy="), ORDER_PASSES + BUSY_PASSES);
    let outcome = |p: &Path| {
        restored
            .iter()
            .find(|r| r.entry == file(p, "1"))
            .map(|r| r.outcome.clone())
    };
    assert_eq!(outcome(&fine), Some(Outcome::Restored));
    assert_eq!(outcome(&stuck), Some(Outcome::Failed("EINVAL".into())));
    assert_eq!(outcome(&busy), Some(Outcome::Failed("EBUSY".into())));
    assert_eq!(contents(&fine), "1");
    assert_eq!(contents(&stuck), "0", "never written");
}

#[test]
fn a_journal_that_could_not_restore_everything_stays_for_the_next_try() {
    let _machine = crate::testing::machine_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let knob = dir.path().join("knob");
    std::fs::write(&knob, "original").expect("write");
    let jpath = dir.path().join("journal.jsonl");
    let mut j = Journal::new(jpath.clone()).allow_under(dir.path());
    j.record_file(&knob).expect("record");
    // A directory where the knob was: every write fails (EISDIR), three passes.
    std::fs::remove_file(&knob).expect("rm");
    std::fs::create_dir(&knob).expect("mkdir");
    let restored = j.restore();
    assert_eq!(restored.len(), 1);
    assert!(
        matches!(restored[0].outcome, Outcome::Failed(_)),
        "{restored:?}"
    );
    assert!(jpath.exists(), "kept for `schedlab restore`");
    assert_eq!(j.entries().len(), 1);
    std::fs::remove_dir(&knob).expect("rmdir");
    std::fs::write(&knob, "changed!").expect("write");
    let restored = j.restore();
    assert!(restored[0].ok(), "{restored:?}");
    assert_eq!(contents(&knob), "original");
    assert!(!jpath.exists());
}

#[test]
fn a_stale_journal_is_restored_and_a_live_one_is_left_alone() {
    let _machine = crate::testing::machine_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let knob = dir.path().join("knob");
    std::fs::write(&knob, "changed").expect("write");
    let jpath = dir.path().join("journal.jsonl");
    // pid 1 is never schedlab, so this journal is stale.
    let entry = Entry::File {
        path: knob.clone(),
        old: "original".into(),
    };
    let text = format!(
        "{{\"schedlab_journal\":1,\"pid\":1}}\n{}\n{{torn",
        serde_json::to_string(&entry).expect("json")
    );
    std::fs::write(&jpath, text).expect("write");
    let mut j = Journal::new(jpath.clone());
    let err = j.record_file(&knob).unwrap_err().to_string();
    assert!(err.contains("schedlab restore"), "{err}");
    let (pid, restored) = restore_stale_with(&jpath, &[dir.path().to_path_buf()])
        .expect("restores")
        .expect("there was one");
    assert_eq!(pid, 1);
    assert_eq!(restored.len(), 1, "the torn line is ignored");
    assert_eq!(std::fs::read_to_string(&knob).expect("read"), "original");
    assert!(!jpath.exists());
    assert!(restore_stale(&jpath).expect("nothing").is_none());
}

#[test]
fn a_planted_journal_restores_nothing_but_the_knobs_schedlab_writes() {
    let _machine = crate::testing::machine_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let victim = dir.path().join("x");
    std::fs::write(&victim, "precious").expect("write");
    let jpath = dir.path().join("journal.jsonl");
    let planted = [
        Entry::File {
            path: victim.clone(),
            old: "anything".into(),
        },
        Entry::File {
            path: "/proc/sys/kernel/../../../etc/passwd".into(),
            old: "x".into(),
        },
        Entry::Dir {
            path: dir.path().to_path_buf(),
        },
        Entry::Mount {
            target: "/home".into(),
            fstype: "debugfs".into(),
            mnt_id: None,
        },
    ];
    let mut text = "{\"schedlab_journal\":1,\"pid\":1}\n".to_string();
    for e in &planted {
        text.push_str(&serde_json::to_string(e).expect("json"));
        text.push('\n');
    }
    std::fs::write(&jpath, text).expect("write");
    let (_, restored) = restore_stale(&jpath).expect("reads").expect("one");
    assert_eq!(restored.len(), 4);
    for r in &restored {
        assert!(matches!(r.outcome, Outcome::Refused(_)), "{r}");
        assert!(r.to_string().starts_with("refused to restore"), "{r}");
    }
    assert_eq!(std::fs::read_to_string(&victim).expect("read"), "precious");
    assert!(dir.path().exists());
    assert!(!jpath.exists(), "nothing left to try: the journal goes");
}

#[test]
fn knobs_schedlab_writes_are_allowed_and_nothing_near_them() {
    let _machine = crate::testing::machine_lock();
    let ok = |p: &str| {
        not_allowed(
            &Entry::File {
                path: p.into(),
                old: String::new(),
            },
            &[],
        )
        .is_none()
    };
    assert!(ok("/proc/sys/kernel/sched_rt_runtime_us"));
    assert!(ok("/proc/sys/kernel/sched_autogroup_enabled"));
    assert!(ok("/sys/kernel/debug/sched/features"));
    assert!(!ok("/proc/sys/kernel/core_pattern"));
    assert!(!ok("/sys/kernel/debug/tracing/trace"));
    assert!(!ok("relative/path"));
}

#[test]
fn dirs_are_removed_on_restore() {
    let _machine = crate::testing::machine_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let made = dir.path().join("made");
    std::fs::create_dir(&made).expect("mkdir");
    let mut j = Journal::new(dir.path().join("journal.jsonl")).allow_under(dir.path());
    j.record_dir(&made).expect("record");
    let restored = j.restore();
    assert!(restored[0].ok(), "{:?}", restored);
    assert!(!made.exists());
}

#[test]
fn an_unreadable_journal_says_what_it_holds_and_can_be_discarded() {
    let _machine = crate::testing::machine_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let jpath = dir.path().join("journal.jsonl");
    std::fs::write(&jpath, "").expect("empty journal");
    let err = restore_stale(&jpath).unwrap_err().to_string();
    assert!(err.contains("is not a schedlab journal"), "{err}");
    assert!(err.contains("restore --discard"), "{err}");
    let held = discard(&jpath).expect("discards").expect("there was one");
    assert_eq!(held.len(), 1);
    assert!(!jpath.exists());
    assert_eq!(discard(&jpath).expect("nothing"), None);
}
