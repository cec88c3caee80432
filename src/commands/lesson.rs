//! `schedlab lesson`: list the lessons, play one in the workbench, or headless with a
//! pass/fail line per step.

use std::time::Duration;

use anyhow::{Context, Result};

use super::output::{emit, print_report};
use super::prepare::{check_later, check_plot, finish, sampling_interval, shape, system_knobs};
use super::target::load_preset;
use super::usage;
use crate::cli::{LessonArgs, SettingsArgs};
use crate::headless::lesson::{play, with_step_marks};
use crate::headless::run::RunOptions;
use crate::lesson::{Lesson, KEY_STEP_HOLD};
use crate::preset::setting::parse_duration;
use crate::report::lesson::render_lesson;

pub fn lesson(args: LessonArgs) -> Result<()> {
    let Some(name) = args.name.as_deref() else {
        return emit(&listing());
    };
    let lesson = crate::lesson::load(name).map_err(|e| usage(format!("{e:#}")))?;
    if args.headless {
        return headless(&lesson, &args);
    }
    if args.json.is_some() || args.plot.is_some() || args.step_time.is_some() || args.pace != 1.0 {
        return Err(usage(
            "--json, --plot, --pace and --step-time go with --headless (the workbench is paced by its keys)",
        ));
    }
    super::tui::tui_lesson(lesson, &args.interval, &args.system)
}

/// One line per lesson: name, preset, steps, title; a broken user file says why.
fn listing() -> String {
    let mut out = String::from("LESSON            PRESET            STEPS  TITLE\n");
    for l in crate::lesson::list() {
        match l {
            Ok(l) => out.push_str(&format!(
                "{:<17} {:<17} {:>5}  {}\n",
                l.name,
                l.preset,
                l.steps.len(),
                l.title
            )),
            Err(e) => out.push_str(&format!("(broken) {e:#}\n")),
        }
    }
    out.push_str(
        "\nschedlab lesson NAME plays one in the workbench; --headless prints a check per step\n",
    );
    out
}

/// Each step's time without a teacher: `--step-time`, else the lesson's scaled by `--pace`.
fn step_times(lesson: &Lesson, args: &LessonArgs, interval: Duration) -> Result<Vec<Duration>> {
    if !(0.05..=10.0).contains(&args.pace) {
        return Err(usage(format!("--pace {}: allowed 0.05..10", args.pace)));
    }
    let fixed = args
        .step_time
        .as_deref()
        .map(|s| parse_duration(s).map_err(|e| usage(format!("--step-time: {e}"))))
        .transpose()?;
    let times = lesson.step_times(KEY_STEP_HOLD, args.pace, fixed);
    // A check needs two samples in its window after the settle time.
    let least = (interval * 6).max(Duration::from_millis(500));
    if let Some(short) = times.iter().find(|t| **t < least) {
        return Err(usage(format!(
            "a step of {} is too short to check anything: allowed at least {} per step (6 sampling intervals); raise --pace or --step-time",
            humantime::format_duration(*short),
            humantime::format_duration(least)
        )));
    }
    Ok(times)
}

fn headless(lesson: &Lesson, args: &LessonArgs) -> Result<()> {
    check_plot(args.plot.as_deref())?;
    let interval = sampling_interval(&args.interval)?;
    let times = step_times(lesson, args, interval)?;
    let preset = load_preset(&lesson.preset)?;
    let shaped = shape(
        preset,
        &SettingsArgs {
            interval: args.interval.clone(),
            ..SettingsArgs::default()
        },
    )?;
    let exe = std::env::current_exe().context("finding the schedlab binary")?;
    let mut opts = RunOptions::new(exe);
    opts.interval = interval;
    opts.stop = crate::system::stop_on_signals().context("installing signal handlers")?;
    opts.overrides = vec![format!("lesson {}", lesson.name)];
    // Each setting against the preset as the steps before it left it, as the lesson plays
    // them: `medium.priority=2` is valid after `medium.policy=fifo`, not on its own.
    let mut played = shaped.preset.clone();
    for s in lesson.steps.iter().flat_map(|s| &s.set) {
        check_later(&played, &opts, s)?;
        if s.target != "sys" {
            played.apply_all(std::slice::from_ref(s)).map_err(usage)?;
        }
    }
    let mut system = system_knobs(&args.system, false)?;
    let result = play(lesson, &shaped.preset, &times, opts, &mut system);
    let restored = finish(system);
    let (doc, run) = result?;
    restored?;
    print_report(args.json.as_deref(), &doc, render_lesson(&doc))?;
    let plot = args.plot.clone().or_else(|| {
        lesson
            .plot
            .then(|| format!("lesson-{}.png", lesson.name).into())
    });
    if let Some(path) = plot {
        crate::plot::plot_lesson(&with_step_marks(run, &doc), &doc, &path)?;
        if args.json.as_deref() != Some("-") {
            emit(&format!("plot: {}\n", path.display()))?;
        }
    }
    if doc.ok() {
        Ok(())
    } else {
        anyhow::bail!(
            "lesson {}: {} check(s) failed on this machine (see the table)",
            lesson.name,
            doc.failed
        )
    }
}
