//! Containment: every process an experiment starts, and everything those fork, stays
//! where it can be found and killed even after schedlab itself was SIGKILLed. A cgroup
//! per workload when schedlab may make one (v2: cgroup.kill and cpu.stat; v1: cpuacct),
//! else the tasks' process groups. Each live schedlab lists what it contains in the run
//! registry (`runs/PID.json` in the state directory); the next start and `schedlab
//! restore` kill what a dead one left there, and remove only the directories it listed.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::knob::fs::{kill_all, procs_below};

/// Where one workload's processes are kept. Everything it makes (its cgroup, the
/// workload's run directory) is listed in the run registry before it is made and taken
/// off the list after it is gone, so a schedlab killed at any moment leaves nothing the
/// next start or `schedlab restore` cannot find.
pub struct Container {
    id: u64,
    cgroup: Option<Cgroup>,
    /// Why there is no cgroup (non-root, no writable hierarchy), for the report.
    pub why_uncontained: Option<String>,
    /// The workload's run directory, once made (see [`Container::make_run_dir`]).
    run_dir: Option<PathBuf>,
}

struct Cgroup {
    dir: PathBuf,
    /// cgroup.procs, opened before any fork: a child writes "0" to it between fork
    /// and exec, so it is inside before it can run (or fork) anything. Kept at fd 64 or
    /// above, clear of the low numbers a child's own descriptors are moved to.
    procs: OwnedFd,
    /// The file with the group's CPU time (v2 cpu.stat, v1 cpuacct.usage).
    usage: Usage,
}

/// A cgroup's total CPU time, which counts every descendant of every task.
#[derive(Clone, Debug, PartialEq)]
pub enum Usage {
    /// cgroup v2 `cpu.stat` (`usage_usec`).
    V2(PathBuf),
    /// cgroup v1 `cpuacct.usage` (ns).
    V1(PathBuf),
}

impl Usage {
    /// CPU time so far in ns.
    pub fn read_ns(&self) -> Option<u64> {
        match self {
            Usage::V2(p) => std::fs::read_to_string(p).ok()?.lines().find_map(|l| {
                let us: u64 = l.strip_prefix("usage_usec ")?.trim().parse().ok()?;
                Some(us * 1000)
            }),
            Usage::V1(p) => std::fs::read_to_string(p).ok()?.trim().parse().ok(),
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            Usage::V2(p) | Usage::V1(p) => p,
        }
    }
}

static NEXT_ID: AtomicU64 = AtomicU64::new(0);

impl Container {
    /// A container that has made nothing yet.
    pub fn new() -> Container {
        Container {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            cgroup: None,
            why_uncontained: None,
            run_dir: None,
        }
    }

    /// A cgroup for the workload if one can be made here, else process groups only.
    pub fn contain(&mut self) {
        let name = format!("schedlab-run-{}-{}", std::process::id(), self.id);
        let id = self.id;
        let listed = make_cgroup(&name, |dir| {
            registry_update(|r| r.entry(id).or_insert_with(Contained::empty).cgroup = dir)
        });
        match listed {
            Ok(cgroup) => self.cgroup = Some(cgroup),
            Err(why) => self.why_uncontained = Some(format!("{why:#}")),
        }
    }

    /// The workload's run directory, `schedlab-PID-ID` in /dev/shm when usable (no disk
    /// writeback of the counters), else in the temp dir: listed, then made.
    pub fn make_run_dir(&mut self) -> std::io::Result<tempfile::TempDir> {
        let name = format!("schedlab-{}-{}", std::process::id(), self.id);
        let shm = PathBuf::from("/dev/shm");
        let bases = if shm.is_dir() {
            vec![shm, std::env::temp_dir()]
        } else {
            vec![std::env::temp_dir()]
        };
        let mut failed = None;
        for base in bases {
            let dir = base.join(&name);
            registry_update(|r| {
                let c = r.entry(self.id).or_insert_with(Contained::empty);
                if !c.dirs.contains(&dir) {
                    c.dirs.push(dir.clone());
                }
            });
            // A leftover of a schedlab that died with this pid (ids start at 0 again).
            remove_run_dir(&dir);
            match tempfile::Builder::new()
                .prefix(&name)
                .rand_bytes(0)
                .tempdir_in(&base)
            {
                Ok(made) => {
                    self.run_dir = Some(made.path().to_path_buf());
                    return Ok(made);
                }
                Err(e) => failed = Some(e),
            }
        }
        Err(failed.unwrap_or_else(|| std::io::Error::other("no place for a run directory")))
    }

    /// The descriptor a child writes "0" to before exec (None: no cgroup).
    pub fn join_fd(&self) -> Option<RawFd> {
        self.cgroup.as_ref().map(|c| c.procs.as_raw_fd())
    }

    pub fn dir(&self) -> Option<&Path> {
        self.cgroup.as_ref().map(|c| c.dir.as_path())
    }

    /// The experiment's CPU time including every descendant, when it is contained.
    pub fn usage(&self) -> Option<&Usage> {
        self.cgroup.as_ref().map(|c| &c.usage)
    }

    /// The threads inside (None: no cgroup). A task outside it - one attached to, or
    /// moved to a preset's cgroup in the same hierarchy - is not in its CPU time.
    pub fn threads(&self) -> Option<std::collections::BTreeSet<i32>> {
        use crate::knob::fs::threads_below;
        self.cgroup
            .as_ref()
            .map(|c| threads_below(&c.dir).into_iter().collect())
    }

    /// Kill everything inside (the workload's tasks and whatever they forked) and wait
    /// for it to go; returns how many processes were killed.
    pub fn kill_all(&self) -> usize {
        self.cgroup.as_ref().map_or(0, |c| kill_all(&c.dir))
    }

    /// This container's entry in the registry, now with the workload's process groups.
    pub fn register(&self, groups: &[i32]) {
        let entry = Contained {
            cgroup: self.dir().map(Path::to_path_buf),
            groups: groups
                .iter()
                .filter_map(|&pgid| {
                    Some(Group {
                        pgid,
                        start_ticks: crate::state::process_start_ticks(pgid)?,
                    })
                })
                .collect(),
            dirs: self.run_dir.iter().cloned().collect(),
        };
        registry_update(|r| {
            r.insert(self.id, entry);
        });
    }
}

impl Default for Container {
    fn default() -> Self {
        Container::new()
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        if let Some(c) = &self.cgroup {
            kill_all(&c.dir);
            let _ = std::fs::remove_dir(&c.dir);
        }
        // Its processes are gone: the run directory goes before its registry entry.
        if let Some(dir) = &self.run_dir {
            let _ = std::fs::remove_dir_all(dir);
        }
        registry_update(|r| {
            r.remove(&self.id);
        });
    }
}

/// The cgroup2 mount, if any.
fn v2_mount(mounts: &str) -> Option<PathBuf> {
    mounts.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (_, target, fstype) = (f.next()?, f.next()?, f.next()?);
        (fstype == "cgroup2").then(|| PathBuf::from(target))
    })
}

/// The v1 mount that carries `controller` (cpuacct), if any.
fn v1_mount(mounts: &str, controller: &str) -> Option<PathBuf> {
    mounts.lines().find_map(|l| {
        let mut f = l.split_whitespace();
        let (_, target, fstype, options) = (f.next()?, f.next()?, f.next()?, f.next()?);
        (fstype == "cgroup" && options.split(',').any(|o| o == controller))
            .then(|| PathBuf::from(target))
    })
}

/// This process's cgroup path in a hierarchy: "0::/x" for v2, "N:ctrl,..:/x" for v1.
fn own_path(proc_cgroup: &str, v1_controller: Option<&str>) -> Option<String> {
    proc_cgroup.lines().find_map(|l| {
        let mut f = l.splitn(3, ':');
        let (id, ctrls, path) = (f.next()?, f.next()?, f.next()?);
        let ours = match v1_controller {
            None => id == "0" && ctrls.is_empty(),
            Some(c) => ctrls.split(',').any(|x| x == c),
        };
        ours.then(|| path.trim_start_matches('/').to_string())
    })
}

/// Make `dir`. One of the same name is a leftover of a schedlab that died with this pid
/// (pids are reused; a pid_max of 32768 comes round in hours of tests): empty of
/// processes, it is removed and made again; otherwise the error stands, and the run is
/// not put where something else lives.
fn create_fresh(dir: &Path) -> std::io::Result<()> {
    match std::fs::create_dir(dir) {
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
            // rmdir of a cgroup fails while it holds a process or a child group.
            std::fs::remove_dir(dir).map_err(|_| e)?;
            std::fs::create_dir(dir)
        }
        other => other,
    }
}

/// A fresh cgroup beside schedlab's own: v2 first, v1 cpuacct second. It is made in
/// schedlab's own cgroup so its tasks keep the same place in the CPU controller's tree
/// (a group with no controllers enabled changes nothing about how they are scheduled).
fn make_cgroup(name: &str, mut listed: impl FnMut(Option<PathBuf>)) -> anyhow::Result<Cgroup> {
    use anyhow::Context;
    let mounts = std::fs::read_to_string("/proc/self/mounts").context("/proc/self/mounts")?;
    let mine = std::fs::read_to_string("/proc/self/cgroup").context("/proc/self/cgroup")?;
    let mut tried = Vec::new();
    // `SCHEDLAB_CONTAIN=v1|v2|groups` picks one kind (to test each on a machine that has
    // both, or to keep a run out of cgroups).
    let only = std::env::var("SCHEDLAB_CONTAIN").ok();
    let wanted = |v2: bool| match only.as_deref() {
        Some("v2") => v2,
        Some("v1") => !v2,
        Some(_) => false,
        None => true,
    };
    let candidates = [
        v2_mount(&mounts)
            .zip(own_path(&mine, None))
            .map(|(m, p)| (m.join(p), true)),
        v1_mount(&mounts, "cpuacct")
            .zip(own_path(&mine, Some("cpuacct")))
            .map(|(m, p)| (m.join(p), false)),
    ];
    for (parent, v2) in candidates
        .into_iter()
        .flatten()
        .filter(|(_, v2)| wanted(*v2))
    {
        let dir = parent.join(name);
        // Listed before it exists: a SIGKILL from here on leaves it findable.
        listed(Some(dir.clone()));
        if let Err(e) = create_fresh(&dir) {
            tried.push(format!("{}: {e}", parent.display()));
            listed(None);
            continue;
        }
        let usage = if v2 {
            Usage::V2(dir.join("cpu.stat"))
        } else {
            Usage::V1(dir.join("cpuacct.usage"))
        };
        match std::fs::OpenOptions::new()
            .write(true)
            .open(dir.join("cgroup.procs"))
        {
            Ok(file) if usage.read_ns().is_some() => {
                match nix::fcntl::fcntl(&file, nix::fcntl::FcntlArg::F_DUPFD_CLOEXEC(64)) {
                    // SAFETY: F_DUPFD_CLOEXEC returned a new descriptor that only we own.
                    Ok(fd) => {
                        let procs = unsafe { std::os::fd::FromRawFd::from_raw_fd(fd) };
                        return Ok(Cgroup { dir, procs, usage });
                    }
                    Err(e) => tried.push(format!("{}: {e}", dir.display())),
                }
            }
            Ok(_) => tried.push(format!("{}: no CPU usage file", dir.display())),
            Err(e) => tried.push(format!("{}: {e}", dir.display())),
        }
        if std::fs::remove_dir(&dir).is_ok() {
            listed(None);
        }
    }
    Err(anyhow::anyhow!(if only.as_deref() == Some("groups") {
        "SCHEDLAB_CONTAIN=groups".to_string()
    } else if tried.is_empty() {
        "no cgroup hierarchy is mounted".to_string()
    } else {
        format!("no cgroup could be made ({})", tried.join("; "))
    }))
}

/// One process group of a workload, named by its leader's pid and start time.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Group {
    pgid: i32,
    start_ticks: u64,
}

/// What one workload of a live schedlab contains, or is about to make.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Contained {
    cgroup: Option<PathBuf>,
    groups: Vec<Group>,
    /// Directories it made (its run directory in /dev/shm).
    dirs: Vec<PathBuf>,
}

impl Contained {
    fn empty() -> Contained {
        Contained {
            cgroup: None,
            groups: Vec::new(),
            dirs: Vec::new(),
        }
    }
}

/// A registry file: one schedlab process and its workloads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Record {
    schedlab_run: u32,
    pid: i32,
    start_ticks: u64,
    contained: Vec<Contained>,
}

/// This process's workloads, by container id, mirrored in its registry file.
static REGISTERED: Mutex<BTreeMap<u64, Contained>> = Mutex::new(BTreeMap::new());

fn registry_dir() -> Option<PathBuf> {
    let dir = crate::state::dir().ok()?.join("runs");
    crate::state::ensure_dir(&dir, nix::unistd::geteuid().as_raw()).ok()?;
    Some(dir)
}

/// Change this process's entries and write its registry file (removed when empty).
fn registry_update(change: impl FnOnce(&mut BTreeMap<u64, Contained>)) {
    let mut reg = REGISTERED.lock().unwrap_or_else(|e| e.into_inner());
    change(&mut reg);
    let Some(dir) = registry_dir() else {
        return;
    };
    let me = std::process::id() as i32;
    let path = dir.join(format!("{me}.json"));
    if reg.is_empty() {
        let _ = std::fs::remove_file(&path);
        return;
    }
    let record = Record {
        schedlab_run: 1,
        pid: me,
        start_ticks: crate::state::process_start_ticks(me).unwrap_or(0),
        contained: reg.values().cloned().collect(),
    };
    if let Ok(text) = serde_json::to_vec(&record) {
        let _ = crate::state::write_atomic(&path, &text);
    }
}

/// Processes whose process group is `g.pgid`, if that group is still the one recorded:
/// while any member lives the number cannot be reused; a leader alive with another
/// start time means it was.
fn group_members(g: &Group) -> Vec<i32> {
    if let Some(start) = crate::state::process_start_ticks(g.pgid) {
        if start != g.start_ticks {
            return Vec::new();
        }
    }
    in_process_groups(&[g.pgid])
}

/// Every process (zombies too) whose process group is one of `pgids`, from one pass
/// over /proc.
pub(super) fn in_process_groups(pgids: &[i32]) -> Vec<i32> {
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    procs
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
        .filter(|&pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|s| {
                    let (_, rest) = s.rsplit_once(')')?;
                    rest.split_whitespace().nth(2)?.parse::<i32>().ok()
                })
                .is_some_and(|g| pgids.contains(&g))
        })
        .collect()
}

/// Kill what schedlabs that are gone left in the registry; one line per schedlab.
pub fn clean_stale() -> Vec<String> {
    let Some(dir) = registry_dir() else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in entries.flatten() {
        let path = e.path();
        if let Some(writer) = temp_writer(&path) {
            // A registry file half written by a schedlab killed in the write.
            if crate::state::process_start_ticks(writer).is_none() {
                let _ = std::fs::remove_file(&path);
            }
            continue;
        }
        if path.extension().is_none_or(|x| x != "json") {
            continue;
        }
        let Ok(text) = crate::state::read_own(&path) else {
            continue;
        };
        let Ok(record) = serde_json::from_str::<Record>(&text) else {
            out.push(format!(
                "{} is not a run record; removed it",
                path.display()
            ));
            let _ = std::fs::remove_file(&path);
            continue;
        };
        let alive = crate::state::process_start_ticks(record.pid) == Some(record.start_ticks);
        if alive || record.pid == std::process::id() as i32 {
            continue;
        }
        let mut killed = 0;
        let mut stuck = Vec::new();
        for c in &record.contained {
            if let Some(cg) = c
                .cgroup
                .as_deref()
                .filter(|p| crate::knob::journal::is_own_cgroup(p))
            {
                killed += kill_all(cg);
                if let Err(e) = remove_cgroup(cg) {
                    stuck.push(format!("{}: {e}", cg.display()));
                }
            }
            for g in &c.groups {
                let members = group_members(g);
                for &pid in &members {
                    let _ = nix::sys::signal::kill(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                killed += members.len();
            }
            for d in &c.dirs {
                remove_run_dir(d);
            }
        }
        if !stuck.is_empty() {
            // Kept, so the next start or `schedlab restore` tries again.
            out.push(format!(
                "an earlier schedlab (pid {}) left cgroups that could not be removed yet ({}); its record stays at {}",
                record.pid,
                stuck.join("; "),
                path.display()
            ));
            continue;
        }
        let _ = std::fs::remove_file(&path);
        out.push(match killed {
            0 => format!(
                "an earlier schedlab (pid {}) was gone; nothing of it was left running",
                record.pid
            ),
            n => format!(
                "an earlier schedlab (pid {}) left {n} process{} running; killed {}",
                record.pid,
                if n == 1 { "" } else { "es" },
                if n == 1 { "it" } else { "them" }
            ),
        });
    }
    out
}

/// Remove an emptied cgroup (gone already is fine). A cgroup whose maker was killed a
/// moment ago can be busy (EBUSY) for a few ms while the kernel lets go of it: tried
/// again for up to a second.
fn remove_cgroup(dir: &Path) -> std::io::Result<()> {
    let start = std::time::Instant::now();
    loop {
        match std::fs::remove_dir(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(_) if start.elapsed() < std::time::Duration::from_secs(1) => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            other => return other,
        }
    }
}

/// The pid that wrote `path` if it is a temp file of [`crate::state::write_atomic`]
/// (`PID.tmpWRITER`).
fn temp_writer(path: &Path) -> Option<i32> {
    let ext = path.extension()?.to_str()?;
    ext.strip_prefix("tmp")?.parse().ok()
}

/// Remove a run directory a dead schedlab listed: only one named like ours, in a place
/// schedlab makes them, and owned by this user.
fn remove_run_dir(dir: &Path) {
    use std::os::unix::fs::MetadataExt;
    let named = dir
        .file_name()
        .is_some_and(|n| n.to_string_lossy().starts_with("schedlab-"));
    let placed = [PathBuf::from("/dev/shm"), std::env::temp_dir()]
        .iter()
        .any(|base| dir.parent() == Some(base.as_path()));
    let owned = std::fs::symlink_metadata(dir)
        .is_ok_and(|m| m.is_dir() && m.uid() == nix::unistd::geteuid().as_raw());
    if named && placed && owned {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// How many processes are in a container's cgroup (tests and the report).
pub fn count_in(dir: &Path) -> usize {
    procs_below(dir).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leftover_of_the_same_name_is_made_again_only_when_empty() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path().join("schedlab-run-1-0");
        create_fresh(&dir).expect("new");
        // Empty (a dead run's group with no process left): removed and made again.
        create_fresh(&dir).expect("a leftover");
        assert!(dir.is_dir());
        // Not empty (something lives there): the error stands and it is left alone.
        std::fs::write(dir.join("inside"), "x").expect("write");
        let e = create_fresh(&dir).expect_err("in use");
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert!(dir.join("inside").exists());
    }

    #[test]
    fn own_cgroup_paths_from_proc_self_cgroup() {
        let hybrid = "4:memory:/process_api/x\n2:cpuacct:/\n1:cpu:/\n0::/\n";
        assert_eq!(own_path(hybrid, None).as_deref(), Some(""));
        assert_eq!(own_path(hybrid, Some("cpuacct")).as_deref(), Some(""));
        let v2 = "0::/user.slice/user-1000.slice/session-2.scope\n";
        assert_eq!(
            own_path(v2, None).as_deref(),
            Some("user.slice/user-1000.slice/session-2.scope")
        );
        assert_eq!(own_path(v2, Some("cpuacct")), None);
        let mounts = "cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0\n\
            cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        assert_eq!(
            v2_mount(mounts),
            Some(PathBuf::from("/sys/fs/cgroup/unified"))
        );
        assert_eq!(
            v1_mount(mounts, "cpuacct"),
            Some(PathBuf::from("/sys/fs/cgroup/cpuacct"))
        );
        assert_eq!(v1_mount(mounts, "cpu"), None);
    }
}
