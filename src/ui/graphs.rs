//! Live graphs over a scrolling window: CPU share and switches per task, the preset's
//! headline (throughput, latency, or the fairness error), per-CPU busy and steal, and
//! while the scheduler trace is in view its wakeup latency per task. Every axis has
//! ticks in the middle and units; shares are on a fixed 0-100 % scale. Legends sit
//! outside the plots (in the title line, or lines of their own) and name every series.
//! Every knob change is a vertical `┊` on each graph and is named in the line above.

use std::collections::VecDeque;

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
/// Up to this many CPUs get a busy line each; more are drawn as their mean and maximum.
const CPU_LINES: usize = 4;
/// Lines of a shared legend at most.
const LEGEND_LINES: usize = 3;
/// Below this many rows the charts are one row of two.
const SHORT_GRID: u16 = 14;

/// One line of a chart.
struct Series {
    name: String,
    points: Vec<(f64, f64)>,
}

/// How a chart's value axis is scaled and labelled.
#[derive(Clone, Copy)]
enum Scale {
    /// 0-100 %, whatever the data.
    Percent,
    /// 0 to a round number above the data (and at least `floor`), labelled by `fmt`.
    Auto { floor: f64, fmt: fn(f64) -> String },
}

/// Whose legend a chart draws.
#[derive(Clone, Copy, PartialEq)]
enum Legend {
    Own,
    /// The series are the tasks of the legend above the row.
    Shared,
    /// One series, which the title names.
    Title,
}

fn window(app: &App) -> (f64, f64) {
    let now = app.live.now_s();
    (
        (now - app.ui.window_s).max(0.0),
        now.max(app.ui.window_s.min(10.0)),
    )
}

/// The points of a time series inside `[from, to]`, at most a few per column of the
/// plot: the first, lowest, highest and last of each (drawing every 20 ms sample of a
/// minute is thousands of lines through the same cells).
fn decimate(
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
fn start<T>(points: &VecDeque<T>, from: f64, t: impl Fn(&T) -> f64) -> usize {
    points.partition_point(|p| t(p) < from)
}

/// The tasks to draw, busiest first, at most MAX_LINES, in task order.
fn busiest(app: &App) -> Vec<usize> {
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

fn task_series(
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

/// `25k/s` rather than `25.0k/s`: tick values are round.
fn round_si(v: f64) -> String {
    let s = si(v);
    match s.find(".0") {
        Some(p) if !s[p + 2..].starts_with(|c: char| c.is_ascii_digit()) => {
            format!("{}{}", &s[..p], &s[p + 2..])
        }
        _ => s,
    }
}

fn percent(v: f64) -> String {
    format!("{}%", round_si(v))
}

fn per_s(v: f64) -> String {
    format!("{}/s", round_si(v))
}

/// A value in nanoseconds.
fn micros(v: f64) -> String {
    micros_us(v / 1000.0)
}

/// A value in microseconds: `250us`, `1.5ms`.
fn micros_us(v: f64) -> String {
    if v >= 1000.0 {
        format!("{}ms", round_si(v / 1000.0))
    } else {
        format!("{}us", round_si(v))
    }
}

/// The smallest round top for `ticks` labels over `0..=v`: a step of 1, 2, 2.5 or 5
/// times a power of ten.
fn nice_top(v: f64, ticks: usize) -> f64 {
    let divisions = ticks.saturating_sub(1).max(1) as f64;
    let raw = (v / divisions).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw * (1.0 - 1e-9))
        .unwrap_or(10.0 * magnitude);
    step * divisions
}

/// Labels on an axis from 0 to `top`: five on a plot of 9 rows or more, else three
/// (ratatui spreads them evenly over the rows).
fn ticks(plot_rows: u16) -> usize {
    if plot_rows >= 9 {
        5
    } else if plot_rows >= 3 {
        3
    } else {
        2
    }
}

/// The legend: each series' glyph (its colour, or its shape without colour) and name.
fn legend_entries(app: &App, names: &[&str]) -> Vec<Vec<Span<'static>>> {
    names
        .iter()
        .enumerate()
        .map(|(n, name)| {
            vec![
                Span::styled(theme::legend_glyph(app, n), theme::series(app, n)),
                Span::raw(format!(" {name}")),
            ]
        })
        .collect()
}

fn entries_width(entries: &[Vec<Span>]) -> usize {
    entries
        .iter()
        .map(|e| e.iter().map(Span::width).sum::<usize>() + 2)
        .sum::<usize>()
        .saturating_sub(2)
}

/// Entries packed into lines of `width`.
fn wrap_entries(entries: Vec<Vec<Span<'static>>>, width: usize) -> Vec<Line<'static>> {
    let mut lines: Vec<Vec<Span>> = vec![Vec::new()];
    let mut used = 0usize;
    for e in entries {
        let w: usize = e.iter().map(Span::width).sum();
        let line = lines.last().map_or(0, Vec::len);
        if line > 0 && used + 2 + w > width {
            lines.push(Vec::new());
            used = 0;
        }
        if let Some(last) = lines.last_mut() {
            if !last.is_empty() {
                last.push(Span::raw("  "));
                used += 2;
            }
            last.extend(e);
        }
        used += w;
    }
    lines.into_iter().map(Line::from).collect()
}

/// Knob marks inside the window, as vertical two-point lines.
fn mark_lines(app: &App, from: f64, top: f64) -> Vec<Vec<(f64, f64)>> {
    app.live
        .marks
        .iter()
        .filter(|(t, _)| *t >= from)
        .map(|(t, _)| vec![(*t, 0.0), (*t, top)])
        .collect()
}

/// One chart: its title, series, value scale and legend.
struct Spec {
    title: String,
    series: Vec<Series>,
    scale: Scale,
    legend: Legend,
    /// A dim line under the title: the first of these that fits the width (none when
    /// the chart is too short to spare the row).
    hint: &'static [&'static str],
}

fn draw(frame: &mut Frame, area: Rect, app: &App, spec: Spec) {
    let (from, to) = window(app);
    let title = Span::styled(format!(" {} ", spec.title), theme::title(app));
    let mut block = Block::default().borders(Borders::TOP).title(title.clone());
    let names: Vec<&str> = spec.series.iter().map(|s| s.name.as_str()).collect();
    let entries = legend_entries(app, &names);
    let mut legend_rows: Vec<Line> = Vec::new();
    if spec.legend == Legend::Own && !entries.is_empty() {
        // In the title line when both fit with a rule between, else rows of their own.
        if title.width() + entries_width(&entries) + 4 <= area.width as usize {
            let mut spans = vec![Span::raw(" ")];
            for (k, e) in entries.into_iter().enumerate() {
                if k > 0 {
                    spans.push(Span::raw("  "));
                }
                spans.extend(e);
            }
            spans.push(Span::raw(" "));
            block = block.title_top(Line::from(spans).right_aligned());
        } else {
            legend_rows = wrap_entries(entries, area.width as usize);
        }
    }
    let mut inner = block.inner(area);
    frame.render_widget(block, area);
    let fits = spec
        .hint
        .iter()
        .find(|h| h.chars().count() <= inner.width as usize);
    if let Some(hint) = fits.filter(|_| inner.height >= 6) {
        let [hint_area, rest] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(inner);
        frame.render_widget(
            Paragraph::new(Span::styled(*hint, theme::dim(app))),
            hint_area,
        );
        inner = rest;
    }
    let legend_h = (legend_rows.len() as u16).min(inner.height.saturating_sub(3));
    let [legend_area, plot] =
        Layout::vertical([Constraint::Length(legend_h), Constraint::Min(0)]).areas(inner);
    if legend_h > 0 {
        frame.render_widget(Paragraph::new(legend_rows), legend_area);
    }
    let plot_rows = plot.height.saturating_sub(2);
    let n = ticks(plot_rows);
    let (top, fmt): (f64, fn(f64) -> String) = match spec.scale {
        Scale::Percent => (100.0, percent),
        Scale::Auto { floor, fmt } => {
            let max = spec
                .series
                .iter()
                .flat_map(|s| s.points.iter().map(|p| p.1))
                .fold(floor, f64::max);
            (nice_top(max, n), fmt)
        }
    };
    let y_labels: Vec<String> = (0..n)
        .map(|k| fmt(top * k as f64 / (n - 1) as f64))
        .collect();
    let secs = |v: f64| {
        if to - from >= 10.0 {
            format!("{v:.0}s")
        } else {
            format!("{v:.1}s")
        }
    };
    let x_labels = [secs(from), secs((from + to) / 2.0), secs(to)];
    // Marks first: the data is drawn over them.
    let marks = mark_lines(app, from, top);
    let mut datasets: Vec<Dataset> = marks
        .iter()
        .map(|m| {
            Dataset::default()
                .marker(theme::mark_marker())
                .graph_type(GraphType::Line)
                .style(theme::mark(app))
                .data(m)
        })
        .collect();
    datasets.extend(spec.series.iter().enumerate().map(|(n, s)| {
        Dataset::default()
            .marker(theme::marker(app, n))
            .graph_type(GraphType::Line)
            .style(theme::series(app, n))
            .data(&s.points)
    }));
    let chart = Chart::new(datasets)
        .x_axis(
            Axis::default()
                .bounds([from, to])
                .labels(x_labels)
                .style(theme::dim(app)),
        )
        .y_axis(
            Axis::default()
                .bounds([0.0, top])
                .labels(y_labels)
                .style(theme::dim(app)),
        )
        .legend_position(None);
    frame.render_widget(chart, plot);
}

/// The line naming the knob changes visible in the window (and the graphs a short
/// terminal leaves out): the latest four, or as many as fit.
fn marks_line(app: &App, hidden: usize, width: u16) -> Line<'static> {
    let (from, _) = window(app);
    let visible: Vec<&(f64, String)> = app.live.marks.iter().filter(|(t, _)| *t >= from).collect();
    let hidden = (hidden > 0).then(|| {
        format!(
            "(+{} on a taller terminal)",
            crate::report::counted(hidden as u64, "graph")
        )
    });
    let line = |changes: Vec<String>| {
        let mut spans = vec![Span::styled("changes: ", theme::dim(app))];
        spans.extend(
            changes
                .into_iter()
                .map(|c| Span::styled(c, theme::mark(app))),
        );
        if let Some(h) = &hidden {
            spans.push(Span::styled(h.clone(), theme::dim(app)));
        }
        Line::from(spans)
    };
    if visible.is_empty() {
        let explained = Line::from(vec![
            Span::styled("changes: ", theme::dim(app)),
            Span::styled(
                format!(
                    "none yet - they show as {} lines on the graphs  ",
                    theme::MARK_GLYPH
                ),
                theme::dim(app),
            ),
            Span::styled(hidden.clone().unwrap_or_default(), theme::dim(app)),
        ]);
        if explained.width() <= width as usize {
            return explained;
        }
        return line(vec!["none yet  ".into()]);
    }
    let all: Vec<String> = visible
        .iter()
        .rev()
        .take(4)
        .rev()
        .map(|(t, label)| format!("{}{t:.1}s {label}  ", theme::MARK_GLYPH))
        .collect();
    // Drop the oldest first until the line fits (the latest change is the one to see).
    for skip in 0..all.len() {
        let l = line(all[skip..].to_vec());
        if l.width() <= width as usize || skip + 1 == all.len() {
            return l;
        }
    }
    line(Vec::new())
}

/// Plot columns of a chart in `area` (less the value labels).
fn columns(area: Rect) -> usize {
    area.width.saturating_sub(8) as usize
}

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let ids = busiest(app);
    let names: Vec<&str> = ids
        .iter()
        .filter_map(|&i| app.live.tasks.get(i).map(|t| t.name.as_str()))
        .collect();
    let mut tasks_legend = legend_entries(app, &names);
    tasks_legend.insert(0, vec![Span::styled("tasks:", theme::dim(app))]);
    let legend = wrap_entries(tasks_legend, area.width as usize);
    let legend_h = (legend.len().min(LEGEND_LINES)) as u16;
    let [marks, legend_area, grid] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(legend_h),
        Constraint::Min(4),
    ])
    .areas(area);
    frame.render_widget(Paragraph::new(legend), legend_area);
    let trace = app.trace_in_view();
    // A chart needs about 7 rows to read (title, a few of plot, axis, labels): short of
    // two rows of them, one row of the two that matter most, and the marks line says
    // what is left out.
    if grid.height < SHORT_GRID {
        frame.render_widget(Paragraph::new(marks_line(app, 2, marks.width)), marks);
        let [left, right] = halves().areas(grid);
        render_cpu_share(frame, left, app, &ids);
        if trace {
            render_wakeup(frame, right, app);
        } else {
            render_headline(frame, right, app, &ids);
        }
        return;
    }
    frame.render_widget(Paragraph::new(marks_line(app, 0, marks.width)), marks);
    // A third row only where each chart keeps enough rows to read.
    let (grid, trace_row) = if trace && grid.height >= 3 * TRACE_ROW_MIN {
        let [g, t] = Layout::vertical([Constraint::Fill(2), Constraint::Fill(1)]).areas(grid);
        (g, Some(t))
    } else {
        (grid, None)
    };
    let [top, bottom] =
        Layout::vertical([Constraint::Percentage(50), Constraint::Percentage(50)]).areas(grid);
    let [tl, tr] = halves().areas(top);
    let [bl, br] = halves().areas(bottom);
    render_cpu_share(frame, tl, app, &ids);
    render_switches(frame, tr, app, &ids);
    render_headline(frame, bl, app, &ids);
    match trace_row {
        Some(row) => {
            render_cpus(frame, br, app);
            render_wakeup(frame, row, app);
        }
        // Short of room the trace, which the user just asked for, wins over per-CPU
        // busy (back when the trace is off and its data has left the window).
        None if trace => render_wakeup(frame, br, app),
        None => render_cpus(frame, br, app),
    }
}

/// Two charts side by side, a column apart: the right one's value labels stay clear of
/// the left one's plot.
fn halves() -> Layout {
    Layout::horizontal([Constraint::Fill(1), Constraint::Fill(1)]).spacing(1)
}

fn render_cpu_share(frame: &mut Frame, area: Rect, app: &App, ids: &[usize]) {
    let shown = app.in_table().into_iter().filter(|s| *s).count();
    let title = if shown > ids.len() {
        format!("CPU share % (busiest {} of {shown})", ids.len())
    } else {
        "CPU share %".to_string()
    };
    let series = task_series(app, ids, window(app), columns(area), |r| {
        Some(r.cpu_share * 100.0)
    });
    draw(
        frame,
        area,
        app,
        Spec {
            title,
            series,
            scale: Scale::Percent,
            legend: Legend::Shared,
            hint: &[],
        },
    );
}

fn render_switches(frame: &mut Frame, area: Rect, app: &App, ids: &[usize]) {
    let series = task_series(app, ids, window(app), columns(area), |r| {
        Some(r.switches_per_s)
    });
    draw(
        frame,
        area,
        app,
        Spec {
            title: "switches/s".into(),
            series,
            scale: Scale::Auto {
                floor: 10.0,
                fmt: per_s,
            },
            legend: Legend::Shared,
            hint: &[],
        },
    );
}

/// The preset's headline: latency percentiles once there are any, the fairness error,
/// or else the metric group's throughput.
fn render_headline(frame: &mut Frame, area: Rect, app: &App, ids: &[usize]) {
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

fn render_latency(frame: &mut Frame, area: Rect, app: &App, group: &str) {
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
fn render_fairness(frame: &mut Frame, area: Rect, app: &App, group: &str) {
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
fn has_progress(app: &App, group: &str) -> bool {
    app.live
        .tasks
        .iter()
        .any(|t| t.group == group && !t.progress_unit.is_empty())
}

/// What procfs tells without a progress rate: each task's run-queue wait (schedstat's
/// wait time over the interval) as a share of wall time, for the tasks of the legend.
fn render_wait(frame: &mut Frame, area: Rect, app: &App, ids: &[usize]) {
    let series = task_series(app, ids, window(app), columns(area), |r| {
        r.wait_share.map(|w| w * 100.0)
    });
    draw(
        frame,
        area,
        app,
        Spec {
            title: "run-queue wait % of wall time".into(),
            series,
            scale: Scale::Percent,
            legend: Legend::Shared,
            hint: &[
                "no progress rate: a command run with --progress stdout-lines|stdout-bytes has a throughput",
                "throughput: a command with --progress stdout-lines|stdout-bytes",
                "throughput: --progress stdout-lines|stdout-bytes",
                "throughput: --progress stdout-lines",
            ],
        },
    );
}

/// The group's progress summed over its tasks, sample by sample.
fn render_throughput(frame: &mut Frame, area: Rect, app: &App, group: String) {
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

/// Busy per CPU (their mean and the busiest one's when there are many), and steal
/// averaged over the CPUs.
fn render_cpus(frame: &mut Frame, area: Rect, app: &App) {
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

/// The tasks whose wakeup latency to draw: the selected one first, then the worst p99 in
/// the window; only tasks with a wake-up measured in it; at most `max`, in task order
/// (a task keeps its colour while others come and go).
fn traced_tasks(app: &App, from: f64, max: usize) -> Vec<usize> {
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

/// Wakeup latency (sched_waking to switched in) per trace interval, p50 and p99 per
/// task, in microseconds. Intervals without a wake-up have no point.
fn render_wakeup(frame: &mut Frame, area: Rect, app: &App) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_tops_give_round_ticks() {
        assert_eq!(nice_top(72.2e3, 3), 100e3);
        assert_eq!(nice_top(12.0, 3), 20.0);
        assert_eq!(nice_top(9.0, 5), 10.0);
        assert_eq!(nice_top(4.1, 3), 5.0);
        assert_eq!(nice_top(1000.0, 3), 1000.0);
        assert_eq!(per_s(50e3), "50k/s");
        assert_eq!(per_s(2.5e3), "2.5k/s");
        assert_eq!(percent(0.0), "0%");
        assert_eq!(micros(1.5e6), "1.5ms");
        assert_eq!(micros_us(250.0), "250us");
    }

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
