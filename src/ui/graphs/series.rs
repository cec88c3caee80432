//! What the graphs plot: the window, the busiest tasks, series thinned to the plot's columns.

use std::collections::VecDeque;

use super::MAX_LINES;
use crate::app::App;
use crate::lab::store::TaskRates;

/// One line of a chart.
pub(super) struct Series {
    pub(super) name: String,
    pub(super) points: Vec<(f64, f64)>,
}

pub(super) fn window(app: &App) -> (f64, f64) {
    let now = app.live.now_s();
    (
        (now - app.ui.window_s).max(0.0),
        now.max(app.ui.window_s.min(10.0)),
    )
}

/// The points of a time series inside `[from, to]`, at most a few per column of the
/// plot: the first, lowest, highest and last of each (drawing every 20 ms sample of a
/// minute is thousands of lines through the same cells).
pub(super) fn decimate(
    points: impl Iterator<Item = (f64, f64)>,
    from: f64,
    to: f64,
    columns: usize,
) -> Vec<(f64, f64)> {
    let scale = columns.max(1) as f64 / (to - from).max(1e-9);
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut bucket: Option<(i64, [(f64, f64); 4])> = None;
    let flush = |out: &mut Vec<(f64, f64)>, b: [(f64, f64); 4]| {
        let [first, low, high, last] = b;
        let (a, c) = if low.0 <= high.0 {
            (low, high)
        } else {
            (high, low)
        };
        for p in [first, a, c, last] {
            if out.last() != Some(&p) {
                out.push(p);
            }
        }
    };
    for p in points {
        // Truncation is floor here (the points start at `from`), without a libm call
        // per point.
        let k = ((p.0 - from) * scale) as i64;
        match &mut bucket {
            Some((key, b)) if *key == k => {
                if p.1 < b[1].1 {
                    b[1] = p;
                }
                if p.1 > b[2].1 {
                    b[2] = p;
                }
                b[3] = p;
            }
            _ => {
                if let Some((_, b)) = bucket.take() {
                    flush(&mut out, b);
                }
                bucket = Some((k, [p; 4]));
            }
        }
    }
    if let Some((_, b)) = bucket {
        flush(&mut out, b);
    }
    out
}

/// The first index of a time-sorted series at or after `from`.
pub(super) fn start<T>(points: &VecDeque<T>, from: f64, t: impl Fn(&T) -> f64) -> usize {
    points.partition_point(|p| t(p) < from)
}

/// The tasks to draw, busiest first, at most MAX_LINES, in task order.
pub(super) fn busiest(app: &App) -> Vec<usize> {
    let shown = app.in_table();
    let mut ids: Vec<usize> = (0..app.live.tasks.len()).filter(|&i| shown[i]).collect();
    let share = |i: &usize| {
        app.live
            .store
            .tasks
            .get(*i)
            .and_then(|s| s.points.back())
            .map_or(0.0, |r| r.cpu_share)
    };
    ids.sort_by(|a, b| share(b).total_cmp(&share(a)).then(a.cmp(b)));
    ids.truncate(MAX_LINES);
    ids.sort();
    ids
}

pub(super) fn task_series(
    app: &App,
    ids: &[usize],
    (from, to): (f64, f64),
    columns: usize,
    value: impl Fn(&TaskRates) -> Option<f64>,
) -> Vec<Series> {
    ids.iter()
        .filter_map(|&i| {
            let series = app.live.store.tasks.get(i)?;
            let first = start(&series.points, from, |r| r.t_s);
            let points = decimate(
                series
                    .points
                    .range(first..)
                    .filter_map(|r| Some((r.t_s, value(r)?))),
                from,
                to,
                columns,
            );
            Some(Series {
                name: app
                    .live
                    .tasks
                    .get(i)
                    .map_or_else(String::new, |t| t.name.clone()),
                points,
            })
        })
        .collect()
}

/// The tasks whose wakeup latency to draw: the selected one first, then the worst p99 in
/// the window; only tasks with a wake-up measured in it; at most `max`, in task order
/// (a task keeps its colour while others come and go).
pub(super) fn traced_tasks(app: &App, from: f64, max: usize) -> Vec<usize> {
    let worst = |i: usize| {
        app.live.store.trace.get(i).map_or(0.0, |s| {
            s.range(start(s, from, |p| p.0)..)
                .map(|(_, iv)| iv.wakeup_p99_us)
                .fold(0.0, f64::max)
        })
    };
    let selected = app.ui.selected_task;
    let shown = app.in_table();
    let mut ids: Vec<(usize, f64)> = (0..app.live.tasks.len())
        .filter(|&i| shown[i])
        .map(|i| (i, worst(i)))
        .filter(|(_, w)| *w > 0.0)
        .collect();
    ids.sort_by(|a, b| {
        (b.0 == selected)
            .cmp(&(a.0 == selected))
            .then(b.1.total_cmp(&a.1))
            .then(a.0.cmp(&b.0))
    });
    ids.truncate(max);
    let mut ids: Vec<usize> = ids.into_iter().map(|(i, _)| i).collect();
    ids.sort_unstable();
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimation_keeps_the_extremes_and_the_ends_of_each_column() {
        // A minute at 20 ms with one spike: 3000 points into 10 columns.
        let pts = (0..3000).map(|k| {
            let t = k as f64 * 0.02;
            (t, if k == 1234 { 99.0 } else { 1.0 })
        });
        let out = decimate(pts, 0.0, 60.0, 10);
        assert!(out.len() <= 10 * 2 * 4, "{}", out.len());
        assert!(out.contains(&(1234.0 * 0.02, 99.0)), "the spike stays");
        assert_eq!(out.first(), Some(&(0.0, 1.0)));
        assert_eq!(out.last(), Some(&(2999.0 * 0.02, 1.0)));
        assert!(out.windows(2).all(|w| w[0].0 <= w[1].0), "in time order");
    }
}
