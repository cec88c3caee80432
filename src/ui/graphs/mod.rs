//! Live graphs over a scrolling window: CPU share and switches per task, the preset's
//! headline (throughput, latency, or the fairness error), per-CPU busy and steal, and
//! while the scheduler trace is in view its wakeup latency per task. Every axis has
//! ticks in the middle and units; shares are on a fixed 0-100 % scale. Legends sit
//! outside the plots (in the title line, or lines of their own) and name every series.
//! Every knob change is a vertical `┊` on each graph and is named in the line above.

mod chart;
mod cpus;
mod headline;
mod series;
mod tasks;
mod wakeup;

use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::Span;
use ratatui::widgets::Paragraph;
use ratatui::Frame;

use super::caption::{frame_graph as framed, looks_at_graph};
use super::theme;
use crate::app::App;
use crate::lesson::Graph;
use chart::{legend_entries, marks_line, wrap_entries};
use cpus::render_cpus;
use headline::render_headline;
use series::busiest;
use tasks::{render_cpu_share, render_switches};
use wakeup::render_wakeup;

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
        let left = framed(frame, left, app, Graph::CpuShare);
        render_cpu_share(frame, left, app, &ids);
        // A lesson's graph takes the right half whatever it is.
        let right = framed(frame, right, app, Graph::Switches);
        let right = framed(frame, right, app, Graph::CpuBusy);
        let right = framed(frame, right, app, Graph::Headline);
        if looks_at_graph(app, Graph::Switches) {
            render_switches(frame, right, app, &ids);
        } else if looks_at_graph(app, Graph::CpuBusy) {
            render_cpus(frame, right, app);
        } else if trace {
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
    let [tl, tr, bl] = [
        (tl, Graph::CpuShare),
        (tr, Graph::Switches),
        (bl, Graph::Headline),
    ]
    .map(|(area, g)| framed(frame, area, app, g));
    render_cpu_share(frame, tl, app, &ids);
    render_switches(frame, tr, app, &ids);
    render_headline(frame, bl, app, &ids);
    let br = framed(frame, br, app, Graph::CpuBusy);
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
