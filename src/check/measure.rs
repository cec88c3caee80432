//! The check's own probes: cyclictest-like wakeups, perf-bench pipe ping-pong, pinned spins.

use std::collections::HashMap;
use std::fs::File;
use std::io::{ErrorKind, Read, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{anyhow, Context, Result};
use nix::errno::Errno;
use nix::sys::time::TimeSpec;
use nix::time::{clock_gettime, clock_nanosleep, ClockId, ClockNanosleepFlags};

use crate::cpuset::CpuSet;
use crate::knob::errno::{explain, WriteKind};
use crate::knob::task::{read_back, set_affinity, set_policy};
use crate::knob::{Policy, SchedSettings};
use crate::sampler::parse::{parse_proc_stat, parse_schedstat, parse_stat, CpuTimes, Schedstat};
use crate::workload::histogram::Histogram;

/// cyclictest's default interval (-i 1000).
pub const INTERVAL: Duration = Duration::from_millis(1);

/// Extra time a probe thread may take past its duration before it gives up on its own.
const GRACE: Duration = Duration::from_secs(2);

/// Timer wakeup latencies of one run.
#[derive(Clone, Debug)]
pub struct Latency {
    /// wakeup - deadline, ns.
    pub hist: Histogram,
    /// Deadlines skipped because the wakeup came after the next one (cyclictest skips too).
    pub overruns: u64,
    /// The thread's timer slack while SCHED_OTHER (RT threads get none from the kernel).
    pub timer_slack_ns: Option<u64>,
    /// The thread's policy as the kernel reported it just before the thread ended.
    pub ended_as: Option<Policy>,
}

/// Demotes the calling thread to SCHED_OTHER when dropped, also while a panic unwinds,
/// so no thread of the check ever ends (or lingers) real-time.
struct RtGuard;

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
fn become_fifo(priority: u32) -> Result<RtGuard> {
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
    let mut values = Vec::with_capacity(wanted);
    let mut overruns = 0;
    let mut next = now_ns()? + interval;
    while values.len() < wanted {
        if stop.load(Ordering::Relaxed) || Instant::now() > hard_end {
            break;
        }
        sleep_until(next)?;
        let now = now_ns()?;
        values.push(u64::try_from(now - next).unwrap_or(0));
        next += interval;
        while next <= now {
            next += interval;
            overruns += 1;
        }
    }
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
                hist: Histogram::from_values(values),
                overruns,
                timer_slack_ns,
                ended_as: read_back(0).ok().map(|s| s.policy),
            })
        })
        .context("starting the latency thread")?;
    join(handle, "latency")
}

/// Pipe ping-pong as perf bench sched pipe counts it.
#[derive(Clone, Debug)]
pub struct PingPong {
    /// Round trips: one write+read on each side.
    pub loops: u64,
    pub elapsed: Duration,
    /// us per round trip of each ~tenth of the run (for the spread).
    pub chunks_us: Vec<f64>,
}

impl PingPong {
    /// perf bench sched pipe's usecs/op.
    pub fn us_per_op(&self) -> f64 {
        if self.loops == 0 {
            return 0.0;
        }
        self.elapsed.as_secs_f64() * 1e6 / self.loops as f64
    }

    pub fn chunk_range(&self) -> Option<(f64, f64)> {
        let min = self.chunks_us.iter().copied().reduce(f64::min)?;
        let max = self.chunks_us.iter().copied().reduce(f64::max)?;
        Some((min, max))
    }
}

pub(super) fn pin(cpu: usize) -> Result<()> {
    set_affinity(0, &CpuSet::single(cpu)).map_err(|e| {
        anyhow!(
            "pinning to CPU {cpu} failed: {}",
            explain(e, WriteKind::Affinity)
        )
    })
}

/// The echo side of the ping-pong: pinned to `cpu` (says on `ready` whether that
/// worked), it sends back every message until the ping side closes its end.
fn echo_side(cpu: usize, mut r: File, mut w: File, ready: mpsc::Sender<Result<()>>) -> Result<u64> {
    let pinned = pin(cpu);
    let failed = pinned.is_err();
    let _ = ready.send(pinned);
    if failed {
        return Ok(0);
    }
    let mut buf = [0u8; 4];
    let mut n = 0;
    loop {
        match r.read_exact(&mut buf) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::UnexpectedEof => return Ok(n),
            Err(e) => return Err(e).context("echo side reading"),
        }
        w.write_all(&buf).context("echo side writing")?;
        n += 1;
    }
}

/// The ping side of the ping-pong, pinned to `cpu`: round trips for `duration`, timed
/// per ~tenth of the run.
fn ping_side(
    cpu: usize,
    mut w: File,
    mut r: File,
    duration: Duration,
    stop: &AtomicBool,
) -> Result<PingPong> {
    pin(cpu)?;
    let chunk = (duration / 10).max(Duration::from_millis(20));
    let mut buf = [0u8; 4];
    let mut loops = 0u64;
    let mut chunks_us = Vec::new();
    let start = Instant::now();
    while start.elapsed() < duration && !stop.load(Ordering::Relaxed) {
        let chunk_start = Instant::now();
        let mut n = 0u64;
        // Reading the clock every 16 round trips costs < 1 % of one.
        while chunk_start.elapsed() < chunk {
            for _ in 0..16 {
                w.write_all(&buf).context("ping side writing")?;
                r.read_exact(&mut buf).context("ping side reading")?;
            }
            n += 16;
        }
        chunks_us.push(chunk_start.elapsed().as_secs_f64() * 1e6 / n as f64);
        loops += n;
    }
    Ok(PingPong {
        loops,
        elapsed: start.elapsed(),
        chunks_us,
    })
}

/// `perf bench sched pipe` with the two sides pinned to `cpu_a` and `cpu_b`: 4-byte
/// messages through two pipes, for `duration`.
pub fn pipe_pingpong(
    cpu_a: usize,
    cpu_b: usize,
    duration: Duration,
    stop: &Arc<AtomicBool>,
) -> Result<PingPong> {
    let (to_echo_r, to_echo_w) = nix::unistd::pipe().context("creating a pipe")?;
    let (from_echo_r, from_echo_w) = nix::unistd::pipe().context("creating a pipe")?;
    let (ready_tx, ready_rx) = mpsc::channel::<Result<()>>();
    // The echo side ends when the ping side closes its write end (EOF), whatever way the
    // ping side ends, so it cannot outlive the measurement.
    let echo = std::thread::Builder::new()
        .name("check-pong".into())
        .spawn(move || {
            echo_side(
                cpu_b,
                File::from(to_echo_r),
                File::from(from_echo_w),
                ready_tx,
            )
        })
        .context("starting the echo thread")?;
    let ready = ready_rx
        .recv_timeout(GRACE)
        .unwrap_or_else(|_| Err(anyhow!("the echo thread did not start")));
    if let Err(e) = ready {
        // Closing our ends releases the echo thread if it got that far.
        drop((to_echo_w, from_echo_r));
        let _ = join(echo, "echo");
        return Err(e);
    }
    let stop = Arc::clone(stop);
    let ping = std::thread::Builder::new()
        .name("check-ping".into())
        .spawn(move || {
            ping_side(
                cpu_a,
                File::from(to_echo_w),
                File::from(from_echo_r),
                duration,
                &stop,
            )
        })
        .context("starting the ping thread")?;
    let result = join(ping, "ping");
    let echoed = join(echo, "echo");
    let result = result?;
    echoed?;
    Ok(result)
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

/// What changed around an experiment while it ran.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Watched {
    /// Every distinct "sched_rt_runtime_us/sched_rt_period_us", in order.
    pub rt_sysctls: Vec<String>,
    /// FIFO/RR threads of other programs that ran while it was watched, as
    /// "comm (pid/tid)".
    pub foreign_rt: Vec<String>,
}

/// Watches the RT throttling sysctls and other programs' real-time tasks while an
/// experiment runs: another program (a sweep, an admin) may change or compete with them,
/// and then the experiment cannot be judged.
pub struct Watch {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Watched>>,
}

/// "runtime/period" as the kernel shows them now.
fn rt_sysctls() -> String {
    let read = |f: &str| {
        std::fs::read_to_string(format!("/proc/sys/kernel/{f}"))
            .map_or_else(|_| "?".to_string(), |s| s.trim().to_string())
    };
    format!(
        "{}/{}",
        read("sched_rt_runtime_us"),
        read("sched_rt_period_us")
    )
}

/// The parent pid from /proc/PID/stat (field 4, after the comm in parentheses).
fn ppid_of(stat: &[u8]) -> Option<i32> {
    let paren = stat.iter().rposition(|&b| b == b')')?;
    let rest = std::str::from_utf8(stat.get(paren + 1..)?).ok()?;
    rest.split_whitespace().nth(1)?.parse().ok()
}

/// The real-time threads of user processes other than `me` and its children, and the
/// CPU time each had used at the last look: one that ran in between competes with the
/// experiment for the RT bandwidth, one that slept all along (an idle audio daemon)
/// does not. Sampling only what is runnable at each look would miss a thread that runs
/// in short bursts between looks.
struct ForeignRt {
    me: i32,
    /// (pid, tid) -> CPU time at the last look (schedstat's ns, or stat's ticks).
    seen: HashMap<(i32, i32), u64>,
}

impl ForeignRt {
    /// Takes note of the real-time threads there are now, reporting none: what ran
    /// before the watch began is none of its business.
    fn new(me: i32) -> ForeignRt {
        let mut f = ForeignRt {
            me,
            seen: HashMap::new(),
        };
        f.scan();
        f
    }

    /// The FIFO/RR threads that ran since the last look (their CPU time moved), are
    /// runnable now, or are new since then, as "comm (pid/tid)".
    fn scan(&mut self) -> Vec<String> {
        let mut out = Vec::new();
        let mut now = HashMap::new();
        let Ok(procs) = std::fs::read_dir("/proc") else {
            return out;
        };
        for p in procs.flatten() {
            let Some(pid) = p.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(stat) = std::fs::read(format!("/proc/{pid}/stat")) else {
                continue;
            };
            // Kernel threads (children of kthreadd, pid 2) are the kernel's own business.
            let ppid = ppid_of(&stat);
            if pid == self.me || pid == 2 || ppid == Some(self.me) || ppid == Some(2) {
                continue;
            }
            let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
                continue;
            };
            for t in tasks.flatten() {
                let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                    continue;
                };
                let Some(st) = std::fs::read(t.path().join("stat"))
                    .ok()
                    .and_then(|b| parse_stat(&b))
                else {
                    continue;
                };
                let rt = matches!(st.policy, Some(p) if p == libc::SCHED_FIFO as u32 || p == libc::SCHED_RR as u32);
                if !rt {
                    continue;
                }
                // "0 0 0" (CONFIG_SCHED_INFO off) never moves: the tick counts then.
                let cpu = std::fs::read(t.path().join("schedstat"))
                    .ok()
                    .and_then(|b| parse_schedstat(&b))
                    .filter(|s| *s != Schedstat::default())
                    .map_or(st.utime_ticks + st.stime_ticks, |s| s.run_ns);
                now.insert((pid, tid), cpu);
                if st.state == b'R' || self.seen.get(&(pid, tid)) != Some(&cpu) {
                    let comm = std::fs::read_to_string(t.path().join("comm"))
                        .map_or_else(|_| "?".to_string(), |c| c.trim().to_string());
                    out.push(format!("{comm} ({pid}/{tid})"));
                }
            }
        }
        self.seen = now;
        out
    }
}

impl Watch {
    /// Start watching (sysctls every 50 ms, tasks every 200 ms); the thread gives up by
    /// itself after `limit`.
    pub fn start(limit: Duration) -> Watch {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let me = std::process::id() as i32;
        let handle = std::thread::Builder::new()
            .name("check-watch".into())
            .spawn(move || {
                let start = Instant::now();
                let mut w = Watched {
                    rt_sysctls: vec![rt_sysctls()],
                    foreign_rt: Vec::new(),
                };
                let mut foreign = ForeignRt::new(me);
                let mut round = 0u32;
                while !flag.load(Ordering::Relaxed) && start.elapsed() < limit {
                    std::thread::sleep(Duration::from_millis(50));
                    let now = rt_sysctls();
                    if w.rt_sysctls.last() != Some(&now) {
                        w.rt_sysctls.push(now);
                    }
                    round += 1;
                    if round.is_multiple_of(4) {
                        for t in foreign.scan() {
                            if !w.foreign_rt.contains(&t) {
                                w.foreign_rt.push(t);
                            }
                        }
                    }
                }
                w
            })
            .ok();
        Watch { stop, handle }
    }

    /// Stop watching and say what was seen.
    pub fn finish(mut self) -> Watched {
        self.stop.store(true, Ordering::Relaxed);
        let seen = self.handle.take().and_then(|h| h.join().ok());
        seen.unwrap_or_else(|| Watched {
            rt_sysctls: vec![rt_sysctls()],
            foreign_rt: Vec::new(),
        })
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
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
    fn ppid_from_a_stat_line_with_a_nasty_comm() {
        assert_eq!(ppid_of(b"42 (a) b (c)) R 7 42 42 0"), Some(7));
        assert_eq!(ppid_of(b"garbage"), None);
    }

    #[test]
    fn the_watch_sees_the_sysctls_and_not_our_own_threads() {
        let w = Watch::start(Duration::from_secs(5));
        std::thread::sleep(Duration::from_millis(250));
        let seen = w.finish();
        assert!(!seen.rt_sysctls.is_empty());
        let me = std::process::id();
        assert!(
            seen.foreign_rt
                .iter()
                .all(|t| !t.contains(&format!("({me}/"))),
            "{:?}",
            seen.foreign_rt
        );
    }

    #[test]
    fn pingpong_arithmetic() {
        let p = PingPong {
            loops: 1000,
            elapsed: Duration::from_millis(8),
            chunks_us: vec![7.5, 8.5],
        };
        assert!((p.us_per_op() - 8.0).abs() < 1e-9);
        assert_eq!(p.chunk_range(), Some((7.5, 8.5)));
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

    /// Waits (up to 5 s) until thread `tid` of this process sleeps and its CPU time has
    /// stopped moving: /proc shows 'S' as soon as it is about to block, a moment before
    /// it is switched out.
    fn asleep(tid: i32) {
        let path = format!("/proc/self/task/{tid}");
        let read = || {
            let stat = std::fs::read(format!("{path}/stat"))
                .ok()
                .and_then(|b| parse_stat(&b));
            let ran = std::fs::read(format!("{path}/schedstat"))
                .ok()
                .and_then(|b| parse_schedstat(&b));
            (stat.map(|s| s.state), ran)
        };
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut last = read();
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
            let now = read();
            if now.0 == Some(b'S') && now == last {
                return;
            }
            last = now;
        }
        panic!("thread {tid} never settled asleep: {last:?}");
    }

    #[test]
    fn a_foreign_rt_thread_is_reported_once_it_ran_and_not_once_it_is_gone() {
        if !crate::testing::require(
            "root (a SCHED_FIFO thread needs CAP_SYS_NICE)",
            crate::system::is_root(),
        ) {
            return;
        }
        // A FIFO thread of this process that only ever sleeps on a channel, woken by
        // the test: it runs for microseconds at a time, never spins. Told that another
        // pid is "ours", the scanner sees this process as another program.
        const NOT_US: i32 = -1;
        let me = std::process::id() as i32;
        let (wake, wakes) = mpsc::channel::<bool>();
        let (ack, acks) = mpsc::channel::<Result<i32, String>>();
        let sleeper = std::thread::Builder::new()
            .name("rt-sleeper".into())
            .spawn(move || {
                let tid = nix::unistd::gettid().as_raw();
                let _fifo = match become_fifo(1) {
                    Ok(g) => g,
                    Err(e) => {
                        let _ = ack.send(Err(e.to_string()));
                        return;
                    }
                };
                let _ = ack.send(Ok(tid));
                // true: wake once; false, a dropped sender or 30 s: end (SCHED_OTHER
                // again first, by the guard).
                while let Ok(true) = wakes.recv_timeout(Duration::from_secs(30)) {
                    let _ = ack.send(Ok(tid));
                }
            })
            .expect("spawn");
        let answer = || {
            acks.recv_timeout(Duration::from_secs(10))
                .expect("the sleeper answers")
        };
        let tid = answer().expect("SCHED_FIFO as root");
        let name = format!("rt-sleeper ({me}/{tid})");
        asleep(tid);
        let mut others = ForeignRt::new(NOT_US);
        let mut ours = ForeignRt::new(me);
        let slept = others.scan();
        assert!(!slept.contains(&name), "it slept all along: {slept:?}");
        wake.send(true).expect("wake");
        assert_eq!(answer(), Ok(tid));
        asleep(tid);
        let ran = others.scan();
        assert!(ran.contains(&name), "it ran once: {ran:?}");
        assert!(
            !ours.scan().iter().any(|t| t.contains(&format!("({me}/"))),
            "our own"
        );
        wake.send(false).expect("stop");
        sleeper.join().expect("the sleeper ends");
        let gone = others.scan();
        assert!(
            !gone.iter().any(|t| t.contains(&format!("/{tid})"))),
            "{gone:?}"
        );
        let fresh = ForeignRt::new(NOT_US).scan();
        assert!(
            !fresh.iter().any(|t| t.contains(&format!("/{tid})"))),
            "{fresh:?}"
        );
    }
}
