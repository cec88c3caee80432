//! Finding tracefs (mounting it for the run when it is not mounted, journaled so it is
//! unmounted again on every exit path) and reading the scheduler tracepoints' format
//! files, which carry each tracepoint's perf id and field layout.

use std::path::{Path, PathBuf};

use crate::knob::fs::TRACEFS;
use crate::knob::journal::Journal;

use super::decode::{SchedFormats, TRACEPOINTS};
use super::format::{self, Format};
use super::TraceError;

/// Where tracefs is mounted now, from /proc/self/mounts: /sys/kernel/tracing if it is
/// one of them, else the first. Never /sys/kernel/debug/tracing unless it is already
/// mounted: touching that automount point would mount tracefs behind the journal's back.
pub fn mounted() -> Option<PathBuf> {
    let text = std::fs::read_to_string("/proc/self/mounts").ok()?;
    let mut found: Vec<PathBuf> = text
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, target, fstype) = (f.next()?, f.next()?, f.next()?);
            (fstype == "tracefs").then(|| PathBuf::from(unescape(target)))
        })
        .collect();
    if let Some(i) = found.iter().position(|p| p == Path::new(TRACEFS)) {
        return Some(found.swap_remove(i));
    }
    found.into_iter().next()
}

/// /proc/mounts writes space, tab, newline and backslash as octal escapes.
fn unescape(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let octal = b
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match (b[i], octal) {
            (b'\\', Some(d)) => {
                out.push((d[0] - b'0') * 64 + (d[1] - b'0') * 8 + (d[2] - b'0'));
                i += 4;
            }
            (c, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// tracefs's mount point, mounting it on /sys/kernel/tracing first if it is nowhere.
/// The mount is journaled as soon as it succeeds (a failed mount leaves nothing to
/// undo), so it lasts only until the journal is restored.
pub fn ensure(journal: &mut Journal) -> Result<PathBuf, TraceError> {
    if let Some(p) = mounted() {
        return Ok(p);
    }
    let no = |why: String| TraceError::NoTracefs {
        target: TRACEFS.to_string(),
        why,
    };
    if !Path::new(TRACEFS).is_dir() {
        return Err(no(format!(
            "{TRACEFS} does not exist, so this kernel has no tracefs (CONFIG_TRACING off)"
        )));
    }
    use nix::mount::MsFlags;
    nix::mount::mount(
        Some("nodev"),
        TRACEFS,
        Some("tracefs"),
        MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC,
        None::<&str>,
    )
    .map_err(|e| {
        no(match e {
            nix::errno::Errno::EPERM => format!("{e:?}: mounting needs root (CAP_SYS_ADMIN)"),
            nix::errno::Errno::ENODEV => {
                format!("{e:?}: this kernel has no tracefs filesystem (CONFIG_TRACING off)")
            }
            _ => format!("{e:?} ({})", e.desc()),
        })
    })?;
    if let Err(e) = journal.record_mount(Path::new(TRACEFS), "tracefs") {
        // Unjournaled, it would outlive a crash: undo it now.
        let _ = nix::mount::umount(TRACEFS);
        return Err(TraceError::Journal(format!(
            "{e:#}; tracefs unmounted again"
        )));
    }
    Ok(PathBuf::from(TRACEFS))
}

/// Read and parse `events/sched/<name>/format` for every tracepoint schedlab uses.
pub fn read_formats(root: &Path) -> Result<SchedFormats, TraceError> {
    let read = |name: &str| -> Result<Format, TraceError> {
        let path = root.join("events/sched").join(name).join("format");
        let text = std::fs::read_to_string(&path).map_err(|e| TraceError::MissingTracepoint {
            name: name.to_string(),
            path: path.display().to_string(),
            why: e.to_string(),
        })?;
        let f = format::parse(&text).map_err(|e| TraceError::BadFormat {
            name: name.to_string(),
            why: e.to_string(),
        })?;
        if f.name != name {
            return Err(TraceError::BadFormat {
                name: name.to_string(),
                why: format!("the file names the tracepoint {:?}", f.name),
            });
        }
        Ok(f)
    };
    let [switch, waking, wakeup, wakeup_new, migrate] = TRACEPOINTS;
    Ok(SchedFormats {
        switch: read(switch)?,
        waking: read(waking)?,
        wakeup: read(wakeup)?,
        wakeup_new: read(wakeup_new)?,
        migrate: read(migrate)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mount_table_escapes() {
        assert_eq!(unescape("/sys/kernel/tracing"), "/sys/kernel/tracing");
        assert_eq!(unescape("/mnt/a\\040b"), "/mnt/a b");
        assert_eq!(unescape("/x\\134y"), "/x\\y");
        assert_eq!(unescape("/x\\9"), "/x\\9");
        assert_eq!(unescape("\\"), "\\");
    }

    #[test]
    fn reads_formats_from_a_tracefs_shaped_tree() {
        let dir = tempfile::tempdir().expect("tempdir");
        for name in TRACEPOINTS {
            let d = dir.path().join("events/sched").join(name);
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::write(d.join("format"), crate::trace::format::tests::fixture(name))
                .expect("write");
        }
        let f = read_formats(dir.path()).expect("formats");
        assert_eq!(f.switch.id, 372);
        assert_eq!(f.migrate.id, 371);

        std::fs::remove_file(dir.path().join("events/sched/sched_waking/format")).expect("rm");
        let e = read_formats(dir.path()).unwrap_err();
        assert!(matches!(&e, TraceError::MissingTracepoint { name, .. } if name == "sched_waking"));
        let msg = e.to_string();
        assert!(
            msg.contains("sched/sched_waking") && !msg.contains('\n'),
            "{msg}"
        );

        std::fs::write(
            dir.path().join("events/sched/sched_waking/format"),
            crate::trace::format::tests::fixture("sched_wakeup"),
        )
        .expect("write");
        let e = read_formats(dir.path()).unwrap_err();
        assert!(e.to_string().contains("\"sched_wakeup\""), "{e}");
    }
}
