//! The preset's teaching note: what to try next and what the kernel is doing.

use ratatui::layout::Rect;
use ratatui::text::Span;
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

use super::theme;
use crate::app::App;

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let (title, text) = match &app.preset {
        Some(p) => (
            format!(" {} - note ", p.name),
            format!("{}\n\n{}", p.summary, p.note),
        ),
        None => (" note ".into(), String::new()),
    };
    let block = Block::default()
        .borders(Borders::TOP)
        .title(Span::styled(title, theme::title(app)));
    frame.render_widget(
        Paragraph::new(text).block(block).wrap(Wrap { trim: false }),
        area,
    );
}
