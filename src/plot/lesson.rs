//! The lesson figure: the session's run panels with each step marked, and a line per step
//! that judges it against its own expected effect (never the session against the last
//! step's ideal).

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::run::{
    draw_run_panels, panel_count, run_samples, third_of, Third, EVENT_OK, EVENT_REFUSED,
};
use super::style::{font, footed, footer_text, titled, LEGEND_W};
use crate::format::counted;
use crate::report::lesson::{LessonReport, StepReport, StepResult};
use crate::report::RunReport;

/// Height of a time panel, and of what a figure has besides (title, footer, margins).
const PANEL_H: u32 = 260;
const FRAME_H: u32 = 120;
/// The steps panel: its heading, then a row per step.
const STEPS_HEAD_H: u32 = 36;
const STEP_ROW_H: u32 = 22;
/// Room between the last step's line and the footer.
const STEPS_FOOT_H: u32 = 8;

/// The figure's panels: a fairness preset's whole-session bars are left out (each step
/// has its own ideal shares; its line below says how it did against them).
fn third(run: &RunReport) -> Third {
    match third_of(run) {
        Third::Fairness => Third::Nothing,
        t => t,
    }
}

fn steps_height(doc: &LessonReport) -> u32 {
    STEPS_HEAD_H + STEP_ROW_H * doc.steps.len() as u32 + STEPS_FOOT_H
}

/// The lesson figure's height: its time panels and the steps panel.
pub(super) fn lesson_height(run: &RunReport, doc: &LessonReport) -> u32 {
    FRAME_H + PANEL_H * panel_count(third(run)) as u32 + steps_height(doc)
}

pub(super) fn draw_lesson<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    run: &RunReport,
    doc: &LessonReport,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let root = &footed(root, &footer_text(&run.kernel, run.cpus, &run_samples(run)))?;
    let title = format!(
        "lesson {} on {} - Linux {}, {}",
        doc.lesson,
        doc.preset,
        run.kernel,
        counted(run.cpus as u64, "CPU")
    );
    let body = titled(root, &title, &subtitle(doc))?;
    let (w, h) = body.dim_in_pixel();
    let (top, bottom) = body.split_vertically(h.saturating_sub(steps_height(doc)));
    let (plots, side) = top.split_horizontally(w.saturating_sub(LEGEND_W));
    draw_run_panels(&plots, &side, run, third(run))?;
    draw_steps(&bottom, doc)
}

/// The lesson's title and its tally of checks.
fn subtitle(doc: &LessonReport) -> String {
    let checks = doc.passed + doc.failed + doc.not_applicable;
    let mut sub = format!(
        "{}; {} of {checks} checks passed, {} not applicable here, {} failed",
        doc.title, doc.passed, doc.not_applicable, doc.failed
    );
    if doc.interrupted {
        sub.push_str("; interrupted");
    }
    sub
}

/// A step's line: its window, its result and its check's own figure and expectation.
pub(super) fn step_line(s: &StepReport) -> String {
    let result = match s.result {
        StepResult::Pass => "pass",
        StepResult::Fail => "FAIL",
        StepResult::NotApplicable => "not applicable here",
        StepResult::NoData => "NO DATA",
        StepResult::NoCheck => "no check",
    };
    let what = s.check.as_ref().map_or_else(
        || s.caption.clone(),
        |c| {
            c.text
                .trim_start_matches("yes: ")
                .trim_start_matches("NO: ")
                .to_string()
        },
    );
    format!(
        "step {} ({:.1}-{:.1} s), {result}: {what}",
        s.step, s.start_s, s.end_s
    )
}

fn draw_steps<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, doc: &LessonReport) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let (w, _) = area.dim_in_pixel();
    let left = 16;
    area.draw(&Text::new(
        "Each step against its own expected effect (the mean over its window, after its settle time)",
        (left, STEPS_HEAD_H as i32 / 2),
        font(15).pos(Pos::new(HPos::Left, VPos::Center)),
    ))?;
    let room = w.saturating_sub(2 * left as u32);
    for (i, s) in doc.steps.iter().enumerate() {
        let colour = match s.result {
            StepResult::Fail | StepResult::NoData => EVENT_REFUSED,
            _ => EVENT_OK,
        };
        let style = font(13).color(&colour);
        let mut line = step_line(s);
        while line.chars().count() > 2 && area.estimate_text_size(&line, &style)?.0 > room {
            line.pop();
            line.pop();
            line.push('…');
        }
        let y = STEPS_HEAD_H as i32 + STEP_ROW_H as i32 * i as i32 + STEP_ROW_H as i32 / 2;
        area.draw(&Text::new(
            line,
            (left, y),
            style.pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    Ok(())
}
