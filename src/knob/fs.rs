//! The file-system side of knobs that every part of the knob path shares: writing a knob
//! file, where debugfs and tracefs live, which mount is which, and emptying a cgroup.

use std::io::Write;
use std::path::Path;

pub const DEBUGFS: &str = "/sys/kernel/debug";
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// Write a value to a knob file in one write(2), as the kernel's handlers expect.
pub fn write_file(path: &Path, value: &str) -> std::io::Result<()> {
    let mut f = std::fs::OpenOptions::new().write(true).open(path)?;
    f.write_all(value.as_bytes())
}

/// The id of the mount at `target`, if something is mounted exactly there: the 64-bit
/// id that is never reused (Linux 6.8+), else the classic one. None if `target` is not
/// a mount point.
pub fn mount_id(target: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(target.as_os_str().as_bytes()).ok()?;
    let stat = |mask: u32| -> Option<libc::statx> {
        // SAFETY: statx writes one struct statx; zeroed is a valid initial value.
        let mut buf: libc::statx = unsafe { std::mem::zeroed() };
        let rc = unsafe {
            libc::statx(
                libc::AT_FDCWD,
                c.as_ptr(),
                libc::AT_SYMLINK_NOFOLLOW,
                mask | libc::STATX_BASIC_STATS,
                &mut buf,
            )
        };
        (rc == 0).then_some(buf)
    };
    let here = stat(libc::STATX_MNT_ID_UNIQUE).or_else(|| stat(libc::STATX_MNT_ID))?;
    // A mount point is the root of its mount: its parent lies in another mount.
    let parent = target.parent()?;
    let pc = std::ffi::CString::new(parent.as_os_str().as_bytes()).ok()?;
    // SAFETY: as above.
    let mut up: libc::statx = unsafe { std::mem::zeroed() };
    let rc = unsafe {
        libc::statx(
            libc::AT_FDCWD,
            pc.as_ptr(),
            0,
            here.stx_mask & (libc::STATX_MNT_ID_UNIQUE | libc::STATX_MNT_ID),
            &mut up,
        )
    };
    (rc == 0 && up.stx_mnt_id != here.stx_mnt_id).then_some(here.stx_mnt_id)
}

/// The processes in the cgroup `dir` and every cgroup below it.
pub fn procs_below(dir: &Path) -> Vec<i32> {
    ids_below(dir, "cgroup.procs")
}

/// The threads in the cgroup `dir` and every cgroup below it (v2 lists them in
/// cgroup.threads, v1 in tasks).
pub fn threads_below(dir: &Path) -> Vec<i32> {
    let file = if dir.join("cgroup.threads").exists() {
        "cgroup.threads"
    } else {
        "tasks"
    };
    ids_below(dir, file)
}

/// The ids listed in `file` of the cgroup `dir` and of every cgroup below it.
fn ids_below(dir: &Path, file: &str) -> Vec<i32> {
    let mut out: Vec<i32> = std::fs::read_to_string(dir.join(file))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                out.extend(ids_below(&e.path(), file));
            }
        }
    }
    out
}

/// Kill every process in the cgroup `dir` and below, and wait (at most 2 s) until they
/// are gone; returns how many there were. cgroup v2's cgroup.kill (5.14+) also takes
/// processes that fork meanwhile; elsewhere the list is killed until it stays empty.
pub fn kill_all(dir: &Path) -> usize {
    let first = procs_below(dir);
    if first.is_empty() {
        return 0;
    }
    let mut killed: std::collections::BTreeSet<i32> = first.iter().copied().collect();
    let kill_file = dir.join("cgroup.kill");
    let one_shot = kill_file.exists() && super::fs::write_file(&kill_file, "1").is_ok();
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(2) {
        let left = procs_below(dir);
        if left.is_empty() {
            break;
        }
        if !one_shot {
            for pid in left {
                killed.insert(pid);
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(pid),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    killed.len()
}
