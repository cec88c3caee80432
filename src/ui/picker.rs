//! The process picker popup (`a`): a tree of running processes, the filter typed after
//! `/`, the selected row highlighted and kept in view.

use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Clear, Paragraph};
use ratatui::Frame;

use super::theme;
use crate::app::{App, Picker};

/// Where the picker is on a screen of `area`.
pub fn picker_box(area: Rect) -> Rect {
    let width = area.width.saturating_sub(4).min(72);
    let height = area.height.saturating_sub(4).clamp(5, 30).min(area.height);
    Rect {
        x: area.x + (area.width.saturating_sub(width)) / 2,
        y: area.y + (area.height.saturating_sub(height)) / 2,
        width,
        height,
    }
}

pub fn render(frame: &mut Frame, area: Rect, app: &App, p: &Picker) {
    let shown = p.shown();
    let r = picker_box(area);
    let height = r.height;
    // Rows inside the box: the filter line takes one, the borders two.
    let room = usize::from(height.saturating_sub(3)).max(1);
    let first = p.selected.saturating_sub(room - 1);
    let mut lines = vec![Line::raw(if p.typing {
        format!(" filter: {}_", p.filter)
    } else if p.filter.is_empty() {
        format!(
            " {}   / filter  enter attach  esc close",
            crate::format::counted(shown.len() as u64, "process")
        )
    } else {
        format!(
            " filter \"{}\": {} of {}   / new filter",
            p.filter,
            shown.len(),
            p.rows.len()
        )
    })];
    for (i, row) in shown.iter().enumerate().skip(first).take(room) {
        let threads = if row.threads > 1 {
            format!(" ({} threads)", row.threads)
        } else {
            String::new()
        };
        let indent = "  ".repeat(row.depth.min(12));
        let l = Line::raw(format!(" {:>7}  {indent}{}{threads}", row.pid, row.comm));
        lines.push(if i == p.selected {
            l.style(theme::selected(app))
        } else {
            l
        });
    }
    frame.render_widget(Clear, r);
    frame.render_widget(
        Paragraph::new(lines).block(
            Block::default()
                .borders(Borders::ALL)
                .title(" attach to a process (its threads and children join) "),
        ),
        r,
    );
}
