//! The compare figure (A against B) and the grouped bar panels it shares with `plot_bars`.

use anyhow::Result;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::style::{
    draw_centred, font, footed, footer_text, house_mesh, linear_top, panel_builder, plot_unit,
    titled, trim_number, Ticks, SUBTLE, TAB10, X_AREA,
};
use super::{Bar, Whisker};
use crate::format::counted;
use crate::report::compare::{ratio_text, short, CompareReport, MetricStats, Stats};

/// The compare panels: metrics with one unit share a panel, in first-seen order.
pub(super) fn compare_panels(r: &CompareReport) -> Vec<(String, Vec<usize>)> {
    let mut panels: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, m) in r.metrics.iter().enumerate() {
        match panels.iter_mut().find(|(u, _)| *u == m.unit) {
            Some((_, ids)) => ids.push(i),
            None => panels.push((m.unit.clone(), vec![i])),
        }
    }
    panels
}

/// Rows of panels: a panel with many groups gets a row of its own, small ones pair up.
pub(super) fn compare_layout(panels: &[(String, Vec<usize>)]) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = Vec::new();
    let mut pending: Option<usize> = None;
    for (i, (_, ids)) in panels.iter().enumerate() {
        if ids.len() > 3 {
            rows.push(vec![i]);
        } else if let Some(p) = pending.take() {
            rows.push(vec![p, i]);
        } else {
            pending = Some(i);
        }
    }
    if let Some(p) = pending {
        rows.push(vec![p]);
    }
    rows
}

/// Words all names end with (" CPU share"), to move into the axis text.
pub(super) fn common_suffix(names: &[&str]) -> String {
    if names.len() < 2 {
        return String::new();
    }
    let split: Vec<Vec<&str>> = names.iter().map(|n| n.split(' ').collect()).collect();
    let mut k = 0;
    loop {
        let word = |s: &Vec<&str>| (s.len() > k + 1).then(|| s[s.len() - 1 - k].to_string());
        let first = word(&split[0]);
        if first.is_some() && split.iter().all(|s| word(s) == first) {
            k += 1;
        } else {
            break;
        }
    }
    split[0][split[0].len() - k..].join(" ")
}

pub(super) const SIDE_A: RGBColor = RGBColor(31, 119, 180);
pub(super) const SIDE_B: RGBColor = RGBColor(255, 127, 14);

/// One group of the bar panels: its label and bars (value, whisker, colour).
pub(super) struct Group {
    pub(super) label: String,
    pub(super) bars: Vec<(f64, Whisker, RGBColor)>,
    /// Every round's value for each bar, drawn as dots over it (compare: a regime
    /// split shows as a dot far from the others).
    pub(super) dots: Vec<Vec<f64>>,
    /// Text above the group.
    pub(super) top: Option<String>,
}

pub(super) fn draw_compare<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    r: &CompareReport,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let samples = format!(
        "{} of A and B, {:.1} s each",
        counted(r.rounds as u64, "round"),
        r.duration_s
    );
    let root = &footed(root, &footer_text(&r.kernel, r.cpus, &samples))?;
    let area = compare_heading(root, r)?;
    // The key for the two colours, on a line of its own.
    let (key, body) = area.split_vertically(26);
    draw_side_key(&key, r)?;
    draw_compare_panels(&body, r)
}

/// What a side ran with: its settings, or nothing over the preset.
fn side_text(s: &[String]) -> String {
    if s.is_empty() {
        "preset as is".to_string()
    } else {
        s.join(",")
    }
}

/// The title and the line that says how to read the bars; returns the area below them.
fn compare_heading<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    r: &CompareReport,
) -> Result<DrawingArea<DB, Shift>>
where
    DB::ErrorType: 'static,
{
    let title = format!(
        "{} - Linux {}, {}: A ({}) vs B ({})",
        r.preset,
        r.kernel,
        counted(r.cpus as u64, "CPU"),
        side_text(&r.a),
        side_text(&r.b)
    );
    let title_size = if title.chars().count() > 95 { 18 } else { 22 };
    let area = root.margin(6, 0, 0, 0).titled(&title, font(title_size))?;
    let sub = format!(
        "{} of A then B, {:.1} s each; bars: median, whiskers: min-max, dots beside: every round; above: median of B/A per round{}",
        counted(r.rounds as u64, "round"),
        r.duration_s,
        if r.interrupted { "; interrupted" } else { "" }
    );
    Ok(area.titled(&sub, font(14).color(&SUBTLE))?)
}

/// A colour swatch and label for A, then for B.
fn draw_side_key<DB: DrawingBackend>(key: &DrawingArea<DB, Shift>, r: &CompareReport) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let items = [
        (format!("A: {}", side_text(&r.a)), SIDE_A),
        (format!("B: {}", side_text(&r.b)), SIDE_B),
    ];
    let mut x = 20;
    for (label, c) in &items {
        key.draw(&Rectangle::new([(x, 6), (x + 14, 20)], c.filled()))?;
        key.draw(&Text::new(
            label.clone(),
            (x + 20, 13),
            font(15).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
        let (tw, _) = key.estimate_text_size(label, &font(15))?;
        x += 20 + tw as i32 + 40;
    }
    Ok(())
}

/// The bar panels, one per unit, in the rows of [`compare_layout`].
fn draw_compare_panels<DB: DrawingBackend>(
    body: &DrawingArea<DB, Shift>,
    r: &CompareReport,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let panels = compare_panels(r);
    let layout = compare_layout(&panels);
    if layout.is_empty() {
        return draw_centred(body, "no complete round", font(18));
    }
    let rows = body.split_evenly((layout.len(), 1));
    for (row_area, row) in rows.iter().zip(&layout) {
        // A lone panel takes the whole row: no empty quarter (bars are capped in width).
        let cells = row_area.split_evenly((1, row.len()));
        for (cell, &p) in cells.iter().zip(row) {
            let (unit, ids) = &panels[p];
            draw_unit_panel(cell, r, unit, ids)?;
        }
    }
    Ok(())
}

/// The metrics of one unit as bar groups, scaled to a readable unit; words their names
/// share go into the axis text.
fn draw_unit_panel<DB: DrawingBackend>(
    cell: &DrawingArea<DB, Shift>,
    r: &CompareReport,
    unit: &str,
    ids: &[usize],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let metrics: Vec<&MetricStats> = ids.iter().map(|&i| &r.metrics[i]).collect();
    let max = metrics
        .iter()
        .map(|m| m.a.max.abs().max(m.b.max.abs()))
        .fold(0.0, f64::max);
    let (div, shown) = plot_unit(unit, max);
    let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
    let suffix = common_suffix(&names);
    let groups: Vec<Group> = metrics
        .iter()
        .map(|m| metric_group(m, div, &suffix))
        .collect();
    let y_desc = if suffix.is_empty() {
        shown
    } else {
        format!("{suffix} ({shown})")
    };
    bar_panel(cell, &groups, &y_desc)
}

/// One metric's A and B bars (a side without values has none), its rounds as dots, and
/// the B/A ratio above.
fn metric_group(m: &MetricStats, div: f64, suffix: &str) -> Group {
    let bar = |s: &Stats, c| {
        (!s.values.is_empty()).then(|| (s.median / div, Some((s.min / div, s.max / div)), c))
    };
    Group {
        label: m
            .name
            .strip_suffix(suffix)
            .unwrap_or(&m.name)
            .trim()
            .to_string(),
        bars: [bar(&m.a, SIDE_A), bar(&m.b, SIDE_B)]
            .into_iter()
            .flatten()
            .collect(),
        dots: [&m.a, &m.b]
            .into_iter()
            .filter(|s| !s.values.is_empty())
            .map(|s| s.values.iter().map(|v| v / div).collect())
            .collect(),
        top: ratio_note(m),
    }
}

/// "B/A 1.05x", naming the rounds far from the others.
fn ratio_note(m: &MetricStats) -> Option<String> {
    (!m.ratios.is_empty()).then(|| {
        let odd: Vec<String> = m.outlier_rounds.iter().map(|r| r.to_string()).collect();
        if odd.is_empty() {
            format!("B/A {}x", ratio_text(m.ratio_median))
        } else {
            format!(
                "B/A {}x; round {} odd",
                ratio_text(m.ratio_median),
                odd.join(",")
            )
        }
    })
}

/// Bars lower than this many pixels get their value written above them.
const SMALL_BAR_PX: i32 = 14;

/// Groups narrower than this have no room for the values of their low bars.
const MIN_LABELLED_GROUP_PX: f64 = 70.0;

/// A bar panel's chart: group keys on x, values on y.
type BarChart<'a, DB> = ChartContext<'a, DB, Cartesian2d<Ticks, RangedCoordf64>>;

/// Grouped bars with whiskers and a text above each group.
pub(super) fn bar_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    groups: &[Group],
    y_desc: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let n = groups.len().max(1);
    let (bottom, top) = value_range(groups);
    let y_top = linear_top(top) * 1.18;
    let keys: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let mut chart = panel_builder(area, X_AREA - 10)
        .build_cartesian_2d(Ticks::new(-0.5..n as f64 - 0.5, keys), bottom * 1.1..y_top)?;
    let (plot_w, _) = chart.plotting_area().dim_in_pixel();
    let group_px = plot_w as f64 / n as f64;
    draw_group_axes(&mut chart, groups, group_px, y_desc)?;
    let per = groups
        .iter()
        .map(|g| g.bars.len())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    // Bars no wider than about 90 px, whatever the room.
    let span = 0.8f64.min(per * 90.0 / group_px.max(1.0));
    let slot = span / per;
    for (i, g) in groups.iter().enumerate() {
        let start = i as f64 - span / 2.0;
        for (j, bar) in g.bars.iter().enumerate() {
            let x0 = start + slot * j as f64 + slot * 0.08;
            let x1 = start + slot * (j + 1) as f64 - slot * 0.08;
            // A lone bar with a text above it (plot_bars) says its value there already.
            let label =
                group_px >= MIN_LABELLED_GROUP_PX && !(g.bars.len() == 1 && g.top.is_some());
            draw_bar(&mut chart, bar, g.dots.get(j), x0, x1, label)?;
        }
        if let Some(text) = &g.top {
            draw_group_text(&mut chart, g, text, i, group_px, y_top - bottom)?;
        }
    }
    Ok(())
}

/// (lowest, highest) value the panel shows: bars and whiskers, and dots above them.
fn value_range(groups: &[Group]) -> (f64, f64) {
    let top = groups
        .iter()
        .flat_map(|g| {
            g.bars
                .iter()
                .map(|(v, w, _)| w.map_or(*v, |(_, hi)| hi.max(*v)))
                .chain(g.dots.iter().flatten().copied())
        })
        .fold(0.0, f64::max);
    let bottom = groups
        .iter()
        .flat_map(|g| {
            g.bars
                .iter()
                .map(|(v, w, _)| w.map_or(*v, |(lo, _)| lo.min(*v)))
        })
        .fold(0.0, f64::min);
    (bottom, top)
}

/// The mesh with each group's label under its key, in a size the longest fits.
fn draw_group_axes<DB: DrawingBackend>(
    chart: &mut BarChart<'_, DB>,
    groups: &[Group],
    group_px: f64,
    y_desc: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let longest = groups
        .iter()
        .map(|g| g.label.chars().count())
        .max()
        .unwrap_or(1)
        .max(1);
    // Shrink the group labels until the longest fits its group.
    let label_size = (12..=15)
        .rev()
        .find(|s| longest as f64 * *s as f64 * 0.6 <= group_px * 0.95)
        .unwrap_or(11);
    let label_of = |v: &f64| {
        let i = v.round();
        if (v - i).abs() > 1e-6 || i < 0.0 {
            return String::new();
        }
        groups
            .get(i as usize)
            .map_or_else(String::new, |g| g.label.clone())
    };
    house_mesh(&mut chart.configure_mesh())
        .disable_x_mesh()
        .y_desc(y_desc)
        .x_label_style(font(label_size))
        .y_labels(6)
        .x_label_formatter(&label_of)
        .y_label_formatter(&|v| trim_number(*v))
        .draw()?;
    Ok(())
}

/// One bar from x0 to x1, its rounds as dots over it, and its whisker.
fn draw_bar<DB: DrawingBackend>(
    chart: &mut BarChart<'_, DB>,
    (v, whisker, c): &(f64, Whisker, RGBColor),
    dots: Option<&Vec<f64>>,
    x0: f64,
    x1: f64,
    label_small: bool,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    // With rounds to show, the bar leaves the right quarter of its slot to their dots.
    let with_dots = dots.is_some_and(|d| d.len() > 1);
    let bar_x1 = if with_dots { x0 + (x1 - x0) * 0.72 } else { x1 };
    chart.draw_series(std::iter::once(Rectangle::new(
        [(x0, 0.0), (bar_x1, *v)],
        c.filled(),
    )))?;
    // Every round as a dot beside the bar, zigzagging so equal values stay apart.
    if let Some(dots) = dots.filter(|d| d.len() > 1) {
        let col = bar_x1 + (x1 - bar_x1) * 0.5;
        let step = (x1 - bar_x1) * 0.22;
        let at = |k: usize, y: f64| (col + if k.is_multiple_of(2) { -step } else { step }, y);
        chart.draw_series(
            dots.iter()
                .enumerate()
                .map(|(k, y)| Circle::new(at(k, *y), 3, c.filled())),
        )?;
        chart.draw_series(
            dots.iter()
                .enumerate()
                .map(|(k, y)| Circle::new(at(k, *y), 3, BLACK.stroke_width(1))),
        )?;
    }
    if let Some((lo, hi)) = whisker {
        draw_whisker(chart, *lo, *hi, x0, bar_x1)?;
    }
    // A bar only a few pixels high says its value.
    let (_, base) = chart.backend_coord(&(x0, 0.0));
    let (_, top) = chart.backend_coord(&(x0, *v));
    if label_small && (base - top).abs() < SMALL_BAR_PX {
        let above = whisker.map_or(*v, |(_, hi)| hi.max(*v));
        let (_, y) = chart.backend_coord(&((x0 + bar_x1) / 2.0, above));
        let (x, _) = chart.backend_coord(&((x0 + bar_x1) / 2.0, above));
        let plot = chart.plotting_area().strip_coord_spec();
        let (bx, by) = plot.get_base_pixel();
        plot.draw(&Text::new(
            short(*v),
            (x - bx, y - by - 4),
            font(12).pos(Pos::new(HPos::Center, VPos::Bottom)),
        ))?;
    }
    Ok(())
}

/// A min-max line down the middle of a bar, capped at both ends.
fn draw_whisker<DB: DrawingBackend>(
    chart: &mut BarChart<'_, DB>,
    lo: f64,
    hi: f64,
    x0: f64,
    x1: f64,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let mid = (x0 + x1) / 2.0;
    let cap = (x1 - x0) * 0.25;
    let style = BLACK.stroke_width(2);
    chart.draw_series(std::iter::once(PathElement::new(
        vec![(mid, lo), (mid, hi)],
        style,
    )))?;
    for y in [lo, hi] {
        chart.draw_series(std::iter::once(PathElement::new(
            vec![(mid - cap, y), (mid + cap, y)],
            style,
        )))?;
    }
    Ok(())
}

/// The text above group `i`, smaller when it is wider than the group.
fn draw_group_text<DB: DrawingBackend>(
    chart: &mut BarChart<'_, DB>,
    g: &Group,
    text: &str,
    i: usize,
    group_px: f64,
    y_span: f64,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let high = g
        .bars
        .iter()
        .map(|(v, w, _)| w.map_or(*v, |(_, hi)| hi.max(*v)))
        .fold(0.0, f64::max);
    let size = if text.chars().count() as f64 * 8.0 > group_px {
        11
    } else {
        14
    };
    chart.draw_series(std::iter::once(Text::new(
        text.to_string(),
        (i as f64, high + y_span * 0.03),
        font(size).pos(Pos::new(HPos::Center, VPos::Bottom)),
    )))?;
    Ok(())
}

pub(super) fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    y_label: &str,
    bars: &[Bar],
    footer: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let root = &footed(root, footer)?;
    let body = titled(root, title, "")?;
    let groups: Vec<Group> = bars
        .iter()
        .map(|(name, v, w)| Group {
            label: name.clone(),
            bars: vec![(*v, *w, TAB10[0])],
            dots: Vec::new(),
            top: Some(short(*v)),
        })
        .collect();
    if groups.is_empty() {
        return draw_centred(&body, "no data", font(18));
    }
    bar_panel(&body.margin(10, 10, 10, 20), &groups, y_label)
}
