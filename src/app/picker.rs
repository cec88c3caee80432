//! The process picker (`a`): running processes as a tree, filtered by what is typed
//! after `/`, Enter attaching the one selected.

use crossterm::event::{KeyCode, KeyEvent};

use super::{App, Mode, ProcRow};

/// The picker's state: every process listed when it opened, the filter, the cursor
/// (an index into the rows the filter keeps).
#[derive(Clone, Debug, PartialEq)]
pub struct Picker {
    pub rows: Vec<ProcRow>,
    pub filter: String,
    /// Keys go to the filter (after `/`, until Enter or Esc... Esc closes the picker).
    pub typing: bool,
    pub selected: usize,
}

/// What a key in the picker leads to.
pub enum Picked {
    Stay,
    Attach(i32),
}

impl Picker {
    pub fn new(rows: Vec<ProcRow>) -> Picker {
        Picker {
            rows,
            filter: String::new(),
            typing: false,
            selected: 0,
        }
    }

    /// The rows the filter keeps (a case-insensitive part of the name or the pid), in
    /// tree order; a filtered row keeps its depth so the tree still reads.
    pub fn shown(&self) -> Vec<&ProcRow> {
        let f = self.filter.to_lowercase();
        self.rows
            .iter()
            .filter(|r| {
                f.is_empty() || r.comm.to_lowercase().contains(&f) || r.pid.to_string() == f
            })
            .collect()
    }

    pub fn key(&mut self, key: &KeyEvent) -> Picked {
        if self.typing {
            if key.code == KeyCode::Enter {
                self.typing = false;
            } else {
                // Typed at the end: the filter applies as it is typed.
                let mut end = self.filter.len();
                super::line::edit(&mut self.filter, &mut end, key, 64);
            }
            self.selected = 0;
            return Picked::Stay;
        }
        let len = self.shown().len();
        match key.code {
            KeyCode::Char('/') => {
                self.typing = true;
                self.filter.clear();
            }
            KeyCode::Up | KeyCode::Char('k') => self.selected = self.selected.saturating_sub(1),
            KeyCode::Down | KeyCode::Char('j') => {
                self.selected = (self.selected + 1).min(len.saturating_sub(1));
            }
            KeyCode::PageUp => self.selected = self.selected.saturating_sub(10),
            KeyCode::PageDown => self.selected = (self.selected + 10).min(len.saturating_sub(1)),
            KeyCode::Enter => {
                if let Some(r) = self.shown().get(self.selected) {
                    return Picked::Attach(r.pid);
                }
            }
            _ => {}
        }
        Picked::Stay
    }
}

impl App {
    /// Open the picker on a fresh list of processes.
    pub(super) fn open_picker(&mut self, rows: Vec<ProcRow>) {
        if rows.is_empty() {
            self.complain("no user process to attach to");
            return;
        }
        self.say("pick a process: / filters, enter attaches, esc closes");
        self.ui.mode = Mode::Picker(Picker::new(rows));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crossterm::event::KeyModifiers;

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    fn rows() -> Vec<ProcRow> {
        [
            (1, 0, "init"),
            (40, 1, "bash"),
            (41, 2, "make"),
            (50, 1, "sshd"),
        ]
        .into_iter()
        .map(|(pid, depth, comm)| ProcRow {
            pid,
            depth,
            comm: comm.into(),
            threads: 1,
        })
        .collect()
    }

    #[test]
    fn slash_filters_by_name_and_enter_attaches_the_selected_row() {
        let mut p = Picker::new(rows());
        assert_eq!(p.shown().len(), 4);
        p.key(&key(KeyCode::Char('/')));
        for c in "MA".chars() {
            p.key(&key(KeyCode::Char(c)));
        }
        // "ma" matches make only (case-insensitive).
        assert_eq!(p.shown().iter().map(|r| r.pid).collect::<Vec<_>>(), [41]);
        p.key(&key(KeyCode::Enter)); // ends typing
        assert!(!p.typing);
        assert!(matches!(p.key(&key(KeyCode::Enter)), Picked::Attach(41)));
    }

    #[test]
    fn moving_stays_inside_the_shown_rows() {
        let mut p = Picker::new(rows());
        for _ in 0..10 {
            p.key(&key(KeyCode::Down));
        }
        assert_eq!(p.selected, 3);
        assert!(matches!(p.key(&key(KeyCode::Enter)), Picked::Attach(50)));
        p.key(&key(KeyCode::Char('/')));
        p.key(&key(KeyCode::Char('4')));
        p.key(&key(KeyCode::Char('0')));
        // A pid typed in full matches that process.
        assert_eq!(p.shown().iter().map(|r| r.pid).collect::<Vec<_>>(), [40]);
        assert_eq!(p.selected, 0);
    }
}
