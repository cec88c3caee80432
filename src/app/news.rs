//! What the outside world tells the App: a started experiment, its samples and trace,
//! tasks that joined, the answers to knob changes, recording and trace news.

use super::*;

impl App {
    /// News from the controller (or a replay's records): everything but the user's input.
    pub(super) fn news(&mut self, action: Action) -> Vec<Effect> {
        match action {
            Action::Batch(batch) => {
                self.take_batch(&batch);
                self.lesson_tick()
            }
            Action::Started(s) => {
                self.start(*s);
                self.lesson_started()
            }
            Action::Joined(tasks) => {
                let names: Vec<&str> = tasks.iter().map(|t| t.name.as_str()).collect();
                self.say(format!("joined: {}", names.join(", ")));
                self.join(tasks);
                Vec::new()
            }
            Action::Reattached { tasks, kept, gone } => {
                self.reattached(tasks, &kept, &gone);
                Vec::new()
            }
            Action::KnobResult { setting, result } => {
                self.lesson_knob_result(&setting, &result);
                self.knob_result(&setting, result)
            }
            Action::Lessons(list, start) => {
                self.take_lessons(list, start);
                Vec::new()
            }
            Action::SystemKnobs(k) => {
                self.knobs = k;
                self.follow_sched_ext();
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
            Action::Stopped(_) => {
                self.quit = true;
                Vec::new()
            }
            // The user's input is `update`'s own.
            Action::Key(_) | Action::Mouse(_) | Action::Resize(..) => Vec::new(),
        }
    }

    fn take_batch(&mut self, batch: &Batch) {
        // A paused replay still takes the samples it is stepped or seeked to.
        if !self.ui.paused || self.replay {
            self.live.push(batch);
        }
        // A recording says what it was sampled at (live, the App set it).
        if self.replay && batch.interval_ns > 0 {
            self.ui
                .interval
                .set(Duration::from_nanos(batch.interval_ns));
        }
    }

    /// A restart found the picked processes again (`kept`) or not (`gone`).
    fn reattached(&mut self, tasks: Vec<TaskInfo>, kept: &[String], gone: &[String]) {
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
    }

    /// Tasks that joined the running experiment, after the others in task order.
    fn join(&mut self, tasks: Vec<TaskInfo>) {
        self.live.join(tasks);
    }

    fn knob_result(&mut self, setting: &str, result: Result<String, KnobError>) -> Vec<Effect> {
        match result {
            Ok(v) => {
                let label = match setting.split_once('=') {
                    Some((k, val)) => {
                        self.in_force_now(k, val);
                        format!("{k} -> {val}")
                    }
                    None => setting.to_string(),
                };
                self.live.mark(label);
                self.say(knob_line(setting, &v));
            }
            Err(e) => self.complain(knob_line(setting, &e.to_string())),
        }
        Vec::new()
    }

    /// `knob` is `value` now. A system knob's value before its first change is kept
    /// (from the list, which the controller sends after the answer): a lesson puts it
    /// back, and back at it the knob is no longer a change in force.
    fn in_force_now(&mut self, knob: &str, value: &str) {
        self.in_force.retain(|(k, _)| k != knob);
        if knob.starts_with("sys.") && !self.sys_before.iter().any(|(k, _)| k == knob) {
            if let Some(before) = self
                .knobs
                .iter()
                .find(|k| k.name == knob)
                .and_then(|k| k.value.clone())
            {
                self.sys_before.push((knob.to_string(), before));
            }
        }
        let back = self.sys_before.iter().any(|(k, v)| k == knob && v == value);
        if !back {
            self.in_force.push((knob.to_string(), value.to_string()));
        }
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

    fn start(&mut self, s: Started) {
        // A preset started anew has its tasks as written; the system knobs stay changed.
        if !std::mem::take(&mut self.restart_keeps) {
            self.in_force.retain(|(knob, _)| knob.starts_with("sys."));
        }
        let n = s.tasks.len();
        self.live = Live::new(&s, RETENTION, Duration::ZERO);
        self.ui.selected_task = self.ui.selected_task.min(n.saturating_sub(1));
        self.ui.note_scroll = 0;
        self.keep_selection_visible();
        self.kernel = s.kernel;
        self.scheduler = s.scheduler;
        self.cpus = s.cpus;
        let name = s.preset.name.clone();
        self.preset = Some(s.preset);
        if s.warnings.is_empty() && self.replay {
            // Its knobs are read-only: the keys that move through the recording instead.
            let k = |c| self.key_label(c);
            let text = format!(
                "{name} replay: {} plays/pauses, {}/{} a sample, {}/{} 10 s; knobs read-only; {} for help",
                k(Command::Pause),
                k(Command::StepBack),
                k(Command::StepForward),
                k(Command::SeekBack),
                k(Command::SeekForward),
                k(Command::Help),
            );
            self.say(text);
        } else if s.warnings.is_empty() {
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

    /// The header's scheduler class follows `sys.sched_ext` whenever the knob list comes
    /// (the controller sends it after every system knob change).
    fn follow_sched_ext(&mut self) {
        let Some(value) = self
            .knobs
            .iter()
            .find(|k| k.name == "sys.sched_ext")
            .and_then(|k| k.value.clone())
        else {
            return;
        };
        self.scheduler = if value == "off" {
            crate::knob::scx::fair_class(&self.kernel)
        } else {
            format!("sched_ext: {value}")
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_class_follows_the_sched_ext_knob() {
        let mut app = crate::app::tests::running_app();
        assert_eq!(app.scheduler, "EEVDF");
        let row = |value: Option<&str>| crate::knob::sys::KnobInfo {
            name: "sys.sched_ext".into(),
            value: value.map(str::to_string),
            allowed: String::new(),
            writable: true,
            why_not: None,
            path: None,
            help: String::new(),
        };
        app.update(Action::SystemKnobs(vec![row(Some("rusty"))]));
        assert_eq!(app.scheduler, "sched_ext: rusty");
        app.update(Action::SystemKnobs(vec![row(Some("off"))]));
        assert_eq!(app.scheduler, "EEVDF");
        // A kernel without sched_ext has no value: the class stays.
        app.scheduler = "CFS".into();
        app.update(Action::SystemKnobs(vec![row(None)]));
        assert_eq!(app.scheduler, "CFS");
    }
}
