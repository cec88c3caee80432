//! The top line: preset, kernel, CPUs, elapsed time, sampling interval, live or paused,
//! and what is on or wrong: foreign load, RT holding every CPU, the scheduler trace, a
//! recording.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::theme;
use crate::app::App;

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
    let flags = flags(app);
    let kernel = format!("Linux {}  ", app.kernel);
    let details = format!(
        "{} CPUs  t={:.1}s  every {} ms  ",
        app.cpus,
        app.live.now_s(),
        app.ui.interval.as_millis()
    );
    let width = |spans: &[Span]| spans.iter().map(|s| s.width()).sum::<usize>();
    let fixed = " schedlab ".len() + preset.chars().count() + 2 + details.len() + state.len();
    // The kernel goes first when the line is too long: the state and the flags are what
    // changes and what warns.
    let kernel = if fixed + kernel.chars().count() + width(&flags) > area.width as usize {
        String::new()
    } else {
        kernel
    };
    let mut spans = vec![
        Span::styled(" schedlab ", theme::title(app)),
        Span::styled(preset.to_string(), theme::key(app)),
        Span::raw(format!("  {kernel}{details}")),
        Span::styled(
            state,
            if app.ui.paused {
                theme::error(app)
            } else {
                theme::title(app)
            },
        ),
    ];
    spans.extend(flags);
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// What the header flags after the state.
fn flags(app: &App) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    if let Some(f) = app.live.store.foreign_now() {
        spans.push(Span::styled(
            format!("  FOREIGN LOAD {f:.1} CPU"),
            theme::error(app),
        ));
    }
    if app.cpus > 0 && app.live.store.cpus_held_by_rt() >= app.cpus {
        // The terminal is a fair-class program: keys and redraws now wait for the
        // windows RT throttling leaves (measured: up to 1.5 s).
        spans.push(Span::styled("  RT HOLDS ALL CPUS", theme::error(app)));
    }
    if app.tracing {
        spans.push(Span::styled("  TRACE", theme::key(app)));
    }
    if let Some(path) = &app.recording {
        spans.push(Span::styled(format!("  ● REC {path}"), theme::error(app)));
    }
    spans
}
