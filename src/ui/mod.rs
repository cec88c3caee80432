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
pub(crate) mod tests;

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
    /// The graphs, or what replaces them (the note after `n`; the knobs after `tab`
    /// where there is no side column).
    pub graphs: Rect,
    /// Knobs and note beside the graphs on wide terminals.
    pub side: Option<Side>,
    /// The selected task's preemptors while the trace is in view: a panel in the side
    /// column, or one line above the graphs where there is no side column.
    pub preempt: Option<Rect>,
    /// Where the note is, if it is on screen.
    pub note: Option<Rect>,
    pub status: Rect,
    pub footer: Rect,
}

/// The side column's panels (the note is in the main area while `n` shows it there).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Side {
    pub knobs: Rect,
    pub note: Option<Rect>,
}

/// Rows of the preemptors panel in the side column: its title and the top five.
const PREEMPT_PANEL_H: u16 = 6;

/// What the main area shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Main {
    Graphs,
    Note,
    Knobs,
}

/// The main area's content: `n` puts the note there on any width (beside the graphs it
/// is a narrow column); without a side column `tab` puts the knobs there.
pub fn main_view(app: &App, wide: bool) -> Main {
    if app.ui.show_note {
        Main::Note
    } else if !wide && app.ui.panel == Panel::Knobs {
        Main::Knobs
    } else {
        Main::Graphs
    }
}

/// Split the screen. Wide terminals get a side panel; narrow ones show knobs or the note
/// in place of the graphs when asked (Tab, n).
pub fn layout(area: Rect, app: &App) -> Regions {
    let rows = app.live.tasks.len() as u16;
    let table_h = (rows + 2).clamp(4, (area.height / 3).max(6));
    let status_h = footer::status_height(app, area.width);
    let [header, tasks, main, status, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(table_h),
        Constraint::Min(8),
        Constraint::Length(status_h),
        Constraint::Length(1),
    ])
    .areas(area);
    let trace = app.trace_in_view();
    let wide = area.width >= 120;
    let view = main_view(app, wide);
    let (graphs, side, preempt) = if wide {
        let [g, _, s] = Layout::horizontal([
            Constraint::Min(70),
            Constraint::Length(1),
            Constraint::Length(44),
        ])
        .areas(main);
        let (side, preempt) = split_side(s, trace, view != Main::Note);
        (g, Some(side), preempt)
    } else if trace && view == Main::Graphs {
        let [p, g] = Layout::vertical([Constraint::Length(1), Constraint::Min(4)]).areas(main);
        (g, None, Some(p))
    } else {
        (main, None, None)
    };
    let note = match (view, side) {
        (Main::Note, _) => Some(graphs),
        (_, Some(s)) => s.note,
        _ => None,
    };
    Regions {
        header,
        tasks,
        graphs,
        side,
        preempt,
        note,
        status,
        footer,
    }
}

/// Knobs over the note (or alone, when the note is in the main area), with the
/// preemptors panel between them while the trace is in view (the knobs give up more of
/// their room: they rarely fill it).
fn split_side(side: Rect, trace: bool, with_note: bool) -> (Side, Option<Rect>) {
    let note_share = if with_note { 45 } else { 0 };
    if !trace {
        let [knobs, note] = Layout::vertical([
            Constraint::Percentage(100 - note_share),
            Constraint::Percentage(note_share),
        ])
        .areas(side);
        let note = with_note.then_some(note);
        return (Side { knobs, note }, None);
    }
    let [knobs, preempt, note] = Layout::vertical([
        Constraint::Fill(100 - note_share),
        Constraint::Length(PREEMPT_PANEL_H),
        Constraint::Fill(note_share),
    ])
    .areas(side);
    let note = with_note.then_some(note);
    (Side { knobs, note }, Some(preempt))
}

/// What is on screen at a cell, for the mouse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hit {
    /// A task's row (the task's index).
    Task(usize),
    /// A column heading of the task table.
    Column(crate::app::Column),
    /// A system knob's row (its index).
    Knob(usize),
    Note,
    /// A key hint of the footer: its command.
    Key(crate::app::keys::Command),
    /// Inside an open popup, or outside it.
    Popup {
        inside: bool,
    },
    Nothing,
}

/// What the cell at (x, y) shows, by the layout the screen is drawn with.
pub fn hit(app: &App, x: u16, y: u16) -> Hit {
    let area = Rect::new(0, 0, app.ui.size.0, app.ui.size.1);
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        return Hit::Nothing;
    }
    let at = ratatui::layout::Position::new(x, y);
    if !matches!(app.ui.mode, Mode::Normal | Mode::Filter) {
        let inside = popup::area(area, app).is_some_and(|r| r.contains(at));
        return Hit::Popup { inside };
    }
    let r = layout(area, app);
    if r.tasks.contains(at) {
        return tasks::hit(r.tasks, app, x, y).unwrap_or(Hit::Nothing);
    }
    if r.footer.contains(at) {
        return footer::hit(r.footer, app, x).map_or(Hit::Nothing, Hit::Key);
    }
    if r.note.is_some_and(|n| n.contains(at)) {
        return Hit::Note;
    }
    let knobs = match r.side {
        Some(s) => Some(s.knobs),
        None if main_view(app, false) == Main::Knobs => Some(r.graphs),
        None => None,
    };
    match knobs {
        Some(k) if k.contains(at) => knobs::hit(k, app, y).map_or(Hit::Nothing, Hit::Knob),
        _ => Hit::Nothing,
    }
}

/// Draw everything.
pub fn render(frame: &mut Frame, app: &App) {
    let area = frame.area();
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        let text = format!(
            "schedlab needs a terminal of at least {}x{}; this one is {}x{}. Enlarge it ({} quits).",
            MIN_SIZE.0,
            MIN_SIZE.1,
            area.width,
            area.height,
            app.key_label(crate::app::keys::Command::Quit)
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
    match main_view(app, r.side.is_some()) {
        Main::Graphs => graphs::render(frame, r.graphs, app),
        Main::Note => note::render(frame, r.graphs, app),
        Main::Knobs => knobs::render(frame, r.graphs, app),
    }
    if let Some(side) = r.side {
        knobs::render(frame, side.knobs, app);
        if let Some(n) = side.note {
            note::render(frame, n, app);
        }
    }
    if let Some(p) = r.preempt {
        preempt::render(frame, p, app);
    }
    footer::render_status(frame, r.status, app);
    footer::render_keys(frame, r.footer, app);
    if !matches!(app.ui.mode, Mode::Normal | Mode::Filter) {
        popup::render(frame, area, app);
    }
}
