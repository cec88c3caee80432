//! Starting a preset's tasks: one process per task (or per shared `process`), pipes
//! between them, each in its own process group with PR_SET_PDEATHSIG so none outlives
//! schedlab, and a start gate so settings apply before any work is measured.

use std::collections::BTreeMap;
use std::fs::File;
use std::os::fd::OwnedFd;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use command_fds::{CommandFdExt, FdMapping};
use nix::sys::signal::{killpg, Signal};
use nix::unistd::Pid;

use super::contain::Container;
use super::kinds::WorkerKind;
use super::make::makefile;
use super::shm::{state, Shm};
use super::spec::{Program, TaskSpec};
use super::workers::{ThreadSpec, DATA_IN_FD, DATA_OUT_FD};

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
    /// schedlab did not start it (`--pid`, `--name`): it has no shared-memory slot, is
    /// never killed, and leaves with its settings put back.
    pub foreign: bool,
}

impl RunningTask {
    /// Whether the task still exists (for a foreign one: its /proc entry; pid reuse
    /// within a run is not a concern at the kernel's pid_max of 4 million).
    fn foreign_alive(&self) -> bool {
        std::path::Path::new(&format!("/proc/{}/task/{}", self.pid, self.tid)).exists()
    }
}

struct Proc {
    child: Child,
    /// Slots of the tasks this process hosts.
    slots: Vec<usize>,
    status: Option<ExitStatus>,
    /// It was still running when the workload was stopped: its status is our kill.
    killed: bool,
}

/// The running workload. Dropping it kills every task and everything they forked.
pub struct Workload {
    shm: Arc<Shm>,
    procs: Vec<Proc>,
    pub tasks: Vec<RunningTask>,
    /// Holds every process of the workload, and lists `dir` in the run registry (dropped
    /// before `dir`: it empties itself, removes the run directory, then unlists both).
    container: Container,
    dir: tempfile::TempDir,
}

/// A task's command cannot be run: named before anything starts.
#[derive(Debug, thiserror::Error)]
#[error("task \"{task}\": cannot run \"{program}\": {why}")]
pub struct CannotRun {
    pub task: String,
    pub program: String,
    pub why: String,
}

/// Find `program` as execvp would (a path, or a name searched in PATH) and check that
/// it is an executable file.
fn check_runnable(task: &str, program: &str) -> Result<(), CannotRun> {
    use std::os::unix::fs::PermissionsExt;
    let fail = |why: &str| CannotRun {
        task: task.to_string(),
        program: program.to_string(),
        why: why.to_string(),
    };
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        return match std::fs::metadata(program) {
            Err(_) => Err(fail("no such file")),
            Ok(_) if !executable(Path::new(program)) => Err(fail("not an executable file")),
            Ok(_) => Ok(()),
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    if std::env::split_paths(&path).any(|d| executable(&d.join(program))) {
        Ok(())
    } else {
        Err(fail("not found in PATH"))
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
        for s in specs {
            if let Program::Command(argv) = &s.program {
                if let Some(program) = argv.first() {
                    check_runnable(&s.name, program)?;
                }
            }
        }
        // The run directory and the cgroup are each listed in the run registry before
        // they are made, so a SIGKILL mid-start still finds them; the process groups
        // are added once known.
        let mut container = Container::new();
        let dir = container
            .make_run_dir()
            .context("creating the run directory")?;
        let shm_path = dir.path().join("shm");
        let shm = Arc::new(Shm::create(&shm_path, specs.len())?);
        let log = File::create(dir.path().join("stderr.log")).context("creating the worker log")?;
        container.contain();
        let join_fd = container.join_fd();
        let mut pipes = make_pipes(specs)?;
        let spawned: Vec<usize> = (0..specs.len())
            .filter(|&i| !specs[i].program.is_attached())
            .collect();
        let mut workload = Workload {
            shm: Arc::clone(&shm),
            procs: Vec::new(),
            tasks: Vec::new(),
            container,
            dir,
        };
        for members in process_groups(specs, &spawned) {
            let first = &specs[members[0]];
            let mut cmd = Command::new(exe);
            let run = Launch {
                exe,
                shm: &shm_path,
                dir: workload.dir.path(),
            };
            run.program_args(&mut cmd, specs, &members)?;
            let given = pass_pipe_ends(&mut cmd, &mut pipes, first)?;
            cmd.stdin(Stdio::null());
            cmd.stdout(Stdio::null());
            cmd.stderr(log.try_clone().map_or_else(|_| Stdio::null(), Stdio::from));
            // An outer make's jobserver (a make, or cargo under one, that started
            // schedlab) is not the experiment's: a make in a task would join it, or warn
            // and fall back to -j1 without the descriptors it names (closed below).
            for var in ["MAKEFLAGS", "MFLAGS", "MAKELEVEL"] {
                cmd.env_remove(var);
            }
            contain_child(&mut cmd, join_fd, given);
            let child = cmd
                .spawn()
                .with_context(|| format!("starting task \"{}\" ({})", first.name, exe.display()))?;
            workload.procs.push(Proc {
                child,
                slots: members,
                status: None,
                killed: false,
            });
            // The Command (and its copies of our pipe ends) drops here, so readers see EOF
            // when their writer exits.
        }
        drop(pipes);
        let groups: Vec<i32> = workload.procs.iter().map(|p| p.child.id() as i32).collect();
        workload.container.register(&groups);
        workload.wait_ready(specs, &spawned)?;
        Ok(workload)
    }

    fn wait_ready(&mut self, specs: &[TaskSpec], spawned: &[usize]) -> Result<()> {
        let start = Instant::now();
        loop {
            let ready = spawned
                .iter()
                .all(|&i| self.shm.slot(i).state.load(Ordering::Acquire) >= state::READY);
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
                    foreign: false,
                });
            }
        }
        for (i, s) in specs.iter().enumerate() {
            if let Program::Attached { pid, tid } = s.program {
                self.tasks.push(RunningTask {
                    name: s.name.clone(),
                    group: s.group.clone(),
                    pid,
                    tid,
                    slot: i,
                    kind: None,
                    progress_unit: "",
                    foreign: true,
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

    /// True once every task's process has exited (foreign tasks: once each is gone).
    pub fn all_exited(&mut self) -> bool {
        self.reap();
        self.procs.iter().all(|p| p.status.is_some())
            && self.tasks.iter().all(|t| !t.foreign || !t.foreign_alive())
    }

    /// Whether a task is gone: its process reaped, or (foreign) its /proc entry gone.
    pub fn exited(&self, task: &RunningTask) -> bool {
        if task.foreign {
            !task.foreign_alive()
        } else {
            self.exit_status(task).is_some()
        }
    }

    pub fn exit_status(&self, task: &RunningTask) -> Option<ExitStatus> {
        self.procs
            .iter()
            .find(|p| p.slots.contains(&task.slot))
            .and_then(|p| p.status)
    }

    /// How a command (a task with no worker kind) failed, when it exited by itself with
    /// a non-zero status or was killed by a signal not schedlab's, before the workload
    /// was stopped: a run whose command failed measured nothing.
    pub fn failure(&self, task: &RunningTask) -> Option<ExitStatus> {
        if task.foreign || task.kind.is_some() {
            return None;
        }
        self.procs
            .iter()
            .find(|p| p.slots.contains(&task.slot))
            .filter(|p| !p.killed)
            .and_then(|p| p.status)
            .filter(|s| !s.success())
    }

    /// The last `lines` lines the tasks wrote to stderr (a command's own stderr is the
    /// workload's log file: a file, as a command run with `2>log` has).
    pub fn stderr_tail(&self, lines: usize) -> Vec<String> {
        super::tail::last_lines(&self.dir.path().join("stderr.log"), lines)
    }

    /// The workload's CPU time with everything its tasks forked (make's jobs, a
    /// command's children), when it runs in a cgroup.
    pub fn usage(&self) -> Option<&super::contain::Usage> {
        self.container.usage()
    }

    /// The threads in the workload's cgroup (None: it has none).
    pub fn contained_threads(&self) -> Option<std::collections::BTreeSet<i32>> {
        self.container.threads()
    }

    /// Why the workload is not in a cgroup of its own, if it is not.
    pub fn why_uncontained(&self) -> Option<&str> {
        self.container.why_uncontained.as_deref()
    }

    /// Whether a task can start processes schedlab does not see as tasks (a command or
    /// make, whose children are not sampled).
    pub fn forks(&self) -> bool {
        self.tasks
            .iter()
            .any(|t| t.kind.is_none() || t.kind == Some(WorkerKind::Make))
    }

    /// Kill every task and everything it forked, all at once, then reap them: signal
    /// all first, so none waits for a CPU behind the others' spinning.
    pub fn stop(&mut self) {
        // One that ended by itself since the last look is not counted as killed.
        self.reap();
        let live: Vec<usize> = (0..self.procs.len())
            .filter(|&i| self.procs[i].status.is_none())
            .collect();
        if live.is_empty() {
            return;
        }
        self.container.kill_all();
        for &i in &live {
            self.procs[i].killed = true;
            let pid = Pid::from_raw(self.procs[i].child.id() as i32);
            let _ = killpg(pid, Signal::SIGKILL);
            let _ = nix::sys::signal::kill(pid, Signal::SIGKILL);
        }
        // A task must run to die. One starved by an RT spinner that is not ours (a
        // second schedlab, anyone's FIFO load) would hold up the exit for as long as that
        // spinner runs: after a moment, let the stragglers run anywhere, as ordinary tasks.
        let start = Instant::now();
        let mut demoted = false;
        loop {
            let mut waiting = false;
            for &i in &live {
                let p = &mut self.procs[i];
                if p.status.is_none() {
                    p.status = p.child.try_wait().ok().flatten();
                    waiting |= p.status.is_none();
                }
            }
            if !waiting {
                break;
            }
            if !demoted && start.elapsed() > Duration::from_millis(50) {
                demoted = true;
                self.demote_stragglers();
            }
            if start.elapsed() > Duration::from_secs(5) {
                for &i in &live {
                    let p = &mut self.procs[i];
                    if p.status.is_none() {
                        p.status = p.child.wait().ok();
                    }
                }
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let groups: Vec<i32> = live
            .iter()
            .map(|&i| self.procs[i].child.id() as i32)
            .collect();
        reap_adopted(&groups, start + Duration::from_secs(5));
    }

    fn demote_stragglers(&self) {
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
    }
}

impl Drop for Workload {
    fn drop(&mut self) {
        self.stop();
    }
}

/// Make schedlab the reaper of what its tasks fork: a task's child whose parent died
/// first (a make's job, killed with it) is then handed to schedlab, which waits for it
/// when the workload stops, instead of to init, which on some machines leaves it a
/// zombie for a second or more after schedlab has gone. Process-wide: called by the
/// schedlab command itself (not a library user such as the tests, whose daemons' orphans
/// would then be theirs).
pub fn adopt_orphans() {
    // SAFETY: prctl with integer arguments only.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
}

/// Wait for every process of the workload's process `groups` that was handed to
/// schedlab (see [`adopt_orphans`]), until none of them is left or `deadline`: each is
/// killed already and is ours once its parent has died. Only processes of these groups
/// are waited for by pid, so no status of another child of schedlab's is taken.
fn reap_adopted(groups: &[i32], deadline: Instant) {
    use nix::sys::wait::{waitpid, WaitPidFlag};
    loop {
        let left = super::contain::in_process_groups(groups);
        for &pid in &left {
            // Not dead yet, or (ECHILD) still another member's child, handed over when
            // that one dies: looked at again on the next pass.
            let _ = waitpid(Pid::from_raw(pid), Some(WaitPidFlag::WNOHANG));
        }
        if left.is_empty() || Instant::now() > deadline {
            return;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Both ends of every pipe the preset names, by the name of the task that writes it.
type Pipes<'a> = BTreeMap<&'a str, (Option<OwnedFd>, Option<OwnedFd>)>;

fn make_pipes(specs: &[TaskSpec]) -> Result<Pipes<'_>> {
    let mut pipes = Pipes::new();
    for s in specs {
        if let Some(p) = &s.stdout {
            let (r, w) =
                nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC).context("creating a pipe")?;
            pipes.insert(p.as_str(), (Some(r), Some(w)));
        }
    }
    Ok(pipes)
}

/// The tasks of each process to start: tasks sharing a `process` name become threads
/// of one process, every other task is a process of its own.
fn process_groups(specs: &[TaskSpec], spawned: &[usize]) -> Vec<Vec<usize>> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut by_name: BTreeMap<&str, usize> = BTreeMap::new();
    for &i in spawned {
        let s = &specs[i];
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
    groups
}

/// Where a workload's processes come from: the schedlab binary (whose hidden
/// subcommands are the workers), the shared memory, the run directory.
struct Launch<'a> {
    exe: &'a Path,
    shm: &'a Path,
    dir: &'a Path,
}

impl Launch<'_> {
    /// The command line of the process that runs `members` (slots into `specs`).
    fn program_args(&self, cmd: &mut Command, specs: &[TaskSpec], members: &[usize]) -> Result<()> {
        let first = &specs[members[0]];
        let slot = members[0].to_string();
        match &first.program {
            Program::Worker {
                kind: WorkerKind::Make,
                params,
            } => {
                let mf = self.dir.join("Makefile");
                std::fs::write(&mf, makefile(self.exe, self.shm, members[0], params))
                    .context("writing the Makefile")?;
                let jobs = params.get("jobs").copied().unwrap_or(1);
                cmd.args(["__exec", "--shm"])
                    .arg(self.shm)
                    .args(["--slot", &slot, "--", "make", "-s"])
                    .arg(format!("-j{jobs}"))
                    .arg("-f")
                    .arg(&mf)
                    .current_dir(self.dir);
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
                        Program::Command(_) | Program::Attached { .. } => None,
                    })
                    .collect();
                cmd.args(["__worker", "--shm"])
                    .arg(self.shm)
                    .arg("--threads")
                    .arg(serde_json::to_string(&threads)?);
            }
            Program::Command(argv) => {
                cmd.args(["__exec", "--shm"])
                    .arg(self.shm)
                    .args(["--slot", &slot]);
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
            Program::Attached { .. } => bail!("task \"{}\" is attached, not started", first.name),
        }
        Ok(())
    }
}

/// The experiment's pipe ends go to fds 3 and 4, never 0-2: Rust's runtime polls fds
/// 0-2 before main, and one poll arms a pipe's poll_usage for life (every later write
/// then runs the wake-up path). `__exec` moves them to 0/1 just before it becomes the
/// command.
/// Returns which of the data descriptors the task was given: (stdin pipe, stdout pipe).
fn pass_pipe_ends(cmd: &mut Command, pipes: &mut Pipes, task: &TaskSpec) -> Result<(bool, bool)> {
    let mut take = |name: &Option<String>, read: bool| -> Option<OwnedFd> {
        name.as_deref()
            .and_then(|n| pipes.get_mut(n))
            .and_then(|(r, w)| if read { r.take() } else { w.take() })
    };
    let mut mappings = Vec::new();
    if let Some(fd) = take(&task.stdin, true) {
        mappings.push(FdMapping {
            parent_fd: fd,
            child_fd: DATA_IN_FD,
        });
    }
    if let Some(fd) = take(&task.stdout, false) {
        mappings.push(FdMapping {
            parent_fd: fd,
            child_fd: DATA_OUT_FD,
        });
    }
    let given = (
        mappings.iter().any(|m| m.child_fd == DATA_IN_FD),
        mappings.iter().any(|m| m.child_fd == DATA_OUT_FD),
    );
    cmd.fd_mappings(mappings)
        .context("passing the pipe ends to a task")?;
    Ok(given)
}

/// Between fork and exec: into the workload's cgroup, its own process group, killed
/// with schedlab, and with no descriptor above stderr but the data pipes it was
/// `given` (stdin, stdout): whatever schedlab itself inherited from its starter (a
/// shell's, a test harness's, a jobserver's) is no business of the experiment's.
fn contain_child(cmd: &mut Command, join_fd: Option<std::os::fd::RawFd>, given: (bool, bool)) {
    let parent = std::process::id() as i32;
    // SAFETY: only async-signal-safe calls (pwrite, setpgid, prctl, getppid, fcntl,
    // close_range, _exit) run between fork and exec. They run after std's stdio set-up
    // and after the pipe mapping (registered earlier), so 0-2 and the pipes are in place.
    unsafe {
        cmd.pre_exec(move || {
            // Into the workload's cgroup before anything else: from here on all it
            // forks is found there, even after schedlab is gone. pwrite at 0: the
            // descriptor (and its offset) is shared by every child, and cgroupfs
            // ignores a write past the start.
            if let Some(fd) = join_fd {
                if libc::pwrite(fd, b"0".as_ptr().cast(), 1, 0) != 1 {
                    libc::_exit(125);
                }
            }
            libc::setpgid(0, 0);
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            for (fd, kept) in [(DATA_IN_FD, given.0), (DATA_OUT_FD, given.1)] {
                if !kept {
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                }
            }
            // Closed at exec from the first descriptor after the data pipes on (Linux
            // 5.11+; before that one by one, to a bound far above what schedlab opens).
            if libc::syscall(
                libc::SYS_close_range,
                DATA_OUT_FD + 1,
                libc::c_uint::MAX,
                libc::CLOSE_RANGE_CLOEXEC,
            ) != 0
            {
                for fd in DATA_OUT_FD + 1..4096 {
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                }
            }
            Ok(())
        });
    }
}
