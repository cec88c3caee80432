//! What this machine allows: root, kernel version, debugfs (mounted, writable under
//! lockdown), RT group scheduling, uclamp; and mounting debugfs for a run.

use std::path::{Path, PathBuf};

use crate::error::KnobError;
use crate::knob::errno::{explain, WriteKind};
use crate::knob::fs::DEBUGFS;
use crate::knob::journal::Journal;

pub(super) const SYSCTL: &str = "/proc/sys/kernel";
const CGROUP_V1_CPU: &str = "/sys/fs/cgroup/cpu";

pub(super) fn read_trim(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

/// What this machine allows, found once per command.
#[derive(Clone, Debug, PartialEq)]
pub struct Probe {
    pub root: bool,
    pub kernel: (u32, u32),
    pub debugfs_mounted: bool,
    /// /sys/kernel/debug/sched (5.13+), when debugfs is mounted.
    pub sched_dir: Option<PathBuf>,
    /// The features file: sched/features, or sched_features before 5.13.
    pub features_path: Option<PathBuf>,
    /// Whether debugfs scheduler files can be opened for writing, and if not, why.
    pub debugfs_write: Result<(), KnobError>,
    /// The root cgroup's cpu.rt_runtime_us when RT group scheduling is on (cgroup v1).
    pub rt_group_root: Option<PathBuf>,
    /// CONFIG_UCLAMP_TASK is on.
    pub uclamp: bool,
}

fn kernel_version() -> (u32, u32) {
    let release = crate::system::kernel_release();
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse().ok());
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

fn debugfs_mounted() -> bool {
    std::fs::read_to_string("/proc/mounts").is_ok_and(|m| {
        m.lines()
            .any(|l| l.split_whitespace().nth(1) == Some(DEBUGFS) && l.contains("debugfs"))
    })
}

impl Probe {
    pub fn detect() -> Probe {
        let root = nix::unistd::geteuid().is_root();
        let mounted = debugfs_mounted();
        let sched_dir = Path::new(DEBUGFS).join("sched");
        let sched_dir = (mounted && sched_dir.is_dir()).then_some(sched_dir);
        let features_path = match &sched_dir {
            Some(d) => Some(d.join("features")),
            None if mounted && Path::new(DEBUGFS).join("sched_features").exists() => {
                Some(Path::new(DEBUGFS).join("sched_features"))
            }
            None => None,
        };
        let debugfs_write = Self::probe_debugfs_write(root, mounted, features_path.as_deref());
        let rt_root = Path::new(CGROUP_V1_CPU).join("cpu.rt_runtime_us");
        Probe {
            root,
            kernel: kernel_version(),
            debugfs_mounted: mounted,
            sched_dir,
            features_path,
            debugfs_write,
            rt_group_root: rt_root.exists().then_some(rt_root),
            uclamp: Path::new(SYSCTL).join("sched_util_clamp_min").exists(),
        }
    }

    pub(super) fn probe_debugfs_write(
        root: bool,
        mounted: bool,
        features: Option<&Path>,
    ) -> Result<(), KnobError> {
        if !root {
            return Err(KnobError::refused("not root"));
        }
        if !mounted {
            return Err(KnobError::Refused(debugfs_reason(false)));
        }
        let Some(path) = features else {
            return Err(KnobError::Refused(debugfs_reason(true)));
        };
        // Opening for write changes nothing; lockdown refuses the open itself.
        match std::fs::OpenOptions::new().write(true).open(path) {
            Ok(_) => Ok(()),
            Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
                Err(KnobError::Refused(lockdown_reason()))
            }
            Err(e) => Err(KnobError::Refused(format!(
                "cannot open {}: {e}",
                path.display()
            ))),
        }
    }

    /// Why the debugfs scheduler files are not there.
    pub(super) fn debugfs_missing(&self) -> String {
        debugfs_reason(self.debugfs_mounted)
    }

    /// Why per-task uclamp cannot be used here, if it cannot.
    pub fn uclamp_reason(&self) -> Option<String> {
        (!self.uclamp).then(|| "CONFIG_UCLAMP_TASK is off in this kernel".to_string())
    }

    /// Why a fair task's custom slice cannot be set here, if it cannot.
    pub fn slice_reason(&self) -> Option<String> {
        (self.kernel < (6, 12)).then(|| {
            format!(
                "custom slices need Linux 6.12+ (this is {}.{})",
                self.kernel.0, self.kernel.1
            )
        })
    }
}

/// "kernel lockdown (integrity) blocks debugfs writes", with the mode when securityfs says it.
pub(super) fn lockdown_reason() -> String {
    let mode = read_trim(Path::new("/sys/kernel/security/lockdown")).and_then(|s| {
        let start = s.find('[')?;
        let end = s[start..].find(']')?;
        Some(s[start + 1..start + end].to_string())
    });
    match mode {
        Some(m) => format!("kernel lockdown ({m}) blocks debugfs writes"),
        None => {
            "kernel lockdown blocks debugfs writes (EPERM even for root, see kernel_lockdown(7))"
                .into()
        }
    }
}

/// Mount debugfs for this run; journaled once it is mounted (a mount that failed leaves
/// nothing to undo), so it is unmounted again at exit.
pub fn mount_debugfs(journal: &mut Journal) -> Result<bool, KnobError> {
    if debugfs_mounted() {
        return Ok(false);
    }
    nix::mount::mount(
        Some("none"),
        DEBUGFS,
        Some("debugfs"),
        nix::mount::MsFlags::empty(),
        None::<&str>,
    )
    .map_err(|e| {
        KnobError::Refused(format!(
            "mounting debugfs on {DEBUGFS} failed: {}",
            explain(e, WriteKind::File)
        ))
    })?;
    if let Err(e) = journal.record_mount(Path::new(DEBUGFS), "debugfs") {
        // Unjournaled, it would outlive a crash: undo it now.
        let _ = nix::mount::umount(DEBUGFS);
        return Err(match KnobError::from_journal(e) {
            KnobError::Refused(m) => KnobError::Refused(format!("{m}; debugfs unmounted again")),
            other => other,
        });
    }
    Ok(true)
}

/// Why debugfs scheduler files are not there: not mounted (and how to mount it), or this
/// kernel has none.
pub(super) fn debugfs_reason(mounted: bool) -> String {
    if !mounted {
        format!("debugfs is not mounted - mount it with `mount -t debugfs none {DEBUGFS}` (or pass --mount-debugfs, undone at exit)")
    } else {
        "this kernel has no scheduler debugfs files".into()
    }
}
