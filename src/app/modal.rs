//! Popups over the main screen (choices, text input, CPU picker, preset picker, help)
//! and how keys behave inside them.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::{App, Effect};

/// What the keyboard is talking to.
#[derive(Clone, Debug, PartialEq)]
pub enum Mode {
    Normal,
    Help,
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
}

impl Mode {
    pub fn input(
        title: impl Into<String>,
        prefix: impl Into<String>,
        buffer: impl Into<String>,
    ) -> Mode {
        Mode::Input {
            title: title.into(),
            prefix: prefix.into(),
            buffer: buffer.into(),
        }
    }
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
        if key.code == KeyCode::Esc {
            self.ui.mode = super::Mode::Normal;
            return Vec::new();
        }
        let mode = std::mem::replace(&mut self.ui.mode, Mode::Normal);
        let (next, effects) = match mode {
            Mode::Normal | Mode::Help => (Mode::Normal, Vec::new()),
            Mode::Choice {
                title,
                options,
                mut selected,
                knob,
            } => match key.code {
                KeyCode::Up | KeyCode::Char('k') => {
                    step(&mut selected, options.len(), false);
                    (
                        Mode::Choice {
                            title,
                            options,
                            selected,
                            knob,
                        },
                        Vec::new(),
                    )
                }
                KeyCode::Down | KeyCode::Char('j') => {
                    step(&mut selected, options.len(), true);
                    (
                        Mode::Choice {
                            title,
                            options,
                            selected,
                            knob,
                        },
                        Vec::new(),
                    )
                }
                KeyCode::Enter => {
                    let value = options.get(selected).cloned().unwrap_or_default();
                    (Mode::Normal, self.apply(format!("{knob}={value}")))
                }
                _ => (
                    Mode::Choice {
                        title,
                        options,
                        selected,
                        knob,
                    },
                    Vec::new(),
                ),
            },
            Mode::Input {
                title,
                prefix,
                mut buffer,
            } => match key.code {
                KeyCode::Enter => (Mode::Normal, self.apply(format!("{prefix}{buffer}"))),
                KeyCode::Backspace => {
                    buffer.pop();
                    (
                        Mode::Input {
                            title,
                            prefix,
                            buffer,
                        },
                        Vec::new(),
                    )
                }
                KeyCode::Char(c) if buffer.len() < 200 => {
                    buffer.push(c);
                    (
                        Mode::Input {
                            title,
                            prefix,
                            buffer,
                        },
                        Vec::new(),
                    )
                }
                _ => (
                    Mode::Input {
                        title,
                        prefix,
                        buffer,
                    },
                    Vec::new(),
                ),
            },
            Mode::CpuPicker {
                task,
                mut cpus,
                mut cursor,
            } => match key.code {
                KeyCode::Left | KeyCode::Up | KeyCode::Char('h') | KeyCode::Char('k') => {
                    step(&mut cursor, cpus.len(), false);
                    (Mode::CpuPicker { task, cpus, cursor }, Vec::new())
                }
                KeyCode::Right | KeyCode::Down | KeyCode::Char('l') | KeyCode::Char('j') => {
                    step(&mut cursor, cpus.len(), true);
                    (Mode::CpuPicker { task, cpus, cursor }, Vec::new())
                }
                KeyCode::Char(' ') => {
                    if let Some(c) = cpus.get_mut(cursor) {
                        *c = !*c;
                    }
                    (Mode::CpuPicker { task, cpus, cursor }, Vec::new())
                }
                KeyCode::Char(d) if d.is_ascii_digit() => {
                    let i = d as usize - '0' as usize;
                    if let Some(c) = cpus.get_mut(i) {
                        *c = !*c;
                        cursor = i;
                    }
                    (Mode::CpuPicker { task, cpus, cursor }, Vec::new())
                }
                KeyCode::Char('a') => {
                    let all = cpus.iter().all(|c| *c);
                    cpus.iter_mut().for_each(|c| *c = !all);
                    (Mode::CpuPicker { task, cpus, cursor }, Vec::new())
                }
                KeyCode::Enter => {
                    let mut set = crate::cpuset::CpuSet::new();
                    for (i, on) in cpus.iter().enumerate() {
                        if *on {
                            set.insert(i);
                        }
                    }
                    if set.is_empty() {
                        self.complain("pick at least one CPU (space toggles, a = all)");
                        (Mode::CpuPicker { task, cpus, cursor }, Vec::new())
                    } else {
                        (
                            Mode::Normal,
                            self.apply(format!("{task}.cpus={}", set.to_list())),
                        )
                    }
                }
                _ => (Mode::CpuPicker { task, cpus, cursor }, Vec::new()),
            },
            Mode::Presets { mut selected } => match key.code {
                KeyCode::Up | KeyCode::Char('k') => {
                    step(&mut selected, self.presets.len(), false);
                    (Mode::Presets { selected }, Vec::new())
                }
                KeyCode::Down | KeyCode::Char('j') => {
                    step(&mut selected, self.presets.len(), true);
                    (Mode::Presets { selected }, Vec::new())
                }
                KeyCode::Enter => match self.presets.get(selected).map(|(n, _)| n.clone()) {
                    Some(name) => {
                        self.say(format!("starting {name}..."));
                        (Mode::Normal, vec![Effect::Restart(Some(name))])
                    }
                    None => (Mode::Normal, Vec::new()),
                },
                _ => (Mode::Presets { selected }, Vec::new()),
            },
        };
        // `apply` may have complained without closing; keep whatever it left.
        self.ui.mode = next;
        effects
    }
}
