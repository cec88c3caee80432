//! The latency figure: step histograms on log-log axes with p50/p99/max marked per series;
//! its panel is also the run figure's latency histogram.

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::style::{
    color, footed, headroom, legend, line_chart, si_tick, titled, Axes, Line, Mark, Marker,
    LEGEND_W,
};
use crate::histogram::{Percentiles, ReportBucket};

/// One histogram: its name, bins as (low µs, high µs, % of samples), and marks such as
/// ("p99", 120.0) in µs.
pub struct LatencyCurve {
    pub name: String,
    pub bins: Vec<(f64, f64, f64)>,
    pub marks: Vec<(String, f64)>,
}

impl LatencyCurve {
    /// A report's non-empty buckets as steps, a bin at 0 % across every gap between them
    /// (the curve drops to the floor there instead of cutting across), with the
    /// percentiles' p50, p99 and max marked.
    pub fn from_buckets(name: &str, buckets: &[ReportBucket], p: &Percentiles) -> LatencyCurve {
        let total: u64 = buckets.iter().map(|b| b.count).sum();
        let us = |ns: u64| ns as f64 / 1e3;
        let mut bins: Vec<(f64, f64, f64)> = Vec::with_capacity(buckets.len() * 2);
        let mut prev_end: Option<u64> = None;
        for b in buckets {
            // A bucket covers low..=high: it ends where the next one could start.
            let end = b.high_ns.saturating_add(1);
            if let Some(e) = prev_end.filter(|&e| e < b.low_ns) {
                bins.push((us(e), us(b.low_ns), 0.0));
            }
            bins.push((
                us(b.low_ns),
                us(end),
                b.count as f64 * 100.0 / total.max(1) as f64,
            ));
            prev_end = Some(end);
        }
        LatencyCurve {
            name: name.to_string(),
            bins,
            marks: vec![
                ("p50".into(), us(p.p50)),
                ("p99".into(), us(p.p99)),
                ("max".into(), us(p.max)),
            ],
        }
    }
}

/// "62 µs", "1.2 ms": a marker's value.
fn us_text(us: f64) -> String {
    if us >= 1000.0 {
        format!("{:.1} ms", us / 1000.0)
    } else if us >= 10.0 {
        format!("{us:.0} µs")
    } else {
        format!("{us:.1} µs")
    }
}

/// What a histogram panel says: its axes, and the note when there is nothing to draw.
pub(super) struct HistogramText<'a> {
    pub(super) x_desc: &'a str,
    pub(super) y_desc: &'a str,
    pub(super) empty: &'a str,
}

pub(super) fn draw_latency<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    curves: &[LatencyCurve],
    footer: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let root = &footed(root, footer)?;
    let body = titled(
        root,
        title,
        "bins of a quarter octave; dashed: p50, p99 and max",
    )?;
    let (w, _) = body.dim_in_pixel();
    let (plot, side) = body.split_horizontally(w.saturating_sub(LEGEND_W));
    let n = curves.len();
    let colors: Vec<RGBColor> = (0..n).map(|i| color(i, n)).collect();
    let text = HistogramText {
        x_desc: "latency (µs, log)",
        y_desc: "% of wakeups (log)",
        empty: "no wakeups",
    };
    histogram_panel(&plot.margin(10, 10, 10, 10), curves, &colors, &text)?;
    let entries: Vec<(String, RGBColor, Mark)> = curves
        .iter()
        .zip(&colors)
        .map(|(c, &col)| (c.name.clone(), col, Mark::Line))
        .collect();
    legend(&side, 16, &entries)
}

/// Histograms as steps on log-log axes, curve i in `colors[i]`, each with its marks as
/// dashed lines labelled in the headroom.
pub(super) fn histogram_panel<DB: DrawingBackend>(
    plot: &DrawingArea<DB, Shift>,
    curves: &[LatencyCurve],
    colors: &[RGBColor],
    text: &HistogramText,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let ext = Extent::of(curves);
    let lines = steps(curves, colors, ext.floor);
    let markers = markers(curves, colors);
    // One label row per marker: a few markers, and none can cover another.
    let marks: Vec<(&Marker, usize)> = markers.iter().enumerate().map(|(k, m)| (m, k)).collect();
    let y_top = headroom(plot, ext.floor, ext.y_max, markers.len(), true);
    let y = ext.floor..y_top;
    let fmt = |v: &f64| {
        if *v >= 1.0 {
            si_tick(*v)
        } else {
            format!("{v}")
        }
    };
    let axes = Axes {
        x_desc: text.x_desc,
        y_desc: text.y_desc,
        x_fmt: &|v| si_tick(*v),
        y_fmt: &fmt,
        y_labels: 6,
        y_break: None,
    };
    line_chart(
        plot,
        ext.x.log_scale(),
        y.clone().log_scale(),
        &y,
        &lines,
        &marks,
        &axes,
        ext.empty.then_some(text.empty),
    )
}

/// What a histogram panel's axes span.
struct Extent {
    /// The y axis's bottom, where empty bins sit.
    floor: f64,
    y_max: f64,
    x: std::ops::Range<f64>,
    /// Nothing to draw: the x axis is a placeholder.
    empty: bool,
}

impl Extent {
    fn of(curves: &[LatencyCurve]) -> Extent {
        let bins = || curves.iter().flat_map(|c| c.bins.iter());
        let nonzero = bins().map(|b| b.2).filter(|p| *p > 0.0);
        // A log axis has no 0: empty bins sit on the floor, half the smallest share drawn.
        let floor = (nonzero.clone().fold(f64::INFINITY, f64::min) / 2.0).clamp(1e-4, 1.0);
        let y_max = nonzero.fold(floor * 10.0, f64::max);
        let x_lo = bins()
            .map(|b| b.0)
            .filter(|x| *x > 0.0)
            .fold(f64::INFINITY, f64::min);
        let x_hi = bins()
            .map(|b| b.1)
            .chain(curves.iter().flat_map(|c| c.marks.iter().map(|m| m.1)))
            .fold(f64::NEG_INFINITY, f64::max);
        let empty = !(x_lo.is_finite() && x_hi.is_finite() && x_hi > 0.0);
        let x = if empty {
            1.0..1000.0
        } else {
            x_lo / 1.5..(x_hi * 1.5).max(x_lo * 10.0)
        };
        Extent {
            floor,
            y_max,
            x,
            empty,
        }
    }
}

/// Curve i's colour (black past the palette).
fn colour(colors: &[RGBColor], i: usize) -> RGBColor {
    colors.get(i).copied().unwrap_or(BLACK)
}

/// Each curve's bins as steps, empty ones on `floor` (a log axis has no 0).
fn steps(curves: &[LatencyCurve], colors: &[RGBColor], floor: f64) -> Vec<Line> {
    curves
        .iter()
        .enumerate()
        .map(|(i, c)| Line {
            color: colour(colors, i),
            width: 2,
            points: c
                .bins
                .iter()
                .filter(|b| b.0 > 0.0)
                .flat_map(|&(lo, hi, p)| [(lo, p.max(floor)), (hi, p.max(floor))])
                .collect(),
        })
        .collect()
}

/// Each curve's marks (p50, p99, max), labelled with their values, in its colour.
fn markers(curves: &[LatencyCurve], colors: &[RGBColor]) -> Vec<Marker> {
    curves
        .iter()
        .enumerate()
        .flat_map(|(i, c)| {
            c.marks.iter().map(move |(label, us)| Marker {
                t: *us,
                label: format!("{label} {}", us_text(*us)),
                color: colour(colors, i),
            })
        })
        .filter(|m| m.t > 0.0)
        .collect()
}
