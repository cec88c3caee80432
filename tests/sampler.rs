//! The sampler on live tasks: fields read, cross-checked against the procfs crate, and
//! an exited task reported as exited rather than as an error.

use crate::common;

use std::time::Duration;

use schedlab::knob::task::{apply, SchedSettings};
use schedlab::policy::Policy;
use schedlab::sampler::{Batch, Reader, Sampler, Target};

fn spinning_thread(
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
) -> (i32, std::thread::JoinHandle<()>) {
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::spawn(move || {
        let _ = tx.send(nix::unistd::gettid().as_raw());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while !stop.load(std::sync::atomic::Ordering::Relaxed)
            && std::time::Instant::now() < deadline
        {
            std::hint::black_box(0u64);
        }
    });
    (rx.recv().expect("tid"), handle)
}

#[test]
fn reader_fields_agree_with_the_procfs_crate_and_follow_a_knob_change() {
    // A spinner on CPU 0, however short, is load beside another test's experiment.
    let _serial = common::serial();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (tid, handle) = spinning_thread(stop.clone());
    let pid = std::process::id() as i32;
    let wanted = SchedSettings {
        policy: Policy::Batch,
        nice: 5,
        cpus: Some(schedlab::cpuset::CpuSet::single(0)),
        ..Default::default()
    };
    assert!(apply("spinner", tid, &wanted).is_empty());
    let mut reader = Reader::new(
        vec![Target {
            id: 0,
            pid,
            tid,
            slot: None,
            latency: false,
            outside: false,
        }],
        None,
    );
    let mut batch = Batch::default();
    reader.sample_into(&mut batch);
    std::thread::sleep(Duration::from_millis(100));
    // The procfs crate's reads just before and just after ours bracket every counter we
    // read: a parser that took another field, or scaled it wrongly, falls outside.
    let before = procfs_counters(pid, tid);
    // Every file read, as after a knob change: otherwise `sched` is read only when the
    // task was switched in since the last round, and a spinner alone on CPU 0 may not
    // have been (its sched fields were then still the first round's, 71 us of run time).
    reader.read_all_next();
    reader.sample_into(&mut batch);
    let after = procfs_counters(pid, tid);
    let s = &batch.tasks[0];
    assert!(s.alive);
    assert_eq!(s.policy(), Some(3), "batch");
    assert_eq!(s.nice(), Some(5));
    assert_eq!(s.rt_priority(), Some(0));
    assert_eq!(s.cpus_allowed.map(|c| c.to_list()), Some("0".to_string()));
    assert_eq!(s.last_cpu(), Some(0));
    assert_counters_within_procfs_reads(s, &before, &after);
    assert!(!batch.system.cpus.is_empty());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    handle.join().expect("join");
    // The thread is gone: a round soon after says so, without an error. (join returns
    // when the thread's code ended; the kernel unhashes it a moment later.)
    let deadline = std::time::Instant::now() + common::PATIENCE;
    loop {
        reader.sample_into(&mut batch);
        if !batch.tasks[0].alive || std::time::Instant::now() > deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(!batch.tasks[0].alive);
    assert_eq!(batch.tasks[0].policy(), Some(3), "last values are kept");
}

/// A thread's counters as the procfs crate reads them: schedstat and status.
struct ProcfsCounters {
    schedstat: procfs::process::Schedstat,
    status: procfs::process::Status,
}

fn procfs_counters(pid: i32, tid: i32) -> ProcfsCounters {
    let procfs_task = || {
        procfs::process::Process::new(pid)
            .and_then(|p| p.task_from_tid(tid))
            .expect("procfs task")
    };
    ProcfsCounters {
        schedstat: procfs_task().schedstat().expect("schedstat"),
        status: procfs_task().status().expect("status"),
    }
}

/// Every counter in the sample `s` lies between the procfs crate's reads `before` and
/// `after` it.
fn assert_counters_within_procfs_reads(
    s: &schedlab::sampler::TaskSample,
    before: &ProcfsCounters,
    after: &ProcfsCounters,
) {
    let (status_before, status_after) = (&before.status, &after.status);
    let (before, after) = (&before.schedstat, &after.schedstat);
    let ours = s.schedstat.expect("schedstat");
    let within = |what: &str, v: u64, lo: u64, hi: u64| {
        assert!(
            lo <= v && v <= hi,
            "{what} {v} outside procfs's {lo}..={hi}"
        );
    };
    within(
        "schedstat run_ns",
        ours.run_ns,
        before.sum_exec_runtime,
        after.sum_exec_runtime,
    );
    within(
        "schedstat wait_ns",
        ours.wait_ns,
        before.run_delay,
        after.run_delay,
    );
    within(
        "schedstat timeslices",
        ours.timeslices,
        before.pcount,
        after.pcount,
    );
    // /proc/PID/sched prints the same run time in ms with six decimals: the ns it gives
    // are whole, and bracketed like schedstat's.
    within(
        "sched se.sum_exec_runtime",
        s.sched.sum_exec_runtime_ns.expect("sum_exec"),
        before.sum_exec_runtime,
        after.sum_exec_runtime,
    );
    assert!(before.sum_exec_runtime > 0, "the spinner ran");
    // nr_switches = voluntary + involuntary, which /proc/PID/status counts too.
    let switches = |st: &procfs::process::Status| {
        st.voluntary_ctxt_switches.expect("voluntary")
            + st.nonvoluntary_ctxt_switches.expect("nonvoluntary")
    };
    within(
        "sched nr_switches",
        s.sched.nr_switches.expect("nr_switches"),
        switches(status_before),
        switches(status_after),
    );
    assert!(s.sched.nr_migrations.is_some());
}

#[test]
fn sampler_thread_sends_batches_at_its_interval_and_reuses_them() {
    // Another test binary's FIFO spinners would stall this SCHED_OTHER sampler thread
    // for most of a second: take the machine-wide lock for the timing.
    let _guard = common::serial();
    let pid = std::process::id() as i32;
    let sampler = Sampler::spawn(
        vec![Target {
            id: 0,
            pid,
            tid: pid,
            slot: None,
            latency: false,
            outside: false,
        }],
        None,
        None,
        INTERVAL.into(),
    )
    .expect("spawn");
    let reference = reference_thread();
    let (seqs, times) = receive_and_recycle_rounds(&sampler);
    assert_a_new_interval_takes_effect(&sampler);
    drop(sampler);
    let late = reference.join().expect("the reference thread");
    assert_eq!(
        seqs,
        (0..ROUNDS as u64).collect::<Vec<_>>(),
        "no round lost"
    );
    assert_rounds_keep_the_interval(&times, late);
}

const INTERVAL: Duration = Duration::from_millis(20);
const ROUNDS: usize = 51;

/// Beside the sampler, the same schedule kept by a plain thread of this test (absolute
/// deadlines, same class): how late a thread can be woken on this machine now.
fn reference_thread() -> std::thread::JoinHandle<Duration> {
    std::thread::spawn(|| {
        let start = std::time::Instant::now();
        let mut worst = Duration::ZERO;
        for n in 1..ROUNDS as u32 {
            let due = start + INTERVAL * n;
            std::thread::sleep(due.saturating_duration_since(std::time::Instant::now()));
            worst = worst.max(std::time::Instant::now().saturating_duration_since(due));
        }
        worst
    })
}

/// `ROUNDS` batches, each checked and handed back: their sequence numbers and times.
fn receive_and_recycle_rounds(sampler: &Sampler) -> (Vec<u64>, Vec<u64>) {
    let mut seqs = Vec::new();
    let mut times = Vec::new();
    for _ in 0..ROUNDS {
        let batch = sampler.recv_timeout(common::PATIENCE).expect("a batch");
        seqs.push(batch.seq);
        times.push(batch.t_ns);
        assert_eq!(batch.tasks.len(), 1);
        assert!(batch.tasks[0].alive);
        assert_eq!(
            batch.interval_ns,
            INTERVAL.as_nanos() as u64,
            "what it kept"
        );
        sampler.recycle(batch);
    }
    (seqs, times)
}

/// A new interval, set where it lives (as the workbench sets it): the handle says it
/// at once, the rounds from the next one on.
fn assert_a_new_interval_takes_effect(sampler: &Sampler) {
    let slower = INTERVAL * 2;
    let shared = sampler.interval().clone();
    shared.set(slower);
    sampler.send(schedlab::sampler::Command::Reschedule);
    assert_eq!(sampler.interval().get(), slower);
    let carried = common::wait_until(common::PATIENCE, || {
        sampler
            .recv_timeout(common::PATIENCE)
            .is_some_and(|b| b.interval_ns == slower.as_nanos() as u64)
    });
    assert!(carried, "a round taken at the new interval says so");
}

/// The rounds' `times` keep the interval: in order, on average within 10 %, and no gap
/// much over it, allowing for the reference thread's worst lateness `late`.
fn assert_rounds_keep_the_interval(times: &[u64], late: Duration) {
    let gaps: Vec<u64> = times
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect();
    assert!(
        times.windows(2).all(|w| w[1] > w[0]),
        "timestamps increase: {times:?}"
    );
    let interval_ns = INTERVAL.as_nanos() as u64;
    let mean = (times[ROUNDS - 1] - times[0]) as f64 / (ROUNDS - 1) as f64;
    let max = gaps.iter().copied().max().unwrap_or(0);
    eprintln!(
        "sampler at {INTERVAL:?}: mean spacing {:.3} ms, max gap {:.3} ms, min gap {:.3} ms over {} gaps",
        mean / 1e6,
        max as f64 / 1e6,
        gaps.iter().copied().min().unwrap_or(0) as f64 / 1e6,
        gaps.len()
    );
    // Rounds are due at absolute times (start + n x interval), so lateness does not add
    // up: the first-to-last span is 50 intervals plus the last round's lateness minus the
    // first's. Within 10 % means the last round was at most 5 intervals (100 ms) later
    // than the first, plus however late the reference thread was woken at worst (the
    // machine's own lateness, measured in the same moment): a sampler that waits some
    // other interval than the one asked for, or skips or doubles rounds, is outside it.
    let allowed = 0.1 * interval_ns as f64 + late.as_nanos() as f64 / (ROUNDS - 1) as f64;
    assert!(
        (mean - interval_ns as f64).abs() <= allowed,
        "mean spacing {:.3} ms, not within {:.3} ms of {INTERVAL:?} (reference late by {late:?} at worst): {gaps:?}",
        mean / 1e6,
        allowed / 1e6
    );
    // One round can be late: a SCHED_OTHER thread woken on a CPU where other runnable
    // tasks hold it until the next tick (4 ms at HZ=250 each, with PREEMPT_NONE), or a
    // vCPU the host deschedules. 200 ms over the interval, or twice the reference's
    // worst lateness, allows that; a sampler that stalls or bursts (skipped rounds,
    // then a backlog) goes past it.
    let max_gap = interval_ns + 200_000_000.max(2 * late.as_nanos() as u64);
    assert!(
        max <= max_gap,
        "a gap of {:.1} ms between rounds: {gaps:?}",
        max as f64 / 1e6
    );
}
