//! The journal of system-wide changes: every old value is written (and fsynced) before
//! the first write to a knob, and replayed in reverse on every exit path, at the next
//! start after a crash, or by `schedlab restore`.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use anyhow::{anyhow, bail, Context, Result};
use serde::{Deserialize, Serialize};

/// One thing schedlab changed, with what undoes it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Entry {
    /// A knob file and the value it held before.
    File { path: PathBuf, old: String },
    /// A filesystem schedlab mounted (debugfs); undone by unmounting.
    Mount { target: PathBuf },
    /// A directory schedlab created (a cgroup); undone by removing it.
    Dir { path: PathBuf },
}

impl Entry {
    pub fn describe(&self) -> String {
        match self {
            Entry::File { path, old } => format!("{} = {}", path.display(), old.trim()),
            Entry::Mount { target } => format!("unmount {}", target.display()),
            Entry::Dir { path } => format!("remove {}", path.display()),
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
    pub result: Result<(), String>,
}

impl std::fmt::Display for Restored {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.result {
            Ok(()) => write!(f, "restored {}", self.entry.describe()),
            Err(e) => write!(f, "could not restore {}: {e}", self.entry.describe()),
        }
    }
}

/// Where the journal lives: `$SCHEDLAB_JOURNAL`, else /run/schedlab (root) or the
/// user's runtime dir. It must survive the process, not the boot (knobs reset at boot).
pub fn default_path() -> PathBuf {
    if let Some(p) = std::env::var_os("SCHEDLAB_JOURNAL").filter(|p| !p.is_empty()) {
        return PathBuf::from(p);
    }
    if nix::unistd::geteuid().is_root() && Path::new("/run").is_dir() {
        return PathBuf::from("/run/schedlab/journal.jsonl");
    }
    if let Some(dir) = std::env::var_os("XDG_RUNTIME_DIR").filter(|p| !p.is_empty()) {
        return PathBuf::from(dir).join("schedlab-journal.jsonl");
    }
    std::env::temp_dir()
        .join(format!("schedlab-{}", nix::unistd::geteuid()))
        .join("journal.jsonl")
}

fn fsync_dir(path: &Path) {
    if let Some(dir) = path.parent() {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

/// Read a journal file: its owner pid and entries (a torn last line is ignored).
fn read(path: &Path) -> Result<(u32, Vec<Entry>)> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut lines = text.lines();
    let header: Header = lines
        .next()
        .and_then(|l| serde_json::from_str(l).ok())
        .ok_or_else(|| anyhow!("{} is not a schedlab journal", path.display()))?;
    let entries = lines.filter_map(|l| serde_json::from_str(l).ok()).collect();
    Ok((header.pid, entries))
}

/// True if `pid` is a live schedlab process.
fn owner_alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|c| c.trim_end().starts_with("schedlab"))
        && pid != std::process::id()
}

/// Undo one entry.
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

fn undo(entry: &Entry) -> Result<(), Failure> {
    match entry {
        Entry::File { path, old } => super::sys::write_file(path, old.trim())
            .map_err(|e| Failure::new(e.to_string(), e.raw_os_error())),
        Entry::Mount { target } => nix::mount::umount(target.as_path())
            .map_err(|e| Failure::new(format!("umount: {e}"), Some(e as i32))),
        Entry::Dir { path } => {
            if !path.exists() {
                return Ok(());
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
    let mut pending: Vec<Entry> = entries.iter().rev().cloned().collect();
    let mut done = Vec::new();
    for pass in 1..=ORDER_PASSES + BUSY_PASSES {
        let mut failed = Vec::new();
        for entry in pending {
            match undo(&entry) {
                Ok(()) => done.push(Restored {
                    entry,
                    result: Ok(()),
                }),
                Err(e) if pass < ORDER_PASSES || (e.busy && pass < ORDER_PASSES + BUSY_PASSES) => {
                    failed.push(entry)
                }
                Err(e) => done.push(Restored {
                    entry,
                    result: Err(e.why),
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

/// The machine-wide lock file.
pub fn lock_path() -> PathBuf {
    if nix::unistd::geteuid().is_root() && Path::new("/run").is_dir() {
        PathBuf::from("/run/schedlab/knobs.lock")
    } else {
        std::env::temp_dir()
            .join(format!("schedlab-{}", nix::unistd::geteuid()))
            .join("knobs.lock")
    }
}

impl KnobLock {
    pub fn acquire() -> Result<KnobLock> {
        let mut held = HELD.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, count)) = held.as_mut() {
            *count += 1;
            return Ok(KnobLock(()));
        }
        let path = lock_path();
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .with_context(|| format!("opening {}", path.display()))?;
        // SAFETY: flock on a descriptor we own.
        let rc = unsafe {
            libc::flock(
                std::os::fd::AsRawFd::as_raw_fd(&file),
                libc::LOCK_EX | libc::LOCK_NB,
            )
        };
        if rc != 0 {
            let holder = std::fs::read_to_string(&path).unwrap_or_default();
            bail!(
                "another schedlab (pid {}) is changing system knobs; wait for it to finish",
                holder.trim()
            );
        }
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
    if !path.exists() {
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
    let restored = undo_all(&entries);
    if restored.iter().all(|r| r.result.is_ok()) {
        std::fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
        fsync_dir(path);
    }
    Ok(Some((pid, restored)))
}

/// This process's journal. Created on the first record, removed by a full restore.
pub struct Journal {
    path: PathBuf,
    file: Option<File>,
    /// Held from the first record until everything is restored.
    lock: Option<KnobLock>,
    entries: Vec<Entry>,
    recorded: BTreeSet<String>,
}

impl Journal {
    pub fn new(path: PathBuf) -> Journal {
        Journal {
            path,
            file: None,
            lock: None,
            entries: Vec::new(),
            recorded: BTreeSet::new(),
        }
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
            if self.path.exists() {
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
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&self.path)
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

    pub fn record_mount(&mut self, target: &Path) -> Result<()> {
        self.append(Entry::Mount {
            target: target.to_path_buf(),
        })
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
        let restored = undo_all(&self.entries);
        if restored.iter().all(|r| r.result.is_ok()) {
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
            if r.result.is_err() {
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
            if restored.iter().all(|r| r.result.is_ok()) {
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

    #[test]
    fn records_once_restores_in_reverse_and_removes_itself() {
        let dir = tempfile::tempdir().expect("tempdir");
        let knob = dir.path().join("knob");
        std::fs::write(&knob, "950000\n").expect("write");
        let jpath = dir.path().join("j").join("journal.jsonl");
        let mut j = Journal::new(jpath.clone());
        j.record_file(&knob).expect("record");
        std::fs::write(&knob, "600000").expect("change");
        j.record_file(&knob).expect("second record is a no-op");
        std::fs::write(&knob, "200000").expect("change again");
        assert_eq!(j.entries().len(), 1);
        let text = std::fs::read_to_string(&jpath).expect("journal on disk");
        assert!(text.contains("950000"), "{text}");
        let restored = j.restore();
        assert_eq!(restored.len(), 1);
        assert!(restored[0].result.is_ok());
        assert_eq!(
            std::fs::read_to_string(&knob).expect("read").trim(),
            "950000"
        );
        assert!(!jpath.exists(), "journal removed after a full restore");
    }

    #[test]
    fn a_stale_journal_is_restored_and_a_live_one_is_left_alone() {
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
        let (pid, restored) = restore_stale(&jpath)
            .expect("restores")
            .expect("there was one");
        assert_eq!(pid, 1);
        assert_eq!(restored.len(), 1, "the torn line is ignored");
        assert_eq!(std::fs::read_to_string(&knob).expect("read"), "original");
        assert!(!jpath.exists());
        assert!(restore_stale(&jpath).expect("nothing").is_none());
    }

    #[test]
    fn dirs_are_removed_on_restore() {
        let dir = tempfile::tempdir().expect("tempdir");
        let made = dir.path().join("made");
        std::fs::create_dir(&made).expect("mkdir");
        let mut j = Journal::new(dir.path().join("journal.jsonl"));
        j.record_dir(&made).expect("record");
        let restored = j.restore();
        assert!(restored[0].result.is_ok(), "{:?}", restored);
        assert!(!made.exists());
    }
}
