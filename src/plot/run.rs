//! The run figure: CPU share, switches and throughput over time, with knob changes marked.

use std::collections::BTreeMap;
use std::ops::Range;

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::compare::{bar_panel, Group};
use super::latency::{histogram_panel, HistogramText, LatencyCurve};
use super::style::{
    color, footed, footer_text, headroom, label_rows, legend, line_chart, line_width, linear_top,
    plot_unit, si_tick, titled, trim_number, Axes, Line, LogTicks, Mark, Marker, LEGEND_W,
};
use crate::format::counted;
use crate::report::RunReport;

pub(super) const EVENT_OK: RGBColor = RGBColor(70, 70, 70);
pub(super) const EVENT_REFUSED: RGBColor = RGBColor(200, 30, 30);

/// The per-interval latency lines: greys, apart from the tasks' tab10 colours.
pub(super) const LATENCY_P50: RGBColor = BLACK;
pub(super) const LATENCY_P99: RGBColor = RGBColor(120, 120, 120);
pub(super) const LATENCY_MAX: RGBColor = RGBColor(185, 185, 185);

/// The height of a run figure: a latency run has a fourth panel.
pub(super) fn run_height(r: &RunReport) -> u32 {
    if shows_latency(r) {
        1160
    } else {
        super::TALL.1
    }
}

/// A latency preset's figure shows its headline: latency over time and its histogram
/// (in place of the throughput panel).
fn shows_latency(r: &RunReport) -> bool {
    r.metrics.headline.kind == "latency"
}

/// How a time panel's y axis is scaled.
#[derive(Clone, Copy, PartialEq)]
enum YScale {
    Linear,
    Log,
    /// Logarithmic above a bottom that stands for 0: its tick reads "0", the axis is
    /// broken just above it, and zero values are drawn on it (a log axis has no 0).
    LogFromZero(f64),
}

/// A time panel: lines over x, dashed markers with their labels in the headroom.
#[allow(clippy::too_many_arguments)]
fn time_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    x: Range<f64>,
    y: Range<f64>,
    scale: YScale,
    lines: &[Line],
    markers: &[Marker],
    x_desc: &str,
    y_desc: &str,
    note: Option<&str>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let (rows, _) = label_rows(area, &x, markers)?;
    let marks: Vec<(&Marker, usize)> = markers.iter().zip(rows).collect();
    let zero = match scale {
        YScale::LogFromZero(floor) => Some(floor),
        _ => None,
    };
    let y_fmt = |v: &f64| match (scale, zero) {
        (_, Some(floor)) if *v <= floor * 1.001 => "0".to_string(),
        (YScale::Linear, _) => trim_number(*v),
        _ => si_tick(*v),
    };
    let axes = Axes {
        x_desc,
        y_desc,
        x_fmt: &|v| trim_number(*v),
        y_fmt: &y_fmt,
        y_labels: 6,
        // A third of the way up the decade above the bottom, clear of both ticks.
        y_break: zero.map(|floor| floor * 10f64.powf(0.35)),
    };
    match scale {
        YScale::Linear => line_chart(area, x, y.clone(), &y, lines, &marks, &axes, note),
        YScale::Log => line_chart(
            area,
            x,
            y.clone().log_scale(),
            &y,
            lines,
            &marks,
            &axes,
            note,
        ),
        YScale::LogFromZero(floor) => line_chart(
            area,
            x,
            LogTicks::new(y.clone(), zero_keys(floor, y.end)),
            &y,
            lines,
            &marks,
            &axes,
            note,
        ),
    }
}

/// Ticks of a log axis whose bottom stands for 0: the bottom ("0") always, then the
/// decades above it, every other or fewer when there are more than five.
fn zero_keys(floor: f64, top: f64) -> Vec<f64> {
    let first = floor.log10().round() as i32 + 1;
    let last = top.log10().floor() as i32;
    let n = (last - first + 1).max(0) as usize;
    let step = n.div_ceil(5).max(1);
    std::iter::once(floor)
        .chain((first..=last).step_by(step).map(|k| 10f64.powi(k)))
        .collect()
}

/// What a run figure's third panel (and fourth, for latency) shows.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Third {
    /// Latency over time and the whole run's histogram.
    Latency,
    /// Measured against ideal share per task, over the whole run.
    Fairness,
    /// The headline group's throughput over time.
    Throughput,
    /// Nothing: a lesson's steps panel says what its headline did, step by step.
    Nothing,
}

/// The third panel a run's preset asks for.
pub(super) fn third_of(r: &RunReport) -> Third {
    if shows_latency(r) {
        Third::Latency
    } else if r.tasks.iter().any(|t| t.ideal_share.is_some()) {
        Third::Fairness
    } else {
        Third::Throughput
    }
}

/// How many time-and-headline panels a figure with `third` has.
pub(super) fn panel_count(third: Third) -> usize {
    match third {
        Third::Latency => 4,
        Third::Fairness | Third::Throughput => 3,
        Third::Nothing => 2,
    }
}

pub(super) fn draw_run<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    r: &RunReport,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let root = &footed(root, &footer_text(&r.kernel, r.cpus, &run_samples(r)))?;
    let body = titled(root, &run_title(r), &run_subtitle(r))?;
    let (w, _) = body.dim_in_pixel();
    let (plots, side) = body.split_horizontally(w.saturating_sub(LEGEND_W));
    draw_run_panels(&plots, &side, r, third_of(r))
}

/// The run's panels in `plots` (CPU share, switches, then `third`), its legend in `side`.
pub(super) fn draw_run_panels<DB: DrawingBackend>(
    plots: &DrawingArea<DB, Shift>,
    side: &DrawingArea<DB, Shift>,
    r: &RunReport,
    third: Third,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let panels = plots.split_evenly((panel_count(third), 1));

    let x_end = r
        .series
        .points
        .iter()
        .map(|p| p.t_s)
        .fold(r.duration_s, f64::max)
        .max(0.1);
    let x = 0.0..x_end;
    let lines = RunLines::sample(r);
    let markers = event_markers(r);
    // The panels are equally wide, so the labels take the same rows in each.
    let (_, label_rows_n) = label_rows(&panels[0], &x, &markers)?;
    let axis = TimeAxis {
        x,
        markers: &markers,
        label_rows: label_rows_n,
        no_data: r.series.points.is_empty().then_some("no samples"),
    };
    draw_cpu_share_panel(&panels[0], &axis, &lines.cpu)?;
    draw_switches_panel(&panels[1], &axis, &lines.switches)?;
    match third {
        Third::Latency => {
            draw_latency_time_panel(&panels[2], &axis, r)?;
            draw_latency_histogram_panel(&panels[3], r)?;
        }
        Third::Fairness => draw_fairness_panel(&panels[2], r)?,
        Third::Throughput => draw_throughput_panel(&panels[2], &axis, r, &lines.throughput)?,
        Third::Nothing => {}
    }
    draw_run_legend(side, r, !markers.is_empty(), third)
}

/// "40 samples of 2 tasks": sample times, a millisecond apart or more.
pub(super) fn run_samples(r: &RunReport) -> String {
    let mut times: Vec<i64> = r
        .series
        .points
        .iter()
        .map(|p| (p.t_s * 1000.0).round() as i64)
        .collect();
    times.sort_unstable();
    times.dedup();
    format!(
        "{} of {}",
        counted(times.len() as u64, "sample"),
        counted(r.series.tasks.len() as u64, "task")
    )
}

fn run_title(r: &RunReport) -> String {
    format!(
        "{} - Linux {}, {}",
        r.preset,
        r.kernel,
        counted(r.cpus as u64, "CPU")
    )
}

fn run_subtitle(r: &RunReport) -> String {
    let mut sub = vec![format!(
        "{:.1} s sampled every {} ms",
        r.duration_s,
        trim_number(r.interval_ms)
    )];
    if !r.overrides.is_empty() {
        sub.push(r.overrides.join(" "));
    }
    if r.summary_from_s > 0.0 {
        sub.push(format!("summaries from {:.1} s", r.summary_from_s));
    }
    if let Some(e) = r.metrics.fairness_error {
        sub.push(format!("fairness error {:.1} % of CPU time", e * 100.0));
    }
    if r.interrupted {
        sub.push("interrupted".into());
    }
    sub.join("; ")
}

/// What the three time panels share: the x range, the knob markers and the rows their
/// labels take, and the note shown when there is nothing to draw.
struct TimeAxis<'a> {
    x: Range<f64>,
    markers: &'a [Marker],
    label_rows: usize,
    no_data: Option<&'a str>,
}

/// The sampled series, one pass over the points: a line per task for CPU share and
/// switches, and the headline group's summed progress per sample time.
struct RunLines {
    cpu: Vec<Line>,
    switches: Vec<Line>,
    /// Millisecond key -> (time, summed progress per second).
    throughput: BTreeMap<i64, (f64, f64)>,
}

impl RunLines {
    fn sample(r: &RunReport) -> RunLines {
        let s = &r.series;
        let n = s.tasks.len();
        let task_lines = || -> Vec<Line> {
            (0..n)
                .map(|i| Line {
                    color: color(i, n),
                    width: line_width(i, n),
                    points: Vec::new(),
                })
                .collect()
        };
        let mut cpu = task_lines();
        let mut switches = task_lines();
        let group = &r.metrics.headline.task;
        let in_group: Vec<bool> = s
            .tasks
            .iter()
            .map(|name| r.tasks.iter().any(|t| &t.name == name && &t.group == group))
            .collect();
        // Tasks of one sample share its time up to rounding; a millisecond key groups them.
        let mut throughput: BTreeMap<i64, (f64, f64)> = BTreeMap::new();
        // The sample that ends a run comes moments after the one before: rates over a few
        // milliseconds are noise, not a drop to zero.
        let min_gap = r.interval_ms / 1000.0 * 0.5;
        let mut last_t = vec![0.0; n];
        for p in &s.points {
            match last_t.get_mut(p.task) {
                Some(prev) if p.t_s - *prev >= min_gap => *prev = p.t_s,
                _ => continue,
            }
            if let Some(l) = cpu.get_mut(p.task) {
                l.points.push((p.t_s, p.cpu_share * 100.0));
            }
            if let Some(l) = switches.get_mut(p.task) {
                l.points.push((p.t_s, p.switches_per_s));
            }
            if in_group.get(p.task).copied().unwrap_or(false) {
                let e = throughput
                    .entry((p.t_s * 1000.0).round() as i64)
                    .or_insert((p.t_s, 0.0));
                e.1 += p.progress_per_s;
            }
        }
        RunLines {
            cpu,
            switches,
            throughput,
        }
    }
}

/// Knob changes as markers; a refused one is red and says so.
fn event_markers(r: &RunReport) -> Vec<Marker> {
    r.events
        .iter()
        .map(|e| Marker {
            t: e.t_s,
            label: if e.ok {
                e.setting.clone()
            } else {
                format!("{} (refused)", e.setting)
            },
            color: if e.ok { EVENT_OK } else { EVENT_REFUSED },
        })
        .collect()
}

fn draw_cpu_share_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    axis: &TimeAxis,
    lines: &[Line],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let cpu_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let cpu_top = headroom(
        area,
        0.0,
        linear_top(cpu_max).max(5.0),
        axis.label_rows,
        false,
    );
    time_panel(
        area,
        axis.x.clone(),
        0.0..cpu_top,
        YScale::Linear,
        lines,
        axis.markers,
        "time (s)",
        "CPU share (% of one CPU)",
        axis.no_data,
    )
}

fn draw_switches_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    axis: &TimeAxis,
    lines: &[Line],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let values = || lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let sw_max = values().fold(1.0, f64::max);
    let least = values().filter(|v| *v > 0.0).fold(1.0, f64::min);
    // The decade at or below every rate (one switch per second unless some are lower);
    // with zeros, one decade more that stands for 0.
    let bottom = 10f64.powf(least.log10().floor());
    let (lo, scale) = if values().any(|v| v <= 0.0) {
        (bottom / 10.0, YScale::LogFromZero(bottom / 10.0))
    } else {
        (bottom, YScale::Log)
    };
    let on_axis: Vec<Line> = lines
        .iter()
        .map(|l| Line {
            color: l.color,
            width: l.width,
            points: l.points.iter().map(|&(t, v)| (t, v.max(lo))).collect(),
        })
        .collect();
    let sw_top = headroom(area, lo, sw_max * 1.5, axis.label_rows, true);
    time_panel(
        area,
        axis.x.clone(),
        lo..sw_top,
        scale,
        &on_axis,
        axis.markers,
        "time (s)",
        "switches/s per task (log)",
        axis.no_data,
    )
}

/// The headline group's latency per sample interval: p50, p99 and max, in µs on a log axis.
fn draw_latency_time_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    axis: &TimeAxis,
    r: &RunReport,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let intervals = r.metrics.latency.as_ref().map_or(&[][..], |l| &l.intervals);
    let line =
        |color: RGBColor, width: u32, ns: fn(&crate::lab::store::LatencyInterval) -> u64| Line {
            color,
            width,
            points: intervals
                .iter()
                .filter(|i| ns(i) > 0)
                .map(|i| (i.t_s, ns(i) as f64 / 1e3))
                .collect(),
        };
    // Drawn bottom to top in the legend's order reversed: max under p99 under p50.
    let lines = [
        line(LATENCY_MAX, 1, |i| i.max_ns),
        line(LATENCY_P99, 2, |i| i.p99_ns),
        line(LATENCY_P50, 2, |i| i.p50_ns),
    ];
    let values = || lines.iter().flat_map(|l| l.points.iter().map(|p| p.1));
    let least = values().fold(f64::INFINITY, f64::min);
    let lo = if least.is_finite() {
        10f64.powf(least.log10().floor())
    } else {
        1.0
    };
    let top = headroom(
        area,
        lo,
        values().fold(lo * 10.0, f64::max) * 1.5,
        axis.label_rows,
        true,
    );
    let note = if intervals.is_empty() {
        Some("no latency samples")
    } else {
        axis.no_data
    };
    time_panel(
        area,
        axis.x.clone(),
        lo..top,
        YScale::Log,
        &lines,
        axis.markers,
        "time (s)",
        &format!("{} switch latency (µs, log)", r.metrics.headline.task),
        note,
    )
}

/// The whole run's latency histogram as steps, p50, p99 and max marked.
fn draw_latency_histogram_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    r: &RunReport,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let curves: Vec<LatencyCurve> = r
        .metrics
        .latency
        .iter()
        .map(|l| LatencyCurve::from_buckets("whole run", &l.histogram, &l.percentiles))
        .collect();
    let x_desc = format!(
        "{} switch latency, whole run (µs, log; bins of a quarter octave)",
        r.metrics.headline.task
    );
    let text = HistogramText {
        x_desc: &x_desc,
        y_desc: "% of switches (log)",
        empty: "no latency samples",
    };
    histogram_panel(area, &curves, &[BLACK], &text)
}

/// The headline group's summed progress, in a unit scaled to its largest value.
fn draw_throughput_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    axis: &TimeAxis,
    r: &RunReport,
    throughput: &BTreeMap<i64, (f64, f64)>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let group = &r.metrics.headline.task;
    let unit = r.metrics.throughput_unit.as_str();
    let tp_max = throughput.values().map(|v| v.1).fold(0.0, f64::max);
    let (div, shown_unit) = plot_unit(&format!("{unit}/s"), tp_max);
    let tp_line = Line {
        color: BLACK,
        width: 2,
        points: throughput.values().map(|&(t, v)| (t, v / div)).collect(),
    };
    let tp_top = headroom(area, 0.0, linear_top(tp_max / div), axis.label_rows, false);
    let tp_note = if unit.is_empty() {
        Some(format!("the {group} tasks count no progress"))
    } else {
        axis.no_data.map(str::to_string)
    };
    time_panel(
        area,
        axis.x.clone(),
        0.0..tp_top,
        YScale::Linear,
        &[tp_line],
        axis.markers,
        "time (s)",
        &format!("{group} throughput ({shown_unit})"),
        tp_note.as_deref(),
    )
}

/// Grey of the ideal-share bars.
const IDEAL: RGBColor = RGBColor(170, 170, 170);

/// The headline of a fairness preset (nice-ladder): each task's measured share beside the
/// share its weight gives it, tasks in nice order, measured/ideal above each pair.
fn draw_fairness_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    r: &RunReport,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let n = r.series.tasks.len();
    let colour_of = |name: &str| {
        r.series
            .tasks
            .iter()
            .position(|t| t == name)
            .map_or(BLACK, |i| color(i, n))
    };
    let mut tasks: Vec<&crate::report::TaskReport> =
        r.tasks.iter().filter(|t| t.ideal_share.is_some()).collect();
    tasks.sort_by_key(|t| t.nice);
    // Past a dozen pairs the ratios above them would run into each other.
    let ratios = tasks.len() <= 12;
    let groups: Vec<Group> = tasks
        .iter()
        .map(|t| {
            let ideal = t.ideal_share.unwrap_or(0.0) * 100.0;
            let measured = t.cpu_share * 100.0;
            Group {
                label: format!("nice {}", t.nice),
                bars: vec![(measured, None, colour_of(&t.name)), (ideal, None, IDEAL)],
                dots: Vec::new(),
                top: (ratios && ideal > 0.0).then(|| format!("{:.2}x", measured / ideal)),
            }
        })
        .collect();
    let desc = match r.metrics.fairness_error {
        Some(e) => format!("CPU share, % (fairness error {:.1} %)", e * 100.0),
        None => "CPU share (% of one CPU)".to_string(),
    };
    bar_panel(area, &groups, &desc)
}

/// Tasks by colour (with their nice when not 0), the third panel's lines, the knob marker.
fn draw_run_legend<DB: DrawingBackend>(
    side: &DrawingArea<DB, Shift>,
    r: &RunReport,
    has_markers: bool,
    third: Third,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let n = r.series.tasks.len();
    let mut entries: Vec<(String, RGBColor, Mark)> = r
        .series
        .tasks
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let nice = r
                .tasks
                .iter()
                .find(|t| &t.name == name)
                .map_or(0, |t| t.nice);
            let label = if nice == 0 {
                name.clone()
            } else {
                format!("{name} (nice {nice})")
            };
            (label, color(i, n), Mark::Line)
        })
        .collect();
    match third {
        Third::Latency => {
            for (what, c) in [
                ("p50", LATENCY_P50),
                ("p99", LATENCY_P99),
                ("max", LATENCY_MAX),
            ] {
                entries.push((format!("latency {what} per interval"), c, Mark::Line));
            }
        }
        Third::Fairness => entries.push(("ideal share".into(), IDEAL, Mark::Line)),
        Third::Throughput => entries.push((
            format!("{} throughput", r.metrics.headline.task),
            BLACK,
            Mark::Line,
        )),
        Third::Nothing => {}
    }
    if has_markers {
        entries.push(("knob change".into(), EVENT_OK, Mark::Dashed));
    }
    legend(side, 16, &entries)
}
