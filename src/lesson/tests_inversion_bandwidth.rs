//! The priority-inversion and cpu-bandwidth lessons' own checks on hand-made samples:
//! each step passes when its effect shows and fails when that effect is suppressed.

use std::time::Duration;

use super::check::{evaluate, Verdict, Window};
use super::*;
use crate::lab::describe::TaskInfo;
use crate::lab::fixtures::started;
use crate::lab::live::Live;
use crate::lab::store::TaskRates;

/// Seconds each synthetic step lasts: longer than the checks' 1 s settle.
const STEP_S: f64 = 3.0;

/// Per step, per task (by name): (CPU share, progress per second).
type Plan<'a> = Vec<Vec<(&'a str, f64, f64)>>;

/// A live model of the lesson's preset with `plan`'s rates sampled every 0.1 s.
fn live_of(lesson: &Lesson, plan: &Plan) -> Live {
    let preset = crate::preset::load(&lesson.preset).expect("built-in preset");
    let mut s = started();
    s.preset.headline = preset.headline;
    s.preset.metric_task = preset.metric_task.clone();
    let names: Vec<&str> = plan[0].iter().map(|(n, _, _)| *n).collect();
    s.tasks = names
        .iter()
        .enumerate()
        .map(|(i, n)| TaskInfo {
            name: n.to_string(),
            group: n.to_string(),
            pid: 100 + i as i32,
            tid: 100 + i as i32,
            progress_unit: "ticks".into(),
            measures_latency: false,
        })
        .collect();
    let mut live = Live::new(&s, 10_000, Duration::ZERO);
    let per_step = (STEP_S * 10.0) as usize;
    for (k, rates) in plan.iter().enumerate() {
        for j in 0..per_step {
            let t_s = (k * per_step + j + 1) as f64 * 0.1;
            for (i, (_, cpu_share, progress_per_s)) in rates.iter().enumerate() {
                live.store.tasks[i].points.push_back(TaskRates {
                    t_s,
                    cpu_share: *cpu_share,
                    progress_per_s: *progress_per_s,
                    ..TaskRates::default()
                });
            }
            let headline: f64 = rates
                .iter()
                .filter(|(n, _, _)| *n == preset.metric_task)
                .map(|(_, _, p)| p)
                .sum();
            live.throughput.push_back((t_s, headline));
        }
    }
    live
}

/// Every checked step's verdict when the lesson is played over `plan`.
fn verdicts(name: &str, plan: &Plan) -> Vec<Verdict> {
    let text = BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .expect("built-in lesson");
    let lesson = load::parse_with(text, "built-in", crate::preset::load).expect("parses");
    assert_eq!(
        lesson.steps.len(),
        plan.len(),
        "{name}: a plan row per step"
    );
    let live = live_of(&lesson, plan);
    let window = |k: usize| Window {
        from_s: k as f64 * STEP_S,
        to_s: (k + 1) as f64 * STEP_S,
    };
    lesson
        .steps
        .iter()
        .enumerate()
        .map(|(k, step)| {
            let check = step.check.as_ref().expect("every step checks");
            let earlier = match check.bound {
                Bound::Ratio { step, .. } => Some(window(step)),
                Bound::Absolute { .. } => None,
            };
            evaluate(&live, lesson.headline, check, window(k), earlier).verdict
        })
        .collect()
}

/// Plays `good`, then each of `suppressed` (step index, the plan with that step's
/// effect taken away): all pass, then that step fails.
fn assert_failable(name: &str, good: &Plan, suppressed: &[(usize, Plan)]) {
    assert_eq!(
        verdicts(name, good),
        vec![Verdict::Pass; good.len()],
        "{name}: every step passes where its effect shows"
    );
    for (k, plan) in suppressed {
        let got = verdicts(name, plan);
        assert_eq!(
            got[*k],
            Verdict::Fail,
            "{name} step {}: fails without its effect ({got:?})",
            k + 1
        );
    }
}

/// (waiter, pi-waiter) acquisitions per second in one step of priority-inversion.
fn inversion_step(waiter: f64, pi_waiter: f64) -> Vec<(&'static str, f64, f64)> {
    vec![
        ("holder", 0.1, 100.0),
        ("waiter", 0.0, waiter),
        ("pi-holder", 0.1, 100.0),
        ("pi-waiter", 0.0, pi_waiter),
        ("medium", 0.7, 0.0),
    ]
}

#[test]
fn priority_inversion_steps_fail_without_their_effect() {
    let plan = |rows: [(f64, f64); 4]| -> Plan {
        rows.iter().map(|&(w, p)| inversion_step(w, p)).collect()
    };
    let good = plan([(45.0, 45.0), (0.0, 45.0), (0.0, 45.0), (45.0, 45.0)]);
    assert_failable(
        "priority-inversion",
        &good,
        &[
            // The waiter never gets the lock (its holder stuck from the start).
            (
                0,
                plan([(0.0, 45.0), (0.0, 45.0), (0.0, 45.0), (0.0, 45.0)]),
            ),
            // Medium stays a fair task: nothing inverts.
            (
                1,
                plan([(45.0, 45.0), (45.0, 45.0), (45.0, 45.0), (45.0, 45.0)]),
            ),
            // No priority inheritance on the pi pair: it stalls like the plain one.
            (2, plan([(45.0, 45.0), (0.0, 0.0), (0.0, 0.0), (45.0, 0.0)])),
            // The holder's priority is not raised: the plain waiter stays stuck.
            (
                3,
                plan([(45.0, 45.0), (0.0, 45.0), (0.0, 45.0), (0.0, 45.0)]),
            ),
        ],
    );
}

/// (pool CPU share, ticks per second) in one step of cpu-bandwidth.
fn bandwidth_step(pool: f64, ticks: f64) -> Vec<(&'static str, f64, f64)> {
    vec![("pool", pool, pool * 1e9), ("tick", 0.01, ticks)]
}

#[test]
fn cpu_bandwidth_steps_fail_without_their_effect() {
    let plan = |rows: [(f64, f64); 4]| -> Plan {
        rows.iter().map(|&(c, t)| bandwidth_step(c, t)).collect()
    };
    let good = plan([(1.9, 95.0), (0.25, 20.0), (0.25, 20.0), (1.9, 95.0)]);
    assert_failable(
        "cpu-bandwidth",
        &good,
        &[
            // Already capped from the start.
            (
                0,
                plan([(0.25, 20.0), (0.25, 20.0), (0.25, 20.0), (1.9, 95.0)]),
            ),
            // The quota refused: nothing is capped, nothing throttled.
            (
                1,
                plan([(1.9, 95.0), (1.9, 95.0), (1.9, 95.0), (1.9, 95.0)]),
            ),
            // Capped but never throttled into a wake-up (the ticker on time).
            (
                2,
                plan([(1.9, 95.0), (0.25, 95.0), (0.25, 95.0), (1.9, 95.0)]),
            ),
            // The cap not lifted.
            (
                3,
                plan([(1.9, 95.0), (0.25, 20.0), (0.25, 20.0), (0.25, 20.0)]),
            ),
        ],
    );
}

/// A step's throttling is the counters' growth over its window, per cgroup.
#[test]
fn throttling_over_a_window_is_the_growth_of_the_counters() {
    use crate::knob::cgroup::stat::Throttling;
    let mut live = Live::new(&started(), 100, Duration::ZERO);
    let reading = |periods: u64, throttled_us: u64| Throttling {
        periods,
        throttled: periods / 2,
        throttled_us,
    };
    for (t_s, periods, us) in [(1.0, 10, 0), (2.0, 20, 50_000), (3.0, 40, 450_000)] {
        live.throttling
            .push_back((t_s, vec![("capped".to_string(), reading(periods, us))]));
    }
    let got = live.throttling_between(2.0, 3.0);
    assert_eq!(got, vec![("capped".to_string(), reading(20, 400_000))]);
    // Before the first reading: counted from the first.
    assert_eq!(live.throttling_between(0.0, 1.5)[0].1, reading(0, 0));
    assert!(Live::new(&started(), 100, Duration::ZERO)
        .throttling_between(0.0, 1.0)
        .is_empty());
}
