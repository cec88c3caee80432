//! `schedlab` / `schedlab tui` (the live workbench) and `schedlab replay`.

use anyhow::{Context, Result};

use super::prepare::{sampling_interval, shape, system_knobs};
use super::usage;
use crate::app::keys::KeyMap;
use crate::cli::{SettingsArgs, SystemArgs, TargetArgs};

pub fn tui(
    preset: Option<&str>,
    target: &TargetArgs,
    settings: &SettingsArgs,
    system: &SystemArgs,
    wakings: crate::trace::Wakings,
) -> Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return Err(usage(
            "the workbench needs a terminal; for a headless run use `schedlab run PRESET` (see --help)",
        ));
    }
    let keymap = KeyMap::load(KeyMap::config_path().as_deref()).map_err(usage)?;
    let p = super::target::preset_for(preset, target)?;
    let interval = sampling_interval(&settings.interval)?;
    let shaped = shape(p, settings)?;
    if !shaped.system_sets.is_empty() {
        return Err(usage("system knobs (sys.*) are changed live in the workbench (tab, enter) or with `schedlab run --set`"));
    }
    open(
        shaped.preset,
        keymap,
        interval,
        system,
        target.keep,
        wakings,
        None,
    )
}

/// `schedlab lesson NAME`: the workbench on the lesson's preset, the lesson playing.
pub fn tui_lesson(
    lesson: crate::lesson::Lesson,
    interval: &str,
    system: &SystemArgs,
) -> Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return Err(usage(
            "a lesson in the workbench needs a terminal; without one use `schedlab lesson NAME --headless`",
        ));
    }
    let keymap = KeyMap::load(KeyMap::config_path().as_deref()).map_err(usage)?;
    let interval = sampling_interval(interval)?;
    let preset = super::target::load_preset(&lesson.preset)?;
    let shaped = shape(preset, &SettingsArgs::default())?;
    open(
        shaped.preset,
        keymap,
        interval,
        system,
        false,
        crate::trace::Wakings::CrossCpu,
        Some(lesson),
    )
}

/// The workbench on a shaped preset until the user quits; the knobs restored after.
fn open(
    preset: crate::preset::Preset,
    keymap: KeyMap,
    interval: std::time::Duration,
    system: &SystemArgs,
    keep: bool,
    wakings: crate::trace::Wakings,
    lesson: Option<crate::lesson::Lesson>,
) -> Result<()> {
    let exe = std::env::current_exe().context("finding the schedlab binary")?;
    let mut system = system_knobs(system, keep)?;
    let record_dir = std::env::current_dir().unwrap_or_else(|_| std::env::temp_dir());
    let tui_opts = crate::tui::TuiOptions {
        exe,
        interval,
        keymap,
        no_color: crate::tui::no_color_requested(),
        open_recorder: Box::new(|path| {
            crate::lab::record::FileRecorder::create(path)
                .map(|r| Box::new(r) as Box<dyn crate::lab::record::Recorder>)
        }),
        record_dir,
        wakings,
        lessons: crate::lesson::list().into_iter().flatten().collect(),
        lesson,
    };
    system.allow_unthrottled_rt = false;
    let restored = crate::tui::run(preset, system, tui_opts)?;
    let failed: Vec<&String> = restored
        .iter()
        .filter(|r| r.starts_with("could not"))
        .collect();
    if !failed.is_empty() {
        anyhow::bail!(
            "{}",
            failed
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    Ok(())
}

pub fn replay(file: &std::path::Path, speed: f64) -> Result<()> {
    use std::io::IsTerminal;
    if !(0.05..=100.0).contains(&speed) {
        return Err(usage(format!("--speed {speed}: allowed 0.05..100")));
    }
    let records = crate::lab::record::read(file).map_err(|e| usage(format!("{e:#}")))?;
    if !std::io::stdout().is_terminal() {
        return Err(usage("replay opens the workbench and needs a terminal"));
    }
    let keymap = KeyMap::load(KeyMap::config_path().as_deref()).map_err(usage)?;
    crate::tui::replay(records, speed, keymap, crate::tui::no_color_requested())
}
