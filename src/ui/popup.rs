//! Popups drawn over the screen: help (every command's keys and keys.toml name), the
//! message log, a choice, text input, the CPU picker and the preset picker. The help and
//! the log scroll.

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
        Mode::Normal | Mode::Filter => {}
        Mode::Help { scroll } => render_help(frame, area, app, *scroll),
        Mode::Log { scroll } => render_log(frame, area, app, *scroll),
        Mode::Choice {
            title,
            options,
            selected,
            ..
        } => render_choice(frame, area, app, title, options, *selected),
        Mode::Input { .. } => render_input(frame, area, app),
        Mode::CpuPicker { task, cpus, cursor } => {
            render_cpu_picker(frame, area, app, task, cpus, *cursor)
        }
        Mode::Presets { selected } => render_presets(frame, area, app, *selected),
        Mode::Picker(p) => super::picker::render(frame, area, app, p),
        Mode::Lessons { selected } => super::caption::render_list(frame, area, app, *selected),
    }
}

/// Where the open popup is on a screen of `area` (for the mouse).
pub fn area(area: Rect, app: &App) -> Option<Rect> {
    Some(match &app.ui.mode {
        Mode::Normal | Mode::Filter => return None,
        Mode::Help { .. } => help_box(area, app),
        Mode::Log { .. } => log_box(area),
        Mode::Choice { options, .. } => centered(area, 30, options.len() as u16 + 2),
        Mode::Input { hint, .. } => input_box(area, hint),
        Mode::CpuPicker { .. } => centered(area, 60, 4),
        Mode::Presets { .. } => presets_box(area, app),
        Mode::Picker(_) => super::picker::picker_box(area),
        Mode::Lessons { .. } => super::caption::list_box(area, app),
    })
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
            | Command::StepBack
            | Command::StepForward
            | Command::SeekBack
            | Command::SeekForward
            | Command::Sort
            | Command::SortReverse
            | Command::Filter
            | Command::Log
            | Command::ScrollUp
            | Command::ScrollDown
    )
}

/// The help's table: a command's keys and keys.toml name, then what it does; the
/// replay-only commands last in a live run.
fn help_rows(app: &App) -> Vec<(String, &'static str, &'static str)> {
    let replay_only = |c: Command| {
        matches!(
            c,
            Command::StepBack | Command::StepForward | Command::SeekBack | Command::SeekForward
        )
    };
    let mut rows: Vec<(Command, String, &str, &str)> = Command::ALL
        .iter()
        .filter(|(c, ..)| !app.replay || works_in_replay(*c))
        .map(|(cmd, name, _, help)| {
            let keys = app.keymap.config_keys_for(*cmd).join(" ");
            let keys = if keys.is_empty() {
                "(none)".to_string()
            } else {
                keys
            };
            (*cmd, keys, *name, *help)
        })
        .collect();
    if !app.replay {
        rows.sort_by_key(|(c, ..)| replay_only(*c));
    }
    rows.into_iter().map(|(_, k, n, h)| (k, n, h)).collect()
}

/// What the help says below its table: the mouse, and where keys.toml is.
fn help_footer(app: &App) -> Vec<Line<'static>> {
    vec![
        Line::styled(
            "mouse: click a task to select it, a column heading to sort by it (again: \
             reverse), a key at the bottom to press it; the wheel scrolls",
            theme::dim(app),
        ),
        Line::from(vec![
            Span::styled("rebind keys in ", theme::dim(app)),
            Span::styled(app.keys_path.clone(), theme::key(app)),
            Span::styled(
                ": [keys] then NAME = \"KEY\" or [\"KEY\", ...] (a rebound command \
                 loses its default keys)",
                theme::dim(app),
            ),
        ]),
    ]
}

fn help_box(area: Rect, app: &App) -> Rect {
    let width = area.width.saturating_sub(2).min(96);
    let inner_w = width.saturating_sub(2);
    let footer = Paragraph::new(help_footer(app))
        .wrap(Wrap { trim: true })
        .line_count(inner_w) as u16;
    let rows = help_rows(app).len() as u16;
    // Borders, the heading, the table, a blank line, the footer.
    centered(area, width, rows + footer + 4)
}

/// Rows of the help's table that fit, and how many lines its footer takes.
fn help_fit(area: Rect, app: &App) -> (usize, u16) {
    let r = help_box(area, app);
    let footer = Paragraph::new(help_footer(app))
        .wrap(Wrap { trim: true })
        .line_count(r.width.saturating_sub(2)) as u16;
    let body = r.height.saturating_sub(4 + footer);
    (body as usize, footer)
}

/// How far the help can scroll on a screen of `area`.
pub fn help_max_scroll(area: Rect, app: &App) -> usize {
    let (body, _) = help_fit(area, app);
    help_rows(app).len().saturating_sub(body)
}

fn render_help(frame: &mut Frame, area: Rect, app: &App, scroll: usize) {
    let rows = help_rows(app);
    let r = help_box(area, app);
    let (body_h, footer_h) = help_fit(area, app);
    let scroll = scroll.min(rows.len().saturating_sub(body_h));
    let key_w = rows
        .iter()
        .map(|(k, ..)| k.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let name_w = rows.iter().map(|(_, n, _)| n.len()).max().unwrap_or(4);
    let title = if rows.len() > body_h {
        format!(
            "help: keys {}-{} of {} (↑↓ scroll)",
            scroll + 1,
            (scroll + body_h).min(rows.len()),
            rows.len()
        )
    } else {
        "help".to_string()
    };
    frame.render_widget(Clear, r);
    let block = boxed(app, &title);
    let inner = block.inner(r);
    frame.render_widget(block, r);
    let [head, body, _, foot] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(body_h as u16),
        Constraint::Length(1),
        Constraint::Length(footer_h),
    ])
    .areas(inner);
    frame.render_widget(
        Paragraph::new(Line::styled(
            format!("{:<key_w$}  {:<name_w$}  DOES", "KEYS", "NAME"),
            theme::title(app),
        )),
        head,
    );
    let lines: Vec<Line> = rows
        .iter()
        .skip(scroll)
        .take(body_h)
        .map(|(keys, name, help)| {
            Line::from(vec![
                Span::styled(format!("{keys:<key_w$}  "), theme::key(app)),
                Span::raw(format!("{name:<name_w$}  ")),
                Span::raw(*help),
            ])
        })
        .collect();
    frame.render_widget(Paragraph::new(lines), body);
    frame.render_widget(
        Paragraph::new(help_footer(app)).wrap(Wrap { trim: true }),
        foot,
    );
}

fn log_box(area: Rect) -> Rect {
    centered(
        area,
        area.width.saturating_sub(4),
        area.height.saturating_sub(4),
    )
}

fn log_lines(app: &App) -> Paragraph<'static> {
    let lines: Vec<Line> = if app.ui.log.is_empty() {
        vec![Line::styled("nothing yet", theme::dim(app))]
    } else {
        app.ui
            .log
            .iter()
            .map(|e| {
                let style = if e.error {
                    theme::error(app)
                } else {
                    ratatui::style::Style::default()
                };
                Line::from(vec![
                    Span::styled(format!("t={:>7.1}s  ", e.t_s), theme::dim(app)),
                    Span::styled(e.text.clone(), style),
                ])
            })
            .collect()
    };
    Paragraph::new(lines).wrap(Wrap { trim: false })
}

/// How far the log can scroll on a screen of `area` (its end is the latest message).
pub fn log_max_scroll(area: Rect, app: &App) -> usize {
    let inner = log_box(area);
    log_lines(app)
        .line_count(inner.width.saturating_sub(2))
        .saturating_sub(inner.height.saturating_sub(2) as usize)
}

fn render_log(frame: &mut Frame, area: Rect, app: &App, scroll: usize) {
    let r = log_box(area);
    let max = log_lines(app)
        .line_count(r.width.saturating_sub(2))
        .saturating_sub(r.height.saturating_sub(2) as usize);
    let scroll = scroll.min(max);
    let where_ = if max == 0 {
        String::new()
    } else if scroll == max {
        " (latest at the bottom; ↑ pgup scroll back)".to_string()
    } else {
        format!(
            " ({} below)",
            crate::format::counted((max - scroll) as u64, "line")
        )
    };
    let errors = app.ui.log.iter().filter(|e| e.error).count();
    let title = format!(
        "messages: {} ({}), t on the run's clock{where_}",
        app.ui.log.len(),
        crate::format::counted(errors as u64, "error")
    );
    frame.render_widget(Clear, r);
    frame.render_widget(
        log_lines(app)
            .block(boxed(app, &title))
            .scroll((scroll.min(u16::MAX as usize) as u16, 0)),
        r,
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

/// The input box: the line, and the hint below it wrapped to the box's width.
fn input_box(area: Rect, hint: &str) -> Rect {
    let inner = INPUT_WIDTH.min(area.width).saturating_sub(2);
    let hint_lines = if hint.is_empty() {
        0
    } else {
        Paragraph::new(hint)
            .wrap(Wrap { trim: true })
            .line_count(inner)
    };
    centered(area, INPUT_WIDTH, 3 + hint_lines as u16)
}

const INPUT_WIDTH: u16 = 70;

fn render_input(frame: &mut Frame, area: Rect, app: &App) {
    let Mode::Input {
        title,
        prefix,
        buffer,
        cursor,
        hint,
    } = &app.ui.mode
    else {
        return;
    };
    let r = input_box(area, hint);
    frame.render_widget(Clear, r);
    let at = (*cursor).min(buffer.len());
    let (before, after) = buffer.split_at(if buffer.is_char_boundary(at) {
        at
    } else {
        buffer.len()
    });
    let line = Line::from(vec![
        Span::styled(prefix.clone(), theme::dim(app)),
        Span::raw(before.to_string()),
        Span::styled("▏", theme::key(app)),
        Span::raw(after.to_string()),
    ]);
    let block = boxed(app, title);
    let inner = block.inner(r);
    frame.render_widget(block, r);
    // The line is not wrapped (a long value runs off the box); the hint is, below it.
    let [edit, below] = Layout::vertical([Constraint::Length(1), Constraint::Fill(1)]).areas(inner);
    frame.render_widget(Paragraph::new(line), edit);
    if !hint.is_empty() {
        frame.render_widget(
            Paragraph::new(Line::styled(hint.clone(), theme::dim(app))).wrap(Wrap { trim: true }),
            below,
        );
    }
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

fn presets_box(area: Rect, app: &App) -> Rect {
    centered(
        area,
        area.width.saturating_sub(4),
        app.presets.len() as u16 + 2,
    )
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
    let r = presets_box(area, app);
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines).block(boxed(app, "switch preset (restarts the workload)")),
        r,
    );
}
