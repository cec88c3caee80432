//! What scheduler tracing costs: two threads ping-pong one byte over pipes pinned to
//! CPU 0, for 2 s untraced and 2 s traced (both threads targets, all CPUs traced), three
//! rounds alternating, and prints per round the round trips/s, the traced/untraced
//! throughput ratio, events/s handled, the tracer thread's CPU ns per event and
//! CPU share, and records lost. Needs root. Run: cargo bench --bench trace_cost

use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use schedlab::cpuset::CpuSet;
use schedlab::knob::journal::Journal;
use schedlab::trace::{TraceTarget, Tracer};

const RUN: Duration = Duration::from_secs(2);
const ROUNDS: usize = 3;

fn pipe() -> (std::fs::File, std::fs::File) {
    let (r, w): (OwnedFd, OwnedFd) = nix::unistd::pipe().expect("pipe");
    (std::fs::File::from(r), std::fs::File::from(w))
}

fn pin_to_cpu0() {
    let set = CpuSet::single(0).to_libc();
    // SAFETY: sched_setaffinity on this thread with a valid cpu_set_t.
    let rc = unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) };
    assert_eq!(rc, 0, "pinning to CPU 0");
}

/// Two pinned threads, started and waiting for `go`: their tids, the go pipe and the
/// joins that return the leader's round trips.
struct Pair {
    tids: Vec<i32>,
    go: Vec<std::fs::File>,
    joins: Vec<std::thread::JoinHandle<u64>>,
}

fn pair(run: Duration) -> Pair {
    let (ab_r, ab_w) = pipe();
    let (ba_r, ba_w) = pipe();
    let (tid_tx, tid_rx) = mpsc::channel();
    let mut go = Vec::new();
    let mut joins = Vec::new();
    for (leader, mut out, mut inp) in [(true, ab_w, ba_r), (false, ba_w, ab_r)] {
        let (mut go_r, go_w) = pipe();
        go.push(go_w);
        let tid_tx = tid_tx.clone();
        joins.push(std::thread::spawn(move || {
            pin_to_cpu0();
            tid_tx.send(nix::unistd::gettid().as_raw()).expect("tid");
            let mut b = [0u8; 1];
            go_r.read_exact(&mut b).expect("go");
            let deadline = Instant::now() + run;
            let mut rounds = 0;
            if leader {
                while Instant::now() < deadline {
                    out.write_all(b"p").expect("write");
                    inp.read_exact(&mut b).expect("read");
                    rounds += 1;
                }
                out.write_all(b"q").expect("quit");
            } else {
                loop {
                    inp.read_exact(&mut b).expect("read");
                    if b[0] == b'q' {
                        break;
                    }
                    out.write_all(b"p").expect("write");
                }
            }
            rounds
        }));
    }
    let tids = (0..2)
        .map(|_| tid_rx.recv_timeout(Duration::from_secs(5)).expect("tid"))
        .collect();
    // Let both block on their go pipe.
    std::thread::sleep(Duration::from_millis(50));
    Pair { tids, go, joins }
}

impl Pair {
    fn run(mut self) -> u64 {
        for g in &mut self.go {
            g.write_all(b"g").expect("go");
        }
        self.joins
            .into_iter()
            .map(|j| j.join().expect("ping-pong thread"))
            .sum()
    }
}

fn main() {
    if !nix::unistd::geteuid().is_root() {
        println!("trace_cost: needs root (perf tracepoints, tracefs); skipped");
        return;
    }
    let online = std::fs::read_to_string("/sys/devices/system/cpu/online").expect("online");
    let cpus = CpuSet::parse_list(&online).expect("cpulist");
    let dir = tempfile::tempdir().expect("tempdir");
    let mut journal = Journal::new(dir.path().join("journal.jsonl"));
    println!(
        "ping-pong pinned to CPU 0, {} s per run, tracing CPUs {cpus}",
        RUN.as_secs()
    );
    println!(
        "{:>5} {:>12} {:>12} {:>7} {:>12} {:>10} {:>8} {:>8}",
        "round", "untraced/s", "traced/s", "ratio", "events/s", "ns/event", "cpu %", "lost"
    );
    let mut ratios = Vec::new();
    let mut per_event = Vec::new();
    for round in 1..=ROUNDS {
        let base = pair(RUN).run() as f64 / RUN.as_secs_f64();

        let p = pair(RUN);
        let targets = p
            .tids
            .iter()
            .enumerate()
            .map(|(i, &tid)| TraceTarget {
                tid,
                name: format!("pp{i}"),
            })
            .collect();
        let tracer = Tracer::start(
            &cpus,
            targets,
            Duration::from_millis(100),
            None,
            &mut journal,
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let traced = p.run() as f64 / RUN.as_secs_f64();
        let fin = tracer.stop();
        let secs = fin.elapsed_ns as f64 / 1e9;
        let ns_per_event = fin.cpu_ns as f64 / fin.handled.max(1) as f64;
        println!(
            "{round:>5} {base:>12.0} {traced:>12.0} {:>7.3} {:>12.0} {ns_per_event:>10.1} {:>8.1} {:>8}",
            traced / base,
            fin.handled as f64 / secs,
            100.0 * fin.cpu_ns as f64 / fin.elapsed_ns as f64,
            fin.lost
        );
        ratios.push(traced / base);
        per_event.push(ns_per_event);
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    println!(
        "mean: throughput traced/untraced {:.3}, tracer {:.1} ns CPU per event",
        mean(&ratios),
        mean(&per_event)
    );
    for r in journal.restore() {
        if !r.ok() {
            eprintln!("journal: {r}");
        }
    }
}
