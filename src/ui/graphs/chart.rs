//! The chart every graph is drawn with: title, legend, hint, round ticks, knob-change marks.

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Borders, Chart, Dataset, GraphType, Paragraph};
use ratatui::Frame;

use super::series::{window, Series};
use crate::app::App;
use crate::format::si;
use crate::ui::theme;

/// How a chart's value axis is scaled and labelled.
#[derive(Clone, Copy)]
pub(super) enum Scale {
    /// 0-100 %, whatever the data.
    Percent,
    /// 0 to a round number above the data (and at least `floor`), labelled by `fmt`.
    Auto { floor: f64, fmt: fn(f64) -> String },
}

/// Whose legend a chart draws.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Legend {
    Own,
    /// The series are the tasks of the legend above the row.
    Shared,
    /// One series, which the title names.
    Title,
}

/// `25k/s` rather than `25.0k/s`: tick values are round.
pub(super) fn round_si(v: f64) -> String {
    let s = si(v);
    match s.find(".0") {
        Some(p) if !s[p + 2..].starts_with(|c: char| c.is_ascii_digit()) => {
            format!("{}{}", &s[..p], &s[p + 2..])
        }
        _ => s,
    }
}

pub(super) fn percent(v: f64) -> String {
    format!("{}%", round_si(v))
}

pub(super) fn per_s(v: f64) -> String {
    format!("{}/s", round_si(v))
}

/// A value in nanoseconds.
pub(super) fn micros(v: f64) -> String {
    micros_us(v / 1000.0)
}

/// A value in microseconds: `250us`, `1.5ms`.
pub(super) fn micros_us(v: f64) -> String {
    if v >= 1000.0 {
        format!("{}ms", round_si(v / 1000.0))
    } else {
        format!("{}us", round_si(v))
    }
}

/// The smallest round top for `ticks` labels over `0..=v`: a step of 1, 2, 2.5 or 5
/// times a power of ten.
pub(super) fn nice_top(v: f64, ticks: usize) -> f64 {
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
pub(super) fn ticks(plot_rows: u16) -> usize {
    if plot_rows >= 9 {
        5
    } else if plot_rows >= 3 {
        3
    } else {
        2
    }
}

/// The legend: each series' glyph (its colour, or its shape without colour) and name.
pub(super) fn legend_entries(app: &App, names: &[&str]) -> Vec<Vec<Span<'static>>> {
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

pub(super) fn entries_width(entries: &[Vec<Span>]) -> usize {
    entries
        .iter()
        .map(|e| e.iter().map(Span::width).sum::<usize>() + 2)
        .sum::<usize>()
        .saturating_sub(2)
}

/// Entries packed into lines of `width`.
pub(super) fn wrap_entries(entries: Vec<Vec<Span<'static>>>, width: usize) -> Vec<Line<'static>> {
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
pub(super) fn mark_lines(app: &App, from: f64, top: f64) -> Vec<Vec<(f64, f64)>> {
    app.live
        .marks
        .iter()
        .filter(|(t, _)| *t >= from)
        .map(|(t, _)| vec![(*t, 0.0), (*t, top)])
        .collect()
}

/// One chart: its title, series, value scale and legend.
pub(super) struct Spec {
    pub(super) title: String,
    pub(super) series: Vec<Series>,
    pub(super) scale: Scale,
    pub(super) legend: Legend,
    /// A dim line under the title: the first of these that fits the width (none when
    /// the chart is too short to spare the row).
    pub(super) hint: &'static [&'static str],
}

pub(super) fn draw(frame: &mut Frame, area: Rect, app: &App, spec: Spec) {
    let (block, legend_rows) = titled(app, area, &spec);
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
    let [legend_area, plot_area] =
        Layout::vertical([Constraint::Length(legend_h), Constraint::Min(0)]).areas(inner);
    if legend_h > 0 {
        frame.render_widget(Paragraph::new(legend_rows), legend_area);
    }
    plot(frame, plot_area, app, &spec);
}

/// The chart's frame and title, with its own legend in the title line when both fit
/// with a rule between; else the legend's rows, for under the title.
fn titled(app: &App, area: Rect, spec: &Spec) -> (Block<'static>, Vec<Line<'static>>) {
    let title = Span::styled(format!(" {} ", spec.title), theme::title(app));
    let mut block = Block::default().borders(Borders::TOP).title(title.clone());
    let names: Vec<&str> = spec.series.iter().map(|s| s.name.as_str()).collect();
    let entries = legend_entries(app, &names);
    if spec.legend != Legend::Own || entries.is_empty() {
        return (block, Vec::new());
    }
    if title.width() + entries_width(&entries) + 4 > area.width as usize {
        return (block, wrap_entries(entries, area.width as usize));
    }
    let mut spans = vec![Span::raw(" ")];
    for (k, e) in entries.into_iter().enumerate() {
        if k > 0 {
            spans.push(Span::raw("  "));
        }
        spans.extend(e);
    }
    spans.push(Span::raw(" "));
    block = block.title_top(Line::from(spans).right_aligned());
    (block, Vec::new())
}

/// The plot: the window on the time axis, round ticks on the value axis, and the knob
/// changes drawn first so the data goes over them.
fn plot(frame: &mut Frame, area: Rect, app: &App, spec: &Spec) {
    let (from, to) = window(app);
    let plot_rows = area.height.saturating_sub(2);
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
    frame.render_widget(chart, area);
}

/// The line naming the knob changes visible in the window (and the graphs a short
/// terminal leaves out): the latest four, or as many as fit.
pub(super) fn marks_line(app: &App, hidden: usize, width: u16) -> Line<'static> {
    let (from, _) = window(app);
    let visible: Vec<&(f64, String)> = app.live.marks.iter().filter(|(t, _)| *t >= from).collect();
    let hidden = (hidden > 0).then(|| {
        format!(
            "(+{} on a taller terminal)",
            crate::format::counted(hidden as u64, "graph")
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
    if visible.is_empty() && !app.in_force.is_empty() {
        // Their marks left the window: what is in force still, the latest that fit.
        let all: Vec<String> = app
            .in_force
            .iter()
            .map(|(knob, value)| format!("{knob}={value}  "))
            .collect();
        for skip in 0..all.len() {
            let mut shown = vec!["in force: ".to_string()];
            if skip > 0 {
                shown.push(format!("(+{skip} more) "));
            }
            shown.extend(all[skip..].iter().cloned());
            let l = line(shown);
            if l.width() <= width as usize || skip + 1 == all.len() {
                return l;
            }
        }
    }
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
pub(super) fn columns(area: Rect) -> usize {
    area.width.saturating_sub(8) as usize
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
    fn a_narrow_changes_line_keeps_the_latest_in_force_and_counts_the_rest() {
        let mut app = crate::app::tests::running_app();
        app.in_force = vec![
            ("fair.policy".into(), "batch".into()),
            ("sys.rt_runtime_us".into(), "600000".into()),
        ];
        let text = |w| marks_line(&app, 0, w).to_string();
        assert_eq!(
            text(40),
            "changes: in force: (+1 more) sys.rt_runtime_us=600000  "
        );
        assert_eq!(
            text(80),
            "changes: in force: fair.policy=batch  sys.rt_runtime_us=600000  "
        );
    }
}
