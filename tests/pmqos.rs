//! `sys.cpu_dma_latency` against the kernel (the request is held while set and gone when
//! released or killed) and the PM QoS check finding against cyclictest, side by side.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use schedlab::check::pmqos::{self, median};
use schedlab::knob::sys::pmqos::{other_holders, read_target, DEFAULT_US, DEVICE};
use schedlab::knob::sys::SystemKnobs;
use schedlab::lab::session::{route_typed, Routed};
use schedlab::preset::setting::Setting;

fn target() -> i32 {
    read_target(Path::new(DEVICE)).unwrap_or_else(|e| panic!("reading {DEVICE}: {e}"))
}

/// Root and the device, the machine lock, and no other process's request in the way
/// (one that lingers past PATIENCE is named).
fn setup() -> Option<common::Serial> {
    if !common::require("root", common::is_root()) {
        return None;
    }
    if !Path::new(DEVICE).exists() {
        common::host_lacks(&format!("{DEVICE} (a kernel without PM QoS)"));
        return None;
    }
    let serial = common::serial();
    assert!(
        common::wait_until(common::PATIENCE, || target() == DEFAULT_US),
        "another process holds {DEVICE} at {} us: {:?}",
        target(),
        other_holders()
    );
    Some(serial)
}

/// `sys.NAME=VALUE` as the command line routes it, set through `sys`.
fn set(sys: &mut SystemKnobs, text: &str) -> Result<String, String> {
    let setting: Setting = text.parse().map_err(|e| format!("{e}"))?;
    match route_typed(&setting).map_err(|e| e.0)? {
        Routed::Sys(s) => sys.set(&s, false).map_err(|e| e.to_string()),
        _ => Err(format!("{text} is not a system knob")),
    }
}

/// Our file descriptors open on the device: one request at most, however often it is set.
fn own_requests() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| {
            d.flatten()
                .filter(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t == Path::new(DEVICE)))
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn the_knob_holds_its_request_replaces_it_and_drops_it() {
    let Some(_serial) = setup() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let journal = dir.path().join("journal.jsonl");
    {
        let mut sys = SystemKnobs::new(journal.clone());
        assert_eq!(set(&mut sys, "sys.cpu_dma_latency=0"), Ok("0".into()));
        assert_eq!(target(), 0, "held at 0");
        assert_eq!(set(&mut sys, "sys.cpu_dma_latency=50"), Ok("50".into()));
        assert_eq!((target(), own_requests()), (50, 1), "replaced, not added");
        assert_eq!(
            set(&mut sys, "sys.cpu_dma_latency=off"),
            Ok(DEFAULT_US.to_string())
        );
        assert_eq!((target(), own_requests()), (DEFAULT_US, 0), "dropped");
        let err = set(&mut sys, "sys.cpu_dma_latency=-1").expect_err("out of range");
        assert_eq!(err, "sys.cpu_dma_latency=-1: allowed 0..2000000000 us (held while schedlab runs), or off/default (drops the request)");
        assert_eq!(set(&mut sys, "sys.cpu_dma_latency=0"), Ok("0".into()));
        assert!(!journal.exists(), "an open file needs no journal");
        // Dropping the knobs (every exit path of a command) closes the request.
    }
    assert_eq!(target(), DEFAULT_US, "dropped with the knobs");
}

/// Other threads of this process spawning programs (as the other tests do) hold a copy
/// of the request's descriptor from each fork to its exec: released, the request must
/// still read as gone at once, every time. Rounds go on until the spawners have started
/// 1000 programs (a bare close read stale in about one round in eight).
#[test]
fn a_released_request_is_gone_at_once_while_other_threads_spawn() {
    let Some(_serial) = setup() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sys = SystemKnobs::new(dir.path().join("journal.jsonl"));
    common::rounds_beside_spawns("release read back", || {
        assert_eq!(set(&mut sys, "sys.cpu_dma_latency=50"), Ok("50".into()));
        let back = set(&mut sys, "sys.cpu_dma_latency=off");
        (back != Ok(DEFAULT_US.to_string()) || target() != DEFAULT_US).then_some(back)
    });
    assert!(
        common::wait_until(common::PATIENCE, || target() == DEFAULT_US),
        "left at {}",
        target()
    );
}

#[test]
fn a_run_holds_the_request_until_it_is_killed() {
    let Some(_serial) = setup() else {
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let journal = dir.path().join("journal.jsonl");
    let mut cmd = Command::new(common::exe());
    cmd.args(["run", "pipe-wakeup", "--duration", "60s"])
        .args(["--set", "sys.cpu_dma_latency=0"])
        .env("SCHEDLAB_JOURNAL", &journal)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut run = common::Spawned::spawn(&mut cmd, Some(&journal));
    let held = common::wait_until(common::PATIENCE, || {
        target() == 0 || !common::alive(run.id() as i32)
    });
    if !held || target() != 0 {
        // Ended early (refused, say, by a knob lock another schedlab holds): say why.
        let ended = run.wait_for_exit(Duration::from_secs(1));
        let mut err = String::new();
        if let (Some(_), Some(mut e)) = (ended, run.child().stderr.take()) {
            let _ = std::io::Read::read_to_string(&mut e, &mut err);
        }
        panic!(
            "the run never held {DEVICE} at 0 (target {}); it ended: {ended:?} {err}",
            target()
        );
    }
    let holders = other_holders();
    assert!(
        holders
            .iter()
            .any(|h| h.ends_with(&format!("({})", run.id()))),
        "the run holds it: {holders:?}"
    );
    // SIGKILL: no exit path of schedlab's own runs, the kernel closes the file.
    run.child().kill().expect("SIGKILL");
    assert!(run.wait_for_exit(common::PATIENCE).is_some());
    assert!(
        common::wait_until(common::PATIENCE, || target() == DEFAULT_US),
        "the request outlived the killed run: {} us, {:?}",
        target(),
        other_holders()
    );
    common::restore_journal(Some(&journal));

    let knobs = common::schedlab(&["knobs"]);
    let text = String::from_utf8_lossy(&knobs.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("sys.cpu_dma_latency"))
        .unwrap_or_else(|| panic!("no sys.cpu_dma_latency in `schedlab knobs`: {text}"));
    assert!(
        line.contains("2000000000") && line.contains("writable"),
        "{line}"
    );
    assert!(text.contains("note: not journaled"), "{text}");
}

/// One cyclictest chunk as the finding measures one: `-m -p80 -i1000 -t1`, `loops`
/// wakeups on `cpu`, `--laptop` when not `held`; its average and median latency, from
/// its 1 us histogram. Its main thread wakes every 10 ms to watch the measuring one,
/// and `-a` pins it beside it: it goes to another CPU, as our measuring thread has no
/// such neighbour.
fn cyclictest(held: bool, loops: u64, cpu: usize) -> Stat {
    let online: Vec<usize> = schedlab::system::online_cpus().iter().collect();
    let main = online.iter().find(|&&c| c != cpu).copied().unwrap_or(cpu);
    let mut cmd = Command::new("cyclictest");
    cmd.args(["-m", "-p80", "-i1000", "-t1", "-q"])
        .arg(format!("-h{HISTOGRAM_US}"))
        .arg(format!("-l{loops}"))
        .arg(format!("-a{cpu}"))
        .arg(format!("--mainaffinity={main}"));
    if !held {
        cmd.arg("--laptop");
    }
    let out = cmd.output().expect("run cyclictest");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cyclictest: {text} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stat = histogram_stat(&text).unwrap_or_else(|| panic!("no histogram: {text}"));
    // cyclictest records every loop but the first.
    assert!(stat.samples + 1 >= loops, "every loop ran: {text}");
    stat
}

/// cyclictest's histogram buckets, in us: a wake-up later than this is an overflow.
const HISTOGRAM_US: u64 = 10_000;

/// A chunk's numbers from `cyclictest -h` output: its own average and count ("# Avg
/// Latencies: 00031", whole us; "# Total: 000000099" in the buckets plus "# Histogram
/// Overflows: 00001" beyond them), and the median of its histogram
/// ("000017 000033": 33 wake-ups 17 us late; a bucket holds 17.000-17.999 us, its
/// middle stands for it), an overflow counting as later than every bucket.
fn histogram_stat(text: &str) -> Option<Stat> {
    let summary = |name: &str| -> Option<u64> {
        let line = text.lines().find_map(|l| l.strip_prefix(name))?;
        line.split_whitespace().next()?.parse().ok()
    };
    // "# Total" counts the wake-ups in the histogram's buckets; one later than the last
    // bucket is an overflow, counted apart (a 20 ms wake-up beside a CPU hog made a
    // 100-loop chunk read 98).
    let samples = summary("# Total:")? + summary("# Histogram Overflows:")?;
    let mut buckets = Vec::new();
    for line in text.lines().filter(|l| !l.starts_with('#')) {
        let mut f = line.split_whitespace();
        if let (Some(us), Some(n), None) = (f.next(), f.next(), f.next()) {
            buckets.push((us.parse::<u64>().ok()?, n.parse::<u64>().ok()?));
        }
    }
    let rank = samples.div_ceil(2).max(1);
    let mut seen = 0;
    let median_us = buckets
        .iter()
        .find(|(_, n)| {
            seen += n;
            seen >= rank
        })
        .map_or(HISTOGRAM_US, |(us, _)| *us);
    Some(Stat {
        avg_ns: summary("# Avg Latencies:")? as f64 * 1e3,
        median_ns: (median_us as f64 + 0.5) * 1e3,
        samples,
    })
}

/// (idle, all) ticks per CPU from /proc/stat (idle counts iowait too).
fn cpu_ticks() -> Vec<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
    stat.lines()
        .filter(|l| l.starts_with("cpu") && !l.starts_with("cpu "))
        .map(|l| {
            let f: Vec<u64> = l
                .split_whitespace()
                .skip(1)
                .filter_map(|x| x.parse().ok())
                .collect();
            let idle = f.get(3).copied().unwrap_or(0) + f.get(4).copied().unwrap_or(0);
            (idle, f.iter().take(8).sum())
        })
        .collect()
}

/// The CPU that idled most over 200 ms, and the share of the time it idled: a wake-up
/// leaves idle only on a CPU that idles, so that is where PM QoS makes its difference.
fn idlest_cpu() -> (usize, f64) {
    let a = cpu_ticks();
    std::thread::sleep(Duration::from_millis(200));
    let b = cpu_ticks();
    (0..a.len().min(b.len()))
        .map(|i| {
            let all = b[i].1.saturating_sub(a[i].1).max(1);
            (i, b[i].0.saturating_sub(a[i].0) as f64 / all as f64)
        })
        .max_by(|x, y| x.1.total_cmp(&y.1))
        .unwrap_or((0, 0.0))
}

/// A CPU that idles at least half the time, waited for while `deadline` allows (other
/// load comes and goes); the idlest one seen last if none does by then.
fn idle_cpu(deadline: Instant) -> (usize, f64) {
    loop {
        let (cpu, idle) = idlest_cpu();
        if idle >= 0.5 || Instant::now() > deadline {
            return (cpu, idle);
        }
    }
}

fn pin_self(cpu: usize) {
    let mut set = nix::sched::CpuSet::new();
    set.set(cpu).expect("cpu in range");
    nix::sched::sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
        .expect("pin the test thread");
}

/// One chunk's wake-up latency: average and median (ns), and how many wake-ups.
#[derive(Clone, Copy)]
struct Stat {
    avg_ns: f64,
    median_ns: f64,
    samples: u64,
}

/// Per-chunk latencies of the four series: ours and cyclictest's, without and with.
#[derive(Default)]
struct Series {
    ours: [Vec<Stat>; 2],
    cyclictest: [Vec<Stat>; 2],
}

impl Series {
    /// The median of the chunks' averages, us: the finding's own figure.
    fn med(v: &[Stat]) -> f64 {
        median(&v.iter().map(|c| c.avg_ns).collect::<Vec<_>>()) / 1e3
    }

    /// `rounds` rounds of four chunks of `loops` 1 ms wake-ups: ours and cyclictest's,
    /// without and with the request; and where each round ran.
    fn interleaved(rounds: usize, loops: u64) -> (Series, Vec<String>) {
        let each = Duration::from_millis(loops);
        let stop = Arc::new(AtomicBool::new(false));
        let mut s = Series::default();
        let mut cpus = Vec::new();
        let waits_end = Instant::now() + common::PATIENCE;
        let mut cpu = 0;
        for round in 0..rounds {
            // Both tools of a round measure on the same CPU: our measuring thread
            // inherits this thread's affinity, cyclictest gets -a. The idlest CPU is
            // looked for every fourth round (it takes a 200 ms look).
            if round % 4 == 0 {
                let idle;
                (cpu, idle) = idle_cpu(waits_end);
                cpus.push(format!("cpu{cpu} {:.0} % idle", idle * 100.0));
                pin_self(cpu);
            }
            // Without, then with, each tool in turn; who goes first alternates by
            // round so drift of the machine falls on both alike.
            for held in [false, true] {
                let i = usize::from(held);
                let ours = |s: &mut Series| {
                    let c = pmqos::chunk(held, each, &stop).expect("our chunk");
                    // Every loop ran, as cyclictest's: `loops` wake-ups at 1 ms (late ones
                    // skip deadlines, not wake-ups; only a stall of 2 s more ends it short).
                    assert_eq!(c.samples(), loops, "wake-ups in a {each:?} chunk at 1 ms");
                    let p50 = c.latency.hist.percentiles().map_or(0, |p| p.p50);
                    s.ours[i].push(Stat {
                        avg_ns: c.avg_ns(),
                        median_ns: p50 as f64,
                        samples: c.samples(),
                    });
                };
                if round % 2 == 0 {
                    ours(&mut s);
                    s.cyclictest[i].push(cyclictest(held, loops, cpu));
                } else {
                    s.cyclictest[i].push(cyclictest(held, loops, cpu));
                    ours(&mut s);
                }
            }
        }
        (s, cpus)
    }
}

#[test]
fn a_cyclictest_chunk_counts_its_overflows_and_takes_its_median_from_the_buckets() {
    // A chunk of 100 loops beside a CPU hog, as cyclictest printed it (empty buckets
    // left out): 98 in the buckets, 2 wake-ups later than 10 ms.
    let text = "# /dev/cpu_dma_latency set to 0us\n# Histogram\n000017 000000\n\
                000018 000002\n000019 000001\n000020 000002\n000022 000005\n\
                000023 000005\n000024 000007\n000025 000010\n000026 000008\n\
                000027 000013\n000028 000011\n000029 000007\n000030 000006\n\
                000031 000004\n000032 000005\n000033 000004\n000034 000002\n\
                000035 000001\n000036 000001\n000037 000001\n000038 000001\n\
                000054 000001\n000056 000001\n# Total: 000000098\n\
                # Min Latencies: 00018\n# Avg Latencies: 00369\n\
                # Max Latencies: 20127\n# Histogram Overflows: 00002\n\
                # Histogram Overflow at cycle number:\n# Thread 0: 00013 00023\n";
    let stat = histogram_stat(text).expect("parsed");
    assert_eq!(stat.samples, 100);
    // The 50th of 100 is in the 27 us bucket (40 wake-ups up to 26 us, 53 up to 27).
    assert_eq!(stat.median_ns, 27_500.0);
    assert_eq!(stat.avg_ns, 369_000.0);
    // More than half of them overflowing puts the median past the buckets.
    let late = text.replace("Overflows: 00002", "Overflows: 00099");
    assert_eq!(
        histogram_stat(&late).expect("parsed").median_ns,
        (HISTOGRAM_US as f64 + 0.5) * 1e3
    );
}

/// What the side-by-side comparison found: each tool's drop (without / with the
/// request) and ours against cyclictest, chunk by chunk.
#[derive(Debug)]
struct Comparison {
    /// cyclictest's drop, by its whole-test medians of the chunk averages.
    ct_drop: f64,
    /// Ours by the same rule (printed; mixes the host's regimes differently).
    ours_drop: f64,
    /// Ours / cyclictest per round (chunk medians, the same CPU moments apart), their
    /// median: without and with the request.
    off_ratio: f64,
    on_ratio: f64,
}

/// cyclictest's drop at or above this is an effect, at or below 1/this none, in between
/// either tool may say either: the finding's own threshold (1.3x) with 15 % either side.
const EFFECT_FROM: f64 = 1.3 * 1.15;
const NO_EFFECT_BELOW: f64 = 1.3 / 1.15;

impl Comparison {
    fn of(s: &Series) -> Comparison {
        // Each of our chunks against the cyclictest chunk beside it: this host flips the
        // wake-up path between regimes ~2x apart every few seconds, which a median over
        // the whole test would mix; neighbours share theirs. By the chunks' medians: one
        // wake-up the host delayed by milliseconds moves a 100-wake-up average by tens
        // of us (per-round ratios of averages ran 0.2-3.2).
        let paired = |i: usize| -> f64 {
            let r: Vec<f64> = s.ours[i]
                .iter()
                .zip(&s.cyclictest[i])
                .map(|(o, c)| o.median_ns / c.median_ns)
                .collect();
            median(&r)
        };
        Comparison {
            ct_drop: Series::med(&s.cyclictest[0]) / Series::med(&s.cyclictest[1]),
            ours_drop: Series::med(&s.ours[0]) / Series::med(&s.ours[1]),
            off_ratio: paired(0),
            on_ratio: paired(1),
        }
    }

    /// Our drop as the pairs carry cyclictest's over: ours = cyclictest x paired ratio
    /// on each side. The whole-test medians mix the host's two regimes differently for
    /// the two tools: one run beside a CPU hog read ours 1.08x against cyclictest's
    /// 1.43x with both paired medians at 1.00.
    fn ours_drop_paired(&self) -> f64 {
        self.ct_drop * self.off_ratio / self.on_ratio
    }

    /// What the host does, in cyclictest's words.
    fn host(&self) -> &'static str {
        if self.ct_drop >= EFFECT_FROM {
            "holding the request lowers timer latency here"
        } else if self.ct_drop <= NO_EFFECT_BELOW {
            "holding the request changes little here"
        } else {
            "the effect here is near the finding's threshold"
        }
    }

    /// Why ours and cyclictest disagree, or None when they agree on whatever this host
    /// does: with and without the request ours is within the bounds of cyclictest chunk
    /// by chunk, and both tools put the host on the same side of the finding's
    /// threshold (either side may fall in the band around it).
    fn disagreement(&self) -> Option<String> {
        // With the request both wake from polling: within 20 %. Without it the wake-up
        // leaves the host's idle, and by chunk averages ours once read 1.32x cyclictest
        // with every round alike (0.97-1.09 in about ten other runs); by medians six
        // runs here (three beside a CPU hog) read 0.98-1.11; one difference is left:
        // cyclictest's main thread wakes the other vCPU every 10 ms. Hence 0.8..1.3.
        if !(0.8..=1.3).contains(&self.off_ratio) || !(0.8..=1.2).contains(&self.on_ratio) {
            return Some(format!(
                "ours against cyclictest chunk by chunk: without {:.2} (allowed 0.8..1.3), with {:.2} (allowed 0.8..1.2)",
                self.off_ratio, self.on_ratio
            ));
        }
        let ours = self.ours_drop_paired();
        let effect = |d: f64| d >= EFFECT_FROM;
        let none = |d: f64| d <= NO_EFFECT_BELOW;
        if (effect(self.ct_drop) && none(ours)) || (none(self.ct_drop) && effect(ours)) {
            return Some(format!(
                "cyclictest shows a {:.2}x drop, ours {ours:.2}x through the pairs ({:.2}x by whole-test medians): one sees an effect the other does not",
                self.ct_drop, self.ours_drop
            ));
        }
        None
    }

    /// One line: what was compared and what each tool saw.
    fn summary(&self) -> String {
        format!(
            "{}: cyclictest {:.2}x, ours {:.2}x through the pairs ({:.2}x by whole-test medians); ours / cyclictest chunk by chunk {:.2} without, {:.2} with",
            self.host(),
            self.ct_drop,
            self.ours_drop_paired(),
            self.ours_drop,
            self.off_ratio,
            self.on_ratio
        )
    }
}

/// A series of `rounds` from chunk medians (us) per side: (ours, cyclictest) without,
/// (ours, cyclictest) with; averages equal to the medians.
fn recorded(rounds: &[[(f64, f64); 2]]) -> Series {
    let stat = |us: f64| Stat {
        avg_ns: us * 1e3,
        median_ns: us * 1e3,
        samples: 100,
    };
    let mut s = Series::default();
    for round in rounds {
        for (i, &(ours, ct)) in round.iter().enumerate() {
            s.ours[i].push(stat(ours));
            s.cyclictest[i].push(stat(ct));
        }
    }
    s
}

#[test]
fn the_agreement_rule_holds_ours_to_cyclictest_on_hosts_with_and_without_the_effect() {
    // A haltpoll host (cyclictest 30 -> 14 us) and one with no idle state to leave
    // (cyclictest 11 -> 12 us, as measured on a Xeon host without a cpuidle driver),
    // with the host's two regimes in alternate rounds.
    let haltpoll = |ours_off: f64| {
        recorded(&[
            [(30.5 * ours_off / 30.0, 30.0), (14.2, 14.0)],
            [(60.0 * ours_off / 30.0, 61.0), (28.0, 28.5)],
            [(29.0 * ours_off / 30.0, 29.5), (14.0, 13.8)],
        ])
    };
    let no_idle = |ours_off: f64| {
        recorded(&[
            [(11.0 * ours_off / 11.0, 11.2), (12.1, 12.0)],
            [(22.0 * ours_off / 11.0, 22.5), (24.0, 24.2)],
            [(10.9 * ours_off / 11.0, 11.0), (11.8, 12.0)],
        ])
    };
    let agree = haltpoll(30.0);
    let c = Comparison::of(&agree);
    assert!(c.disagreement().is_none(), "{c:?}");
    assert!(
        c.summary().starts_with("holding the request lowers"),
        "{}",
        c.summary()
    );
    let c = Comparison::of(&no_idle(11.0));
    assert!(c.disagreement().is_none(), "{c:?}");
    assert!(
        c.summary()
            .starts_with("holding the request changes little"),
        "{}",
        c.summary()
    );
    // Ours missing the effect on the haltpoll host (it read 14 us without), and ours
    // inventing one on the host without (24 us without): both fail.
    for (name, s) in [("missed", haltpoll(14.0)), ("invented", no_idle(24.0))] {
        let c = Comparison::of(&s);
        assert!(c.disagreement().is_some(), "{name}: {c:?}");
    }
    // Ours within the chunk bounds but on the other side of the threshold still fails:
    // cyclictest 1.0x, ours 1.28x its chunks without and 0.82x with: 1.57x.
    let skewed = recorded(&[[(15.4, 12.0), (9.8, 12.0)]; 3]);
    let c = Comparison::of(&skewed);
    assert!(
        c.disagreement()
            .is_some_and(|d| d.contains("one sees an effect")),
        "{c:?}"
    );
}

/// Ours against cyclictest on whatever this host does: a haltpoll VM shows a drop of
/// about 2x with both tools, a host with no idle state to leave about 1.0x with both.
#[test]
fn the_pm_qos_finding_agrees_with_cyclictest_side_by_side() {
    if !common::require(
        "cyclictest (apt-get install rt-tests)",
        common::have("cyclictest"),
    ) {
        return;
    }
    let Some(_serial) = setup() else {
        return;
    };
    let (s, cpus) = Series::interleaved(24, 100);
    eprintln!("rounds pinned to {cpus:?}");
    for (name, v) in [
        ("ours without", &s.ours[0]),
        ("cyclictest --laptop", &s.cyclictest[0]),
        ("ours with PM QoS 0", &s.ours[1]),
        ("cyclictest", &s.cyclictest[1]),
    ] {
        let us: Vec<String> = v
            .iter()
            .map(|c| format!("{:.1}/{:.1}", c.avg_ns / 1e3, c.median_ns / 1e3))
            .collect();
        eprintln!(
            "{name:<22} chunk average/median us [{}], median of the averages {:.1}",
            us.join(", "),
            Series::med(v)
        );
    }
    let c = Comparison::of(&s);
    eprintln!("compared on {cpus:?}: {}", c.summary());
    if let Some(why) = c.disagreement() {
        panic!("{why}; {}", c.summary());
    }
}
