//! The run figure: CPU share, switches and throughput over time, with knob changes marked.

use std::collections::BTreeMap;
use std::ops::Range;

use anyhow::Result;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::compare::{bar_panel, Group};
use super::style::{
    color, footed, footer_text, headroom, label_rows, legend, line_chart, line_width, linear_top,
    plot_unit, si_tick, titled, trim_number, Axes, Line, Mark, Marker, LEGEND_W,
};
use crate::report::RunReport;

pub(super) const EVENT_OK: RGBColor = RGBColor(70, 70, 70);
pub(super) const EVENT_REFUSED: RGBColor = RGBColor(200, 30, 30);

/// A time panel: lines over x, dashed markers with their labels in the headroom.
#[allow(clippy::too_many_arguments)]
fn time_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    x: Range<f64>,
    y: Range<f64>,
    log_y: bool,
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
    let y_fmt: fn(&f64) -> String = if log_y {
        |v| si_tick(*v)
    } else {
        |v| trim_number(*v)
    };
    let axes = Axes {
        x_desc,
        y_desc,
        x_fmt: &|v| trim_number(*v),
        y_fmt: &y_fmt,
        y_labels: 6,
    };
    if log_y {
        line_chart(
            area,
            x,
            y.clone().log_scale(),
            &y,
            lines,
            &marks,
            &axes,
            note,
        )
    } else {
        line_chart(area, x, y.clone(), &y, lines, &marks, &axes, note)
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
    let panels = plots.split_evenly((3, 1));

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
    let fair = r.tasks.iter().any(|t| t.ideal_share.is_some());
    if fair {
        draw_fairness_panel(&panels[2], r)?;
    } else {
        draw_throughput_panel(&panels[2], &axis, r, &lines.throughput)?;
    }
    draw_run_legend(&side, r, !markers.is_empty(), fair)
}

/// "40 samples of 2 tasks": sample times, a millisecond apart or more.
fn run_samples(r: &RunReport) -> String {
    let mut times: Vec<i64> = r
        .series
        .points
        .iter()
        .map(|p| (p.t_s * 1000.0).round() as i64)
        .collect();
    times.sort_unstable();
    times.dedup();
    format!("{} samples of {} tasks", times.len(), r.series.tasks.len())
}

fn run_title(r: &RunReport) -> String {
    format!("{} - Linux {}, {} CPUs", r.preset, r.kernel, r.cpus)
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
                // A log axis has no 0: below one switch per second counts as one.
                l.points.push((p.t_s, p.switches_per_s.max(1.0)));
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
        false,
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
    let sw_max = lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(1.0, f64::max);
    let sw_top = headroom(area, 1.0, sw_max * 1.5, axis.label_rows, true);
    time_panel(
        area,
        axis.x.clone(),
        1.0..sw_top,
        true,
        lines,
        axis.markers,
        "time (s)",
        "switches/s per task (log)",
        axis.no_data,
    )
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
        false,
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

/// Tasks by colour (with their nice when not 0), the throughput line, the knob marker.
fn draw_run_legend<DB: DrawingBackend>(
    side: &DrawingArea<DB, Shift>,
    r: &RunReport,
    has_markers: bool,
    fair: bool,
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
    if fair {
        entries.push(("ideal share".into(), IDEAL, Mark::Line));
    } else {
        entries.push((
            format!("{} throughput", r.metrics.headline.task),
            BLACK,
            Mark::Line,
        ));
    }
    if has_markers {
        entries.push(("knob change".into(), EVENT_OK, Mark::Dashed));
    }
    legend(side, 16, &entries)
}
