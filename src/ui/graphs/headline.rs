//! The preset's headline graph: throughput, latency or the fairness error.

use ratatui::layout::Rect;
use ratatui::Frame;

use super::chart::{columns, draw, micros, per_s, percent, Legend, Scale, Spec};
use super::series::Series;
use super::series::{decimate, start, window};
use super::tasks::render_wait;
use crate::app::App;
use crate::preset::Headline;

/// The preset's headline: latency percentiles once there are any, the fairness error,
/// or else the metric group's throughput.
pub(super) fn render_headline(frame: &mut Frame, area: Rect, app: &App, ids: &[usize]) {
    let headline = app
        .preset
        .as_ref()
        .map(|p| (p.headline, p.metric_task.clone()));
    match headline {
        Some((Headline::Latency, group)) if !app.live.store.latency.is_empty() => {
            render_latency(frame, area, app, &group)
        }
        Some((Headline::Fairness, group)) => render_fairness(frame, area, app, &group),
        Some((_, group)) if !has_progress(app, &group) => render_wait(frame, area, app, ids),
        Some((_, group)) => render_throughput(frame, area, app, group),
        None => draw(
            frame,
            area,
            app,
            Spec {
                title: "throughput".into(),
                series: Vec::new(),
                scale: Scale::Auto {
                    floor: 1.0,
                    fmt: per_s,
                },
                legend: Legend::Own,
                hint: &[],
            },
        ),
    }
}

pub(super) fn render_latency(frame: &mut Frame, area: Rect, app: &App, group: &str) {
    let (from, to) = window(app);
    let latency = &app.live.store.latency;
    let first = start(latency, from, |p| p.t_s);
    let pts = |f: fn(&crate::lab::store::LatencyInterval) -> f64| {
        decimate(
            latency.range(first..).map(|p| (p.t_s, f(p))),
            from,
            to,
            columns(area),
        )
    };
    let series = vec![
        Series {
            name: "p50".into(),
            points: pts(|p| p.p50_ns as f64),
        },
        Series {
            name: "p99".into(),
            points: pts(|p| p.p99_ns as f64),
        },
    ];
    draw(
        frame,
        area,
        app,
        Spec {
            title: format!("{group} latency per switch"),
            series,
            scale: Scale::Auto {
                floor: 1000.0,
                fmt: micros,
            },
            legend: Legend::Own,
            hint: &[],
        },
    );
}

/// The fraction of CPU time that went to the wrong task of the group (its ideal shares
/// are in the table's IDEAL% column), over the last second at each sample.
pub(super) fn render_fairness(frame: &mut Frame, area: Rect, app: &App, group: &str) {
    let (from, to) = window(app);
    let f = &app.live.fairness;
    let first = start(f, from, |p| p.0);
    let points = decimate(
        f.range(first..).map(|(t, e)| (*t, e * 100.0)),
        from,
        to,
        columns(area),
    );
    let now = f
        .back()
        .map_or_else(|| "-".to_string(), |(_, e)| format!("{:.1}%", e * 100.0));
    draw(
        frame,
        area,
        app,
        Spec {
            title: format!("{group} fairness error {now} (vs IDEAL%)"),
            series: vec![Series {
                name: "CPU time to the wrong task".into(),
                points,
            }],
            scale: Scale::Auto {
                floor: 10.0,
                fmt: percent,
            },
            legend: Legend::Title,
            hint: &[],
        },
    );
}

/// Whether the group's tasks count progress (an attached process and a command
/// without --progress do not: they have no throughput to draw).
pub(super) fn has_progress(app: &App, group: &str) -> bool {
    app.live
        .tasks
        .iter()
        .any(|t| t.group == group && !t.progress_unit.is_empty())
}

/// The group's progress summed over its tasks, sample by sample.
pub(super) fn render_throughput(frame: &mut Frame, area: Rect, app: &App, group: String) {
    let (from, to) = window(app);
    let members: Vec<usize> = app
        .live
        .tasks
        .iter()
        .enumerate()
        .filter(|(_, t)| t.group == group)
        .map(|(i, _)| i)
        .collect();
    let unit = members
        .first()
        .and_then(|&i| app.live.tasks.get(i))
        .map_or("", |t| t.progress_unit.as_str())
        .to_string();
    let sum = &app.live.throughput;
    let first = start(sum, from, |p| p.0);
    let all = if members.len() > 1 {
        format!(" (all {})", members.len())
    } else {
        String::new()
    };
    let title = if unit.is_empty() {
        format!("{group}{all} throughput")
    } else {
        format!("{group}{all} {unit}/s")
    };
    let name = group;
    draw(
        frame,
        area,
        app,
        Spec {
            title,
            series: vec![Series {
                name,
                points: decimate(sum.range(first..).copied(), from, to, columns(area)),
            }],
            scale: Scale::Auto {
                floor: 1.0,
                fmt: per_s,
            },
            legend: Legend::Title,
            hint: &[],
        },
    );
}
