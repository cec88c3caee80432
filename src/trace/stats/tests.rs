//! The aggregation's unit tests: counts, latencies and preemptors from event streams.

use super::*;

const A: i32 = 100;
const B: i32 = 200;
const OTHER: i32 = 999;
/// prev_state values as 6.18 reports them.
const R_PLUS: i64 = 0x100;
const R: i64 = 0;
const S: i64 = 0x1;
const D: i64 = 0x2;
const I: i64 = 0x80;

fn comm(s: &str) -> [u8; 16] {
    let mut c = [0u8; 16];
    c[..s.len()].copy_from_slice(s.as_bytes());
    c
}

fn ev(t_ns: u64, cpu: u32, kind: EventKind) -> SchedEvent {
    SchedEvent { t_ns, cpu, kind }
}
fn waking(t: u64, cpu: u32, pid: i32, waker: i32) -> SchedEvent {
    ev(
        t,
        cpu,
        EventKind::Waking {
            pid,
            waker,
            target_cpu: cpu as i32,
        },
    )
}
fn wakeup(t: u64, cpu: u32, pid: i32) -> SchedEvent {
    ev(
        t,
        cpu,
        EventKind::Wakeup {
            pid,
            waker: 0,
            target_cpu: cpu as i32,
        },
    )
}
fn switch(t: u64, cpu: u32, prev: i32, state: i64, next: i32) -> SchedEvent {
    ev(
        t,
        cpu,
        EventKind::Switch {
            prev_pid: prev,
            prev_state: state,
            next_pid: next,
            prev_comm: comm(&format!("t{prev}")),
            next_comm: comm(&format!("t{next}")),
        },
    )
}

fn agg(events: &[SchedEvent]) -> Aggregator {
    let mut a = Aggregator::new(&[
        TraceTarget {
            tid: A,
            name: "a".into(),
        },
        TraceTarget {
            tid: B,
            name: "b".into(),
        },
    ]);
    for e in events {
        a.record(e);
    }
    a
}

fn task(a: &Aggregator, tid: i32) -> TaskSched {
    a.totals().into_iter().find(|t| t.tid == tid).unwrap()
}

#[test]
fn waking_to_switch_in_is_the_wakeup_latency() {
    let a = agg(&[
        switch(1_000, 0, A, S, 0),
        waking(10_000, 1, A, OTHER),
        wakeup(10_500, 0, A),
        switch(14_000, 0, 0, R, A),
    ]);
    let t = task(&a, A);
    assert_eq!(
        (t.switches_in, t.wakeups, t.blocked, t.preempted),
        (1, 1, 1, 0)
    );
    assert_eq!(t.wakeup_latency.count, 1);
    assert_eq!(t.wakeup_latency.p50_us, 4.0);
    assert_eq!(t.wakeup_latency.max_us, 4.0);
    assert_eq!(t.runq_delay, LatencySummary::default());
}

#[test]
fn preemption_to_switch_in_is_the_runq_delay_and_names_the_preemptor() {
    let a = agg(&[
        switch(0, 0, 0, R, A),
        switch(10_000, 0, A, R_PLUS, OTHER),
        switch(30_000, 0, OTHER, S, A),
    ]);
    let t = task(&a, A);
    assert_eq!((t.preempted, t.blocked, t.switches_in), (1, 0, 2));
    assert_eq!(t.runq_delay.count, 1);
    assert_eq!(t.runq_delay.p99_us, 20.0);
    assert_eq!(t.wakeup_latency.count, 0, "no waking: no wakeup latency");
    assert_eq!(
        t.preemptors,
        vec![Preemptor {
            comm: "t999".into(),
            pid: OTHER,
            count: 1
        }]
    );
}

#[test]
fn blocked_and_preempted_by_prev_state() {
    let mut events = vec![switch(0, 0, 0, R, A)];
    let mut t = 1;
    for state in [R_PLUS, R, S, D, I, S | 0x100, R_PLUS] {
        events.push(switch(t, 0, A, state, OTHER));
        events.push(switch(t + 1, 0, OTHER, S, A));
        t += 10;
    }
    let a = agg(&events);
    let x = task(&a, A);
    // R+ twice and R (a yield) are runnable; S, D, I and a state with the
    // preempt bit above 0xff set but S below are not.
    assert_eq!((x.preempted, x.blocked), (3, 4));
    assert_eq!(x.runq_delay.count, 3);
}

#[test]
fn a_preemptor_that_is_a_target_goes_by_its_task_name_and_a_nameless_one_by_pid() {
    let mut events = vec![switch(0, 0, 0, R, A)];
    // B (a target: its comm is the worker binary's) preempts A twice, then a task
    // whose switch the kernel gave no comm for (a filled-in switch from idle).
    for t in [1, 3] {
        events.push(switch(t, 0, A, R_PLUS, B));
        events.push(switch(t + 1, 0, B, S, A));
    }
    let mut nameless = switch(5, 0, A, R_PLUS, OTHER);
    if let EventKind::Switch { next_comm, .. } = &mut nameless.kind {
        *next_comm = [0; 16];
    }
    events.push(nameless);
    events.push(switch(6, 0, OTHER, S, A));
    let a = agg(&events);
    let x = task(&a, A);
    let names: Vec<(&str, u64)> = x
        .preemptors
        .iter()
        .map(|p| (p.comm.as_str(), p.count))
        .collect();
    assert_eq!(names, vec![("b", 2), ("pid 999", 1)]);
    // The live view's preemptors are the same as the totals'.
    let live = a.preemptors();
    let (_, top) = live.iter().find(|(tid, _)| *tid == A).expect("A");
    assert_eq!(top, &x.preemptors);
}

#[test]
fn top_five_preemptors_by_count() {
    let mut events = vec![switch(0, 0, 0, R, A)];
    let mut t = 1;
    // pid p preempts p times (p = 1..=7).
    for p in 1..=7 {
        for _ in 0..p {
            events.push(switch(t, 0, A, R_PLUS, 1000 + p));
            events.push(switch(t + 1, 0, 1000 + p, S, A));
            t += 2;
        }
    }
    let a = agg(&events);
    let x = task(&a, A);
    assert_eq!(x.preempted, 28);
    let got: Vec<(i32, u64)> = x.preemptors.iter().map(|p| (p.pid, p.count)).collect();
    assert_eq!(
        got,
        vec![(1007, 7), (1006, 6), (1005, 5), (1004, 4), (1003, 3)]
    );
    assert_eq!(x.preemptors[0].comm, "t1007");
}

#[test]
fn a_heavy_preemptor_survives_many_one_off_ones() {
    let mut events = vec![switch(0, 0, 0, R, A)];
    let mut t = 1;
    for i in 0..500 {
        let p = if i % 3 == 0 { 42 } else { 5000 + i };
        events.push(switch(t, 0, A, R_PLUS, p));
        events.push(switch(t + 1, 0, p, S, A));
        t += 2;
    }
    let x = task(&agg(&events), A);
    assert_eq!(x.preemptors[0].pid, 42);
    assert!(x.preemptors[0].count >= 167, "{:?}", x.preemptors[0]);
}

#[test]
fn a_wakeup_of_a_running_task_is_counted_but_not_a_latency() {
    let a = agg(&[
        switch(0, 0, 0, R, A),
        // try_to_wake_up on the running task itself (p == current).
        waking(1_000, 0, A, OTHER),
        wakeup(1_100, 0, A),
        switch(50_000, 0, A, R_PLUS, OTHER),
        switch(60_000, 0, OTHER, S, A),
        // And once more with a real sleep afterwards: still no latency.
        waking(61_000, 1, A, OTHER),
        wakeup(61_100, 0, A),
        switch(70_000, 0, A, S, 0),
    ]);
    let x = task(&a, A);
    assert_eq!(x.wakeups, 2);
    assert_eq!(x.wakeup_latency.count, 0, "{:?}", x.wakeup_latency);
    assert_eq!(x.runq_delay.count, 1);
    assert_eq!(x.runq_delay.max_us, 10.0);
    // The next real wake-up measures from its own waking.
    let mut a = a;
    a.record(&waking(100_000, 1, A, OTHER));
    a.record(&wakeup(100_100, 0, A));
    a.record(&switch(103_000, 0, 0, R, A));
    assert_eq!(task(&a, A).wakeup_latency.max_us, 3.0);
}

#[test]
fn a_waker_racing_the_switch_out_on_another_cpu_still_counts() {
    // CPU 1 wakes A while A is still switching out on CPU 0: sched_waking comes
    // first, A's blocking switch next, then sched_wakeup once A is off its CPU.
    let a = agg(&[
        switch(0, 0, 0, R, A),
        waking(10_000, 1, A, B),
        switch(10_400, 0, A, S, 0),
        wakeup(11_000, 0, A),
        switch(12_000, 0, 0, R, A),
    ]);
    let x = task(&a, A);
    assert_eq!(x.wakeup_latency.count, 1);
    assert_eq!(x.wakeup_latency.max_us, 2.0);
}

#[test]
fn non_targets_are_ignored() {
    let a = agg(&[
        switch(0, 0, OTHER, S, 0),
        waking(1, 1, OTHER, A),
        wakeup(2, 0, OTHER),
        switch(3, 0, 0, R, OTHER),
        switch(4, 0, OTHER, R_PLUS, 0),
        ev(
            5,
            0,
            EventKind::Migrate {
                pid: OTHER,
                orig_cpu: 0,
                dest_cpu: 1,
            },
        ),
    ]);
    for tid in [A, B] {
        let x = task(&a, tid);
        assert_eq!(
            (
                x.switches_in,
                x.wakeups,
                x.preempted,
                x.blocked,
                x.migrations
            ),
            (0, 0, 0, 0, 0)
        );
        assert!(x.preemptors.is_empty());
    }
    // ... though an event whose waker is a target touches it (for the kept window).
    assert!(a.touches(&waking(1, 1, OTHER, A)));
    assert!(!a.touches(&switch(3, 0, 0, R, OTHER)));
    assert!(a.touches(&switch(3, 0, B, R, OTHER)));
    // The idle task (pid 0) is never a target.
    let idle = Aggregator::new(&[TraceTarget {
        tid: 0,
        name: "swapper".into(),
    }]);
    assert!(idle.totals().is_empty());
}

#[test]
fn ping_pong_on_one_cpu_and_migrations() {
    // A and B alternate on CPU 0: each switch is one task out (blocked), the other in.
    let mut events = vec![switch(0, 0, 0, R, A)];
    let mut t = 0;
    for _ in 0..100 {
        events.push(waking(t + 100, 0, B, A));
        events.push(wakeup(t + 150, 0, B));
        events.push(switch(t + 1_000, 0, A, S, B));
        events.push(waking(t + 1_100, 0, A, B));
        events.push(wakeup(t + 1_150, 0, A));
        events.push(switch(t + 2_000, 0, B, S, A));
        t += 2_000;
    }
    events.push(ev(
        t + 10,
        0,
        EventKind::Migrate {
            pid: A,
            orig_cpu: 0,
            dest_cpu: 1,
        },
    ));
    let a = agg(&events);
    let (x, y) = (task(&a, A), task(&a, B));
    assert_eq!(
        (x.switches_in, x.blocked, x.wakeups, x.migrations),
        (101, 100, 100, 1)
    );
    assert_eq!((y.switches_in, y.blocked, y.wakeups), (100, 100, 100));
    assert_eq!(x.wakeup_latency.count, 100);
    assert_eq!(x.wakeup_latency.p50_us, 0.9);
    assert_eq!(y.wakeup_latency.p99_us, 0.9);
}

#[test]
fn late_events_never_make_up_a_latency() {
    let a = agg(&[
        switch(0, 0, A, S, 0),
        waking(1_000, 1, A, OTHER),
        switch(2_000, 0, 0, R, A),
        // A waking from before the switch-in, delivered after it.
        waking(1_500, 1, A, OTHER),
        switch(9_000, 0, A, S, 0),
        switch(20_000, 0, 0, R, A),
        // A switch-in older than the preemption it would end.
        switch(30_000, 0, A, R_PLUS, OTHER),
        switch(29_000, 1, OTHER, S, A),
    ]);
    let x = task(&a, A);
    assert_eq!(
        x.wakeup_latency.count, 1,
        "only the real one: {:?}",
        x.wakeup_latency
    );
    assert_eq!(x.wakeup_latency.max_us, 1.0);
    assert_eq!(x.runq_delay.count, 0);
}

#[test]
fn a_wake_up_that_was_not_seen_is_counted_as_unseen() {
    let a = agg(&[
        switch(0, 0, A, S, 0),
        // The timer's wake-up on idle CPU 0 and the switch from idle are missing;
        // a switch-in taken from a context-switch record stands for the latter.
        switch(5_000_000, 0, 0, R, A),
        switch(5_001_000, 0, A, S, 0),
        waking(6_000_000, 1, A, OTHER),
        wakeup(6_000_100, 0, A),
        switch(6_002_000, 0, 0, R, A),
    ]);
    let x = task(&a, A);
    assert_eq!((x.switches_in, x.wakeups, x.wakeups_unseen), (2, 2, 1));
    assert_eq!(x.wakeup_latency.count, 1);
    assert_eq!(x.wakeup_latency.max_us, 2.0);
    // Unknown state (start of trace, after a loss): nothing is inferred.
    let b = task(&a, B);
    assert_eq!(b.wakeups_unseen, 0);
}

#[test]
fn a_wake_up_without_its_sched_waking_measures_from_sched_wakeup() {
    // The kernel filter keeps sched_waking of cross-CPU wake-ups only: B wakes A on
    // A's own CPU, and the wake-up starts at sched_wakeup.
    let a = agg(&[
        switch(0, 0, A, S, B),
        ev(
            10_000,
            0,
            EventKind::Wakeup {
                pid: A,
                waker: B,
                target_cpu: 0,
            },
        ),
        switch(13_000, 0, B, S, A),
    ]);
    let x = task(&a, A);
    assert_eq!((x.wakeups, x.wakeups_unseen), (1, 0));
    assert_eq!(x.wakeup_latency.count, 1);
    assert_eq!(x.wakeup_latency.max_us, 3.0);
    // With its sched_waking seen first, the wake-up starts there.
    let mut a = a;
    a.record(&switch(20_000, 0, A, S, B));
    a.record(&waking(30_000, 1, A, OTHER));
    a.record(&wakeup(31_000, 0, A));
    a.record(&switch(35_000, 0, B, S, A));
    let x = task(&a, A);
    assert_eq!(x.wakeup_latency.count, 2);
    assert_eq!(x.wakeup_latency.max_us, 5.0);
}

#[test]
fn a_switch_in_nobody_timed_counts_without_a_latency() {
    let in_unseen = |t| ev(t, 0, EventKind::SwitchedIn { pid: A });
    let a = agg(&[
        switch(0, 0, A, S, 0),
        waking(1_000, 1, A, OTHER),
        wakeup(1_100, 0, A),
        // The switch from idle to A was not shown; A's next switch-out proves it.
        in_unseen(9_000),
        switch(9_000, 0, A, R_PLUS, B),
        switch(10_000, 0, B, S, A),
    ]);
    let x = task(&a, A);
    assert_eq!((x.switches_in, x.wakeups, x.wakeups_unseen), (2, 1, 0));
    assert_eq!(x.wakeup_latency.count, 0, "when A ran is unknown");
    // The preemption after it is timed again.
    assert_eq!(x.runq_delay.count, 1);
    assert_eq!(x.runq_delay.max_us, 1.0);
    // From a sleep with no wake-up seen: the wake-up counts as unseen.
    let b = agg(&[
        switch(0, 0, A, S, 0),
        in_unseen(5_000),
        switch(6_000, 0, A, S, 0),
    ]);
    assert_eq!(task(&b, A).wakeups_unseen, 1);
}

#[test]
fn targets_that_join_are_accounted_from_their_next_event() {
    let mut a = Aggregator::new(&[TraceTarget {
        tid: A,
        name: "a".into(),
    }]);
    a.record(&switch(0, 0, A, S, B));
    assert!(!a.touches(&switch(500, 0, B, S, OTHER)));
    a.add(&[
        TraceTarget {
            tid: B,
            name: "b".into(),
        },
        // Already there, and the idle task: both left out.
        TraceTarget {
            tid: A,
            name: "again".into(),
        },
        TraceTarget {
            tid: 0,
            name: "idle".into(),
        },
    ]);
    assert!(a.touches(&switch(500, 0, B, S, OTHER)));
    a.record(&switch(1_000, 0, B, S, A));
    let tasks = a.totals();
    assert_eq!(
        tasks
            .iter()
            .map(|t| (t.name.as_str(), t.tid))
            .collect::<Vec<_>>(),
        [("a", A), ("b", B)]
    );
    assert_eq!((tasks[0].switches_in, tasks[1].blocked), (1, 1));
    assert_eq!(a.take_interval().len(), 2);
}

#[test]
fn lost_events_forget_what_tasks_were_doing() {
    let mut a = agg(&[switch(0, 0, A, S, 0), waking(1_000, 1, A, OTHER)]);
    a.forget();
    a.record(&switch(900_000, 0, 0, R, A));
    assert_eq!(task(&a, A).wakeup_latency.count, 0);
}

#[test]
fn intervals_count_and_reset() {
    let mut a = agg(&[
        switch(0, 0, A, S, 0),
        waking(1_000, 1, A, OTHER),
        wakeup(1_010, 0, A),
        switch(3_000, 0, 0, R, A),
        switch(4_000, 0, A, R_PLUS, B),
        switch(9_000, 0, B, S, A),
    ]);
    let first = a.take_interval();
    let x = first.iter().find(|t| t.tid == A).unwrap();
    assert_eq!(
        (x.switches_in, x.wakeups, x.preempted, x.blocked),
        (2, 1, 1, 1)
    );
    assert_eq!((x.wakeup_p50_us, x.wakeup_p99_us), (2.0, 2.0));
    assert_eq!((x.runq_p50_us, x.runq_p99_us), (5.0, 5.0));
    let second = a.take_interval();
    assert_eq!(
        second.iter().find(|t| t.tid == A).unwrap(),
        &TaskInterval {
            tid: A,
            ..TaskInterval::default()
        }
    );
    // Totals are unaffected by taking intervals.
    assert_eq!(task(&a, A).switches_in, 2);
}

#[test]
fn percentiles_stay_within_a_tenth_of_a_percent_and_inside_min_max() {
    let mut l = Latency::new();
    for v in 1..=10_000u64 {
        l.record(v * 1_234);
    }
    let s = l.summary();
    let close = |got: f64, want: f64| (got - want).abs() / want <= 0.001;
    assert!(close(s.p50_us, 5_000.0 * 1.234), "{s:?}");
    assert!(close(s.p90_us, 9_000.0 * 1.234), "{s:?}");
    assert!(close(s.p99_us, 9_900.0 * 1.234), "{s:?}");
    assert!(close(s.p999_us, 9_990.0 * 1.234), "{s:?}");
    assert_eq!(s.max_us, 10_000.0 * 1.234);
    assert!(s.max_us >= s.p999_us && s.p999_us >= s.p99_us && s.p99_us >= s.p90_us);
    // Beyond the histogram's range: counted at the top, the maximum stays exact.
    l.record(HIST_HIGH_NS * 3);
    assert_eq!(l.summary().max_us, us(HIST_HIGH_NS * 3));
    assert_eq!(l.summary().count, 10_001);
}

#[test]
fn histogram_memory_is_as_documented() {
    let h: Histogram<u64> = new_hist();
    assert_eq!(h.distinct_values(), 25_600);
}

#[test]
fn a_switch_out_of_a_task_last_seen_off_its_cpu_counts_the_switch_in_never_written() {
    // A sleeps twice; its second wake-up and switch-in were never written (under load
    // on a VM, perf beside the tracer saw neither), only its switch-out. B is
    // preempted, then switched out again with its switch-in missing.
    let a = agg(&[
        switch(0, 0, A, S, OTHER),
        waking(5_000_000, 1, A, OTHER),
        wakeup(5_000_100, 0, A),
        switch(5_002_000, 0, OTHER, R, A),
        switch(5_003_000, 0, A, S, OTHER),
        switch(10_003_000, 0, A, S, OTHER),
        switch(20_000_000, 1, B, R, OTHER),
        switch(21_000_000, 1, B, R, OTHER),
    ]);
    let x = task(&a, A);
    assert_eq!(
        (x.switches_in, x.blocked, x.wakeups, x.wakeups_unseen),
        (2, 3, 2, 1)
    );
    // Only the wake-up whose switch-in was seen has a latency.
    assert_eq!(x.wakeup_latency.count, 1);
    let y = task(&a, B);
    assert_eq!((y.switches_in, y.preempted), (1, 2));
    assert_eq!(
        y.runq_delay.count, 0,
        "no wait is timed across a missing switch-in"
    );
    // Both inferred, for the trace's count of switches it did not see.
    assert_eq!(a.inferred(), 2);
}
