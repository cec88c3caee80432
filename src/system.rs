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
        .or_else(|| crate::knob::task::affinity(0).ok())
        .unwrap_or_else(|| CpuSet::single(0))
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

/// How schedlab's own threads (controller, sampler, UI) ask to be scheduled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elevation {
    /// As any task (the default, and all a user without CAP_SYS_NICE gets).
    None,
    /// SCHED_OTHER at nice -20: a headless run is not starved by hundreds of spinners
    /// (a nice-0 sampler beside 256 of them got one sample in seconds), yet stays out of
    /// the RT class, whose throttling would stop it together with an RT experiment (a
    /// FIFO controller writing sched_rt_runtime_us waited ~1 s for the next period).
    Fair,
    /// SCHED_FIFO 99: the workbench stays responsive while FIFO spinners hold every CPU
    /// (and shares their throttled windows).
    Realtime,
}

static ELEVATE: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Ask schedlab's own threads to run as `e` from now on (each thread applies it with
/// [`elevate_if_requested`]). They sleep almost always, so they take from the workload
/// only the time they need; RESET_ON_FORK keeps workers from inheriting it.
pub fn request_elevation(e: Elevation) {
    let v = match e {
        Elevation::None => 0,
        Elevation::Fair => 1,
        Elevation::Realtime => 2,
    };
    ELEVATE.store(v, std::sync::atomic::Ordering::Relaxed);
}

/// Elevate the calling thread if requested (and possible: root). Threads that start
/// workers pass `reset_on_fork`; the UI thread does not, so the terminal-input thread it
/// starts inherits the priority. Returns whether it did.
pub fn elevate_if_requested(reset_on_fork: bool) -> bool {
    match ELEVATE.load(std::sync::atomic::Ordering::Relaxed) {
        1 => crate::knob::task::set_own_fair(-20, reset_on_fork).is_ok(),
        2 => crate::knob::task::set_own_realtime(99, reset_on_fork).is_ok(),
        _ => false,
    }
}

/// A flag that SIGINT, SIGTERM and SIGHUP set: every command ends cleanly on them.
pub fn stop_on_signals() -> std::io::Result<std::sync::Arc<std::sync::atomic::AtomicBool>> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, std::sync::Arc::clone(&stop))?;
    }
    Ok(stop)
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
