//! The top line: preset, kernel, scheduler class (EEVDF, or the sched_ext scheduler),
//! CPUs, elapsed time, sampling interval, live or paused, and what is on or wrong: foreign load, RT holding every CPU, the scheduler trace, a
//! recording. What does not fit is left out whole, least useful first; the state and
//! the warnings always stay.

use ratatui::layout::Rect;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::theme;
use crate::app::App;

/// One piece of the header: its text, style, and when it goes (lower goes first;
/// `None` never goes).
struct Piece {
    text: String,
    style: Style,
    drop_rank: Option<u8>,
}

fn piece(text: impl Into<String>, style: Style, drop_rank: Option<u8>) -> Piece {
    Piece {
        text: text.into(),
        style,
        drop_rank,
    }
}

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let preset = app
        .preset
        .as_ref()
        .map_or("(starting)", |p| p.name.as_str());
    let state = match (app.replay, app.ui.paused) {
        (true, true) => "REPLAY paused",
        (true, false) => "REPLAY",
        (false, true) => "PAUSED",
        (false, false) => "LIVE",
    };
    let state_style = if app.ui.paused {
        theme::error(app)
    } else {
        theme::title(app)
    };
    let mut pieces = vec![
        piece(" schedlab ", theme::title(app), Some(3)),
        piece(format!(" {preset}"), theme::key(app), None),
        piece(format!("  Linux {}", app.kernel), Style::default(), Some(0)),
        // Before the CPUs and the clock: a sched_ext scheduler changes every result.
        piece(format!("  {}", app.scheduler), Style::default(), Some(2)),
        piece(
            format!("  {}", crate::format::counted(app.cpus as u64, "CPU")),
            Style::default(),
            Some(4),
        ),
        piece(
            format!("  t={:.1}s", app.live.now_s()),
            Style::default(),
            Some(5),
        ),
        piece(
            format!("  every {} ms", app.ui.interval.get().as_millis()),
            Style::default(),
            Some(1),
        ),
        piece(format!("  {state}"), state_style, None),
    ];
    // A recording from before the class was recorded has none to show.
    pieces.retain(|p| !p.text.trim().is_empty());
    pieces.extend(flags(app));
    let width = |p: &[Piece]| p.iter().map(|p| p.text.chars().count()).sum::<usize>();
    let mut rank = 0u8;
    while width(&pieces) > area.width as usize && rank <= 5 {
        pieces.retain(|p| p.drop_rank != Some(rank));
        rank += 1;
    }
    let spans: Vec<Span> = pieces
        .into_iter()
        .map(|p| Span::styled(p.text, p.style))
        .collect();
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// What the header flags after the state: each stays whatever the width.
fn flags(app: &App) -> Vec<Piece> {
    let mut pieces = Vec::new();
    if let Some(f) = app.live.store.foreign_now() {
        pieces.push(piece(
            format!("  FOREIGN LOAD {f:.1} CPU"),
            theme::error(app),
            None,
        ));
    }
    if app.cpus > 0 && app.live.store.cpus_held_by_rt() >= app.cpus {
        // The terminal is a fair-class program: keys and redraws now wait for the
        // windows RT throttling leaves (measured: up to 1.5 s).
        pieces.push(piece("  RT HOLDS ALL CPUS", theme::error(app), None));
    }
    if app.tracing {
        pieces.push(piece("  TRACE", theme::key(app), None));
        let lost = app.live.store.trace_lost;
        if lost > 0 {
            pieces.push(piece(
                format!(" LOST {}", crate::format::si(lost as f64)),
                theme::error(app),
                None,
            ));
        }
    }
    if let Some(path) = &app.recording {
        // The file's name: its directory is the one schedlab started in.
        let name = std::path::Path::new(path)
            .file_name()
            .map_or_else(|| path.clone(), |n| n.to_string_lossy().into_owned());
        pieces.push(piece(format!("  ● REC {name}"), theme::error(app), None));
    }
    pieces
}
