//! Colours, or none: NO_COLOR turns every colour off and leaves bold/reverse, and the
//! graphs' lines then differ by glyph (the legend shows each one).

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

/// Without colour, each line of a chart is drawn with its own character.
const GLYPHS: [char; 8] = ['•', '+', 'x', 'o', '*', '#', '=', '~'];

/// Knob changes on the graphs and in the line naming them: unlike any line's glyph.
pub const MARK_GLYPH: char = '┊';

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

/// Marker of the n-th series: Braille (fine) in colour, else its own glyph.
pub fn marker(app: &App, n: usize) -> Marker {
    if app.no_color {
        Marker::Custom(GLYPHS[n % GLYPHS.len()])
    } else {
        Marker::Braille
    }
}

/// What the legend shows for the n-th series: a line in its colour, or its glyph.
pub fn legend_glyph(app: &App, n: usize) -> String {
    if app.no_color {
        GLYPHS[n % GLYPHS.len()].to_string()
    } else {
        "━".to_string()
    }
}

/// How knob changes are drawn on a chart.
pub fn mark_marker() -> Marker {
    Marker::Custom(MARK_GLYPH)
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

/// What a lesson points at, and its caption's frame: loud on a projector.
pub fn lesson(app: &App) -> Style {
    if app.no_color {
        Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD)
    } else {
        Style::default()
            .fg(Color::Black)
            .bg(Color::Yellow)
            .add_modifier(Modifier::BOLD)
    }
}

/// The lesson's frame lines.
pub fn lesson_frame(app: &App) -> Style {
    colored(app, Color::Yellow).add_modifier(Modifier::BOLD)
}
