//! What `schedlab lesson NAME --headless` reports: per step its window, its knob changes
//! with the kernel's answers, and its check (pass, fail, or why it does not apply here).

use std::fmt::Write as _;

use serde::Serialize;

use super::{EventReport, RunReport};
use crate::lab::live::Live;
use crate::lesson::check::{evaluate, known_reasons, show, Outcome, Verdict, Window};
use crate::lesson::{Bound, Check, Lesson, Metric};

/// How a step ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepResult {
    Pass,
    Fail,
    /// The check did not pass, and schedlab knows why (a refused change, foreign load,
    /// too few CPUs): not this lesson's fault, and not a failure.
    NotApplicable,
    /// Too few samples to judge (a step too short for its settle time).
    NoData,
    /// The step has no check.
    NoCheck,
}

/// A step's check in the document.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CheckReport {
    pub metric: String,
    pub task: Option<String>,
    pub says: String,
    /// The metric over this step's settled window, in `unit`.
    pub value: Option<f64>,
    /// The same over the step it compares with.
    pub reference: Option<f64>,
    pub ratio: Option<f64>,
    pub unit: String,
    pub settle_s: f64,
    pub text: String,
}

/// One step of the lesson as it ran.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct StepReport {
    pub step: usize,
    pub caption: String,
    /// What the class is asked to predict before the step's changes (the workbench
    /// waits for `right`; headless plays straight through).
    pub question: Option<String>,
    pub look: String,
    pub start_s: f64,
    pub end_s: f64,
    /// The step's knob changes, with the kernel's answers.
    pub changes: Vec<EventReport>,
    pub result: StepResult,
    pub check: Option<CheckReport>,
    /// Why the effect may not show here: what schedlab saw, then the lesson's reasons.
    pub reasons: Vec<String>,
    /// Each preset cgroup's CFS bandwidth counters over the step (none without cgroups).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub throttling: Vec<ThrottlingReport>,
}

/// A cgroup's cpu.stat bandwidth counters over one step.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct ThrottlingReport {
    pub cgroup: String,
    /// Enforcement periods with runnable tasks (nr_periods).
    pub periods: u64,
    /// Periods that ran out of quota (nr_throttled).
    pub throttled_periods: u64,
    /// Time throttled (throttled_usec on v2, throttled_time on v1), in ms.
    pub throttled_ms: f64,
}

/// The whole lesson.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct LessonReport {
    pub lesson: String,
    pub title: String,
    pub preset: String,
    pub kernel: String,
    pub cpus: usize,
    pub steps: Vec<StepReport>,
    pub passed: usize,
    pub failed: usize,
    pub not_applicable: usize,
    pub warnings: Vec<String>,
    pub interrupted: bool,
}

impl LessonReport {
    /// Every check passed or does not apply here.
    pub fn ok(&self) -> bool {
        self.failed == 0
    }
}

/// The report of `lesson` played over the run `run` (with its live model): `windows`
/// are the steps' times, `changes` each step's knob events.
pub fn lesson_report(
    lesson: &Lesson,
    run: &RunReport,
    live: &Live,
    windows: &[Window],
    checks: &[Option<Check>],
    changes: Vec<Vec<EventReport>>,
) -> LessonReport {
    let mut steps = Vec::new();
    for (i, ((step, w), changes)) in lesson.steps.iter().zip(windows).zip(changes).enumerate() {
        let refused: Vec<String> = changes
            .iter()
            .filter(|e| !e.ok && !step.expects_refusal(&e.setting))
            .map(|e| format!("{}: {}", e.setting, e.result))
            .collect();
        let check = checks.get(i).cloned().flatten();
        let outcome = check.as_ref().map(|c| {
            let earlier = match c.bound {
                Bound::Ratio { step, .. } => windows.get(step).copied(),
                Bound::Absolute { .. } => None,
            };
            evaluate(live, lesson.headline, c, *w, earlier)
        });
        // A step without a check has no verdict to excuse; its reasons are not shown.
        let metric = check.as_ref().map_or(Metric::Cpu, |c| c.metric);
        let mut known = known_reasons(live, *w, &refused, run.cpus, metric);
        known.extend(
            run.refused
                .iter()
                .map(|r| format!("the experiment runs without a setting it needs: {r}")),
        );
        // What passes without the step's change (or the experiment's settings) is not
        // the effect the step teaches.
        let unmade = !refused.is_empty() || !run.refused.is_empty();
        let result = match outcome.as_ref().map(|o| o.verdict) {
            None => StepResult::NoCheck,
            Some(Verdict::Pass) if unmade => StepResult::NotApplicable,
            Some(Verdict::Pass) => StepResult::Pass,
            Some(_) if !known.is_empty() => StepResult::NotApplicable,
            Some(Verdict::NoData) => StepResult::NoData,
            Some(Verdict::Fail) => StepResult::Fail,
        };
        let reasons = match result {
            StepResult::Pass | StepResult::NoCheck => Vec::new(),
            _ => known
                .into_iter()
                .chain(step.if_not.iter().cloned())
                .collect(),
        };
        steps.push(StepReport {
            step: i + 1,
            caption: step.caption.clone(),
            question: step.question.clone(),
            look: step.look.name(),
            start_s: w.from_s,
            end_s: w.to_s,
            changes,
            result,
            check: check.zip(outcome).map(|(c, o)| check_report(lesson, &c, o)),
            reasons,
            throttling: live
                .throttling_between(w.from_s, w.to_s)
                .into_iter()
                .map(|(cgroup, t)| ThrottlingReport {
                    cgroup,
                    periods: t.periods,
                    throttled_periods: t.throttled,
                    throttled_ms: t.throttled_us as f64 / 1000.0,
                })
                .collect(),
        });
    }
    let count = |r: StepResult| steps.iter().filter(|s| s.result == r).count();
    LessonReport {
        lesson: lesson.name.clone(),
        title: lesson.title.clone(),
        preset: lesson.preset.clone(),
        kernel: run.kernel.clone(),
        cpus: run.cpus,
        passed: count(StepResult::Pass),
        failed: count(StepResult::Fail) + count(StepResult::NoData),
        not_applicable: count(StepResult::NotApplicable),
        steps,
        warnings: run.warnings.clone(),
        interrupted: run.interrupted,
    }
}

fn check_report(lesson: &Lesson, c: &Check, o: Outcome) -> CheckReport {
    let unit = show(c.metric, lesson.headline, 0.0)
        .trim_start_matches(|ch: char| ch.is_ascii_digit() || ch == '.' || ch == ' ')
        .replace("p50 ", "")
        .to_string();
    let unit = match unit.as_str() {
        "%" => "share".to_string(),
        "us" => "ns".to_string(),
        u => u.to_string(),
    };
    CheckReport {
        metric: c.metric.name().to_string(),
        task: c.task.clone(),
        says: c.says.clone(),
        value: o.value,
        reference: o.reference,
        ratio: o.ratio,
        unit,
        settle_s: c.settle.as_secs_f64(),
        text: o.text,
    }
}

/// The table: a line per step, the reasons under a step that did not pass.
pub fn render_lesson(r: &LessonReport) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "lesson {} on {} ({}, {} CPUs): {}",
        r.lesson, r.preset, r.kernel, r.cpus, r.title
    );
    let _ = writeln!(out, "STEP  TIME          RESULT          CHECK");
    for s in &r.steps {
        let result = match s.result {
            StepResult::Pass => "pass",
            StepResult::Fail => "FAIL",
            StepResult::NotApplicable => "not applicable",
            StepResult::NoData => "NO DATA",
            StepResult::NoCheck => "-",
        };
        let check = s
            .check
            .as_ref()
            .map_or_else(|| "(no check)".to_string(), |c| c.text.clone());
        let time = format!("{:.0}-{:.0} s", s.start_s, s.end_s);
        let _ = writeln!(out, "{:<5} {time:<13} {result:<15} {check}", s.step);
        for e in s.changes.iter().filter(|e| !e.ok) {
            let _ = writeln!(out, "      refused: {}: {}", e.setting, e.result);
        }
        for reason in &s.reasons {
            let _ = writeln!(out, "      may differ here: {reason}");
        }
    }
    for w in &r.warnings {
        let _ = writeln!(out, "warning: {w}");
    }
    let checks = r.passed + r.failed + r.not_applicable;
    let _ = writeln!(
        out,
        "=> {} of {checks} checks passed, {} not applicable here, {} failed",
        r.passed, r.not_applicable, r.failed
    );
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::lab::fixtures::started;
    use crate::lab::store::TaskRates;

    /// Other programs take from every task of the experiment alike: they excuse a `cpu`
    /// check that did not pass, never a `portion` check.
    #[test]
    fn foreign_load_excuses_a_cpu_check_but_not_a_portion_check() {
        let text = crate::lesson::BUILTIN
            .iter()
            .find(|(n, _)| *n == "rt-throttle")
            .map(|(_, t)| *t)
            .expect("built-in");
        let lesson = crate::lesson::parse_with(text, "test", crate::preset::load).expect("parses");
        // fifo and fair at half each for three 6 s steps, beside 0.5 CPU of other load:
        // step 1 (fifo's cpu about 95 %) and step 3 (fifo's portion under 5 %) fail.
        let mut live = Live::new(&started(), 1000, Duration::ZERO);
        for k in 1..=180 {
            let t_s = k as f64 * 0.1;
            for task in &mut live.store.tasks {
                task.points.push_back(TaskRates {
                    t_s,
                    cpu_share: 0.5,
                    ..TaskRates::default()
                });
            }
            live.store.foreign.push_back((t_s, 0.5));
        }
        let windows: Vec<Window> = (0..3)
            .map(|i| Window {
                from_s: i as f64 * 6.0,
                to_s: (i + 1) as f64 * 6.0,
            })
            .collect();
        let checks: Vec<Option<Check>> = lesson.steps.iter().map(|s| s.check.clone()).collect();
        let run = crate::plot::tests::fixtures::run_report(2, "iterations");
        let doc = lesson_report(&lesson, &run, &live, &windows, &checks, vec![vec![]; 3]);
        assert_eq!(doc.steps[0].result, StepResult::NotApplicable);
        assert!(
            doc.steps[0].reasons[0].contains("other programs took 0.50 CPU"),
            "{:?}",
            doc.steps[0].reasons
        );
        assert_eq!(
            doc.steps[2].check.as_ref().map(|c| c.metric.as_str()),
            Some("portion")
        );
        assert_eq!(doc.steps[2].result, StepResult::Fail, "{:?}", doc.steps[2]);
        assert!(doc.steps[2]
            .reasons
            .iter()
            .all(|r| !r.contains("other programs took")));
        assert!(!doc.ok());
    }
}
