//! Every built-in lesson step's check judged on the samples the step shows with its effect
//! and with the effect suppressed (the change not made, or the opposite setting): a check
//! that passes either way teaches nothing.

use std::time::Duration;

use super::check::{evaluate, Verdict, Window};
use super::*;
use crate::facts::{numbers, RtBandwidth};
use crate::ideal::{fairness_error, water_fill, weight_of_nice};
use crate::lab::describe::TaskInfo;
use crate::lab::fixtures::started;
use crate::lab::live::Live;
use crate::lab::store::TaskRates;

/// What a step's window holds, applied in order (a later value for an instance wins).
#[derive(Clone, Copy, Debug)]
enum V {
    /// A task (an instance, or every instance of a group) at this CPU share.
    Cpu(&'static str, f64),
    Involuntary(&'static str, f64),
    Switches(&'static str, f64),
    Wait(&'static str, f64),
    Progress(&'static str, f64),
    Migrations(&'static str, f64),
    /// The headline series: throughput or fairness error (a share headline is a task's
    /// CPU and is given with `Cpu`).
    Head(f64),
}

/// One lesson: its tasks, what each step shows, and what each step shows with its
/// effect suppressed (how, in words, and the samples).
struct Case {
    lesson: &'static str,
    rt: RtBandwidth,
    /// (group, instances): one instance is named as its group, more `group-k`.
    tasks: &'static [(&'static str, usize)],
    headline_group: &'static str,
    with: Vec<Vec<V>>,
    without: Vec<Vec<(&'static str, Vec<V>)>>,
}

use V::*;

/// pipe-wakeup's bytes/s with the pair pinned under OTHER (any unit: checks compare).
const OTHER_BYTES: f64 = 1.0e6;

/// The BATCH gain the lesson's caption quotes: `numbers::BATCH_GAIN` as (low, high).
fn batch_gain() -> (f64, f64) {
    let g = numbers::BATCH_GAIN.trim_end_matches('x');
    let (lo, hi) = g.split_once('-').expect("a range");
    (lo.parse().expect("a number"), hi.parse().expect("a number"))
}

/// The ladder's fairness error when nice is ignored: 21 equal shares of two CPUs
/// against the weights' ideal shares.
fn ladder_error_without_nice() -> f64 {
    let weights: Vec<f64> = (0..=20).map(|n| weight_of_nice(n) as f64).collect();
    let ideal = water_fill(&weights, 2);
    fairness_error(&[2.0 / 21.0; 21], &ideal)
}

fn cases() -> Vec<Case> {
    let gain = batch_gain().0.midpoint(batch_gain().1);
    let batch_bytes = OTHER_BYTES * gain;
    let preempted = || vec![Involuntary("writer", 100_000.0), Head(OTHER_BYTES)];
    let batched = || vec![Involuntary("writer", 2_000.0), Head(batch_bytes)];
    // nice 0's weight 1024 of the ladder's 5083; SCHED_IDLE: all equal.
    let nice0 = 1024.0 / 5083.0;
    let one_cpu_ladder = || vec![Cpu("busy", (1.0 - nice0) / 20.0), Cpu("busy-0", nice0)];
    let two_cpu_ladder = || {
        vec![
            Cpu("busy", 2.0 * (1.0 - nice0) / 20.0),
            Cpu("busy-0", 2.0 * nice0),
        ]
    };
    let spinner = || vec![Cpu("fifo", 0.95), Cpu("fair", 0.05)];
    let throttled = || vec![Cpu("fifo", 0.6), Cpu("fair", 0.4)];
    // nice -20 (88761) against nice 0 (1024).
    let weighed = || {
        vec![
            Cpu("fifo", 1024.0 / 89785.0),
            Cpu("fair", 88761.0 / 89785.0),
        ]
    };
    let groups_first = || vec![Cpu("solo", 0.5), Cpu("crowd", 0.125)];
    vec![
        Case {
            lesson: "pipe-wakeup",
            rt: RtBandwidth::FairServerOnly,
            tasks: &[("writer", 1), ("reader", 1)],
            headline_group: "writer",
            with: vec![
                preempted(),
                batched(),
                preempted(),
                vec![Involuntary("writer", 500.0), Head(batch_bytes)],
            ],
            without: vec![
                vec![(
                    "the reader under BATCH: its wakeups do not preempt",
                    batched(),
                )],
                vec![
                    ("reader.policy=batch not made", preempted()),
                    (
                        "a gain far beyond the caption's (something else changed)",
                        vec![Head(OTHER_BYTES * 5.0)],
                    ),
                ],
                vec![("the reader left at BATCH", batched())],
                vec![("the pair left pinned to CPU 0", preempted())],
            ],
        },
        Case {
            lesson: "cgroup-fairness",
            rt: RtBandwidth::FairServerOnly,
            tasks: &[("solo", 1), ("crowd", 4)],
            headline_group: "solo",
            with: vec![
                groups_first(),
                vec![Cpu("solo", 0.2), Cpu("crowd", 0.2)],
                vec![Cpu("solo", 0.75), Cpu("crowd", 0.0625)],
            ],
            without: vec![
                vec![(
                    "no group scheduling: five equal tasks",
                    vec![Cpu("solo", 0.2), Cpu("crowd", 0.2)],
                )],
                vec![("crowd's weight left at 100", groups_first())],
                vec![
                    ("no quota (weights equal)", groups_first()),
                    (
                        "crowd held to nothing rather than capped at 25 %",
                        vec![Cpu("solo", 1.0), Cpu("crowd", 0.0)],
                    ),
                ],
            ],
        },
        Case {
            lesson: "nice-ladder",
            rt: RtBandwidth::FairServerOnly,
            tasks: &[("busy", 21)],
            headline_group: "busy",
            with: vec![
                vec![Head(0.13)],
                one_cpu_ladder(),
                vec![Cpu("busy", 1.0 / 21.0)],
            ],
            without: vec![
                vec![(
                    "nice ignored: 21 equal shares",
                    vec![Head(ladder_error_without_nice())],
                )],
                vec![("the ladder left on two CPUs", two_cpu_ladder())],
                vec![("the loops left at SCHED_OTHER", one_cpu_ladder())],
            ],
        },
        Case {
            lesson: "rt-throttle",
            rt: RtBandwidth::ThrottlingAndFairServer,
            tasks: &[("fifo", 1), ("fair", 1)],
            headline_group: "fair",
            with: vec![spinner(), throttled(), weighed()],
            without: vec![
                vec![("the spinner a fair task", weighed())],
                vec![("sched_rt_runtime_us not lowered", spinner())],
                vec![("the spinner left FIFO", spinner())],
            ],
        },
        Case {
            lesson: "rt-throttle",
            rt: RtBandwidth::FairServerOnly,
            tasks: &[("fifo", 1), ("fair", 1)],
            headline_group: "fair",
            with: vec![spinner(), spinner(), weighed()],
            without: vec![
                vec![("the spinner a fair task", weighed())],
                // The step teaches that the sysctl does nothing here: what fails it is
                // the effect it says does not happen (a throttling kernel's 60 %).
                vec![("the sysctl throttling the spinner", throttled())],
                vec![("the spinner left FIFO", spinner())],
            ],
        },
        Case {
            lesson: "pipe-affinity",
            rt: RtBandwidth::FairServerOnly,
            tasks: &[("producer", 1), ("consumer", 1)],
            headline_group: "producer",
            with: vec![
                vec![Cpu("producer", 1.0), Cpu("consumer", 0.2), Head(100.0)],
                vec![Cpu("producer", 1.0), Cpu("consumer", 0.2), Head(100.0)],
                vec![Cpu("producer", 0.83), Cpu("consumer", 0.17), Head(83.0)],
            ],
            without: vec![
                vec![(
                    "the pair stacked on one CPU (2009's wake-affine)",
                    vec![Cpu("producer", 0.83), Cpu("consumer", 0.17), Head(83.0)],
                )],
                // The step teaches that pinning gains nothing today: what fails it is
                // 2009's 20 % gain (or a loss).
                vec![
                    (
                        "distinct CPUs 20 % faster than free (2009)",
                        vec![Head(120.0)],
                    ),
                    ("distinct CPUs slower than free", vec![Head(75.0)]),
                ],
                vec![(
                    "the consumer left on CPU 1",
                    vec![Cpu("producer", 1.0), Cpu("consumer", 0.2), Head(100.0)],
                )],
            ],
        },
        Case {
            lesson: "parallel-build",
            rt: RtBandwidth::FairServerOnly,
            tasks: &[("build", 1)],
            headline_group: "build",
            // 200 tiny jobs in about a second; 40 jobs of 120 ms on two CPUs: ~16/s.
            with: vec![vec![Head(200.0)], vec![Head(16.0)]],
            without: vec![
                vec![("the compile stage instead", vec![Head(16.0)])],
                vec![("still the tiny stage", vec![Head(200.0)])],
            ],
        },
        Case {
            lesson: "yield-latency",
            rt: RtBandwidth::FairServerOnly,
            tasks: &[("yield", 2)],
            headline_group: "yield",
            // About 1.5 us per switch: some 600k switches a second on CPU 0.
            with: vec![
                vec![Switches("yield", 300_000.0)],
                vec![Switches("yield", 100.0)],
            ],
            without: vec![
                vec![(
                    "the yielders on CPUs of their own",
                    vec![Switches("yield", 100.0)],
                )],
                vec![("yield-1 left on CPU 0", vec![Switches("yield", 300_000.0)])],
            ],
        },
        // eevdf-slice, deadline-cbs, load-balance: src/lesson/effects.rs has their
        // suppressed steps in more detail.
        Case {
            lesson: "eevdf-slice",
            rt: RtBandwidth::FairServerOnly,
            tasks: &[("hog", 2), ("waker", 1)],
            headline_group: "waker",
            with: vec![
                vec![
                    Cpu("hog", 0.5),
                    Involuntary("hog", 200.0),
                    Progress("waker", 600.0),
                ],
                vec![
                    Cpu("hog", 0.5),
                    Involuntary("hog", 450.0),
                    Progress("waker", 900.0),
                ],
                vec![
                    Cpu("hog", 0.5),
                    Involuntary("hog", 200.0),
                    Progress("waker", 600.0),
                ],
                vec![Cpu("hog", 0.5), Progress("waker", 600.0)],
            ],
            without: vec![
                vec![(
                    "unequal weights",
                    vec![Cpu("hog-0", 0.8), Cpu("hog-1", 0.2)],
                )],
                vec![(
                    "the short slice ignored (before 6.12)",
                    vec![Cpu("hog", 0.5), Involuntary("hog", 200.0)],
                )],
                vec![(
                    "the waker placed without its lag",
                    vec![Cpu("hog", 0.5), Progress("waker", 200.0)],
                )],
                vec![(
                    "the slice moving the share",
                    vec![Cpu("hog-0", 0.8), Cpu("hog-1", 0.2)],
                )],
            ],
        },
        Case {
            lesson: "deadline-cbs",
            rt: RtBandwidth::FairServerOnly,
            tasks: &[("dl", 1), ("fair", 2)],
            headline_group: "dl",
            with: vec![
                vec![Cpu("dl", 0.1), Cpu("fair", 0.9)],
                vec![Cpu("dl", 0.3), Cpu("fair", 0.8)],
                vec![Cpu("dl", 0.3), Cpu("fair", 0.8)],
            ],
            without: vec![
                vec![
                    ("no throttling", vec![Cpu("dl", 1.0)]),
                    ("no guarantee", vec![Cpu("dl", 0.02)]),
                ],
                vec![("the runtime change not made", vec![Cpu("dl", 0.1)])],
                vec![("the 55 ms spinner admitted", vec![Cpu("dl", 0.55)])],
            ],
        },
        Case {
            lesson: "load-balance",
            rt: RtBandwidth::FairServerOnly,
            tasks: &[("hog", 4), ("sleeper", 1)],
            headline_group: "hog",
            with: vec![
                vec![Cpu("hog", 0.25), Wait("sleeper", 0.01)],
                vec![Cpu("hog", 0.25), Wait("sleeper", 0.01)],
                vec![
                    Cpu("hog", 0.5),
                    Migrations("hog", 1.0),
                    Wait("sleeper", 0.3),
                ],
                vec![
                    Cpu("hog", 0.5),
                    Migrations("hog", 0.1),
                    Wait("sleeper", 0.3),
                ],
                vec![Cpu("hog", 0.5), Wait("sleeper", 0.3)],
            ],
            without: vec![
                vec![("the hogs not pinned", vec![Cpu("hog", 0.5)])],
                vec![("no idle CPU to wake on", vec![Wait("sleeper", 0.3)])],
                vec![("the hogs not spread", vec![Cpu("hog", 0.25)])],
                vec![("the hogs ping-ponging", vec![Migrations("hog", 5.0)])],
                vec![("an idle CPU still there", vec![Wait("sleeper", 0.01)])],
            ],
        },
        inversion_case(),
        bandwidth_case(),
    ]
}

/// priority-inversion: (waiter, pi-waiter) acquisitions per second.
fn inversion_case() -> Case {
    let waits = |plain: f64, pi: f64| vec![Progress("waiter", plain), Progress("pi-waiter", pi)];
    Case {
        lesson: "priority-inversion",
        rt: RtBandwidth::FairServerOnly,
        tasks: &[
            ("holder", 1),
            ("waiter", 1),
            ("pi-holder", 1),
            ("pi-waiter", 1),
            ("medium", 1),
        ],
        headline_group: "waiter",
        with: vec![
            waits(45.0, 45.0),
            waits(0.0, 45.0),
            waits(0.0, 45.0),
            waits(45.0, 45.0),
        ],
        without: vec![
            vec![("the holder stuck from the start", waits(0.0, 45.0))],
            vec![("medium left a fair task", waits(45.0, 45.0))],
            vec![("no priority inheritance on the pi pair", waits(0.0, 0.0))],
            vec![("the holder's priority not raised", waits(0.0, 45.0))],
        ],
    }
}

/// cpu-bandwidth: each pool thread's CPU share (four of them) and the ticks per second.
fn bandwidth_case() -> Case {
    let run = |pool: f64, ticks: f64| vec![Cpu("pool", pool / 4.0), Progress("tick", ticks)];
    Case {
        lesson: "cpu-bandwidth",
        rt: RtBandwidth::FairServerOnly,
        tasks: &[("pool", 4), ("tick", 1)],
        headline_group: "tick",
        with: vec![
            run(1.9, 95.0),
            run(0.25, 20.0),
            run(0.25, 20.0),
            run(1.9, 95.0),
        ],
        without: vec![
            vec![("capped from the start", run(0.25, 20.0))],
            vec![("the quota refused", run(1.9, 95.0))],
            vec![("capped but the ticker never throttled", run(0.25, 95.0))],
            vec![("the cap not lifted", run(0.25, 20.0))],
        ],
    }
}

/// The lesson as a kernel that can show every step plays it (6.18), whatever kernel runs
/// the test: the checks' logic is under test here, not the host (skipping on older
/// kernels has tests of its own).
fn lesson_of(case: &Case) -> Lesson {
    let text = load::builtin_text(case.lesson, case.rt).expect("built-in");
    load::parse_on(text, "test", crate::preset::load, (6, 18)).expect("parses")
}

/// A live model of `case`'s tasks whose step `k` window holds `steps[k]`, sampled every
/// 0.1 s; the windows are the steps' unattended lengths.
fn live_of(case: &Case, lesson: &Lesson, steps: &[Vec<V>]) -> (Live, Vec<Window>) {
    let mut s = started();
    s.preset.headline = lesson.headline;
    s.preset.metric_task = case.headline_group.into();
    s.tasks = case
        .tasks
        .iter()
        .flat_map(|&(group, n)| {
            (0..n).map(move |k| TaskInfo {
                name: if n == 1 {
                    group.to_string()
                } else {
                    format!("{group}-{k}")
                },
                group: group.to_string(),
                pid: 0,
                tid: 0,
                progress_unit: String::new(),
                measures_latency: false,
            })
        })
        .collect();
    let mut live = Live::new(&s, 100_000, Duration::ZERO);
    let times = lesson.step_times(KEY_STEP_HOLD, 1.0, None);
    let mut windows = Vec::new();
    let mut from_s = 0.0;
    for (values, d) in steps.iter().zip(times) {
        let to_s = from_s + d.as_secs_f64();
        let n = (d.as_secs_f64() * 10.0).round() as usize;
        for k in 1..=n {
            let t_s = from_s + k as f64 * 0.1;
            let mut points = vec![
                TaskRates {
                    t_s,
                    ..TaskRates::default()
                };
                live.tasks.len()
            ];
            for v in values {
                let (task, set): (&str, &dyn Fn(&mut TaskRates)) = match v {
                    Cpu(t, x) => (t, &|r| r.cpu_share = *x),
                    Involuntary(t, x) => (t, &|r| r.involuntary_per_s = *x),
                    Switches(t, x) => (t, &|r| r.switches_per_s = *x),
                    Wait(t, x) => (t, &|r| r.wait_share = Some(*x)),
                    Progress(t, x) => (t, &|r| r.progress_per_s = *x),
                    Migrations(t, x) => (t, &|r| r.migrations_per_s = Some(*x)),
                    Head(x) => {
                        let series = match lesson.headline {
                            Headline::Throughput => &mut live.throughput,
                            Headline::Fairness => &mut live.fairness,
                            h => panic!("{}: Head is not a {h:?} headline", case.lesson),
                        };
                        series.push_back((t_s, *x));
                        continue;
                    }
                };
                let mut hit = false;
                for (i, p) in points.iter_mut().enumerate() {
                    if live.tasks[i].name == task || live.tasks[i].group == task {
                        set(p);
                        hit = true;
                    }
                }
                assert!(hit, "{}: no task {task}", case.lesson);
            }
            for (i, p) in points.into_iter().enumerate() {
                live.store.tasks[i].points.push_back(p);
            }
        }
        windows.push(Window { from_s, to_s });
        from_s = to_s;
    }
    (live, windows)
}

fn verdict(case: &Case, lesson: &Lesson, step: usize, steps: &[Vec<V>]) -> (Verdict, String) {
    let (live, windows) = live_of(case, lesson, steps);
    let check = lesson.steps[step].check.as_ref().expect("a check");
    let earlier = match check.bound {
        Bound::Ratio { step, .. } => Some(windows[step]),
        Bound::Absolute { .. } => None,
    };
    let o = evaluate(&live, lesson.headline, check, windows[step], earlier);
    (o.verdict, o.text)
}

#[test]
fn every_built_in_step_passes_with_its_effect_and_fails_without_it() {
    let cases = cases();
    for (name, _) in BUILTIN {
        assert!(
            cases.iter().any(|c| c.lesson == *name),
            "{name}: no case for its steps"
        );
    }
    // Every wrong verdict, not just the first: a lesson edit may break several steps.
    let mut wrong = Vec::new();
    for case in &cases {
        let lesson = lesson_of(case);
        let n = lesson.steps.len();
        let who = format!("{} ({:?})", case.lesson, case.rt);
        assert_eq!(case.with.len(), n, "{who}: what each step shows");
        assert_eq!(case.without.len(), n, "{who}: each step suppressed");
        for step in 0..n {
            assert!(
                lesson.steps[step].check.is_some(),
                "{who} step {}: a step without a check cannot fail",
                step + 1
            );
            let (v, text) = verdict(case, &lesson, step, &case.with);
            if v != Verdict::Pass {
                wrong.push(format!("{who} step {} with its effect: {text}", step + 1));
            }
            assert!(!case.without[step].is_empty(), "{who} step {}", step + 1);
            for (how, values) in &case.without[step] {
                let mut steps = case.with.clone();
                steps[step] = values.clone();
                let (v, text) = verdict(case, &lesson, step, &steps);
                if v != Verdict::Fail {
                    wrong.push(format!("{who} step {} with {how}: {text}", step + 1));
                }
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// The caption's numbers bound the checks from both sides: pipe-wakeup's BATCH gain
/// (a busy machine's 1.3x up to past the quiet one's), cgroup-fairness's 75 % for solo.
#[test]
fn checks_of_a_claimed_number_are_two_sided_around_it() {
    let bounds = |lesson: &str, step: usize| -> (Option<f64>, Option<f64>) {
        let text = load::builtin_text(lesson, RtBandwidth::FairServerOnly).expect("built-in");
        let l = load::parse_with(text, "test", crate::preset::load).expect("parses");
        match l.steps[step].check.as_ref().expect("a check").bound {
            Bound::Absolute { min, max } | Bound::Ratio { min, max, .. } => (min, max),
        }
    };
    let (lo, hi) = bounds("pipe-wakeup", 1);
    let (quiet_lo, quiet_hi) = batch_gain();
    assert!(lo.is_some_and(|m| m <= 1.3 && m > 1.0), "{lo:?}");
    assert!(
        hi.is_some_and(|m| m >= quiet_hi && m < 2.0 * quiet_lo),
        "{hi:?}"
    );
    let (lo, hi) = bounds("cgroup-fairness", 2);
    assert!(lo.is_some_and(|m| m < 0.75 && m > 0.5), "{lo:?}");
    assert!(hi.is_some_and(|m| m > 0.75 && m < 1.0), "{hi:?}");
}
