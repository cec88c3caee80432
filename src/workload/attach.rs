//! Finding tasks schedlab did not start: the processes `--pid` and `--name` name, with
//! their threads and every process they forked, refused in one line when they cannot
//! be attached (gone, a kernel thread, schedlab itself).

use std::collections::{BTreeMap, BTreeSet};

use regex_lite::Regex;

use super::MAX_COUNT;
use crate::error::Invalid;

/// One thread of an attached process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForeignTask {
    pub pid: i32,
    pub tid: i32,
    /// The thread's command name.
    pub comm: String,
    /// Its process's command name.
    pub process: String,
}

/// Which processes to attach to.
#[derive(Clone, Debug, Default)]
pub struct Selector {
    pub pids: Vec<i32>,
    pub name: Option<Regex>,
}

impl Selector {
    pub fn is_empty(&self) -> bool {
        self.pids.is_empty() && self.name.is_none()
    }

    /// `--name REGEX`, checked before anything starts.
    pub fn parse_name(re: &str) -> Result<Regex, Invalid> {
        Regex::new(re).map_err(|e| {
            // A parser's message may span lines (the pattern, a caret, the error): keep the last.
            let text = e.to_string();
            let why = text.lines().last().unwrap_or_default().trim().to_string();
            Invalid(format!("--name {re}: not a regular expression: {why}"))
        })
    }
}

/// What /proc says about one process.
struct Proc {
    ppid: i32,
    comm: String,
    kernel: bool,
}

/// PF_KTHREAD in /proc/PID/stat's flags (include/linux/sched.h).
const PF_KTHREAD: u32 = 0x0020_0000;

fn read_proc(pid: i32) -> Option<Proc> {
    let stat = procfs::process::Process::new(pid).ok()?.stat().ok()?;
    Some(Proc {
        ppid: stat.ppid,
        kernel: stat.flags & PF_KTHREAD != 0 || pid == 2 || stat.ppid == 2,
        comm: stat.comm,
    })
}

fn all_procs() -> BTreeMap<i32, Proc> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return BTreeMap::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| Some((pid, read_proc(pid)?)))
        .collect()
}

/// The process a pid belongs to (a thread id given to --pid names its process).
fn tgid_of(pid: i32) -> Option<i32> {
    Some(procfs::process::Process::new(pid).ok()?.status().ok()?.tgid)
}

/// A process as it is now: its pid (the process a thread id given belongs to), its start
/// time in clock ticks after boot (with the pid, one process even after the pid is
/// reused) and its name; None once it is gone.
pub fn identity(pid: i32) -> Option<(i32, u64, String)> {
    let tgid = tgid_of(pid)?;
    let stat = procfs::process::Process::new(tgid).ok()?.stat().ok()?;
    Some((tgid, stat.starttime, stat.comm))
}

/// A process's start time while it runs (None once it exited, a zombie included: it
/// has nothing left to attach to).
pub fn running_start(pid: i32) -> Option<u64> {
    let stat = procfs::process::Process::new(pid).ok()?.stat().ok()?;
    (!matches!(stat.state, 'Z' | 'X')).then_some(stat.starttime)
}

/// schedlab itself: attaching to it would turn schedlab's knobs on schedlab (its
/// workers do not exist yet when the selector is resolved, and [`tree`] never descends
/// into it, so attaching to the shell that started schedlab leaves schedlab out).
fn is_own(pid: i32) -> bool {
    pid == std::process::id() as i32
}

/// The processes the selector names, checked: explicit pids must be user processes
/// other than schedlab; a name must match at least one.
pub fn roots(sel: &Selector) -> Result<Vec<i32>, Invalid> {
    let procs = all_procs();
    let mut roots = BTreeSet::new();
    for &given in &sel.pids {
        let pid =
            tgid_of(given).ok_or_else(|| Invalid(format!("--pid {given}: no such process")))?;
        let p = procs
            .get(&pid)
            .ok_or_else(|| Invalid(format!("--pid {given}: no such process")))?;
        if p.kernel {
            return Err(Invalid(format!(
                "--pid {given} ({}) is a kernel thread: schedlab attaches to user processes only",
                p.comm
            )));
        }
        if is_own(pid) {
            return Err(Invalid(format!("--pid {given} is this schedlab")));
        }
        roots.insert(pid);
    }
    if let Some(re) = &sel.name {
        let matched: Vec<i32> = procs
            .iter()
            .filter(|(pid, p)| !p.kernel && re.is_match(&p.comm) && !is_own(**pid))
            .map(|(pid, _)| *pid)
            .collect();
        if matched.is_empty() {
            return Err(Invalid(format!(
                "--name {re}: no user process has a matching name (names are what `ps -e -o comm` shows)"
            )));
        }
        roots.extend(matched);
    }
    Ok(roots.into_iter().collect())
}

/// Every thread of the roots and of every process they forked (and those forked),
/// processes in pid order, each process's threads in tid order.
pub fn tree(roots: &[i32]) -> Vec<ForeignTask> {
    let procs = all_procs();
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    for (pid, p) in &procs {
        children.entry(p.ppid).or_default().push(*pid);
    }
    let mut members = BTreeSet::new();
    let mut todo: Vec<i32> = roots.to_vec();
    while let Some(pid) = todo.pop() {
        if procs.get(&pid).is_some_and(|p| !p.kernel) && !is_own(pid) && members.insert(pid) {
            todo.extend(children.get(&pid).into_iter().flatten());
        }
    }
    let mut out = Vec::new();
    for pid in members {
        let process = procs.get(&pid).map(|p| p.comm.clone()).unwrap_or_default();
        for tid in threads(pid) {
            let Some((_, comm)) = crate::knob::foreign::identity(pid, tid) else {
                continue;
            };
            out.push(ForeignTask {
                pid,
                tid,
                comm,
                process: process.clone(),
            });
        }
    }
    out
}

fn threads(pid: i32) -> Vec<i32> {
    let Ok(dir) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut tids: Vec<i32> = dir
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    tids.sort_unstable();
    tids
}

/// One process in the picker's tree.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcRow {
    pub pid: i32,
    /// How deep below its tree's root (0: a process whose parent is not listed).
    pub depth: usize,
    pub comm: String,
    pub threads: usize,
}

/// Every user process but schedlab, as a tree like htop's: each process followed by its
/// children (by pid), indented by depth.
pub fn process_tree() -> Vec<ProcRow> {
    let procs = all_procs();
    let listed = |pid: &i32| procs.get(pid).is_some_and(|p| !p.kernel) && !is_own(*pid);
    let mut children: BTreeMap<i32, Vec<i32>> = BTreeMap::new();
    let mut tops = Vec::new();
    for (pid, p) in procs.iter().filter(|(pid, _)| listed(pid)) {
        if listed(&p.ppid) {
            children.entry(p.ppid).or_default().push(*pid);
        } else {
            tops.push(*pid);
        }
    }
    let mut out = Vec::new();
    let mut todo: Vec<(i32, usize)> = tops.into_iter().rev().map(|p| (p, 0)).collect();
    while let Some((pid, depth)) = todo.pop() {
        if let Some(p) = procs.get(&pid) {
            out.push(ProcRow {
                pid,
                depth,
                comm: p.comm.clone(),
                threads: threads(pid).len(),
            });
        }
        for &c in children.get(&pid).into_iter().flatten().rev() {
            todo.push((c, depth + 1));
        }
    }
    out
}

/// The tasks to attach to at the start: at least one, at most [`MAX_COUNT`].
pub fn find(sel: &Selector) -> Result<Vec<ForeignTask>, Invalid> {
    let found = tree(&roots(sel)?);
    if found.is_empty() {
        return Err(Invalid::new(
            "the processes named exited before schedlab could attach",
        ));
    }
    if found.len() > MAX_COUNT {
        return Err(Invalid(format!(
            "the processes named have {} threads: schedlab attaches to at most {MAX_COUNT} (name fewer processes)",
            found.len()
        )));
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sleeper() -> std::process::Child {
        std::process::Command::new("sleep")
            .arg("30")
            .spawn()
            .expect("sleep")
    }

    /// `sh` that forks a `sleep` and waits for it; both killed when dropped (sh leads its
    /// own process group, so its `sleep` is not left behind as an orphan).
    struct ShWithChild(std::process::Child);

    impl ShWithChild {
        fn start() -> ShWithChild {
            use std::os::unix::process::CommandExt;
            ShWithChild(
                std::process::Command::new("sh")
                    .args(["-c", "sleep 30; true"])
                    .process_group(0)
                    .spawn()
                    .expect("sh"),
            )
        }

        fn pid(&self) -> i32 {
            self.0.id() as i32
        }

        /// `look` until `forked` says sh's child is in what it returned (bounded: 2 s,
        /// sh forks within milliseconds).
        fn after_fork<T>(&self, look: impl Fn() -> T, forked: impl Fn(&T) -> bool) -> T {
            let start = std::time::Instant::now();
            loop {
                let got = look();
                if forked(&got) || start.elapsed() > std::time::Duration::from_secs(2) {
                    return got;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
    }

    impl Drop for ShWithChild {
        fn drop(&mut self) {
            let group = nix::unistd::Pid::from_raw(-self.pid());
            let _ = nix::sys::signal::kill(group, nix::sys::signal::Signal::SIGKILL);
            let _ = self.0.wait();
        }
    }

    #[test]
    fn a_pid_finds_its_process_and_the_children_it_forked() {
        let sh = ShWithChild::start();
        let pid = sh.pid();
        let found = sh.after_fork(
            || {
                find(&Selector {
                    pids: vec![pid],
                    name: None,
                })
                .expect("attachable")
            },
            |f| f.iter().any(|t| t.process == "sleep"),
        );
        assert_eq!(found[0].pid, pid);
        assert_eq!(found[0].tid, pid, "the main thread first");
        assert_eq!(found[0].comm, "sh");
        assert!(
            found.iter().any(|t| t.process == "sleep" && t.pid != pid),
            "sh's child: {found:?}"
        );
    }

    #[test]
    fn a_name_matches_by_process_name() {
        let mut child = sleeper();
        let re = Selector::parse_name("^sleep$").expect("regex");
        let found = find(&Selector {
            pids: vec![],
            name: Some(re),
        });
        let _ = child.kill();
        let _ = child.wait();
        let found = found.expect("a sleep runs");
        assert!(
            found.iter().any(|t| t.pid == child.id() as i32),
            "{found:?}"
        );
        assert!(found.iter().all(|t| t.process == "sleep"));
    }

    #[test]
    fn the_tree_lists_a_child_under_its_parent_and_leaves_out_kernel_threads() {
        let sh = ShWithChild::start();
        let pid = sh.pid();
        let rows = sh.after_fork(process_tree, |rows| {
            let at = rows.iter().position(|r| r.pid == pid);
            at.is_some_and(|i| rows.get(i + 1).is_some_and(|r| r.comm == "sleep"))
        });
        let at = rows.iter().position(|r| r.pid == pid).expect("sh listed");
        assert_eq!(
            rows[at + 1].comm,
            "sleep",
            "the child right below its parent"
        );
        assert_eq!(rows[at + 1].depth, rows[at].depth + 1);
        assert_eq!(rows[at].threads, 1);
        assert!(rows.iter().all(|r| r.pid != 2), "kthreadd is not listed");
        assert!(
            rows.iter().all(|r| r.pid != std::process::id() as i32),
            "nor is schedlab"
        );
    }

    #[test]
    fn refusals_name_the_pid_and_why() {
        let e = roots(&Selector {
            pids: vec![i32::MAX - 1],
            name: None,
        })
        .unwrap_err()
        .0;
        assert!(e.contains("no such process"), "{e}");
        // kthreadd is pid 2 on every Linux.
        let e = roots(&Selector {
            pids: vec![2],
            name: None,
        })
        .unwrap_err()
        .0;
        assert!(e.contains("kernel thread"), "{e}");
        let me = std::process::id() as i32;
        let e = roots(&Selector {
            pids: vec![me],
            name: None,
        })
        .unwrap_err()
        .0;
        assert!(e.contains("this schedlab"), "{e}");
        let e = Selector::parse_name("(").unwrap_err().0;
        assert!(e.contains("not a regular expression"), "{e}");
        let e = roots(&Selector {
            pids: vec![],
            name: Some(Selector::parse_name("^no-such-process-here$").expect("re")),
        })
        .unwrap_err()
        .0;
        assert!(e.contains("no user process"), "{e}");
    }
}
