//! The building blocks every figure shares: fonts, colours, legends, axes, line panels.

use std::ops::Range;

use anyhow::Result;
use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::{
    AsRangedCoord, DefaultFormatting, KeyPointHint, Ranged, ValueFormatter,
};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::format::si;

/// The registered name of the embedded font; SVG files carry it as their font family, so
/// a viewer with DejaVu Sans draws the same letters as the PNG.
pub(super) const SANS: &str = "DejaVu Sans";

/// Room right of the plots for the legend, so that it never covers data.
pub(super) const LEGEND_W: u32 = 210;

const GRID_BOLD: RGBColor = RGBColor(205, 205, 205);
const GRID_LIGHT: RGBColor = RGBColor(238, 238, 238);
pub(super) const SUBTLE: RGBColor = RGBColor(90, 90, 90);

/// Matplotlib's tab10: ten colours that stay apart, and that many readers know.
pub(super) const TAB10: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

pub(super) fn font(size: u32) -> TextStyle<'static> {
    (SANS, size).into_font().color(&BLACK)
}

/// Colour `i` of `n` lines. Past ten, hues go round the wheel in task order (a nice
/// ladder reads as a gradient) with alternating lightness so neighbours differ.
pub(super) fn color(i: usize, n: usize) -> RGBColor {
    if n <= TAB10.len() {
        return TAB10[i % TAB10.len()];
    }
    let hue = 0.8 * i as f64 / (n - 1).max(1) as f64;
    let light = if i.is_multiple_of(2) { 0.36 } else { 0.52 };
    let (r, g, b) = HSLColor(hue, 0.8, light).to_backend_color().rgb;
    RGBColor(r, g, b)
}

/// With a few lines, earlier ones are drawn wider so that a line lying on top of
/// another (writer and reader switch together) leaves it visible as a border.
pub(super) fn line_width(i: usize, n: usize) -> u32 {
    if n <= 3 {
        2 + 2 * (n - 1 - i) as u32
    } else {
        2
    }
}

/// The title, and a second smaller line under it when there is one; returns the rest.
pub(super) fn titled<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    subtitle: &str,
) -> Result<DrawingArea<DB, Shift>>
where
    DB::ErrorType: 'static,
{
    let area = root.margin(6, 0, 0, 0).titled(title, font(24))?;
    if subtitle.is_empty() {
        return Ok(area);
    }
    Ok(area.titled(subtitle, font(15).color(&SUBTLE))?)
}

/// Room under a figure for its footer.
const FOOTER_H: u32 = 22;

/// The footer line (kernel, host, date, samples) at the bottom left; returns the rest.
pub(super) fn footed<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    text: &str,
) -> Result<DrawingArea<DB, Shift>>
where
    DB::ErrorType: 'static,
{
    let (_, h) = root.dim_in_pixel();
    let (body, foot) = root.split_vertically(h.saturating_sub(FOOTER_H));
    foot.draw(&Text::new(
        text.to_string(),
        (10, FOOTER_H as i32 / 2),
        font(12)
            .color(&SUBTLE)
            .pos(Pos::new(HPos::Left, VPos::Center)),
    ))?;
    Ok(body)
}

/// The footer's text: "Linux 6.18.44, 2 CPUs; host h, 2026-12-01 21:40 UTC; 40 samples".
pub(super) fn footer_text(kernel: &str, cpus: usize, samples: &str) -> String {
    format!(
        "Linux {kernel}, {}; {}; {samples}",
        crate::format::counted(cpus as u64, "CPU"),
        super::stamp()
    )
}

/// [`display_unit`] for figures: micro is written µ.
pub(super) fn plot_unit(unit: &str, max_abs: f64) -> (f64, String) {
    let (div, u) = crate::report::compare::display_unit(unit, max_abs);
    (div, micro(&u))
}

/// "us" as a unit (alone or before "/", ",", ")" or a space) becomes "µs".
pub(super) fn micro(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < b.len() {
        let starts_word = i == 0 || !b[i - 1].is_ascii_alphanumeric();
        let ends_word = i + 2 >= b.len() || !b[i + 2].is_ascii_alphanumeric();
        if s[i..].starts_with("us") && starts_word && ends_word {
            out.push_str("µs");
            i += 2;
        } else {
            let c = s[i..].chars().next().unwrap_or(' ');
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

/// What a legend line looks like.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Mark {
    Line,
    Dashed,
}

/// A legend in its own column: one row per entry, rows shrink (and finally stop with
/// "+N more") when there are many.
pub(super) fn legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    top: i32,
    entries: &[(String, RGBColor, Mark)],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    if entries.is_empty() {
        return Ok(());
    }
    let (w, h) = area.dim_in_pixel();
    let avail = (h as i32 - top - 10).max(20);
    let row = (avail / entries.len() as i32).clamp(13, 24);
    let size = if row >= 18 { 15 } else { 12 };
    let fits = (avail / row).max(1) as usize;
    let shown = if fits >= entries.len() {
        entries.len()
    } else {
        fits - 1
    };
    for (i, (name, c, mark)) in entries.iter().take(shown).enumerate() {
        let y = top + row / 2 + row * i as i32;
        let (x0, x1) = (8, 36);
        match mark {
            Mark::Line => {
                area.draw(&PathElement::new(vec![(x0, y), (x1, y)], c.stroke_width(3)))?
            }
            Mark::Dashed => {
                for x in (x0..x1).step_by(8) {
                    area.draw(&PathElement::new(
                        vec![(x, y), ((x + 4).min(x1), y)],
                        c.stroke_width(2),
                    ))?;
                }
            }
        }
        let room = (w as i32 - x1 - 12).max(10) as u32;
        let mut label = name.clone();
        while label.chars().count() > 2 && area.estimate_text_size(&label, &font(size))?.0 > room {
            label.pop();
            label.pop();
            label.push('…');
        }
        area.draw(&Text::new(
            label,
            (x1 + 8, y),
            font(size).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    if shown < entries.len() {
        let y = top + row / 2 + row * shown as i32;
        area.draw(&Text::new(
            format!("+{} more", entries.len() - shown),
            (8, y),
            font(size).pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
    }
    Ok(())
}

/// A labelled vertical line across a time panel.
pub(super) struct Marker {
    pub(super) t: f64,
    pub(super) label: String,
    pub(super) color: RGBColor,
}

/// One line of a panel.
pub(super) struct Line {
    pub(super) color: RGBColor,
    pub(super) width: u32,
    pub(super) points: Vec<(f64, f64)>,
}

/// Pixel geometry every chart uses, so that label rows can be planned
/// before the chart exists.
const MARGIN: u32 = 10;
const Y_AREA: u32 = 78;
pub(super) const X_AREA: u32 = 44;
const LABEL_ROW: i32 = 16;

/// Rows for marker labels so that none overlaps another: (row of each marker, rows).
pub(super) fn label_rows<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    x_range: &Range<f64>,
    markers: &[Marker],
) -> Result<(Vec<usize>, usize)>
where
    DB::ErrorType: 'static,
{
    let (w, _) = area.dim_in_pixel();
    let plot_w = w.saturating_sub(Y_AREA + 2 * MARGIN).max(1) as f64;
    let span = (x_range.end - x_range.start).max(1e-9);
    let mut rows_end: Vec<f64> = Vec::new();
    let mut rows = Vec::new();
    for m in markers {
        let x = (m.t - x_range.start) / span * plot_w;
        let (tw, _) = area.estimate_text_size(&m.label, &font(13))?;
        let (start, end) = label_span(x, tw as f64, plot_w);
        let row = match rows_end.iter().position(|&e| e + 6.0 <= start) {
            Some(r) => r,
            None => {
                rows_end.push(f64::MIN);
                rows_end.len() - 1
            }
        };
        rows_end[row] = end;
        rows.push(row);
    }
    Ok((rows, rows_end.len()))
}

/// Where a marker's label goes: right of its line, or left of it near the right edge.
fn label_span(x: f64, width: f64, plot_w: f64) -> (f64, f64) {
    if x + 4.0 + width <= plot_w {
        (x + 4.0, x + 4.0 + width)
    } else {
        (x - 4.0 - width, x - 4.0)
    }
}

/// The top of a y range that leaves `rows` label rows free above `data_max`.
pub(super) fn headroom<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    lo: f64,
    data_max: f64,
    rows: usize,
    log: bool,
) -> f64 {
    let (_, h) = area.dim_in_pixel();
    let plot_h = h.saturating_sub(X_AREA + 2 * MARGIN).max(40) as f64;
    let free = (rows as f64 * LABEL_ROW as f64 + if rows > 0 { 8.0 } else { 0.0 }) / plot_h;
    let frac = (free + 0.06).min(0.6);
    if log {
        let (l, m) = (lo.log10(), data_max.max(lo * 10.0).log10());
        10f64.powf(m + (m - l) * frac / (1.0 - frac))
    } else {
        lo + (data_max - lo) / (1.0 - frac)
    }
}

/// `10k`, `1M`, `1.5k`: ticks of a log axis.
pub(super) fn si_tick(v: f64) -> String {
    let s = si(v);
    match s.find(".0") {
        Some(i) if !s[i + 2..].starts_with(|c: char| c.is_ascii_digit()) => {
            format!("{}{}", &s[..i], &s[i + 2..])
        }
        _ => s,
    }
}

/// `20`, `2.5`, `0.25`: tick labels without trailing zeros.
pub(super) fn trim_number(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// What a line panel's axes say: descriptions, tick formats, how many y ticks.
pub(super) struct Axes<'a> {
    pub(super) x_desc: &'a str,
    pub(super) y_desc: &'a str,
    pub(super) x_fmt: &'a dyn Fn(&f64) -> String,
    pub(super) y_fmt: &'a dyn Fn(&f64) -> String,
    pub(super) y_labels: usize,
    /// Where a log y axis is broken: the axis' bottom stands for 0 (its tick reads "0")
    /// and the break mark goes at this value above it.
    pub(super) y_break: Option<f64>,
}

/// The chart builder every panel starts from: one margin and label-area layout.
pub(super) fn panel_builder<'a, 'b, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    x_area: u32,
) -> ChartBuilder<'a, 'b, DB> {
    let mut builder = ChartBuilder::on(area);
    builder
        .margin(MARGIN)
        .x_label_area_size(x_area)
        .y_label_area_size(Y_AREA);
    builder
}

/// The grid and fonts every panel shares.
pub(super) fn house_mesh<'a, 'b, 'm, X: Ranged, Y: Ranged, DB: DrawingBackend>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB> {
    mesh.label_style(font(13))
        .axis_desc_style(font(15))
        .bold_line_style(GRID_BOLD)
        .light_line_style(GRID_LIGHT)
        .max_light_lines(1)
}

/// Lines over x, with dashed markers (each with its label row in the headroom).
#[allow(clippy::too_many_arguments)]
pub(super) fn line_chart<DB: DrawingBackend, X, Y>(
    area: &DrawingArea<DB, Shift>,
    x_spec: X,
    y_spec: Y,
    y: &Range<f64>,
    lines: &[Line],
    markers: &[(&Marker, usize)],
    axes: &Axes,
    note: Option<&str>,
) -> Result<()>
where
    DB::ErrorType: 'static,
    X: AsRangedCoord<Value = f64>,
    X::CoordDescType: ValueFormatter<f64>,
    Y: AsRangedCoord<Value = f64>,
    Y::CoordDescType: ValueFormatter<f64>,
{
    let mut chart = panel_builder(area, X_AREA).build_cartesian_2d(x_spec, y_spec)?;
    house_mesh(&mut chart.configure_mesh())
        .x_desc(axes.x_desc)
        .y_desc(axes.y_desc)
        .x_labels(12)
        .y_labels(axes.y_labels)
        .x_label_formatter(axes.x_fmt)
        .y_label_formatter(axes.y_fmt)
        .draw()?;
    for line in lines {
        chart.draw_series(LineSeries::new(
            line.points.iter().copied(),
            line.color.stroke_width(line.width),
        ))?;
    }
    if let Some(at) = axes.y_break {
        let (ax, ay) = area.get_base_pixel();
        let (px, py) = chart.backend_coord(&(chart.x_range().start, at));
        draw_axis_break(area, (px - ax, py - ay))?;
    }
    let plot = chart.plotting_area().strip_coord_spec();
    let (base_x, _) = plot.get_base_pixel();
    let (plot_w, _) = plot.dim_in_pixel();
    for (m, row) in markers {
        chart.draw_series(DashedLineSeries::new(
            vec![(m.t, y.start), (m.t, y.end)],
            6,
            4,
            m.color.stroke_width(1),
        ))?;
        let px = chart.backend_coord(&(m.t, y.end)).0 - base_x;
        let (tw, _) = plot.estimate_text_size(&m.label, &font(13))?;
        let (start, _) = label_span(px as f64, tw as f64, plot_w as f64);
        plot.draw(&Text::new(
            m.label.clone(),
            (start as i32, 4 + LABEL_ROW * *row as i32),
            font(13).color(&m.color),
        ))?;
    }
    if let Some(note) = note {
        draw_note(&plot, note)?;
    }
    Ok(())
}

/// The mark of a broken axis at `at` (pixels in `area`) on a vertical axis: a white gap
/// in the axis line between two short parallel slashes.
fn draw_axis_break<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, at: (i32, i32)) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let (x, y) = at;
    area.draw(&Rectangle::new(
        [(x - 7, y - 3), (x + 7, y + 3)],
        WHITE.filled(),
    ))?;
    for dy in [-3, 3] {
        area.draw(&PathElement::new(
            vec![(x - 7, y + dy + 3), (x + 7, y + dy - 3)],
            BLACK.stroke_width(1),
        ))?;
    }
    Ok(())
}

/// A message in the middle of a plotting area (e.g. "no samples").
pub(super) fn draw_note<DB: DrawingBackend>(plot: &DrawingArea<DB, Shift>, note: &str) -> Result<()>
where
    DB::ErrorType: 'static,
{
    draw_centred(plot, note, font(15).color(&SUBTLE))
}

/// `text` centred in `area`, in `style`.
pub(super) fn draw_centred<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    style: TextStyle,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let (w, h) = area.dim_in_pixel();
    area.draw(&Text::new(
        text.to_string(),
        (w as i32 / 2, h as i32 / 2),
        style.pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    Ok(())
}

/// A y range from 0 to a bit above the data, never empty.
pub(super) fn linear_top(max: f64) -> f64 {
    if max.is_finite() && max > 0.0 {
        max * 1.05
    } else {
        1.0
    }
}

/// An f64 axis whose ticks are exactly `keys` over a linear or log coordinate (plotters'
/// `WithKeyPoints` over f64 has no label formatter, and the label text comes from a
/// closure anyway; a broken log axis' bottom gets its "0" tick whichever decades
/// plotters would have picked).
pub(super) struct KeyTicks<C> {
    inner: C,
    keys: Vec<f64>,
}

/// Exact ticks on a linear axis.
pub(super) type Ticks = KeyTicks<RangedCoordf64>;
/// Exact ticks on a log axis.
pub(super) type LogTicks = KeyTicks<LogCoord<f64>>;

impl Ticks {
    pub(super) fn new(range: Range<f64>, keys: Vec<f64>) -> Ticks {
        KeyTicks {
            inner: range.into(),
            keys,
        }
    }
}

impl LogTicks {
    pub(super) fn new(range: Range<f64>, keys: Vec<f64>) -> LogTicks {
        KeyTicks {
            inner: range.log_scale().into(),
            keys,
        }
    }
}

impl<C: Ranged<ValueType = f64>> Ranged for KeyTicks<C> {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.keys.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.inner.range()
    }
}
