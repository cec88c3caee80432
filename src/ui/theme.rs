//! Colours, or none: NO_COLOR turns every colour off and leaves bold/reverse.

use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;

use crate::app::App;

const SERIES: [Color; 8] = [
    Color::Cyan,
    Color::Yellow,
    Color::Green,
    Color::LightRed,
    Color::LightBlue,
    Color::LightGreen,
    Color::LightYellow,
    Color::White,
];
const MARKERS: [Marker; 4] = [
    Marker::Braille,
    Marker::Dot,
    Marker::Block,
    Marker::HalfBlock,
];

fn colored(app: &App, color: Color) -> Style {
    if app.no_color {
        Style::default()
    } else {
        Style::default().fg(color)
    }
}

/// Style of the n-th series in a chart.
pub fn series(app: &App, n: usize) -> Style {
    colored(app, SERIES[n % SERIES.len()])
}

/// Marker of the n-th series: without colour, shapes tell the lines apart.
pub fn marker(app: &App, n: usize) -> Marker {
    if app.no_color {
        MARKERS[n % MARKERS.len()]
    } else {
        Marker::Braille
    }
}

/// Knob-change marks on the time axis.
pub fn mark(app: &App) -> Style {
    colored(app, Color::Magenta)
}

pub fn title(_app: &App) -> Style {
    Style::default().add_modifier(Modifier::BOLD)
}

pub fn selected(app: &App) -> Style {
    if app.no_color {
        Style::default().add_modifier(Modifier::REVERSED)
    } else {
        Style::default()
            .bg(Color::DarkGray)
            .add_modifier(Modifier::BOLD)
    }
}

pub fn error(app: &App) -> Style {
    colored(app, Color::LightRed).add_modifier(Modifier::BOLD)
}

pub fn dim(app: &App) -> Style {
    if app.no_color {
        Style::default()
    } else {
        Style::default().fg(Color::Gray)
    }
}

pub fn key(app: &App) -> Style {
    colored(app, Color::Cyan).add_modifier(Modifier::BOLD)
}
