//! The per-task graphs: CPU share, context switches and run-queue wait.

use ratatui::layout::Rect;
use ratatui::Frame;

use super::chart::{columns, draw, per_s, Legend, Scale, Spec};
use super::series::{task_series, window};
use crate::app::App;

pub(super) fn render_cpu_share(frame: &mut Frame, area: Rect, app: &App, ids: &[usize]) {
    let shown = app.in_table().into_iter().filter(|s| *s).count();
    let title = if shown > ids.len() {
        format!("CPU share % (busiest {} of {shown})", ids.len())
    } else {
        "CPU share %".to_string()
    };
    let series = task_series(app, ids, window(app), columns(area), |r| {
        Some(r.cpu_share * 100.0)
    });
    draw(
        frame,
        area,
        app,
        Spec {
            title,
            series,
            scale: Scale::Percent,
            legend: Legend::Shared,
            hint: &[],
        },
    );
}

pub(super) fn render_switches(frame: &mut Frame, area: Rect, app: &App, ids: &[usize]) {
    let series = task_series(app, ids, window(app), columns(area), |r| {
        Some(r.switches_per_s)
    });
    draw(
        frame,
        area,
        app,
        Spec {
            title: "switches/s".into(),
            series,
            scale: Scale::Auto {
                floor: 10.0,
                fmt: per_s,
            },
            legend: Legend::Shared,
            hint: &[],
        },
    );
}

/// What procfs tells without a progress rate: each task's run-queue wait (schedstat's
/// wait time over the interval) as a share of wall time, for the tasks of the legend.
pub(super) fn render_wait(frame: &mut Frame, area: Rect, app: &App, ids: &[usize]) {
    let series = task_series(app, ids, window(app), columns(area), |r| {
        r.wait_share.map(|w| w * 100.0)
    });
    draw(
        frame,
        area,
        app,
        Spec {
            title: "run-queue wait % of wall time".into(),
            series,
            scale: Scale::Percent,
            legend: Legend::Shared,
            hint: &[
                "no progress rate: a command run with --progress stdout-lines|stdout-bytes has a throughput",
                "throughput: a command with --progress stdout-lines|stdout-bytes",
                "throughput: --progress stdout-lines|stdout-bytes",
                "throughput: --progress stdout-lines",
            ],
        },
    );
}
