//! Drawing the workbench: one file per screen region, each `render(frame, area, &App)`.
//! Nothing here reads /proc or changes state.

pub mod footer;
pub mod graphs;
pub mod header;
pub mod knobs;
pub mod note;
pub mod picker;
pub mod popup;
pub mod preempt;
pub mod tasks;
pub mod theme;

#[cfg(test)]
mod tests;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use crate::app::{App, Mode, Panel};

/// The smallest terminal the workbench draws into.
pub const MIN_SIZE: (u16, u16) = (80, 24);

/// Where each region goes for a given terminal size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regions {
    pub header: Rect,
    pub tasks: Rect,
    pub graphs: Rect,
    /// Knobs and note beside the graphs on wide terminals.
    pub side: Option<Side>,
    /// The selected task's preemptors while the trace is in view: a panel in the side
    /// column, or one line above the graphs where there is no side column.
    pub preempt: Option<Rect>,
    pub status: Rect,
    pub footer: Rect,
}

/// The side column's panels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side {
    pub knobs: Rect,
    pub note: Rect,
}

/// Rows of the preemptors panel in the side column: its title and the top five.
const PREEMPT_PANEL_H: u16 = 6;

/// Split the screen. Wide terminals get a side panel; narrow ones show knobs or the note
/// in place of the graphs when asked (Tab, n).
pub fn layout(area: Rect, app: &App) -> Regions {
    let rows = app.live.tasks.len() as u16;
    let table_h = (rows + 2).clamp(4, (area.height / 3).max(6));
    let [header, tasks, main, status, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(table_h),
        Constraint::Min(8),
        Constraint::Length(1),
        Constraint::Length(1),
    ])
    .areas(area);
    let trace = app.trace_in_view();
    let (graphs, side, preempt) = if area.width >= 120 {
        let [g, _, s] = Layout::horizontal([
            Constraint::Min(70),
            Constraint::Length(1),
            Constraint::Length(44),
        ])
        .areas(main);
        let (side, preempt) = split_side(s, trace);
        (g, Some(side), preempt)
    } else if trace {
        let [p, g] = Layout::vertical([Constraint::Length(1), Constraint::Min(4)]).areas(main);
        (g, None, Some(p))
    } else {
        (main, None, None)
    };
    Regions {
        header,
        tasks,
        graphs,
        side,
        preempt,
        status,
        footer,
    }
}

/// Knobs over the note, with the preemptors panel between them while the trace is in
/// view (the knobs give up more of their room: they rarely fill it).
fn split_side(side: Rect, trace: bool) -> (Side, Option<Rect>) {
    if !trace {
        let [knobs, note] =
            Layout::vertical([Constraint::Percentage(55), Constraint::Percentage(45)]).areas(side);
        return (Side { knobs, note }, None);
    }
    let [knobs, preempt, note] = Layout::vertical([
        Constraint::Fill(55),
        Constraint::Length(PREEMPT_PANEL_H),
        Constraint::Fill(45),
    ])
    .areas(side);
    (Side { knobs, note }, Some(preempt))
}

/// The task index under screen row `y`, if any (for mouse clicks).
pub fn task_at(regions: &Regions, app: &App, y: u16) -> Option<usize> {
    let first_row = regions.tasks.y + 2;
    if y < first_row || y >= regions.tasks.y + regions.tasks.height {
        return None;
    }
    let visible = regions.tasks.height.saturating_sub(2) as usize;
    let offset = tasks::scroll_offset(app.ui.selected_task, visible);
    let i = offset + (y - first_row) as usize;
    (i < app.live.tasks.len()).then_some(i)
}

/// Draw everything.
pub fn render(frame: &mut Frame, app: &App) {
    let area = frame.area();
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        let text = format!(
            "schedlab needs a {}x{} terminal; this one is {}x{}. Enlarge it (q quits).",
            MIN_SIZE.0, MIN_SIZE.1, area.width, area.height
        );
        frame.render_widget(
            Paragraph::new(text).wrap(ratatui::widgets::Wrap { trim: true }),
            area,
        );
        return;
    }
    let r = layout(area, app);
    header::render(frame, r.header, app);
    tasks::render(frame, r.tasks, app);
    match r.side {
        Some(side) => {
            graphs::render(frame, r.graphs, app);
            knobs::render(frame, side.knobs, app);
            note::render(frame, side.note, app);
        }
        None if app.ui.show_note => note::render(frame, r.graphs, app),
        None if app.ui.panel == Panel::Knobs => knobs::render(frame, r.graphs, app),
        None => graphs::render(frame, r.graphs, app),
    }
    if let Some(p) = r.preempt {
        preempt::render(frame, p, app);
    }
    footer::render_status(frame, r.status, app);
    footer::render_keys(frame, r.footer, app);
    if app.ui.mode != Mode::Normal {
        popup::render(frame, area, app);
    }
}
