//! The timeline export's cost for the README: 1,048,576 events (the tracer's cap) of a
//! ping-pong pair written as Perfetto protobuf and as Chrome JSON, timed and sized.
//! `cargo test --release --test export_cost -- --ignored --nocapture`.

use std::time::{Duration, Instant};

use schedlab::report::perfetto::{KeptWindow, Timeline};
use schedlab::trace::{EventKind, SchedEvent, KEEP_MAX_EVENTS};

fn comm(s: &str) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..s.len()].copy_from_slice(s.as_bytes());
    c
}

/// pipe-wakeup as the tracer keeps it (~220k events/s, ~4.8 s): the writer wakes the
/// reader, switches to it, the reader blocks and wakes the writer, each on CPU 0, with
/// a cross-CPU waking now and then.
fn ping_pong(n: usize) -> Timeline {
    let (w, r) = (1000, 1001);
    let mut events = Vec::with_capacity(n);
    let mut t = 1_000_000_000_000u64;
    while events.len() < n {
        let i = events.len();
        t += 4_500;
        let kind = match i % 4 {
            0 => EventKind::Wakeup {
                pid: r,
                waker: w,
                target_cpu: 0,
            },
            1 => EventKind::Switch {
                prev_pid: w,
                prev_state: 0x100,
                next_pid: r,
                prev_comm: comm("writer"),
                next_comm: comm("reader"),
            },
            2 if i % 64 == 2 => EventKind::Waking {
                pid: w,
                waker: r,
                target_cpu: 1,
            },
            2 => EventKind::Wakeup {
                pid: w,
                waker: r,
                target_cpu: 0,
            },
            _ => EventKind::Switch {
                prev_pid: r,
                prev_state: 1,
                next_pid: w,
                prev_comm: comm("reader"),
                next_comm: comm("writer"),
            },
        };
        events.push(SchedEvent {
            t_ns: t,
            cpu: 0,
            kind,
        });
    }
    let window = KeptWindow::of(&events, Duration::from_secs(30), KEEP_MAX_EVENTS);
    Timeline {
        events,
        names: [(w, "writer".to_string()), (r, "reader".to_string())].into(),
        targets: vec![w, r],
        tgids: [(w, w), (r, w)].into(),
        marks: vec![(t - 1_000_000_000, "writer.policy=batch -> ok".into())],
        title: "pipe-wakeup".into(),
        window,
    }
}

#[test]
#[ignore = "a measurement: run in release, see the README"]
fn a_million_events_written_as_protobuf_and_as_json() {
    let t = ping_pong(KEEP_MAX_EVENTS);
    let dir = tempfile::tempdir().expect("tempdir");
    for name in ["timeline.pftrace", "timeline.json"] {
        let path = dir.path().join(name);
        let start = Instant::now();
        let w = schedlab::report::trace::write_file(&t, &path, &mut |_| true).expect("written");
        let took = start.elapsed();
        let size = std::fs::metadata(&path).expect("written").len();
        println!(
            "{name}: {} events in {:.2} s, {:.1} MB ({:.1} bytes/event), {} switches, {} wake-ups",
            t.events.len(),
            took.as_secs_f64(),
            size as f64 / 1e6,
            size as f64 / t.events.len() as f64,
            w.switches,
            w.wakeups
        );
    }
}
