//! The mouse: a click selects a task or a knob, sorts by a column heading, presses a
//! key hint of the footer; the wheel moves the selection or scrolls the note, the help
//! and the log. What is under the pointer comes from the [`Geometry`](super::Geometry) of
//! the frame last drawn: what the user saw there.

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};

use super::{App, Effect, Hit, Mode, Panel};

/// Lines the wheel scrolls the note, the help and the log by.
const WHEEL_LINES: isize = 3;

impl App {
    pub(super) fn mouse(&mut self, m: MouseEvent) -> Vec<Effect> {
        let down = match m.kind {
            MouseEventKind::Down(MouseButton::Left) => None,
            MouseEventKind::ScrollDown => Some(true),
            MouseEventKind::ScrollUp => Some(false),
            _ => return Vec::new(),
        };
        // Typing the filter ends where the mouse goes on; the filter stays.
        if self.ui.mode == Mode::Filter {
            self.ui.mode = Mode::Normal;
        }
        let hit = self.ui.geometry.hit(m.column, m.row);
        match down {
            None => self.click(hit),
            Some(down) => {
                self.wheel(hit, down);
                Vec::new()
            }
        }
    }

    fn click(&mut self, hit: Hit) -> Vec<Effect> {
        match hit {
            Hit::Task(i) => {
                self.ui.panel = Panel::Tasks;
                self.ui.selected_task = i;
            }
            Hit::Column(c) => self.sort_by(c),
            Hit::Knob(i) => {
                self.ui.panel = Panel::Knobs;
                self.ui.selected_knob = i;
            }
            Hit::Key(cmd) => return self.command(cmd),
            // The help and the log close on a click anywhere, other popups on one
            // outside them (like esc).
            Hit::Popup { inside } => {
                if !inside || matches!(self.ui.mode, Mode::Help { .. } | Mode::Log { .. }) {
                    self.ui.mode = Mode::Normal;
                }
            }
            Hit::Note | Hit::Nothing => {}
        }
        Vec::new()
    }

    fn wheel(&mut self, hit: Hit, down: bool) {
        let lines = if down { WHEEL_LINES } else { -WHEEL_LINES };
        match hit {
            Hit::Task(_) | Hit::Column(_) => {
                self.ui.panel = Panel::Tasks;
                self.move_task(down);
            }
            Hit::Knob(_) => {
                self.ui.panel = Panel::Knobs;
                self.move_selection(down);
            }
            Hit::Note => self.scroll_note(lines),
            Hit::Popup { .. } => self.scroll_popup(lines),
            Hit::Key(_) | Hit::Nothing => {}
        }
    }
}
