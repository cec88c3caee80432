//! Key bindings: logical commands, the default keys, and a TOML config that rebinds them.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use serde::Deserialize;

use crate::error::Invalid;

/// What a key asks for, before the App decides what it means in the current mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Command {
    Quit,
    Help,
    Up,
    Down,
    NextPanel,
    Policy,
    Priority,
    NiceUp,
    NiceDown,
    Cpus,
    Slice,
    Edit,
    CommandLine,
    Pause,
    IntervalDown,
    IntervalUp,
    ZoomIn,
    ZoomOut,
    Restart,
    Presets,
    Attach,
    Note,
    Record,
    Trace,
    ExportTrace,
    StepBack,
    StepForward,
    SeekBack,
    SeekForward,
    Sort,
    SortReverse,
    Filter,
    Log,
    ScrollUp,
    ScrollDown,
    Lessons,
}

impl Command {
    /// (config name, default keys, what it does) for every command, in help order.
    pub const ALL: [(Command, &'static str, &'static [&'static str], &'static str); 36] = [
        (
            Command::Quit,
            "quit",
            &["q", "ctrl-c"],
            "quit, restoring everything",
        ),
        (Command::Help, "help", &["?", "f1"], "this help"),
        (Command::Up, "up", &["up", "k"], "previous task / knob"),
        (Command::Down, "down", &["down", "j"], "next task / knob"),
        (
            Command::NextPanel,
            "next_panel",
            &["tab"],
            "tasks <-> system knobs",
        ),
        (Command::Policy, "policy", &["p"], "policy of the task"),
        (
            Command::Priority,
            "priority",
            &["shift-p"],
            "RT priority of the task",
        ),
        (
            Command::NiceUp,
            "nice_up",
            &["+", "="],
            "nice +1 (less CPU)",
        ),
        (Command::NiceDown, "nice_down", &["-"], "nice -1 (more CPU)"),
        (Command::Cpus, "cpus", &["c"], "CPUs of the task"),
        (Command::Slice, "slice", &["s"], "custom slice of the task"),
        (Command::Edit, "edit", &["enter"], "edit a system knob"),
        (
            Command::CommandLine,
            "command_line",
            &[":"],
            "any TASK.KNOB=VALUE",
        ),
        (Command::Pause, "pause", &["space"], "pause / resume"),
        (
            Command::IntervalDown,
            "interval_down",
            &["["],
            "sample faster",
        ),
        (Command::IntervalUp, "interval_up", &["]"], "sample slower"),
        (Command::ZoomIn, "zoom_in", &["z"], "shorter time window"),
        (
            Command::ZoomOut,
            "zoom_out",
            &["shift-z"],
            "longer time window",
        ),
        (
            Command::Restart,
            "restart",
            &["shift-r"],
            "restart the workload",
        ),
        (Command::Presets, "presets", &["o"], "switch preset"),
        (
            Command::Attach,
            "attach",
            &["a"],
            "attach a running process",
        ),
        (Command::Note, "note", &["n"], "teaching note / graphs"),
        (
            Command::Lessons,
            "lessons",
            &["L"],
            "lessons: play one (in a lesson: leave it)",
        ),
        (
            Command::ScrollUp,
            "scroll_up",
            &["pgup"],
            "scroll the note, help or log up",
        ),
        (
            Command::ScrollDown,
            "scroll_down",
            &["pgdn"],
            "scroll the note, help or log down",
        ),
        (
            Command::Sort,
            "sort",
            &["S"],
            "sort tasks by the next column",
        ),
        (
            Command::SortReverse,
            "sort_reverse",
            &["I"],
            "reverse the sort order",
        ),
        (Command::Filter, "filter", &["/"], "filter tasks by name"),
        (Command::Log, "log", &["l"], "message log (with times)"),
        (Command::Record, "record", &["r"], "record to a file on/off"),
        (Command::Trace, "trace", &["t"], "scheduler trace on/off"),
        (
            Command::ExportTrace,
            "export_trace",
            &["x"],
            "trace -> Perfetto timeline",
        ),
        (
            Command::StepBack,
            "step_back",
            &[","],
            "replay: one sample back",
        ),
        (
            Command::StepForward,
            "step_forward",
            &["."],
            "replay: one sample on",
        ),
        (
            Command::SeekBack,
            "seek_back",
            &["left"],
            "replay: 10 s back",
        ),
        (
            Command::SeekForward,
            "seek_forward",
            &["right"],
            "replay: 10 s on",
        ),
    ];

    /// The command's name in keys.toml.
    pub fn config_name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(c, ..)| *c == self)
            .map_or("", |(_, n, ..)| n)
    }

    pub fn help(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(c, ..)| *c == self)
            .map_or("", |(_, _, _, h)| h)
    }
}

/// A key with modifiers, as written in the config: `q`, `ctrl-c`, `shift-r`, `f1`, `space`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    pub code: KeyCode,
    pub ctrl: bool,
    pub shift: bool,
}

impl Key {
    pub fn parse(s: &str) -> Result<Key, Invalid> {
        let lower = s.trim().to_ascii_lowercase();
        let (mut ctrl, mut shift) = (false, false);
        let mut rest = lower.as_str();
        loop {
            if let Some(r) = rest.strip_prefix("ctrl-") {
                ctrl = true;
                rest = r;
            } else if let Some(r) = rest.strip_prefix("shift-") {
                shift = true;
                rest = r;
            } else {
                break;
            }
        }
        let code = match rest {
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "enter" => KeyCode::Enter,
            "tab" => KeyCode::Tab,
            "esc" => KeyCode::Esc,
            "space" => KeyCode::Char(' '),
            "backspace" => KeyCode::Backspace,
            "pgup" | "pageup" => KeyCode::PageUp,
            "pgdn" | "pgdown" | "pagedown" => KeyCode::PageDown,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            f if f.starts_with('f') && f.len() > 1 => {
                KeyCode::F(f[1..].parse().map_err(|_| Invalid(format!("bad key \"{s}\"")))?)
            }
            c if c.chars().count() == 1 => {
                let ch = c.chars().next().unwrap_or(' ');
                if shift && ch.is_ascii_alphabetic() {
                    // Terminals report shift-r as 'R'.
                    return Ok(Key { code: KeyCode::Char(ch.to_ascii_uppercase()), ctrl, shift: false });
                }
                KeyCode::Char(s.trim().chars().last().unwrap_or(ch))
            }
            _ => {
                return Err(Invalid(format!(
                    "bad key \"{s}\": use a character, ctrl-X, shift-X, up, down, left, right, enter, tab, esc, space, backspace, pgup, pgdn, home, end or F1..F12"
                )))
            }
        };
        Ok(Key { code, ctrl, shift })
    }

    pub fn from_event(e: &KeyEvent) -> Key {
        let ctrl = e.modifiers.contains(KeyModifiers::CONTROL);
        match e.code {
            // Uppercase letters already carry the shift.
            KeyCode::Char(c) => Key {
                code: KeyCode::Char(c),
                ctrl,
                shift: false,
            },
            code => Key {
                code,
                ctrl,
                shift: e.modifiers.contains(KeyModifiers::SHIFT),
            },
        }
    }

    /// How the screen shows the key: arrows as arrows.
    pub fn label(&self) -> String {
        match self.code {
            KeyCode::Up => self.with_modifiers("↑".into()),
            KeyCode::Down => self.with_modifiers("↓".into()),
            _ => self.config_label(),
        }
    }

    /// How keys.toml spells the key (what [`Key::parse`] reads back).
    pub fn config_label(&self) -> String {
        let base = match self.code {
            KeyCode::Char(' ') => "space".to_string(),
            KeyCode::Char(c) => c.to_string(),
            KeyCode::F(n) => format!("F{n}"),
            KeyCode::PageUp => "pgup".into(),
            KeyCode::PageDown => "pgdn".into(),
            KeyCode::Enter => "enter".into(),
            KeyCode::Tab => "tab".into(),
            KeyCode::Esc => "esc".into(),
            other => format!("{other:?}").to_lowercase(),
        };
        self.with_modifiers(base)
    }

    fn with_modifiers(&self, base: String) -> String {
        match (self.ctrl, self.shift) {
            (true, _) => format!("ctrl-{base}"),
            (_, true) => format!("shift-{base}"),
            _ => base,
        }
    }
}

/// Keys -> commands, in binding order (the first key of a command is the one shown).
#[derive(Clone, Debug, PartialEq)]
pub struct KeyMap {
    map: Vec<(Key, Command)>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct KeyConfig {
    #[serde(default)]
    keys: BTreeMap<String, KeysValue>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum KeysValue {
    One(String),
    Many(Vec<String>),
}

impl Default for KeyMap {
    fn default() -> Self {
        let mut map = Vec::new();
        for (cmd, _, keys, _) in Command::ALL {
            for k in keys {
                if let Ok(key) = Key::parse(k) {
                    map.push((key, cmd));
                }
            }
        }
        KeyMap { map }
    }
}

impl KeyMap {
    pub fn command(&self, e: &KeyEvent) -> Option<Command> {
        let key = Key::from_event(e);
        self.map.iter().find(|(k, _)| *k == key).map(|(_, c)| *c)
    }

    /// The keys bound to a command, for the footer and help.
    pub fn keys_for(&self, cmd: Command) -> Vec<String> {
        self.map
            .iter()
            .filter(|(_, c)| *c == cmd)
            .map(|(k, _)| k.label())
            .collect()
    }

    /// The keys bound to a command as keys.toml spells them, for the help.
    pub fn config_keys_for(&self, cmd: Command) -> Vec<String> {
        self.map
            .iter()
            .filter(|(_, c)| *c == cmd)
            .map(|(k, _)| k.config_label())
            .collect()
    }

    /// Defaults overridden by a TOML config: `[keys]` with `quit = "x"` or
    /// `quit = ["x", "ctrl-q"]`; a rebound command loses its default keys.
    pub fn from_toml(text: &str) -> Result<KeyMap, Invalid> {
        let cfg: KeyConfig =
            toml::from_str(text).map_err(|e| Invalid(format!("key config: {}", e.message())))?;
        let mut km = KeyMap::default();
        for (name, value) in cfg.keys {
            let Some((cmd, ..)) = Command::ALL.iter().find(|(_, n, ..)| *n == name) else {
                let names: Vec<&str> = Command::ALL.iter().map(|(_, n, ..)| *n).collect();
                return Err(Invalid(format!(
                    "key config: unknown command \"{name}\": commands are {}",
                    names.join(", ")
                )));
            };
            let keys = match value {
                KeysValue::One(k) => vec![k],
                KeysValue::Many(v) => v,
            };
            km.map.retain(|(_, c)| c != cmd);
            for k in keys {
                let key =
                    Key::parse(&k).map_err(|e| Invalid(format!("key config: {name}: {e}")))?;
                // A key bound to a new command leaves its old one.
                km.map.retain(|(old, _)| *old != key);
                km.map.push((key, *cmd));
            }
        }
        Ok(km)
    }

    /// `$XDG_CONFIG_HOME/schedlab/keys.toml` (or ~/.config/...).
    pub fn config_path() -> Option<PathBuf> {
        crate::preset::user_dir().and_then(|p| p.parent().map(|d| d.join("keys.toml")))
    }

    /// The user's bindings, or the defaults when there is no config file.
    pub fn load(path: Option<&Path>) -> Result<KeyMap, Invalid> {
        match path {
            Some(p) if p.exists() => {
                let text =
                    crate::input::read_bounded(p, crate::input::MAX_CONFIG_BYTES, "the file")
                        .map_err(|e| Invalid(format!("{}: {e}", p.display())))?;
                KeyMap::from_toml(&text).map_err(|e| Invalid(format!("{}: {e}", p.display())))
            }
            _ => Ok(KeyMap::default()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    #[test]
    fn defaults_cover_every_command() {
        let km = KeyMap::default();
        for (cmd, ..) in Command::ALL {
            assert!(!km.keys_for(cmd).is_empty(), "{cmd:?} has no key");
        }
        assert_eq!(
            km.command(&ev(KeyCode::Char('q'), KeyModifiers::NONE)),
            Some(Command::Quit)
        );
        assert_eq!(
            km.command(&ev(KeyCode::Char('c'), KeyModifiers::CONTROL)),
            Some(Command::Quit)
        );
        assert_eq!(
            km.command(&ev(KeyCode::Char('R'), KeyModifiers::SHIFT)),
            Some(Command::Restart)
        );
        assert_eq!(
            km.command(&ev(KeyCode::Char('c'), KeyModifiers::NONE)),
            Some(Command::Cpus)
        );
    }

    #[test]
    fn config_rebinds_and_rejects_unknown_names() {
        let km = KeyMap::from_toml("[keys]\nquit = \"x\"\npause = [\"ctrl-p\", \"f5\"]\n")
            .expect("parses");
        assert_eq!(
            km.command(&ev(KeyCode::Char('x'), KeyModifiers::NONE)),
            Some(Command::Quit)
        );
        assert_eq!(
            km.command(&ev(KeyCode::Char('q'), KeyModifiers::NONE)),
            None,
            "old key gone"
        );
        assert_eq!(
            km.command(&ev(KeyCode::F(5), KeyModifiers::NONE)),
            Some(Command::Pause)
        );
        assert_eq!(
            km.command(&ev(KeyCode::Char('p'), KeyModifiers::CONTROL)),
            Some(Command::Pause)
        );
        let err = KeyMap::from_toml("[keys]\nexplode = \"x\"\n").unwrap_err();
        assert!(err.0.contains("commands are quit, help"), "{err}");
        assert!(KeyMap::from_toml("[keys]\nquit = \"hyper-x\"\n")
            .unwrap_err()
            .0
            .contains("bad key"));
    }
}
