//! Live graphs over a scrolling window: CPU share and switches per task, the preset's
//! headline (throughput or latency), per-CPU busy and steal, and while the scheduler
//! trace is in view its wakeup latency per task. Every knob change is a vertical mark on
//! each graph's time axis and is named in the line above them.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph};
use ratatui::Frame;

use super::theme;
use crate::app::App;
use crate::lab::store::TaskRates;
use crate::preset::Headline;
use crate::report::si;

/// At most this many task lines per chart; the busiest are shown.
const MAX_LINES: usize = 6;
/// At most this many tasks' wakeup latency (two lines each, p50 and p99).
const MAX_TRACE_TASKS: usize = 3;
/// Charts at least this tall draw several tasks' wakeup latency: their legend fits.
/// Smaller ones draw the selected task's (or the worst one's) and name it in the title.
const ROOMY_CHART: u16 = 12;
/// Rows per chart from which the trace's graph gets a row of its own, full width, below
/// the four others; with less it takes the per-CPU graph's place.
const TRACE_ROW_MIN: u16 = 9;

/// One line of a chart.
struct Series {
    name: String,
    points: Vec<(f64, f64)>,
}

fn window(app: &App) -> (f64, f64) {
    let now = app.live.now_s();
    (
        (now - app.ui.window_s).max(0.0),
        now.max(app.ui.window_s.min(10.0)),
    )
}

/// The tasks to draw, busiest first, at most MAX_LINES.
fn busiest(app: &App) -> Vec<usize> {
    let mut ids: Vec<usize> = (0..app.live.tasks.len()).collect();
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

fn task_series(
    app: &App,
    ids: &[usize],
    from: f64,
    value: impl Fn(&TaskRates) -> f64,
) -> Vec<Series> {
    ids.iter()
        .filter_map(|&i| {
            let series = app.live.store.tasks.get(i)?;
            let points = series
                .points
                .iter()
                .filter(|r| r.t_s >= from)
                .map(|r| (r.t_s, value(r)))
                .collect();
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

/// Knob marks inside the window, as vertical two-point lines.
fn mark_lines(app: &App, from: f64, y_max: f64) -> Vec<Vec<(f64, f64)>> {
    app.live
        .marks
        .iter()
        .filter(|(t, _)| *t >= from)
        .map(|(t, _)| vec![(*t, 0.0), (*t, y_max)])
        .collect()
}

fn draw(
    frame: &mut Frame,
    area: Rect,
    app: &App,
    title: &str,
    unit_fmt: fn(f64) -> String,
    series: &[Series],
    y_min_max: f64,
) {
    let (from, to) = window(app);
    let y_max = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .fold(y_min_max, f64::max)
        * 1.1;
    let marks = mark_lines(app, from, y_max);
    let mut datasets: Vec<Dataset> = series
        .iter()
        .enumerate()
        .map(|(n, s)| {
            Dataset::default()
                .name(s.name.clone())
                .marker(theme::marker(app, n))
                .graph_type(GraphType::Line)
                .style(theme::series(app, n))
                .data(&s.points)
        })
        .collect();
    datasets.extend(marks.iter().map(|m| {
        Dataset::default()
            .marker(ratatui::symbols::Marker::Braille)
            .graph_type(GraphType::Line)
            .style(theme::mark(app))
            .data(m)
    }));
    let chart = Chart::new(datasets)
        .block(
            Block::default()
                .borders(Borders::TOP)
                .title(Span::styled(format!(" {title} "), theme::title(app))),
        )
        .x_axis(
            Axis::default()
                .bounds([from, to])
                .labels([format!("{from:.0}s"), format!("{to:.0}s")])
                .style(theme::dim(app)),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, y_max])
                .labels([String::from("0"), unit_fmt(y_max)])
                .style(theme::dim(app)),
        )
        .legend_position(Some(ratatui::widgets::LegendPosition::TopLeft))
        .hidden_legend_constraints((Constraint::Percentage(60), Constraint::Percentage(60)));
    frame.render_widget(chart, area);
}

fn percent(v: f64) -> String {
    format!("{:.0}%", v)
}

fn per_s(v: f64) -> String {
    format!("{}/s", si(v))
}

fn micros(v: f64) -> String {
    format!("{}us", si(v / 1000.0))
}

/// A value already in microseconds.
fn micros_us(v: f64) -> String {
    format!("{}us", si(v))
}

/// The line naming the knob changes visible in the window.
fn marks_line(app: &App) -> Line<'static> {
    let (from, _) = window(app);
    let mut spans = vec![Span::styled("changes: ", theme::dim(app))];
    let visible: Vec<&(f64, String)> = app.live.marks.iter().filter(|(t, _)| *t >= from).collect();
    if visible.is_empty() {
        spans.push(Span::styled(
            "none yet - they show as vertical lines",
            theme::dim(app),
        ));
    }
    for (t, label) in visible.iter().rev().take(4).rev() {
        spans.push(Span::styled(
            format!("│{t:.1}s {label}  "),
            theme::mark(app),
        ));
    }
    Line::from(spans)
}

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let [marks, grid] = Layout::vertical([Constraint::Length(1), Constraint::Min(4)]).areas(area);
    frame.render_widget(Paragraph::new(marks_line(app)), marks);
    let trace = app.trace_in_view();
    // A third row only where each chart keeps enough rows to read.
    let (grid, trace_row) = if trace && grid.height >= 3 * TRACE_ROW_MIN {
        let [g, t] = Layout::vertical([Constraint::Fill(2), Constraint::Fill(1)]).areas(grid);
        (g, Some(t))
    } else {
        (grid, None)
    };
    let [top, bottom] =
        Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(grid);
    let [tl, tr] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(top);
    let [bl, br] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(bottom);
    let (from, _) = window(app);
    let ids = busiest(app);
    render_cpu_share(frame, tl, app, &ids, from);
    render_switches(frame, tr, app, &ids, from);
    render_headline(frame, bl, app, from);
    match trace_row {
        Some(row) => {
            render_cpus(frame, br, app, from);
            render_wakeup(frame, row, app, from);
        }
        // Short of room the trace, which the user just asked for, wins over per-CPU
        // busy (back when the trace is off and its data has left the window).
        None if trace => render_wakeup(frame, br, app, from),
        None => render_cpus(frame, br, app, from),
    }
}

fn render_cpu_share(frame: &mut Frame, area: Rect, app: &App, ids: &[usize], from: f64) {
    let shown = if app.live.tasks.len() > ids.len() {
        format!(" (busiest {} of {})", ids.len(), app.live.tasks.len())
    } else {
        String::new()
    };
    let share = task_series(app, ids, from, |r| r.cpu_share * 100.0);
    draw(
        frame,
        area,
        app,
        &format!("CPU share %{shown}"),
        percent,
        &share,
        10.0,
    );
}

fn render_switches(frame: &mut Frame, area: Rect, app: &App, ids: &[usize], from: f64) {
    let switches = task_series(app, ids, from, |r| r.switches_per_s);
    draw(frame, area, app, "switches/s", per_s, &switches, 10.0);
}

/// The preset's headline: latency percentiles once there are any, else the metric
/// group's throughput.
fn render_headline(frame: &mut Frame, area: Rect, app: &App, from: f64) {
    let headline = app
        .preset
        .as_ref()
        .map(|p| (p.headline, p.metric_task.clone()));
    match headline {
        Some((Headline::Latency, group)) if !app.live.store.latency.is_empty() => {
            render_latency(frame, area, app, &group, from)
        }
        Some((_, group)) => render_throughput(frame, area, app, group, from),
        None => draw(frame, area, app, "throughput", per_s, &[], 1.0),
    }
}

fn render_latency(frame: &mut Frame, area: Rect, app: &App, group: &str, from: f64) {
    let pts = |f: fn(&(f64, f64, f64)) -> f64| -> Vec<(f64, f64)> {
        app.live
            .store
            .latency
            .iter()
            .filter(|p| p.0 >= from)
            .map(|p| (p.0, f(p)))
            .collect()
    };
    let series = [
        Series {
            name: "p50".into(),
            points: pts(|p| p.1),
        },
        Series {
            name: "p99".into(),
            points: pts(|p| p.2),
        },
    ];
    draw(
        frame,
        area,
        app,
        &format!("{group} latency per switch"),
        micros,
        &series,
        1000.0,
    );
}

/// The group's progress summed over its tasks, sample by sample.
fn render_throughput(frame: &mut Frame, area: Rect, app: &App, group: String, from: f64) {
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
    let mut sum: Vec<(f64, f64)> = Vec::new();
    for &i in &members {
        if let Some(series) = app.live.store.tasks.get(i) {
            for (n, r) in series.points.iter().filter(|r| r.t_s >= from).enumerate() {
                match sum.get_mut(n) {
                    Some(p) => p.1 += r.progress_per_s,
                    None => sum.push((r.t_s, r.progress_per_s)),
                }
            }
        }
    }
    let title = if unit.is_empty() {
        format!("{group} throughput")
    } else {
        format!("{group} {unit}/s")
    };
    draw(
        frame,
        area,
        app,
        &title,
        per_s,
        &[Series {
            name: group,
            points: sum,
        }],
        1.0,
    );
}

fn render_cpus(frame: &mut Frame, area: Rect, app: &App, from: f64) {
    let mut cpu_series = Vec::new();
    for (cpu, points) in app.live.store.cpus.iter().enumerate() {
        cpu_series.push(Series {
            name: format!("cpu{cpu} busy"),
            points: points
                .iter()
                .filter(|(t, _)| *t >= from)
                .map(|(t, r)| (*t, r.busy * 100.0))
                .collect(),
        });
        cpu_series.push(Series {
            name: format!("cpu{cpu} steal"),
            points: points
                .iter()
                .filter(|(t, _)| *t >= from)
                .map(|(t, r)| (*t, r.steal * 100.0))
                .collect(),
        });
    }
    draw(
        frame,
        area,
        app,
        "per-CPU busy / steal %",
        percent,
        &cpu_series,
        100.0 / 1.1,
    );
}

/// The tasks whose wakeup latency to draw: the selected one first, then the worst p99 in
/// the window; only tasks with a wake-up measured in it; at most `max`, in task order
/// (a task keeps its colour while others come and go).
fn traced_tasks(app: &App, from: f64, max: usize) -> Vec<usize> {
    let worst = |i: usize| {
        app.live.store.trace.get(i).map_or(0.0, |s| {
            s.iter()
                .filter(|(t, _)| *t >= from)
                .map(|(_, iv)| iv.wakeup_p99_us)
                .fold(0.0, f64::max)
        })
    };
    let selected = app.ui.selected_task;
    let mut ids: Vec<(usize, f64)> = (0..app.live.tasks.len())
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

/// Wakeup latency (sched_waking to switched in) per trace interval, p50 and p99 per
/// task, in microseconds. Intervals without a wake-up have no point.
fn render_wakeup(frame: &mut Frame, area: Rect, app: &App, from: f64) {
    let roomy = area.height >= ROOMY_CHART;
    let ids = traced_tasks(app, from, if roomy { MAX_TRACE_TASKS } else { 1 });
    let name = |i: usize| app.live.tasks.get(i).map_or("", |t| t.name.as_str());
    let pts = |i: usize, f: fn(&crate::trace::TaskInterval) -> f64| -> Vec<(f64, f64)> {
        app.live.store.trace.get(i).map_or_else(Vec::new, |s| {
            s.iter()
                .filter(|(t, iv)| *t >= from && f(iv) > 0.0)
                .map(|(t, iv)| (*t, f(iv)))
                .collect()
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
    draw(frame, area, app, &title, micros_us, &series, 10.0);
}
