//! The curves figure: several histograms or curves on one linear or logarithmic x axis.

use std::ops::Range;

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::style::{
    color, footed, legend, line_chart, linear_top, si_tick, titled, trim_number, Axes, Line, Mark,
    LEGEND_W,
};

pub(super) fn draw_curves<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    log_x: bool,
    series: &[(String, Vec<(f64, f64)>)],
    footer: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let root = &footed(root, footer)?;
    let body = titled(root, title, "")?;
    let (w, _) = body.dim_in_pixel();
    let (plot, side) = body.split_horizontally(w.saturating_sub(LEGEND_W));
    let n = series.len();
    let lines = drawable(series, log_x);
    let (x, y, empty) = ranges(&lines, log_x);
    let note = empty.then_some("no data");
    let plot = plot.margin(10, 10, 10, 10);
    let x_fmt: fn(&f64) -> String = if log_x {
        |v| si_tick(*v)
    } else {
        |v| trim_number(*v)
    };
    let axes = Axes {
        x_desc: x_label,
        y_desc: y_label,
        x_fmt: &x_fmt,
        y_fmt: &|v| trim_number(*v),
        y_labels: 8,
        y_break: None,
    };
    if log_x {
        line_chart(
            &plot,
            x.log_scale(),
            y.clone(),
            &y,
            &lines,
            &[],
            &axes,
            note,
        )?;
    } else {
        line_chart(&plot, x, y.clone(), &y, &lines, &[], &axes, note)?;
    }
    let entries: Vec<(String, RGBColor, Mark)> = series
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (name.clone(), color(i, n), Mark::Line))
        .collect();
    legend(&side, 16, &entries)
}

/// Each series as a line in its colour, without the points the axes cannot show (not
/// finite, or at or below 0 on a log x axis).
fn drawable(series: &[(String, Vec<(f64, f64)>)], log_x: bool) -> Vec<Line> {
    let n = series.len();
    series
        .iter()
        .enumerate()
        .map(|(i, (_, pts))| Line {
            color: color(i, n),
            width: 2,
            points: pts
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite() && (!log_x || *x > 0.0))
                .collect(),
        })
        .collect()
}

/// The x and y ranges that show every point (y always includes 0), and whether there
/// is none (the x range is then a placeholder).
fn ranges(lines: &[Line], log_x: bool) -> (Range<f64>, Range<f64>, bool) {
    let all = || lines.iter().flat_map(|l| l.points.iter());
    let x_lo = all().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x_hi = all().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let y_lo = all().map(|p| p.1).fold(0.0, f64::min);
    let y_hi = all().map(|p| p.1).fold(0.0, f64::max);
    let empty = !x_lo.is_finite();
    let x = if empty {
        1.0..10.0
    } else if log_x {
        x_lo / 1.2..(x_hi * 1.2).max(x_lo * 10.0)
    } else if x_hi > x_lo {
        x_lo..x_hi
    } else {
        x_lo - 1.0..x_hi + 1.0
    };
    (x, y_lo * 1.05..linear_top(y_hi), empty)
}
