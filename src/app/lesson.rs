//! A lesson playing in the workbench: its step, its clock (the run's sample time, while
//! not paused), the values to put back when stepping back, and each step's check.

use super::*;
use crate::lesson::check::{evaluate, known_reasons, Outcome, Window};
use crate::lesson::{Bound, Lesson, Pace};

/// The lesson being played.
#[derive(Clone, Debug, PartialEq)]
pub struct Playing {
    pub lesson: Lesson,
    /// The current step; `steps.len()` once the last one is done.
    pub step: usize,
    pub paused: bool,
    /// Seconds the current step has been shown (lesson clock: stops while paused).
    pub clock_s: f64,
    /// The run's time at the latest sample the clock counted.
    last_s: f64,
    /// The run's time the current step started at.
    entered_s: f64,
    /// Each step's window once it was left (a ratio check compares with it).
    pub windows: Vec<Option<Window>>,
    /// What puts back the values each step's changes replaced.
    undo: Vec<Vec<Setting>>,
    /// The kernel refused these changes of each step.
    pub refused: Vec<Vec<String>>,
    /// These changes of each step changed nothing (the tasks had them already).
    pub did_nothing: Vec<Vec<String>>,
    /// The current step's check as the samples so far show it.
    pub outcome: Option<Outcome>,
    /// Why the effect may not show (when the check did not pass).
    pub reasons: Vec<String>,
    /// Waiting for its preset's workload to start.
    pub waiting: bool,
    /// The current step's question is shown; its changes wait for `right`.
    pub asking: bool,
}

impl Playing {
    pub fn new(lesson: Lesson) -> Playing {
        let n = lesson.steps.len();
        Playing {
            lesson,
            step: 0,
            paused: false,
            clock_s: 0.0,
            last_s: 0.0,
            entered_s: 0.0,
            windows: vec![None; n],
            undo: vec![Vec::new(); n],
            refused: vec![Vec::new(); n],
            did_nothing: vec![Vec::new(); n],
            outcome: None,
            reasons: Vec::new(),
            waiting: true,
            asking: false,
        }
    }

    /// Past the last step.
    pub fn finished(&self) -> bool {
        self.step >= self.lesson.steps.len()
    }

    pub fn current(&self) -> Option<&crate::lesson::Step> {
        self.lesson.steps.get(self.step)
    }

    /// Every change the current step makes changed nothing: its check would judge the
    /// state before it, as if it had worked.
    pub fn step_did_nothing(&self) -> bool {
        let (Some(step), Some(none)) = (self.current(), self.did_nothing.get(self.step)) else {
            return false;
        };
        !step.set.is_empty() && step.set.iter().all(|s| none.contains(&s.to_string()))
    }
}

impl App {
    /// The lessons `L` offers, and the one to play once its preset runs.
    pub(super) fn take_lessons(&mut self, list: Vec<Lesson>, start: Option<Lesson>) {
        self.lessons = list;
        if let Some(l) = start {
            self.lesson = Some(Playing::new(l));
        }
    }

    /// Keys while a lesson plays (None: the key is the workbench's as usual).
    pub(super) fn lesson_key(&mut self, key: &KeyEvent) -> Option<Vec<Effect>> {
        let playing = self.lesson.as_ref().is_some_and(|p| !p.waiting);
        if !playing || self.ui.mode != Mode::Normal {
            return None;
        }
        if key.code == crossterm::event::KeyCode::Esc {
            return Some(self.leave_lesson());
        }
        match self.keymap.command(key)? {
            Command::Pause => {
                let p = self.lesson.as_mut()?;
                p.paused = !p.paused;
                let text = if p.paused {
                    "lesson paused (space resumes); sampling goes on"
                } else {
                    "lesson resumed"
                };
                self.say(text);
                Some(Vec::new())
            }
            Command::SeekForward => Some(self.lesson_forward()),
            Command::SeekBack => Some(self.lesson_back()),
            Command::Lessons => Some(self.leave_lesson()),
            _ => None,
        }
    }

    /// Leave the lesson; the knobs stay as they are.
    pub(super) fn leave_lesson(&mut self) -> Vec<Effect> {
        if let Some(p) = self.lesson.take() {
            self.say(format!(
                "left the lesson {}: the knobs stay as they are ({} starts a preset as written)",
                p.lesson.name,
                self.key_label(Command::Presets)
            ));
        }
        Vec::new()
    }

    /// The experiment (re)started: a waiting lesson for this preset begins; one for
    /// another preset is dropped.
    pub(super) fn lesson_started(&mut self) -> Vec<Effect> {
        let Some(p) = self.lesson.as_mut() else {
            return Vec::new();
        };
        let name = self
            .preset
            .as_ref()
            .map(|v| v.name.clone())
            .unwrap_or_default();
        if p.lesson.preset != name {
            let l = p.lesson.name.clone();
            self.lesson = None;
            self.complain(format!("left the lesson {l}: the preset is now {name}"));
            return Vec::new();
        }
        if p.waiting {
            p.waiting = false;
            return self.enter_step(0, true);
        }
        // A restart: the run's clock began again; the step's window with it.
        p.windows.iter_mut().for_each(|w| *w = None);
        p.entered_s = 0.0;
        p.last_s = 0.0;
        p.clock_s = 0.0;
        Vec::new()
    }

    /// Show step `k`; with `apply`, make its knob changes (remembering what they replace).
    fn enter_step(&mut self, k: usize, apply: bool) -> Vec<Effect> {
        let now = self.live.now_s();
        let Some(p) = self.lesson.as_mut() else {
            return Vec::new();
        };
        p.step = k;
        p.clock_s = 0.0;
        p.last_s = now;
        p.entered_s = now;
        p.outcome = None;
        p.reasons.clear();
        p.asking = false;
        let Some(step) = p.lesson.steps.get(k).cloned() else {
            self.say("end of the lesson: left arrow goes back, esc leaves it");
            return Vec::new();
        };
        // The graphs mark where each step began, like a knob change.
        self.live.mark(format!("step {}", k + 1));
        if !apply {
            return Vec::new();
        }
        if step.question.is_some() {
            // The class predicts first: the changes wait for `right`.
            p.asking = true;
            p.undo[k].clear();
            return Vec::new();
        }
        self.apply_step(k, step)
    }

    /// Make step `k`'s knob changes, remembering what they replace.
    fn apply_step(&mut self, k: usize, step: crate::lesson::Step) -> Vec<Effect> {
        let sys_now: Vec<(String, Option<String>)> = self
            .knobs
            .iter()
            .map(|k| (k.name.clone(), k.value.clone()))
            .collect();
        let Some(p) = self.lesson.as_mut() else {
            return Vec::new();
        };
        p.refused[k].clear();
        p.did_nothing[k].clear();
        let mut undo = step.undo.clone();
        for s in step.set.iter().filter(|s| s.target == "sys") {
            let name = format!("sys.{}", s.knob);
            if let Some((_, Some(v))) = sys_now.iter().find(|(n, _)| *n == name) {
                undo.push(Setting {
                    value: v.clone(),
                    ..s.clone()
                });
            }
        }
        p.undo[k] = undo;
        let mut effects = Vec::new();
        for s in &step.set {
            effects.extend(self.apply(s.to_string()));
        }
        effects
    }

    /// `right`: make the changes of a step that asked its question (its window starts
    /// then); otherwise close this step's window and go to the next (its changes applied).
    pub(super) fn lesson_forward(&mut self) -> Vec<Effect> {
        let now = self.live.now_s();
        let Some(p) = self.lesson.as_mut() else {
            return Vec::new();
        };
        if p.finished() {
            return Vec::new();
        }
        let k = p.step;
        if p.asking {
            p.asking = false;
            p.clock_s = 0.0;
            p.last_s = now;
            p.entered_s = now;
            let Some(step) = p.lesson.steps.get(k).cloned() else {
                return Vec::new();
            };
            self.live.mark(format!("step {} change", k + 1));
            return self.apply_step(k, step);
        }
        p.windows[k] = Some(Window {
            from_s: p.entered_s,
            to_s: now,
        });
        self.enter_step(k + 1, true)
    }

    /// `left`: put back what this step changed and show the step before.
    pub(super) fn lesson_back(&mut self) -> Vec<Effect> {
        let Some(p) = self.lesson.as_mut() else {
            return Vec::new();
        };
        if p.step == 0 {
            self.say("this is the first step");
            return Vec::new();
        }
        let undo = if p.finished() {
            Vec::new()
        } else {
            std::mem::take(&mut p.undo[p.step])
        };
        let k = p.step - 1;
        let mut effects = Vec::new();
        for s in undo {
            effects.extend(self.apply(s.to_string()));
        }
        effects.extend(self.enter_step(k, false));
        effects
    }

    /// A sample arrived: the lesson clock moves (unless paused), the check is evaluated
    /// on the samples so far, and a timed step that is over moves on.
    pub(super) fn lesson_tick(&mut self) -> Vec<Effect> {
        let now = self.live.now_s();
        let again = self.key_label(Command::Lessons);
        let cpus = self.cpus;
        let Some(p) = self.lesson.as_mut() else {
            return Vec::new();
        };
        // A question waits for the class: no clock, nothing to judge yet.
        if p.waiting || p.finished() || p.asking {
            return Vec::new();
        }
        if !p.paused {
            p.clock_s += (now - p.last_s).max(0.0);
        }
        p.last_s = now;
        let Some(step) = p.lesson.steps.get(p.step) else {
            return Vec::new();
        };
        let this = Window {
            from_s: p.entered_s,
            to_s: now,
        };
        if let (Some(c), true) = (&step.check, p.step_did_nothing()) {
            p.outcome = Some(Outcome {
                verdict: crate::lesson::check::Verdict::NoData,
                value: None,
                reference: None,
                ratio: None,
                text: format!(
                    "not judged: this step's change did nothing ({}: the tasks had it already), \
                     so \"{}\" would be judged on the state before it",
                    p.did_nothing[p.step].join(", "),
                    c.says
                ),
            });
            p.reasons = vec![format!(
                "start the lesson again ({again}, then enter) to play it from the preset as written"
            )];
        } else if let Some(c) = &step.check {
            let earlier = match c.bound {
                Bound::Ratio { step, .. } => p.windows.get(step).copied().flatten(),
                Bound::Absolute { .. } => None,
            };
            let o = evaluate(&self.live, p.lesson.headline, c, this, earlier);
            let refused = !p.refused[p.step].is_empty();
            // A change that did nothing is said whatever the verdict: the step did less
            // than its caption says.
            let inert = p.did_nothing[p.step]
                .iter()
                .map(|s| format!("{s} changed nothing: the tasks had it already"));
            p.reasons = if o.verdict == crate::lesson::check::Verdict::Pass && !refused {
                inert.collect()
            } else {
                inert
                    .chain(known_reasons(
                        &self.live,
                        this,
                        &p.refused[p.step],
                        cpus,
                        c.metric,
                    ))
                    .chain(step.if_not.iter().cloned())
                    .collect()
            };
            p.outcome = Some(o);
        }
        match step.pace {
            Pace::Timed(d) if p.clock_s >= d.as_secs_f64() => self.lesson_forward(),
            _ => Vec::new(),
        }
    }

    /// A knob change's answer: a refusal of the current step's change is remembered
    /// (it explains a check that does not pass), and so is a change that changed nothing
    /// (its check is not judged).
    pub(super) fn lesson_knob_result(&mut self, setting: &str, result: &Result<String, KnobError>) {
        let Some(p) = self.lesson.as_mut() else {
            return;
        };
        let k = p.step;
        if !p
            .current()
            .is_some_and(|s| s.set.iter().any(|x| x.to_string() == setting))
        {
            return;
        }
        let expected = p.current().is_some_and(|s| s.expects_refusal(setting));
        match result {
            // Admission control refusing it is what the step shows.
            Err(_) if expected => {}
            Err(why) => p.refused[k].push(format!("{setting}: {why}")),
            Ok(said) if said == crate::lab::session::NO_CHANGE => {
                p.did_nothing[k].push(setting.to_string());
            }
            Ok(_) => {}
        }
    }

    /// `L`: the list of lessons; enter plays one (switching preset if it needs another).
    pub(super) fn open_lessons(&mut self) -> Vec<Effect> {
        if self.lessons.is_empty() {
            self.complain("no lessons found");
            return Vec::new();
        }
        self.ui.mode = Mode::Lessons { selected: 0 };
        Vec::new()
    }

    /// Play lesson `i` of the list: from the state its captions assume, its preset's
    /// tasks as written (started anew, also when it runs already: its knobs may have
    /// been turned) and the system knobs changed in this run put back first.
    pub(super) fn choose_lesson(&mut self, i: usize) -> Vec<Effect> {
        self.ui.mode = Mode::Normal;
        let Some(l) = self.lessons.get(i).cloned() else {
            return Vec::new();
        };
        let preset = l.preset.clone();
        self.lesson = Some(Playing::new(l));
        let mut effects = Vec::new();
        let mut put_back = Vec::new();
        for (knob, before) in self.sys_before.clone() {
            let now = self
                .knobs
                .iter()
                .find(|k| k.name == knob)
                .and_then(|k| k.value.clone());
            if now.as_ref() != Some(&before) {
                put_back.push(format!("{knob}={before}"));
                effects.extend(self.apply(format!("{knob}={before}")));
            }
        }
        let back = if put_back.is_empty() {
            String::new()
        } else {
            format!(", {} put back", put_back.join(", "))
        };
        self.say(format!(
            "starting {preset} as written for the lesson{back}..."
        ));
        effects.push(Effect::Restart(Some(preset)));
        effects
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

    use super::super::tests::{batch, knobs, running_app, started};
    use super::*;

    fn key(app: &mut App, code: KeyCode) -> Vec<Effect> {
        app.update(Action::Key(KeyEvent::new(code, KeyModifiers::NONE)))
    }

    fn applies(effects: &[Effect]) -> Vec<String> {
        effects
            .iter()
            .map(|e| match e {
                Effect::Apply(s) => s.to_string(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    fn rt_lesson() -> Lesson {
        crate::lesson::load_in("rt-throttle", None).expect("built-in")
    }

    /// The workbench as `schedlab lesson rt-throttle` opens it: the lesson first, then
    /// the experiment's start and a few samples.
    fn in_lesson(lesson: Lesson) -> (App, Vec<Effect>) {
        let mut app = App::new(KeyMap::default(), Duration::from_millis(100), false);
        app.update(Action::Lessons(vec![lesson.clone()], Some(lesson)));
        app.update(Action::SystemKnobs(knobs()));
        let first = app.update(Action::Started(Box::new(started())));
        for t in 0..3 {
            app.update(Action::Batch(Box::new(batch(t))));
        }
        (app, first)
    }

    #[test]
    fn right_applies_the_next_steps_changes_and_left_puts_back_what_they_replaced() {
        let (mut app, first) = in_lesson(rt_lesson());
        assert!(applies(&first).is_empty(), "step 1 changes nothing");
        assert_eq!(app.lesson.as_ref().map(|p| p.step), Some(0));
        let e = key(&mut app, KeyCode::Right);
        assert_eq!(applies(&e), ["sys.rt_runtime_us=600000"]);
        let e = key(&mut app, KeyCode::Right);
        assert_eq!(applies(&e), ["fifo.policy=other"]);
        // Back: the spinner's policy as the preset had it, then the RT runtime as the
        // machine had it when step 2 began.
        let e = key(&mut app, KeyCode::Left);
        assert_eq!(applies(&e), ["fifo.policy=fifo"]);
        assert_eq!(app.lesson.as_ref().map(|p| p.step), Some(1));
        let e = key(&mut app, KeyCode::Left);
        assert_eq!(applies(&e), ["sys.rt_runtime_us=950000"]);
        assert!(
            applies(&key(&mut app, KeyCode::Left)).is_empty(),
            "no step before 1"
        );
        // Past the last step: the end, and right does nothing more.
        for _ in 0..3 {
            key(&mut app, KeyCode::Right);
        }
        assert!(app.lesson.as_ref().is_some_and(|p| p.finished()));
        assert!(key(&mut app, KeyCode::Right).is_empty());
        // Esc leaves it, the knobs as they are.
        assert!(key(&mut app, KeyCode::Esc).is_empty());
        assert!(app.lesson.is_none());
    }

    #[test]
    fn space_pauses_the_lesson_clock_and_a_timed_step_moves_on_by_itself() {
        let text = crate::lesson::BUILTIN
            .iter()
            .find(|(n, _)| *n == "rt-throttle")
            .map(|(_, t)| t.replacen("duration = \"key\"", "duration = \"4s\"", 1))
            .expect("built-in");
        let lesson = crate::lesson::parse_with(&text, "test", crate::preset::load).expect("parses");
        let (mut app, _) = in_lesson(lesson);
        let clock = |app: &App| app.lesson.as_ref().map_or(-1.0, |p| p.clock_s);
        let before = clock(&app);
        assert!(
            key(&mut app, KeyCode::Char(' ')).is_empty(),
            "no Pause effect"
        );
        assert!(app.lesson.as_ref().is_some_and(|p| p.paused));
        assert!(!app.ui.paused, "sampling goes on");
        for t in 3..6 {
            app.update(Action::Batch(Box::new(batch(t))));
        }
        assert_eq!(clock(&app), before, "paused: the clock stands");
        assert_eq!(app.lesson.as_ref().map(|p| p.step), Some(0));
        key(&mut app, KeyCode::Char(' '));
        let mut moved = Vec::new();
        for t in 6..9 {
            moved.extend(app.update(Action::Batch(Box::new(batch(t)))));
        }
        assert_eq!(app.lesson.as_ref().map(|p| p.step), Some(1), "4 s passed");
        assert_eq!(applies(&moved), ["sys.rt_runtime_us=600000"]);
        // The step's check was judged on the samples: fifo took 90 % in the fixture.
        let p = app.lesson.as_ref().expect("playing");
        assert!(p.windows[0].is_some());
    }

    /// The built-in rt-throttle lesson with its first `set` line replaced by `lines`.
    fn rt_throttle_with(lines: &str) -> crate::lesson::Lesson {
        let text = crate::lesson::BUILTIN
            .iter()
            .find(|(n, _)| *n == "rt-throttle")
            .map(|(_, t)| t.replacen("set = [\"sys.rt_runtime_us=600000\"]", lines, 1))
            .expect("built-in");
        crate::lesson::parse_with(&text, "test", crate::preset::load).expect("parses")
    }

    #[test]
    fn a_step_with_a_question_shows_it_and_makes_its_change_on_right() {
        let lesson = rt_throttle_with(
            "question = \"What will fair's share do?\"\nset = [\"sys.rt_runtime_us=600000\"]",
        );
        let (mut app, _) = in_lesson(lesson);
        let screen = |app: &App| {
            let shown = crate::ui::tests::draw(100, 32, |f, _| crate::ui::render(f, app));
            shown
                .buffer()
                .content
                .iter()
                .map(|c| c.symbol())
                .collect::<String>()
        };
        // Step 2 asks first: nothing changes, its clock and check wait.
        assert!(applies(&key(&mut app, KeyCode::Right)).is_empty());
        let p = app.lesson.as_ref().expect("playing");
        assert_eq!((p.step, p.asking), (1, true));
        assert!(screen(&app).contains("What will fair's share do?"));
        for t in 3..80 {
            assert!(app.update(Action::Batch(Box::new(batch(t)))).is_empty());
        }
        let p = app.lesson.as_ref().expect("playing");
        assert_eq!((p.step, p.clock_s), (1, 0.0), "the question holds the step");
        assert!(p.outcome.is_none(), "nothing to judge before the change");
        // Right makes the change, and the step goes on as without a question.
        let e = key(&mut app, KeyCode::Right);
        assert_eq!(applies(&e), ["sys.rt_runtime_us=600000"]);
        let p = app.lesson.as_ref().expect("playing");
        assert_eq!((p.step, p.asking), (1, false));
        assert!(!screen(&app).contains("What will fair's share do?"));
        let e = key(&mut app, KeyCode::Right);
        assert_eq!(applies(&e), ["fifo.policy=other"]);
        // Back puts step 2's change back; a question not yet answered changed nothing.
        let e = key(&mut app, KeyCode::Left);
        assert_eq!(applies(&e), ["fifo.policy=fifo"]);
        let e = key(&mut app, KeyCode::Left);
        assert_eq!(applies(&e), ["sys.rt_runtime_us=950000"]);
        assert!(
            applies(&key(&mut app, KeyCode::Right)).is_empty(),
            "asks again"
        );
        assert!(applies(&key(&mut app, KeyCode::Left)).is_empty());
    }

    #[test]
    fn outside_a_lesson_space_and_the_arrows_keep_their_meaning() {
        let mut app = running_app();
        assert_eq!(key(&mut app, KeyCode::Char(' ')), [Effect::Pause(true)]);
        assert!(key(&mut app, KeyCode::Right).is_empty());
        assert!(app.ui.status.contains("replay"), "{}", app.ui.status);
    }

    #[test]
    fn l_lists_lessons_and_one_for_another_preset_switches_to_it() {
        let mut app = running_app();
        app.update(Action::Lessons(
            crate::lesson::list().into_iter().flatten().collect(),
            None,
        ));
        key(&mut app, KeyCode::Char('L'));
        assert_eq!(app.ui.mode, Mode::Lessons { selected: 0 });
        // The first is pipe-wakeup's; this workbench runs rt-throttle.
        let e = key(&mut app, KeyCode::Enter);
        assert_eq!(e, [Effect::Restart(Some("pipe-wakeup".into()))]);
        assert!(app.lesson.as_ref().is_some_and(|p| p.waiting));
        // The same preset's lesson starts it anew too (as written), then plays.
        let rt = app.lessons.iter().position(|l| l.name == "rt-throttle");
        app.ui.mode = Mode::Lessons {
            selected: rt.expect("listed"),
        };
        let e = key(&mut app, KeyCode::Enter);
        assert_eq!(e, [Effect::Restart(Some("rt-throttle".into()))]);
        app.update(Action::Started(Box::new(started())));
        assert!(app
            .lesson
            .as_ref()
            .is_some_and(|p| !p.waiting && p.step == 0));
        // L again leaves it.
        key(&mut app, KeyCode::Char('L'));
        assert!(app.lesson.is_none());
    }

    /// The knobs turned before `L` (issue: step 1 then judged the changed tasks).
    #[test]
    fn a_lesson_started_after_changes_starts_its_preset_as_written_and_puts_system_knobs_back() {
        let mut app = running_app();
        app.update(Action::SystemKnobs(knobs()));
        app.update(Action::Lessons(vec![rt_lesson()], None));
        for (setting, result) in [
            ("fifo.policy=batch", "applied to fifo"),
            ("fair.nice=2", "applied to fair"),
            ("fifo.cpus=0-1", "applied to fifo"),
            ("sys.rt_runtime_us=800000", "800000"),
        ] {
            app.update(Action::KnobResult {
                setting: setting.into(),
                result: Ok(result.into()),
            });
        }
        // The controller lists the system knobs after a change of one.
        let mut now = knobs();
        now[0].value = Some("800000".into());
        app.update(Action::SystemKnobs(now));
        key(&mut app, KeyCode::Char('L'));
        let e = key(&mut app, KeyCode::Enter);
        assert_eq!(
            applies(&e),
            [
                "sys.rt_runtime_us=950000".to_string(),
                format!("{:?}", Effect::Restart(Some("rt-throttle".into())))
            ],
            "the system knob as it was, then the preset started anew"
        );
        let p = app.lesson.as_ref().expect("the lesson");
        assert!(p.waiting, "step 1 waits for the preset started anew");
        assert!(
            app.ui.status.contains("as written") && app.ui.status.contains("950000"),
            "{}",
            app.ui.status
        );
        app.update(Action::KnobResult {
            setting: "sys.rt_runtime_us=950000".into(),
            result: Ok("950000".into()),
        });
        app.update(Action::SystemKnobs(knobs()));
        app.update(Action::Started(Box::new(started())));
        assert!(app
            .lesson
            .as_ref()
            .is_some_and(|p| !p.waiting && p.step == 0));
        assert!(app.in_force.is_empty(), "{:?}", app.in_force);
    }

    #[test]
    fn a_step_whose_change_did_nothing_is_not_judged() {
        let (mut app, _) = in_lesson(rt_lesson());
        key(&mut app, KeyCode::Right);
        key(&mut app, KeyCode::Right);
        // The spinner was made fair by hand before: the step's change finds it so.
        app.update(Action::KnobResult {
            setting: "fifo.policy=other".into(),
            result: Ok(crate::lab::session::NO_CHANGE.into()),
        });
        for t in 3..40 {
            app.update(Action::Batch(Box::new(batch(t))));
        }
        let p = app.lesson.as_ref().expect("playing");
        assert_eq!(p.step, 2);
        let o = p.outcome.as_ref().expect("an outcome");
        assert_ne!(o.verdict, crate::lesson::check::Verdict::Pass);
        assert!(
            o.text
                .starts_with("not judged: this step's change did nothing (fifo.policy=other"),
            "{}",
            o.text
        );
        // The caption says so, not "measuring".
        let shown = crate::ui::tests::draw(100, 32, |f, _| crate::ui::render(f, &app));
        let text: String = shown.buffer().content.iter().map(|c| c.symbol()).collect();
        assert!(text.contains("not judged"), "{text}");
        // A step whose change worked is judged as before.
        key(&mut app, KeyCode::Left);
        key(&mut app, KeyCode::Right);
        app.update(Action::KnobResult {
            setting: "fifo.policy=other".into(),
            result: Ok("applied to fifo".into()),
        });
        app.update(Action::Batch(Box::new(batch(40))));
        let p = app.lesson.as_ref().expect("playing");
        assert!(!p.step_did_nothing());
        assert!(p
            .outcome
            .as_ref()
            .is_some_and(|o| !o.text.starts_with("not judged")));
    }

    #[test]
    fn a_refusal_the_step_expects_is_its_effect_not_a_reason() {
        let lesson = rt_throttle_with(
            "set = [\"sys.rt_runtime_us=600000\"]\nexpect_refused = [\"sys.rt_runtime_us=600000\"]",
        );
        let (mut app, _) = in_lesson(lesson);
        key(&mut app, KeyCode::Right);
        app.update(Action::KnobResult {
            setting: "sys.rt_runtime_us=600000".into(),
            result: Err(crate::error::KnobError::Refused("EBUSY".into())),
        });
        app.update(Action::Batch(Box::new(batch(9))));
        let p = app.lesson.as_ref().expect("playing");
        assert!(p.refused[1].is_empty(), "{:?}", p.refused);
        assert!(
            !p.reasons.iter().any(|r| r.contains("EBUSY")),
            "{:?}",
            p.reasons
        );
    }

    #[test]
    fn a_refused_change_of_the_step_is_remembered_as_a_reason() {
        let (mut app, _) = in_lesson(rt_lesson());
        key(&mut app, KeyCode::Right);
        app.update(Action::KnobResult {
            setting: "sys.rt_runtime_us=600000".into(),
            result: Err(crate::error::KnobError::Refused("EPERM".into())),
        });
        app.update(Action::Batch(Box::new(batch(9))));
        let p = app.lesson.as_ref().expect("playing");
        assert_eq!(p.refused[1].len(), 1, "{:?}", p.refused);
        assert!(
            p.reasons.iter().any(|r| r.contains("EPERM")),
            "{:?}",
            p.reasons
        );
    }
}
