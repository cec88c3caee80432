//! The sweep figure: CPU shares and the headline over the swept knob's values.

use std::ops::Range;

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::style::{
    color, draw_note, footed, footer_text, house_mesh, legend, linear_top, panel_builder,
    plot_unit, titled, trim_number, Mark, Ticks, LEGEND_W, X_AREA,
};
use crate::format::counted;
use crate::report::sweep::SweepReport;

/// Key points and labels of a sweep's x axis: the values themselves when they are all
/// numbers, else evenly spaced categories.
pub(super) struct SweepAxis {
    pub(super) range: Range<f64>,
    pub(super) xs: Vec<f64>,
    pub(super) labels: Vec<(f64, String)>,
    /// The xs are log10 of the values: the values are spread over decades.
    pub(super) log: bool,
}

/// Values spread over a decade or more that sit more evenly on a log axis than on a
/// linear one (1k, 10k, 100k; not 1, 10, 10.2) are drawn on a log axis.
fn wants_log(xs: &[f64]) -> bool {
    let mut v: Vec<f64> = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v.dedup();
    let (Some(&lo), Some(&hi)) = (v.first(), v.last()) else {
        return false;
    };
    if v.len() < 3 || lo <= 0.0 || hi / lo < 10.0 {
        return false;
    }
    // The smallest gap as a fraction of the span: the evener axis has the larger one.
    let evenness = |f: &dyn Fn(f64) -> f64| {
        let gaps = v.windows(2).map(|w| f(w[1]) - f(w[0]));
        gaps.fold(f64::INFINITY, f64::min) / (f(hi) - f(lo))
    };
    evenness(&f64::log10) > evenness(&|x| x)
}

pub(super) fn sweep_axis(values: &[String]) -> SweepAxis {
    let numbers: Option<Vec<f64>> = values
        .iter()
        .map(|v| v.parse::<f64>().ok().filter(|f| f.is_finite()))
        .collect();
    match numbers {
        Some(raw) if !raw.is_empty() => {
            let log = wants_log(&raw);
            let xs: Vec<f64> = if log {
                raw.iter().map(|x| x.log10()).collect()
            } else {
                raw
            };
            let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let pad = if hi > lo { (hi - lo) * 0.05 } else { 1.0 };
            // Labels closer than 4% of the axis would overlap: keep the first of them.
            let mut labels: Vec<(f64, String)> = Vec::new();
            let mut sorted: Vec<(f64, &String)> = xs.iter().copied().zip(values).collect();
            sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
            for (x, v) in sorted {
                if labels
                    .last()
                    .is_none_or(|(l, _)| x - l >= (hi - lo + 2.0 * pad) * 0.04)
                {
                    labels.push((x, v.clone()));
                }
            }
            SweepAxis {
                range: lo - pad..hi + pad,
                xs,
                labels,
                log,
            }
        }
        _ => {
            let xs: Vec<f64> = (0..values.len()).map(|i| i as f64).collect();
            SweepAxis {
                range: -0.5..values.len().max(1) as f64 - 0.5,
                labels: xs.iter().copied().zip(values.iter().cloned()).collect(),
                xs,
                log: false,
            }
        }
    }
}

/// The headline of a sweep or run in a unit people read: (divide by, axis text).
fn headline_axis(kind: &str, task: &str, unit: &str, max: f64) -> (f64, String) {
    match kind {
        "share" => (0.01, format!("{task} CPU share (% of one CPU)")),
        "fairness" => (0.01, "fairness error (% of CPU time)".into()),
        "latency" => {
            let (div, u) = plot_unit(unit, max);
            (div, format!("{task} switch latency p50 ({u})"))
        }
        _ => {
            let (div, u) = plot_unit(unit, max);
            (div, format!("{task} {kind} ({u})"))
        }
    }
}

pub(super) fn draw_sweep<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    r: &SweepReport,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let samples = format!(
        "{} of {:.1} s",
        counted(r.rows.len() as u64, "run"),
        r.duration_s
    );
    let root = &footed(root, &footer_text(&r.kernel, r.cpus, &samples))?;
    let body = titled(root, &sweep_title(r), &sweep_subtitle(r))?;
    let (w, _) = body.dim_in_pixel();
    let (plots, side) = body.split_horizontally(w.saturating_sub(LEGEND_W));
    let panels = plots.split_evenly((2, 1));
    let values: Vec<String> = r.rows.iter().map(|row| row.value.clone()).collect();
    let axis = sweep_axis(&values);
    let names = task_names(r);
    let empty = r.rows.is_empty().then_some("no runs");
    draw_share_panel(&panels[0], r, &axis, &names, empty)?;
    draw_headline_panel(&panels[1], r, &axis, empty)?;
    let reference = rt_reference(r, &axis).is_some();
    draw_sweep_legend(&side, &names, reference)
}

fn sweep_title(r: &SweepReport) -> String {
    format!(
        "{} - Linux {}, {}: sweep of {}",
        r.preset,
        r.kernel,
        counted(r.cpus as u64, "CPU"),
        r.knob
    )
}

fn sweep_subtitle(r: &SweepReport) -> String {
    format!(
        "{}, {:.1} s each{}{}",
        counted(r.rows.len() as u64, "value"),
        r.duration_s,
        if r.summary_from_s > 0.0 {
            format!(" (measured after {:.1} s of warm-up)", r.summary_from_s)
        } else {
            String::new()
        },
        if r.interrupted { "; interrupted" } else { "" }
    )
}

/// Tasks by name in first-seen order: a count sweep changes which tasks exist.
fn task_names(r: &SweepReport) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for row in &r.rows {
        for (name, _) in &row.cpu_share {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    names
}

/// Each task's CPU share over the swept values; a value where it did not exist has no point.
fn draw_share_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    r: &SweepReport,
    axis: &SweepAxis,
    names: &[String],
    empty: Option<&str>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let n = names.len();
    let share_series: Vec<(RGBColor, Vec<(f64, f64)>)> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let pts = r
                .rows
                .iter()
                .zip(&axis.xs)
                .filter_map(|(row, &x)| {
                    row.cpu_share
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, s)| (x, s * 100.0))
                })
                .collect();
            (color(i, n), pts)
        })
        .collect();
    let share_max = share_series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1))
        .fold(0.0, f64::max);
    sweep_panel(
        area,
        axis,
        0.0..linear_top(share_max).max(5.0) * 1.04,
        &share_series,
        &r.knob,
        "CPU share (% of one CPU)",
        empty,
        None,
    )
}

/// The preset's headline over the swept values, in the unit of its first run.
fn draw_headline_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    r: &SweepReport,
    axis: &SweepAxis,
    empty: Option<&str>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let head = r.rows.first().map(|row| &row.headline);
    let h_max = r
        .rows
        .iter()
        .map(|row| row.headline.value.abs())
        .fold(0.0, f64::max);
    let (div, desc) = head.map_or((1.0, "headline".to_string()), |h| {
        headline_axis(&h.kind, &h.task, &h.unit, h_max)
    });
    let pts: Vec<(f64, f64)> = r
        .rows
        .iter()
        .zip(&axis.xs)
        .map(|(row, &x)| (x, row.headline.value / div))
        .collect();
    let reference = rt_reference(r, axis);
    let ref_max = reference.iter().flatten().map(|p| p.1).fold(0.0, f64::max);
    sweep_panel(
        area,
        axis,
        0.0..linear_top((h_max / div).max(ref_max)) * 1.04,
        &[(BLACK, pts)],
        &r.knob,
        &desc,
        empty,
        reference.as_deref(),
    )
}

/// The RT period the kernel defaults to (sched_rt_period_us); a runtime sweep keeps it.
const RT_PERIOD_US: f64 = 1_000_000.0;

/// What RT throttling leaves a fair task beside an RT spinner on its CPU: 1 - runtime /
/// period of it, in % of one CPU, at each swept sys.rt_runtime_us (rt-throttle's headline).
fn rt_reference(r: &SweepReport, axis: &SweepAxis) -> Option<Vec<(f64, f64)>> {
    let share = r
        .rows
        .first()
        .is_some_and(|row| row.headline.kind == "share");
    let numeric = r.rows.iter().all(|row| row.value.parse::<f64>().is_ok());
    if r.knob != "sys.rt_runtime_us" || !share || !numeric {
        return None;
    }
    let lo = axis.xs.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = axis.xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if !(lo.is_finite() && hi.is_finite()) {
        return None;
    }
    // A curve through the whole axis, not segments between the swept values: on a log
    // axis 1 - x is far from straight.
    const STEPS: usize = 60;
    let pts = (0..=STEPS)
        .map(|k| {
            let x = lo + (hi - lo) * k as f64 / STEPS as f64;
            let runtime = if axis.log { 10f64.powf(x) } else { x };
            (x, (1.0 - runtime / RT_PERIOD_US).clamp(0.0, 1.0) * 100.0)
        })
        .collect();
    Some(pts)
}

/// The legend's name of [`rt_reference`] (the period is the default 1 s).
const RT_REFERENCE: &str = "1 - runtime/period";

fn draw_sweep_legend<DB: DrawingBackend>(
    side: &DrawingArea<DB, Shift>,
    names: &[String],
    reference: bool,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let n = names.len();
    let mut entries: Vec<(String, RGBColor, Mark)> = names
        .iter()
        .enumerate()
        .map(|(i, name)| (name.clone(), color(i, n), Mark::Line))
        .collect();
    if reference {
        entries.push((
            RT_REFERENCE.to_string(),
            RGBColor(120, 120, 120),
            Mark::Dashed,
        ));
    }
    legend(side, 16, &entries)
}

#[allow(clippy::too_many_arguments)]
fn sweep_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    axis: &SweepAxis,
    y: Range<f64>,
    series: &[(RGBColor, Vec<(f64, f64)>)],
    x_desc: &str,
    y_desc: &str,
    note: Option<&str>,
    reference: Option<&[(f64, f64)]>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let keys: Vec<f64> = axis.labels.iter().map(|(x, _)| *x).collect();
    let mut chart =
        panel_builder(area, X_AREA).build_cartesian_2d(Ticks::new(axis.range.clone(), keys), y)?;
    let label_of = |v: &f64| {
        axis.labels
            .iter()
            .find(|(x, _)| (x - v).abs() < 1e-9 * x.abs().max(1.0))
            .map_or_else(String::new, |(_, l)| l.clone())
    };
    let x_desc = if axis.log {
        format!("{x_desc} (log)")
    } else {
        x_desc.to_string()
    };
    house_mesh(&mut chart.configure_mesh())
        .x_desc(x_desc)
        .y_desc(y_desc)
        .y_labels(6)
        .x_label_formatter(&label_of)
        .y_label_formatter(&|v| trim_number(*v))
        .draw()?;
    if let Some(pts) = reference {
        chart.draw_series(DashedLineSeries::new(
            pts.iter().copied(),
            8,
            5,
            RGBColor(120, 120, 120).stroke_width(2),
        ))?;
    }
    for (c, pts) in series {
        chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?;
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))?;
    }
    if let Some(note) = note {
        let plot = chart.plotting_area().strip_coord_spec();
        draw_note(&plot, note)?;
    }
    Ok(())
}
