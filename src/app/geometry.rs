//! What the last frame put where: the regions the mouse can hit, how far the panes scroll.
//!
//! The drawing code (`ui`) measures the screen as it draws and hands this over through the TUI
//! loop, so the App answers a click by what the user saw without depending on the drawing code
//! (`ui` builds on `app`, not the other way).

use ratatui::layout::{Position, Rect};

use super::keys::Command;
use super::{App, Column, Mode};

/// What is on screen at a cell, for the mouse.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hit {
    /// A task's row (the task's index).
    Task(usize),
    /// A column heading of the task table.
    Column(Column),
    /// A system knob's row (its index).
    Knob(usize),
    Note,
    /// A key hint of the footer: its command.
    Key(Command),
    /// Inside an open popup, or outside it.
    Popup {
        inside: bool,
    },
    Nothing,
}

/// The layout of the frame last drawn. Empty until the first frame: a click then hits
/// nothing and the panes do not scroll, as on a screen too small to draw.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Geometry {
    /// Screen areas and what they show; the first area holding a cell wins.
    pub regions: Vec<(Rect, Hit)>,
    /// Lines the note can scroll where it is shown (0 when it is not).
    pub note_max_scroll: usize,
    /// Lines the help can scroll (0 when it is not open).
    pub help_max_scroll: usize,
    /// Lines the log can scroll (0 when it is not open): its last page shows the latest.
    pub log_max_scroll: usize,
}

impl Geometry {
    /// What the cell at (x, y) showed.
    pub fn hit(&self, x: u16, y: u16) -> Hit {
        let at = Position::new(x, y);
        self.regions
            .iter()
            .find(|(r, _)| r.contains(at))
            .map_or(Hit::Nothing, |&(_, hit)| hit)
    }
}

impl App {
    /// Keep the geometry of the frame just drawn: the TUI loop calls this after each draw.
    pub fn drawn(&mut self, geometry: Geometry) {
        // The log opens past its end (measuring it takes a frame): pin it to the last
        // page now, so that messages logged while it is open do not move it.
        if let Mode::Log { scroll } = &mut self.ui.mode {
            *scroll = (*scroll).min(geometry.log_max_scroll);
        }
        self.ui.geometry = geometry;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_region_holding_a_cell_answers() {
        let g = Geometry {
            regions: vec![
                (Rect::new(10, 5, 20, 4), Hit::Popup { inside: true }),
                (Rect::new(0, 0, 80, 24), Hit::Popup { inside: false }),
            ],
            ..Geometry::default()
        };
        assert_eq!(g.hit(10, 5), Hit::Popup { inside: true });
        assert_eq!(g.hit(30, 5), Hit::Popup { inside: false });
        assert_eq!(g.hit(80, 5), Hit::Nothing, "off screen");
        assert_eq!(Geometry::default().hit(0, 0), Hit::Nothing);
    }

    #[test]
    fn the_log_opens_at_its_end_and_stays_put_as_messages_come() {
        let mut app = crate::app::tests::running_app();
        app.ui.mode = Mode::Log { scroll: usize::MAX };
        let measured = |log_max_scroll| Geometry {
            log_max_scroll,
            ..Geometry::default()
        };
        app.drawn(measured(7));
        assert_eq!(app.ui.mode, Mode::Log { scroll: 7 });
        app.drawn(measured(9));
        assert_eq!(app.ui.mode, Mode::Log { scroll: 7 }, "not moved by news");
    }
}
