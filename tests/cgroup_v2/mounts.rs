//! The mount side of the cgroup v2 test: /proc/self/mountinfo rows, a private cgroup2
//! mount, and taking the v1 cpu hierarchy off and putting it back exactly as it was.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use nix::errno::Errno;
use nix::mount::{mount, umount2, MntFlags, MsFlags};

/// One line of /proc/self/mountinfo, the fields a remount must reproduce.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub root: String,
    pub target: PathBuf,
    pub mount_opts: String,
    pub fstype: String,
    pub source: String,
    pub super_opts: String,
}

impl Row {
    fn parse(line: &str) -> Option<Row> {
        let (head, tail) = line.split_once(" - ")?;
        let h: Vec<&str> = head.split(' ').collect();
        let t: Vec<&str> = tail.split(' ').collect();
        Some(Row {
            root: h.get(3)?.to_string(),
            target: PathBuf::from(h.get(4)?.replace("\\040", " ")),
            mount_opts: h.get(5)?.to_string(),
            fstype: t.first()?.to_string(),
            source: t.get(1)?.to_string(),
            super_opts: t.get(2)?.to_string(),
        })
    }

    /// A v1 hierarchy with the cpu controller (alone or with others, like cpu,cpuacct).
    pub fn is_v1_cpu(&self) -> bool {
        self.fstype == "cgroup" && self.super_opts.split(',').any(|o| o == "cpu")
    }
}

pub fn mountinfo() -> Vec<Row> {
    std::fs::read_to_string("/proc/self/mountinfo")
        .unwrap_or_default()
        .lines()
        .filter_map(Row::parse)
        .collect()
}

/// cgroup2 mounted on a fresh temporary directory: the one v2 hierarchy, seen from a
/// mount point of the test's own; unmounted on drop.
pub struct PrivateV2 {
    dir: tempfile::TempDir,
    mounted: bool,
}

impl PrivateV2 {
    pub fn mount() -> Result<PrivateV2, String> {
        let dir = tempfile::tempdir().map_err(|e| format!("a temp dir: {e}"))?;
        mount(
            Some("cgroup2"),
            dir.path(),
            Some("cgroup2"),
            MsFlags::empty(),
            None::<&str>,
        )
        .map_err(|e| format!("mount -t cgroup2 on {}: {e}", dir.path().display()))?;
        Ok(PrivateV2 { dir, mounted: true })
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn controllers(&self) -> String {
        std::fs::read_to_string(self.path().join("cgroup.controllers")).unwrap_or_default()
    }

    pub fn unmount(&mut self) -> Result<(), String> {
        if self.mounted {
            umount2(self.path(), MntFlags::empty())
                .map_err(|e| format!("umount {}: {e}", self.path().display()))?;
            self.mounted = false;
        }
        Ok(())
    }
}

impl Drop for PrivateV2 {
    fn drop(&mut self) {
        if let Err(e) = self.unmount() {
            eprintln!("MACHINE CHANGED: {e}");
        }
    }
}

/// Who /proc shows holding a file or the working directory below `target`, and how
/// many processes' files this test may not read (another's pid 1, say).
fn holders(target: &Path) -> (Vec<String>, Vec<String>) {
    let (mut seen, mut hidden) = (Vec::new(), Vec::new());
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return (seen, hidden);
    };
    for p in procs.flatten() {
        let name = p.file_name().to_string_lossy().into_owned();
        if name.parse::<u32>().is_err() {
            continue;
        }
        let Ok(comm) = std::fs::read_to_string(p.path().join("comm")) else {
            continue; // gone meanwhile
        };
        let who = format!("pid {name} {}", comm.trim());
        let Ok(fds) = std::fs::read_dir(p.path().join("fd")) else {
            hidden.push(who);
            continue;
        };
        let links: Vec<std::io::Result<PathBuf>> = fds
            .flatten()
            .map(|f| f.path())
            .chain([p.path().join("cwd")])
            .map(std::fs::read_link)
            .collect();
        if links.iter().flatten().any(|l| l.starts_with(target)) {
            seen.push(who);
        } else if links.iter().any(|l| {
            l.as_ref()
                .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
        }) {
            hidden.push(who);
        }
    }
    (seen, hidden)
}

/// A v1 hierarchy taken off its one mount point so its controllers can go to cgroup
/// v2; put back on drop (also when the test panicked), with the same source, options
/// and mount point, checked against mountinfo.
pub struct Released {
    pub before: Row,
    back: bool,
}

impl Released {
    /// Unmount `row` (never lazily: a busy mount stays as it is, and says so).
    pub fn release(row: &Row) -> Result<Released, String> {
        match umount2(&row.target, MntFlags::empty()) {
            Ok(()) => Ok(Released {
                before: row.clone(),
                back: false,
            }),
            Err(Errno::EBUSY) => {
                let (seen, hidden) = holders(&row.target);
                Err(format!(
                    "the kernel refuses to unmount {} (EBUSY: something holds a file or directory in it open); processes /proc shows holding it: {}; processes whose open files this test cannot see: {}. Unmounting it lazily or killing the holder would change the machine beyond what the test can put back",
                    row.target.display(),
                    if seen.is_empty() { "none".to_string() } else { seen.join(", ") },
                    if hidden.is_empty() { "none".to_string() } else { hidden.join(", ") },
                ))
            }
            Err(e) => Err(format!(
                "unmounting {} failed: {e} ({})",
                row.target.display(),
                e.desc()
            )),
        }
    }

    /// Mount it again as it was. EBUSY while the controller's v2 state is still being
    /// torn down (asynchronously) is waited out, for at most 20 s.
    pub fn put_back(&mut self) -> Result<(), String> {
        if self.back {
            return Ok(());
        }
        let b = &self.before;
        let (flags, data) = (ms_flags(&b.mount_opts), super_data(&b.super_opts));
        let start = Instant::now();
        loop {
            let done = mount(
                Some(b.source.as_str()),
                &b.target,
                Some(b.fstype.as_str()),
                flags,
                Some(data.as_str()),
            );
            match done {
                Ok(()) => break,
                Err(Errno::EBUSY) if start.elapsed() < Duration::from_secs(20) => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => {
                    return Err(format!(
                        "mount -t {} -o {data} {} {}: {e}",
                        b.fstype,
                        b.source,
                        b.target.display()
                    ))
                }
            }
        }
        self.back = true;
        let now: Vec<Row> = mountinfo()
            .into_iter()
            .filter(|r| r.target == b.target)
            .collect();
        if now != [b.clone()] {
            return Err(format!(
                "{} is mounted again but not as before: was {b:?}, now {now:?}",
                b.target.display()
            ));
        }
        Ok(())
    }
}

impl Drop for Released {
    fn drop(&mut self) {
        if let Err(e) = self.put_back() {
            eprintln!("MACHINE CHANGED: {e}");
        }
    }
}

/// mountinfo's per-mount options as mount(2) flags.
fn ms_flags(opts: &str) -> MsFlags {
    opts.split(',').fold(MsFlags::empty(), |f, o| {
        f | match o {
            "ro" => MsFlags::MS_RDONLY,
            "nosuid" => MsFlags::MS_NOSUID,
            "nodev" => MsFlags::MS_NODEV,
            "noexec" => MsFlags::MS_NOEXEC,
            "noatime" => MsFlags::MS_NOATIME,
            "nodiratime" => MsFlags::MS_NODIRATIME,
            "relatime" => MsFlags::MS_RELATIME,
            "strictatime" => MsFlags::MS_STRICTATIME,
            _ => MsFlags::empty(),
        }
    })
}

/// The superblock options (`rw,cpu`) as mount data: the controllers and named options,
/// without rw/ro (those are flags). A hierarchy without controllers (`rw,name=x`) must
/// be asked for with `none`, which mountinfo does not show.
fn super_data(opts: &str) -> String {
    let controllers = std::fs::read_to_string("/proc/cgroups").unwrap_or_default();
    let is_controller = |o: &str| controllers.lines().any(|l| l.split('\t').next() == Some(o));
    let mut data: Vec<&str> = opts
        .split(',')
        .filter(|o| !matches!(*o, "rw" | "ro"))
        .collect();
    if !data.iter().any(|o| is_controller(o)) {
        data.insert(0, "none");
    }
    data.join(",")
}

#[test]
fn mountinfo_rows_and_remount_arguments() {
    let line = "32 31 0:29 / /sys/fs/cgroup/cpu rw,nosuid,relatime shared:5 - cgroup cgroup rw,cpu,cpuacct";
    let row = Row::parse(line).expect("a row");
    assert_eq!(row.target, PathBuf::from("/sys/fs/cgroup/cpu"));
    assert_eq!(
        (row.fstype.as_str(), row.source.as_str()),
        ("cgroup", "cgroup")
    );
    assert!(row.is_v1_cpu());
    assert_eq!(
        ms_flags(&row.mount_opts),
        MsFlags::MS_NOSUID | MsFlags::MS_RELATIME
    );
    assert_eq!(super_data(&row.super_opts), "cpu,cpuacct");
    assert_eq!(super_data("rw,name=systemd"), "none,name=systemd");
    let acct = Row::parse("33 31 0:30 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct")
        .expect("a row");
    assert!(!acct.is_v1_cpu());
}

/// Unmounts a test's own mount on drop.
struct Own<'a>(&'a Path);

impl Drop for Own<'_> {
    fn drop(&mut self) {
        if let Err(e) = umount2(self.0, MntFlags::empty()) {
            eprintln!("MACHINE CHANGED: umount {}: {e}", self.0.display());
        }
    }
}

/// The put-back path of [`Released`] on a hierarchy the test makes itself (a named v1
/// hierarchy without controllers, harmless to take off): same options after, and a busy
/// mount refused with its holder named.
#[test]
fn a_released_v1_mount_is_put_back_exactly_as_it_was() {
    let _serial = crate::common::serial();
    if !crate::common::require(
        "root (mounting a cgroup hierarchy)",
        crate::common::is_root(),
    ) {
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // The kernel takes letters, digits, `_` and `.` in a hierarchy name.
    let name = format!("name=schedlab_test_{}", std::process::id());
    let data = format!("none,{name}");
    let flags = MsFlags::MS_NOSUID | MsFlags::MS_NODEV | MsFlags::MS_NOEXEC;
    mount(
        Some("cgroup"),
        dir.path(),
        Some("cgroup"),
        flags,
        Some(data.as_str()),
    )
    .expect("mount a named v1 hierarchy");
    let _own = Own(dir.path());
    let here =
        |p: &Path| -> Vec<Row> { mountinfo().into_iter().filter(|r| r.target == p).collect() };
    let row = here(dir.path()).pop().expect("the mount in mountinfo");
    assert_eq!(row.super_opts, format!("rw,{name}"));
    assert!(row.mount_opts.contains("nosuid,nodev,noexec"), "{row:?}");
    let mut released = Released::release(&row).expect("nothing holds it");
    assert!(here(dir.path()).is_empty(), "unmounted");
    released.put_back().expect("mounted back as it was");
    assert_eq!(here(dir.path()), std::slice::from_ref(&row));
    // An open directory in it makes it busy: refused, and the holder named.
    let held = std::fs::File::open(dir.path()).expect("open the mount's root");
    let err = match Released::release(&row) {
        Err(e) => e,
        Ok(_) => panic!("a held mount must be refused"),
    };
    drop(held);
    let me = format!("pid {} ", std::process::id());
    assert!(err.contains("EBUSY") && err.contains(&me), "{err}");
    assert_eq!(here(dir.path()), [row], "left as it was");
}
