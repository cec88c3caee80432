//! Wakeup latency per task from the scheduler trace.

use ratatui::layout::Rect;
use ratatui::Frame;

use super::chart::{columns, draw, micros_us, Legend, Scale, Spec};
use super::series::Series;
use super::series::{decimate, start, traced_tasks, window};
use super::{MAX_TRACE_TASKS, ROOMY_CHART};
use crate::app::App;

/// Wakeup latency (sched_waking to switched in) per trace interval, p50 and p99 per
/// task, in microseconds. Intervals without a wake-up have no point.
pub(super) fn render_wakeup(frame: &mut Frame, area: Rect, app: &App) {
    let (from, to) = window(app);
    let roomy = area.height >= ROOMY_CHART;
    let ids = traced_tasks(app, from, if roomy { MAX_TRACE_TASKS } else { 1 });
    let name = |i: usize| app.live.tasks.get(i).map_or("", |t| t.name.as_str());
    let pts = |i: usize, f: fn(&crate::trace::TaskInterval) -> f64| -> Vec<(f64, f64)> {
        app.live.store.trace.get(i).map_or_else(Vec::new, |s| {
            decimate(
                s.range(start(s, from, |p| p.0)..)
                    .filter(|(_, iv)| f(iv) > 0.0)
                    .map(|(t, iv)| (*t, f(iv))),
                from,
                to,
                columns(area),
            )
        })
    };
    let mut series = Vec::new();
    for &i in &ids {
        // One task: its name is in the title, the legend says which line is which.
        let prefix = if roomy {
            format!("{} ", name(i))
        } else {
            String::new()
        };
        series.push(Series {
            name: format!("{prefix}p50"),
            points: pts(i, |iv| iv.wakeup_p50_us),
        });
        series.push(Series {
            name: format!("{prefix}p99"),
            points: pts(i, |iv| iv.wakeup_p99_us),
        });
    }
    let title = match (ids.as_slice(), roomy) {
        ([], _) => "wakeup latency (trace): no wake-ups yet".to_string(),
        ([one], false) => format!("wakeup latency (trace) {}", name(*one)),
        _ => "wakeup latency (trace)".to_string(),
    };
    draw(
        frame,
        area,
        app,
        Spec {
            title,
            series,
            scale: Scale::Auto {
                floor: 10.0,
                fmt: micros_us,
            },
            legend: Legend::Own,
            hint: &[],
        },
    );
}
