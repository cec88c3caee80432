//! The lesson's caption panel (large, bold, framed: read from a projector), what it
//! points at, and the `L` list of lessons.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Borders, Clear, Paragraph, Wrap};
use ratatui::Frame;

use super::theme;
use crate::app::{App, Playing};
use crate::lesson::check::Verdict;
use crate::lesson::{Graph, Look, Pace};

/// Rows the caption may take at most (the workbench stays usable below it).
const MAX_ROWS: u16 = 10;

/// The lesson playing (not one waiting for its preset).
pub fn playing(app: &App) -> Option<&Playing> {
    app.lesson.as_ref().filter(|p| !p.waiting)
}

/// What the current step points at.
pub fn look(app: &App) -> Option<Look> {
    playing(app).and_then(|p| p.current()).map(|s| s.look)
}

/// Whether the current step points at graph `g`.
pub fn looks_at_graph(app: &App, g: Graph) -> bool {
    look(app) == Some(Look::Graph(g))
}

/// The table column the current step points at.
pub fn looked_column(app: &App) -> Option<crate::app::Column> {
    match look(app)? {
        Look::Column(c) => Some(c),
        Look::Graph(_) => None,
    }
}

/// How the caption names what to look at.
fn look_words(look: Look) -> String {
    match look {
        Look::Graph(g) => format!(
            "the {} graph (framed in yellow)",
            match g {
                Graph::CpuShare => "CPU share",
                Graph::Switches => "switches/s",
                Graph::Headline => "headline",
                Graph::CpuBusy => "CPU busy",
            }
        ),
        Look::Column(c) => {
            let name = crate::lesson::COLUMNS
                .iter()
                .find(|(_, x)| *x == c)
                .map_or("", |(n, _)| n);
            format!("the {} column of the table (marked ▶)", name.to_uppercase())
        }
    }
}

/// The caption's lines for a panel `width` wide.
fn lines(app: &App, p: &Playing) -> Vec<Line<'static>> {
    let bold = theme::title(app);
    let Some(step) = p.current() else {
        return vec![
            Line::styled("End of the lesson.", bold),
            Line::styled(
                format!(
                    "{} goes back a step; {} or esc leaves the lesson (the knobs stay as they are).",
                    app.key_label(crate::app::keys::Command::SeekBack),
                    app.key_label(crate::app::keys::Command::Lessons)
                ),
                bold,
            ),
        ];
    };
    // The question comes alone: the caption tells the answer.
    if let (Some(q), true) = (&step.question, p.asking) {
        return vec![
            Line::from(vec![
                Span::styled("Predict: ", bold),
                Span::styled(q.clone(), theme::lesson_frame(app)),
            ]),
            Line::styled(
                format!(
                    "Nothing has changed yet: {} makes the change.",
                    app.key_label(crate::app::keys::Command::SeekForward)
                ),
                theme::dim(app),
            ),
        ];
    }
    let mut out = vec![Line::styled(step.caption.clone(), bold)];
    out.push(Line::from(vec![
        Span::styled("Look at ", theme::dim(app)),
        Span::styled(look_words(step.look), theme::lesson_frame(app)),
    ]));
    if let Some(c) = &step.check {
        let (style, text) = match &p.outcome {
            Some(o) if o.verdict == Verdict::Pass => (theme::key(app), o.text.clone()),
            Some(o) if o.verdict == Verdict::Fail => (theme::error(app), o.text.clone()),
            // Not judged: the step's change did nothing.
            Some(o) if p.step_did_nothing() => (theme::error(app), o.text.clone()),
            _ => (
                theme::dim(app),
                format!(
                    "measuring: {} (after {} to settle)",
                    c.says,
                    humantime::format_duration(c.settle)
                ),
            ),
        };
        out.push(Line::from(vec![
            Span::styled("Check: ", bold),
            Span::styled(text, style),
        ]));
        if p.step_did_nothing()
            || p.outcome
                .as_ref()
                .is_some_and(|o| o.verdict != Verdict::NoData)
        {
            for r in p.reasons.iter().take(2) {
                out.push(Line::styled(
                    format!("May differ here: {r}"),
                    theme::dim(app),
                ));
            }
        }
    }
    out
}

/// The panel's title: the lesson, the step, its clock.
fn title(app: &App, p: &Playing) -> Line<'static> {
    let n = p.lesson.steps.len();
    let clock = match p.current().map(|s| s.pace) {
        _ if p.asking => format!(
            "a question, {} makes the change",
            app.key_label(crate::app::keys::Command::SeekForward)
        ),
        Some(Pace::Timed(d)) => format!("{:.0}s of {:.0}s", p.clock_s, d.as_secs_f64()),
        Some(Pace::Key) => format!(
            "{:.0}s, {} for the next step",
            p.clock_s,
            app.key_label(crate::app::keys::Command::SeekForward)
        ),
        None => "done".into(),
    };
    let at = if p.finished() {
        format!("the end ({n} steps)")
    } else {
        format!("step {}/{n}", p.step + 1)
    };
    let paused = if p.paused { "  PAUSED" } else { "" };
    Line::from(vec![
        Span::styled(
            format!(" LESSON {}  {at} ", p.lesson.name),
            theme::lesson(app),
        ),
        Span::styled(format!(" {clock}{paused} "), theme::lesson_frame(app)),
    ])
}

/// Rows the caption needs on a screen `width` wide (0 without a lesson playing).
pub fn height(app: &App, width: u16) -> u16 {
    let Some(p) = playing(app) else { return 0 };
    let inner = width.saturating_sub(2).max(1);
    let text = Paragraph::new(lines(app, p)).wrap(Wrap { trim: true });
    (text.line_count(inner) as u16 + 2).min(MAX_ROWS)
}

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let Some(p) = playing(app) else { return };
    let block = Block::default()
        .borders(Borders::ALL)
        .border_type(BorderType::Thick)
        .border_style(theme::lesson_frame(app))
        .title(title(app, p));
    frame.render_widget(
        Paragraph::new(lines(app, p))
            .wrap(Wrap { trim: true })
            .block(block),
        area,
    );
}

/// Frame a graph the lesson points at with thick bars left and right; the graph is
/// drawn inside. Other graphs keep their area.
pub fn frame_graph(frame: &mut Frame, area: Rect, app: &App, g: Graph) -> Rect {
    if !looks_at_graph(app, g) || area.width < 10 {
        return area;
    }
    let block = Block::default()
        .borders(Borders::LEFT | Borders::RIGHT)
        .border_type(BorderType::Thick)
        .border_style(theme::lesson_frame(app));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    inner
}

/// Where the list of lessons is on a screen of `area`.
pub fn list_box(area: Rect, app: &App) -> Rect {
    let h = (app.lessons.len() as u16 + 2).min(area.height);
    let w = area.width.saturating_sub(4);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

pub fn render_list(frame: &mut Frame, area: Rect, app: &App, selected: usize) {
    let here = app.preset.as_ref().map(|p| p.name.as_str());
    let lines: Vec<Line> = app
        .lessons
        .iter()
        .enumerate()
        .map(|(i, l)| {
            let switch = if Some(l.preset.as_str()) == here {
                ""
            } else {
                " (switches preset)"
            };
            let line = Line::raw(format!(
                " {:<16} {} steps  {}{switch}",
                l.name,
                l.steps.len(),
                l.title
            ));
            if i == selected {
                line.style(theme::selected(app))
            } else {
                line
            }
        })
        .collect();
    let r = list_box(area, app);
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(Span::styled(" play a lesson (enter) ", theme::title(app))),
        ),
        r,
    );
}
