//! The sched_ext knob against a fake sysfs tree and fake schedulers (shell scripts that
//! write the state files as the kernel would): start, journal, stop, refusals.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::*;
use crate::knob::journal::{restore_stale, Entry, Journal};

/// A root with /sys/kernel/sched_ext saying `state`.
fn fake_root(dir: &Path, state: &str) -> PathBuf {
    let root = dir.join("root");
    let sysfs = root.join("sys/kernel/sched_ext");
    std::fs::create_dir_all(sysfs.join("root")).expect("mkdir");
    std::fs::write(sysfs.join("state"), format!("{state}\n")).expect("state");
    root
}

/// An executable script named `name` in `dir`.
fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// A scheduler that registers as "fake" and unregisters on SIGINT, as scx_* do.
fn fake_scheduler(dir: &Path, root: &Path) -> PathBuf {
    let s = root.join("sys/kernel/sched_ext");
    let s = s.display();
    script(
        dir,
        "scx_fake",
        &format!(
            "trap 'echo disabled > {s}/state; rm -f {s}/root/ops; exit 0' INT\n\
             echo enabling > {s}/state; echo fake > {s}/root/ops; echo enabled > {s}/state\n\
             while :; do sleep 0.05; done"
        ),
    )
}

fn processes(journal: &Journal) -> Vec<crate::knob::child::Child> {
    journal
        .entries()
        .iter()
        .filter_map(|e| match e {
            Entry::Process(c) => Some(c.clone()),
            _ => None,
        })
        .collect()
}

fn state(root: &Path) -> String {
    std::fs::read_to_string(root.join("sys/kernel/sched_ext/state"))
        .expect("state")
        .trim()
        .to_string()
}

#[test]
fn a_scheduler_is_started_journaled_and_stopped_by_the_restore() {
    let _machine = crate::testing::machine_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let root = fake_root(dir.path(), "disabled");
    let program = fake_scheduler(dir.path(), &root);
    let mut journal = Journal::new(dir.path().join("journal.jsonl"));
    let value = switch(&mut journal, Some(&program), &root, ENABLE_WAIT).expect("started");
    assert_eq!(value, "fake");
    let started = processes(&journal);
    assert_eq!(started.len(), 1, "{:?}", journal.entries());
    assert_eq!(started[0].comm, "scx_fake");
    assert!(started[0].alive());
    assert_eq!(detect(&root).value().as_deref(), Some("fake"));
    let restored = journal.restore();
    assert!(restored.iter().all(|r| r.ok()), "{restored:?}");
    assert!(!started[0].alive(), "stopped at exit");
    assert_eq!(state(&root), "disabled", "it unregistered on SIGINT");
}

#[test]
fn off_stops_ours_and_a_second_scheduler_replaces_the_first() {
    let _machine = crate::testing::machine_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let root = fake_root(dir.path(), "disabled");
    let program = fake_scheduler(dir.path(), &root);
    let mut journal = Journal::new(dir.path().join("journal.jsonl"));
    switch(&mut journal, Some(&program), &root, ENABLE_WAIT).expect("first");
    let first = processes(&journal).remove(0);
    switch(&mut journal, Some(&program), &root, ENABLE_WAIT).expect("second");
    assert!(
        !first.alive(),
        "the first was stopped before the second started"
    );
    let second = processes(&journal).remove(1);
    assert!(second.alive());
    assert_eq!(
        switch(&mut journal, None, &root, ENABLE_WAIT).as_deref(),
        Ok("off")
    );
    assert!(!second.alive());
    assert_eq!(state(&root), "disabled");
    journal.restore();
}

#[test]
fn refusals_name_what_was_wrong() {
    let _machine = crate::testing::machine_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut journal = Journal::new(dir.path().join("journal.jsonl"));
    let wait = Duration::from_millis(300);
    // A scheduler that fails to load: its last stderr line is the reason.
    let root = fake_root(dir.path(), "disabled");
    let failing = script(
        dir.path(),
        "scx_broken",
        "echo loading >&2; echo 'libbpf: failed to load BPF skeleton: -22' >&2; exit 1",
    );
    let err = switch(&mut journal, Some(&failing), &root, ENABLE_WAIT)
        .expect_err("it exits")
        .to_string();
    assert!(
        err.contains("exited")
            && err.ends_with("its last words: libbpf: failed to load BPF skeleton: -22"),
        "{err}"
    );
    // One that never enables sched_ext is stopped after the wait.
    let silent = script(dir.path(), "scx_silent", "while :; do sleep 0.05; done");
    let err = switch(&mut journal, Some(&silent), &root, wait)
        .expect_err("never enabled")
        .to_string();
    assert!(
        err.contains("was not enabled within 0.3 s (state disabled); stopped it"),
        "{err}"
    );
    assert!(
        processes(&journal).iter().all(|c| !c.alive()),
        "nothing left running"
    );
    // Somebody else's scheduler runs: neither a new one nor off touches it.
    std::fs::write(root.join("sys/kernel/sched_ext/root/ops"), "rusty\n").expect("ops");
    std::fs::write(root.join("sys/kernel/sched_ext/state"), "enabled\n").expect("state");
    for program in [Some(silent.as_path()), None] {
        let err = switch(&mut journal, program, &root, wait).expect_err("foreign");
        assert!(
            err.to_string()
                .contains("another sched_ext scheduler (\"rusty\") is already running"),
            "{err}"
        );
    }
    // A kernel without sched_ext.
    let err = switch(&mut journal, None, &dir.path().join("bare"), wait).expect_err("none");
    assert!(
        err.to_string().contains("no /sys/kernel/sched_ext"),
        "{err}"
    );
    journal.restore();
}

#[test]
fn restore_after_a_sigkill_stops_exactly_the_recorded_process() {
    let _machine = crate::testing::machine_lock();
    let dir = tempfile::tempdir().expect("tempdir");
    let root = fake_root(dir.path(), "disabled");
    let program = fake_scheduler(dir.path(), &root);
    let path = dir.path().join("journal.jsonl");
    let mut journal = Journal::new(path.clone());
    switch(&mut journal, Some(&program), &root, ENABLE_WAIT).expect("started");
    let child = processes(&journal).remove(0);
    // What a SIGKILLed schedlab leaves: the journal file. Replayed as `schedlab restore`
    // does (a copy, as this process still owns the original).
    let left = dir.path().join("left.jsonl");
    std::fs::copy(&path, &left).expect("copy");
    let (_, restored) = restore_stale(&left).expect("restore").expect("a journal");
    assert_eq!(restored.len(), 1);
    assert_eq!(
        restored[0].entry.describe(),
        format!("stop scx_fake (pid {})", child.pid)
    );
    assert!(restored[0].ok(), "{restored:?}");
    assert!(!child.alive() && !left.exists());
    assert_eq!(state(&root), "disabled");
    // The process is gone: our own restore finds nothing left to stop.
    assert!(journal.restore().iter().all(|r| r.ok()));
}

#[test]
fn programs_are_found_by_path_or_on_path() {
    let dir = tempfile::tempdir().expect("tempdir");
    let exe = script(dir.path(), "scx_here", "exit 0");
    let plain = dir.path().join("notes");
    std::fs::write(&plain, "x").expect("write");
    let path = std::ffi::OsString::from(format!("relative:{}", dir.path().display()));
    assert_eq!(resolve("scx_here", Some(&path)), Ok(exe.clone()));
    assert_eq!(resolve(&exe.display().to_string(), None), Ok(exe));
    assert_eq!(
        resolve("scx_nowhere", Some(&path)),
        Err(ProgramError::NotOnPath("scx_nowhere".into()))
    );
    let shown = plain.display().to_string();
    assert_eq!(
        resolve(&shown, None).map_err(|e| e.to_string()),
        Err(format!("{shown} is not an executable file"))
    );
    assert!(resolve("/no/such/scx", None).is_err_and(|e| e.to_string().ends_with("does not exist")));
    assert!(names_match(Path::new("/usr/bin/scx_rusty"), "rusty"));
    assert!(names_match(Path::new("scx_simple"), "simple"));
    assert!(names_match(Path::new("/opt/my_scx_rusty"), "rusty"));
    assert!(!names_match(Path::new("scx_simple"), "rusty"));
    assert!(!names_match(Path::new("scx_simple"), ""));
}
