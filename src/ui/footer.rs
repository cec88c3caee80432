//! The status line (the last knob result or the kernel's refusal, on two lines when it
//! needs them; the filter prompt while typing one) and the keys that matter now, by
//! the keys they are bound to. Quit and help are always there.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};
use ratatui::Frame;

use super::theme;
use crate::app::keys::Command;
use crate::app::{App, Hit, Mode, Panel};

/// Lines the status needs at this width: one, or two for a long message (the log has
/// all of it).
pub fn status_height(app: &App, width: u16) -> u16 {
    if app.ui.mode != Mode::Filter && app.ui.status.chars().count() > width as usize {
        2
    } else {
        1
    }
}

pub fn render_status(frame: &mut Frame, area: Rect, app: &App) {
    if app.ui.mode == Mode::Filter {
        let line = Line::from(vec![
            Span::styled("filter tasks by name: ", theme::key(app)),
            Span::raw(app.ui.filter.clone()),
            Span::styled("▏", theme::key(app)),
            Span::styled(
                format!("  ({} shown)", app.task_view().len()),
                theme::dim(app),
            ),
        ]);
        frame.render_widget(Paragraph::new(line), area);
        return;
    }
    let style = if app.ui.status_is_error {
        theme::error(app)
    } else {
        theme::dim(app)
    };
    let lines = |t: &str| {
        Paragraph::new(t.to_string())
            .wrap(Wrap { trim: true })
            .line_count(area.width)
    };
    let mut text = app.ui.status.clone();
    if lines(&text) > area.height as usize {
        // Cut at a word, and say where the rest is.
        let more = format!(" ... ({} log)", app.key_label(Command::Log));
        let mut words: Vec<&str> = app.ui.status.split(' ').collect();
        while words.len() > 1 && lines(&(words.join(" ") + &more)) > area.height as usize {
            words.pop();
        }
        text = words.join(" ") + &more;
    }
    frame.render_widget(
        Paragraph::new(Line::styled(text, style)).wrap(Wrap { trim: true }),
        area,
    );
}

/// (what the key does, its command) for the current mode, most useful first.
fn commands(app: &App) -> Vec<(&'static str, Command)> {
    let mut out: Vec<(&str, Command)> = match (app.replay, app.ui.panel) {
        (true, _) => vec![
            ("play/pause", Command::Pause),
            ("step back", Command::StepBack),
            ("step", Command::StepForward),
            ("-10s", Command::SeekBack),
            ("+10s", Command::SeekForward),
            ("zoom", Command::ZoomIn),
            ("sort", Command::Sort),
            ("filter", Command::Filter),
            ("log", Command::Log),
        ],
        (false, Panel::Knobs) => vec![
            ("edit knob", Command::Edit),
            ("tasks", Command::NextPanel),
            ("log", Command::Log),
        ],
        (false, Panel::Tasks) if app.lesson.as_ref().is_some_and(|p| !p.waiting) => vec![
            ("next step", Command::SeekForward),
            ("back (undo)", Command::SeekBack),
            ("pause lesson", Command::Pause),
            ("leave lesson", Command::Lessons),
            ("policy", Command::Policy),
            ("set", Command::CommandLine),
            ("note", Command::Note),
        ],
        (false, Panel::Tasks) => vec![
            ("policy", Command::Policy),
            ("nice+", Command::NiceUp),
            ("nice-", Command::NiceDown),
            ("cpus", Command::Cpus),
            ("slice", Command::Slice),
            ("set", Command::CommandLine),
            ("knobs", Command::NextPanel),
            (
                if app.ui.show_note { "graphs" } else { "note" },
                Command::Note,
            ),
            ("sort", Command::Sort),
            ("filter", Command::Filter),
            ("log", Command::Log),
            ("trace", Command::Trace),
            ("pause", Command::Pause),
            ("presets", Command::Presets),
            ("attach", Command::Attach),
            ("lessons", Command::Lessons),
        ],
    };
    out.extend([("quit", Command::Quit), ("help", Command::Help)]);
    out
}

/// One hint of the footer: where it is, what it shows, what a click on it does.
pub struct Hint {
    pub x: u16,
    pub width: u16,
    pub key: String,
    pub what: String,
    pub command: Option<Command>,
}

/// Every hint of the current mode as (key, what it does, the command a click runs), in
/// the order shown; [`hints`] keeps those that fit.
fn entries(app: &App) -> Vec<(String, String, Option<Command>)> {
    match &app.ui.mode {
        Mode::Normal => commands(app)
            .into_iter()
            .filter_map(|(what, c)| {
                let key = app.keymap.keys_for(c).first()?.clone();
                Some((key, what.to_string(), Some(c)))
            })
            .collect(),
        Mode::Help { .. } | Mode::Log { .. } => vec![
            ("↑↓ pgup pgdn".into(), "scroll".into(), None),
            ("other keys".into(), "close".into(), None),
        ],
        Mode::Filter => vec![
            ("enter".into(), "keep the filter".into(), None),
            ("esc".into(), "clear it".into(), None),
            ("backspace".into(), "delete".into(), None),
        ],
        Mode::Input { .. } => vec![
            ("enter".into(), "apply".into(), None),
            ("esc".into(), "cancel".into(), None),
            ("^U ^W".into(), "delete line/word".into(), None),
            ("←→ ^A ^E".into(), "move".into(), None),
        ],
        Mode::Choice { .. } | Mode::Presets { .. } | Mode::Lessons { .. } => vec![
            ("↑↓".into(), "choose".into(), None),
            ("enter".into(), "apply".into(), None),
            ("esc".into(), "cancel".into(), None),
        ],
        Mode::Picker(p) if p.typing => vec![
            ("enter".into(), "end filter".into(), None),
            ("esc".into(), "close".into(), None),
        ],
        Mode::Picker(_) => vec![
            ("↑↓".into(), "choose".into(), None),
            ("/".into(), "filter".into(), None),
            ("enter".into(), "attach".into(), None),
            ("esc".into(), "close".into(), None),
        ],
        Mode::CpuPicker { .. } => vec![
            ("←→".into(), "move".into(), None),
            ("space".into(), "toggle".into(), None),
            ("0-9".into(), "toggle CPU".into(), None),
            ("a".into(), "all".into(), None),
            ("enter".into(), "apply".into(), None),
            ("esc".into(), "cancel".into(), None),
        ],
    }
}

/// The hints that fit in `width`: quit and help first, then the others by usefulness;
/// shown in the list's order.
pub fn hints(app: &App, width: u16) -> Vec<Hint> {
    let all = entries(app);
    let len = |(k, w, _): &(String, String, Option<Command>)| {
        (k.chars().count() + w.chars().count() + 3) as u16
    };
    let essential = |c: &Option<Command>| matches!(c, Some(Command::Quit) | Some(Command::Help));
    let mut keep = vec![false; all.len()];
    let mut used = 0u16;
    // Quit and help first, then the rest in order, as long as each fits.
    let order = (0..all.len())
        .filter(|&i| essential(&all[i].2))
        .chain((0..all.len()).filter(|&i| !essential(&all[i].2)));
    for i in order {
        if used + len(&all[i]) <= width {
            used += len(&all[i]);
            keep[i] = true;
        } else if !essential(&all[i].2) {
            break;
        }
    }
    let mut x = 0u16;
    all.into_iter()
        .zip(keep)
        .filter(|(_, k)| *k)
        .map(|(entry, _)| {
            let width = len(&entry);
            let (key, what, command) = entry;
            let hint = Hint {
                x,
                width,
                key,
                what,
                command,
            };
            x += width;
            hint
        })
        .collect()
}

pub fn render_keys(frame: &mut Frame, area: Rect, app: &App) {
    let mut spans = Vec::new();
    for h in hints(app, area.width) {
        spans.push(Span::styled(h.key, theme::key(app)));
        spans.push(Span::raw(format!(" {}  ", h.what)));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The footer's hints that are commands, for clicks.
pub fn regions(area: Rect, app: &App) -> Vec<(Rect, Hit)> {
    hints(app, area.width)
        .into_iter()
        .filter_map(|h| {
            let at = Rect::new(area.x.saturating_add(h.x), area.y, h.width, 1);
            Some((at.intersection(area), Hit::Key(h.command?)))
        })
        .collect()
}
