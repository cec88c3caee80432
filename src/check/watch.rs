//! Watches what other programs do to the RT bandwidth while an experiment runs.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::sampler::parse::{parse_schedstat, parse_stat, Schedstat};

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

#[cfg(test)]
mod tests {
    use std::sync::mpsc;

    use super::*;
    use crate::check::measure::become_fifo;

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
        let (ack, acks) = mpsc::channel::<anyhow::Result<i32>>();
        let sleeper = std::thread::Builder::new()
            .name("rt-sleeper".into())
            .spawn(move || {
                let tid = nix::unistd::gettid().as_raw();
                let _fifo = match become_fifo(1) {
                    Ok(g) => g,
                    Err(e) => {
                        let _ = ack.send(Err(e));
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
        assert_eq!(answer().ok(), Some(tid));
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
