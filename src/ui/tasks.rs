//! The task table: what the kernel reports for every task, and its rates now. Columns
//! are as wide as their widest value; the ones that do not fit are dropped whole, least
//! useful first, and the title says how many (a number is never cut).

use ratatui::layout::{Constraint, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Borders, Cell, Row, Table};
use ratatui::Frame;

use super::theme;
use crate::app::{App, Branch, Column, Hit, Panel};
use crate::format::{rate, si};
use crate::policy::policy_name;

/// Columns in the order they stay when the terminal is narrow.
const PRIORITY: [Column; 12] = [
    Column::Task,
    Column::Cpu,
    Column::Policy,
    Column::Nice,
    Column::Ideal,
    Column::Wait,
    Column::Progress,
    Column::Switches,
    Column::Cpus,
    Column::PidTid,
    Column::Migrations,
    Column::Now,
];

/// Space between columns.
const GAP: u16 = 1;

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

/// Text columns read from the left, numbers from the right.
fn numeric(c: Column) -> bool {
    !matches!(c, Column::Task | Column::Policy | Column::Cpus)
}

/// The table's rows as text: one per task of the view, every column of the preset.
struct Cells {
    columns: Vec<Column>,
    rows: Vec<(usize, Vec<String>)>,
}

fn cells(app: &App, view: &[(usize, Branch)]) -> Cells {
    let columns = app.columns();
    let rows = view
        .iter()
        .map(|&(i, branch)| {
            let texts = columns
                .iter()
                .map(|&c| match c {
                    // A thread sits under its process's row, as in htop's tree.
                    Column::Task => format!("{}{}", branch.glyph(), cell(app, c, i)),
                    _ => cell(app, c, i),
                })
                .collect();
            (i, texts)
        })
        .collect();
    Cells { columns, rows }
}

/// Task `i` in column `c`: what the kernel reported last and its latest rates; "-"
/// where a rate is not known yet, "?" where the kernel did not say.
fn cell(app: &App, c: Column, i: usize) -> String {
    let Some(t) = app.live.tasks.get(i) else {
        return String::new();
    };
    let s = app.live.store.latest.get(i);
    let r = app
        .live
        .store
        .tasks
        .get(i)
        .and_then(|series| series.points.back().copied())
        .unwrap_or_default();
    match c {
        Column::Task => {
            if app.live.store.tasks.get(i).is_some_and(|s| s.exited) {
                format!("{} ✗", t.name)
            } else {
                t.name.clone()
            }
        }
        Column::PidTid => format!("{}/{}", t.pid, t.tid),
        Column::Policy => {
            let policy = s.and_then(|s| s.policy()).map_or("?", policy_name);
            match s.and_then(|s| s.rt_priority()).unwrap_or(0) {
                0 => policy.to_string(),
                prio => format!("{policy}/{prio}"),
            }
        }
        Column::Nice => s
            .and_then(|s| s.nice())
            .map_or("?".into(), |n| n.to_string()),
        Column::Cpus => s
            .and_then(|s| s.cpus_allowed)
            .map_or("?".into(), |c| c.to_list()),
        Column::Now => r.cpu.map_or("-".into(), |c| c.to_string()),
        Column::Cpu => pct(r.cpu_share),
        Column::Ideal => app
            .live
            .ideal
            .get(i)
            .copied()
            .flatten()
            .map_or("-".into(), pct),
        Column::Wait => r.wait_share.map_or("-".into(), pct),
        Column::Switches => format!("{}/{}", si(r.voluntary_per_s), si(r.involuntary_per_s)),
        Column::Migrations => r.migrations_per_s.map_or("-".into(), si),
        Column::Progress => rate(r.progress_per_s, short_unit(&t.progress_unit)),
    }
}

/// A cell's text, for the tests that check the screen cut no value.
#[cfg(test)]
pub fn tests_cell(app: &App, c: Column, i: usize) -> String {
    cell(app, c, i)
}

/// A column's heading, with the sort direction when the table is sorted by it.
fn heading(app: &App, c: Column) -> String {
    if super::caption::looked_column(app) == Some(c) {
        return format!("▶{}", c.header());
    }
    match app.ui.sort {
        Some(s) if s.column == c => {
            format!("{}{}", c.header(), if s.descending() { "▼" } else { "▲" })
        }
        _ => c.header().to_string(),
    }
}

/// The columns that fit in `width` (in table order, with their widths), how many did
/// not, and the space between columns (more where the terminal is wide).
pub struct Fit {
    pub columns: Vec<(Column, u16)>,
    pub hidden: usize,
    pub gap: u16,
}

fn fit(app: &App, cells: &Cells, width: u16) -> Fit {
    let natural = |k: usize, c: Column| {
        cells
            .rows
            .iter()
            .map(|(_, r)| r[k].chars().count())
            .chain([heading(app, c).chars().count()])
            .max()
            .unwrap_or(0) as u16
    };
    let mut chosen: Vec<(usize, Column, u16)> = Vec::new();
    let mut used = 0u16;
    for c in PRIORITY {
        let Some(k) = cells.columns.iter().position(|x| *x == c) else {
            continue;
        };
        let w = natural(k, c);
        let need = if chosen.is_empty() { w } else { w + GAP };
        if used + need > width {
            // By priority: what is less useful than a column that did not fit goes too.
            break;
        }
        used += need;
        chosen.push((k, c, w));
    }
    chosen.sort_by_key(|(k, ..)| *k);
    let sum: u16 = chosen.iter().map(|(.., w)| *w).sum();
    let gaps = chosen.len().saturating_sub(1) as u16;
    let gap = (GAP..=3)
        .rev()
        .find(|g| sum + gaps * g <= width)
        .unwrap_or(GAP);
    Fit {
        hidden: cells.columns.len() - chosen.len(),
        columns: chosen.into_iter().map(|(_, c, w)| (c, w)).collect(),
        gap,
    }
}

/// Rows of tasks the table area shows.
pub fn visible_rows(area: Rect) -> usize {
    area.height.saturating_sub(2) as usize
}

/// The table's order, the first row shown, and the tasks shown (with their place in
/// the tree).
fn shown(app: &App, area: Rect) -> (Vec<usize>, usize, Vec<(usize, Branch)>) {
    let tree = app.task_tree();
    let view: Vec<usize> = tree.iter().map(|(i, _)| *i).collect();
    let visible = visible_rows(area);
    let offset = scroll_offset(app.selected_row(&view).unwrap_or(0), visible);
    let rows = tree.into_iter().skip(offset).take(visible).collect();
    (view, offset, rows)
}

pub fn render(frame: &mut Frame, area: Rect, app: &App) {
    // Columns are as wide as the rows on screen need: formatting every task's cells
    // each frame was a good part of the UI's CPU with 64 tasks.
    let (view, offset, on_screen) = shown(app, area);
    let cells = cells(app, &on_screen);
    let fit = fit(app, &cells, area.width);
    let visible = visible_rows(area);
    let index = |c: Column| cells.columns.iter().position(|x| *x == c).unwrap_or(0);
    let align = |c: Column, text: String| {
        let line = Line::from(text);
        Cell::from(if numeric(c) {
            line.right_aligned()
        } else {
            line
        })
    };
    let rows: Vec<Row> = cells
        .rows
        .iter()
        .map(|(i, texts)| {
            let row = Row::new(
                fit.columns
                    .iter()
                    .map(|(c, _)| align(*c, texts[index(*c)].clone())),
            );
            if *i == app.ui.selected_task && app.ui.panel == Panel::Tasks {
                row.style(theme::selected(app))
            } else {
                row
            }
        })
        .collect();
    let looked = super::caption::looked_column(app);
    let header = Row::new(fit.columns.iter().map(|(c, _)| {
        let cell = align(*c, heading(app, *c));
        if looked == Some(*c) {
            cell.style(theme::lesson(app))
        } else {
            cell
        }
    }))
    .style(theme::title(app));
    let widths: Vec<Constraint> = fit
        .columns
        .iter()
        .map(|(_, w)| Constraint::Length(*w))
        .collect();
    let table = Table::new(rows, widths)
        .header(header)
        .column_spacing(fit.gap)
        .block(
            Block::default()
                .borders(Borders::TOP)
                .title(title(app, view.len(), offset, visible, fit.hidden))
                .title_style(theme::title(app)),
        );
    frame.render_widget(table, area);
}

/// " Tasks 3-8 of 12 | filter "busy" | +3 cols hidden ": what the table leaves out.
fn title(app: &App, shown: usize, offset: usize, visible: usize, hidden: usize) -> String {
    let total = app.live.tasks.len();
    let mut parts = vec![if shown > visible {
        format!(
            "Tasks {}-{} of {shown}",
            offset + 1,
            (offset + visible).min(shown)
        )
    } else if shown < total {
        format!("Tasks: {shown}")
    } else {
        "Tasks".to_string()
    }];
    if !app.ui.filter.is_empty() {
        parts.push(format!("filter \"{}\" ({shown} of {total})", app.ui.filter));
    }
    if hidden > 0 {
        parts.push(format!(
            "+{} hidden",
            crate::format::counted(hidden as u64, "col")
        ));
    }
    format!(" {} ", parts.join(" | "))
}

/// The table's column headings (with the gap after each) and task rows, for clicks.
pub fn regions(area: Rect, app: &App) -> Vec<(Rect, Hit)> {
    let (_, _, on_screen) = shown(app, area);
    let cells = cells(app, &on_screen);
    let fit = fit(app, &cells, area.width);
    let mut out = Vec::new();
    let mut left = area.x;
    for (c, w) in fit.columns {
        let heading = Rect::new(left, area.y + 1, w + fit.gap, 1);
        out.push((heading.intersection(area), Hit::Column(c)));
        left += w + fit.gap;
    }
    for (row, &(i, _)) in on_screen.iter().enumerate() {
        let line = Rect::new(area.x, area.y + 2 + row as u16, area.width, 1);
        out.push((line.intersection(area), Hit::Task(i)));
    }
    out
}
