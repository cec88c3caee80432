//! What scheduler tracing costs: two threads ping-pong one byte over pipes pinned to
//! CPU 0, for 2 s untraced and 2 s traced (both threads targets, all CPUs traced), three
//! rounds alternating, and prints per round the round trips/s, the traced/untraced
//! throughput ratio, events/s handled, the tracer thread's CPU ns per event and
//! CPU share, and records lost. Needs root. Run: cargo bench --features bench --bench trace_cost

use std::time::Duration;

use schedlab::cpuset::CpuSet;
use schedlab::knob::journal::Journal;
use schedlab::lab::pingpong::{PingPong, Setup};
use schedlab::trace::{TraceTarget, Tracer};

const RUN: Duration = Duration::from_secs(2);
const ROUNDS: usize = 3;

/// The pair on CPU 0, at the gate.
fn pair(run: Duration) -> PingPong {
    let pp = PingPong::start(&Setup::one_cpu(0, run)).unwrap_or_else(|e| panic!("{e:#}"));
    // Let both block at the gate.
    std::thread::sleep(Duration::from_millis(50));
    pp
}

/// Open the gate and count the round trips.
fn run(pp: PingPong) -> u64 {
    pp.go();
    pp.finish(RUN + Duration::from_secs(10))
        .unwrap_or_else(|e| panic!("{e:#}"))
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
        let base = run(pair(RUN)) as f64 / RUN.as_secs_f64();

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
        let traced = run(p) as f64 / RUN.as_secs_f64();
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
