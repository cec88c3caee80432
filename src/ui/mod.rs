//! Drawing the workbench: one file per screen region, each `render(frame, area, &App)`.
//! Nothing here reads /proc or changes state.

pub mod caption;
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

use crate::app::{App, Geometry, Hit, Mode, Panel};

/// The smallest terminal the workbench draws into.
pub const MIN_SIZE: (u16, u16) = (80, 24);

/// Where each region goes for a given terminal size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Regions {
    pub header: Rect,
    /// The lesson's caption (zero rows without a lesson).
    pub caption: Rect,
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
    let status_h = footer::status_height(app, area.width);
    let caption_h = caption::height(app, area.width);
    // A lesson's caption comes out of the table's rows first (it scrolls), never the
    // graphs' last eight.
    let table_max = (area.height / 3)
        .max(6)
        .min(area.height.saturating_sub(1 + caption_h + status_h + 1 + 8))
        .max(4);
    let table_h = (rows + 2).clamp(4, table_max);
    let [header, caption, tasks, main, status, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(caption_h),
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
        caption,
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

/// Where this frame puts what the mouse can hit, and how far the scrolling panes go: the
/// App keeps it to answer the next clicks and scrolls by what is on screen.
pub fn geometry(area: Rect, app: &App) -> Geometry {
    if area.width < MIN_SIZE.0 || area.height < MIN_SIZE.1 {
        return Geometry::default();
    }
    // Scroll limits are measured only while their popup is open: wrapping the log (up
    // to LOG_KEEP messages) on every frame would cost more than drawing the screen.
    let help_max_scroll = match app.ui.mode {
        Mode::Help { .. } => popup::help_max_scroll(area, app),
        _ => 0,
    };
    let log_max_scroll = match app.ui.mode {
        Mode::Log { .. } => popup::log_max_scroll(area, app),
        _ => 0,
    };
    if !matches!(app.ui.mode, Mode::Normal | Mode::Filter) {
        // A popup takes every click: inside it, or outside (which closes it).
        let mut regions: Vec<(Rect, Hit)> = popup::area(area, app)
            .map(|r| (r, Hit::Popup { inside: true }))
            .into_iter()
            .collect();
        regions.push((area, Hit::Popup { inside: false }));
        return Geometry {
            regions,
            note_max_scroll: 0,
            help_max_scroll,
            log_max_scroll,
        };
    }
    let r = layout(area, app);
    let mut regions = tasks::regions(r.tasks, app);
    regions.extend(footer::regions(r.footer, app));
    if let Some(n) = r.note {
        regions.push((n, Hit::Note));
    }
    let knobs = match r.side {
        Some(s) => Some(s.knobs),
        None if main_view(app, false) == Main::Knobs => Some(r.graphs),
        None => None,
    };
    if let Some(k) = knobs {
        regions.extend(knobs::regions(k, app));
    }
    Geometry {
        regions,
        note_max_scroll: r.note.map_or(0, |n| note::max_scroll_in(app, n)),
        help_max_scroll,
        log_max_scroll,
    }
}

/// Draw everything; the frame's [`Geometry`] is for the App (the TUI loop hands it over).
pub fn render(frame: &mut Frame, app: &App) -> Geometry {
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
        return Geometry::default();
    }
    let r = layout(area, app);
    header::render(frame, r.header, app);
    caption::render(frame, r.caption, app);
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
    geometry(area, app)
}
