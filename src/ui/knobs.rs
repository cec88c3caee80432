//! The system knobs panel: RT runtime/period, features and the other system knobs with
//! their values; read-only ones say why.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use ratatui::Frame;

use super::theme;
use crate::app::keys::Command;
use crate::app::{App, Hit, Panel};

/// Knob rows the panel shows (its title and the hint line take the rest).
fn visible(area: Rect) -> usize {
    area.height.saturating_sub(3) as usize
}

/// The first knob shown: the selection stays on screen.
fn offset(app: &App, area: Rect) -> usize {
    if app.ui.panel == Panel::Knobs {
        app.ui
            .selected_knob
            .saturating_sub(visible(area).saturating_sub(1))
    } else {
        0
    }
}

/// The knobs' rows in `area`, for clicks.
pub fn regions(area: Rect, app: &App) -> Vec<(Rect, Hit)> {
    let first = offset(app, area);
    (0..visible(area))
        .map(|row| (row, first + row))
        .filter(|&(_, i)| i < app.knobs.len())
        .map(|(row, i)| {
            let line = Rect::new(area.x, area.y + 1 + row as u16, area.width, 1);
            (line.intersection(area), Hit::Knob(i))
        })
        .collect()
}

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let focus = app
        .preset
        .as_ref()
        .map(|p| p.focus.clone())
        .unwrap_or_default();
    let selected_panel = app.ui.panel == Panel::Knobs;
    let visible = visible(area);
    let offset = offset(app, area);
    let mut lines: Vec<Line> = Vec::new();
    for (i, k) in app.knobs.iter().enumerate().skip(offset).take(visible) {
        let star = if focus.contains(&k.name) { "*" } else { " " };
        let value = k.value.clone().unwrap_or_else(|| "?".into());
        let name = k.name.trim_start_matches("sys.");
        let mut spans = vec![Span::raw(format!("{star}{name:<26} {value:<9}"))];
        if !k.writable {
            spans.push(Span::styled("ro", theme::dim(app)));
        }
        let line = Line::from(spans);
        lines.push(if selected_panel && i == app.ui.selected_knob {
            line.style(theme::selected(app))
        } else {
            line
        });
    }
    if selected_panel {
        if let Some(k) = app.knobs.get(app.ui.selected_knob) {
            let why = match (&k.why_not, k.writable) {
                (_, true) => format!("{} edits: {}", app.key_label(Command::Edit), k.allowed),
                (Some(w), false) => format!("read-only: {w}"),
                (None, false) => "read-only".into(),
            };
            lines.push(Line::styled(why, theme::dim(app)));
        }
    } else {
        lines.push(Line::styled(
            format!(
                "{} selects a knob; * = matters for this preset",
                app.key_label(Command::NextPanel)
            ),
            theme::dim(app),
        ));
    }
    let block = Block::default()
        .borders(Borders::TOP)
        .title(Span::styled(" System knobs ", theme::title(app)));
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false }),
        area,
    );
}
