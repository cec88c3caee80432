//! The journal of system-wide changes: every old value is written (and fsynced) before
//! the first write to a knob, and replayed in reverse on every exit path, at the next
//! start after a crash, or by `schedlab restore`.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::Write;
use std::path::{Component, Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

/// One thing schedlab changed, with what undoes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Entry {
    /// A knob file and the value it held before.
    File { path: PathBuf, old: String },
    /// A filesystem schedlab mounted (debugfs, tracefs); undone by unmounting it, and
    /// only it: `mnt_id` names the very mount schedlab made.
    Mount {
        target: PathBuf,
        #[serde(default)]
        fstype: String,
        #[serde(default)]
        mnt_id: Option<u64>,
    },
    /// A directory schedlab created (a cgroup); undone by removing it.
    Dir { path: PathBuf },
    /// A task schedlab did not start, as it was before schedlab first changed it;
    /// undone by setting it back (unless it exited).
    Task(super::foreign::Found),
    /// A process schedlab started (a sched_ext scheduler); undone by stopping it, and
    /// only while its pid still has the recorded start time.
    Process(super::child::Child),
}

impl Entry {
    pub fn describe(&self) -> String {
        match self {
            Entry::File { path, old } => format!("{} = {}", path.display(), old.trim()),
            Entry::Mount { target, .. } => format!("unmount {}", target.display()),
            Entry::Dir { path } => format!("remove {}", path.display()),
            Entry::Task(f) => format!(
                "task {} (pid {} tid {}) to {} nice {}",
                f.comm, f.pid, f.tid, f.settings.policy, f.settings.nice
            ),
            Entry::Process(c) => format!("stop {} (pid {})", c.comm, c.pid),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct Header {
    schedlab_journal: u32,
    pid: u32,
}

/// What restoring one entry did.
#[derive(Clone, Debug, PartialEq)]
pub struct Restored {
    pub entry: Entry,
    pub outcome: Outcome,
}

/// How restoring an entry went.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Restored,
    /// The write failed (it is tried again by the next start or `schedlab restore`).
    Failed(String),
    /// The entry names something schedlab never changes: it was not touched and will
    /// not be tried again (the journal can go).
    Refused(String),
}

impl Restored {
    pub fn ok(&self) -> bool {
        self.outcome == Outcome::Restored
    }

    /// Nothing more can be done about this entry: restored, or refused for good.
    pub fn settled(&self) -> bool {
        !matches!(self.outcome, Outcome::Failed(_))
    }
}

impl std::fmt::Display for Restored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let what = self.entry.describe();
        match &self.outcome {
            Outcome::Restored => write!(f, "restored {what}"),
            Outcome::Refused(e) => write!(f, "refused to restore {what}: {e}"),
            Outcome::Failed(e) => write!(f, "could not restore {what}: {e}"),
        }
    }
}

/// Where the journal lives: `$SCHEDLAB_JOURNAL`, else `journal.jsonl` in the state
/// directory (see [`crate::state::dir`]). It must survive the process, not the boot
/// (knobs reset at boot).
pub fn default_path() -> Result<PathBuf> {
    if let Some(p) = std::env::var_os("SCHEDLAB_JOURNAL").filter(|p| !p.is_empty()) {
        return Ok(PathBuf::from(p));
    }
    Ok(crate::state::dir()?.join("journal.jsonl"))
}

/// The files, mounts and directories a journal may ever undo: the knobs schedlab writes
/// and nothing else. A journal is a file on disk, so an entry naming anything else
/// (a planted `/home/victim/x`) is refused and reported, never written.
fn not_allowed(entry: &Entry, extra: &[PathBuf]) -> Option<String> {
    let path = match entry {
        Entry::File { path, .. } | Entry::Dir { path } => path,
        Entry::Mount { target, .. } => target,
        // Only ever the task it names, and only while its start time matches.
        Entry::Task(_) | Entry::Process(_) => return None,
    };
    let plain = path.is_absolute()
        && path
            .components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !plain {
        return Some(format!("{} is not a plain absolute path", path.display()));
    }
    if extra.iter().any(|root| path.starts_with(root)) {
        return None;
    }
    let ok = match entry {
        Entry::File { path, .. } => is_knob_file(path),
        Entry::Mount { target, .. } => {
            target == Path::new(super::fs::DEBUGFS) || target == Path::new(super::fs::TRACEFS)
        }
        Entry::Dir { path } => is_own_cgroup(path),
        Entry::Task(_) | Entry::Process(_) => true,
    };
    (!ok).then(|| {
        format!(
            "{} is not a knob schedlab changes (RT sysctls, autogroup, debugfs sched files, cgroups it made)",
            path.display()
        )
    })
}

fn is_knob_file(path: &Path) -> bool {
    const SYSCTLS: [&str; 4] = [
        "sched_rt_runtime_us",
        "sched_rt_period_us",
        "sched_rr_timeslice_ms",
        "sched_autogroup_enabled",
    ];
    if let Ok(name) = path.strip_prefix("/proc/sys/kernel") {
        return SYSCTLS.iter().any(|s| name == Path::new(s));
    }
    let debugfs = Path::new(super::fs::DEBUGFS);
    if path.starts_with(debugfs.join("sched")) || path == debugfs.join("sched_features") {
        return true;
    }
    // A cgroup mount's root: RT runtime and period (v1), subtree_control (v2).
    let root_files = [
        "cpu.rt_runtime_us",
        "cpu.rt_period_us",
        "cgroup.subtree_control",
    ];
    if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
        if cgroup_mounts().iter().any(|m| m == dir)
            && root_files.iter().any(|f| name == std::ffi::OsStr::new(f))
        {
            return true;
        }
    }
    // Any file inside a cgroup schedlab made.
    path.ancestors().skip(1).any(is_own_cgroup)
}

/// A directory schedlab made in a cgroup hierarchy: below a cgroup mount, under a
/// top-level directory named `schedlab-...` (a preset's groups, a run's containment).
pub fn is_own_cgroup(path: &Path) -> bool {
    cgroup_mounts().iter().any(|m| {
        path.strip_prefix(m).ok().is_some_and(|rel| {
            rel.components().any(|c| {
                matches!(c, Component::Normal(n) if n.to_string_lossy().starts_with("schedlab-"))
            })
        })
    })
}

/// Every cgroup (v1) and cgroup2 mount point.
fn cgroup_mounts() -> Vec<PathBuf> {
    let Ok(text) = std::fs::read_to_string("/proc/self/mounts") else {
        return Vec::new();
    };
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, target, fstype) = (f.next()?, f.next()?, f.next()?);
            matches!(fstype, "cgroup" | "cgroup2").then(|| PathBuf::from(target))
        })
        .collect()
}

fn fsync_dir(path: &Path) {
    if let Some(dir) = path.parent() {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

/// Read a journal file: its owner pid and entries (a torn last line is ignored). The
/// file must be a regular file of this user's, reached without a symlink.
fn read(path: &Path) -> Result<(u32, Vec<Entry>)> {
    let text = crate::state::read_own(path)
        .with_context(|| format!("reading the journal {}", path.display()))?;
    let mut lines = text.lines();
    let header: Header = lines
        .next()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| {
            let shown: String = text.chars().take(60).collect();
            anyhow!(
                "{} is not a schedlab journal (it holds {:?}{}); `schedlab restore --discard` removes it",
                path.display(),
                shown,
                if text.chars().count() > 60 { "..." } else { "" }
            )
        })?;
    let entries = lines.filter_map(|l| serde_json::from_str(l).ok()).collect();
    Ok((header.pid, entries))
}

/// True if `pid` is a live schedlab process.
fn owner_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|c| c.trim_end().starts_with("schedlab"))
        && pid != std::process::id()
}

/// Why an entry could not be undone, and whether the kernel said "busy" (which passes).
struct Failure {
    why: String,
    busy: bool,
}

impl Failure {
    fn new(why: String, errno: Option<i32>) -> Failure {
        Failure {
            why,
            busy: errno == Some(libc::EBUSY),
        }
    }
}

/// Undo one entry.
fn undo(entry: &Entry) -> Result<(), Failure> {
    match entry {
        Entry::File { path, old } => super::fs::write_file(path, old.trim())
            .map_err(|e| Failure::new(e.to_string(), e.raw_os_error())),
        Entry::Mount { target, mnt_id, .. } => {
            // Only the mount schedlab made: once it is gone (an admin unmounted it, or
            // mounted their own on top), there is nothing of ours to undo.
            // A journal without the id (from an older schedlab) cannot tell: left alone.
            match (mnt_id, super::fs::mount_id(target)) {
                (Some(ours), Some(now)) if *ours == now => {}
                _ => return Ok(()),
            }
            nix::mount::umount(target.as_path())
                .map_err(|e| Failure::new(format!("umount: {e}"), Some(e as i32)))
        }
        Entry::Dir { path } => {
            if !path.exists() {
                return Ok(());
            }
            // A cgroup of ours may still hold the experiment's tasks (after a SIGKILL of
            // schedlab, or children a command forked): they go first.
            if path.join("cgroup.procs").exists() {
                super::fs::kill_all(path);
            }
            // A cgroup empties when its last task is reaped; give stragglers a moment.
            let mut last = Ok(());
            for _ in 0..50 {
                last = std::fs::remove_dir(path)
                    .map_err(|e| Failure::new(format!("rmdir: {e}"), e.raw_os_error()));
                if last.is_ok() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            last
        }
        Entry::Task(found) => super::foreign::put_back(found).map(drop).map_err(|errors| {
            let why: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
            Failure::new(why.join("; "), errors.first().map(|e| e.errno))
        }),
        Entry::Process(child) => child
            .stop(PROCESS_GRACE)
            .map(drop)
            .map_err(|why| Failure::new(why.to_string(), None)),
    }
}

/// How long a started process gets to end on SIGINT before it is killed: an scx
/// scheduler detaches its BPF scheduler on the way out.
const PROCESS_GRACE: std::time::Duration = std::time::Duration::from_secs(5);

/// Passes that settle the order between entries (a root cgroup's RT runtime and the
/// sysctl must go back in the right order).
const ORDER_PASSES: usize = 3;
/// Further passes, 100 ms apart, for entries the kernel called busy: a task that just
/// exited can hold RT or deadline bandwidth for a moment (seen here on rt_period).
const BUSY_PASSES: usize = 10;

/// Undo entries newest first. A knob refused because of ordering (RT runtime below a
/// cgroup's, say) is retried after the others, up to three passes.
pub fn undo_all(entries: &[Entry]) -> Vec<Restored> {
    undo_all_with(entries, &[])
}

/// [`undo_all`], also allowing entries below `extra` (tests' scratch directories).
fn undo_all_with(entries: &[Entry], extra: &[PathBuf]) -> Vec<Restored> {
    undo_all_by(entries, extra, undo)
}

/// The passes of [`undo_all_with`], each entry undone by `undo` (tests stand in for the
/// kernel's refusals with it).
fn undo_all_by(
    entries: &[Entry],
    extra: &[PathBuf],
    mut undo: impl FnMut(&Entry) -> Result<(), Failure>,
) -> Vec<Restored> {
    let mut done = Vec::new();
    let mut pending = Vec::new();
    for entry in entries.iter().rev() {
        match not_allowed(entry, extra) {
            None => pending.push(entry.clone()),
            Some(why) => done.push(Restored {
                entry: entry.clone(),
                outcome: Outcome::Refused(why),
            }),
        }
    }
    for pass in 1..=ORDER_PASSES + BUSY_PASSES {
        let mut failed = Vec::new();
        for entry in pending {
            match undo(&entry) {
                Ok(()) => done.push(Restored {
                    entry,
                    outcome: Outcome::Restored,
                }),
                Err(e) if pass < ORDER_PASSES || (e.busy && pass < ORDER_PASSES + BUSY_PASSES) => {
                    failed.push(entry)
                }
                Err(e) => done.push(Restored {
                    entry,
                    outcome: Outcome::Failed(e.why),
                }),
            }
        }
        if failed.is_empty() {
            break;
        }
        if pass >= ORDER_PASSES {
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        pending = failed;
    }
    done
}

/// One machine, one knob writer: an exclusive flock on a fixed path, whatever journal
/// path a process uses, so two schedlabs never journal each other's values. The kernel
/// drops it when the holder dies, so a SIGKILL never leaves it stuck. Within one process
/// the lock is shared (counted): its journals are used one after another.
pub struct KnobLock(());

/// The lock file while this process holds it, and how many guards share it.
static HELD: std::sync::Mutex<Option<(File, usize)>> = std::sync::Mutex::new(None);

/// The lock file: system knobs are machine-wide, so the lock is at one fixed path
/// (`/run/schedlab/knobs.lock` as root) whatever `$SCHEDLAB_STATE_DIR` and
/// `$SCHEDLAB_JOURNAL` say; with a lock per state directory two schedlabs journaled
/// each other's values.
pub fn lock_path() -> Result<PathBuf> {
    Ok(crate::state::machine_dir()?.join("knobs.lock"))
}

/// Who holds the flock on `file`: read from /proc/locks, so it is never a half-written
/// pid file (the lock is taken before the holder could write anything).
fn lock_holder(file: &File) -> Option<u32> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata().ok()?;
    let (major, minor) = (libc::major(meta.dev()), libc::minor(meta.dev()));
    let dev_inode = format!("{major:02x}:{minor:02x}:{}", meta.ino());
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // "1: FLOCK  ADVISORY  WRITE 1234 00:1a:5678 0 EOF"
        (f.get(1) == Some(&"FLOCK") && f.get(5) == Some(&dev_inode.as_str()))
            .then(|| f.get(4)?.parse().ok())
            .flatten()
    })
}

impl KnobLock {
    pub fn acquire() -> Result<KnobLock> {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, count)) = held.as_mut() {
            *count += 1;
            return Ok(KnobLock(()));
        }
        let path = lock_path()?;
        let mut file = crate::state::open_or_create(&path)
            .with_context(|| format!("opening the knob lock {}", path.display()))?;
        // SAFETY: flock on a descriptor we own.
        let rc = unsafe {
            libc::flock(
                std::os::fd::AsRawFd::as_raw_fd(&file),
                libc::LOCK_EX | libc::LOCK_NB,
            )
        };
        if rc != 0 {
            let holder = match lock_holder(&file) {
                Some(pid) => format!("pid {pid}"),
                None => "a process that has just let go".to_string(),
            };
            // A distinct error (and exit code): wait and try again.
            return Err(crate::error::KnobError::Locked { holder }.into());
        }
        // For people reading the file; schedlab itself asks /proc/locks.
        file.set_len(0)?;
        write!(file, "{}", std::process::id())?;
        *held = Some((file, 1));
        Ok(KnobLock(()))
    }
}

impl Drop for KnobLock {
    fn drop(&mut self) {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, count)) = held.as_mut() {
            *count -= 1;
            if *count == 0 {
                if let Some((file, _)) = held.take() {
                    // Unlocked before the close: a child another thread is forking shares
                    // this open file until its exec, and a close alone would leave the
                    // lock held until then, refusing the next schedlab.
                    // SAFETY: flock on a descriptor we own.
                    unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_UN) };
                }
            }
        }
    }
}

/// Restore a journal left by a schedlab that is gone. None if there is no journal;
/// an error if its owner is still running (it will restore itself).
pub fn restore_stale(path: &Path) -> Result<Option<(u32, Vec<Restored>)>> {
    restore_stale_with(path, &[])
}

fn restore_stale_with(path: &Path, extra: &[PathBuf]) -> Result<Option<(u32, Vec<Restored>)>> {
    if path.symlink_metadata().is_err() {
        return Ok(None);
    }
    let (pid, entries) = read(path)?;
    if owner_alive(pid) {
        bail!(
            "schedlab pid {pid} is running and owns the journal {}; it restores its knobs when it exits",
            path.display()
        );
    }
    let _lock = KnobLock::acquire()?;
    let restored = undo_all_with(&entries, extra);
    if restored.iter().all(Restored::settled) {
        std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
        fsync_dir(path);
    }
    Ok(Some((pid, restored)))
}

/// Remove a journal without undoing it (`schedlab restore --discard`): for a journal
/// that cannot be restored or read. Returns what it held, as far as it can be read.
pub fn discard(path: &Path) -> Result<Option<Vec<String>>> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e).with_context(|| format!("examining {}", path.display())),
    };
    let held = match read(path) {
        Ok((pid, entries)) => {
            if owner_alive(pid) {
                bail!("schedlab pid {pid} is running and owns {}; it restores its knobs when it exits", path.display());
            }
            entries.iter().map(Entry::describe).collect()
        }
        Err(e) => vec![format!("{e:#}")],
    };
    if !meta.file_type().is_symlink() && !meta.is_file() {
        bail!("{} is not a file", path.display());
    }
    std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
    fsync_dir(path);
    Ok(Some(held))
}

/// This process's journal. Created on the first record, removed by a full restore.
pub struct Journal {
    path: PathBuf,
    file: Option<File>,
    /// Held from the first record until everything is restored.
    lock: Option<KnobLock>,
    entries: Vec<Entry>,
    recorded: BTreeSet<String>,
    /// Directories whose files the tests let a journal restore besides the real knobs.
    allow_extra: Vec<PathBuf>,
    /// What each knob file held right after schedlab last wrote it, by path, with the
    /// knob's name: a different value later means someone else changed it.
    written: std::collections::BTreeMap<PathBuf, (String, String)>,
}

/// A knob that no longer holds what schedlab wrote: another program (or an admin)
/// changed it while schedlab held it, so what was measured since is not the setting's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Changed {
    pub name: String,
    pub path: PathBuf,
    pub ours: String,
    pub now: String,
}

impl std::fmt::Display for Changed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} was changed by someone else while this run held it: schedlab set {}, {} holds {}",
            self.name,
            self.ours,
            self.path.display(),
            self.now
        )
    }
}

impl Journal {
    pub fn new(path: PathBuf) -> Journal {
        Journal {
            path,
            file: None,
            lock: None,
            entries: Vec::new(),
            recorded: BTreeSet::new(),
            allow_extra: Vec::new(),
            written: std::collections::BTreeMap::new(),
        }
    }

    /// Remember what knob `name`'s file holds right after schedlab wrote it (read back:
    /// the kernel may normalise a value).
    pub fn wrote(&mut self, name: &str, path: &Path) {
        if let Ok(now) = std::fs::read_to_string(path) {
            self.written.insert(
                path.to_path_buf(),
                (name.to_string(), now.trim().to_string()),
            );
        }
    }

    /// The knobs that no longer hold what schedlab last wrote to them.
    pub fn changed_under(&self) -> Vec<Changed> {
        self.written
            .iter()
            .filter_map(|(path, (name, ours))| {
                let now = std::fs::read_to_string(path).ok()?.trim().to_string();
                (now != *ours).then(|| Changed {
                    name: name.clone(),
                    path: path.clone(),
                    ours: ours.clone(),
                    now,
                })
            })
            .collect()
    }

    /// Let this journal restore files below `dir` too (unit tests on scratch files).
    #[cfg(test)]
    pub fn allow_under(mut self, dir: &Path) -> Journal {
        self.allow_extra.push(dir.to_path_buf());
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    fn file(&mut self) -> Result<&mut File> {
        if self.file.is_none() {
            if self.lock.is_none() {
                self.lock = Some(KnobLock::acquire()?);
            }
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
            }
            if self.path.symlink_metadata().is_ok() {
                let (pid, _) = read(&self.path)?;
                if owner_alive(pid) {
                    bail!(
                        "another schedlab (pid {pid}) is changing system knobs; wait for it to finish (journal {})",
                        self.path.display()
                    );
                }
                bail!(
                    "a journal from an earlier schedlab (pid {pid}) is still at {}: run `schedlab restore` first",
                    self.path.display()
                );
            }
            let mut f = crate::state::create_new(&self.path)
                .with_context(|| format!("creating the journal {}", self.path.display()))?;
            let header = Header {
                schedlab_journal: 1,
                pid: std::process::id(),
            };
            writeln!(f, "{}", serde_json::to_string(&header)?)?;
            f.sync_all()?;
            fsync_dir(&self.path);
            self.file = Some(f);
        }
        self.file
            .as_mut()
            .ok_or_else(|| anyhow!("journal not open"))
    }

    fn append(&mut self, entry: Entry) -> Result<()> {
        let line = serde_json::to_string(&entry)?;
        let f = self.file()?;
        writeln!(f, "{line}")?;
        f.sync_all().context("fsync of the journal")?;
        self.entries.push(entry);
        Ok(())
    }

    /// Record a knob file's current value before its first write (later writes keep
    /// the original).
    pub fn record_file(&mut self, path: &Path) -> Result<()> {
        let key = path.display().to_string();
        if self.recorded.contains(&key) {
            return Ok(());
        }
        let old =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
        self.record_undo(&key, path, old.trim())
    }

    /// Record that writing `undo` to `path` reverts a change, once per `key`. For files
    /// whose content is not what you write back: one scheduler feature of the features
    /// file (undo "NO_WA_IDLE"), a cgroup's subtree_control (undo "-cpu").
    pub fn record_undo(&mut self, key: &str, path: &Path, undo: &str) -> Result<()> {
        if self.recorded.contains(key) {
            return Ok(());
        }
        self.append(Entry::File {
            path: path.to_path_buf(),
            old: undo.to_string(),
        })?;
        self.recorded.insert(key.to_string());
        Ok(())
    }

    /// Record a mount schedlab has just made (after it succeeded: a failed mount leaves
    /// nothing to undo), naming it by its mount id so only it is ever unmounted.
    pub fn record_mount(&mut self, target: &Path, fstype: &str) -> Result<()> {
        self.append(Entry::Mount {
            target: target.to_path_buf(),
            fstype: fstype.to_string(),
            mnt_id: super::fs::mount_id(target),
        })
    }

    /// Record a foreign task as found, before schedlab first changes it (once per task).
    pub fn record_task(&mut self, found: super::foreign::Found) -> Result<()> {
        let key = format!("task {} {}", found.tid, found.start_time);
        if self.recorded.contains(&key) {
            return Ok(());
        }
        self.append(Entry::Task(found))?;
        self.recorded.insert(key);
        Ok(())
    }

    /// Record a process schedlab has just started, to be stopped on restore.
    pub fn record_process(&mut self, child: super::child::Child) -> Result<()> {
        self.append(Entry::Process(child))
    }

    pub fn record_dir(&mut self, path: &Path) -> Result<()> {
        self.append(Entry::Dir {
            path: path.to_path_buf(),
        })
    }

    /// Take the knob lock now, for a run that will write knobs: a lock another
    /// schedlab holds is found before anything starts, not after the workload runs.
    pub fn hold_lock(&mut self) -> Result<()> {
        if self.lock.is_none() {
            self.lock = Some(KnobLock::acquire()?);
        }
        Ok(())
    }

    /// Undo everything, newest first; the journal file goes once all is restored.
    pub fn restore(&mut self) -> Vec<Restored> {
        if self.entries.is_empty() && self.file.is_none() {
            // Nothing was written: a lock taken ahead ([`Journal::hold_lock`]) goes.
            self.lock = None;
            return Vec::new();
        }
        if self.file.is_some() && !self.path.exists() {
            // The panic hook already restored from the file and removed it.
            self.entries.clear();
            self.recorded.clear();
            self.file = None;
            self.lock = None;
            return Vec::new();
        }
        // Restoring writes the old values: they are not someone else's change.
        self.written.clear();
        let restored = undo_all_with(&self.entries, &self.allow_extra);
        if restored.iter().all(Restored::settled) {
            let _ = std::fs::remove_file(&self.path);
            fsync_dir(&self.path);
            self.entries.clear();
            self.recorded.clear();
            self.file = None;
            self.lock = None;
        }
        restored
    }
}

impl Drop for Journal {
    fn drop(&mut self) {
        for r in self.restore() {
            if !r.ok() {
                eprintln!("schedlab: {r}");
            }
        }
    }
}

/// Restore this process's journal from a panic hook: reads the file, so it needs no
/// access to the `Journal` value (which may be mid-update on the panicking thread).
pub fn restore_own(path: &Path) -> Vec<Restored> {
    match read(path) {
        Ok((pid, entries)) if pid == std::process::id() => {
            let restored = undo_all(&entries);
            if restored.iter().all(Restored::settled) {
                let _ = std::fs::remove_file(path);
            }
            restored
        }
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests;
