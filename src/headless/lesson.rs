//! `schedlab lesson NAME --headless`: the lesson's steps as one run whose knob changes
//! come at the steps' times, each step's check evaluated on the run's live model.

use std::time::Duration;

use anyhow::Result;

use super::run::{run_live, RunOptions};
use crate::knob::sys::SystemKnobs;
use crate::lesson::check::Window;
use crate::lesson::{Check, Lesson};
use crate::preset::Preset;
use crate::report::lesson::{lesson_report, LessonReport};
use crate::report::{EventReport, RunReport};

/// Each step's length and the checks as they apply at that length: a settle time never
/// takes more than half of a shortened step.
pub fn timed_checks(lesson: &Lesson, times: &[Duration]) -> Vec<Option<Check>> {
    lesson
        .steps
        .iter()
        .zip(times)
        .map(|(s, t)| {
            s.check.clone().map(|mut c| {
                c.settle = c.settle.min(*t / 2);
                c
            })
        })
        .collect()
}

/// Play `lesson` on `preset` with steps `times` long; `opts` gives the sampling and the
/// binary (its duration and `at` are the lesson's).
pub fn play(
    lesson: &Lesson,
    preset: &Preset,
    times: &[Duration],
    mut opts: RunOptions,
    sys: &mut SystemKnobs,
) -> Result<(LessonReport, RunReport)> {
    let mut start = Duration::ZERO;
    let mut starts = Vec::new();
    opts.at.clear();
    for (step, t) in lesson.steps.iter().zip(times) {
        starts.push(start);
        opts.at.extend(step.set.iter().map(|s| (start, s.clone())));
        start += *t;
    }
    opts.duration = start;
    // The steps' windows start at their own times: nothing is left out of the run.
    opts.warmup = Some(Duration::ZERO);
    let (report, live) = run_live(preset, &opts, sys)?;
    let end = live.now_s();
    let windows: Vec<Window> = starts
        .iter()
        .zip(times)
        .map(|(s, t)| Window {
            from_s: s.as_secs_f64().min(end),
            to_s: (*s + *t).as_secs_f64().min(end),
        })
        .collect();
    // The run applies the `at` changes in order, one event each.
    let mut events = report.events.iter().cloned();
    let changes: Vec<Vec<EventReport>> = lesson
        .steps
        .iter()
        .map(|s| events.by_ref().take(s.set.len()).collect())
        .collect();
    let checks = timed_checks(lesson, times);
    let doc = lesson_report(lesson, &report, &live, &windows, &checks, changes);
    Ok((doc, report))
}

/// The run's report with each step's start as an event, for the plot's marks.
pub fn with_step_marks(mut run: RunReport, doc: &LessonReport) -> RunReport {
    for s in &doc.steps {
        run.events.push(EventReport {
            t_s: s.start_s,
            setting: format!("step {}", s.step),
            result: "lesson step".into(),
            ok: true,
        });
    }
    run.events.sort_by(|a, b| {
        a.t_s
            .partial_cmp(&b.t_s)
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    run
}
