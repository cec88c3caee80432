//! Facts about this machine that every command needs: kernel, online CPUs, privilege.

use crate::cpuset::CpuSet;

/// The running kernel's release, e.g. "6.18.44".
pub fn kernel_release() -> String {
    nix::sys::utsname::uname()
        .map(|u| u.release().to_string_lossy().into_owned())
        .unwrap_or_else(|_| "unknown".into())
}

/// The CPUs that are online now (what "cpus=all" means).
pub fn online_cpus() -> CpuSet {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| s.trim().parse::<CpuSet>().ok())
        .filter(|s| !s.is_empty())
        .or_else(own_affinity)
        .unwrap_or_else(|| CpuSet::single(0))
}

/// The CPUs this process may run on (when /sys does not say which are online).
fn own_affinity() -> Option<CpuSet> {
    // SAFETY: cpu_set_t is plain data; zeroed is a valid empty set, filled by the call.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    // SAFETY: set is a valid cpu_set_t of the size passed.
    let rc =
        unsafe { libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) };
    (rc == 0).then(|| CpuSet::from_libc(&set))
}

pub fn is_root() -> bool {
    nix::unistd::geteuid().is_root()
}

/// USER_HZ: the unit of /proc/stat and /proc/PID/stat times.
pub fn clock_ticks_per_s() -> u64 {
    // SAFETY: sysconf has no memory effects.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if hz > 0 {
        hz as u64
    } else {
        100
    }
}

/// The signals that end a command cleanly, each with the flag that says it arrived (so
/// the exit code can say which one: 128 + its number).
static ENDED_BY: std::sync::OnceLock<[(i32, std::sync::Arc<std::sync::atomic::AtomicBool>); 3]> =
    std::sync::OnceLock::new();

fn ended_by() -> &'static [(i32, std::sync::Arc<std::sync::atomic::AtomicBool>); 3] {
    ENDED_BY.get_or_init(|| {
        [
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
            signal_hook::consts::SIGHUP,
        ]
        .map(|sig| (sig, std::sync::Arc::default()))
    })
}

/// A flag that SIGINT, SIGTERM and SIGHUP set: every command ends cleanly on them.
pub fn stop_on_signals() -> std::io::Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for (sig, seen) in ended_by() {
        signal_hook::flag::register(*sig, std::sync::Arc::clone(&stop))?;
        signal_hook::flag::register(*sig, std::sync::Arc::clone(seen))?;
    }
    Ok(stop)
}

/// The first of SIGINT, SIGTERM, SIGHUP that arrived since `stop_on_signals`, if any.
pub fn ending_signal() -> Option<i32> {
    let arrived = ENDED_BY.get()?;
    arrived
        .iter()
        .find(|(_, seen)| seen.load(std::sync::atomic::Ordering::Relaxed))
        .map(|(sig, _)| *sig)
}

/// CPU time all threads of this process have used, in ns (from each thread's schedstat,
/// which has ns resolution; utime/stime only have ticks).
pub fn own_cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}
