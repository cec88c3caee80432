//! The ping-pong: its gate, its counts, its lengths and its arithmetic.

use std::time::Instant;

use super::*;

/// Both sides' reports, in the order they came.
fn both(pp: &PingPong) -> (Measured, u64) {
    let mut ping = None;
    let mut echoes = None;
    for _ in 0..2 {
        match pp
            .done
            .recv_timeout(Duration::from_secs(10))
            .expect("a side")
            .expect("ok")
        {
            Done::Ping(m) => ping = Some(m),
            Done::Echo(n) => echoes = Some(n),
        }
    }
    (ping.expect("ping"), echoes.expect("echo"))
}

#[test]
fn both_sides_wait_at_the_gate_then_count_the_same_rounds() {
    let pp = PingPong::start(&Setup::one_cpu(0, Duration::from_millis(50))).expect("start");
    assert!(pp.tids.iter().all(|&t| t > 0) && pp.tids[0] != pp.tids[1]);
    // At the gate, nothing is done yet.
    assert!(pp.done.recv_timeout(Duration::from_millis(20)).is_err());
    pp.go();
    let (m, echoes) = both(&pp);
    // Every message ping sent came back: ping's round trips are the echoes.
    assert_eq!(m.loops, echoes);
    assert!(m.loops > 0);
    assert!(m.elapsed >= Duration::from_millis(50));
    assert!(!m.chunks_us.is_empty());
}

#[test]
fn dropped_at_the_gate_the_threads_leave_without_running() {
    let pp = PingPong::start(&Setup::one_cpu(0, Duration::from_secs(60))).expect("start");
    let t = Instant::now();
    drop(pp);
    // Joined at once: a run of 60 s never started.
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn a_run_of_rounds_does_exactly_that_many_on_two_cpus() {
    let online = crate::system::online_cpus();
    let cpus: Vec<usize> = online.iter().take(2).collect();
    let pin = match cpus[..] {
        [a, b] => Pinning::Two { ping: a, pong: b },
        _ => Pinning::Same(cpus[0]),
    };
    let setup = Setup {
        pin,
        message: PERF_MESSAGE,
        length: Length::Rounds(1000),
        nice: None,
        stop: None,
    };
    let pp = PingPong::start(&setup).expect("start");
    pp.go();
    let (m, echoes) = both(&pp);
    assert_eq!((m.loops, echoes), (1000, 1000));
    assert!(m.us_per_op() > 0.0);
}

#[test]
fn a_stop_flag_set_beforehand_ends_the_run_without_rounds() {
    let stop = Arc::new(AtomicBool::new(true));
    let setup = Setup::sched_pipe(Pinning::Same(0), Duration::from_secs(60), &stop);
    let t = Instant::now();
    let m = run(&setup, GRACE).expect("run");
    assert_eq!(m.loops, 0);
    assert_eq!(m.us_per_op(), 0.0);
    assert!(t.elapsed() < Duration::from_secs(5));
}

#[test]
fn pingpong_arithmetic() {
    let p = Measured {
        loops: 1000,
        elapsed: Duration::from_millis(8),
        chunks_us: vec![7.5, 8.5],
    };
    assert!((p.us_per_op() - 8.0).abs() < 1e-9);
    assert_eq!(p.chunk_range(), Some((7.5, 8.5)));
}

#[test]
fn the_pairs_pipes_are_closed_on_exec() {
    let (r, w) = pipe().expect("pipe");
    for f in [&r, &w] {
        let flags = nix::fcntl::fcntl(f, nix::fcntl::FcntlArg::F_GETFD).expect("F_GETFD");
        assert_ne!(flags & libc::FD_CLOEXEC, 0, "{f:?} is inherited by exec");
    }
}
