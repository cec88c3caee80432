//! App::update without a terminal: every action and every command.

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};

use super::*;

pub(crate) use crate::lab::fixtures::{batch, knobs, started};

pub(crate) fn running_app() -> App {
    let mut app = App::new(KeyMap::default(), Duration::from_millis(100), false);
    // The help names it: the same on every machine.
    app.keys_path = "/home/you/.config/schedlab/keys.toml".into();
    app.update(Action::Started(Box::new(started())));
    for t in 0..5 {
        app.update(Action::Batch(Box::new(batch(t))));
    }
    app.update(Action::SystemKnobs(knobs()));
    app.update(Action::Presets(vec![
        ("pipe-wakeup".into(), "pipes".into()),
        ("rt-throttle".into(), "rt".into()),
    ]));
    app
}

fn key(app: &mut App, code: KeyCode) -> Vec<Effect> {
    app.update(Action::Key(KeyEvent::new(code, KeyModifiers::NONE)))
}

fn chars(app: &mut App, text: &str) {
    for c in text.chars() {
        key(app, KeyCode::Char(c));
    }
}

/// Draw `app` as the TUI loop does before an event, and keep the frame's geometry.
fn redraw(app: &mut App) {
    let (w, h) = app.ui.size;
    let mut geometry = None;
    crate::ui::tests::draw(w, h, |f, _| geometry = Some(crate::ui::render(f, app)));
    app.drawn(geometry.expect("drawn"));
}

fn mouse(app: &mut App, kind: MouseEventKind, x: u16, y: u16) -> Vec<Effect> {
    redraw(app);
    app.update(Action::Mouse(MouseEvent {
        kind,
        column: x,
        row: y,
        modifiers: KeyModifiers::NONE,
    }))
}

fn click(app: &mut App, x: u16, y: u16) -> Vec<Effect> {
    mouse(app, MouseEventKind::Down(MouseButton::Left), x, y)
}

/// The screen row of the table's first task (below its title and headings).
fn table_rows(app: &App) -> u16 {
    let area = ratatui::layout::Rect::new(0, 0, app.ui.size.0, app.ui.size.1);
    crate::ui::layout(area, app).tasks.y + 2
}

fn applied(effects: &[Effect]) -> Vec<String> {
    effects
        .iter()
        .filter_map(|e| match e {
            Effect::Apply(s) => Some(s.to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn started_and_batches_fill_the_live_data() {
    let app = running_app();
    assert_eq!(app.live.tasks.len(), 2);
    assert_eq!(app.kernel, "6.18.0-test");
    let fifo = app.live.store.tasks[0].points.back().expect("rates");
    assert!((fifo.cpu_share - 0.9).abs() < 1e-6);
    assert_eq!(app.live.store.latest[1].nice(), Some(-20));
    assert!((app.live.now_s() - 4.0).abs() < 1e-9);
    assert!(!app.ui.status_is_error);
}

#[test]
fn warnings_at_start_show_as_an_error_status() {
    let mut app = App::new(KeyMap::default(), Duration::from_millis(100), false);
    let mut s = started();
    s.warnings = vec!["fifo: setting policy fifo failed: EPERM".into()];
    app.update(Action::Started(Box::new(s)));
    assert!(app.ui.status_is_error);
    assert!(app.ui.status.contains("EPERM"));
}

#[test]
fn quit_and_ctrl_c_quit_from_anywhere() {
    let mut app = running_app();
    assert_eq!(key(&mut app, KeyCode::Char('q')), vec![Effect::Quit]);
    assert!(app.quit);
    let mut app = running_app();
    key(&mut app, KeyCode::Char(':'));
    let fx = app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('c'),
        KeyModifiers::CONTROL,
    )));
    assert_eq!(fx, vec![Effect::Quit]);
}

#[test]
fn help_opens_and_any_key_closes_it() {
    let mut app = running_app();
    key(&mut app, KeyCode::Char('?'));
    assert_eq!(app.ui.mode, Mode::Help { scroll: 0 });
    key(&mut app, KeyCode::Char('x'));
    assert_eq!(app.ui.mode, Mode::Normal);
}

#[test]
fn selection_moves_and_wraps_in_both_panels_and_by_click() {
    let mut app = running_app();
    key(&mut app, KeyCode::Down);
    assert_eq!(app.ui.selected_task, 1);
    key(&mut app, KeyCode::Down);
    assert_eq!(app.ui.selected_task, 0, "wraps");
    key(&mut app, KeyCode::Up);
    assert_eq!(app.ui.selected_task, 1);
    key(&mut app, KeyCode::Tab);
    assert_eq!(app.ui.panel, Panel::Knobs);
    key(&mut app, KeyCode::Down);
    assert_eq!(app.ui.selected_knob, 1);
    let rows = table_rows(&app);
    click(&mut app, 5, rows);
    assert_eq!((app.ui.panel, app.ui.selected_task), (Panel::Tasks, 0));
    click(&mut app, 5, rows + 2);
    assert_eq!(
        app.ui.selected_task, 0,
        "a click below the tasks does nothing"
    );
}

#[test]
fn policy_choice_applies_the_chosen_policy_to_the_selected_task() {
    let mut app = running_app();
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Char('p'));
    let Mode::Choice { selected, .. } = &app.ui.mode else {
        panic!("{:?}", app.ui.mode)
    };
    assert_eq!(*selected, 0, "starts at the task's current policy (other)");
    key(&mut app, KeyCode::Down);
    let fx = key(&mut app, KeyCode::Enter);
    assert_eq!(applied(&fx), ["fair.policy=batch"]);
    assert_eq!(app.ui.mode, Mode::Normal);
}

#[test]
fn priority_and_slice_open_inputs_and_enter_applies_what_was_typed() {
    let mut app = running_app();
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('P'),
        KeyModifiers::SHIFT,
    )));
    let Mode::Input { buffer, .. } = &app.ui.mode else {
        panic!("{:?}", app.ui.mode)
    };
    assert_eq!(buffer, "1", "fifo's current priority");
    key(&mut app, KeyCode::Backspace);
    chars(&mut app, "50");
    assert_eq!(
        applied(&key(&mut app, KeyCode::Enter)),
        ["fifo.priority=50"]
    );
    key(&mut app, KeyCode::Char('s'));
    chars(&mut app, "3ms");
    assert_eq!(applied(&key(&mut app, KeyCode::Enter)), ["fifo.slice=3ms"]);
}

#[test]
fn esc_cancels_any_popup() {
    let mut app = running_app();
    key(&mut app, KeyCode::Char('c'));
    assert!(matches!(app.ui.mode, Mode::CpuPicker { .. }));
    assert!(key(&mut app, KeyCode::Esc).is_empty());
    assert_eq!(app.ui.mode, Mode::Normal);
}

#[test]
fn nice_keys_step_from_the_kernels_value_and_stop_at_the_range() {
    let mut app = running_app();
    key(&mut app, KeyCode::Down);
    assert_eq!(
        applied(&key(&mut app, KeyCode::Char('+'))),
        ["fair.nice=-19"]
    );
    assert!(key(&mut app, KeyCode::Char('-')).is_empty(), "already -20");
    assert!(app.ui.status_is_error && app.ui.status.contains("-20..19"));
}

#[test]
fn cpu_picker_toggles_and_refuses_an_empty_set() {
    let mut app = running_app();
    key(&mut app, KeyCode::Char('c'));
    let Mode::CpuPicker { cpus, .. } = &app.ui.mode else {
        panic!()
    };
    assert_eq!(cpus, &[true, false], "fifo is on CPU 0 only");
    key(&mut app, KeyCode::Char('1'));
    assert_eq!(applied(&key(&mut app, KeyCode::Enter)), ["fifo.cpus=0-1"]);
    key(&mut app, KeyCode::Char('c'));
    key(&mut app, KeyCode::Char(' '));
    assert!(key(&mut app, KeyCode::Enter).is_empty());
    assert!(app.ui.status.contains("at least one CPU"));
    key(&mut app, KeyCode::Char('a'));
    assert_eq!(applied(&key(&mut app, KeyCode::Enter)), ["fifo.cpus=0-1"]);
}

#[test]
fn knobs_panel_edits_writable_knobs_and_explains_read_only_ones() {
    let mut app = running_app();
    key(&mut app, KeyCode::Tab);
    key(&mut app, KeyCode::Enter);
    let Mode::Input { prefix, buffer, .. } = &app.ui.mode else {
        panic!("{:?}", app.ui.mode)
    };
    assert_eq!(
        (prefix.as_str(), buffer.as_str()),
        ("sys.rt_runtime_us=", "950000")
    );
    for _ in 0..6 {
        key(&mut app, KeyCode::Backspace);
    }
    chars(&mut app, "600000");
    assert_eq!(
        applied(&key(&mut app, KeyCode::Enter)),
        ["sys.rt_runtime_us=600000"]
    );
    key(&mut app, KeyCode::Down);
    assert!(key(&mut app, KeyCode::Enter).is_empty());
    assert!(app.ui.status.contains("lockdown") && app.ui.status_is_error);
}

#[test]
fn command_line_takes_any_setting_and_rejects_nonsense() {
    let mut app = running_app();
    key(&mut app, KeyCode::Char(':'));
    chars(&mut app, "fair.nice=5");
    assert_eq!(applied(&key(&mut app, KeyCode::Enter)), ["fair.nice=5"]);
    key(&mut app, KeyCode::Char(':'));
    chars(&mut app, "nonsense");
    assert!(key(&mut app, KeyCode::Enter).is_empty());
    assert!(app.ui.status.contains("TASK.KNOB=VALUE"));
}

#[test]
fn knob_results_mark_the_time_axis_or_explain_the_refusal() {
    let mut app = running_app();
    app.update(Action::KnobResult {
        setting: "fair.policy=batch".into(),
        result: Ok("applied to fair".into()),
    });
    assert_eq!(
        app.live.marks,
        vec![(4.0, "fair.policy -> batch".to_string())]
    );
    app.update(Action::KnobResult {
        setting: "fifo.policy=deadline".into(),
        result: Err(KnobError::refused("EBUSY: admission control")),
    });
    assert_eq!(app.live.marks.len(), 1, "refusals are not marks");
    assert!(app.ui.status_is_error && app.ui.status.contains("EBUSY"));
}

#[test]
fn a_refusal_names_its_setting_once_in_the_status_and_the_log() {
    let mut app = running_app();
    for (setting, why) in [
        // The knob layer named it: not again.
        ("fair.nice=50", "fair.nice=50: nice 50 is out of range"),
        // It did not: the line does.
        ("fifo.policy=deadline", "EBUSY: admission control"),
    ] {
        app.update(Action::KnobResult {
            setting: setting.into(),
            result: Err(KnobError::invalid(why)),
        });
        assert_eq!(
            app.ui.status.matches(setting).count(),
            1,
            "{}",
            app.ui.status
        );
        let logged = &app.ui.log.back().expect("logged").text;
        assert_eq!(logged, &app.ui.status);
    }
    assert_eq!(
        app.ui.status,
        "fifo.policy=deadline: EBUSY: admission control"
    );
    app.update(Action::KnobResult {
        setting: "fair.nice=3".into(),
        result: Ok("applied to fair".into()),
    });
    assert_eq!(app.ui.status, "fair.nice=3: applied to fair");
}

#[test]
fn pause_stops_taking_batches_and_tells_the_sampler() {
    let mut app = running_app();
    assert_eq!(key(&mut app, KeyCode::Char(' ')), vec![Effect::Pause(true)]);
    let before = app.live.now_s();
    app.update(Action::Batch(Box::new(batch(9))));
    assert_eq!(app.live.now_s(), before);
    assert_eq!(
        key(&mut app, KeyCode::Char(' ')),
        vec![Effect::Pause(false)]
    );
    app.update(Action::Batch(Box::new(batch(9))));
    assert!(app.live.now_s() > before);
}

#[test]
fn a_replay_shows_the_interval_its_recording_was_sampled_at_and_live_the_one_asked_for() {
    let sampled_at = |replay: bool| {
        let mut app = running_app();
        app.replay = replay;
        let mut b = batch(9);
        b.interval_ns = 250_000_000;
        app.update(Action::Batch(Box::new(b)));
        app.ui.interval.get()
    };
    assert_eq!(sampled_at(true), Duration::from_millis(250));
    assert_eq!(sampled_at(false), Duration::from_millis(100));
}

#[test]
fn interval_and_zoom_step_through_their_ranges() {
    let mut app = running_app();
    // What the controller hands each experiment's sampler: the same value, not a copy.
    let sampler_view = app.ui.interval.clone();
    assert_eq!(
        key(&mut app, KeyCode::Char(']')),
        vec![Effect::IntervalChanged]
    );
    assert_eq!(sampler_view.get(), Duration::from_millis(200));
    // A second press before the sampler ran a round steps from the first one's value.
    key(&mut app, KeyCode::Char(']'));
    assert_eq!(sampler_view.get(), Duration::from_millis(500));
    assert_eq!(
        key(&mut app, KeyCode::Char('[')),
        vec![Effect::IntervalChanged]
    );
    assert_eq!(sampler_view.get(), Duration::from_millis(200));
    for _ in 0..3 {
        key(&mut app, KeyCode::Char('['));
    }
    assert_eq!(
        sampler_view.get(),
        Duration::from_millis(50),
        "stops at the fastest"
    );
    key(&mut app, KeyCode::Char('z'));
    assert_eq!(app.ui.window_s, 30.0);
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('Z'),
        KeyModifiers::SHIFT,
    )));
    assert_eq!(app.ui.window_s, 60.0);
}

#[test]
fn restart_presets_note_and_record_ask_for_their_effects() {
    let mut app = running_app();
    let fx = app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('R'),
        KeyModifiers::SHIFT,
    )));
    assert_eq!(fx, vec![Effect::Restart(None)]);
    key(&mut app, KeyCode::Char('o'));
    assert_eq!(
        app.ui.mode,
        Mode::Presets { selected: 1 },
        "starts on the current preset"
    );
    key(&mut app, KeyCode::Up);
    assert_eq!(
        key(&mut app, KeyCode::Enter),
        vec![Effect::Restart(Some("pipe-wakeup".into()))]
    );
    key(&mut app, KeyCode::Char('n'));
    assert!(app.ui.show_note);
    assert_eq!(
        key(&mut app, KeyCode::Char('r')),
        vec![Effect::ToggleRecord]
    );
    app.update(Action::Recording(Ok(Some("/tmp/x.jsonl".into()))));
    assert_eq!(app.recording.as_deref(), Some("/tmp/x.jsonl"));
    app.update(Action::Recording(Ok(None)));
    assert!(app.recording.is_none() && app.ui.status.contains("saved"));
}

#[test]
fn errors_resizes_and_replays() {
    let mut app = running_app();
    app.update(Action::Error("preset x failed".into()));
    assert!(app.ui.status_is_error);
    app.update(Action::Resize(100, 30));
    assert_eq!(app.ui.size, (100, 30));
    app.replay = true;
    assert!(key(&mut app, KeyCode::Char('p')).is_empty());
    assert!(app.ui.status.contains("read-only"));
    assert_eq!(
        key(&mut app, KeyCode::Char(' ')),
        vec![Effect::Pause(true)],
        "pause still works"
    );
}

#[test]
fn latency_presets_get_per_interval_percentiles() {
    let mut app = App::new(KeyMap::default(), Duration::from_millis(100), false);
    let mut s = started();
    s.tasks[0].measures_latency = true;
    app.update(Action::Started(Box::new(s)));
    for t in 0..3u64 {
        let mut b = batch(t);
        b.tasks[0].latency =
            crate::histogram::Histogram::from_values((0..(t + 1) * 100).map(|v| 1000 + v));
        app.update(Action::Batch(Box::new(b)));
    }
    assert_eq!(app.live.store.latency.len(), 3);
    let l = app.live.store.latency[2];
    assert!(l.p50_ns >= 1000 && l.p99_ns >= l.p50_ns, "{l:?}");
    assert_eq!(l.count, 100, "the third batch added 100 latencies");
}

#[test]
fn the_header_flags_foreign_load_and_rt_tasks_holding_every_cpu() {
    let mut app = App::new(KeyMap::default(), Duration::from_millis(100), false);
    app.update(Action::Started(Box::new(started())));
    for t in 0..3 {
        app.update(Action::Batch(Box::new(batch(t))));
    }
    // fifo holds 0.9 of CPU 0; CPU 1 is free: one CPU held, the terminal has the other.
    assert_eq!(app.live.store.cpus_held_by_rt(), 1);
    // The batches' CPU 0 is 98 % busy, the tasks use 100 % of it... and CPU 1 is 5 %
    // busy with nobody of ours on it, but only CPU 0 is the experiment's: no flag.
    assert_eq!(app.live.store.foreign_now(), None);
    // Another program takes CPU 0's fair share: busy stays, the tasks lose 0.5 CPU.
    let mut b = batch(3);
    if let Some(ss) = b.tasks[0].schedstat.as_mut() {
        ss.run_ns -= 500_000_000;
    }
    app.update(Action::Batch(Box::new(b)));
    let f = app.live.store.foreign_now().expect("flagged");
    assert!((f - 0.5).abs() < 0.05, "{f}");
}

/// A trace interval at `t` seconds of the fixtures' clock: fair woke with `p50`/`p99` us
/// of latency and was preempted by fifo `n` times so far.
pub(crate) fn trace_batch(t: u64, p50: f64, p99: f64, n: u64) -> crate::trace::TraceBatch {
    use crate::trace::{Preemptor, TaskInterval, TraceBatch};
    let fair = TaskInterval {
        tid: 101,
        switches_in: 10,
        wakeups: 10,
        preempted: 2,
        blocked: 8,
        wakeup_p50_us: p50,
        wakeup_p99_us: p99,
        ..TaskInterval::default()
    };
    TraceBatch {
        t_ns: 1_000_000_000 + t * 1_000_000_000,
        tasks: vec![
            TaskInterval {
                tid: 100,
                ..TaskInterval::default()
            },
            fair,
        ],
        events: 100,
        lost: 0,
        preemptors: vec![
            (100, Vec::new()),
            (
                101,
                vec![
                    Preemptor {
                        comm: "fifo".into(),
                        pid: 100,
                        count: n,
                    },
                    Preemptor {
                        comm: "kworker/0:1".into(),
                        pid: 17,
                        count: 3,
                    },
                ],
            ),
            // Not one of the experiment's: ignored.
            (999, Vec::new()),
        ],
    }
}

/// The running app with the trace on and three intervals of it.
pub(crate) fn tracing_app() -> App {
    let mut app = running_app();
    key(&mut app, KeyCode::Char('t'));
    app.update(Action::Tracing(Ok(true)));
    for (t, p50, p99, n) in [
        (2, 12.0, 80.0, 40),
        (3, 15.0, 120.0, 90),
        (4, 9.0, 60.0, 1200),
    ] {
        app.update(Action::Trace(Box::new(trace_batch(t, p50, p99, n))));
    }
    app
}

#[test]
fn t_asks_for_the_trace_and_says_what_came_of_it() {
    let mut app = running_app();
    assert_eq!(
        key(&mut app, KeyCode::Char('t')),
        vec![Effect::SetTracing(true)]
    );
    assert!(!app.tracing, "on only once the controller says so");
    assert!(app.ui.status.contains("starting the scheduler trace"));
    app.update(Action::Tracing(Ok(true)));
    assert!(app.tracing && !app.ui.status_is_error);
    assert!(
        app.ui
            .status
            .starts_with("tracing on: x writes the last 30 s"),
        "{}",
        app.ui.status
    );
    assert_eq!(
        key(&mut app, KeyCode::Char('t')),
        vec![Effect::SetTracing(false)]
    );
    app.update(Action::Tracing(Ok(false)));
    assert!(!app.tracing && app.ui.status == "tracing off");
}

#[test]
fn a_refused_trace_is_one_error_line_and_stays_off() {
    let mut app = running_app();
    key(&mut app, KeyCode::Char('t'));
    let refusal = crate::trace::TraceError::NotRoot {
        paranoid: "2".into(),
    };
    app.update(Action::Tracing(Err(refusal.clone())));
    assert!(!app.tracing && app.ui.status_is_error);
    assert_eq!(app.ui.status, refusal.to_string());
    assert!(!app.ui.status.contains('\n'));
    // Refused while on (a restart, or after an export): it says the trace stopped.
    app.update(Action::Tracing(Ok(true)));
    app.update(Action::Tracing(Err(crate::trace::TraceError::NoCpus)));
    assert!(!app.tracing && app.ui.status.starts_with("tracing stopped: no CPUs"));
}

#[test]
fn trace_batches_fill_the_store_and_the_latest_preemptors() {
    let app = tracing_app();
    let fair = &app.live.store.trace[1];
    assert_eq!(fair.len(), 3);
    let (t, iv) = fair[2];
    assert!((t - 4.0).abs() < 1e-9, "on the samples' clock: {t}");
    assert_eq!((iv.wakeup_p50_us, iv.wakeup_p99_us), (9.0, 60.0));
    assert_eq!(app.live.store.trace[0].len(), 3, "fifo by its tid");
    assert_eq!(app.live.store.trace_events, 300);
    let top = &app.live.store.preemptors[1];
    assert_eq!(top.len(), 2);
    assert_eq!((top[0].pid, top[0].count), (100, 1200), "the latest totals");
    assert!(app.live.store.preemptors[0].is_empty());
    assert!(app.trace_in_view());
    // A new experiment starts with no trace data of the last one.
    let mut app = app;
    app.update(Action::Started(Box::new(started())));
    assert!(app.live.store.trace.iter().all(|s| s.is_empty()));
    assert!(app.live.store.preemptors.iter().all(Vec::is_empty));
    assert!(
        app.tracing,
        "the controller traces the restarted workload too"
    );
}

#[test]
fn paused_the_trace_stands_still_like_the_samples() {
    let mut app = tracing_app();
    key(&mut app, KeyCode::Char(' '));
    app.update(Action::Trace(Box::new(trace_batch(5, 1.0, 2.0, 5000))));
    assert_eq!(app.live.store.trace[1].len(), 3);
    assert_eq!(app.live.store.preemptors[1][0].count, 1200);
}

#[test]
fn x_writes_a_timeline_only_while_tracing() {
    let mut app = running_app();
    assert!(key(&mut app, KeyCode::Char('x')).is_empty());
    assert!(app.ui.status_is_error);
    assert!(app.ui.status.contains("press t"), "{}", app.ui.status);
    let mut app = tracing_app();
    assert_eq!(key(&mut app, KeyCode::Char('x')), vec![Effect::ExportTrace]);
    assert_eq!(app.ui.status, "writing the timeline...");
    // A second x while the worker writes is refused; the first goes on.
    assert!(key(&mut app, KeyCode::Char('x')).is_empty());
    assert!(
        app.ui.status.contains("being written already"),
        "{}",
        app.ui.status
    );
    app.update(Action::TraceExportProgress {
        written: 524_288,
        total: 1_048_576,
    });
    assert_eq!(
        app.ui.status,
        "writing the timeline: 50 % (524,288 of 1,048,576 events)"
    );
    assert!(!app.ui.status_is_error);
    let log = app.ui.log.len();
    app.update(Action::TraceExported(Ok(crate::app::Exported {
        path: "/tmp/schedlab-trace-1.pftrace".into(),
        window: crate::report::perfetto::KeptWindow {
            span_ns: 4_800_000_000,
            events: 1_048_576,
            asked: Duration::from_secs(30),
            capped_at: Some(1_048_576),
        },
        written: crate::report::perfetto::Written {
            switches: 700_000,
            wakeups: 348_000,
            marks: 1,
        },
    })));
    assert_eq!(
        app.ui.status,
        "timeline written: /tmp/schedlab-trace-1.pftrace: 700,000 switches, 348,000 wake-ups, 1 knob change; last 4.8 s (1,048,576 events; 30 s asked, capped at 1,048,576 events); open it in ui.perfetto.dev"
    );
    assert_eq!(
        app.ui.log.len(),
        log + 1,
        "progress is not logged, the outcome is"
    );
    // Written: x works again.
    assert_eq!(key(&mut app, KeyCode::Char('x')), vec![Effect::ExportTrace]);
    app.update(Action::TraceExported(Err(TimelineError::Write(
        "creating the timeline /tmp/x: File exists".into(),
    ))));
    assert!(app.ui.status_is_error && app.ui.status.contains("File exists"));
}

#[test]
fn a_replay_refuses_tracing_and_says_it_works_live() {
    let mut app = running_app();
    app.replay = true;
    for c in ['t', 'x'] {
        assert!(key(&mut app, KeyCode::Char(c)).is_empty());
        assert!(app.ui.status_is_error);
        assert!(app.ui.status.contains("only live"), "{}", app.ui.status);
    }
}

#[test]
fn trace_and_export_keys_can_be_rebound() {
    let km =
        KeyMap::from_toml("[keys]\ntrace = \"f6\"\nexport_trace = \"ctrl-t\"\n").expect("parses");
    let mut app = App::new(km, Duration::from_millis(100), false);
    app.update(Action::Started(Box::new(started())));
    assert!(
        key(&mut app, KeyCode::Char('t')).is_empty(),
        "t is free now"
    );
    assert_eq!(key(&mut app, KeyCode::F(6)), vec![Effect::SetTracing(true)]);
    app.update(Action::Tracing(Ok(true)));
    assert!(app.ui.status.contains("ctrl-t writes"), "{}", app.ui.status);
    let fx = app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('t'),
        KeyModifiers::CONTROL,
    )));
    assert_eq!(fx, vec![Effect::ExportTrace]);
}

#[test]
fn a_refused_setting_is_named_once() {
    let mut app = running_app();
    let why = "fair.nice=50: nice 50 is out of range: allowed -20..19 (20 is clamped to 19)";
    app.update(Action::KnobResult {
        setting: "fair.nice=50".into(),
        result: Err(KnobError::invalid(why)),
    });
    assert_eq!(app.ui.status, why);
    assert!(app.ui.status_is_error);
    app.update(Action::KnobResult {
        setting: "fair.nice=5".into(),
        result: Ok("applied to fair".into()),
    });
    assert_eq!(app.ui.status, "fair.nice=5: applied to fair");
}

#[test]
fn sort_cycles_the_columns_and_reverses_and_the_selection_follows_the_order() {
    let mut app = running_app();
    assert_eq!(app.task_view(), [0, 1], "the preset's order");
    let press_sort = |app: &mut App| {
        app.update(Action::Key(KeyEvent::new(
            KeyCode::Char('S'),
            KeyModifiers::SHIFT,
        )))
    };
    press_sort(&mut app);
    assert_eq!(
        app.ui.sort,
        Some(Sort {
            column: Column::Task,
            reverse: false
        })
    );
    assert_eq!(app.task_view(), [1, 0], "fair before fifo");
    // On to NICE: fair is at -20, fifo at 0 (smallest first).
    while app.ui.sort.map(|s| s.column) != Some(Column::Nice) {
        press_sort(&mut app);
    }
    assert_eq!(app.task_view(), [1, 0]);
    // CPU%: fifo runs 90 %, fair 10 %: biggest first.
    while app.ui.sort.map(|s| s.column) != Some(Column::Cpu) {
        press_sort(&mut app);
    }
    assert_eq!(app.task_view(), [0, 1]);
    assert!(
        app.ui.status.contains("CPU% (biggest first)"),
        "{}",
        app.ui.status
    );
    app.update(Action::Key(KeyEvent::new(
        KeyCode::Char('I'),
        KeyModifiers::SHIFT,
    )));
    assert_eq!(app.task_view(), [1, 0], "reversed");
    // Down moves in the table's order: from fair (first row) to fifo.
    app.ui.selected_task = 1;
    key(&mut app, KeyCode::Down);
    assert_eq!(app.ui.selected_task, 0);
    // Past the last column (PROGRESS, four on): the preset's order again.
    for _ in 0..4 {
        press_sort(&mut app);
    }
    assert_eq!(app.ui.sort.map(|s| s.column), Some(Column::Progress));
    press_sort(&mut app);
    assert_eq!(app.ui.sort, None);
    assert_eq!(app.task_view(), [0, 1]);
    assert!(app.ui.status.contains("preset's order"));
}

#[test]
fn the_fairness_column_sorts_only_in_fairness_presets() {
    let app = running_app();
    assert!(
        !app.columns().contains(&Column::Ideal),
        "rt-throttle: share"
    );
    let mut app = App::new(KeyMap::default(), Duration::from_millis(100), false);
    let mut s = started();
    s.preset.headline = crate::preset::Headline::Fairness;
    s.preset.metric_task = "fifo".into();
    s.tasks[1].group = "fifo".into();
    app.update(Action::Started(Box::new(s)));
    for t in 0..12 {
        app.update(Action::Batch(Box::new(batch(t))));
    }
    assert!(app.columns().contains(&Column::Ideal));
    // Both on CPU 0 only: one CPU by nice weight, fair's nice -20 (88761) against
    // fifo's nice 0 (1024) - what the report's water-filling gives.
    let w = crate::ideal::water_fill(&[1024.0, 88761.0], 1);
    assert_eq!(app.live.ideal, vec![Some(w[0]), Some(w[1])]);
    // The last second measured fifo at 0.9 and fair at 0.1 of a CPU.
    let (_, err) = *app.live.fairness.back().expect("an error per sample");
    let want = crate::ideal::fairness_error(&[0.9, 0.1], &w);
    assert!((err - want).abs() < 1e-9, "{err} {want}");
    app.ui.sort = Some(Sort {
        column: Column::Ideal,
        reverse: false,
    });
    assert_eq!(app.task_view(), [1, 0], "fair's ideal share is the larger");
}

#[test]
fn the_filter_narrows_the_table_as_it_is_typed_and_esc_clears_it() {
    let mut app = running_app();
    key(&mut app, KeyCode::Char('/'));
    assert_eq!(app.ui.mode, Mode::Filter);
    chars(&mut app, "FA");
    assert_eq!(app.task_view(), [1], "any case");
    assert_eq!(
        app.ui.selected_task, 1,
        "the selection moves to a shown task"
    );
    // Letters are the filter's while typing, not commands: q did not quit.
    chars(&mut app, "q");
    assert!(!app.quit && app.task_view().is_empty());
    key(&mut app, KeyCode::Backspace);
    key(&mut app, KeyCode::Enter);
    assert_eq!(app.ui.mode, Mode::Normal);
    assert_eq!(app.ui.filter, "FA");
    assert!(app.ui.status.contains("1 of 2 tasks"), "{}", app.ui.status);
    // Up/down stay among the shown tasks.
    key(&mut app, KeyCode::Down);
    assert_eq!(app.ui.selected_task, 1);
    // A filter that hides every task leaves nothing to change.
    key(&mut app, KeyCode::Char('/'));
    chars(&mut app, "zzz");
    key(&mut app, KeyCode::Enter);
    assert!(app.selected_task().is_none());
    assert!(key(&mut app, KeyCode::Char('p')).is_empty());
    assert!(app.ui.status.contains("no task selected"));
    key(&mut app, KeyCode::Char('/'));
    key(&mut app, KeyCode::Esc);
    assert_eq!((app.ui.filter.as_str(), app.task_view()), ("", vec![0, 1]));
}

#[test]
fn the_mouse_selects_sorts_presses_hints_and_scrolls() {
    let mut app = running_app();
    app.update(Action::Resize(80, 24));
    let rows = table_rows(&app);
    click(&mut app, 3, rows + 1);
    assert_eq!(app.ui.selected_task, 1, "the second row");
    // The headings are the row above the tasks; CPU% is a column of its own.
    let heading = |app: &App, name: &str| {
        let backend = crate::ui::tests::draw(80, 24, |f, _| crate::ui::render(f, app));
        let line: String = (0..80)
            .map(|x| backend.buffer()[(x, rows - 1)].symbol().to_string())
            .collect();
        line.find(name).expect("heading on screen") as u16
    };
    let x = heading(&app, "CPU%");
    click(&mut app, x, rows - 1);
    assert_eq!(
        app.ui.sort,
        Some(Sort {
            column: Column::Cpu,
            reverse: false
        })
    );
    click(&mut app, x + 1, rows - 1);
    assert_eq!(
        app.ui.sort.map(|s| s.reverse),
        Some(true),
        "again: reversed"
    );
    // The wheel over the table moves the selection in the table's order.
    assert_eq!(app.task_view(), [1, 0]);
    app.ui.selected_task = 1;
    mouse(&mut app, MouseEventKind::ScrollDown, 3, rows);
    assert_eq!(app.ui.selected_task, 0);
    // The footer's hints are keys: quit is at the right end of the last line.
    let hints = crate::ui::footer::hints(&app, 80);
    let quit = hints
        .iter()
        .find(|h| h.what == "quit")
        .expect("quit is always shown");
    assert_eq!(click(&mut app, quit.x + 1, 23), vec![Effect::Quit]);
}

#[test]
fn the_mouse_picks_knobs_and_scrolls_the_note_and_the_log() {
    let mut app = running_app();
    app.update(Action::Resize(200, 50));
    if let Some(p) = app.preset.as_mut() {
        p.note = (0..60)
            .map(|n| format!("Paragraph {n} of the note."))
            .collect::<Vec<_>>()
            .join("\n\n");
    }
    let area = ratatui::layout::Rect::new(0, 0, 200, 50);
    let r = crate::ui::layout(area, &app);
    let side = r.side.expect("a side column at 200 columns");
    click(&mut app, side.knobs.x + 2, side.knobs.y + 2);
    assert_eq!((app.ui.panel, app.ui.selected_knob), (Panel::Knobs, 1));
    let note = side.note.expect("the note beside the graphs");
    mouse(&mut app, MouseEventKind::ScrollDown, note.x + 2, note.y + 3);
    assert_eq!(app.ui.note_scroll, 3);
    mouse(&mut app, MouseEventKind::ScrollUp, note.x + 2, note.y + 3);
    mouse(&mut app, MouseEventKind::ScrollUp, note.x + 2, note.y + 3);
    assert_eq!(app.ui.note_scroll, 0, "not above the top");
    for _ in 0..100 {
        key(&mut app, KeyCode::PageDown);
    }
    let max = crate::ui::geometry(area, &app).note_max_scroll;
    assert!(max > 0 && app.ui.note_scroll == max, "stops at the end");
    // The log opens on its latest line; the wheel scrolls it, a click closes it.
    for n in 0..80 {
        app.update(Action::Error(format!("error number {n}")));
    }
    key(&mut app, KeyCode::Char('l'));
    redraw(&mut app);
    let bottom = crate::ui::popup::log_max_scroll(area, &app);
    assert!(bottom > 0);
    assert_eq!(app.ui.mode, Mode::Log { scroll: bottom });
    mouse(&mut app, MouseEventKind::ScrollUp, 100, 25);
    assert_eq!(app.ui.mode, Mode::Log { scroll: bottom - 3 });
    click(&mut app, 100, 25);
    assert_eq!(app.ui.mode, Mode::Normal);
}

#[test]
fn every_status_message_goes_to_the_log_with_its_time() {
    let mut app = running_app();
    app.update(Action::Error("preset x failed".into()));
    let last = app.ui.log.back().expect("logged");
    assert_eq!(
        (last.text.as_str(), last.error, last.t_s),
        ("preset x failed", true, 4.0)
    );
    assert!(app
        .ui
        .log
        .iter()
        .any(|e| e.text.contains("rt-throttle running")));
    for n in 0..(LOG_KEEP + 10) {
        app.update(Action::Error(format!("e{n}")));
    }
    assert_eq!(app.ui.log.len(), LOG_KEEP, "bounded");
    assert_eq!(app.ui.log.back().map(|e| e.text.as_str()), Some("e1009"));
}

#[test]
fn hints_name_the_keys_as_bound() {
    let km = KeyMap::from_toml("[keys]\npolicy = \"F2\"\nhelp = \"f10\"\nlog = \"L\"\n")
        .expect("parses");
    let mut app = App::new(km, Duration::from_millis(100), false);
    app.update(Action::Started(Box::new(started())));
    assert!(
        app.ui.status.starts_with(
            "rt-throttle running: select a task and press F2, +/-, c or s; F10 for help"
        ),
        "{}",
        app.ui.status
    );
    assert!(
        key(&mut app, KeyCode::Char('p')).is_empty(),
        "p is free now"
    );
    assert!(matches!(
        key(&mut app, KeyCode::F(2)).as_slice(),
        [] if matches!(app.ui.mode, Mode::Choice { .. })
    ));
}

/// A nice ladder of `n` busy loops (nice 0, 1, ...) with five-digit pids, sampled at
/// `t` seconds: the busiest gets about a CPU's tenth, each step down a bit less.
pub(crate) fn ladder_batch(n: usize, t: u64) -> Batch {
    use crate::cpuset::CpuSet;
    use crate::sampler::parse::{SchedFile, Schedstat, StatFile};
    let sample = |id: usize| {
        let share = 0.19 / (1.0 + id as f64 * 0.25);
        let run = (t as f64 * share * 1e9) as u64;
        TaskSample {
            id,
            alive: true,
            sched: SchedFile {
                sum_exec_runtime_ns: Some(run),
                nr_switches: Some(t * (40 - id as u64)),
                nr_voluntary_switches: Some(0),
                nr_involuntary_switches: Some(t * (40 - id as u64)),
                nr_migrations: Some(t * (id as u64 % 3)),
                policy: Some(0),
                prio: Some(120 + id as i32),
                ..Default::default()
            },
            schedstat: Some(Schedstat {
                run_ns: run,
                wait_ns: (t as f64 * (1.0 - share) * 1e9) as u64,
                timeslices: t * 40,
            }),
            stat: Some(StatFile {
                processor: Some((id % 2) as u32),
                nice: id as i32,
                ..StatFile::default()
            }),
            cpus_allowed: Some(
                CpuSet::new()
                    .union(&CpuSet::single(0))
                    .union(&CpuSet::single(1)),
            ),
            progress: t * (387_000_000 / (id as u64 + 1)),
            ..TaskSample::default()
        }
    };
    let cpu = |busy: u64, steal: u64| crate::sampler::parse::CpuTimes {
        user: t * busy,
        steal: t * steal,
        idle: t * (100 - busy - steal),
        ..Default::default()
    };
    Batch {
        seq: t,
        t_ns: 1_000_000_000 + t * 1_000_000_000,
        tasks: (0..n).map(sample).collect(),
        system: crate::sampler::SystemSample {
            cpus: vec![cpu(97, 3), cpu(96, 4)],
            ..Default::default()
        },
        ..Batch::default()
    }
}

/// nice-ladder with `n` tasks, twelve seconds in.
pub(crate) fn ladder_app(n: usize) -> App {
    let mut app = App::new(KeyMap::default(), Duration::from_millis(100), false);
    app.keys_path = "/home/you/.config/schedlab/keys.toml".into();
    let mut s = started();
    s.preset.name = "nice-ladder".into();
    s.preset.summary =
        "Busy loops at nice 0,1,...,20: does CPU share follow the kernel's nice weights?".into();
    s.preset.note = include_str!("../../presets/nice-ladder.toml")
        .split("\"\"\"")
        .nth(1)
        .unwrap_or_default()
        .to_string();
    s.preset.headline = crate::preset::Headline::Fairness;
    s.preset.metric_task = "busy".into();
    s.preset.focus = vec!["busy.nice".into()];
    s.tasks = (0..n)
        .map(|k| TaskInfo {
            name: format!("busy-{k}"),
            group: "busy".into(),
            // nice-ladder's busy loops are processes of their own.
            pid: 12935 + k as i32,
            tid: 12935 + k as i32,
            progress_unit: "iterations".into(),
            measures_latency: false,
        })
        .collect();
    app.update(Action::Started(Box::new(s)));
    for t in 0..13 {
        app.update(Action::Batch(Box::new(ladder_batch(n, t))));
    }
    app.update(Action::SystemKnobs(knobs()));
    app
}

#[test]
fn a_ladder_has_ideal_shares_and_a_fairness_error() {
    let app = ladder_app(21);
    let ideal: Vec<f64> = app.live.ideal.iter().map(|s| s.expect("each")).collect();
    assert!(
        (ideal.iter().sum::<f64>() - 2.0).abs() < 1e-9,
        "two CPUs shared"
    );
    // Down the ladder; nice 20 is clamped to 19's weight.
    assert!(ideal.windows(2).all(|w| w[0] >= w[1]) && ideal[0] > ideal[20]);
    let (t, err) = *app.live.fairness.back().expect("one per sample");
    assert!((t - 12.0).abs() < 1e-9);
    assert!(err > 0.0 && err < 1.0, "{err}");
}

/// Tasks of the attached fixture: (name, pid, tid). `app` has two workers, `sh` forked
/// `sleep`; `io` is a thread of `app` that joins later (after the others in task order).
const ATTACHED: [(&str, i32, i32); 6] = [
    ("app", 4200, 4200),
    ("worker-4201", 4200, 4201),
    ("worker-4202", 4200, 4202),
    ("sh", 4300, 4300),
    ("sleep", 4301, 4301),
    ("io", 4200, 4210),
];

/// Which task gets the ladder's k-th busiest share: worker-4202 is the busiest, then
/// sleep, app, worker-4201, sh, io.
const ATTACHED_BUSY: [usize; 6] = [2, 4, 0, 1, 3, 5];

/// A batch of the first `n` attached tasks at `t` seconds.
fn attached_batch(n: usize, t: u64) -> Batch {
    let mut b = ladder_batch(6, t);
    for s in &mut b.tasks {
        s.id = ATTACHED_BUSY[s.id];
    }
    b.tasks.retain(|s| s.id < n);
    b.tasks.sort_by_key(|s| s.id);
    b
}

fn attached_info(k: usize) -> TaskInfo {
    let (name, pid, tid) = ATTACHED[k];
    TaskInfo {
        name: name.into(),
        group: name.into(),
        pid,
        tid,
        // procfs has no progress for a process schedlab did not start.
        progress_unit: String::new(),
        measures_latency: false,
    }
}

/// `schedlab tui --pid 4200,4300` twelve seconds in: processes with threads, a child,
/// and a thread that joined while it ran.
pub(crate) fn attached_app() -> App {
    let mut app = App::new(KeyMap::default(), Duration::from_millis(100), false);
    app.keys_path = "/home/you/.config/schedlab/keys.toml".into();
    let mut s = started();
    s.preset = PresetView {
        name: "attached".into(),
        summary: "5 thread(s) of 3 process(es) schedlab did not start (app first)".into(),
        note: "schedlab attached to processes it did not start.".into(),
        focus: Vec::new(),
        headline: crate::preset::Headline::Share,
        metric_task: "app".into(),
    };
    s.tasks = (0..5).map(attached_info).collect();
    app.update(Action::Started(Box::new(s)));
    for t in 0..6 {
        app.update(Action::Batch(Box::new(attached_batch(5, t))));
    }
    app.update(Action::Joined(vec![attached_info(5)]));
    for t in 6..13 {
        app.update(Action::Batch(Box::new(attached_batch(6, t))));
    }
    app.update(Action::SystemKnobs(knobs()));
    app
}

fn glyphs(app: &App) -> Vec<(String, &'static str)> {
    app.task_tree()
        .into_iter()
        .map(|(i, b)| (app.live.tasks[i].name.clone(), b.glyph()))
        .collect()
}

#[test]
fn threads_sit_under_their_process_and_a_late_thread_joins_them() {
    let app = attached_app();
    assert_eq!(
        glyphs(&app),
        [
            ("app".to_string(), ""),
            ("worker-4201".to_string(), "├─ "),
            ("worker-4202".to_string(), "├─ "),
            ("io".to_string(), "└─ "),
            ("sh".to_string(), ""),
            ("sleep".to_string(), ""),
        ]
    );
    // Down walks the rows as shown: from app's last thread to sh.
    let mut app = app;
    app.ui.selected_task = 5;
    key(&mut app, KeyCode::Down);
    assert_eq!(app.ui.selected_task, 3);
}

#[test]
fn a_sort_orders_threads_within_their_process_and_processes_by_their_first_row() {
    let mut app = attached_app();
    app.ui.sort = Some(Sort {
        column: Column::Cpu,
        reverse: false,
    });
    // worker-4202 is the busiest task: its process comes first, app's row on top and
    // its threads busiest first; then sleep (2nd busiest), then sh.
    assert_eq!(app.task_view(), [0, 2, 1, 5, 4, 3]);
    app.ui.sort = Some(Sort {
        column: Column::Task,
        reverse: true,
    });
    // Names Z to A: processes by their own name (sleep, sh, app), threads within.
    assert_eq!(app.task_view(), [4, 3, 0, 2, 1, 5]);
}

#[test]
fn a_filter_that_matches_a_thread_keeps_its_process_row() {
    let mut app = attached_app();
    key(&mut app, KeyCode::Char('/'));
    chars(&mut app, "WORK");
    key(&mut app, KeyCode::Enter);
    assert_eq!(
        glyphs(&app),
        [
            ("app".to_string(), ""),
            ("worker-4201".to_string(), "├─ "),
            ("worker-4202".to_string(), "└─ "),
        ]
    );
    assert!(app.passes_filter(0), "app's row stays, for its threads");
    assert!(!app.passes_filter(5) && !app.passes_filter(3));
    // A thread's process row can be selected and changed like any row.
    app.ui.selected_task = 0;
    assert_eq!(app.selected_task().map(|t| t.name.as_str()), Some("app"));
    assert!(app.ui.status.contains("3 of 6 tasks"), "{}", app.ui.status);
}

#[test]
fn after_a_restart_picked_processes_join_again_and_an_exited_one_is_said_once() {
    let mut app = running_app();
    // The restart's fresh start: the preset's two tasks.
    app.update(Action::Started(Box::new(started())));
    let sleeper = TaskInfo {
        name: "sleep".into(),
        group: "sleep".into(),
        pid: 4301,
        tid: 4301,
        progress_unit: String::new(),
        measures_latency: false,
    };
    let logged = app.ui.log.len();
    app.update(Action::Reattached {
        tasks: vec![sleeper],
        kept: vec!["sleep (pid 4301)".into()],
        gone: vec!["make (pid 4400)".into()],
    });
    assert_eq!(app.live.tasks.len(), 3);
    assert_eq!(app.live.store.tasks.len(), 3, "sampled like the others");
    assert_eq!(
        app.ui.status,
        "attached again: sleep (pid 4301); exited since it was picked, so no longer attached: make (pid 4400)"
    );
    assert!(app.ui.status_is_error, "an exit is news");
    assert_eq!(app.ui.log.len(), logged + 1, "one line");
    app.update(Action::Reattached {
        tasks: Vec::new(),
        kept: vec!["sleep (pid 4301)".into()],
        gone: Vec::new(),
    });
    assert_eq!(app.ui.status, "attached again: sleep (pid 4301)");
    assert!(!app.ui.status_is_error);
}

#[test]
fn input_boxes_take_the_line_editing_keys() {
    let mut app = running_app();
    key(&mut app, KeyCode::Char('s'));
    let ctrl = |c| Action::Key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL));
    // Pre-filled with the current value: Ctrl-U clears it (it typed a `u`).
    app.update(ctrl('u'));
    chars(&mut app, "3ms");
    key(&mut app, KeyCode::Home);
    key(&mut app, KeyCode::Delete);
    chars(&mut app, "2");
    assert_eq!(applied(&key(&mut app, KeyCode::Enter)), ["fifo.slice=2ms"]);
    // The command line: Ctrl-W takes back the value, Left moves into the text.
    key(&mut app, KeyCode::Char(':'));
    chars(&mut app, "fair.nice=19");
    app.update(ctrl('w'));
    chars(&mut app, "5");
    key(&mut app, KeyCode::Left);
    chars(&mut app, "1");
    assert_eq!(applied(&key(&mut app, KeyCode::Enter)), ["fair.nice=15"]);
    // The task filter: Ctrl-U empties it.
    key(&mut app, KeyCode::Char('/'));
    chars(&mut app, "fa");
    app.update(ctrl('u'));
    assert_eq!(app.ui.filter, "");
}

#[test]
fn a_replay_says_its_own_keys_not_the_knobs() {
    let mut app = App::new(KeyMap::default(), Duration::from_millis(100), false);
    app.replay = true;
    app.update(Action::Started(Box::new(started())));
    let status = app.ui.status.clone();
    assert!(
        status.starts_with("rt-throttle replay: space plays/pauses, ,/. a sample, left/right 10 s; knobs read-only"),
        "{status}"
    );
    assert!(!status.contains("+/-"), "{status}");
}

#[test]
fn what_is_in_force_survives_r_and_a_preset_started_anew_keeps_only_system_knobs() {
    let mut app = running_app();
    for (setting, result) in [
        ("fair.nice=2", "applied to fair"),
        ("sys.rt_runtime_us=600000", "600000"),
        ("fair.nice=3", "applied to fair"),
    ] {
        app.update(Action::KnobResult {
            setting: setting.into(),
            result: Ok(result.into()),
        });
    }
    let in_force = |app: &App| {
        app.in_force
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(in_force(&app), ["sys.rt_runtime_us=600000", "fair.nice=3"]);
    // `R` restarts with the changes.
    assert_eq!(key(&mut app, KeyCode::Char('R')), [Effect::Restart(None)]);
    app.update(Action::Started(Box::new(started())));
    assert_eq!(in_force(&app), ["sys.rt_runtime_us=600000", "fair.nice=3"]);
    // A preset started anew: its tasks as written, the system knob still changed.
    app.presets = vec![("rt-throttle".into(), String::new())];
    key(&mut app, KeyCode::Char('o'));
    assert_eq!(
        key(&mut app, KeyCode::Enter),
        [Effect::Restart(Some("rt-throttle".into()))]
    );
    app.update(Action::Started(Box::new(started())));
    assert_eq!(in_force(&app), ["sys.rt_runtime_us=600000"]);
}
