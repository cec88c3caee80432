//! The store's unit tests.

use super::*;
use crate::sampler::parse::{SchedFile, Schedstat};

fn sample(run_ms: u64, wait_ms: u64, vol: u64, invol: u64, progress: u64) -> TaskSample {
    TaskSample {
        id: 0,
        alive: true,
        sched: SchedFile {
            nr_switches: Some(vol + invol),
            nr_voluntary_switches: Some(vol),
            nr_involuntary_switches: Some(invol),
            nr_migrations: Some(vol / 10),
            ..SchedFile::default()
        },
        schedstat: Some(Schedstat {
            run_ns: run_ms * 1_000_000,
            wait_ns: wait_ms * 1_000_000,
            timeslices: vol + invol,
        }),
        progress,
        ..TaskSample::default()
    }
}

#[test]
fn rates_from_two_samples() {
    let a = sample(100, 10, 50, 5, 1_000);
    let b = sample(150, 30, 150, 25, 3_000);
    let r = task_rates(&a, &b, 100_000_000);
    assert!((r.cpu_share - 0.5).abs() < 1e-9);
    assert_eq!(r.wait_share.map(|w| (w * 1e6).round() / 1e6), Some(0.2));
    assert!((r.voluntary_per_s - 1000.0).abs() < 1e-6);
    assert!((r.involuntary_per_s - 200.0).abs() < 1e-6);
    assert!((r.switches_per_s - 1200.0).abs() < 1e-6);
    assert_eq!(r.migrations_per_s, Some(100.0));
    assert!((r.progress_per_s - 20_000.0).abs() < 1e-6);
}

#[test]
fn without_schedstat_share_comes_from_sum_exec_and_wait_is_unknown() {
    let mut a = sample(0, 0, 0, 0, 0);
    let mut b = sample(0, 0, 0, 0, 0);
    a.schedstat = Some(Schedstat::default());
    b.schedstat = Some(Schedstat::default());
    a.sched.sum_exec_runtime_ns = Some(0);
    b.sched.sum_exec_runtime_ns = Some(25_000_000);
    let r = task_rates(&a, &b, 100_000_000);
    assert!((r.cpu_share - 0.25).abs() < 1e-9);
    assert_eq!(r.wait_share, None);
}

#[test]
fn store_keeps_bounded_series_and_whole_run_summaries() {
    let mut store = Store::new(1, 3);
    for i in 0..6u64 {
        let batch = Batch {
            t_ns: 1_000_000_000 + i * 100_000_000,
            tasks: vec![sample(i * 50, 0, i * 10, 0, i * 100)],
            ..Batch::default()
        };
        store.push(&batch);
    }
    assert_eq!(
        store.tasks[0].points.len(),
        3,
        "retention bounds the series"
    );
    let s = store.summary(0).expect("summary");
    assert!((s.cpu_share - 0.5).abs() < 1e-9);
    assert!((s.t_s - 0.5).abs() < 1e-9);
    // The task exits; its shared-memory progress keeps counting into the summary.
    let mut dead = sample(0, 0, 0, 0, 900);
    dead.alive = false;
    store.push(&Batch {
        t_ns: 1_600_000_000,
        tasks: vec![dead],
        ..Batch::default()
    });
    assert!(store.tasks[0].exited);
    assert!((store.progress_per_s(0, 1.0) - 900.0).abs() < 1e-9);
}

#[test]
fn warmup_moves_the_summaries_start_but_not_the_series() {
    // Full CPU for the first 0.5 s, then half: the summary sees only the half.
    let mut store = Store::new(1, 100).with_warmup(std::time::Duration::from_millis(500));
    let mut run_ms = 0;
    for i in 0..=15u64 {
        if i > 0 {
            run_ms += if i <= 5 { 100 } else { 50 };
        }
        store.push(&Batch {
            t_ns: 1_000_000_000 + i * 100_000_000,
            tasks: vec![sample(run_ms, 0, 0, 0, i * 10)],
            ..Batch::default()
        });
    }
    let s = store.summary(0).expect("summary");
    assert!((s.cpu_share - 0.5).abs() < 1e-9, "{}", s.cpu_share);
    assert!((store.summary_start_s() - 0.5).abs() < 1e-9);
    assert!((store.summary_s() - 1.0).abs() < 1e-9);
    assert!((store.elapsed_s() - 1.5).abs() < 1e-9);
    assert!((store.progress_per_s(0, store.summary_s()) - 100.0).abs() < 1e-9);
    assert_eq!(
        store.tasks[0].points.len(),
        15,
        "the series keeps the warm-up"
    );
    assert!((store.tasks[0].points[0].cpu_share - 1.0).abs() < 1e-9);
}

#[test]
fn a_run_shorter_than_its_warmup_keeps_everything() {
    let mut store = Store::new(1, 100).with_warmup(std::time::Duration::from_secs(5));
    for i in 0..4u64 {
        store.push(&Batch {
            t_ns: i * 100_000_000,
            tasks: vec![sample(i * 25, 0, 0, 0, 0)],
            ..Batch::default()
        });
    }
    assert_eq!(store.summary_start_s(), 0.0);
    assert!((store.summary(0).expect("summary").cpu_share - 0.25).abs() < 1e-9);
}

#[test]
fn late_credited_wait_never_makes_an_interval_impossible() {
    // A task waits 950 ms, then runs 50 ms: schedstat credits all 950 ms of waiting
    // in the 100 ms interval in which it ran (the rt-throttle fair thread).
    let mut store = Store::new(1, 100);
    let steps = [(0, 0), (0, 0), (50, 950), (0, 0), (0, 0), (0, 0)];
    let (mut run, mut wait) = (0, 0);
    for (i, (r, w)) in steps.iter().enumerate() {
        run += r;
        wait += w;
        store.push(&Batch {
            t_ns: i as u64 * 100_000_000,
            tasks: vec![sample(run, wait, 0, 0, 0)],
            ..Batch::default()
        });
    }
    let points = &store.tasks[0].points;
    for p in points {
        let busy = p.cpu_share + p.wait_share.unwrap_or(0.0);
        assert!(busy <= 1.0 + 1e-9, "impossible interval: {p:?}");
    }
    // The interval it ran in shows its 50 ms and 50 ms of waiting; the other 900 ms
    // follow, 100 ms a point, and the total is the kernel's.
    assert!((points[1].cpu_share - 0.5).abs() < 1e-9, "{:?}", points[1]);
    assert!((points[1].wait_share.unwrap_or(0.0) - 0.5).abs() < 1e-9);
    let shown: f64 = points
        .iter()
        .map(|p| p.wait_share.unwrap_or(0.0))
        .sum::<f64>()
        * 0.1;
    let carried = store.tasks[0].carry.wait_ns / 1e9;
    assert!((shown + carried - 0.95).abs() < 1e-9, "{shown} + {carried}");
    // A spinner read a tick late, then on time: never above one CPU.
    let mut c = Carry::default();
    let mut r = TaskRates {
        cpu_share: 1.04,
        wait_share: Some(0.0),
        ..TaskRates::default()
    };
    c.apportion(&mut r, 100_000_000);
    assert_eq!((r.cpu_share, r.wait_share), (1.0, Some(0.0)));
}

#[test]
fn cpu_busy_and_steal() {
    let a = CpuTimes {
        user: 100,
        idle: 100,
        steal: 0,
        ..CpuTimes::default()
    };
    let b = CpuTimes {
        user: 150,
        idle: 130,
        steal: 20,
        ..CpuTimes::default()
    };
    let r = cpu_rates(&a, &b);
    assert!((r.busy - 0.5).abs() < 1e-9);
    assert!((r.steal - 0.2).abs() < 1e-9);
}

/// A batch at `t_s` seconds whose two CPUs have each been busy `busy_s` seconds, with
/// the cgroup's and the outside tasks' CPU time so far.
fn system_batch(t_s: u64, busy_s: u64, cgroup_ns: u64, outside_ns: u64) -> Batch {
    let hz = crate::system::clock_ticks_per_s();
    let cpu = CpuTimes {
        user: busy_s * hz,
        idle: (t_s - busy_s) * hz,
        ..CpuTimes::default()
    };
    Batch {
        t_ns: t_s * 1_000_000_000,
        system: crate::sampler::SystemSample {
            cpus: vec![cpu, cpu],
            experiment_ns: Some(cgroup_ns),
            outside_ns,
            ..Default::default()
        },
        ..Batch::default()
    }
}

#[test]
fn tasks_outside_the_cgroup_are_the_experiment_not_foreign_load() {
    // 10 s: both CPUs busy 5 s; the cgroup (empty: attach mode) ran nothing, the
    // attached task outside it 8 s. Others took 10 - 8 = 2 CPU-seconds: 0.2 CPU.
    let mut store = Store::new(0, 16);
    store.push(&system_batch(10, 5, 0, 0));
    store.push(&system_batch(20, 10, 0, 8_000_000_000));
    let foreign = store.foreign_summary().expect("two reads");
    assert!((foreign - 0.2).abs() < 1e-9, "{foreign}");
    // A cgroup's own time counts as well: 2 s more of it leaves no foreign load.
    store.push(&system_batch(30, 15, 2_000_000_000, 16_000_000_000));
    assert!(store.foreign_now().is_none());
    let last = store.foreign.back().map(|(_, f)| *f);
    assert_eq!(last, Some(0.0));
}
