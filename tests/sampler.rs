//! The sampler on live tasks: fields read, cross-checked against the procfs crate, and
//! an exited task reported as exited rather than as an error.

use std::time::Duration;

use schedlab::knob::task::{apply, Policy, SchedSettings};
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
        }],
        None,
    );
    let mut batch = Batch::default();
    reader.sample_into(&mut batch);
    std::thread::sleep(Duration::from_millis(100));
    reader.sample_into(&mut batch);
    let s = &batch.tasks[0];
    assert!(s.alive);
    assert_eq!(s.policy(), Some(3), "batch");
    assert_eq!(s.nice(), Some(5));
    assert_eq!(s.rt_priority(), Some(0));
    assert_eq!(s.cpus_allowed.map(|c| c.to_list()), Some("0".to_string()));
    assert_eq!(s.last_cpu(), Some(0));
    let run_ns = s.schedstat.expect("schedstat").run_ns;
    let theirs = procfs::process::Process::new(pid)
        .and_then(|p| p.task_from_tid(tid))
        .and_then(|t| t.schedstat())
        .expect("procfs schedstat");
    assert!(
        theirs.sum_exec_runtime >= run_ns,
        "read later, so at least as much"
    );
    assert!(s.sched.sum_exec_runtime_ns.expect("sum_exec") > 0);
    assert!(s.sched.nr_switches.is_some() && s.sched.nr_migrations.is_some());
    assert!(!batch.system.cpus.is_empty());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    handle.join().expect("join");
    // The thread is gone: a round soon after says so, without an error. (join returns
    // when the thread's code ended; the kernel unhashes it a moment later.)
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
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

#[test]
fn sampler_thread_sends_batches_at_its_interval_and_reuses_them() {
    let pid = std::process::id() as i32;
    let sampler = Sampler::spawn(
        vec![Target {
            id: 0,
            pid,
            tid: pid,
            slot: None,
            latency: false,
        }],
        None,
        None,
        Duration::from_millis(20),
    )
    .expect("spawn");
    let mut seqs = Vec::new();
    for _ in 0..5 {
        let batch = sampler
            .recv_timeout(Duration::from_secs(2))
            .expect("a batch");
        seqs.push(batch.seq);
        assert_eq!(batch.tasks.len(), 1);
        assert!(batch.tasks[0].alive);
        sampler.recycle(batch);
    }
    assert_eq!(seqs, [0, 1, 2, 3, 4]);
    drop(sampler);
}
