//! Popups drawn over the screen: help, a choice, text input, the CPU picker and the
//! preset picker.

use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::theme;
use crate::app::keys::Command;
use crate::app::{App, Mode};

fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let [v] = Layout::vertical([Constraint::Length(height.min(area.height))])
        .flex(Flex::Center)
        .areas(area);
    let [h] = Layout::horizontal([Constraint::Length(width.min(area.width))])
        .flex(Flex::Center)
        .areas(v);
    h
}

fn boxed<'a>(app: &App, title: &str) -> Block<'a> {
    Block::default()
        .borders(Borders::ALL)
        .title(Span::styled(format!(" {title} "), theme::title(app)))
}

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    match &app.ui.mode {
        Mode::Normal => {}
        Mode::Help => render_help(frame, area, app),
        Mode::Choice {
            title,
            options,
            selected,
            ..
        } => render_choice(frame, area, app, title, options, *selected),
        Mode::Input {
            title,
            prefix,
            buffer,
        } => render_input(frame, area, app, title, prefix, buffer),
        Mode::CpuPicker { task, cpus, cursor } => {
            render_cpu_picker(frame, area, app, task, cpus, *cursor)
        }
        Mode::Presets { selected } => render_presets(frame, area, app, *selected),
        Mode::Picker(p) => super::picker::render(frame, area, app, p),
    }
}

/// The commands the help lists during a replay.
fn works_in_replay(cmd: Command) -> bool {
    matches!(
        cmd,
        Command::Quit
            | Command::Help
            | Command::Pause
            | Command::Up
            | Command::Down
            | Command::ZoomIn
            | Command::ZoomOut
            | Command::Note
            | Command::NextPanel
    )
}

/// One line per command the screen answers: its keys, then what it does.
fn help_entries(app: &App) -> Vec<Line<'static>> {
    Command::ALL
        .iter()
        .filter(|(c, ..)| !app.replay || works_in_replay(*c))
        .map(|(cmd, ..)| {
            let keys = app.keymap.keys_for(*cmd).join(" ");
            Line::from(vec![
                Span::styled(format!("{keys:>8} "), theme::key(app)),
                Span::raw(cmd.help()),
            ])
        })
        .collect()
}

fn render_help(frame: &mut Frame, area: Rect, app: &App) {
    let entries = help_entries(app);
    let footer = Line::styled(
        "mouse: click a task to select it; keys can be rebound in ~/.config/schedlab/keys.toml",
        theme::dim(app),
    );
    // Two columns when one does not fit the height.
    let one_column = entries.len() as u16 + 4 <= area.height;
    let (width, rows) = if one_column {
        (78, entries.len())
    } else {
        (area.width.saturating_sub(2), entries.len().div_ceil(2))
    };
    let r = centered(area, width, rows as u16 + 4);
    frame.render_widget(Clear, r);
    let block = boxed(app, "help");
    let inner = block.inner(r);
    frame.render_widget(block, r);
    let [body, foot] = Layout::vertical([Constraint::Min(1), Constraint::Length(2)]).areas(inner);
    if one_column {
        frame.render_widget(Paragraph::new(entries), body);
    } else {
        let [left, right] =
            Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
                .areas(body);
        let mut left_lines = entries;
        let right_lines = left_lines.split_off(rows);
        frame.render_widget(Paragraph::new(left_lines), left);
        frame.render_widget(Paragraph::new(right_lines), right);
    }
    frame.render_widget(
        Paragraph::new(vec![Line::raw(""), footer]).wrap(Wrap { trim: true }),
        foot,
    );
}

fn render_choice(
    frame: &mut Frame,
    area: Rect,
    app: &App,
    title: &str,
    options: &[String],
    selected: usize,
) {
    let lines: Vec<Line> = options
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let l = Line::raw(format!(" {o} "));
            if i == selected {
                l.style(theme::selected(app))
            } else {
                l
            }
        })
        .collect();
    let r = centered(area, 30, options.len() as u16 + 2);
    frame.render_widget(Clear, r);
    frame.render_widget(Paragraph::new(lines).block(boxed(app, title)), r);
}

fn render_input(frame: &mut Frame, area: Rect, app: &App, title: &str, prefix: &str, buffer: &str) {
    let r = centered(area, 70, 3);
    frame.render_widget(Clear, r);
    let line = Line::from(vec![
        Span::styled(prefix.to_string(), theme::dim(app)),
        Span::raw(buffer.to_string()),
        Span::styled("▏", theme::key(app)),
    ]);
    frame.render_widget(Paragraph::new(line).block(boxed(app, title)), r);
}

fn render_cpu_picker(
    frame: &mut Frame,
    area: Rect,
    app: &App,
    task: &str,
    cpus: &[bool],
    cursor: usize,
) {
    let spans: Vec<Span> = cpus
        .iter()
        .enumerate()
        .map(|(i, on)| {
            let text = format!(" [{}] {i} ", if *on { "x" } else { " " });
            if i == cursor {
                Span::styled(text, theme::selected(app))
            } else {
                Span::raw(text)
            }
        })
        .collect();
    let r = centered(area, 60, 4);
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(vec![
            Line::from(spans),
            Line::styled("space toggles, enter applies", theme::dim(app)),
        ])
        .wrap(Wrap { trim: true })
        .block(boxed(app, &format!("{task}: CPUs"))),
        r,
    );
}

fn render_presets(frame: &mut Frame, area: Rect, app: &App, selected: usize) {
    let lines: Vec<Line> = app
        .presets
        .iter()
        .enumerate()
        .map(|(i, (name, summary))| {
            let l = Line::raw(format!(" {name:<16} {summary}"));
            if i == selected {
                l.style(theme::selected(app))
            } else {
                l
            }
        })
        .collect();
    let r = centered(
        area,
        area.width.saturating_sub(4),
        app.presets.len() as u16 + 2,
    );
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines).block(boxed(app, "switch preset (restarts the workload)")),
        r,
    );
}
