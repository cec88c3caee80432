//! The task table: what the kernel reports for every task, and its rates now.

use ratatui::layout::{Constraint, Rect};
use ratatui::widgets::{Block, Borders, Row, Table};
use ratatui::Frame;

use super::theme;
use crate::app::{App, Panel, TaskInfo};
use crate::report::{rate, si};
use crate::sampler::parse::policy_name;

/// First visible row so the selection stays on screen.
pub fn scroll_offset(selected: usize, visible: usize) -> usize {
    if visible == 0 {
        0
    } else {
        selected.saturating_sub(visible - 1)
    }
}

/// Units short enough for the table.
fn short_unit(unit: &str) -> &str {
    match unit {
        "iterations" => "it",
        other => other,
    }
}

fn pct(v: f64) -> String {
    format!("{:.1}", v * 100.0)
}

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    let visible = area.height.saturating_sub(2) as usize;
    let offset = scroll_offset(app.ui.selected_task, visible);
    let rows: Vec<Row> = app
        .live
        .tasks
        .iter()
        .enumerate()
        .skip(offset)
        .take(visible)
        .map(|(i, t)| task_row(app, i, t))
        .collect();
    let table = Table::new(rows, column_widths(app))
        .header(header_row(app))
        .column_spacing(1)
        .block(
            Block::default()
                .borders(Borders::TOP)
                .title(format!(" Tasks{} ", shown_range(app, offset, visible)))
                .title_style(theme::title(app)),
        );
    frame.render_widget(table, area);
}

fn header_row(app: &App) -> Row<'static> {
    Row::new([
        "TASK",
        "PID/TID",
        "POLICY",
        "NICE",
        "CPUS",
        "NOW",
        "CPU%",
        "WAIT%",
        "VOL/INV /s",
        "MIG/s",
        "PROGRESS",
    ])
    .style(theme::title(app))
}

/// Task `i`: what the kernel reported last and its latest rates; "-" where a rate is not
/// known yet, "?" where the kernel did not say.
fn task_row(app: &App, i: usize, t: &TaskInfo) -> Row<'static> {
    let s = app.live.store.latest.get(i);
    let r = app
        .live
        .store
        .tasks
        .get(i)
        .and_then(|series| series.points.back().copied())
        .unwrap_or_default();
    let exited = app.live.store.tasks.get(i).is_some_and(|s| s.exited);
    let policy = s.and_then(|s| s.policy()).map_or("?", policy_name);
    let prio = s.and_then(|s| s.rt_priority()).unwrap_or(0);
    let policy = if prio > 0 {
        format!("{policy}/{prio}")
    } else {
        policy.to_string()
    };
    let row = Row::new(vec![
        if exited {
            format!("{} ✗", t.name)
        } else {
            t.name.clone()
        },
        format!("{}/{}", t.pid, t.tid),
        policy,
        s.and_then(|s| s.nice())
            .map_or("?".into(), |n| n.to_string()),
        s.and_then(|s| s.cpus_allowed)
            .map_or("?".into(), |c| c.to_list()),
        r.cpu.map_or("-".into(), |c| c.to_string()),
        pct(r.cpu_share),
        r.wait_share.map_or("-".into(), pct),
        format!("{}/{}", si(r.voluntary_per_s), si(r.involuntary_per_s)),
        r.migrations_per_s.map_or("-".into(), si),
        rate(r.progress_per_s, short_unit(&t.progress_unit)),
    ]);
    if i == app.ui.selected_task && app.ui.panel == Panel::Tasks {
        row.style(theme::selected(app))
    } else {
        row
    }
}

/// The name column fits the longest name; PROGRESS takes what is left.
fn column_widths(app: &App) -> [Constraint; 11] {
    let name_w = app
        .live
        .tasks
        .iter()
        .map(|t| t.name.chars().count() + 2)
        .max()
        .unwrap_or(6)
        .max(6) as u16;
    [
        Constraint::Length(name_w),
        Constraint::Length(11),
        Constraint::Length(8),
        Constraint::Length(4),
        Constraint::Length(5),
        Constraint::Length(3),
        Constraint::Length(5),
        Constraint::Length(5),
        Constraint::Length(11),
        Constraint::Length(5),
        Constraint::Min(12),
    ]
}

/// " (3-8 of 12)" when not every task fits, else nothing.
fn shown_range(app: &App, offset: usize, visible: usize) -> String {
    if app.live.tasks.len() > visible {
        format!(
            " ({}-{} of {})",
            offset + 1,
            (offset + visible).min(app.live.tasks.len()),
            app.live.tasks.len()
        )
    } else {
        String::new()
    }
}
