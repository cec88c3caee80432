//! What each of the workbench's commands does: selection, panels, pause, interval and
//! zoom, and the popups that take a knob's new value.

use super::*;

impl App {
    pub(super) fn command(&mut self, cmd: Command) -> Vec<Effect> {
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
                self.restart_keeps = true;
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
            Command::Lessons => self.open_lessons(),
            Command::Trace => self.toggle_trace(),
            Command::ExportTrace => self.export_trace(),
            Command::StepBack => self.replay_move(Effect::Step(-1)),
            Command::StepForward => self.replay_move(Effect::Step(1)),
            Command::SeekBack => self.replay_move(Effect::Seek(-10.0)),
            Command::SeekForward => self.replay_move(Effect::Seek(10.0)),
        }
    }

    /// Up/down in the focused list, wrapping at both ends.
    pub(super) fn move_selection(&mut self, down: bool) -> Vec<Effect> {
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
    pub(super) fn scroll_note(&mut self, lines: isize) {
        let max = self.ui.geometry.note_max_scroll;
        self.ui.note_scroll = self
            .ui
            .note_scroll
            .min(max)
            .saturating_add_signed(lines)
            .min(max);
    }

    pub(super) fn next_panel(&mut self) -> Vec<Effect> {
        self.ui.panel = match self.ui.panel {
            Panel::Tasks => Panel::Knobs,
            Panel::Knobs => Panel::Tasks,
        };
        Vec::new()
    }

    pub(super) fn toggle_pause(&mut self) -> Vec<Effect> {
        self.ui.paused = !self.ui.paused;
        self.say(if self.ui.paused {
            "paused: sampling stopped"
        } else {
            "sampling"
        });
        vec![Effect::Pause(self.ui.paused)]
    }

    /// The next sampling interval of [`INTERVALS_MS`], slower or faster.
    pub(super) fn step_interval(&mut self, slower: bool) -> Vec<Effect> {
        let ms = self.ui.interval.get().as_millis() as u64;
        let pos = INTERVALS_MS
            .iter()
            .position(|&i| i >= ms)
            .unwrap_or(INTERVALS_MS.len() - 1);
        let next = if slower {
            INTERVALS_MS[(pos + 1).min(INTERVALS_MS.len() - 1)]
        } else {
            INTERVALS_MS[pos.saturating_sub(1)]
        };
        self.ui.interval.set(Duration::from_millis(next));
        self.say(format!("sampling every {next} ms"));
        vec![Effect::IntervalChanged]
    }

    /// The next graph window of [`WINDOWS_S`], longer or shorter.
    pub(super) fn zoom(&mut self, out: bool) -> Vec<Effect> {
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
    pub(super) fn open_presets(&mut self) -> Vec<Effect> {
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

    pub(super) fn toggle_trace(&mut self) -> Vec<Effect> {
        self.say(if self.tracing {
            "stopping the scheduler trace..."
        } else {
            "starting the scheduler trace..."
        });
        vec![Effect::SetTracing(!self.tracing)]
    }

    /// Stepping and seeking, which only a replay can do.
    pub(super) fn replay_move(&mut self, effect: Effect) -> Vec<Effect> {
        if !self.replay {
            self.complain("stepping and seeking work in a replay (schedlab replay FILE)");
            return Vec::new();
        }
        vec![effect]
    }

    pub(super) fn open_policy(&mut self) -> Vec<Effect> {
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

    pub(super) fn open_priority(&mut self) -> Vec<Effect> {
        self.open_input_for_task("priority", |s| {
            s.rt_priority().map(|p| p.max(1).to_string())
        })
    }

    pub(super) fn open_slice(&mut self) -> Vec<Effect> {
        self.open_input_for_task("slice", |s| {
            s.sched.slice_ns.map(|n| format!("{}us", n / 1000))
        })
    }

    pub(super) fn open_command_line(&mut self) -> Vec<Effect> {
        self.ui.mode = Mode::input("set TASK.KNOB=VALUE or sys.KNOB=VALUE", "", "");
        Vec::new()
    }

    pub(super) fn open_input_for_task(
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

    pub(super) fn nudge_nice(&mut self, delta: i32) -> Vec<Effect> {
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

    pub(super) fn open_cpu_picker(&mut self) -> Vec<Effect> {
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

    pub(super) fn open_edit(&mut self) -> Vec<Effect> {
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
                // The allowed values below the box, whole: a title cuts them off.
                self.ui.mode = Mode::input(
                    k.name.clone(),
                    format!("{}=", k.name),
                    k.value.unwrap_or_default(),
                )
                .with_hint(format!("allowed: {}", k.allowed));
            }
        }
        Vec::new()
    }

    /// Parse a typed setting and ask for it to be applied.
    pub(super) fn apply(&mut self, text: String) -> Vec<Effect> {
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
