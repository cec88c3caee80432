//! Per-CPU busy and steal.

use ratatui::layout::Rect;
use ratatui::Frame;

use super::chart::{columns, draw, Legend, Scale, Spec};
use super::series::Series;
use super::series::{decimate, start, window};
use super::CPU_LINES;
use crate::app::App;

/// Busy per CPU (their mean and the busiest one's when there are many), and steal
/// averaged over the CPUs.
pub(super) fn render_cpus(frame: &mut Frame, area: Rect, app: &App) {
    let (from, to) = window(app);
    let cpus = &app.live.store.cpus;
    let cols = columns(area);
    type Rates = crate::lab::store::CpuRates;
    let firsts: Vec<usize> = cpus.iter().map(|p| start(p, from, |p| p.0)).collect();
    let firsts = &firsts;
    let line = |k: usize, f: fn(&Rates) -> f64| {
        decimate(
            cpus[k]
                .range(firsts[k]..)
                .map(move |(t, r)| (*t, f(r) * 100.0)),
            from,
            to,
            cols,
        )
    };
    // Across CPUs, sample by sample (every CPU is in every round of /proc/stat).
    let across = |max: bool, f: fn(&Rates) -> f64| {
        let n = (0..cpus.len())
            .map(|k| cpus[k].len() - firsts[k])
            .min()
            .unwrap_or(0);
        let point = move |j: usize| {
            let values = (0..cpus.len()).filter_map(|k| cpus[k].get(firsts[k] + j));
            let t = cpus[0].get(firsts[0] + j).map_or(0.0, |p| p.0);
            let v = if max {
                values.map(|(_, r)| f(r)).fold(0.0, f64::max)
            } else {
                values.map(|(_, r)| f(r)).sum::<f64>() / cpus.len() as f64
            };
            (t, v * 100.0)
        };
        decimate((0..n).map(point), from, to, cols)
    };
    let mut series: Vec<Series> = if cpus.len() <= CPU_LINES {
        (0..cpus.len())
            .map(|k| Series {
                name: format!("cpu{k}"),
                points: line(k, |r| r.busy),
            })
            .collect()
    } else {
        vec![
            Series {
                name: format!("mean of {}", cpus.len()),
                points: across(false, |r| r.busy),
            },
            Series {
                name: "busiest".into(),
                points: across(true, |r| r.busy),
            },
        ]
    };
    if !cpus.is_empty() {
        series.push(Series {
            name: "steal".into(),
            points: across(false, |r| r.steal),
        });
    }
    draw(
        frame,
        area,
        app,
        Spec {
            title: "CPU busy %".into(),
            series,
            scale: Scale::Percent,
            legend: Legend::Own,
            hint: &[],
        },
    );
}
