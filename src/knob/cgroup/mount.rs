//! Finding the cpu controller's cgroup mount (v1 or v2) and enabling the controller
//! below a v2 root.

use std::path::{Path, PathBuf};

use anyhow::Context;
use nix::errno::Errno;

use super::files::write;
use crate::knob::journal::Journal;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    V1,
    V2,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CgroupRoot {
    pub version: Version,
    pub mount: PathBuf,
}

/// Find the cpu controller: a v1 mount of type cgroup with option "cpu", else a cgroup2
/// mount whose cgroup.controllers lists "cpu". None if neither.
pub fn detect() -> Option<CgroupRoot> {
    let mounts = std::fs::read_to_string("/proc/self/mounts").ok()?;
    detect_from(&mounts, &|dir: &Path| {
        std::fs::read_to_string(dir.join("cgroup.controllers")).ok()
    })
}

/// Pure core of [`detect`]: `mounts` is /proc/mounts text; `controllers(path)` returns the
/// text of <path>/cgroup.controllers.
pub fn detect_from(
    mounts: &str,
    controllers: &dyn Fn(&Path) -> Option<String>,
) -> Option<CgroupRoot> {
    let rows: Vec<(&str, &str, &str)> = mounts
        .lines()
        .filter_map(|line| {
            let mut f = line.split_whitespace();
            let _source = f.next()?;
            let target = f.next()?;
            let fstype = f.next()?;
            let options = f.next().unwrap_or("");
            Some((target, fstype, options))
        })
        .collect();
    // A v1 cpu hierarchy wins: on hybrid systems the v2 mount rarely has cpu, and when
    // both exist the kernel only lets one of them own the controller anyway.
    let v1 = rows
        .iter()
        .find(|(_, fstype, options)| *fstype == "cgroup" && options.split(',').any(|o| o == "cpu"));
    if let Some((target, _, _)) = v1 {
        return Some(CgroupRoot {
            version: Version::V1,
            mount: PathBuf::from(unescape_mount(target)),
        });
    }
    rows.iter()
        .filter(|(_, fstype, _)| *fstype == "cgroup2")
        .map(|(target, _, _)| PathBuf::from(unescape_mount(target)))
        .find(|mount| {
            controllers(mount).is_some_and(|text| text.split_whitespace().any(|c| c == "cpu"))
        })
        .map(|mount| CgroupRoot {
            version: Version::V2,
            mount,
        })
}

/// The cpu controller at one given cgroup mount (a test's private cgroup2 mount, a
/// container's), not wherever [`detect`] would look first: `mounts` is /proc/mounts
/// text. An error says why that mount will not do.
pub fn at(
    mounts: &str,
    mount: &Path,
    controllers: &dyn Fn(&Path) -> Option<String>,
) -> Result<CgroupRoot, MountError> {
    let here: Vec<&str> = mounts
        .lines()
        .filter(|l| {
            let mut f = l.split_whitespace();
            f.nth(1)
                .is_some_and(|t| Path::new(&unescape_mount(t)) == mount)
                && matches!(f.next(), Some("cgroup" | "cgroup2"))
        })
        .collect();
    if here.is_empty() {
        return Err(MountError::NotCgroup(mount.to_path_buf()));
    }
    detect_from(&here.join("\n"), controllers).ok_or_else(|| MountError::NoCpu {
        mount: mount.to_path_buf(),
        listed: controllers(mount).unwrap_or_default().trim().to_string(),
    })
}

/// Why a given mount will not do as the cpu controller.
#[derive(Debug, PartialEq, thiserror::Error)]
pub enum MountError {
    #[error("{} is not a cgroup mount", .0.display())]
    NotCgroup(PathBuf),
    #[error("{} has no cpu controller (a v1 mount without the cpu option, or cgroup v2 whose cgroup.controllers lists only \"{listed}\": the cpu controller is bound to a v1 hierarchy)", .mount.display())]
    NoCpu { mount: PathBuf, listed: String },
}

/// /proc/mounts writes space, tab, newline and backslash in paths as octal escapes.
fn unescape_mount(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let code = bytes[i + 1..i + 4]
                .iter()
                .fold(0u32, |acc, b| acc * 8 + u32::from(b - b'0'));
            if let Ok(byte) = u8::try_from(code) {
                out.push(byte);
                i += 4;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// cgroup v2 hands a controller to children only when the parent's subtree_control lists
/// it. At the mount root that is a global change, undone by writing "-cpu" (writing the
/// old content back would not disable anything), journaled before the write: "-cpu" on a
/// controller that is not enabled is a no-op, so a crash in between is harmless.
pub(super) fn ensure_v2_cpu_enabled(mount: &Path, journal: &mut Journal) -> anyhow::Result<()> {
    let subtree = mount.join("cgroup.subtree_control");
    let text = std::fs::read_to_string(&subtree)
        .with_context(|| format!("reading {}", subtree.display()))?;
    if text.split_whitespace().any(|c| c == "cpu") {
        return Ok(());
    }
    journal
        .record_undo(&format!("{} cpu", subtree.display()), &subtree, "-cpu")
        .with_context(|| format!("journaling the undo of +cpu in {}", subtree.display()))?;
    enable_cpu(&subtree)
}

pub(super) fn enable_cpu(subtree: &Path) -> anyhow::Result<()> {
    write(subtree, "+cpu", |errno| {
        (errno == Errno::EINVAL).then(|| {
            "the cpu controller cannot take every task below (with RT group scheduling, \
             real-time tasks outside the root cgroup block it; make them non-RT or move them \
             to the root)"
                .to_string()
        })
    })
    .map_err(anyhow::Error::new)
}

#[cfg(test)]
mod tests {
    use super::*;
    fn no_controllers(_: &Path) -> Option<String> {
        None
    }

    #[test]
    fn detects_this_machines_v1_cpu_mount() {
        let mounts = std::fs::read_to_string("/proc/mounts").expect("read /proc/mounts");
        let real = std::fs::read_to_string("/sys/fs/cgroup/cpu/cpu.shares").is_ok();
        let found = detect_from(&mounts, &no_controllers);
        if real {
            assert_eq!(
                found,
                Some(CgroupRoot {
                    version: Version::V1,
                    mount: PathBuf::from("/sys/fs/cgroup/cpu")
                })
            );
        }
        // The development machine's table, verbatim.
        let table = "tmpfs /sys/fs/cgroup tmpfs rw,relatime,mode=755 0 0\n\
            cgroup /sys/fs/cgroup/cpu cgroup rw,relatime,cpu 0 0\n\
            cgroup /sys/fs/cgroup/cpuacct cgroup rw,relatime,cpuacct 0 0\n\
            cgroup /sys/fs/cgroup/cpuset cgroup rw,relatime,cpuset 0 0\n\
            cgroup /sys/fs/cgroup/systemd cgroup rw,relatime,name=systemd 0 0\n\
            cgroup2 /sys/fs/cgroup/unified cgroup2 rw,relatime 0 0\n";
        let hugetlb_only = |_: &Path| Some("hugetlb\n".to_string());
        assert_eq!(
            detect_from(table, &hugetlb_only),
            Some(CgroupRoot {
                version: Version::V1,
                mount: PathBuf::from("/sys/fs/cgroup/cpu")
            })
        );
    }

    #[test]
    fn detects_a_combined_cpu_cpuacct_mount_but_not_cpuacct_or_cpuset_alone() {
        let table = "cgroup /sys/fs/cgroup/cpuset cgroup rw,nosuid,nodev,noexec,relatime,cpuset 0 0\n\
            cgroup /sys/fs/cgroup/cpu,cpuacct cgroup rw,nosuid,nodev,noexec,relatime,cpu,cpuacct 0 0\n";
        assert_eq!(
            detect_from(table, &no_controllers),
            Some(CgroupRoot {
                version: Version::V1,
                mount: PathBuf::from("/sys/fs/cgroup/cpu,cpuacct")
            })
        );
        let without = "cgroup /sys/fs/cgroup/cpuacct cgroup rw,cpuacct 0 0\n\
            cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n";
        assert_eq!(detect_from(without, &no_controllers), None);
    }

    #[test]
    fn detects_pure_v2_only_with_cpu_in_its_controllers() {
        let table = "sysfs /sys sysfs rw 0 0\n\
            cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec,relatime,nsdelegate 0 0\n";
        let with_cpu = |p: &Path| {
            assert_eq!(p, Path::new("/sys/fs/cgroup"));
            Some("cpuset cpu io memory hugetlb pids rdma misc\n".to_string())
        };
        assert_eq!(
            detect_from(table, &with_cpu),
            Some(CgroupRoot {
                version: Version::V2,
                mount: PathBuf::from("/sys/fs/cgroup")
            })
        );
        let without_cpu = |_: &Path| Some("cpuset io memory pids\n".to_string());
        assert_eq!(detect_from(table, &without_cpu), None);
        assert_eq!(detect_from(table, &no_controllers), None);
    }

    #[test]
    fn detects_nothing_in_an_empty_or_cgroupless_table() {
        assert_eq!(detect_from("", &no_controllers), None);
        let table = "proc /proc proc rw 0 0\n/dev/sda1 / ext4 rw 0 0\ngarbage\n";
        assert_eq!(
            detect_from(table, &|_: &Path| Some("cpu".to_string())),
            None
        );
    }

    #[test]
    fn a_given_mount_is_used_only_if_it_has_the_cpu_controller() {
        let table = "cgroup /sys/fs/cgroup/cpu cgroup rw,cpu 0 0\n\
            cgroup2 /sys/fs/cgroup/unified cgroup2 rw 0 0\n\
            cgroup2 /tmp/private\\040v2 cgroup2 rw 0 0\n";
        let private = Path::new("/tmp/private v2");
        let with_cpu = |_: &Path| Some("cpuset cpu pids\n".to_string());
        // The v1 cpu mount would win in `detect`; asked for the private one, it is that.
        assert_eq!(
            at(table, private, &with_cpu),
            Ok(CgroupRoot {
                version: Version::V2,
                mount: private.to_path_buf()
            })
        );
        let hugetlb = |_: &Path| Some("hugetlb\n".to_string());
        let err = at(table, Path::new("/sys/fs/cgroup/unified"), &hugetlb).unwrap_err();
        assert!(err.to_string().contains("lists only \"hugetlb\""), "{err}");
        assert_eq!(
            at(table, Path::new("/tmp"), &with_cpu).map_err(|e| e.to_string()),
            Err("/tmp is not a cgroup mount".into())
        );
        assert_eq!(
            at(table, Path::new("/sys/fs/cgroup/cpu"), &no_controllers).map(|r| r.version),
            Ok(Version::V1)
        );
    }

    #[test]
    fn mount_paths_are_unescaped() {
        let table = "cgroup /mnt/my\\040cg cgroup rw,cpu 0 0\n";
        assert_eq!(
            detect_from(table, &no_controllers).map(|r| r.mount),
            Some(PathBuf::from("/mnt/my cg"))
        );
    }
}
