//! Plots of runs, sweeps and comparisons as PNG or SVG files, readable without the terminal.

use std::path::Path;
use std::sync::OnceLock;

use anyhow::{bail, Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::report::compare::CompareReport;
use crate::report::lesson::LessonReport;
use crate::report::sweep::SweepReport;
use crate::report::RunReport;

use compare::{compare_layout, compare_panels, draw_bars, draw_compare};
use curves::draw_curves;
use latency::draw_latency;
pub use latency::LatencyCurve;
use run::draw_run;
use style::SANS;
use sweep::draw_sweep;

mod compare;
mod curves;
mod latency;
mod lesson;
#[cfg(test)]
mod reference;
mod run;
mod style;
mod sweep;
#[cfg(test)]
pub(crate) mod tests;
mod text;

/// The one font of every plot, embedded so that no font has to be installed; SVG files
/// name it as their font family ([`style::SANS`]).
const FONT: &[u8] = include_bytes!("../../assets/fonts/DejaVuSans.ttf");

/// Multi-panel figures.
const TALL: (u32, u32) = (1200, 900);
/// One-panel figures.
const FLAT: (u32, u32) = (1200, 700);

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

/// Time series of a run: CPU share, switches and the headline group's throughput (a
/// latency preset: its latency over time and histogram), with every knob change marked.
pub fn plot_run(report: &RunReport, path: &Path) -> Result<()> {
    save(
        path,
        (TALL.0, run::run_height(report)),
        &Figure::Run(report),
    )
}

/// A lesson's session (`run`, its steps marked as events) with a line per step judging it
/// against its own expected effect; a fairness preset's whole-session bars are left out.
pub fn plot_lesson(run: &RunReport, doc: &LessonReport, path: &Path) -> Result<()> {
    save(
        path,
        (TALL.0, lesson::lesson_height(run, doc)),
        &Figure::Lesson(run, doc),
    )
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
    plot_bars_footed(path, title, y_label, bars, &machine_footer())
}

/// [`plot_bars`] with a footer of the caller's, e.g. from [`footer`].
pub fn plot_bars_footed(
    path: &Path,
    title: &str,
    y_label: &str,
    bars: &[Bar],
    footer: &str,
) -> Result<()> {
    save(
        path,
        FLAT,
        &Figure::Bars {
            title,
            y_label,
            bars,
            footer,
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
    let footer = machine_footer();
    plot_curves_footed(path, title, x_label, y_label, log_x, series, &footer)
}

/// [`plot_curves`] with a footer of the caller's, e.g. from [`footer`].
pub fn plot_curves_footed(
    path: &Path,
    title: &str,
    x_label: &str,
    y_label: &str,
    log_x: bool,
    series: &[(String, Vec<(f64, f64)>)],
    footer: &str,
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
            footer,
        },
    )
}

/// Latency histograms as steps on log-log axes, each with its p50/p99/max marked.
pub fn plot_latency(path: &Path, title: &str, curves: &[LatencyCurve], footer: &str) -> Result<()> {
    save(
        path,
        FLAT,
        &Figure::Latency {
            title,
            curves,
            footer,
        },
    )
}

enum Figure<'a> {
    Latency {
        title: &'a str,
        curves: &'a [LatencyCurve],
        footer: &'a str,
    },
    Run(&'a RunReport),
    Lesson(&'a RunReport, &'a LessonReport),
    Sweep(&'a SweepReport),
    Compare(&'a CompareReport),
    Bars {
        title: &'a str,
        y_label: &'a str,
        bars: &'a [Bar],
        footer: &'a str,
    },
    Curves {
        title: &'a str,
        x_label: &'a str,
        y_label: &'a str,
        log_x: bool,
        series: &'a [(String, Vec<(f64, f64)>)],
        footer: &'a str,
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
        Format::Png => {
            let font = ab_glyph::FontRef::try_from_slice(FONT)
                .context("the embedded DejaVu Sans is not a TrueType font")?;
            let mut rgb = vec![0u8; size.0 as usize * size.1 as usize * 3];
            let backend = text::Crisp::new(BitMapBackend::with_buffer(&mut rgb, size), font);
            draw_on(backend.into_drawing_area(), figure).and_then(|()| write_png(path, size, &rgb))
        }
        Format::Svg => {
            // Drawn into a string, then written as every output file is (outfile).
            let mut svg = String::new();
            draw_on(
                SVGBackend::with_string(&mut svg, size).into_drawing_area(),
                figure,
            )
            .and_then(|()| Ok(crate::outfile::write(path, svg.as_bytes())?))
        }
    };
    written.with_context(|| format!("writing plot {}", path.display()))
}

/// `rgb` (8-bit RGB rows, top first) as a PNG file at `path`.
fn write_png(path: &Path, size: (u32, u32), rgb: &[u8]) -> Result<()> {
    let mut file = std::io::BufWriter::new(crate::outfile::OutFile::create(path)?);
    let mut encoder = png::Encoder::new(&mut file, size.0, size.1);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header()?;
    writer.write_image_data(rgb)?;
    writer.finish()?;
    file.into_inner().map_err(|e| e.into_error())?.commit()?;
    Ok(())
}

fn draw_on<DB: DrawingBackend>(root: DrawingArea<DB, Shift>, figure: &Figure) -> Result<()>
where
    DB::ErrorType: 'static,
{
    root.fill(&WHITE)?;
    match figure {
        Figure::Run(r) => draw_run(&root, r)?,
        Figure::Lesson(r, doc) => lesson::draw_lesson(&root, r, doc)?,
        Figure::Latency {
            title,
            curves,
            footer,
        } => draw_latency(&root, title, curves, footer)?,
        Figure::Sweep(r) => draw_sweep(&root, r)?,
        Figure::Compare(r) => draw_compare(&root, r)?,
        Figure::Bars {
            title,
            y_label,
            bars,
            footer,
        } => draw_bars(&root, title, y_label, bars, footer)?,
        Figure::Curves {
            title,
            x_label,
            y_label,
            log_x,
            series,
            footer,
        } => draw_curves(&root, title, x_label, y_label, *log_x, series, footer)?,
    }
    root.present()?;
    Ok(())
}

/// A footer for [`plot_bars`] and [`plot_curves`]: kernel, CPUs, host, date and `samples`
/// ("2000 wakeups").
pub fn footer(kernel: &str, cpus: usize, samples: &str) -> String {
    style::footer_text(kernel, cpus, samples)
}

/// The footer of a figure made without a report: this machine's kernel and CPU count.
fn machine_footer() -> String {
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .map(|k| k.trim().to_string())
        .unwrap_or_else(|_| "?".into());
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    style::footer_text(&kernel, cpus, "sample count not given")
}

/// Where and when a figure was made, for its footer: "host h, 2026-12-01 21:40 UTC".
pub(super) fn stamp() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    let now = humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string();
    // "2026-12-01T21:40:05Z" -> "2026-12-01 21:40 UTC"
    let date = format!("{} {} UTC", &now[..10], &now[11..16]);
    if host.is_empty() {
        date
    } else {
        format!("host {host}, {date}")
    }
}
