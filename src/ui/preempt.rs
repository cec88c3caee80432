//! Who preempts the selected task: the tasks the trace saw switched in when it was
//! switched out still runnable, most often first, with how often. A panel where there is
//! room (the side column), else one line above the graphs.

use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};
use ratatui::Frame;

use super::theme;
use crate::app::App;
use crate::format::si;
use crate::trace::Preemptor;

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let Some(task) = app.selected_task() else {
        return;
    };
    let top = app
        .live
        .store
        .preemptors
        .get(app.ui.selected_task)
        .map_or(&[][..], Vec::as_slice);
    if area.height <= 1 {
        frame.render_widget(Paragraph::new(one_line(app, &task.name, top)), area);
        return;
    }
    let mut lines: Vec<Line> = top
        .iter()
        .map(|p| {
            Line::from(vec![
                Span::styled(format!("{:>7}  ", si(p.count as f64)), theme::key(app)),
                Span::raw(format!("{:<18} ", p.comm)),
                Span::styled(format!("pid {}", p.pid), theme::dim(app)),
            ])
        })
        .collect();
    if lines.is_empty() {
        lines.push(Line::styled(nothing_yet(app), theme::dim(app)));
    }
    let block = Block::default().borders(Borders::TOP).title(Span::styled(
        format!(" {} preempted by (trace) ", task.name),
        theme::title(app),
    ));
    frame.render_widget(Paragraph::new(lines).block(block), area);
}

/// "fair preempted by: fifo 1.2k  kworker/0:1 30" - as many as the line holds.
fn one_line(app: &App, task: &str, top: &[Preemptor]) -> Line<'static> {
    let mut spans = vec![Span::styled(
        format!("{task} preempted by: "),
        theme::title(app),
    )];
    if top.is_empty() {
        spans.push(Span::styled(nothing_yet(app), theme::dim(app)));
    }
    for p in top {
        spans.push(Span::raw(p.comm.clone()));
        spans.push(Span::styled(
            format!(" {}  ", si(p.count as f64)),
            theme::key(app),
        ));
    }
    Line::from(spans)
}

/// Before the first preemption, or before the trace's first interval arrives.
fn nothing_yet(app: &App) -> &'static str {
    if app.live.store.trace.iter().all(|s| s.is_empty()) {
        "waiting for the trace's first interval"
    } else {
        "nobody since the trace started"
    }
}
