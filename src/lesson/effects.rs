//! The eevdf-slice, deadline-cbs and load-balance lessons' checks on hand-made samples:
//! each step passes with the effect it teaches and fails with that effect suppressed.

use std::time::Duration;

use super::check::{evaluate, Verdict, Window};
use super::*;
use crate::lab::fixtures::started;
use crate::lab::live::Live;
use crate::lab::store::TaskRates;

/// One task's rates over a step.
#[derive(Clone, Copy, Default)]
struct R {
    cpu: f64,
    wait: f64,
    progress: f64,
    migrations: f64,
    involuntary: f64,
}

const STEP_S: f64 = 3.0;

fn lesson(name: &str) -> Lesson {
    let text = BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .expect("built-in");
    // As a 6.18 kernel plays it: every step.
    load::parse_on(text, "test", crate::preset::load, (6, 18)).expect("parses")
}

/// The verdict of each checked step of `name` when each task runs at `rates(step, task)`
/// (samples every 0.1 s, each step `STEP_S` long).
fn verdicts(name: &str, rates: &dyn Fn(usize, &str) -> R) -> Vec<Option<Verdict>> {
    let l = lesson(name);
    let preset = crate::preset::load(&l.preset).expect("preset");
    let specs = preset.tasks(&crate::system::online_cpus()).expect("tasks");
    let mut s = started();
    s.preset.metric_task = preset.metric_task.clone();
    s.preset.headline = preset.headline;
    s.tasks = specs
        .iter()
        .enumerate()
        .map(|(i, t)| crate::lab::describe::TaskInfo {
            name: t.name.clone(),
            group: t.group.clone(),
            pid: 100 + i as i32,
            tid: 100 + i as i32,
            ..s.tasks[0].clone()
        })
        .collect();
    let mut live = Live::new(&s, 100_000, Duration::ZERO);
    let samples = (STEP_S * 10.0) as usize;
    for step in 0..l.steps.len() {
        for k in 1..=samples {
            let t_s = step as f64 * STEP_S + k as f64 * 0.1;
            for (i, t) in specs.iter().enumerate() {
                let r = rates(step, &t.name);
                live.store.tasks[i].points.push_back(TaskRates {
                    t_s,
                    cpu_share: r.cpu,
                    wait_share: Some(r.wait),
                    progress_per_s: r.progress,
                    migrations_per_s: Some(r.migrations),
                    involuntary_per_s: r.involuntary,
                    ..TaskRates::default()
                });
            }
        }
    }
    let window = |i: usize| Window {
        from_s: i as f64 * STEP_S,
        to_s: (i + 1) as f64 * STEP_S,
    };
    l.steps
        .iter()
        .enumerate()
        .map(|(i, st)| {
            st.check.as_ref().map(|c| {
                let earlier = match c.bound {
                    Bound::Ratio { step, .. } => Some(window(step)),
                    Bound::Absolute { .. } => None,
                };
                evaluate(&live, l.headline, c, window(i), earlier).verdict
            })
        })
        .collect()
}

/// Every checked step passes with the effect, and step `k` (1-based) fails when
/// `suppressed` replaces its rates.
fn assert_effect(
    name: &str,
    present: &dyn Fn(usize, &str) -> R,
    k: usize,
    suppressed: &dyn Fn(&str) -> Option<R>,
) {
    let good = verdicts(name, present);
    assert!(
        good.iter().all(|v| matches!(v, None | Some(Verdict::Pass))),
        "{name} with every effect: {good:?}"
    );
    let bad = verdicts(name, &|step, task| {
        if step + 1 == k {
            suppressed(task).unwrap_or_else(|| present(step, task))
        } else {
            present(step, task)
        }
    });
    assert_eq!(
        bad[k - 1],
        Some(Verdict::Fail),
        "{name} step {k} without its effect"
    );
}

/// eevdf-slice as EEVDF (6.12+) runs it: the hogs split CPU 0, the 0.1 ms waker
/// preempts them on its wakeups and its lag keeps its wakeups with a 100 ms slice.
fn eevdf(step: usize, task: &str) -> R {
    match (step, task) {
        (1, "hog-0" | "hog-1") => R {
            cpu: 0.5,
            involuntary: 450.0,
            ..R::default()
        },
        (_, "hog-0" | "hog-1") => R {
            cpu: 0.5,
            involuntary: 200.0,
            ..R::default()
        },
        (_, _) => R {
            cpu: 0.005,
            wait: 0.1,
            progress: 900.0,
            ..R::default()
        },
    }
}

#[test]
fn eevdf_step_1_fails_when_the_hogs_do_not_share_equally() {
    assert_effect("eevdf-slice", &eevdf, 1, &|t| match t {
        "hog-0" => Some(R {
            cpu: 0.8,
            ..R::default()
        }),
        "hog-1" => Some(R {
            cpu: 0.2,
            ..R::default()
        }),
        _ => None,
    });
}

#[test]
fn eevdf_step_2_fails_when_the_short_slice_is_ignored() {
    // Before 6.12 the slice is ignored: the hogs are switched out as with the default.
    assert_effect("eevdf-slice", &eevdf, 2, &|t| {
        t.starts_with("hog").then_some(R {
            cpu: 0.5,
            involuntary: 200.0,
            ..R::default()
        })
    });
}

#[test]
fn eevdf_step_3_fails_when_lag_does_not_pull_the_deadline_back() {
    // Placed without its lag, the 100 ms waker waits for the hogs after each wakeup.
    assert_effect("eevdf-slice", &eevdf, 3, &|t| {
        (t == "waker").then_some(R {
            wait: 0.8,
            progress: 200.0,
            ..R::default()
        })
    });
}

#[test]
fn eevdf_step_4_fails_when_the_slice_moves_the_share() {
    assert_effect("eevdf-slice", &eevdf, 4, &|t| match t {
        "hog-0" => Some(R {
            cpu: 0.8,
            ..R::default()
        }),
        "hog-1" => Some(R {
            cpu: 0.2,
            ..R::default()
        }),
        _ => None,
    });
}

/// deadline-cbs as the CBS runs it: 10 %, then 30 %, and the refused 55 % leaves 30 %.
fn deadline(step: usize, task: &str) -> R {
    match (step, task) {
        (0, "dl") => R {
            cpu: 0.1,
            ..R::default()
        },
        (_, "dl") => R {
            cpu: 0.3,
            ..R::default()
        },
        _ => R {
            cpu: 0.9,
            ..R::default()
        },
    }
}

#[test]
fn deadline_step_1_fails_without_throttling_or_without_the_guarantee() {
    // Not throttled: the spinner takes a whole CPU.
    assert_effect("deadline-cbs", &deadline, 1, &|t| {
        (t == "dl").then_some(R {
            cpu: 1.0,
            ..R::default()
        })
    });
    // Not guaranteed: the nice -20 hogs crowd it out.
    assert_effect("deadline-cbs", &deadline, 1, &|t| {
        (t == "dl").then_some(R {
            cpu: 0.02,
            ..R::default()
        })
    });
}

#[test]
fn deadline_step_2_fails_when_the_runtime_does_not_set_the_share() {
    assert_effect("deadline-cbs", &deadline, 2, &|t| {
        (t == "dl").then_some(R {
            cpu: 0.1,
            ..R::default()
        })
    });
}

#[test]
fn deadline_step_3_fails_when_admission_control_admits_the_task() {
    // Admitted (no fair servers counted): the spinner runs its 55 ms.
    assert_effect("deadline-cbs", &deadline, 3, &|t| {
        (t == "dl").then_some(R {
            cpu: 0.55,
            ..R::default()
        })
    });
}

/// load-balance as the balancer runs it: four hogs on CPU 0 with the sleeper waking on
/// the idle CPU 1, then two hogs per CPU, settled, the sleeper waiting behind them.
fn balance(step: usize, task: &str) -> R {
    let hog = task.starts_with("hog");
    match (step, hog) {
        (0 | 1, true) => R {
            cpu: 0.25,
            ..R::default()
        },
        (0 | 1, false) => R {
            wait: 0.01,
            progress: 950.0,
            ..R::default()
        },
        (2, true) => R {
            cpu: 0.5,
            migrations: 1.0,
            ..R::default()
        },
        (_, true) => R {
            cpu: 0.5,
            migrations: 0.1,
            ..R::default()
        },
        (_, false) => R {
            wait: 0.3,
            progress: 700.0,
            ..R::default()
        },
    }
}

#[test]
fn balance_step_1_fails_when_the_hogs_are_not_pinned() {
    assert_effect("load-balance", &balance, 1, &|t| {
        t.starts_with("hog").then_some(R {
            cpu: 0.5,
            ..R::default()
        })
    });
}

#[test]
fn balance_step_2_fails_when_the_wakeup_finds_no_idle_cpu() {
    assert_effect("load-balance", &balance, 2, &|t| {
        (t == "sleeper").then_some(R {
            wait: 0.3,
            ..R::default()
        })
    });
}

#[test]
fn balance_step_3_fails_when_the_balancer_does_not_spread_them() {
    assert_effect("load-balance", &balance, 3, &|t| {
        t.starts_with("hog").then_some(R {
            cpu: 0.25,
            ..R::default()
        })
    });
}

#[test]
fn balance_step_4_fails_when_the_hogs_keep_migrating() {
    assert_effect("load-balance", &balance, 4, &|t| {
        t.starts_with("hog").then_some(R {
            cpu: 0.5,
            migrations: 5.0,
            ..R::default()
        })
    });
}

#[test]
fn balance_step_5_fails_when_the_sleeper_still_finds_an_idle_cpu() {
    assert_effect("load-balance", &balance, 5, &|t| {
        (t == "sleeper").then_some(R {
            wait: 0.01,
            ..R::default()
        })
    });
}

#[test]
fn older_kernels_skip_the_steps_they_cannot_show_and_say_why() {
    let on = |name: &str, kernel| {
        let text = BUILTIN.iter().find(|(n, _)| *n == name).expect(name).1;
        load::parse_on(text, "test", crate::preset::load, kernel).expect("parses")
    };
    let old = on("eevdf-slice", (6, 6));
    assert!(
        old.steps[0].check.is_some(),
        "the default slice shows on 6.6"
    );
    let cfs = on("eevdf-slice", (6, 5));
    assert!(cfs.steps.iter().all(|s| s.caption.starts_with(SKIPPED)));
    assert!(cfs.steps[0].caption.contains("needs kernel 6.6+"));
    for s in &old.steps[1..] {
        assert!(s.caption.starts_with(SKIPPED), "{}", s.caption);
        assert!(s.caption.contains("needs kernel 6.12+"), "{}", s.caption);
        assert!(s.check.is_none() && s.set.is_empty() && s.undo.is_empty());
        assert!(s.question.is_none());
    }
    let old = on("deadline-cbs", (6, 11));
    assert!(old.steps[1].check.is_some());
    assert!(
        old.steps[2].caption.contains("fair servers"),
        "{}",
        old.steps[2].caption
    );
    assert!(old.steps[2].check.is_none() && old.steps[2].expect_refused.is_empty());
    // 6.12 plays every step; the admission step expects its refusal.
    let new = on("deadline-cbs", (6, 12));
    assert!(new.steps.iter().all(|s| s.check.is_some()));
    assert!(new.steps[2].expects_refusal("dl.runtime=55ms"));
    assert!(!new.steps[2].expects_refusal("sys.rt_runtime_us=300000"));
}

#[test]
fn a_step_comparing_with_a_skipped_one_is_skipped_and_bad_requirements_are_refused() {
    let head = "name = 'l'\ntitle = 't'\npreset = 'pipe-wakeup'\n";
    let step = |extra: &str| {
        format!("[[step]]\ncaption = 'c'\nlook = 'graph:headline'\nduration = '4s'\n{extra}")
    };
    let ratio =
        "[step.check]\nmetric = 'headline'\nratio_at_least = 1.0\nthan_step = 1\nsays = 's'\n";
    let text = format!(
        "{head}{}{}",
        step("needs_kernel = '6.12'\nskip_why = 'new'\n"),
        step(ratio)
    );
    let l = load::parse_on(&text, "t", crate::preset::load, (6, 1)).expect("parses");
    assert!(
        l.steps[1].caption.contains("compares with step 1"),
        "{}",
        l.steps[1].caption
    );
    assert!(l.steps[1].check.is_none());
    let l = load::parse_on(&text, "t", crate::preset::load, (6, 12)).expect("parses");
    assert!(l.steps[1].check.is_some());
    for (extra, says) in [
        ("needs_kernel = '6.12'\n", "go together"),
        (
            "needs_kernel = 'new'\nskip_why = 'x'\n",
            "is not a kernel version",
        ),
        (
            "needs_kernel = '6.12'\nskip_why = ' '\n",
            "skip_why must say",
        ),
        (
            "expect_refused = ['producer.nice=3']\n",
            "not one of the step's set changes",
        ),
    ] {
        let e = format!(
            "{:#}",
            load::parse_on(
                &format!("{head}{}", step(extra)),
                "t",
                crate::preset::load,
                (6, 18)
            )
            .expect_err(extra)
        );
        assert!(e.contains(says), "{extra}: {e}");
    }
}
