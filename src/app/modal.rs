//! Popups over the main screen (choices, text input, CPU picker, preset picker, help,
//! the message log, the task filter) and how keys behave inside them.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::keys::Command;
use super::{App, Effect};

/// What the keyboard is talking to.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    Normal,
    /// The keys; `scroll` lines scrolled past.
    Help {
        scroll: usize,
    },
    /// Every status message with its time; `scroll` lines scrolled past.
    Log {
        scroll: usize,
    },
    /// Typing the task filter (`ui.filter`, applied as it is typed).
    Filter,
    /// Pick one option; Enter applies `knob=option`.
    Choice {
        title: String,
        options: Vec<String>,
        selected: usize,
        knob: String,
    },
    /// Type a value; Enter applies `prefix + buffer`.
    Input {
        title: String,
        prefix: String,
        buffer: String,
        /// Where typing goes: a byte offset into `buffer` (the line-editing keys move it).
        cursor: usize,
        /// Shown below the box, wrapped: what the value may be.
        hint: String,
    },
    /// Toggle CPUs; Enter applies `task.cpus=<list>`.
    CpuPicker {
        task: String,
        cpus: Vec<bool>,
        cursor: usize,
    },
    /// Switch to another preset (restarts the workload).
    Presets {
        selected: usize,
    },
    /// Add a running process to the experiment (`a`): a tree of processes, `/` filters.
    Picker(super::picker::Picker),
    /// Play a lesson (`L`).
    Lessons {
        selected: usize,
    },
}

impl Mode {
    pub fn input(
        title: impl Into<String>,
        prefix: impl Into<String>,
        buffer: impl Into<String>,
    ) -> Mode {
        let buffer = buffer.into();
        Mode::Input {
            title: title.into(),
            prefix: prefix.into(),
            cursor: buffer.len(),
            buffer,
            hint: String::new(),
        }
    }

    /// The same, with a hint below the box (the allowed values).
    pub fn with_hint(mut self, text: impl Into<String>) -> Mode {
        if let Mode::Input { hint, .. } = &mut self {
            *hint = text.into();
        }
        self
    }
}

/// What a key inside a popup leads to.
enum Outcome {
    Stay,
    Close,
    /// Close and apply this setting.
    Apply(String),
    /// Close and restart on this preset.
    Switch(String),
    /// Stay open and say why not.
    Complain(&'static str),
    /// Close and attach to this process.
    Attach(i32),
    /// Close and play this lesson (by index).
    Lesson(usize),
}

fn step(sel: &mut usize, len: usize, down: bool) {
    if len > 0 {
        *sel = if down {
            (*sel + 1) % len
        } else {
            (*sel + len - 1) % len
        };
    }
}

impl App {
    /// Keys while a popup is open: Esc always closes it, Ctrl-C always quits.
    pub(super) fn modal_key(&mut self, key: KeyEvent) -> Vec<Effect> {
        if key.code == KeyCode::Char('c') && key.modifiers.contains(KeyModifiers::CONTROL) {
            self.quit = true;
            return vec![Effect::Quit];
        }
        if self.ui.mode == Mode::Filter {
            return self.filter_key(&key);
        }
        if key.code == KeyCode::Esc {
            self.ui.mode = super::Mode::Normal;
            return Vec::new();
        }
        if let Some(lines) = self.scroll_lines(&key) {
            self.scroll_popup(lines);
            return Vec::new();
        }
        // Keys edit the popup in place; what it leads to is decided first and carried
        // out after, when `self` is free again.
        let outcome = match &mut self.ui.mode {
            Mode::Normal | Mode::Help { .. } | Mode::Log { .. } | Mode::Filter => Outcome::Close,
            Mode::Choice {
                options,
                selected,
                knob,
                ..
            } => choice_key(&key, options, selected, knob),
            Mode::Input {
                prefix,
                buffer,
                cursor,
                ..
            } => input_key(&key, prefix, buffer, cursor),
            Mode::CpuPicker { task, cpus, cursor } => cpu_picker_key(&key, task, cpus, cursor),
            Mode::Presets { selected } => presets_key(&key, &self.presets, selected),
            Mode::Lessons { selected } => lessons_key(&key, self.lessons.len(), selected),
            Mode::Picker(p) => match p.key(&key) {
                super::picker::Picked::Stay => Outcome::Stay,
                super::picker::Picked::Attach(pid) => Outcome::Attach(pid),
            },
        };
        self.carry_out(outcome)
    }

    /// Scroll the help or the log by `lines`, within what it holds at the current size.
    pub(super) fn scroll_popup(&mut self, lines: isize) {
        let max = match self.ui.mode {
            Mode::Help { .. } => self.ui.geometry.help_max_scroll,
            Mode::Log { .. } => self.ui.geometry.log_max_scroll,
            _ => return,
        };
        if let Mode::Help { scroll } | Mode::Log { scroll } = &mut self.ui.mode {
            *scroll = (*scroll).min(max).saturating_add_signed(lines).min(max);
        }
    }

    /// In the help and the log: lines a key scrolls by (arrows, vi keys, the scroll
    /// commands' keys by a page), None for a key that closes them.
    fn scroll_lines(&self, key: &KeyEvent) -> Option<isize> {
        if !matches!(self.ui.mode, Mode::Help { .. } | Mode::Log { .. }) {
            return None;
        }
        let page = (self.ui.size.1 as isize - 8).max(1);
        if let Some(down) = list_move(key) {
            return Some(if down { 1 } else { -1 });
        }
        match (key.code, self.keymap.command(key)) {
            (KeyCode::PageDown, _) | (_, Some(Command::ScrollDown)) => Some(page),
            (KeyCode::PageUp, _) | (_, Some(Command::ScrollUp)) => Some(-page),
            (KeyCode::Home, _) => Some(isize::MIN / 2),
            (KeyCode::End, _) => Some(isize::MAX / 2),
            _ => None,
        }
    }

    /// Typing the filter: the table follows each key; enter keeps it, esc clears it.
    fn filter_key(&mut self, key: &KeyEvent) -> Vec<Effect> {
        match key.code {
            KeyCode::Esc => {
                self.ui.filter.clear();
                self.ui.mode = Mode::Normal;
                self.say("filter cleared: every task is in the table");
            }
            KeyCode::Enter => {
                self.ui.mode = Mode::Normal;
                if self.ui.filter.is_empty() {
                    self.say("no filter: every task is in the table");
                } else {
                    let shown = self.task_view().len();
                    let key = self.key_label(Command::Filter);
                    self.say(format!(
                        "filter \"{}\": {shown} of {} tasks ({key} then esc clears it)",
                        self.ui.filter,
                        self.live.tasks.len()
                    ));
                }
            }
            _ => {
                // Typed at the end: the table follows each key.
                let mut end = self.ui.filter.len();
                super::line::edit(&mut self.ui.filter, &mut end, key, 64);
            }
        }
        self.keep_selection_visible();
        Vec::new()
    }

    fn carry_out(&mut self, outcome: Outcome) -> Vec<Effect> {
        match outcome {
            Outcome::Stay => Vec::new(),
            Outcome::Complain(why) => {
                self.complain(why);
                Vec::new()
            }
            Outcome::Close => {
                self.ui.mode = Mode::Normal;
                Vec::new()
            }
            Outcome::Apply(setting) => {
                self.ui.mode = Mode::Normal;
                self.apply(setting)
            }
            Outcome::Attach(pid) => {
                self.ui.mode = Mode::Normal;
                self.say(format!("attaching to pid {pid}..."));
                vec![Effect::Attach(pid)]
            }
            Outcome::Lesson(i) => self.choose_lesson(i),
            Outcome::Switch(name) => {
                self.ui.mode = Mode::Normal;
                self.say(format!("starting {name}..."));
                vec![Effect::Restart(Some(name))]
            }
        }
    }
}

/// Some(down) for a key that moves in a list: arrows or vi keys.
fn list_move(key: &KeyEvent) -> Option<bool> {
    match key.code {
        KeyCode::Up | KeyCode::Char('k') => Some(false),
        KeyCode::Down | KeyCode::Char('j') => Some(true),
        _ => None,
    }
}

fn choice_key(key: &KeyEvent, options: &[String], selected: &mut usize, knob: &str) -> Outcome {
    if let Some(down) = list_move(key) {
        step(selected, options.len(), down);
        return Outcome::Stay;
    }
    match key.code {
        KeyCode::Enter => {
            let value = options.get(*selected).cloned().unwrap_or_default();
            Outcome::Apply(format!("{knob}={value}"))
        }
        _ => Outcome::Stay,
    }
}

/// Typing edits the buffer with the line-editing keys (j and k are letters here, not
/// moves).
fn input_key(key: &KeyEvent, prefix: &str, buffer: &mut String, cursor: &mut usize) -> Outcome {
    if key.code == KeyCode::Enter {
        return Outcome::Apply(format!("{prefix}{buffer}"));
    }
    super::line::edit(buffer, cursor, key, 200);
    Outcome::Stay
}

fn cpu_picker_key(key: &KeyEvent, task: &str, cpus: &mut [bool], cursor: &mut usize) -> Outcome {
    if let Some(down) = list_move(key) {
        step(cursor, cpus.len(), down);
        return Outcome::Stay;
    }
    match key.code {
        KeyCode::Left | KeyCode::Char('h') => step(cursor, cpus.len(), false),
        KeyCode::Right | KeyCode::Char('l') => step(cursor, cpus.len(), true),
        KeyCode::Char(' ') => {
            if let Some(c) = cpus.get_mut(*cursor) {
                *c = !*c;
            }
        }
        KeyCode::Char(d) if d.is_ascii_digit() => {
            let i = d as usize - '0' as usize;
            if let Some(c) = cpus.get_mut(i) {
                *c = !*c;
                *cursor = i;
            }
        }
        KeyCode::Char('a') => {
            let all = cpus.iter().all(|c| *c);
            cpus.iter_mut().for_each(|c| *c = !all);
        }
        KeyCode::Enter => return apply_cpus(task, cpus),
        _ => {}
    }
    Outcome::Stay
}

fn apply_cpus(task: &str, cpus: &[bool]) -> Outcome {
    let mut set = crate::cpuset::CpuSet::new();
    for (i, on) in cpus.iter().enumerate() {
        if *on {
            set.insert(i);
        }
    }
    if set.is_empty() {
        Outcome::Complain("pick at least one CPU (space toggles, a = all)")
    } else {
        Outcome::Apply(format!("{task}.cpus={}", set.to_list()))
    }
}

fn presets_key(key: &KeyEvent, presets: &[(String, String)], selected: &mut usize) -> Outcome {
    if let Some(down) = list_move(key) {
        step(selected, presets.len(), down);
        return Outcome::Stay;
    }
    match key.code {
        KeyCode::Enter => match presets.get(*selected) {
            Some((name, _)) => Outcome::Switch(name.clone()),
            None => Outcome::Close,
        },
        _ => Outcome::Stay,
    }
}

fn lessons_key(key: &KeyEvent, len: usize, selected: &mut usize) -> Outcome {
    if let Some(down) = list_move(key) {
        step(selected, len, down);
        return Outcome::Stay;
    }
    match key.code {
        KeyCode::Enter if *selected < len => Outcome::Lesson(*selected),
        KeyCode::Char('L') => Outcome::Close,
        _ => Outcome::Stay,
    }
}
