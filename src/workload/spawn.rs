//! Starting a preset's tasks: one process per task (or per shared `process`), pipes
//! between them, each in its own process group with PR_SET_PDEATHSIG so none outlives
//! schedlab, and a start gate so settings apply before any work is measured.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use command_fds::{CommandFdExt, FdMapping};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::kinds::WorkerKind;
use super::make::makefile;
use super::shm::{state, Shm};
use super::workers::{ThreadSpec, DATA_IN_FD, DATA_OUT_FD};
use crate::preset::{Program, TaskSpec};

/// How long the workers get to publish their TIDs.
const READY_TIMEOUT: Duration = Duration::from_secs(10);

/// One started task: where it lives and which shared-memory slot it reports to.
#[derive(Clone, Debug, PartialEq)]
pub struct RunningTask {
    pub name: String,
    pub group: String,
    pub pid: i32,
    pub tid: i32,
    pub slot: usize,
    pub kind: Option<WorkerKind>,
    /// What the task's progress counts ("" for external commands, which report none).
    pub progress_unit: &'static str,
}

struct Proc {
    child: Child,
    /// Slots of the tasks this process hosts.
    slots: Vec<usize>,
    status: Option<ExitStatus>,
}

/// The running workload. Dropping it kills every task.
pub struct Workload {
    shm: Arc<Shm>,
    dir: tempfile::TempDir,
    procs: Vec<Proc>,
    pub tasks: Vec<RunningTask>,
}

/// /dev/shm when usable (no disk writeback of the counters), else the temp dir.
fn run_dir() -> Result<tempfile::TempDir> {
    let prefix = format!("schedlab-{}-", std::process::id());
    let shm = Path::new("/dev/shm");
    let base = if shm.is_dir() {
        shm.to_path_buf()
    } else {
        std::env::temp_dir()
    };
    tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(&base)
        .or_else(|_| tempfile::Builder::new().prefix(&prefix).tempdir())
        .context("creating the run directory")
}

/// Remove run directories of schedlab processes that no longer exist (after a SIGKILL).
pub fn remove_stale_run_dirs() {
    for base in [PathBuf::from("/dev/shm"), std::env::temp_dir()] {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().to_string();
            let Some(pid) = name
                .strip_prefix("schedlab-")
                .and_then(|r| r.split('-').next())
                .and_then(|p| p.parse::<i32>().ok())
            else {
                continue;
            };
            if !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// The tasks `i` takes turns with: the other tasks of its group, for workers that
/// measure a hand-over between partners (yield).
fn partners(specs: &[TaskSpec], i: usize) -> Vec<usize> {
    let me = &specs[i];
    if me.program.kind() != Some(WorkerKind::Yield) {
        return Vec::new();
    }
    (0..specs.len())
        .filter(|&j| j != i && specs[j].group == me.group && specs[j].program == me.program)
        .collect()
}

impl Workload {
    /// Spawn every task and wait until each has published its TID; work starts only at
    /// [`Workload::open_gate`]. `exe` is the schedlab binary (workers are its hidden
    /// subcommands). Call from a thread that lives as long as the workload: the kernel's
    /// parent-death signal follows the spawning thread, not the process.
    pub fn start(specs: &[TaskSpec], exe: &Path) -> Result<Workload> {
        let dir = run_dir()?;
        let shm_path = dir.path().join("shm");
        let shm = Arc::new(Shm::create(&shm_path, specs.len())?);
        let log = File::create(dir.path().join("stderr.log")).context("creating the worker log")?;

        let mut pipes: BTreeMap<&str, (Option<OwnedFd>, Option<OwnedFd>)> = BTreeMap::new();
        for s in specs {
            if let Some(p) = &s.stdout {
                let (r, w) =
                    nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("creating a pipe")?;
                pipes.insert(p.as_str(), (Some(r), Some(w)));
            }
        }

        // Tasks sharing a `process` name become threads of one process.
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, s) in specs.iter().enumerate() {
            match s.process.as_deref().and_then(|p| by_name.get(p)) {
                Some(&g) => groups[g].push(i),
                None => {
                    if let Some(p) = s.process.as_deref() {
                        by_name.insert(p, groups.len());
                    }
                    groups.push(vec![i]);
                }
            }
        }

        let mut workload = Workload {
            shm: Arc::clone(&shm),
            dir,
            procs: Vec::new(),
            tasks: Vec::new(),
        };
        for members in groups {
            let first = &specs[members[0]];
            let mut cmd = Command::new(exe);
            match &first.program {
                Program::Worker {
                    kind: WorkerKind::Make,
                    params,
                } => {
                    let mf = workload.dir.path().join("Makefile");
                    std::fs::write(&mf, makefile(exe, &shm_path, members[0], params))
                        .context("writing the Makefile")?;
                    let jobs = params.get("jobs").copied().unwrap_or(1);
                    cmd.args(["__exec", "--shm"])
                        .arg(&shm_path)
                        .args(["--slot", &members[0].to_string(), "--", "make", "-s"])
                        .arg(format!("-j{jobs}"))
                        .arg("-f")
                        .arg(&mf)
                        .current_dir(workload.dir.path());
                }
                Program::Worker { .. } => {
                    let threads: Vec<ThreadSpec> = members
                        .iter()
                        .filter_map(|&i| match &specs[i].program {
                            Program::Worker { kind, params } => Some(ThreadSpec {
                                slot: i,
                                kind: *kind,
                                params: params.clone(),
                                poll_stdin: specs[i].poll_stdin,
                                partners: partners(specs, i),
                            }),
                            Program::Command(_) => None,
                        })
                        .collect();
                    cmd.args(["__worker", "--shm"])
                        .arg(&shm_path)
                        .arg("--threads")
                        .arg(serde_json::to_string(&threads)?);
                }
                Program::Command(argv) => {
                    cmd.args(["__exec", "--shm"])
                        .arg(&shm_path)
                        .args(["--slot", &members[0].to_string()]);
                    if first.stdin.is_some() {
                        cmd.arg("--stdin-pipe");
                    }
                    if first.stdout.is_some() {
                        cmd.arg("--stdout-pipe");
                    }
                    if first.poll_stdin {
                        cmd.arg("--poll-stdin");
                    }
                    cmd.arg("--").args(argv);
                }
            }
            // The experiment's pipe ends go to fds 3 and 4, never 0-2: Rust's runtime
            // polls fds 0-2 before main, and one poll arms a pipe's poll_usage for life
            // (every later write then runs the wake-up path). `__exec` moves them to 0/1
            // just before it becomes the command.
            let mut take = |name: &Option<String>, read: bool| -> Option<OwnedFd> {
                name.as_deref()
                    .and_then(|n| pipes.get_mut(n))
                    .and_then(|(r, w)| if read { r.take() } else { w.take() })
            };
            let mut mappings = Vec::new();
            if let Some(fd) = take(&first.stdin, true) {
                mappings.push(FdMapping {
                    parent_fd: fd,
                    child_fd: DATA_IN_FD,
                });
            }
            if let Some(fd) = take(&first.stdout, false) {
                mappings.push(FdMapping {
                    parent_fd: fd,
                    child_fd: DATA_OUT_FD,
                });
            }
            cmd.fd_mappings(mappings)
                .context("passing the pipe ends to a task")?;
            cmd.stdin(Stdio::null());
            cmd.stdout(Stdio::null());
            cmd.stderr(log.try_clone().map_or_else(|_| Stdio::null(), Stdio::from));
            let parent = std::process::id() as i32;
            // SAFETY: only async-signal-safe calls (setpgid, prctl, getppid, _exit) run
            // between fork and exec.
            unsafe {
                cmd.pre_exec(move || {
                    libc::setpgid(0, 0);
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
                    if libc::getppid() != parent {
                        libc::_exit(1);
                    }
                    Ok(())
                });
            }
            let child = cmd
                .spawn()
                .with_context(|| format!("starting task \"{}\" ({})", first.name, exe.display()))?;
            workload.procs.push(Proc {
                child,
                slots: members,
                status: None,
            });
            // The Command (and its copies of our pipe ends) drops here, so readers see EOF
            // when their writer exits.
        }
        drop(pipes);
        workload.wait_ready(specs)?;
        Ok(workload)
    }

    fn wait_ready(&mut self, specs: &[TaskSpec]) -> Result<()> {
        let start = Instant::now();
        loop {
            let ready = (0..specs.len())
                .all(|i| self.shm.slot(i).state.load(Ordering::Acquire) >= state::READY);
            if ready {
                break;
            }
            for p in &mut self.procs {
                if let Some(status) = p.child.try_wait()? {
                    let name = &specs[p.slots[0]].name;
                    bail!(
                        "task \"{name}\" exited before it started ({status}): {}",
                        self.log_tail()
                    );
                }
            }
            if start.elapsed() > READY_TIMEOUT {
                bail!(
                    "tasks did not start within {READY_TIMEOUT:?}: {}",
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        for p in &self.procs {
            for &i in &p.slots {
                let s = &specs[i];
                let kind = s.program.kind();
                self.tasks.push(RunningTask {
                    name: s.name.clone(),
                    group: s.group.clone(),
                    pid: p.child.id() as i32,
                    tid: self.shm.slot(i).tid.load(Ordering::Acquire),
                    slot: i,
                    kind,
                    progress_unit: kind.map_or("", WorkerKind::progress_unit),
                });
            }
        }
        self.tasks.sort_by_key(|t| t.slot);
        Ok(())
    }

    /// The last line the workers wrote to stderr, for error messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("stderr.log")).unwrap_or_default();
        text.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map_or_else(|| "no error output".to_string(), str::to_string)
    }

    pub fn shm(&self) -> Arc<Shm> {
        Arc::clone(&self.shm)
    }

    /// Start the work: every task waiting at the gate begins its loop.
    pub fn open_gate(&self) {
        self.shm.open_gate();
    }

    /// Collect processes that have exited; returns (task names, status) for new exits.
    pub fn reap(&mut self) -> Vec<(Vec<String>, ExitStatus)> {
        let mut out = Vec::new();
        for p in &mut self.procs {
            if p.status.is_some() {
                continue;
            }
            if let Ok(Some(status)) = p.child.try_wait() {
                p.status = Some(status);
                let names = self
                    .tasks
                    .iter()
                    .filter(|t| p.slots.contains(&t.slot))
                    .map(|t| t.name.clone())
                    .collect();
                out.push((names, status));
            }
        }
        out
    }

    /// True once every task's process has exited.
    pub fn all_exited(&mut self) -> bool {
        self.reap();
        self.procs.iter().all(|p| p.status.is_some())
    }

    pub fn exit_status(&self, task: &RunningTask) -> Option<ExitStatus> {
        self.procs
            .iter()
            .find(|p| p.slots.contains(&task.slot))
            .and_then(|p| p.status)
    }

    /// Kill every task (its whole process group: make's jobs too) and reap it.
    pub fn stop(&mut self) {
        // A task must run to die. One starved by another RT spinner on its CPU (a second
        // schedlab, or anyone's FIFO load) would hold up the exit for as long as that
        // spinner runs: first let it run anywhere, as an ordinary task.
        let online = crate::system::online_cpus();
        for t in &self.tasks {
            if self
                .procs
                .iter()
                .any(|p| p.status.is_none() && p.slots.contains(&t.slot))
            {
                let _ = crate::knob::task::set_affinity(t.tid, &online);
                let _ = crate::knob::task::set_policy(
                    t.tid,
                    &crate::knob::task::SchedSettings::default(),
                );
            }
        }
        for p in &mut self.procs {
            if p.status.is_none() {
                let _ = killpg(Pid::from_raw(p.child.id() as i32), Signal::SIGKILL);
                let _ = p.child.kill();
                p.status = p.child.wait().ok();
            }
        }
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        self.stop();
    }
}
