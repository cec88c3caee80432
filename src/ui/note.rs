//! The preset's teaching note: what to try next and what the kernel is doing. The
//! preset's hard line breaks are undone and the text wrapped to the panel (paragraphs
//! and list items stay); it scrolls when it does not fit.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

use super::theme;
use crate::app::keys::Command;
use crate::app::App;

/// The note's lines as the preset wrote them, joined into paragraphs: a blank line ends
/// one, and a line that starts a list item (`-`, `*`, indented) starts a line of its own.
pub fn reflow(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut open = false;
    for raw in text.lines() {
        let line = raw.trim_end();
        if line.trim().is_empty() {
            if open {
                out.push(String::new());
            }
            open = false;
            continue;
        }
        let item = line.starts_with(['-', '*', ' ', '\t']);
        match out.last_mut() {
            Some(last) if open && !item => {
                last.push(' ');
                last.push_str(line.trim_start());
            }
            _ => out.push(line.to_string()),
        }
        open = true;
    }
    while out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out
}

fn body(app: &App) -> Paragraph<'static> {
    let lines: Vec<Line> = match &app.preset {
        Some(p) => {
            let mut lines = vec![
                Line::styled(p.summary.clone(), theme::title(app)),
                Line::raw(""),
            ];
            lines.extend(reflow(&p.note).into_iter().map(Line::raw));
            lines
        }
        None => Vec::new(),
    };
    Paragraph::new(lines).wrap(Wrap { trim: true })
}

/// Lines the note can scroll in `area` (its title takes a row).
pub fn max_scroll_in(app: &App, area: Rect) -> usize {
    let visible = area.height.saturating_sub(1) as usize;
    body(app)
        .line_count(text_area(area).width)
        .saturating_sub(visible)
}

/// Columns of text at most: longer lines are hard to follow.
const MEASURE: u16 = 100;

/// The note's text column in `area`: the panel, or its left part on a wide one.
fn text_area(area: Rect) -> Rect {
    Rect {
        width: area.width.min(MEASURE),
        ..area
    }
}

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let name = app.preset.as_ref().map_or("", |p| p.name.as_str());
    let max = max_scroll_in(app, area);
    let scroll = app.ui.note_scroll.min(max);
    let mut title = vec![Span::styled(format!(" {name} - note "), theme::title(app))];
    if max > 0 {
        let up = app.key_label(Command::ScrollUp);
        let down = app.key_label(Command::ScrollDown);
        let more = match (scroll > 0, scroll < max) {
            (true, true) => "more above and below",
            (true, false) => "more above",
            _ => "more below",
        };
        title.push(Span::styled(
            format!(" {more}: {up}/{down} "),
            theme::dim(app),
        ));
    }
    let block = Block::default()
        .borders(Borders::TOP)
        .title(Line::from(title));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    frame.render_widget(body(app).scroll((scroll as u16, 0)), text_area(inner));
}

#[cfg(test)]
mod tests {
    use super::reflow;

    #[test]
    fn reflow_joins_hard_breaks_and_keeps_paragraphs_and_items() {
        let text = "One two\nthree.\n\nTry:\n- a\n  b\n- c\nd\n\n\n";
        assert_eq!(
            reflow(text),
            ["One two three.", "", "Try:", "- a", "  b", "- c d"]
        );
    }
}
