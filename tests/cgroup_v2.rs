//! The cgroup knobs (weight, shares, quota, moving a task) against a real cgroup v2
//! hierarchy with the cpu controller: where the machine binds cpu to a v1 hierarchy,
//! the test takes that hierarchy off (if the kernel lets it), mounts cgroup2 privately,
//! and puts the v1 mount back exactly as it was, pass or fail.
//!
//! When it cannot run: not root, or no cgroup2 filesystem, fails like every test that
//! lacks a capability (`common::require`; `SCHEDLAB_ALLOW_SKIP=1` skips). When the
//! machine's own state forbids taking the cpu controller off v1 (the hierarchy has
//! groups, is mounted twice, or the kernel calls it busy), the test prints why and
//! passes whatever `SCHEDLAB_REQUIRE_ALL` says - forcing it would change the machine
//! beyond what a test can put back - unless `SCHEDLAB_REQUIRE_V2=1` (a CI machine known
//! to allow it) makes that a failure too.

use crate::common;
#[path = "cgroup_v2/mounts.rs"]
mod mounts;

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use mounts::{mountinfo, PrivateV2, Released};
use schedlab::knob::cgroup::{self, Cgroups, Version};
use schedlab::knob::journal::Journal;

/// How long the kernel may take to hand a released controller to v2 (its v1 state is
/// torn down asynchronously).
const HANDOVER: Duration = Duration::from_secs(20);

fn skip(why: &str) {
    if std::env::var_os("SCHEDLAB_REQUIRE_V2").is_some_and(|v| v == "1") {
        panic!("{why}; SCHEDLAB_REQUIRE_V2=1: this machine must run the cgroup v2 test");
    }
    eprintln!("skipped: cgroup v2 test: {why}");
}

/// Child groups of the cpu controller's v1 hierarchy (/proc/cgroups counts the root).
fn cpu_groups() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/cgroups").ok()?;
    text.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        (f.first() == Some(&"cpu")).then(|| f.get(2)?.parse::<u64>().ok())?
    })
}

/// Take the cpu controller off v1, if it is on v1 and the machine lets it go. None: it
/// was not on v1 (nothing to put back).
fn release_cpu() -> Result<Option<Released>, String> {
    let v1: Vec<mounts::Row> = mountinfo().into_iter().filter(|r| r.is_v1_cpu()).collect();
    let Some(row) = v1.first() else {
        return Ok(None);
    };
    if v1.len() > 1 {
        return Err(format!(
            "the v1 cpu hierarchy is mounted {} times ({v1:?}): the test takes off only a hierarchy with one mount point",
            v1.len()
        ));
    }
    if let Some(n) = cpu_groups().filter(|&n| n > 1) {
        return Err(format!(
            "the v1 cpu hierarchy at {} has {} groups besides its root: their tasks would have to move",
            row.target.display(),
            n - 1
        ));
    }
    Released::release(row).map(Some)
}

/// Spinning processes, killed on drop.
struct Spinners(Vec<Child>);

impl Spinners {
    /// `n` shell loops, all on CPU 0 so they compete for one CPU.
    fn on_cpu0(n: usize) -> Spinners {
        let mut all = Spinners(Vec::new());
        for _ in 0..n {
            let child = Command::new("sh")
                .args(["-c", "while :; do :; done"])
                .spawn()
                .expect("spawn a spinner");
            let mut cpu0 = nix::sched::CpuSet::new();
            cpu0.set(0).expect("cpu 0");
            let pid = nix::unistd::Pid::from_raw(child.id() as i32);
            all.0.push(child);
            nix::sched::sched_setaffinity(pid, &cpu0).expect("pin to CPU 0");
        }
        all
    }

    fn pid(&self, i: usize) -> i32 {
        self.0[i].id() as i32
    }

    /// CPU time of spinner `i` in clock ticks (utime + stime).
    fn ticks(&self, i: usize) -> i64 {
        let pid = self.pid(i);
        common::stat_field(pid, 14).unwrap_or(0) + common::stat_field(pid, 15).unwrap_or(0)
    }
}

impl Drop for Spinners {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn read(dir: &Path, file: &str) -> String {
    std::fs::read_to_string(dir.join(file))
        .unwrap_or_default()
        .trim()
        .to_string()
}

/// Set each knob through `Cgroups` and read the v2 file it must have written.
fn set_and_read_back(groups: &Cgroups) {
    let (heavy, light) = (
        groups.dir("heavy").expect("heavy"),
        groups.dir("light").expect("light"),
    );
    assert_eq!(
        groups.set("heavy", &value("weight", "400")).as_deref(),
        Ok("400")
    );
    assert_eq!(read(heavy, "cpu.weight"), "400");
    // v1-style shares become a v2 weight (1024 shares = weight 100).
    assert_eq!(
        groups.set("light", &value("shares", "1024")).as_deref(),
        Ok("1024")
    );
    assert_eq!(read(light, "cpu.weight"), "100");
    let quota = groups.set("light", &value("quota", "50ms/100ms"));
    assert_eq!(quota.as_deref(), Ok("50000/100000"));
    assert_eq!(read(light, "cpu.max"), "50000 100000");
    assert_eq!(
        groups.set("light", &value("quota", "max")).as_deref(),
        Ok("max")
    );
    assert_eq!(read(light, "cpu.max"), "max 100000");
    let rt = groups
        .set("light", &value("rt_runtime_us", "1000"))
        .unwrap_err();
    assert!(rt.to_string().contains("only in cgroup v1"), "{rt}");
}

/// Two spinners on one CPU, one per group: the weights 400 and 100 must show as CPU
/// time (4:1 ideally; the assertion asks for more than 2:1, whatever else runs there).
fn weights_share_the_cpu(groups: &Cgroups) {
    let spin = Spinners::on_cpu0(2);
    for (i, group) in ["heavy", "light"].into_iter().enumerate() {
        let pid = spin.pid(i);
        groups.add_task(group, pid, pid).expect("move the spinner");
        let procs = read(groups.dir(group).expect("dir"), "cgroup.procs");
        assert!(
            procs.split_whitespace().any(|p| p == pid.to_string()),
            "{procs}"
        );
        let own = std::fs::read_to_string(format!("/proc/{pid}/cgroup")).expect("cgroup");
        assert!(own.contains(&format!("/{group}\n")), "{own}");
    }
    let start = (spin.ticks(0), spin.ticks(1));
    // A second of CPU between them: enough ticks for the ratio, however loaded CPU 0 is.
    let ran = common::wait_until(common::PATIENCE, || {
        spin.ticks(0) - start.0 + spin.ticks(1) - start.1 >= 100
    });
    let (heavy, light) = (spin.ticks(0) - start.0, spin.ticks(1) - start.1);
    assert!(ran, "the spinners got {heavy} + {light} ticks in a minute");
    let ratio = heavy as f64 / light.max(1) as f64;
    eprintln!(
        "cgroup v2: weight 400 vs 100 on one CPU: {heavy} vs {light} ticks, ratio {ratio:.2}"
    );
    assert!(
        ratio > 2.0,
        "weight 400 vs 100 gave {heavy} vs {light} ticks"
    );
}

/// Everything the knobs do on the private v2 mount, undone by the journal.
fn exercise(v2: &Path) {
    let mounts = std::fs::read_to_string("/proc/self/mounts").expect("mounts");
    let controllers = |d: &Path| std::fs::read_to_string(d.join("cgroup.controllers")).ok();
    let root = cgroup::at(&mounts, v2, &controllers).expect("the private mount has cpu");
    assert_eq!(root.version, Version::V2);
    let scratch = tempfile::tempdir().expect("tempdir");
    let mut journal = Journal::new(scratch.path().join("journal.jsonl"));
    let names = ["heavy".to_string(), "light".to_string()];
    let had_cpu = read(v2, "cgroup.subtree_control");
    let groups = Cgroups::create(root, &names, &mut journal).expect("create the groups");
    let base = groups.base().to_path_buf();
    assert!(read(v2, "cgroup.subtree_control").contains("cpu"));
    set_and_read_back(&groups);
    weights_share_the_cpu(&groups);
    let restored = journal.restore();
    assert!(restored.iter().all(|r| r.ok()), "{restored:?}");
    assert!(!base.exists(), "{} removed", base.display());
    // The root's controllers as found (a systemd machine has cpu on already).
    assert_eq!(read(v2, "cgroup.subtree_control"), had_cpu);
}

#[test]
fn cgroup_knobs_run_against_a_private_cgroup_v2_hierarchy() {
    let _serial = common::serial();
    if !common::require("root (mounting cgroup2)", common::is_root()) {
        return;
    }
    let before = mountinfo();
    let v2 = PrivateV2::mount();
    let Ok(mut v2) = v2 else {
        common::host_lacks("a cgroup2 filesystem to mount");
        return;
    };
    let mut released = match release_cpu() {
        Ok(r) => r,
        Err(why) => return skip(&why),
    };
    let handed_over = common::wait_until(HANDOVER, || {
        v2.controllers().split_whitespace().any(|c| c == "cpu")
    });
    if !handed_over {
        let listed = v2.controllers();
        let why = match &released {
            Some(_) => format!(
                "the cpu controller did not reach cgroup v2 within {} s (cgroup.controllers: \"{}\"): its v1 hierarchy lives on (another mount namespace's copy, or a reference the kernel keeps)",
                HANDOVER.as_secs(),
                listed.trim()
            ),
            None => format!(
                "the cpu controller is in no mounted v1 hierarchy and not in cgroup v2 (cgroup.controllers: \"{}\")",
                listed.trim()
            ),
        };
        drop(released);
        return skip(&why);
    }
    exercise(v2.path());
    v2.unmount().expect("unmount the private cgroup2");
    if let Some(r) = released.as_mut() {
        r.put_back()
            .expect("the v1 cpu hierarchy mounted back as it was");
    }
    let cgroups = |rows: Vec<mounts::Row>| -> Vec<mounts::Row> {
        rows.into_iter()
            .filter(|r| r.fstype.starts_with("cgroup"))
            .collect()
    };
    let mut now = cgroups(mountinfo());
    let mut was = cgroups(before);
    now.sort_by(|a, b| a.target.cmp(&b.target));
    was.sort_by(|a, b| a.target.cmp(&b.target));
    assert_eq!(now, was, "every cgroup mount as before");
}

/// A value as a preset or `--set` hands it to the cgroups: parsed, so valid.
fn value(knob: &str, text: &str) -> schedlab::knob::cgroup::CgroupValue {
    schedlab::knob::cgroup::CgroupValue::parse(knob, text).expect("a valid value")
}
