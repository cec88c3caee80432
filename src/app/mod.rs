//! The workbench's state and its only way to change: [`App::update`] takes an
//! [`Action`] and returns the [`Effect`]s to carry out. No I/O happens here: the TUI
//! loop turns effects into commands for the controller thread.

mod commands;
mod export;
mod geometry;
mod lesson;
mod line;
pub use geometry::{Geometry, Hit};
pub use lesson::Playing;
pub mod keys;
mod modal;
mod picker;
pub use picker::Picker;
mod mouse;
mod news;
pub mod view;

use std::collections::VecDeque;
use std::time::Duration;

use crossterm::event::{KeyEvent, MouseEvent};

use crate::error::KnobError;
use crate::knob::sys::KnobInfo;
use crate::lab::record::RecordError;
use crate::policy::Policy;
use crate::preset::setting::Setting;
use crate::sampler::{Batch, Interval, TaskSample};
use crate::trace::{TraceBatch, TraceError};
use keys::{Command, KeyMap};

pub use crate::columns::Column;
pub use crate::lab::describe::{PresetView, Started, TaskInfo};
pub use crate::lab::live::Live;
pub use crate::workload::attach::ProcRow;
pub use export::{Exported, TimelineError};
pub use modal::Mode;
pub use view::{Branch, Sort};

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
    /// The lessons `L` offers, and one to play as soon as its preset runs.
    Lessons(Vec<crate::lesson::Lesson>, Option<crate::lesson::Lesson>),
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
    /// The App stepped the shared sampling interval: a running sampler takes it now.
    IntervalChanged,
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
    /// The one sampling interval (shared with the sampler; a replay's, as recorded).
    pub interval: Interval,
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
    /// The scheduler class fair tasks run in, as the experiment found it.
    pub scheduler: String,
    pub cpus: usize,
    pub live: Live,
    pub knobs: Vec<KnobInfo>,
    pub presets: Vec<(String, String)>,
    pub lessons: Vec<crate::lesson::Lesson>,
    /// The lesson playing (or waiting for its preset to start).
    pub lesson: Option<Playing>,
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
    /// The knobs changed in this run and their values now (`writer.policy`, `batch`),
    /// the latest last: what the changes line says once their marks left the window.
    pub in_force: Vec<(String, String)>,
    /// The restart asked for keeps the tasks' changes (`R`; a preset started anew
    /// does not, the system knobs stay changed either way).
    restart_keeps: bool,
    /// Each system knob changed in this run, as it was before its first change.
    sys_before: Vec<(String, String)>,
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
            | Command::Lessons
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
    pub fn new(keymap: KeyMap, interval: impl Into<Interval>, no_color: bool) -> App {
        let mut app = App {
            preset: None,
            kernel: String::new(),
            scheduler: String::new(),
            cpus: 0,
            live: Live::empty(RETENTION),
            knobs: Vec::new(),
            presets: Vec::new(),
            lessons: Vec::new(),
            lesson: None,
            ui: UiState {
                mode: Mode::Normal,
                panel: Panel::Tasks,
                selected_task: 0,
                selected_knob: 0,
                paused: false,
                interval: interval.into(),
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
            in_force: Vec::new(),
            restart_keeps: false,
            sys_before: Vec::new(),
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
                if let Some(effects) = self.lesson_key(&key) {
                    return effects;
                }
                match self.keymap.command(&key) {
                    Some(cmd) => self.command(cmd),
                    None => Vec::new(),
                }
            }
            Action::Mouse(m) => self.mouse(m),
            Action::Resize(w, h) => {
                self.ui.size = (w, h);
                Vec::new()
            }
            news => self.news(news),
        }
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
}

#[cfg(test)]
pub(crate) mod tests;
