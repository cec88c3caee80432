//! Snapshots of every screen region through ratatui's TestBackend (insta).

use ratatui::backend::TestBackend;
use ratatui::layout::Rect;
use ratatui::Terminal;

use crate::app::tests::running_app;
use crate::app::{Action, App, Mode, Panel};

fn draw(width: u16, height: u16, f: impl FnOnce(&mut ratatui::Frame, Rect)) -> TestBackend {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).expect("test terminal");
    terminal.draw(|frame| f(frame, frame.area())).expect("draw");
    terminal.backend().clone()
}

fn app_with_change() -> App {
    let mut app = running_app();
    app.update(Action::KnobResult {
        setting: "fair.policy=batch".into(),
        result: Ok("applied to fair".into()),
    });
    for t in 5..8 {
        app.update(Action::Batch(Box::new(crate::app::tests::batch(t))));
    }
    app
}

#[test]
fn header() {
    let app = app_with_change();
    insta::assert_snapshot!(draw(80, 1, |f, a| super::header::render(f, a, &app)));
}

#[test]
fn task_table() {
    let app = app_with_change();
    insta::assert_snapshot!(draw(80, 5, |f, a| super::tasks::render(f, a, &app)));
}

#[test]
fn graphs_with_a_knob_change_mark() {
    let app = app_with_change();
    insta::assert_snapshot!(draw(100, 20, |f, a| super::graphs::render(f, a, &app)));
}

#[test]
fn knobs_panel_selected_read_only_knob_says_why() {
    let mut app = app_with_change();
    app.ui.panel = Panel::Knobs;
    app.ui.selected_knob = 1;
    insta::assert_snapshot!(draw(44, 6, |f, a| super::knobs::render(f, a, &app)));
}

#[test]
fn teaching_note() {
    let app = app_with_change();
    insta::assert_snapshot!(draw(44, 6, |f, a| super::note::render(f, a, &app)));
}

#[test]
fn status_and_keys() {
    let app = app_with_change();
    insta::assert_snapshot!(draw(80, 2, |f, a| {
        let [s, k] =
            ratatui::layout::Layout::vertical([ratatui::layout::Constraint::Length(1); 2]).areas(a);
        super::footer::render_status(f, s, &app);
        super::footer::render_keys(f, k, &app);
    }));
}

#[test]
fn whole_screen_at_80x24() {
    let app = app_with_change();
    insta::assert_snapshot!(draw(80, 24, |f, _| super::render(f, &app)));
}

#[test]
fn whole_screen_at_120x36_has_the_side_panel() {
    let app = app_with_change();
    insta::assert_snapshot!(draw(120, 36, |f, _| super::render(f, &app)));
}

#[test]
fn too_small_says_so() {
    let app = app_with_change();
    insta::assert_snapshot!(draw(60, 10, |f, _| super::render(f, &app)));
}

/// The app with the policy popup open as the running app opens it: the fair task
/// selected, `p` pressed.
fn policy_popup_of_fair(base: &App) -> App {
    use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
    let mut app = base.clone();
    for code in [KeyCode::Down, KeyCode::Char('p')] {
        app.update(Action::Key(KeyEvent::new(code, KeyModifiers::NONE)));
    }
    let Mode::Choice {
        title,
        options,
        selected,
        knob,
    } = &app.ui.mode
    else {
        panic!("p opens a choice: {:?}", app.ui.mode)
    };
    assert_eq!(
        (title.as_str(), knob.as_str()),
        ("fair: policy", "fair.policy")
    );
    // Every policy a task can be given, the fair task's current one (other) chosen.
    assert_eq!(
        options,
        &["other", "batch", "idle", "fifo", "rr", "deadline"]
    );
    assert_eq!(*selected, 0);
    app
}

#[test]
fn popups() {
    let base = app_with_change();
    let modes = [
        ("help", Mode::Help),
        ("input", Mode::input("fair.slice", "fair.slice=", "3ms")),
        (
            "cpus",
            Mode::CpuPicker {
                task: "fair".into(),
                cpus: vec![true, false],
                cursor: 1,
            },
        ),
        ("presets", Mode::Presets { selected: 1 }),
    ];
    for (name, mode) in modes {
        let mut app = base.clone();
        app.ui.mode = mode;
        insta::assert_snapshot!(
            format!("popup_{name}"),
            draw(80, 24, |f, _| super::render(f, &app))
        );
    }
    let app = policy_popup_of_fair(&base);
    insta::assert_snapshot!("popup_policy", draw(80, 24, |f, _| super::render(f, &app)));
}

#[test]
fn task_rows_map_to_clicks() {
    let app = app_with_change();
    let r = super::layout(Rect::new(0, 0, 80, 24), &app);
    assert_eq!(super::task_at(&r, &app, r.tasks.y + 2), Some(0));
    assert_eq!(super::task_at(&r, &app, r.tasks.y + 3), Some(1));
    assert_eq!(super::task_at(&r, &app, r.tasks.y), None, "the title row");
    assert_eq!(
        super::task_at(&r, &app, r.tasks.y + 4),
        None,
        "below the last task"
    );
}

#[test]
fn replay_screen_says_replay_and_offers_its_keys() {
    let mut app = app_with_change();
    app.replay = true;
    app.ui.paused = true;
    insta::assert_snapshot!(draw(80, 24, |f, _| super::render(f, &app)));
}

#[test]
fn no_color_uses_no_colours_but_shapes_and_reverse_video() {
    let mut app = app_with_change();
    app.no_color = true;
    let colours = |s: ratatui::style::Style| s.fg.is_some() || s.bg.is_some();
    assert!(!colours(super::theme::series(&app, 1)));
    assert!(!colours(super::theme::mark(&app)));
    assert!(!colours(super::theme::selected(&app)));
    assert!(super::theme::selected(&app)
        .add_modifier
        .contains(ratatui::style::Modifier::REVERSED));
    assert_ne!(
        super::theme::marker(&app, 0),
        super::theme::marker(&app, 1),
        "lines differ by shape"
    );
    let backend = draw(80, 24, |f, _| super::render(f, &app));
    let coloured_cells = backend
        .buffer()
        .content
        .iter()
        .filter(|c| c.fg != ratatui::style::Color::Reset || c.bg != ratatui::style::Color::Reset)
        .count();
    assert_eq!(coloured_cells, 0, "NO_COLOR: not one coloured cell");
    app.no_color = false;
    let backend = draw(80, 24, |f, _| super::render(f, &app));
    assert!(backend
        .buffer()
        .content
        .iter()
        .any(|c| c.fg != ratatui::style::Color::Reset));
}

/// The app with a knob change and the trace on, fair selected (the one that waits).
fn app_tracing() -> App {
    let mut app = crate::app::tests::tracing_app();
    app.update(Action::KnobResult {
        setting: "fair.policy=batch".into(),
        result: Ok("applied to fair".into()),
    });
    for t in 5..8 {
        app.update(Action::Batch(Box::new(crate::app::tests::batch(t))));
    }
    for (t, p50, p99) in [(5, 11.0, 70.0), (6, 14.0, 150.0), (7, 10.0, 90.0)] {
        let b = crate::app::tests::trace_batch(t, p50, p99, 1500 + t);
        app.update(Action::Trace(Box::new(b)));
    }
    app.ui.selected_task = 1;
    app
}

#[test]
fn header_says_trace_while_tracing() {
    let app = app_tracing();
    insta::assert_snapshot!(draw(90, 1, |f, a| super::header::render(f, a, &app)));
}

#[test]
fn graphs_short_of_room_put_wakeup_latency_in_place_of_per_cpu() {
    let app = app_tracing();
    insta::assert_snapshot!(draw(100, 20, |f, a| super::graphs::render(f, a, &app)));
}

#[test]
fn graphs_with_room_give_wakeup_latency_a_row_of_its_own() {
    let app = app_tracing();
    insta::assert_snapshot!(draw(110, 40, |f, a| super::graphs::render(f, a, &app)));
}

#[test]
fn preemptors_panel_lists_the_selected_tasks_top_preemptors() {
    let app = app_tracing();
    insta::assert_snapshot!(draw(44, 6, |f, a| super::preempt::render(f, a, &app)));
}

#[test]
fn preemptors_line_where_there_is_no_side_column() {
    let mut app = app_tracing();
    insta::assert_snapshot!(
        "preemptors_line_fair",
        draw(80, 1, |f, a| super::preempt::render(f, a, &app))
    );
    app.ui.selected_task = 0;
    insta::assert_snapshot!(
        "preemptors_line_fifo",
        draw(80, 1, |f, a| super::preempt::render(f, a, &app))
    );
}

#[test]
fn whole_screen_tracing_at_80x24() {
    let app = app_tracing();
    insta::assert_snapshot!(draw(80, 24, |f, _| super::render(f, &app)));
}

#[test]
fn whole_screen_tracing_at_160x48() {
    let app = app_tracing();
    insta::assert_snapshot!(draw(160, 48, |f, _| super::render(f, &app)));
}

#[test]
fn the_trace_leaves_the_screen_once_off_and_out_of_the_window() {
    let mut app = app_tracing();
    app.update(Action::Tracing(Ok(false)));
    assert!(app.trace_in_view(), "its data is still in the window");
    app.ui.window_s = 2.0;
    for t in 8..12 {
        app.update(Action::Batch(Box::new(crate::app::tests::batch(t))));
    }
    assert!(!app.trace_in_view());
    let r = super::layout(Rect::new(0, 0, 80, 24), &app);
    assert_eq!(r.preempt, None);
    let wide = super::layout(Rect::new(0, 0, 160, 48), &app);
    assert_eq!(wide.preempt, None);
}

#[test]
fn task_rows_map_to_clicks_while_tracing() {
    let app = app_tracing();
    for (w, h) in [(80, 24), (160, 48)] {
        let r = super::layout(Rect::new(0, 0, w, h), &app);
        assert_eq!(super::task_at(&r, &app, r.tasks.y + 2), Some(0));
        assert_eq!(super::task_at(&r, &app, r.tasks.y + 3), Some(1));
        assert!(r.preempt.is_some());
    }
}
