//! The check's own probes: cyclictest-like wakeups, pinned spins, what else loads the CPUs.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use nix::errno::Errno;
use nix::sys::time::TimeSpec;
use nix::time::{clock_gettime, clock_nanosleep, ClockId, ClockNanosleepFlags};

use crate::cpuset::CpuSet;
use crate::histogram::Histogram;
use crate::knob::errno::{explain, WriteKind};
use crate::knob::task::{read_back, set_affinity, set_policy};
use crate::knob::SchedSettings;
use crate::policy::Policy;
use crate::sampler::parse::{parse_proc_stat, CpuTimes};

/// cyclictest's default interval (-i 1000).
pub const INTERVAL: Duration = Duration::from_millis(1);

/// Extra time a probe thread may take past its duration before it gives up on its own.
const GRACE: Duration = Duration::from_secs(2);

/// Timer wakeup latencies of one run.
#[derive(Clone, Debug)]
pub struct Latency {
    /// wakeup - deadline, ns.
    pub hist: Histogram,
    /// The p99 of each tenth of the wakeups, in order (ns): the run's own spread.
    pub chunk_p99_ns: Vec<u64>,
    /// Deadlines skipped because the wakeup came after the next one (cyclictest skips too).
    pub overruns: u64,
    /// The thread's timer slack while SCHED_OTHER (RT threads get none from the kernel).
    pub timer_slack_ns: Option<u64>,
    /// The thread's policy as the kernel reported it just before the thread ended.
    pub ended_as: Option<Policy>,
}

/// Demotes the calling thread to SCHED_OTHER when dropped, also while a panic unwinds,
/// so no thread of the check ever ends (or lingers) real-time.
pub(super) struct RtGuard;

impl Drop for RtGuard {
    fn drop(&mut self) {
        // Lowering one's own policy is always allowed; nothing useful to do if it is not.
        let _ = set_policy(0, &SchedSettings::default());
    }
}

fn now_ns() -> Result<i64> {
    let t = clock_gettime(ClockId::CLOCK_MONOTONIC).context("clock_gettime(CLOCK_MONOTONIC)")?;
    Ok(t.tv_sec() * 1_000_000_000 + t.tv_nsec())
}

/// Sleep until the absolute CLOCK_MONOTONIC time `deadline_ns`.
fn sleep_until(deadline_ns: i64) -> Result<()> {
    let ts = TimeSpec::new(
        deadline_ns.div_euclid(1_000_000_000),
        deadline_ns.rem_euclid(1_000_000_000),
    );
    // A signal (Ctrl-C lands on any thread) interrupts the sleep; an absolute deadline
    // can simply be slept to again. Bounded in case signals keep coming.
    for _ in 0..100 {
        match clock_nanosleep(
            ClockId::CLOCK_MONOTONIC,
            ClockNanosleepFlags::TIMER_ABSTIME,
            &ts,
        ) {
            Err(Errno::EINTR) => continue,
            r => return r.map(drop).context("clock_nanosleep"),
        }
    }
    Ok(())
}

fn timer_slack_ns() -> Option<u64> {
    nix::sys::prctl::get_timerslack()
        .ok()
        .and_then(|v| u64::try_from(v).ok())
}

/// Join a probe thread; a panic in it becomes an error.
pub(super) fn join<T>(h: JoinHandle<Result<T>>, what: &str) -> Result<T> {
    h.join()
        .map_err(|_| anyhow!("the {what} thread panicked"))?
}

/// Make the calling thread SCHED_FIFO `priority` until the guard drops.
pub(super) fn become_fifo(priority: u32) -> Result<RtGuard> {
    let fifo = SchedSettings {
        policy: Policy::Fifo,
        priority,
        ..SchedSettings::default()
    };
    set_policy(0, &fifo).map_err(|e| {
        anyhow!(
            "setting SCHED_FIFO priority {priority} failed: {}",
            explain(
                e,
                WriteKind::Policy {
                    realtime: true,
                    deadline: false
                }
            )
        )
    })?;
    Ok(RtGuard)
}

/// Sleep to each next deadline `INTERVAL` apart for `duration`: how late each wakeup
/// came (ns), and how many deadlines were skipped.
fn wakeups(duration: Duration, stop: &AtomicBool) -> Result<(Vec<u64>, u64)> {
    let interval = INTERVAL.as_nanos() as i64;
    let wanted = (duration.as_nanos() / INTERVAL.as_nanos()).max(1) as usize;
    let hard_end = Instant::now() + duration + GRACE;
    // Written through before the loop, so no page fault lands inside it (cyclictest -m
    // has the same effect with mlockall); `vec![0; n]` would leave the pages unmapped.
    let mut values = Vec::with_capacity(wanted);
    values.resize(wanted, u64::MAX);
    let mut taken = 0;
    let mut overruns = 0;
    let mut next = now_ns()? + interval;
    while taken < wanted {
        if stop.load(Ordering::Relaxed) || Instant::now() > hard_end {
            break;
        }
        sleep_until(next)?;
        let now = now_ns()?;
        values[taken] = u64::try_from(now - next).unwrap_or(0);
        taken += 1;
        next += interval;
        while next <= now {
            next += interval;
            overruns += 1;
        }
    }
    values.truncate(taken);
    Ok((values, overruns))
}

/// cyclictest -i 1000 -t1 [-p PRIO]: sleep to each next 1 ms deadline with
/// clock_nanosleep(TIMER_ABSTIME) and record how late the wakeup came.
pub fn timer_latency(
    fifo_priority: Option<u32>,
    duration: Duration,
    stop: &Arc<AtomicBool>,
) -> Result<Latency> {
    let stop = Arc::clone(stop);
    let handle = std::thread::Builder::new()
        .name("check-latency".into())
        .spawn(move || -> Result<Latency> {
            let timer_slack_ns = timer_slack_ns();
            let guard = fifo_priority.map(become_fifo).transpose()?;
            let (values, overruns) = wakeups(duration, &stop)?;
            drop(guard);
            Ok(Latency {
                chunk_p99_ns: chunk_p99(&values, LATENCY_CHUNKS),
                hist: Histogram::from_values(values),
                overruns,
                timer_slack_ns,
                ended_as: read_back(0).ok().map(|s| s.policy),
            })
        })
        .context("starting the latency thread")?;
    join(handle, "latency")
}

/// How many parts the wakeups are split into for their spread.
const LATENCY_CHUNKS: usize = 10;

/// The p99 (nearest rank) of each of `chunks` consecutive, equal parts of `values`;
/// none when a part would hold fewer than 10 values (its p99 would be its maximum).
fn chunk_p99(values: &[u64], chunks: usize) -> Vec<u64> {
    let size = values.len() / chunks.max(1);
    if size < 10 {
        return Vec::new();
    }
    values
        .chunks_exact(size)
        .map(|c| {
            let mut sorted = c.to_vec();
            sorted.sort_unstable();
            // Nearest rank: the smallest value with at least 99 % of the part at or below.
            let rank = (sorted.len() * 99).div_ceil(100).max(1);
            sorted[rank - 1]
        })
        .collect()
}

pub(super) fn pin(cpu: usize) -> Result<()> {
    set_affinity(0, &CpuSet::single(cpu)).map_err(|e| {
        anyhow!(
            "pinning to CPU {cpu} failed: {}",
            explain(e, WriteKind::Affinity)
        )
    })
}

fn thread_cpu_ns() -> Result<i64> {
    let t = clock_gettime(ClockId::CLOCK_THREAD_CPUTIME_ID)
        .context("clock_gettime(CLOCK_THREAD_CPUTIME_ID)")?;
    Ok(t.tv_sec() * 1_000_000_000 + t.tv_nsec())
}

/// A multiply-add loop for `slice` of wall time: iterations per second of the CPU time
/// the thread got, and per second of wall time.
fn spin_for(slice: Duration) -> Result<(f64, f64)> {
    let start = Instant::now();
    let cpu_start = thread_cpu_ns()?;
    let mut x = 1u64;
    let mut n = 0u64;
    while start.elapsed() < slice {
        for _ in 0..4096 {
            // black_box keeps the compiler from folding the loop away.
            x = std::hint::black_box(
                x.wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407),
            );
        }
        n += 4096;
    }
    let wall = start.elapsed().as_secs_f64();
    let cpu = (thread_cpu_ns()? - cpu_start) as f64 / 1e9;
    let per = |s: f64| if s > 0.0 { n as f64 / s } else { 0.0 };
    Ok((per(cpu), per(wall)))
}

/// Spin rates per CPU (in the order asked).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SpinRates {
    /// Iterations per second of the thread's own CPU time, each slice: the CPU's speed,
    /// whatever else shares it (the kernel leaves steal out of a task's runtime).
    pub per_cpu_s: Vec<Vec<f64>>,
    /// Iterations per second of wall time, each slice: what a pinned task gets here.
    pub per_wall_s: Vec<Vec<f64>>,
}

/// Spin rates on each CPU: `rounds` passes over the CPUs, `slice` on each per pass
/// (interleaved, so a passing disturbance hits one slice, not one CPU).
pub fn spin_rates(
    cpus: &[usize],
    slice: Duration,
    rounds: usize,
    stop: &Arc<AtomicBool>,
) -> Result<SpinRates> {
    let cpus = cpus.to_vec();
    let stop = Arc::clone(stop);
    let handle = std::thread::Builder::new()
        .name("check-spin".into())
        .spawn(move || -> Result<SpinRates> {
            let mut out = SpinRates {
                per_cpu_s: vec![Vec::new(); cpus.len()],
                per_wall_s: vec![Vec::new(); cpus.len()],
            };
            for _ in 0..rounds {
                for (i, &cpu) in cpus.iter().enumerate() {
                    if stop.load(Ordering::Relaxed) {
                        return Ok(out);
                    }
                    pin(cpu)?;
                    let (cpu_rate, wall_rate) = spin_for(slice)?;
                    out.per_cpu_s[i].push(cpu_rate);
                    out.per_wall_s[i].push(wall_rate);
                }
            }
            Ok(out)
        })
        .context("starting the spin thread")?;
    join(handle, "spin")
}

/// CPU time (user + system) of this process and its reaped children (the preset
/// workers), in seconds.
pub fn own_cpu_s() -> f64 {
    use nix::sys::resource::{getrusage, UsageWho};
    let secs = |who| {
        getrusage(who).map_or(0.0, |u| {
            let t = |tv: nix::sys::time::TimeVal| tv.tv_sec() as f64 + tv.tv_usec() as f64 / 1e6;
            t(u.user_time()) + t(u.system_time())
        })
    };
    secs(UsageWho::RUSAGE_SELF) + secs(UsageWho::RUSAGE_CHILDREN)
}

/// CPUs kept busy on average by everything but us between two snapshots `wall_s`
/// apart: busy ticks minus our own CPU time (`own_s`), never below 0.
pub fn other_load_cpus(a: &StatSnapshot, b: &StatSnapshot, own_s: f64, wall_s: f64) -> f64 {
    if wall_s <= 0.0 {
        return 0.0;
    }
    let hz = crate::system::clock_ticks_per_s() as f64;
    let busy_s = b.total.busy().saturating_sub(a.total.busy()) as f64 / hz;
    ((busy_s - own_s) / wall_s).max(0.0)
}

/// /proc/stat at one moment.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatSnapshot {
    pub total: CpuTimes,
    pub cpus: Vec<CpuTimes>,
}

pub fn read_proc_stat() -> Option<StatSnapshot> {
    let buf = std::fs::read("/proc/stat").ok()?;
    let mut snap = StatSnapshot::default();
    parse_proc_stat(&buf, &mut snap.total, &mut snap.cpus).then_some(snap)
}

fn steal_share(a: &CpuTimes, b: &CpuTimes) -> f64 {
    let total = b.total().saturating_sub(a.total());
    if total == 0 {
        return 0.0;
    }
    b.steal.saturating_sub(a.steal) as f64 / total as f64
}

/// Steal share of all time between two snapshots: overall, and per CPU present in both.
pub fn steal_shares(a: &StatSnapshot, b: &StatSnapshot) -> (f64, Vec<(usize, f64)>) {
    let per_cpu = a
        .cpus
        .iter()
        .zip(&b.cpus)
        .enumerate()
        .filter(|(_, (x, y))| y.total() > x.total())
        .map(|(cpu, (x, y))| (cpu, steal_share(x, y)))
        .collect();
    (steal_share(&a.total, &b.total), per_cpu)
}

/// Measures what other processes do to the CPUs while one experiment runs.
pub struct LoadWindow {
    stat: Option<StatSnapshot>,
    own_s: f64,
    start: Instant,
}

impl LoadWindow {
    pub fn start() -> LoadWindow {
        LoadWindow {
            stat: read_proc_stat(),
            own_s: own_cpu_s(),
            start: Instant::now(),
        }
    }

    /// The /proc/stat snapshot taken at the start.
    pub fn stat(&self) -> Option<&StatSnapshot> {
        self.stat.as_ref()
    }

    pub fn elapsed_s(&self) -> f64 {
        self.start.elapsed().as_secs_f64()
    }

    /// CPUs kept busy by other processes since the start, None if /proc/stat is unreadable.
    pub fn other_load(&self) -> Option<f64> {
        let now = read_proc_stat()?;
        Some(other_load_cpus(
            self.stat.as_ref()?,
            &now,
            own_cpu_s() - self.own_s,
            self.start.elapsed().as_secs_f64(),
        ))
    }
}

/// Whether this is a virtual machine: the CPU says so, a hypervisor is registered, or
/// the kernel has ever counted steal time (only hypervisors steal).
pub fn is_vm() -> bool {
    let flag = std::fs::read_to_string("/proc/cpuinfo").is_ok_and(|c| {
        c.lines()
            .any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "hypervisor"))
    });
    let hypervisor =
        std::fs::read_to_string("/sys/hypervisor/type").is_ok_and(|t| !t.trim().is_empty());
    let stolen = read_proc_stat().is_some_and(|s| s.total.steal > 0);
    flag || hypervisor || stolen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn times(busy: u64, idle: u64, steal: u64) -> CpuTimes {
        CpuTimes {
            user: busy,
            idle,
            steal,
            ..CpuTimes::default()
        }
    }

    #[test]
    fn steal_share_per_cpu_and_total() {
        let a = StatSnapshot {
            total: times(100, 100, 0),
            cpus: vec![times(50, 50, 0), times(50, 50, 0)],
        };
        let b = StatSnapshot {
            total: times(250, 130, 20),
            cpus: vec![times(150, 50, 0), times(100, 80, 20)],
        };
        let (total, per_cpu) = steal_shares(&a, &b);
        assert!((total - 0.1).abs() < 1e-12, "{total}");
        assert_eq!(per_cpu.len(), 2);
        assert_eq!(per_cpu[0], (0, 0.0));
        assert!((per_cpu[1].1 - 0.2).abs() < 1e-12);
        // No time passed: no share, no division by zero.
        assert_eq!(steal_shares(&a, &a), (0.0, Vec::new()));
        // 150 busy ticks (1.5 s at USER_HZ 100) over 1 s, 0.5 s of it ours: 1 other CPU.
        if crate::system::clock_ticks_per_s() == 100 {
            assert!((other_load_cpus(&a, &b, 0.5, 1.0) - 1.0).abs() < 1e-9);
            assert_eq!(other_load_cpus(&a, &b, 5.0, 1.0), 0.0);
        }
    }

    #[test]
    fn chunk_p99_is_the_nearest_rank_of_each_part() {
        // Two parts of 100: 1..=100 and 101..=200; the 99th smallest of each.
        let values: Vec<u64> = (1..=200).collect();
        assert_eq!(chunk_p99(&values, 2), vec![99, 199]);
        // A leftover shorter than a part is left out, and tiny parts give nothing.
        assert_eq!(chunk_p99(&values[..205.min(values.len())], 2).len(), 2);
        assert!(chunk_p99(&values[..50], 10).is_empty());
    }

    #[test]
    fn the_latency_thread_measures_and_never_ends_real_time() {
        let stop = Arc::new(AtomicBool::new(false));
        let l = timer_latency(None, Duration::from_millis(50), &stop).expect("latency");
        assert!(l.hist.count >= 10, "{}", l.hist.count);
        assert_eq!(l.ended_as, Some(Policy::Other));
        assert!(l.timer_slack_ns.is_some());
        // FIFO needs root; the thread must be SCHED_OTHER again before it ends.
        if nix::unistd::geteuid().is_root() {
            let l = timer_latency(Some(80), Duration::from_millis(50), &stop).expect("fifo");
            assert!(l.hist.count >= 10);
            assert_eq!(l.ended_as, Some(Policy::Other));
        }
    }
}
