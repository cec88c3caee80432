//! The workbench's state and its only way to change: [`App::update`] takes an
//! [`Action`] and returns the [`Effect`]s to carry out. No I/O happens here: the TUI
//! loop turns effects into commands for the controller thread.

mod export;
mod geometry;
pub use geometry::{Geometry, Hit};
pub mod keys;
mod modal;
mod picker;
pub use picker::Picker;
mod mouse;
pub mod view;

use std::collections::VecDeque;
use std::time::Duration;

use crossterm::event::{KeyEvent, MouseEvent};

use crate::error::KnobError;
use crate::knob::sys::KnobInfo;
use crate::knob::task::Policy;
use crate::lab::record::RecordError;
use crate::preset::setting::Setting;
use crate::sampler::{Batch, TaskSample};
use crate::trace::{TraceBatch, TraceError};
use keys::{Command, KeyMap};

pub use crate::lab::describe::{PresetView, Started, TaskInfo};
pub use crate::lab::live::Live;
pub use crate::workload::attach::ProcRow;
pub use export::{Exported, TimelineError};
pub use modal::Mode;
pub use view::{Branch, Column, Sort};

/// Everything that can happen to the App.
#[derive(Clone, Debug)]
pub enum Action {
    Key(KeyEvent),
    /// A mouse event at a screen cell; the App finds what is there in the
    /// [`Geometry`] of the frame last drawn.
    Mouse(MouseEvent),
    Batch(Box<Batch>),
    Started(Box<Started>),
    /// Tasks that joined the running experiment (new threads and children of attached
    /// processes and commands), after the others in task order.
    Joined(Vec<TaskInfo>),
    /// After a restart: the processes picked with `a` before it, attached again (their
    /// tasks, and "sleep (pid 123)" for each), and those that exited meanwhile.
    Reattached {
        tasks: Vec<TaskInfo>,
        kept: Vec<String>,
        gone: Vec<String>,
    },
    KnobResult {
        setting: String,
        result: Result<String, KnobError>,
    },
    SystemKnobs(Vec<KnobInfo>),
    Presets(Vec<(String, String)>),
    Recording(Result<Option<String>, RecordError>),
    /// The scheduler trace is on (true) or off (false), or why it could not start.
    Tracing(Result<bool, TraceError>),
    /// What the trace saw in one interval.
    Trace(Box<TraceBatch>),
    /// The timeline's worker wrote this many of the kept events.
    TraceExportProgress {
        written: usize,
        total: usize,
    },
    /// The timeline was written, or why not.
    TraceExported(Result<Exported, TimelineError>),
    /// The processes the picker offers (`a`), as a tree.
    Processes(Vec<ProcRow>),
    Error(String),
    Resize(u16, u16),
    /// The workload is gone and the knobs restored (the lines say what was restored):
    /// the workbench ends.
    Stopped(Vec<String>),
}

/// How much of the end of the trace a timeline holds (the tracer keeps that much, at most
/// [`crate::trace::KEEP_MAX_EVENTS`] events: see [`crate::report::perfetto::KeptWindow`]).
pub const TRACE_KEEP: Duration = Duration::from_secs(30);

/// What the App asks the outside world to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    Apply(Setting),
    SetInterval(Duration),
    Pause(bool),
    /// Restart the workload, with another preset if named.
    Restart(Option<String>),
    ToggleRecord,
    /// Start (true) or stop the scheduler trace.
    SetTracing(bool),
    /// Write the trace's last [`TRACE_KEEP`] as a Perfetto timeline.
    ExportTrace,
    /// List the running processes for the picker (answered by [`Action::Processes`]).
    ListProcesses,
    /// Attach to this process (and its threads and children) in the running experiment.
    Attach(i32),
    /// Replay only: move by this many samples (negative: back).
    Step(i32),
    /// Replay only: move by this many seconds.
    Seek(f64),
    Quit,
}

/// Which list the up/down keys move in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Panel {
    Tasks,
    Knobs,
}

/// Points kept per series: 10 minutes at 100 ms.
pub const RETENTION: usize = 6000;

/// Screen state that is not data.
#[derive(Clone, Debug, PartialEq)]
pub struct UiState {
    pub mode: Mode,
    pub panel: Panel,
    pub selected_task: usize,
    pub selected_knob: usize,
    pub paused: bool,
    pub interval: Duration,
    /// Seconds of history the graphs show.
    pub window_s: f64,
    pub show_note: bool,
    /// Lines of the note scrolled past.
    pub note_scroll: usize,
    /// The table's order (None: the preset's).
    pub sort: Option<Sort>,
    /// Only tasks whose name contains this (any case) are in the table.
    pub filter: String,
    pub status: String,
    pub status_is_error: bool,
    /// Every status message so far (the latest [`LOG_KEEP`]).
    pub log: VecDeque<LogEntry>,
    pub size: (u16, u16),
    /// Where the last frame put things, as drawing measured it ([`App::drawn`]).
    pub geometry: Geometry,
}

/// A status message as the log keeps it.
#[derive(Clone, Debug, PartialEq)]
pub struct LogEntry {
    /// The run's clock when it was said (seconds since its first sample, as `t=` in the
    /// header and the change marks).
    pub t_s: f64,
    pub text: String,
    pub error: bool,
}

/// Messages the log keeps.
pub const LOG_KEEP: usize = 1000;

/// The whole workbench state.
#[derive(Clone, Debug)]
pub struct App {
    pub preset: Option<PresetView>,
    pub kernel: String,
    pub cpus: usize,
    pub live: Live,
    pub knobs: Vec<KnobInfo>,
    pub presets: Vec<(String, String)>,
    pub ui: UiState,
    pub keymap: KeyMap,
    /// Where keys.toml is looked for, as the help names it.
    pub keys_path: String,
    pub no_color: bool,
    pub recording: Option<String>,
    /// The scheduler trace runs (as the controller last said).
    pub tracing: bool,
    /// A timeline is being written (asked for, no outcome yet).
    pub exporting: bool,
    /// Read-only: a replay; knob changes are refused.
    pub replay: bool,
    pub quit: bool,
}

/// Commands a replay refuses: they act on a live run's knobs, workload or recording.
fn changes_the_run(cmd: Command) -> bool {
    matches!(
        cmd,
        Command::Policy
            | Command::Priority
            | Command::NiceUp
            | Command::NiceDown
            | Command::Cpus
            | Command::Slice
            | Command::Edit
            | Command::CommandLine
            | Command::Restart
            | Command::Presets
            | Command::Attach
            | Command::Record
    )
}

/// `writer.nice=50: nice 50 is out of range`: a knob's result in the status line and the
/// log, naming its setting once (the knob layer's messages often start with it, some
/// name only the task or nothing at all).
pub fn knob_line(setting: &str, msg: &str) -> String {
    format!(
        "{setting}: {}",
        crate::report::without_setting(setting, msg)
    )
}

const INTERVALS_MS: [u64; 7] = [50, 100, 200, 500, 1000, 2000, 5000];
const WINDOWS_S: [f64; 7] = [5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0];

impl App {
    pub fn new(keymap: KeyMap, interval: Duration, no_color: bool) -> App {
        let mut app = App {
            preset: None,
            kernel: String::new(),
            cpus: 0,
            live: Live::empty(RETENTION),
            knobs: Vec::new(),
            presets: Vec::new(),
            ui: UiState {
                mode: Mode::Normal,
                panel: Panel::Tasks,
                selected_task: 0,
                selected_knob: 0,
                paused: false,
                interval,
                window_s: 60.0,
                show_note: false,
                note_scroll: 0,
                sort: None,
                filter: String::new(),
                status: String::new(),
                status_is_error: false,
                log: VecDeque::new(),
                size: (80, 24),
                geometry: Geometry::default(),
            },
            keymap,
            keys_path: KeyMap::config_path().map_or_else(
                || "$XDG_CONFIG_HOME/schedlab/keys.toml".to_string(),
                |p| p.display().to_string(),
            ),
            no_color,
            recording: None,
            tracing: false,
            exporting: false,
            replay: false,
            quit: false,
        };
        app.say("starting the workload...");
        app
    }

    /// The selected task, if any (none while the filter hides every task).
    pub fn selected_task(&self) -> Option<&TaskInfo> {
        if !self.passes_filter(self.ui.selected_task) {
            return None;
        }
        self.live.tasks.get(self.ui.selected_task)
    }

    /// Whether the trace's graph and preemptors belong on screen: the trace runs, or
    /// what it saw is still inside the graphs' window.
    pub fn trace_in_view(&self) -> bool {
        let from = self.live.now_s() - self.ui.window_s;
        self.tracing
            || self
                .live
                .store
                .trace
                .iter()
                .any(|s| s.back().is_some_and(|(t, _)| *t >= from))
    }

    /// The latest sample of the selected task.
    pub fn selected_sample(&self) -> Option<&TaskSample> {
        self.live.store.latest.get(self.ui.selected_task)
    }

    fn say(&mut self, text: impl Into<String>) {
        self.tell(text.into(), false);
    }

    fn complain(&mut self, text: impl Into<String>) {
        self.tell(text.into(), true);
    }

    /// The status line, and the log behind it.
    fn tell(&mut self, text: String, error: bool) {
        if self.ui.log.len() >= LOG_KEEP {
            self.ui.log.pop_front();
        }
        self.ui.log.push_back(LogEntry {
            t_s: self.live.now_s(),
            text: text.clone(),
            error,
        });
        self.ui.status = text;
        self.ui.status_is_error = error;
    }

    /// The one way state changes.
    pub fn update(&mut self, action: Action) -> Vec<Effect> {
        match action {
            Action::Key(key) => {
                if self.ui.mode != Mode::Normal {
                    return self.modal_key(key);
                }
                match self.keymap.command(&key) {
                    Some(cmd) => self.command(cmd),
                    None => Vec::new(),
                }
            }
            Action::Mouse(m) => self.mouse(m),
            Action::Batch(batch) => {
                // A paused replay still takes the samples it is stepped or seeked to.
                if !self.ui.paused || self.replay {
                    self.live.push(&batch);
                }
                Vec::new()
            }
            Action::Started(s) => {
                self.start(*s);
                Vec::new()
            }
            Action::Joined(tasks) => {
                let names: Vec<&str> = tasks.iter().map(|t| t.name.as_str()).collect();
                self.say(format!("joined: {}", names.join(", ")));
                self.join(tasks);
                Vec::new()
            }
            Action::Reattached { tasks, kept, gone } => {
                self.join(tasks);
                let mut line = Vec::new();
                if !kept.is_empty() {
                    line.push(format!("attached again: {}", kept.join(", ")));
                }
                if !gone.is_empty() {
                    line.push(format!(
                        "exited since it was picked, so no longer attached: {}",
                        gone.join(", ")
                    ));
                }
                // One line; an exit is what the user did not ask for.
                self.tell(line.join("; "), !gone.is_empty());
                Vec::new()
            }
            Action::KnobResult { setting, result } => self.knob_result(&setting, result),
            Action::SystemKnobs(k) => {
                self.knobs = k;
                self.ui.selected_knob = self
                    .ui
                    .selected_knob
                    .min(self.knobs.len().saturating_sub(1));
                Vec::new()
            }
            Action::Processes(rows) => {
                self.open_picker(rows);
                Vec::new()
            }
            Action::Presets(p) => {
                self.presets = p;
                Vec::new()
            }
            Action::Recording(r) => self.recording_result(r),
            Action::Tracing(r) => self.tracing_result(r),
            Action::Trace(batch) => self.take_trace(&batch),
            Action::TraceExportProgress { written, total } => {
                self.export_progress(written, total);
                Vec::new()
            }
            Action::TraceExported(r) => {
                self.trace_exported(r);
                Vec::new()
            }
            Action::Error(e) => {
                self.complain(e);
                Vec::new()
            }
            Action::Resize(w, h) => {
                self.ui.size = (w, h);
                Vec::new()
            }
            Action::Stopped(_) => {
                self.quit = true;
                Vec::new()
            }
        }
    }

    /// Tasks that joined the running experiment, after the others in task order.
    fn join(&mut self, tasks: Vec<TaskInfo>) {
        self.live.join(tasks);
    }

    fn knob_result(&mut self, setting: &str, result: Result<String, KnobError>) -> Vec<Effect> {
        match result {
            Ok(v) => {
                let label = match setting.split_once('=') {
                    Some((k, val)) => format!("{k} -> {val}"),
                    None => setting.to_string(),
                };
                self.live.mark(label);
                self.say(knob_line(setting, &v));
            }
            Err(e) => self.complain(knob_line(setting, &e.to_string())),
        }
        Vec::new()
    }

    fn recording_result(&mut self, r: Result<Option<String>, RecordError>) -> Vec<Effect> {
        match r {
            Ok(Some(path)) => {
                self.say(format!("recording to {path}"));
                self.recording = Some(path);
            }
            Ok(None) => {
                let path = self.recording.take().unwrap_or_default();
                self.say(format!("recording saved: {path}"));
            }
            Err(e) => self.complain(e.to_string()),
        }
        Vec::new()
    }

    fn tracing_result(&mut self, r: Result<bool, TraceError>) -> Vec<Effect> {
        match r {
            Ok(true) => {
                self.tracing = true;
                let export = self.key_label(Command::ExportTrace);
                let trace = self.key_label(Command::Trace);
                self.say(format!(
                    "tracing on: {export} writes the last {} s (at most {} events) as a Perfetto timeline; {trace} stops",
                    TRACE_KEEP.as_secs(),
                    crate::report::perfetto::grouped(crate::trace::KEEP_MAX_EVENTS as u64)
                ));
            }
            Ok(false) => {
                self.tracing = false;
                self.say("tracing off");
            }
            Err(e) => {
                // On when refused: a restart or an export could not trace again.
                let text = if self.tracing {
                    format!("tracing stopped: {e}")
                } else {
                    e.to_string()
                };
                self.tracing = false;
                self.complain(text);
            }
        }
        Vec::new()
    }

    /// A trace interval into the store (by thread id), and the preemptors so far.
    fn take_trace(&mut self, batch: &TraceBatch) -> Vec<Effect> {
        // Paused like the samples: the graphs stand still.
        if self.ui.paused && !self.replay {
            return Vec::new();
        }
        if self.live.push_trace(batch) {
            // Said once; the header keeps the running total.
            self.complain(format!(
                "the trace lost {} events (its rings were full): its counts are low by about that many",
                batch.lost
            ));
        }
        Vec::new()
    }

    /// The first key bound to `cmd`, for messages that name it.
    /// (Unbound: the command's keys.toml name, in angle brackets.)
    pub fn key_label(&self, cmd: Command) -> String {
        self.keymap
            .keys_for(cmd)
            .first()
            .cloned()
            .unwrap_or_else(|| format!("<{}>", cmd.config_name()))
    }

    fn start(&mut self, s: Started) {
        let n = s.tasks.len();
        self.live = Live::new(&s, RETENTION, Duration::ZERO);
        self.ui.selected_task = self.ui.selected_task.min(n.saturating_sub(1));
        self.ui.note_scroll = 0;
        self.keep_selection_visible();
        self.kernel = s.kernel;
        self.cpus = s.cpus;
        let name = s.preset.name.clone();
        self.preset = Some(s.preset);
        if s.warnings.is_empty() {
            let k = |c| self.key_label(c);
            let text = format!(
                "{name} running: select a task and press {}, {}/{}, {} or {}; {} for help",
                k(Command::Policy),
                k(Command::NiceUp),
                k(Command::NiceDown),
                k(Command::Cpus),
                k(Command::Slice),
                k(Command::Help),
            );
            self.say(text);
        } else {
            self.complain(s.warnings.join("; "));
        }
    }

    fn command(&mut self, cmd: Command) -> Vec<Effect> {
        if self.replay && matches!(cmd, Command::Trace | Command::ExportTrace) {
            self.complain("scheduler tracing works only live: a recording carries no trace");
            return Vec::new();
        }
        if self.replay && changes_the_run(cmd) {
            self.complain("a replay is read-only: knobs show what was recorded");
            return Vec::new();
        }
        match cmd {
            Command::Quit => {
                self.quit = true;
                vec![Effect::Quit]
            }
            Command::Help => {
                self.ui.mode = Mode::Help { scroll: 0 };
                Vec::new()
            }
            Command::Log => {
                // The latest messages are at the bottom: open there (the first frame
                // drawn measures where that is, see App::drawn).
                self.ui.mode = Mode::Log { scroll: usize::MAX };
                Vec::new()
            }
            Command::Sort => {
                self.next_sort();
                Vec::new()
            }
            Command::SortReverse => {
                self.reverse_sort();
                Vec::new()
            }
            Command::Filter => {
                self.ui.panel = Panel::Tasks;
                self.ui.mode = Mode::Filter;
                Vec::new()
            }
            Command::ScrollUp | Command::ScrollDown => {
                self.scroll_note(if cmd == Command::ScrollUp { -5 } else { 5 });
                Vec::new()
            }
            Command::Up | Command::Down => self.move_selection(cmd == Command::Down),
            Command::NextPanel => self.next_panel(),
            Command::Policy => self.open_policy(),
            Command::Priority => self.open_priority(),
            Command::NiceUp => self.nudge_nice(1),
            Command::NiceDown => self.nudge_nice(-1),
            Command::Cpus => self.open_cpu_picker(),
            Command::Slice => self.open_slice(),
            Command::Edit => self.open_edit(),
            Command::CommandLine => self.open_command_line(),
            Command::Pause => self.toggle_pause(),
            Command::IntervalDown | Command::IntervalUp => {
                self.step_interval(cmd == Command::IntervalUp)
            }
            Command::ZoomIn | Command::ZoomOut => self.zoom(cmd == Command::ZoomOut),
            Command::Restart => {
                self.say("restarting the workload...");
                vec![Effect::Restart(None)]
            }
            Command::Presets => self.open_presets(),
            Command::Attach => {
                self.say("listing processes...");
                vec![Effect::ListProcesses]
            }
            Command::Note => {
                self.ui.show_note = !self.ui.show_note;
                Vec::new()
            }
            Command::Record => vec![Effect::ToggleRecord],
            Command::Trace => self.toggle_trace(),
            Command::ExportTrace => self.export_trace(),
            Command::StepBack => self.replay_move(Effect::Step(-1)),
            Command::StepForward => self.replay_move(Effect::Step(1)),
            Command::SeekBack => self.replay_move(Effect::Seek(-10.0)),
            Command::SeekForward => self.replay_move(Effect::Seek(10.0)),
        }
    }

    /// Up/down in the focused list, wrapping at both ends.
    fn move_selection(&mut self, down: bool) -> Vec<Effect> {
        match self.ui.panel {
            Panel::Tasks => self.move_task(down),
            Panel::Knobs => {
                let len = self.knobs.len();
                let sel = &mut self.ui.selected_knob;
                if len > 0 {
                    *sel = if down {
                        (*sel + 1) % len
                    } else {
                        (*sel + len - 1) % len
                    };
                }
            }
        }
        Vec::new()
    }

    /// Scroll the note by `lines`, within what it holds at the current size.
    fn scroll_note(&mut self, lines: isize) {
        let max = self.ui.geometry.note_max_scroll;
        self.ui.note_scroll = self
            .ui
            .note_scroll
            .min(max)
            .saturating_add_signed(lines)
            .min(max);
    }

    fn next_panel(&mut self) -> Vec<Effect> {
        self.ui.panel = match self.ui.panel {
            Panel::Tasks => Panel::Knobs,
            Panel::Knobs => Panel::Tasks,
        };
        Vec::new()
    }

    fn toggle_pause(&mut self) -> Vec<Effect> {
        self.ui.paused = !self.ui.paused;
        self.say(if self.ui.paused {
            "paused: sampling stopped"
        } else {
            "sampling"
        });
        vec![Effect::Pause(self.ui.paused)]
    }

    /// The next sampling interval of [`INTERVALS_MS`], slower or faster.
    fn step_interval(&mut self, slower: bool) -> Vec<Effect> {
        let ms = self.ui.interval.as_millis() as u64;
        let pos = INTERVALS_MS
            .iter()
            .position(|&i| i >= ms)
            .unwrap_or(INTERVALS_MS.len() - 1);
        let next = if slower {
            INTERVALS_MS[(pos + 1).min(INTERVALS_MS.len() - 1)]
        } else {
            INTERVALS_MS[pos.saturating_sub(1)]
        };
        self.ui.interval = Duration::from_millis(next);
        self.say(format!("sampling every {next} ms"));
        vec![Effect::SetInterval(self.ui.interval)]
    }

    /// The next graph window of [`WINDOWS_S`], longer or shorter.
    fn zoom(&mut self, out: bool) -> Vec<Effect> {
        let pos = WINDOWS_S
            .iter()
            .position(|&w| w >= self.ui.window_s)
            .unwrap_or(WINDOWS_S.len() - 1);
        self.ui.window_s = if out {
            WINDOWS_S[(pos + 1).min(WINDOWS_S.len() - 1)]
        } else {
            WINDOWS_S[pos.saturating_sub(1)]
        };
        self.say(format!("showing the last {} s", self.ui.window_s));
        Vec::new()
    }

    /// The preset picker, on the preset that runs now.
    fn open_presets(&mut self) -> Vec<Effect> {
        if self.presets.is_empty() {
            self.complain("no presets found");
        } else {
            let current = self
                .preset
                .as_ref()
                .map(|p| p.name.clone())
                .unwrap_or_default();
            let selected = self
                .presets
                .iter()
                .position(|(n, _)| *n == current)
                .unwrap_or(0);
            self.ui.mode = Mode::Presets { selected };
        }
        Vec::new()
    }

    fn toggle_trace(&mut self) -> Vec<Effect> {
        self.say(if self.tracing {
            "stopping the scheduler trace..."
        } else {
            "starting the scheduler trace..."
        });
        vec![Effect::SetTracing(!self.tracing)]
    }

    /// Stepping and seeking, which only a replay can do.
    fn replay_move(&mut self, effect: Effect) -> Vec<Effect> {
        if !self.replay {
            self.complain("stepping and seeking work in a replay (schedlab replay FILE)");
            return Vec::new();
        }
        vec![effect]
    }

    fn open_policy(&mut self) -> Vec<Effect> {
        let Some(task) = self.selected_task().map(|t| t.name.clone()) else {
            self.complain("no task selected");
            return Vec::new();
        };
        let current = self
            .selected_sample()
            .and_then(TaskSample::policy)
            .and_then(Policy::from_kernel)
            .unwrap_or(Policy::Other);
        let options: Vec<String> = Policy::ALL.iter().map(|p| p.name().to_string()).collect();
        let selected = Policy::ALL.iter().position(|p| *p == current).unwrap_or(0);
        self.ui.mode = Mode::Choice {
            title: format!("{task}: policy"),
            options,
            selected,
            knob: format!("{task}.policy"),
        };
        Vec::new()
    }

    fn open_priority(&mut self) -> Vec<Effect> {
        self.open_input_for_task("priority", |s| {
            s.rt_priority().map(|p| p.max(1).to_string())
        })
    }

    fn open_slice(&mut self) -> Vec<Effect> {
        self.open_input_for_task("slice", |s| {
            s.sched.slice_ns.map(|n| format!("{}us", n / 1000))
        })
    }

    fn open_command_line(&mut self) -> Vec<Effect> {
        self.ui.mode = Mode::input("set TASK.KNOB=VALUE or sys.KNOB=VALUE", "", "");
        Vec::new()
    }

    fn open_input_for_task(
        &mut self,
        knob: &str,
        current: impl Fn(&TaskSample) -> Option<String>,
    ) -> Vec<Effect> {
        let Some(task) = self.selected_task().map(|t| t.name.clone()) else {
            self.complain("no task selected");
            return Vec::new();
        };
        let value = self.selected_sample().and_then(current).unwrap_or_default();
        self.ui.mode = Mode::input(format!("{task}.{knob}"), format!("{task}.{knob}="), value);
        Vec::new()
    }

    fn nudge_nice(&mut self, delta: i32) -> Vec<Effect> {
        let Some(task) = self.selected_task().map(|t| t.name.clone()) else {
            self.complain("no task selected");
            return Vec::new();
        };
        let nice = self
            .selected_sample()
            .and_then(TaskSample::nice)
            .unwrap_or(0);
        let next = (nice + delta).clamp(-20, 19);
        if next == nice {
            self.complain(format!("{task}: nice is already {nice} (allowed -20..19)"));
            return Vec::new();
        }
        self.apply(format!("{task}.nice={next}"))
    }

    fn open_cpu_picker(&mut self) -> Vec<Effect> {
        let Some(task) = self.selected_task().map(|t| t.name.clone()) else {
            self.complain("no task selected");
            return Vec::new();
        };
        let n = self.cpus.max(1);
        let allowed = self.selected_sample().and_then(|s| s.cpus_allowed);
        let cpus = (0..n)
            .map(|c| allowed.is_none_or(|a| a.contains(c)))
            .collect();
        self.ui.mode = Mode::CpuPicker {
            task,
            cpus,
            cursor: 0,
        };
        Vec::new()
    }

    fn open_edit(&mut self) -> Vec<Effect> {
        match self.ui.panel {
            Panel::Tasks => {
                let task = self
                    .selected_task()
                    .map(|t| format!("{}.", t.name))
                    .unwrap_or_default();
                self.ui.mode = Mode::input("set TASK.KNOB=VALUE", "", task);
            }
            Panel::Knobs => {
                let Some(k) = self.knobs.get(self.ui.selected_knob).cloned() else {
                    return Vec::new();
                };
                if !k.writable {
                    let why = k.why_not.unwrap_or_else(|| "read-only".into());
                    self.complain(format!("{} cannot be changed here: {why}", k.name));
                    return Vec::new();
                }
                self.ui.mode = Mode::input(
                    format!("{} ({})", k.name, k.allowed),
                    format!("{}=", k.name),
                    k.value.unwrap_or_default(),
                );
            }
        }
        Vec::new()
    }

    /// Parse a typed setting and ask for it to be applied.
    fn apply(&mut self, text: String) -> Vec<Effect> {
        match text.parse::<Setting>() {
            Ok(s) => {
                self.say(format!("{s}: applying..."));
                vec![Effect::Apply(s)]
            }
            Err(e) => {
                self.complain(e.0);
                Vec::new()
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests;
