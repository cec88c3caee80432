//! Plots of runs, sweeps and comparisons as PNG or SVG files, readable without the terminal.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::Path;
use std::sync::OnceLock;

use anyhow::{bail, Context, Result};
use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::{
    AsRangedCoord, DefaultFormatting, KeyPointHint, Ranged, ValueFormatter,
};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::compare::{display_unit, ratio_text, short, CompareReport};
use crate::report::{si, RunReport};
use crate::sweep::SweepReport;

/// The one font of every plot, embedded so that no font has to be installed.
const FONT: &[u8] = include_bytes!("../assets/fonts/DejaVuSans.ttf");
const SANS: &str = "sans-serif";
/// Multi-panel figures.
const TALL: (u32, u32) = (1200, 900);
/// One-panel figures.
const FLAT: (u32, u32) = (1200, 700);
/// Room right of the plots for the legend, so that it never covers data.
const LEGEND_W: u32 = 210;

const GRID_BOLD: RGBColor = RGBColor(205, 205, 205);
const GRID_LIGHT: RGBColor = RGBColor(238, 238, 238);
const EVENT_OK: RGBColor = RGBColor(70, 70, 70);
const EVENT_REFUSED: RGBColor = RGBColor(200, 30, 30);
const SUBTLE: RGBColor = RGBColor(90, 90, 90);

/// Matplotlib's tab10: ten colours that stay apart, and that many readers know.
const TAB10: [RGBColor; 10] = [
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

/// A bar of [`plot_bars`]: its label, value and an optional (min, max) whisker.
pub type Bar = (String, f64, Whisker);
/// The (min, max) a whisker spans.
pub type Whisker = Option<(f64, f64)>;

/// A plot file's format, from its extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Png,
    Svg,
}

/// The format `path` asks for; anything but .png and .svg is an error. Cheap: callers
/// check a `--plot` path with it before a run, not after.
pub fn format_of(path: &Path) -> Result<Format> {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .map(str::to_ascii_lowercase);
    match ext.as_deref() {
        Some("png") => Ok(Format::Png),
        Some("svg") => Ok(Format::Svg),
        _ => bail!(
            "plot file must end in .png or .svg, not \"{}\"",
            path.display()
        ),
    }
}

/// Time series of a run: CPU share, switches and the headline group's throughput, with
/// every knob change marked.
pub fn plot_run(report: &RunReport, path: &Path) -> Result<()> {
    save(path, TALL, &Figure::Run(report))
}

/// CPU share of each task and the headline over the swept knob's values.
pub fn plot_sweep(report: &SweepReport, path: &Path) -> Result<()> {
    save(path, TALL, &Figure::Sweep(report))
}

/// Side A against side B: bars of the medians with min-max whiskers, B/A above each.
pub fn plot_compare(report: &CompareReport, path: &Path) -> Result<()> {
    let rows = compare_layout(&compare_panels(report)).len().max(1);
    let height = if rows <= 3 {
        TALL.1
    } else {
        130 + 260 * rows as u32
    };
    save(path, (TALL.0, height), &Figure::Compare(report))
}

/// Bars with an optional (min, max) whisker each.
pub fn plot_bars(path: &Path, title: &str, y_label: &str, bars: &[Bar]) -> Result<()> {
    save(
        path,
        FLAT,
        &Figure::Bars {
            title,
            y_label,
            bars,
        },
    )
}

/// Several histograms or curves on one x axis (logarithmic with `log_x`, where points
/// with x <= 0 are left out): each series is (name, points (x, y)).
pub fn plot_curves(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    log_x: bool,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<()> {
    save(
        path,
        FLAT,
        &Figure::Curves {
            title,
            x_label,
            y_label,
            log_x,
            series,
        },
    )
}

enum Figure<'a> {
    Run(&'a RunReport),
    Sweep(&'a SweepReport),
    Compare(&'a CompareReport),
    Bars {
        title: &'a str,
        y_label: &'a str,
        bars: &'a [Bar],
    },
    Curves {
        title: &'a str,
        x_label: &'a str,
        y_label: &'a str,
        log_x: bool,
        series: &'a [(String, Vec<(f64, f64)>)],
    },
}

/// plotters with `ab_glyph` knows no font until one is registered, and registering
/// twice would only waste time.
fn register_font() -> Result<()> {
    static REGISTERED: OnceLock<bool> = OnceLock::new();
    let ok = *REGISTERED
        .get_or_init(|| plotters::style::register_font(SANS, FontStyle::Normal, FONT).is_ok());
    if !ok {
        bail!("the font embedded from assets/fonts/DejaVuSans.ttf is not a TrueType font");
    }
    Ok(())
}

fn save(path: &Path, size: (u32, u32), figure: &Figure) -> Result<()> {
    let format = format_of(path)?;
    register_font()?;
    let written = match format {
        Format::Png => draw_on(BitMapBackend::new(path, size).into_drawing_area(), figure),
        Format::Svg => draw_on(SVGBackend::new(path, size).into_drawing_area(), figure),
    };
    written.with_context(|| format!("writing plot {}", path.display()))
}

fn draw_on<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, figure: &Figure) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    match figure {
        Figure::Run(r) => draw_run(&root, r)?,
        Figure::Sweep(r) => draw_sweep(&root, r)?,
        Figure::Compare(r) => draw_compare(&root, r)?,
        Figure::Bars {
            title,
            y_label,
            bars,
        } => draw_bars(&root, title, y_label, bars)?,
        Figure::Curves {
            title,
            x_label,
            y_label,
            log_x,
            series,
        } => draw_curves(&root, title, x_label, y_label, *log_x, series)?,
    }
    root.present()?;
    Ok(())
}

fn font(size: u32) -> TextStyle<'static> {
    (SANS, size).into_font().color(&BLACK)
}

/// Colour `i` of `n` lines. Past ten, hues go round the wheel in task order (a nice
/// ladder reads as a gradient) with alternating lightness so neighbours differ.
fn color(i: usize, n: usize) -> RGBColor {
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
fn line_width(i: usize, n: usize) -> u32 {
    if n <= 3 {
        2 + 2 * (n - 1 - i) as u32
    } else {
        2
    }
}

/// The title, and a second smaller line under it when there is one; returns the rest.
fn titled<DB: DrawingBackend>(
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

/// What a legend line looks like.
#[derive(Clone, Copy, PartialEq)]
enum Mark {
    Line,
    Dashed,
}

/// A legend in its own column: one row per entry, rows shrink (and finally stop with
/// "+N more") when there are many.
fn legend<DB: DrawingBackend>(
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
struct Marker {
    t: f64,
    label: String,
    color: RGBColor,
}

/// One line of a panel.
struct Line {
    color: RGBColor,
    width: u32,
    points: Vec<(f64, f64)>,
}

/// Pixel geometry every chart of this file uses, so that label rows can be planned
/// before the chart exists.
const MARGIN: u32 = 10;
const Y_AREA: u32 = 78;
const X_AREA: u32 = 44;
const LABEL_ROW: i32 = 16;

/// Rows for marker labels so that none overlaps another: (row of each marker, rows).
fn label_rows<DB: DrawingBackend>(
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
fn headroom<DB: DrawingBackend>(
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

/// `10k`, `1M`, `1.5k`: ticks of a log axis.
fn si_tick(v: f64) -> String {
    let s = si(v);
    match s.find(".0") {
        Some(i) if !s[i + 2..].starts_with(|c: char| c.is_ascii_digit()) => {
            format!("{}{}", &s[..i], &s[i + 2..])
        }
        _ => s,
    }
}

/// `20`, `2.5`, `0.25`: tick labels without trailing zeros.
fn trim_number(v: f64) -> String {
    let s = format!("{v:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" {
        "0".into()
    } else {
        s.to_string()
    }
}

/// What a line panel's axes say: descriptions, tick formats, how many y ticks.
struct Axes<'a> {
    x_desc: &'a str,
    y_desc: &'a str,
    x_fmt: &'a dyn Fn(&f64) -> String,
    y_fmt: &'a dyn Fn(&f64) -> String,
    y_labels: usize,
}

/// The chart builder every panel starts from: one margin and label-area layout.
fn panel_builder<'a, 'b, DB: DrawingBackend>(
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
fn house_mesh<'a, 'b, 'm, X: Ranged, Y: Ranged, DB: DrawingBackend>(
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
fn line_chart<DB: DrawingBackend, X, Y>(
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

/// A message in the middle of a plotting area (e.g. "no samples").
fn draw_note<DB: DrawingBackend>(plot: &DrawingArea<DB, Shift>, note: &str) -> Result<()>
where
    DB::ErrorType: 'static,
{
    draw_centred(plot, note, font(15).color(&SUBTLE))
}

/// `text` centred in `area`, in `style`.
fn draw_centred<DB: DrawingBackend>(
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
fn linear_top(max: f64) -> f64 {
    if max.is_finite() && max > 0.0 {
        max * 1.05
    } else {
        1.0
    }
}

fn draw_run<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &RunReport) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let title = format!("{} - Linux {}, {} CPUs", r.preset, r.kernel, r.cpus);
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
    if r.interrupted {
        sub.push("interrupted".into());
    }
    let body = titled(root, &title, &sub.join("; "))?;
    let (w, _) = body.dim_in_pixel();
    let (plots, side) = body.split_horizontally(w.saturating_sub(LEGEND_W));
    let panels = plots.split_evenly((3, 1));

    let s = &r.series;
    let n = s.tasks.len();
    let x_end = s
        .points
        .iter()
        .map(|p| p.t_s)
        .fold(r.duration_s, f64::max)
        .max(0.1);
    let x = 0.0..x_end;
    let mut cpu_lines: Vec<Line> = (0..n)
        .map(|i| Line {
            color: color(i, n),
            width: line_width(i, n),
            points: Vec::new(),
        })
        .collect();
    let mut switch_lines: Vec<Line> = (0..n)
        .map(|i| Line {
            color: color(i, n),
            width: line_width(i, n),
            points: Vec::new(),
        })
        .collect();
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
        if let Some(l) = cpu_lines.get_mut(p.task) {
            l.points.push((p.t_s, p.cpu_share * 100.0));
        }
        if let Some(l) = switch_lines.get_mut(p.task) {
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
    let unit = r.metrics.throughput_unit.as_str();
    let tp_max = throughput.values().map(|v| v.1).fold(0.0, f64::max);
    let (div, shown_unit) = display_unit(&format!("{unit}/s"), tp_max);
    let tp_line = Line {
        color: BLACK,
        width: 2,
        points: throughput.values().map(|&(t, v)| (t, v / div)).collect(),
    };

    let markers: Vec<Marker> = r
        .events
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
        .collect();
    let (_, label_rows_n) = label_rows(&panels[0], &x, &markers)?;
    let no_data = s.points.is_empty().then_some("no samples");

    let cpu_max = cpu_lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(0.0, f64::max);
    let cpu_top = headroom(
        &panels[0],
        0.0,
        linear_top(cpu_max).max(5.0),
        label_rows_n,
        false,
    );
    time_panel(
        &panels[0],
        x.clone(),
        0.0..cpu_top,
        false,
        &cpu_lines,
        &markers,
        "time (s)",
        "CPU share (% of one CPU)",
        no_data,
    )?;

    let sw_max = switch_lines
        .iter()
        .flat_map(|l| l.points.iter().map(|p| p.1))
        .fold(1.0, f64::max);
    let sw_top = headroom(&panels[1], 1.0, sw_max * 1.5, label_rows_n, true);
    time_panel(
        &panels[1],
        x.clone(),
        1.0..sw_top,
        true,
        &switch_lines,
        &markers,
        "time (s)",
        "switches/s per task (log)",
        no_data,
    )?;

    let tp_top = headroom(
        &panels[2],
        0.0,
        linear_top(tp_max / div),
        label_rows_n,
        false,
    );
    let tp_note = if unit.is_empty() {
        Some(format!("the {group} tasks count no progress"))
    } else {
        no_data.map(str::to_string)
    };
    time_panel(
        &panels[2],
        x,
        0.0..tp_top,
        false,
        &[tp_line],
        &markers,
        "time (s)",
        &format!("{group} throughput ({shown_unit})"),
        tp_note.as_deref(),
    )?;

    let mut entries: Vec<(String, RGBColor, Mark)> = s
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
    entries.push((format!("{group} throughput"), BLACK, Mark::Line));
    if !markers.is_empty() {
        entries.push(("knob change".into(), EVENT_OK, Mark::Dashed));
    }
    legend(&side, 16, &entries)
}

/// A linear f64 axis whose ticks are exactly `keys` (plotters' `WithKeyPoints` over f64
/// has no label formatter, and the label text comes from a closure anyway).
struct Ticks {
    inner: RangedCoordf64,
    keys: Vec<f64>,
}

impl Ticks {
    fn new(range: Range<f64>, keys: Vec<f64>) -> Ticks {
        Ticks {
            inner: range.into(),
            keys,
        }
    }
}

impl Ranged for Ticks {
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

/// Key points and labels of a sweep's x axis: the values themselves when they are all
/// numbers, else evenly spaced categories.
struct SweepAxis {
    range: Range<f64>,
    xs: Vec<f64>,
    labels: Vec<(f64, String)>,
}

fn sweep_axis(values: &[String]) -> SweepAxis {
    let numbers: Option<Vec<f64>> = values
        .iter()
        .map(|v| v.parse::<f64>().ok().filter(|f| f.is_finite()))
        .collect();
    match numbers {
        Some(xs) if !xs.is_empty() => {
            let lo = xs.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let pad = if hi > lo { (hi - lo) * 0.05 } else { 1.0 };
            // Labels closer than 4% of the axis would overlap: keep the first of them.
            let mut labels: Vec<(f64, String)> = Vec::new();
            let mut sorted: Vec<(f64, &String)> = xs.iter().copied().zip(values).collect();
            sorted.sort_by(|a, b| a.0.total_cmp(&b.0));
            for (x, v) in sorted {
                if labels
                    .last()
                    .is_none_or(|(l, _)| x - l >= (hi - lo + 2.0 * pad) * 0.04)
                {
                    labels.push((x, v.clone()));
                }
            }
            SweepAxis {
                range: lo - pad..hi + pad,
                xs,
                labels,
            }
        }
        _ => {
            let xs: Vec<f64> = (0..values.len()).map(|i| i as f64).collect();
            SweepAxis {
                range: -0.5..values.len().max(1) as f64 - 0.5,
                labels: xs.iter().copied().zip(values.iter().cloned()).collect(),
                xs,
            }
        }
    }
}

/// The headline of a sweep or run in a unit people read: (divide by, axis text).
fn headline_axis(kind: &str, task: &str, unit: &str, max: f64) -> (f64, String) {
    match kind {
        "share" => (0.01, format!("{task} CPU share (% of one CPU)")),
        "fairness" => (0.01, "fairness error (% of CPU time)".into()),
        "latency" => {
            let (div, u) = display_unit(unit, max);
            (div, format!("{task} switch latency p50 ({u})"))
        }
        _ => {
            let (div, u) = display_unit(unit, max);
            (div, format!("{task} {kind} ({u})"))
        }
    }
}

fn draw_sweep<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &SweepReport) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let title = format!(
        "{} - Linux {}, {} CPUs: sweep of {}",
        r.preset, r.kernel, r.cpus, r.knob
    );
    let sub = format!(
        "{} values, {:.1} s each{}",
        r.rows.len(),
        r.duration_s,
        if r.interrupted { "; interrupted" } else { "" }
    );
    let body = titled(root, &title, &sub)?;
    let (w, _) = body.dim_in_pixel();
    let (plots, side) = body.split_horizontally(w.saturating_sub(LEGEND_W));
    let panels = plots.split_evenly((2, 1));
    let values: Vec<String> = r.rows.iter().map(|row| row.value.clone()).collect();
    let axis = sweep_axis(&values);

    // Tasks by name in first-seen order: a count sweep changes which tasks exist.
    let mut names: Vec<String> = Vec::new();
    for row in &r.rows {
        for (name, _) in &row.cpu_share {
            if !names.contains(name) {
                names.push(name.clone());
            }
        }
    }
    let n = names.len();
    let share_series: Vec<(RGBColor, Vec<(f64, f64)>)> = names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let pts = r
                .rows
                .iter()
                .zip(&axis.xs)
                .filter_map(|(row, &x)| {
                    row.cpu_share
                        .iter()
                        .find(|(n, _)| n == name)
                        .map(|(_, s)| (x, s * 100.0))
                })
                .collect();
            (color(i, n), pts)
        })
        .collect();
    let share_max = share_series
        .iter()
        .flat_map(|(_, p)| p.iter().map(|q| q.1))
        .fold(0.0, f64::max);
    let empty = r.rows.is_empty().then_some("no runs");
    sweep_panel(
        &panels[0],
        &axis,
        0.0..linear_top(share_max).max(5.0) * 1.04,
        &share_series,
        &r.knob,
        "CPU share (% of one CPU)",
        empty,
    )?;

    let head = r.rows.first().map(|row| &row.headline);
    let h_max = r
        .rows
        .iter()
        .map(|row| row.headline.value.abs())
        .fold(0.0, f64::max);
    let (div, desc) = head.map_or((1.0, "headline".to_string()), |h| {
        headline_axis(&h.kind, &h.task, &h.unit, h_max)
    });
    let pts: Vec<(f64, f64)> = r
        .rows
        .iter()
        .zip(&axis.xs)
        .map(|(row, &x)| (x, row.headline.value / div))
        .collect();
    sweep_panel(
        &panels[1],
        &axis,
        0.0..linear_top(h_max / div) * 1.04,
        &[(BLACK, pts)],
        &r.knob,
        &desc,
        empty,
    )?;

    let entries: Vec<(String, RGBColor, Mark)> = names
        .iter()
        .enumerate()
        .map(|(i, name)| (name.clone(), color(i, n), Mark::Line))
        .collect();
    legend(&side, 16, &entries)
}

fn sweep_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    axis: &SweepAxis,
    y: Range<f64>,
    series: &[(RGBColor, Vec<(f64, f64)>)],
    x_desc: &str,
    y_desc: &str,
    note: Option<&str>,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let keys: Vec<f64> = axis.labels.iter().map(|(x, _)| *x).collect();
    let mut chart =
        panel_builder(area, X_AREA).build_cartesian_2d(Ticks::new(axis.range.clone(), keys), y)?;
    let label_of = |v: &f64| {
        axis.labels
            .iter()
            .find(|(x, _)| (x - v).abs() < 1e-9 * x.abs().max(1.0))
            .map_or_else(String::new, |(_, l)| l.clone())
    };
    house_mesh(&mut chart.configure_mesh())
        .x_desc(x_desc)
        .y_desc(y_desc)
        .y_labels(6)
        .x_label_formatter(&label_of)
        .y_label_formatter(&|v| trim_number(*v))
        .draw()?;
    for (c, pts) in series {
        chart.draw_series(LineSeries::new(pts.iter().copied(), c.stroke_width(2)))?;
        chart.draw_series(pts.iter().map(|&p| Circle::new(p, 4, c.filled())))?;
    }
    if let Some(note) = note {
        let plot = chart.plotting_area().strip_coord_spec();
        draw_note(&plot, note)?;
    }
    Ok(())
}

/// The compare panels: metrics with one unit share a panel, in first-seen order.
fn compare_panels(r: &CompareReport) -> Vec<(String, Vec<usize>)> {
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
fn compare_layout(panels: &[(String, Vec<usize>)]) -> Vec<Vec<usize>> {
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
fn common_suffix(names: &[&str]) -> String {
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

const SIDE_A: RGBColor = RGBColor(31, 119, 180);
const SIDE_B: RGBColor = RGBColor(255, 127, 14);

/// One group of the bar panels: its label and bars (value, whisker, colour).
struct Group {
    label: String,
    bars: Vec<(f64, Whisker, RGBColor)>,
    /// Text above the group.
    top: Option<String>,
}

fn draw_compare<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>, r: &CompareReport) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let side = |s: &[String]| {
        if s.is_empty() {
            "preset as is".to_string()
        } else {
            s.join(",")
        }
    };
    let title = format!(
        "{} - Linux {}, {} CPUs: A ({}) vs B ({})",
        r.preset,
        r.kernel,
        r.cpus,
        side(&r.a),
        side(&r.b)
    );
    let title_size = if title.chars().count() > 95 { 18 } else { 22 };
    let area = root.margin(6, 0, 0, 0).titled(&title, font(title_size))?;
    let sub = format!(
        "{} round{} of A then B, {:.1} s each; bars: median, whiskers: min-max; above: median of B/A per round{}",
        r.rounds,
        if r.rounds == 1 { "" } else { "s" },
        r.duration_s,
        if r.interrupted { "; interrupted" } else { "" }
    );
    let area = area.titled(&sub, font(14).color(&SUBTLE))?;
    // The key for the two colours, on a line of its own.
    let (key, body) = area.split_vertically(26);
    let items = [
        (format!("A: {}", side(&r.a)), SIDE_A),
        (format!("B: {}", side(&r.b)), SIDE_B),
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

    let panels = compare_panels(r);
    let layout = compare_layout(&panels);
    if layout.is_empty() {
        return draw_centred(&body, "no complete round", font(18));
    }
    let rows = body.split_evenly((layout.len(), 1));
    for (row_area, row) in rows.iter().zip(&layout) {
        // A lone small panel keeps the width of a pair instead of stretching its bars.
        let cols = if row.len() == 1 && panels[row[0]].1.len() <= 3 {
            2
        } else {
            row.len()
        };
        let cells = row_area.split_evenly((1, cols));
        for (cell, &p) in cells.iter().zip(row) {
            let (unit, ids) = &panels[p];
            let metrics: Vec<&crate::compare::MetricStats> =
                ids.iter().map(|&i| &r.metrics[i]).collect();
            let max = metrics
                .iter()
                .map(|m| m.a.max.abs().max(m.b.max.abs()))
                .fold(0.0, f64::max);
            let (div, shown) = display_unit(unit, max);
            let names: Vec<&str> = metrics.iter().map(|m| m.name.as_str()).collect();
            let suffix = common_suffix(&names);
            let groups: Vec<Group> = metrics
                .iter()
                .map(|m| {
                    let bar = |s: &crate::compare::Stats, c| {
                        (!s.values.is_empty())
                            .then(|| (s.median / div, Some((s.min / div, s.max / div)), c))
                    };
                    Group {
                        label: m
                            .name
                            .strip_suffix(&suffix)
                            .unwrap_or(&m.name)
                            .trim()
                            .to_string(),
                        bars: [bar(&m.a, SIDE_A), bar(&m.b, SIDE_B)]
                            .into_iter()
                            .flatten()
                            .collect(),
                        top: (!m.ratios.is_empty())
                            .then(|| format!("B/A {}x", ratio_text(m.ratio_median))),
                    }
                })
                .collect();
            let y_desc = if suffix.is_empty() {
                shown
            } else {
                format!("{suffix} ({shown})")
            };
            bar_panel(cell, &groups, &y_desc)?;
        }
    }
    Ok(())
}

/// Grouped bars with whiskers and a text above each group.
fn bar_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    groups: &[Group],
    y_desc: &str,
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let n = groups.len().max(1);
    let top = groups
        .iter()
        .flat_map(|g| {
            g.bars
                .iter()
                .map(|(v, w, _)| w.map_or(*v, |(_, hi)| hi.max(*v)))
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
    let y_top = linear_top(top) * 1.18;
    let keys: Vec<f64> = (0..n).map(|i| i as f64).collect();
    let mut chart = panel_builder(area, X_AREA - 10)
        .build_cartesian_2d(Ticks::new(-0.5..n as f64 - 0.5, keys), bottom * 1.1..y_top)?;
    let (plot_w, _) = chart.plotting_area().dim_in_pixel();
    let group_px = plot_w as f64 / n as f64;
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
        for (j, (v, whisker, c)) in g.bars.iter().enumerate() {
            let x0 = start + slot * j as f64 + slot * 0.08;
            let x1 = start + slot * (j + 1) as f64 - slot * 0.08;
            chart.draw_series(std::iter::once(Rectangle::new(
                [(x0, 0.0), (x1, *v)],
                c.filled(),
            )))?;
            if let Some((lo, hi)) = whisker {
                let mid = (x0 + x1) / 2.0;
                let cap = (x1 - x0) * 0.25;
                let style = BLACK.stroke_width(2);
                chart.draw_series(std::iter::once(PathElement::new(
                    vec![(mid, *lo), (mid, *hi)],
                    style,
                )))?;
                for y in [lo, hi] {
                    chart.draw_series(std::iter::once(PathElement::new(
                        vec![(mid - cap, *y), (mid + cap, *y)],
                        style,
                    )))?;
                }
            }
        }
        if let Some(text) = &g.top {
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
                text.clone(),
                (i as f64, high + (y_top - bottom) * 0.03),
                font(size).pos(Pos::new(HPos::Center, VPos::Bottom)),
            )))?;
        }
    }
    Ok(())
}

fn draw_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    y_label: &str,
    bars: &[Bar],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let body = titled(root, title, "")?;
    let groups: Vec<Group> = bars
        .iter()
        .map(|(name, v, w)| Group {
            label: name.clone(),
            bars: vec![(*v, *w, TAB10[0])],
            top: Some(short(*v)),
        })
        .collect();
    if groups.is_empty() {
        return draw_centred(&body, "no data", font(18));
    }
    bar_panel(&body.margin(10, 10, 10, 20), &groups, y_label)
}

fn draw_curves<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    x_label: &str,
    y_label: &str,
    log_x: bool,
    series: &[(String, Vec<(f64, f64)>)],
) -> Result<()>
where
    DB::ErrorType: 'static,
{
    let body = titled(root, title, "")?;
    let (w, _) = body.dim_in_pixel();
    let (plot, side) = body.split_horizontally(w.saturating_sub(LEGEND_W));
    let n = series.len();
    let lines: Vec<Line> = series
        .iter()
        .enumerate()
        .map(|(i, (_, pts))| Line {
            color: color(i, n),
            width: 2,
            points: pts
                .iter()
                .copied()
                .filter(|(x, y)| x.is_finite() && y.is_finite() && (!log_x || *x > 0.0))
                .collect(),
        })
        .collect();
    let all = || lines.iter().flat_map(|l| l.points.iter());
    let x_lo = all().map(|p| p.0).fold(f64::INFINITY, f64::min);
    let x_hi = all().map(|p| p.0).fold(f64::NEG_INFINITY, f64::max);
    let y_lo = all().map(|p| p.1).fold(0.0, f64::min);
    let y_hi = all().map(|p| p.1).fold(0.0, f64::max);
    let empty = !x_lo.is_finite();
    let x = if empty {
        1.0..10.0
    } else if log_x {
        x_lo / 1.2..(x_hi * 1.2).max(x_lo * 10.0)
    } else if x_hi > x_lo {
        x_lo..x_hi
    } else {
        x_lo - 1.0..x_hi + 1.0
    };
    let y = y_lo * 1.05..linear_top(y_hi);
    let note = empty.then_some("no data");
    let plot = plot.margin(10, 10, 10, 10);
    let x_fmt: fn(&f64) -> String = if log_x {
        |v| si_tick(*v)
    } else {
        |v| trim_number(*v)
    };
    let axes = Axes {
        x_desc: x_label,
        y_desc: y_label,
        x_fmt: &x_fmt,
        y_fmt: &|v| trim_number(*v),
        y_labels: 8,
    };
    if log_x {
        line_chart(
            &plot,
            x.log_scale(),
            y.clone(),
            &y,
            &lines,
            &[],
            &axes,
            note,
        )?;
    } else {
        line_chart(&plot, x, y.clone(), &y, &lines, &[], &axes, note)?;
    }
    let entries: Vec<(String, RGBColor, Mark)> = series
        .iter()
        .enumerate()
        .map(|(i, (name, _))| (name.clone(), color(i, n), Mark::Line))
        .collect();
    legend(&side, 16, &entries)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{ratios, stats, MetricStats};
    use crate::report::{EventReport, Headline, Metrics, RunSeries, SeriesPoint, TaskReport};
    use crate::sweep::SweepRow;

    const PNG_MAGIC: &[u8] = b"\x89PNG\r\n\x1a\n";

    /// A directory for the plots of one test; `SCHEDLAB_KEEP_PLOTS=DIR` keeps copies
    /// there for looking at them.
    struct Out(tempfile::TempDir);

    impl Out {
        fn new() -> Out {
            Out(tempfile::tempdir().unwrap())
        }
        fn path(&self, name: &str) -> std::path::PathBuf {
            self.0.path().join(name)
        }
        fn check_png(&self, name: &str, min_bytes: usize) {
            let bytes = std::fs::read(self.path(name)).unwrap();
            assert!(bytes.starts_with(PNG_MAGIC), "{name} is no PNG");
            assert!(
                bytes.len() > min_bytes,
                "{name}: only {} bytes",
                bytes.len()
            );
            self.keep(name);
        }
        fn read_svg(&self, name: &str) -> String {
            self.keep(name);
            std::fs::read_to_string(self.path(name)).unwrap()
        }
        fn keep(&self, name: &str) {
            if let Some(dir) = std::env::var_os("SCHEDLAB_KEEP_PLOTS") {
                std::fs::copy(self.path(name), Path::new(&dir).join(name)).unwrap();
            }
        }
    }

    fn task(name: &str, group: &str, nice: i32, share: f64) -> TaskReport {
        TaskReport {
            name: name.into(),
            group: group.into(),
            pid: 1,
            tid: 1,
            policy: "other".into(),
            nice,
            rt_priority: 0,
            cpus: "0-1".into(),
            last_cpu: Some(0),
            cpu_share: share,
            wait_share: Some(0.1),
            switches_per_s: 100.0,
            voluntary_per_s: 50.0,
            involuntary_per_s: 50.0,
            migrations_per_s: Some(0.0),
            progress_per_s: 1e6,
            progress_unit: "loops".into(),
            progress_total: 1,
            ideal_share: None,
            state: "running".into(),
            exit: None,
        }
    }

    /// A run of `n` tasks over 4 s with two knob changes at 2 s (one refused).
    fn run_report(n: usize, unit: &str) -> RunReport {
        let names: Vec<String> = if n == 2 {
            vec!["writer".into(), "reader".into()]
        } else {
            (0..n).map(|i| format!("busy-{i}")).collect()
        };
        let group = if n == 2 { "writer" } else { "busy" };
        let tasks: Vec<TaskReport> = names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let g = if n == 2 { name.as_str() } else { group };
                task(name, g, i as i32, 1.0 / n as f64)
            })
            .collect();
        let mut points = Vec::new();
        for step in 1..=41 {
            let t = step as f64 * 0.1 - if step == 41 { 0.095 } else { 0.0 };
            let after = t >= 2.0;
            for i in 0..n {
                let share = if after {
                    0.9 - 0.8 * i as f64 / n as f64
                } else {
                    0.6 / (i + 1) as f64
                };
                points.push(SeriesPoint {
                    t_s: t,
                    task: i,
                    cpu_share: share,
                    wait_share: Some(0.2),
                    switches_per_s: if after {
                        130.0 + i as f64
                    } else {
                        83_000.0 / (i + 1) as f64
                    },
                    progress_per_s: if i == 0 {
                        if after {
                            52e6
                        } else {
                            21e6
                        }
                    } else {
                        0.0
                    },
                });
            }
        }
        RunReport {
            preset: if n == 2 { "pipe-wakeup" } else { "nice-ladder" }.into(),
            kernel: "6.18.44".into(),
            cpus: 2,
            duration_s: 4.0,
            summary_from_s: 0.0,
            summary_s: 4.0,
            interval_ms: 100.0,
            settings: Default::default(),
            overrides: vec!["--set writer.cpus=0".into()],
            tasks,
            metrics: Metrics {
                throughput_per_s: 36e6,
                throughput_unit: unit.into(),
                latency_ns: None,
                fairness_error: None,
                stages: Vec::new(),
                cpu: Vec::new(),
                cpu_idle_share: 0.0,
                headline: Headline {
                    kind: "throughput".into(),
                    task: group.into(),
                    value: 36e6,
                    unit: format!("{unit}/s"),
                    text: String::new(),
                },
            },
            warnings: Vec::new(),
            events: vec![
                EventReport {
                    t_s: 2.0,
                    setting: "reader.policy=batch".into(),
                    result: "ok: applied to reader".into(),
                    ok: true,
                },
                EventReport {
                    t_s: 2.0,
                    setting: "writer.policy=batch".into(),
                    result: "ok: applied to writer".into(),
                    ok: true,
                },
                EventReport {
                    t_s: 3.9,
                    setting: "writer.policy=fifo".into(),
                    result: "refused: EPERM".into(),
                    ok: false,
                },
            ],
            interrupted: false,
            series: RunSeries {
                tasks: names,
                points,
                cpus: Vec::new(),
            },
        }
    }

    fn sweep_report(values: &[&str], tasks: usize) -> SweepReport {
        SweepReport {
            preset: "rt-throttle".into(),
            kernel: "6.18.44".into(),
            cpus: 2,
            knob: "sys.rt_runtime_us".into(),
            duration_s: 2.0,
            rows: values
                .iter()
                .enumerate()
                .map(|(i, v)| SweepRow {
                    value: v.to_string(),
                    cpu_share: (0..tasks)
                        .map(|t| (format!("task-{t}"), (i + t) as f64 * 0.05 % 1.0))
                        .collect(),
                    throughput_per_s: 1e6,
                    throughput_unit: "iterations".into(),
                    headline: Headline {
                        kind: "share".into(),
                        task: "fair".into(),
                        value: 0.76 - i as f64 * 0.09,
                        unit: "CPU".into(),
                        text: String::new(),
                    },
                    warnings: Vec::new(),
                })
                .collect(),
            interrupted: false,
        }
    }

    fn compare_report(tasks: usize) -> CompareReport {
        let metric = |name: String, unit: &str, a: Vec<f64>, b: Vec<f64>| {
            let r = ratios(&a, &b);
            MetricStats {
                name,
                unit: unit.into(),
                a: stats(&a),
                b: stats(&b),
                ratio_median: stats(&r).median,
                ratios: r,
            }
        };
        let mut metrics = vec![metric(
            "writer throughput".into(),
            "bytes/s",
            vec![21.2e6, 21.5e6, 21.9e6],
            vec![51e6, 54e6, 57e6],
        )];
        for t in 0..tasks {
            metrics.push(metric(
                format!("busy-{t} CPU share"),
                "%",
                vec![60.0 - t as f64, 61.0 - t as f64, 63.0 - t as f64],
                vec![
                    90.0 - 2.0 * t as f64,
                    97.0 - 2.0 * t as f64,
                    93.0 - 2.0 * t as f64,
                ],
            ));
        }
        metrics.push(metric(
            "latency p99".into(),
            "ns",
            vec![3700.0; 3],
            vec![4100.0; 3],
        ));
        metrics.push(metric(
            "writer switches".into(),
            "switches/s",
            vec![82e3, 83e3, 84e3],
            vec![120.0, 130.0, 140.0],
        ));
        CompareReport {
            preset: "pipe-wakeup".into(),
            kernel: "6.18.44".into(),
            cpus: 2,
            a: vec!["writer.policy=other".into()],
            b: vec!["writer.policy=batch".into(), "reader.policy=batch".into()],
            rounds: 3,
            duration_s: 3.0,
            metrics,
            warnings: Vec::new(),
            interrupted: false,
        }
    }

    #[test]
    fn format_by_extension() {
        assert_eq!(format_of(Path::new("a/b.png")).unwrap(), Format::Png);
        assert_eq!(format_of(Path::new("b.SVG")).unwrap(), Format::Svg);
        for bad in ["b.jpg", "b", "png"] {
            let e = format_of(Path::new(bad)).unwrap_err().to_string();
            assert_eq!(
                e,
                format!("plot file must end in .png or .svg, not \"{bad}\"")
            );
        }
        let out = Out::new();
        let e = plot_bars(&out.path("x.pdf"), "t", "y", &[]).unwrap_err();
        assert!(e.to_string().contains("must end in .png or .svg"));
        assert!(!out.path("x.pdf").exists());
    }

    #[test]
    fn bars_png_and_svg() {
        let out = Out::new();
        let bars = vec![
            ("other".to_string(), 21.5, Some((21.2, 21.9))),
            ("batch".to_string(), 54.0, Some((51.0, 57.0))),
            ("idle".to_string(), 3.0, None),
        ];
        plot_bars(
            &out.path("bars.png"),
            "writer throughput by policy",
            "MB/s",
            &bars,
        )
        .unwrap();
        out.check_png("bars.png", 10_000);
        plot_bars(
            &out.path("bars.svg"),
            "writer throughput by policy",
            "MB/s",
            &bars,
        )
        .unwrap();
        let svg = out.read_svg("bars.svg");
        assert!(svg.contains("<svg") && svg.contains("writer throughput by policy"));
        assert!(svg.contains("batch") && svg.contains("MB/s"));
        plot_bars(&out.path("none.png"), "nothing", "MB/s", &[]).unwrap();
        out.check_png("none.png", 1_000);
    }

    #[test]
    fn curves_on_log_and_linear_axes() {
        let out = Out::new();
        let hist = |shift: f64| -> Vec<(f64, f64)> {
            (0..40)
                .map(|i| {
                    let x = 10f64.powf(2.0 + i as f64 / 8.0);
                    let d = (i as f64 - 14.0 - shift) / 4.0;
                    (x, 100.0 * (-d * d).exp())
                })
                .collect()
        };
        let mut with_zero = hist(6.0);
        with_zero.insert(0, (0.0, 5.0));
        let series = vec![
            ("other".to_string(), hist(0.0)),
            ("batch".to_string(), with_zero),
        ];
        plot_curves(
            &out.path("c.png"),
            "switch latency",
            "latency (ns)",
            "samples (%)",
            true,
            &series,
        )
        .unwrap();
        out.check_png("c.png", 10_000);
        plot_curves(
            &out.path("c.svg"),
            "switch latency",
            "latency (ns)",
            "samples (%)",
            false,
            &series,
        )
        .unwrap();
        assert!(out.read_svg("c.svg").contains("switch latency"));
        plot_curves(&out.path("e.png"), "empty", "x", "y", true, &[]).unwrap();
        out.check_png("e.png", 1_000);
    }

    #[test]
    fn run_plots_with_few_and_many_tasks() {
        let out = Out::new();
        plot_run(&run_report(2, "bytes"), &out.path("run.png")).unwrap();
        out.check_png("run.png", 20_000);
        plot_run(&run_report(21, "iterations"), &out.path("run21.png")).unwrap();
        out.check_png("run21.png", 20_000);
        plot_run(&run_report(2, "bytes"), &out.path("run.svg")).unwrap();
        let svg = out.read_svg("run.svg");
        for text in [
            "pipe-wakeup - Linux 6.18.44, 2 CPUs",
            "writer.policy=batch",
            "writer.policy=fifo (refused)",
            "CPU share (% of one CPU)",
            "writer throughput (MB/s)",
            "time (s)",
        ] {
            assert!(svg.contains(text), "{text} missing from the SVG");
        }
        let mut empty = run_report(2, "");
        empty.series.points.clear();
        empty.events.clear();
        plot_run(&empty, &out.path("empty.png")).unwrap();
        out.check_png("empty.png", 5_000);
    }

    #[test]
    fn sweep_plots_numeric_and_categorical() {
        let out = Out::new();
        let numeric = sweep_report(&["200000", "300000", "400000", "500000", "600000"], 2);
        plot_sweep(&numeric, &out.path("sweep.png")).unwrap();
        out.check_png("sweep.png", 20_000);
        let mut cat = sweep_report(&["fifo", "rr", "other", "batch"], 12);
        cat.knob = "fifo.policy".into();
        plot_sweep(&cat, &out.path("sweep.svg")).unwrap();
        let svg = out.read_svg("sweep.svg");
        assert!(
            svg.contains("sweep of fifo.policy") && svg.contains("\nbatch\n"),
            "labels"
        );
        plot_sweep(&sweep_report(&[], 0), &out.path("none.png")).unwrap();
        out.check_png("none.png", 1_000);
    }

    #[test]
    fn compare_plots_few_and_many_metrics() {
        let out = Out::new();
        plot_compare(&compare_report(2), &out.path("cmp.png")).unwrap();
        out.check_png("cmp.png", 20_000);
        plot_compare(&compare_report(21), &out.path("cmp21.png")).unwrap();
        out.check_png("cmp21.png", 20_000);
        plot_compare(&compare_report(21), &out.path("cmp21.svg")).unwrap();
        let svg = out.read_svg("cmp21.svg");
        assert!(
            svg.contains("B/A 2.51x") && svg.contains("busy-20"),
            "ratios and labels"
        );
        let mut none = compare_report(0);
        none.metrics.clear();
        plot_compare(&none, &out.path("none.png")).unwrap();
        out.check_png("none.png", 1_000);
    }

    #[test]
    fn knob_labels_at_one_time_go_on_separate_rows() {
        let out = Out::new();
        let path = out.path("rows.png");
        let root = BitMapBackend::new(&path, (1000, 300)).into_drawing_area();
        register_font().unwrap();
        let marker = |t: f64, label: &str| Marker {
            t,
            label: label.into(),
            color: EVENT_OK,
        };
        let markers = [
            marker(2.0, "reader.policy=batch"),
            marker(2.0, "writer.policy=batch"),
            marker(8.0, "writer.nice=5"),
        ];
        let (rows, n) = label_rows(&root, &(0.0..10.0), &markers).unwrap();
        assert_eq!((rows, n), (vec![0, 1, 0], 2));
    }

    #[test]
    fn helpers() {
        assert_eq!(
            common_suffix(&["writer CPU share", "reader CPU share"]),
            "CPU share"
        );
        assert_eq!(common_suffix(&["writer throughput"]), "");
        assert_eq!(common_suffix(&["latency p50", "latency p99"]), "");
        let a = sweep_axis(&["1".into(), "10".into(), "10.2".into()]);
        assert_eq!(a.xs, vec![1.0, 10.0, 10.2]);
        assert_eq!(a.labels.len(), 2, "10.2 would overlap 10");
        let c = sweep_axis(&["fifo".into(), "rr".into()]);
        assert_eq!(c.xs, vec![0.0, 1.0]);
        assert_eq!(c.range, -0.5..1.5);
        assert_eq!(trim_number(2.5), "2.5");
        assert_eq!(trim_number(20.0), "20");
        assert_eq!(si_tick(10_000.0), "10k");
        assert_eq!(si_tick(1e6), "1M");
        assert_eq!(si_tick(1500.0), "1.5k");
        assert_eq!(si_tick(100.0), "100");
        let p = |n: usize| ("u".to_string(), (0..n).collect::<Vec<usize>>());
        assert_eq!(
            compare_layout(&[p(1), p(21), p(2), p(1), p(1)]),
            vec![vec![1], vec![0, 2], vec![3, 4]]
        );
        assert_eq!(color(0, 2), TAB10[0]);
        assert_ne!(color(0, 21), color(1, 21));
    }
}
