//! schedlab against hostile state and hard exits: another user's planted directory and
//! journal, symlinks where its files go, children a command forks after schedlab is
//! SIGKILLed, mounts that are not its own, and input meant to exhaust it.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

const NOBODY: &str = "65534";

/// schedlab as user nobody, with TMPDIR and HOME in `home` and nothing else set.
fn as_nobody(home: &Path, args: &[&str]) -> Output {
    Command::new("/usr/bin/setpriv")
        .args([
            &format!("--reuid={NOBODY}"),
            &format!("--regid={NOBODY}"),
            "--clear-groups",
        ])
        .arg(common::exe())
        .args(args)
        .env("HOME", home)
        .env("TMPDIR", home)
        .env_remove("XDG_RUNTIME_DIR")
        .env_remove("SCHEDLAB_JOURNAL")
        .env_remove("SCHEDLAB_STATE_DIR")
        .output()
        .expect("run as nobody")
}

/// A world-writable, sticky scratch directory like /tmp, owned by root.
fn shared_tmp() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    dir
}

fn can_switch_user() -> bool {
    common::require(
        "root and setpriv (to act as two users)",
        common::is_root() && Path::new("/usr/bin/setpriv").exists(),
    )
}

#[test]
fn another_users_planted_state_directory_is_refused_not_used() {
    if !can_switch_user() {
        return;
    }
    let _guard = common::serial();
    let tmp = shared_tmp();
    // root (the "other user") gets there first: /tmp/schedlab-65534 with a journal
    // that would write over a file of nobody's.
    let victim = tmp.path().join("victim");
    std::fs::write(&victim, "nobody's data").expect("write");
    std::fs::set_permissions(&victim, std::fs::Permissions::from_mode(0o666)).expect("chmod");
    let planted = tmp.path().join(format!("schedlab-{NOBODY}"));
    std::fs::create_dir(&planted).expect("mkdir");
    std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    let journal = format!(
        "{{\"schedlab_journal\":1,\"pid\":1}}\n{{\"kind\":\"file\",\"path\":\"{}\",\"old\":\"anything\"}}\n",
        victim.display()
    );
    std::fs::write(planted.join("journal.jsonl"), journal).expect("plant");

    // Listing presets works and touches nothing.
    let out = as_nobody(tmp.path(), &["presets"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!stderr.contains("restored"), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&victim).expect("read"),
        "nobody's data"
    );

    // A run needs the state directory: refused, in one line saying whose it is.
    let out = as_nobody(tmp.path(), &["run", "pipe-wakeup", "--duration", "300ms"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("belongs to uid 0, not to you (uid 65534)"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&victim).expect("read"),
        "nobody's data"
    );
}

#[test]
fn a_symlink_planted_at_the_knob_lock_is_not_followed() {
    if !common::require("root", common::is_root()) {
        return;
    }
    let _guard = common::serial();
    let state = tempfile::tempdir().expect("state dir");
    let target = state.path().join("precious");
    std::fs::write(&target, "keep me").expect("write");
    // The lock is the machine's, at one path whatever the state directory: planted
    // there (and taken away again, pass or fail).
    let lock = schedlab::knob::journal::lock_path().expect("the lock's path");
    let _ = std::fs::remove_file(&lock);
    std::os::unix::fs::symlink(&target, &lock).expect("symlink");
    struct Unplant(PathBuf);
    impl Drop for Unplant {
        fn drop(&mut self) {
            if self
                .0
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink())
            {
                let _ = std::fs::remove_file(&self.0);
            }
        }
    }
    let _unplant = Unplant(lock);
    let journal = state.path().join("journal.jsonl");
    // The write needs the lock; autogroup is set to the value it has (changes nothing).
    let now = std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
        .expect("autogroup")
        .trim()
        .to_string();
    let out = Command::new(common::exe())
        .args(["run", "pipe-wakeup", "--duration", "300ms"])
        .args(["--set", &format!("sys.autogroup={now}")])
        .env("SCHEDLAB_STATE_DIR", state.path())
        .env("SCHEDLAB_JOURNAL", &journal)
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(stderr.contains("knob lock"), "{stderr}");
    assert_eq!(std::fs::read_to_string(&target).expect("read"), "keep me");
    assert!(!journal.exists(), "nothing was journaled, nothing written");
}

#[test]
fn cleanup_leaves_every_directory_schedlab_did_not_record() {
    if !can_switch_user() {
        return;
    }
    let _guard = common::serial();
    // Names that look like schedlab's: another user's state directory and a run
    // directory of a pid that does not exist, both nobody's.
    let others = [
        std::env::temp_dir().join(format!("schedlab-{NOBODY}-test-{}", std::process::id())),
        PathBuf::from(format!("/dev/shm/schedlab-{}-abcdef", i32::MAX)),
    ];
    for d in &others {
        std::fs::create_dir_all(d).expect("mkdir");
        nix::unistd::chown(d, Some(65534.into()), Some(65534.into())).expect("chown");
    }
    let out = common::schedlab(&["run", "pipe-wakeup", "--duration", "300ms"]);
    let out2 = common::schedlab(&["restore"]);
    for d in &others {
        let there = d.exists();
        let _ = std::fs::remove_dir_all(d);
        assert!(there, "{} was removed", d.display());
    }
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out2.status.success(),
        "{}",
        String::from_utf8_lossy(&out2.stderr)
    );
}

/// A preset whose command forks a sleeper and a busy loop, then waits for them.
fn forking_preset(dir: &Path) -> PathBuf {
    let path = dir.join("fork.toml");
    std::fs::write(
        &path,
        r#"name = "fork"
summary = "a command that forks"
note = "n"
[metric]
headline = "share"
task = "sh"
[[task]]
name = "sh"
command = ["sh", "-c", "sleep 299.731 & (while :; do :; done) & wait"]
cpus = "0"
policy = "batch"
"#,
    )
    .expect("write preset");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    path
}

/// Whether another process holds schedlab's knob lock (an exclusive flock on
/// `journal::lock_path()`): a non-blocking flock of our own is refused while it does.
fn knob_lock_held() -> bool {
    let Ok(path) = schedlab::knob::journal::lock_path() else {
        return false;
    };
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    // SAFETY: flock on a descriptor we own; released when `file` closes.
    let rc = unsafe {
        libc::flock(
            std::os::fd::AsRawFd::as_raw_fd(&file),
            libc::LOCK_EX | libc::LOCK_NB,
        )
    };
    rc != 0
}

/// What a failed assertion in a SIGKILL test would leave: the forked sleepers are
/// killed and the default journal replayed (its run cgroups removed).
struct Leftovers;

impl Drop for Leftovers {
    fn drop(&mut self) {
        common::restore_journal(None);
        for p in pids_with(SLEEPER) {
            let _ = nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(p),
                nix::sys::signal::Signal::SIGKILL,
            );
        }
    }
}

/// The sleeper the forking preset starts, as its command line reads in /proc. An odd
/// length, so that nobody else's `sleep 300` is taken for it (and killed at the end: a
/// shell's `sleep 300` beside CI once was).
const SLEEPER: &str = "sleep\x00299.731";

/// Every process whose command line holds `needle` (a unique marker).
fn pids_with(needle: &str) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").expect("proc").flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if String::from_utf8_lossy(&cmd).contains(needle) && common::alive(pid) {
            out.push(pid);
        }
    }
    out
}

/// Start `schedlab run PRESET`, wait until its command's children run, SIGKILL it.
/// Returns the orphans' pids.
fn kill_mid_run(cmd: &mut Command) -> Vec<i32> {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start schedlab");
    let start = Instant::now();
    while pids_with(SLEEPER).is_empty() && start.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGKILL,
    )
    .expect("kill");
    let _ = child.wait();
    std::thread::sleep(Duration::from_millis(200));
    pids_with(SLEEPER)
}

#[test]
fn after_sigkill_what_a_command_forked_is_killed_by_restore_and_the_next_start() {
    if !common::require("root", common::is_root()) {
        return;
    }
    let _guard = common::serial();
    let _leftovers = Leftovers;
    let dir = tempfile::tempdir().expect("tempdir");
    let preset = forking_preset(dir.path());
    for contain in ["v2", "v1"] {
        orphans_of_a_sigkill_are_killed(&preset, contain);
    }
}

fn orphans_of_a_sigkill_are_killed(preset: &Path, contain: &str) {
    let run = || {
        let mut c = Command::new(common::exe());
        c.args(["run", preset.to_str().expect("path"), "--duration", "30s"])
            .env("SCHEDLAB_CONTAIN", contain);
        c
    };
    // SIGKILL leaves the command's grandchildren behind (PDEATHSIG reaches children
    // only), until `schedlab restore` finds them in the run's cgroup (v2 here, or v1's
    // cpuacct hierarchy).
    let orphans = kill_mid_run(&mut run());
    assert!(!orphans.is_empty(), "the sleeper outlived schedlab for now");
    // It sits in the kind of cgroup asked for.
    let cgroups = std::fs::read_to_string(format!("/proc/{}/cgroup", orphans[0])).expect("cgroup");
    let line = cgroups
        .lines()
        .find(|l| {
            if contain == "v2" {
                l.starts_with("0::")
            } else {
                l.contains(":cpuacct")
            }
        })
        .unwrap_or_default();
    assert!(line.contains("schedlab-run-"), "{contain}: {cgroups}");
    let out = common::schedlab(&["restore"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("left") && text.contains("killed"), "{text}");
    assert!(
        common::wait_until(common::PATIENCE, || pids_with(SLEEPER).is_empty()),
        "orphans survived restore: {:?}",
        pids_with(SLEEPER)
    );
    // The same without `restore`: the next schedlab command of any kind does it.
    kill_mid_run(&mut run());
    let out = common::schedlab(&["presets"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("killed"), "{stderr}");
    assert!(common::wait_until(common::PATIENCE, || pids_with(SLEEPER).is_empty()));
}

#[test]
fn as_an_ordinary_user_a_commands_children_are_killed_by_process_group() {
    if !can_switch_user() {
        return;
    }
    let _guard = common::serial();
    let tmp = shared_tmp();
    let preset = forking_preset(tmp.path());
    let mut c = Command::new("/usr/bin/setpriv");
    c.args([
        &format!("--reuid={NOBODY}"),
        &format!("--regid={NOBODY}"),
        "--clear-groups",
    ])
    .arg(common::exe())
    .args(["run", preset.to_str().expect("path"), "--duration", "30s"])
    .env("TMPDIR", tmp.path())
    .env("HOME", tmp.path())
    .env_remove("XDG_RUNTIME_DIR")
    .env_remove("SCHEDLAB_STATE_DIR")
    .env_remove("SCHEDLAB_JOURNAL");
    let orphans = kill_mid_run(&mut c);
    assert!(!orphans.is_empty());
    let out = as_nobody(tmp.path(), &["restore"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("killed"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        common::wait_until(common::PATIENCE, || pids_with(SLEEPER).is_empty()),
        "orphans survived: {:?}",
        pids_with(SLEEPER)
    );
}

#[test]
fn a_failed_debugfs_mount_leaves_nothing_to_restore() {
    if !can_switch_user() {
        return;
    }
    let _guard = common::serial();
    let tmp = shared_tmp();
    let out = as_nobody(tmp.path(), &["knobs", "--mount-debugfs"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(stderr.contains("mounting debugfs"), "{stderr}");
    let state = tmp.path().join(format!("schedlab-{NOBODY}"));
    assert!(
        !state.join("journal.jsonl").exists(),
        "a mount that failed is not journaled"
    );
    // Nothing locks the user out afterwards.
    let out = as_nobody(tmp.path(), &["restore"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("nothing to restore"), "{text}");
}

/// Unmounts debugfs when dropped if it was not mounted when made.
struct MountGuard(bool);
impl Drop for MountGuard {
    fn drop(&mut self) {
        if !self.0 && common::debugfs_mounted() {
            let _ = nix::mount::umount("/sys/kernel/debug");
        }
    }
}

#[test]
fn a_mount_schedlab_did_not_make_is_never_unmounted() {
    if !common::require("root", common::is_root()) {
        return;
    }
    let _guard = common::serial();
    let _mount = MountGuard(common::debugfs_mounted());
    if !common::debugfs_mounted() {
        nix::mount::mount(
            Some("none"),
            "/sys/kernel/debug",
            Some("debugfs"),
            nix::mount::MsFlags::empty(),
            None::<&str>,
        )
        .expect("an admin mounts debugfs");
    }
    // A journal from an earlier schedlab that mounted debugfs (a different mount: its id
    // is not this one's), and one from an old version that recorded no id at all.
    let dir = tempfile::tempdir().expect("tempdir");
    for entry in [
        r#"{"kind":"mount","target":"/sys/kernel/debug","fstype":"debugfs","mnt_id":1}"#,
        r#"{"kind":"mount","target":"/sys/kernel/debug"}"#,
    ] {
        let journal = dir.path().join("journal.jsonl");
        std::fs::write(
            &journal,
            format!("{{\"schedlab_journal\":1,\"pid\":1}}\n{entry}\n"),
        )
        .expect("write");
        let out = Command::new(common::exe())
            .arg("restore")
            .env("SCHEDLAB_JOURNAL", &journal)
            .output()
            .expect("restore");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            common::debugfs_mounted(),
            "the admin's debugfs was unmounted by {entry}"
        );
        assert!(!journal.exists());
    }
}

#[test]
fn a_cgroup_preset_beside_a_knob_holding_run_is_refused_before_it_starts() {
    if !common::require("root", common::is_root()) {
        return;
    }
    let _guard = common::serial();
    // The first run holds the knob lock for its whole run (it changed a system knob to
    // the value it already had, which still takes the lock).
    let now = std::fs::read_to_string("/proc/sys/kernel/sched_autogroup_enabled")
        .expect("autogroup")
        .trim()
        .to_string();
    let dir = tempfile::tempdir().expect("tempdir");
    // Ended with SIGTERM once the second run is done (20 s only bounds it).
    let j1 = dir.path().join("j1");
    let holder = common::Spawned::spawn(
        Command::new(common::exe())
            .args(["run", "pipe-wakeup", "--duration", "20s"])
            .args(["--set", &format!("sys.autogroup={now}")])
            .env("SCHEDLAB_JOURNAL", &j1)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
        Some(&j1),
    );
    assert!(
        common::wait_until(Duration::from_secs(60), knob_lock_held),
        "the first run never took the knob lock"
    );
    let out = Command::new(common::exe())
        .args(["run", "cgroup-fairness", "--duration", "500ms"])
        .env("SCHEDLAB_JOURNAL", dir.path().join("j2"))
        .output()
        .expect("cgroup run");
    let holder_pid = holder.id();
    drop(holder);
    let text = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    // The lock's own exit code, before anything started (it used to run without its
    // cgroups and exit 3, "the kernel refused").
    assert_eq!(out.status.code(), Some(4), "{text}{stderr}");
    assert!(
        stderr.contains(&format!("another schedlab (pid {holder_pid})")),
        "{stderr}"
    );
    assert!(text.is_empty(), "nothing ran: {text}");
}

#[test]
fn input_meant_to_exhaust_schedlab_is_refused_at_once() {
    let _guard = common::serial();
    for args in [
        vec!["run", "nice-ladder", "--set", "busy.nice=0..500000000"],
        vec![
            "run",
            "nice-ladder",
            "--set",
            "busy.nice=-2147483648..2147483647",
        ],
        vec![
            "sweep",
            "rt-throttle",
            "--knob",
            "sys.rt_runtime_us=0..9223372036854775807:1",
        ],
        vec!["run", "pipe-wakeup", "--duration", "0s"],
        vec!["run", "rt-throttle", "--set", "sys.rt_runtime_us=5000000"],
    ] {
        // "At once": within what a trivial command takes here now, many times over
        // (expanding 500M values or spawning 2^16 tasks takes minutes).
        let start = Instant::now();
        common::schedlab(&["presets"]);
        let bound = Duration::from_secs(2).max(start.elapsed() * 20);
        let start = Instant::now();
        let out = common::schedlab(&args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.contains("allowed") || stderr.contains("more than"),
            "{stderr}"
        );
        assert!(
            start.elapsed() < bound,
            "{args:?} took {:?} (bound {bound:?})",
            start.elapsed()
        );
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let big = dir.path().join("big.toml");
    std::fs::write(&big, vec![b'#'; 2 << 20]).expect("write");
    let out = common::schedlab(&["presets", big.to_str().expect("path")]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("allowed at most"));
    let missing = dir.path().join("missing.toml");
    std::fs::write(
        &missing,
        "name='m'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='w'\n[[task]]\nname='w'\ncommand=['/nonexistent/prog']\n",
    )
    .expect("write");
    let out = common::schedlab(&[
        "run",
        missing.to_str().expect("path"),
        "--duration",
        "300ms",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("task \"w\": cannot run \"/nonexistent/prog\": no such file"));
}

/// Every descriptor of `pid` above stderr, as "fd -> target".
fn open_fds(pid: i32) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    let mut fds: Vec<String> = dir
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .and_then(|n| n.parse::<i32>().ok())
                .is_some_and(|n| n > 2)
        })
        .map(|e| {
            let target = std::fs::read_link(e.path()).unwrap_or_default();
            format!(
                "{} -> {}",
                e.file_name().to_string_lossy(),
                target.display()
            )
        })
        .collect();
    fds.sort();
    fds
}

/// Workers hold what they were given (the experiment's pipes) and what they opened
/// themselves (their shared-memory page), nothing of schedlab's own (the PM QoS request:
/// a worker holding it would keep the machine's latency target after schedlab; the
/// knob lock, the journal, the tracer's perf events) nor what schedlab inherited from
/// its starter (here a stray descriptor and a MAKEFLAGS naming a jobserver on it).
#[test]
fn workers_get_only_their_pipes_and_no_jobserver() {
    use command_fds::{CommandFdExt, FdMapping};
    if !common::require("root", common::is_root()) {
        return;
    }
    let _serial = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let journal = dir.path().join("journal.jsonl");
    const STRAY: i32 = 40;
    let stray = std::fs::File::open("/dev/null").expect("/dev/null");
    let mut cmd = Command::new(common::exe());
    cmd.args(["run", "pipe-wakeup", "--duration", "60s", "--trace"])
        .args(["--set", "sys.cpu_dma_latency=0"])
        // A written knob: the run holds the knob lock and the journal too.
        .args(["--set", "sys.autogroup=0"])
        .env("SCHEDLAB_JOURNAL", &journal)
        .env(
            "MAKEFLAGS",
            format!(" -j4 --jobserver-auth={STRAY},{STRAY}"),
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    cmd.fd_mappings(vec![FdMapping {
        parent_fd: stray.into(),
        child_fd: STRAY,
    }])
    .expect("a stray descriptor for schedlab");
    let run = common::Spawned::spawn(&mut cmd, Some(&journal));
    let pid = run.id() as i32;
    // Both tasks running: the writer's worker and the exec'd `wc`.
    let workers = || -> Vec<i32> {
        common::children(pid)
            .into_iter()
            .filter(|&c| {
                std::fs::read_to_string(format!("/proc/{c}/cmdline"))
                    .is_ok_and(|l| l.contains("__worker") || l.starts_with("wc\0"))
            })
            .collect()
    };
    assert!(
        common::wait_until(common::PATIENCE, || workers().len() >= 2
            && journal.exists()),
        "the run never started its two tasks: children {:?}",
        common::children(pid)
    );
    let own = open_fds(pid);
    assert!(
        own.iter().any(|f| f.ends_with("/dev/cpu_dma_latency"))
            && own
                .iter()
                .any(|f| f.starts_with(&format!("{STRAY} -> /dev/null"))),
        "schedlab itself holds the request and the stray: {own:?}"
    );
    for w in workers() {
        let comm = std::fs::read_to_string(format!("/proc/{w}/comm")).unwrap_or_default();
        let held = open_fds(w);
        let foreign: Vec<&String> = held
            .iter()
            .filter(|f| {
                let data_pipe =
                    (f.starts_with("3 -> ") || f.starts_with("4 -> ")) && f.contains("-> pipe:[");
                !data_pipe && !f.contains("/dev/shm/schedlab-")
            })
            .collect();
        assert!(
            foreign.is_empty(),
            "worker {w} ({}) holds more than its pipes: {foreign:?} (all: {held:?})",
            comm.trim()
        );
        let env = std::fs::read(format!("/proc/{w}/environ")).unwrap_or_default();
        assert!(
            !env.split(|&b| b == 0).any(|v| v.starts_with(b"MAKEFLAGS=")),
            "worker {w} ({}) was handed the outer MAKEFLAGS",
            comm.trim()
        );
    }
}
