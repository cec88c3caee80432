//! What the last frame put where: the regions the mouse can hit, how far the panes scroll.
//!
//! The drawing code (`ui`) measures the screen as it draws and hands this over through the TUI
//! loop, so the App answers a click by what the user saw without depending on the drawing code
//! (`ui` builds on `app`, not the other way).

use ratatui::layout::{Position, Rect};

use super::keys::Command;
use super::Column;

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
    pub help_max_scroll: usize,
    /// The log's latest line at the top of its last page: where the log opens.
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
}
