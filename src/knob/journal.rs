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
        Entry::Task(_) => return None,
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
        Entry::Task(_) => true,
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
    }
}

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

/// The lock file, in the state directory (machine-wide for root, who alone writes
/// system knobs).
pub fn lock_path() -> Result<PathBuf> {
    Ok(crate::state::dir()?.join("knobs.lock"))
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
                // Closing the file releases the flock.
                *held = None;
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
        }
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

    pub fn record_dir(&mut self, path: &Path) -> Result<()> {
        self.append(Entry::Dir {
            path: path.to_path_buf(),
        })
    }

    /// Undo everything, newest first; the journal file goes once all is restored.
    pub fn restore(&mut self) -> Vec<Restored> {
        if self.entries.is_empty() && self.file.is_none() {
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
mod tests {
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
        let undone =
            |r: &[Restored]| -> Vec<String> { r.iter().map(|r| r.entry.describe()).collect() };
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
}
