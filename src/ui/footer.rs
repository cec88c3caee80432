//! The status line (the last knob result or the kernel's refusal) and the keys that
//! matter now.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::theme;
use crate::app::keys::Command;
use crate::app::{App, Mode, Panel};

pub fn render_status(frame: &mut Frame, area: Rect, app: &App) {
    let style = if app.ui.status_is_error {
        theme::error(app)
    } else {
        theme::dim(app)
    };
    frame.render_widget(
        Paragraph::new(Line::styled(app.ui.status.clone(), style)),
        area,
    );
}

/// The keys for the current mode, most useful first; only what fits.
pub fn render_keys(frame: &mut Frame, area: Rect, app: &App) {
    let pairs: Vec<(String, &str)> = match &app.ui.mode {
        Mode::Normal => {
            let cmds: &[(Command, &str)] = match (app.replay, app.ui.panel) {
                (true, _) => &[
                    (Command::Pause, "play/pause"),
                    (Command::StepBack, "step back"),
                    (Command::StepForward, "step"),
                    (Command::SeekBack, "-10s"),
                    (Command::SeekForward, "+10s"),
                    (Command::ZoomIn, "zoom"),
                    (Command::Quit, "quit"),
                    (Command::Help, "help"),
                ],
                (false, Panel::Knobs) => &[
                    (Command::Edit, "edit knob"),
                    (Command::NextPanel, "tasks"),
                    (Command::Up, "select"),
                    (Command::Quit, "quit"),
                    (Command::Help, "help"),
                ],
                (false, Panel::Tasks) => &[
                    (Command::Policy, "policy"),
                    (Command::NiceUp, "nice+"),
                    (Command::NiceDown, "nice-"),
                    (Command::Cpus, "cpus"),
                    (Command::Slice, "slice"),
                    (Command::CommandLine, "set"),
                    (Command::NextPanel, "knobs"),
                    (Command::Note, "note"),
                    (Command::Trace, "trace"),
                    (Command::Pause, "pause"),
                    (Command::Presets, "presets"),
                    (Command::Quit, "quit"),
                    (Command::Help, "help"),
                ],
            };
            cmds.iter()
                .map(|(c, what)| {
                    (
                        app.keymap.keys_for(*c).first().cloned().unwrap_or_default(),
                        *what,
                    )
                })
                .collect()
        }
        Mode::Help => vec![("any key".into(), "close")],
        Mode::Input { .. } => vec![("enter".into(), "apply"), ("esc".into(), "cancel")],
        Mode::Choice { .. } | Mode::Presets { .. } => vec![
            ("↑↓".into(), "choose"),
            ("enter".into(), "apply"),
            ("esc".into(), "cancel"),
        ],
        Mode::Picker(p) if p.typing => {
            vec![("enter".into(), "end filter"), ("esc".into(), "close")]
        }
        Mode::Picker(_) => vec![
            ("↑↓".into(), "choose"),
            ("/".into(), "filter"),
            ("enter".into(), "attach"),
            ("esc".into(), "close"),
        ],
        Mode::CpuPicker { .. } => vec![
            ("←→".into(), "move"),
            ("space".into(), "toggle"),
            ("0-9".into(), "toggle CPU"),
            ("a".into(), "all"),
            ("enter".into(), "apply"),
            ("esc".into(), "cancel"),
        ],
    };
    let mut spans = Vec::new();
    let mut width = 0usize;
    for (key, what) in pairs {
        let len = key.chars().count() + what.len() + 3;
        if width + len > area.width as usize {
            break;
        }
        width += len;
        spans.push(Span::styled(key, theme::key(app)));
        spans.push(Span::raw(format!(" {what}  ")));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}
