//! Tests of the plot module: every figure in PNG, its structure in SVG (titles, axis
//! labels, one line per series, the legend), and the layout helpers.

use super::compare::{common_suffix, compare_layout, SIDE_A, SIDE_B};
use super::run::{EVENT_OK, EVENT_REFUSED};
use super::style::{color, label_rows, legend, si_tick, trim_number, Mark, Marker, TAB10};
use super::sweep::sweep_axis;
use super::*;
/// Runs, sweeps and comparisons with known numbers, also for other modules' tests.
pub(crate) mod fixtures;

pub(super) use fixtures::{compare_report, run_report, sweep_report};

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

/// What an SVG from plotters holds, in drawing order: every element is a child of the
/// root, and a text's content is its own.
#[derive(Debug, Default)]
struct Svg {
    /// Every text, trimmed.
    texts: Vec<String>,
    /// (text, fill colour) of every text.
    coloured: Vec<(String, String)>,
    /// Data lines: polylines of more than two points, as (stroke colour, points).
    series: Vec<(String, usize)>,
    /// Polylines of two points or fewer (axes, ticks, whiskers, legend marks, dashes)
    /// as (stroke colour, stroke width).
    segments: Vec<(String, String)>,
    /// Legend rows as (colour of the mark, label): a text drawn 8 px right of the end
    /// of the horizontal segment just before it, at its height.
    legend: Vec<(String, String)>,
    /// Fill colour of every rectangle but the white background.
    rects: Vec<String>,
    /// Fill colour of every circle (sweep points, compare's dots).
    circles: Vec<String>,
}

impl Svg {
    fn parse(text: &str) -> Svg {
        let doc = roxmltree::Document::parse(text).expect("well-formed SVG");
        let root = doc.root_element();
        assert_eq!(root.tag_name().name(), "svg");
        let mut svg = Svg::default();
        // The end (x, y) and colour of a horizontal segment drawn just before.
        let mut mark: Option<(f64, f64, String)> = None;
        for e in root.children().filter(|n| n.is_element()) {
            let attr = |name: &str| e.attribute(name).unwrap_or_default().to_string();
            let num = |name: &str| attr(name).parse::<f64>().unwrap_or(f64::NAN);
            let last_mark = mark.take();
            match e.tag_name().name() {
                "text" => {
                    let t = e.text().unwrap_or_default().trim().to_string();
                    if let Some((x, y, c)) = last_mark {
                        if num("x") == x + 8.0 && num("y") == y {
                            svg.legend.push((c, t.clone()));
                        }
                    }
                    svg.coloured.push((t.clone(), attr("fill")));
                    svg.texts.push(t);
                }
                "polyline" => {
                    let points: Vec<(f64, f64)> = attr("points")
                        .split_whitespace()
                        .map(|p| {
                            let (x, y) = p.split_once(',').expect("x,y");
                            (x.parse().expect("x"), y.parse().expect("y"))
                        })
                        .collect();
                    if points.len() > 2 {
                        svg.series.push((attr("stroke"), points.len()));
                    } else {
                        svg.segments.push((attr("stroke"), attr("stroke-width")));
                        if let [(_, y0), (x1, y1)] = points[..] {
                            if y0 == y1 {
                                mark = Some((x1, y1, attr("stroke")));
                            }
                        }
                    }
                }
                "rect" if attr("fill") != "#FFFFFF" => svg.rects.push(attr("fill")),
                "circle" => svg.circles.push(attr("fill")),
                _ => {}
            }
        }
        svg
    }

    fn count(&self, text: &str) -> usize {
        self.texts.iter().filter(|t| *t == text).count()
    }

    fn has(&self, text: &str) -> bool {
        self.count(text) > 0
    }

    /// The colours of the data lines, in drawing order.
    fn series_colours(&self) -> Vec<String> {
        self.series.iter().map(|(c, _)| c.clone()).collect()
    }
}

/// A colour as plotters writes it in SVG.
fn hex(c: RGBColor) -> String {
    format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2)
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
fn bars_have_a_bar_a_whisker_and_a_value_each() {
    let out = Out::new();
    let bars = vec![
        ("other".to_string(), 21.5, Some((21.2, 21.9))),
        ("batch".to_string(), 54.0, Some((51.0, 57.0))),
        ("idle".to_string(), 3.0, None),
    ];
    let title = "writer throughput by policy";
    plot_bars(&out.path("bars.png"), title, "MB/s", &bars).unwrap();
    out.check_png("bars.png", 10_000);
    plot_bars(&out.path("bars.svg"), title, "MB/s", &bars).unwrap();
    let svg = Svg::parse(&out.read_svg("bars.svg"));
    for text in [
        title, "MB/s", "other", "batch", "idle", "21.5", "54.0", "3.00",
    ] {
        assert_eq!(svg.count(text), 1, "{text:?} in {:?}", svg.texts);
    }
    assert_eq!(svg.rects, vec![hex(TAB10[0]); 3], "one bar each");
    // A whisker is three black 2 px strokes: min to max and a cap at each end.
    let whiskers = svg
        .segments
        .iter()
        .filter(|s| **s == (hex(BLACK), "2".to_string()))
        .count();
    assert_eq!(whiskers, 2 * 3, "whiskers on other and batch");
    assert!(svg.series.is_empty() && svg.legend.is_empty());
    plot_bars(&out.path("none.svg"), "nothing", "MB/s", &[]).unwrap();
    let none = Svg::parse(&out.read_svg("none.svg"));
    assert!(
        none.has("nothing") && none.has("no data"),
        "{:?}",
        none.texts
    );
    assert!(none.rects.is_empty());
    plot_bars(&out.path("none.png"), "nothing", "MB/s", &[]).unwrap();
    out.check_png("none.png", 1_000);
}

#[test]
fn curves_have_a_line_and_a_legend_row_per_series() {
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
    let draw = |name: &str, log_x: bool| {
        plot_curves(
            &out.path(name),
            "switch latency",
            "latency (ns)",
            "samples (%)",
            log_x,
            &series,
        )
        .unwrap();
    };
    draw("c.png", true);
    out.check_png("c.png", 10_000);
    let legend = vec![
        (hex(TAB10[0]), "other".to_string()),
        (hex(TAB10[1]), "batch".to_string()),
    ];
    for (name, log_x, points) in [
        ("linear.svg", false, [40, 41]),
        // A log axis has no 0: batch's point at x = 0 is left out.
        ("log.svg", true, [40, 40]),
    ] {
        draw(name, log_x);
        let svg = Svg::parse(&out.read_svg(name));
        for text in ["switch latency", "latency (ns)", "samples (%)"] {
            assert_eq!(svg.count(text), 1, "{name}: {text:?}");
        }
        assert_eq!(
            svg.series,
            vec![(hex(TAB10[0]), points[0]), (hex(TAB10[1]), points[1])],
            "{name}"
        );
        assert_eq!(svg.legend, legend, "{name}");
    }
    plot_curves(&out.path("e.svg"), "empty", "x", "y", true, &[]).unwrap();
    let empty = Svg::parse(&out.read_svg("e.svg"));
    assert!(empty.has("empty") && empty.series.is_empty() && empty.legend.is_empty());
    plot_curves(&out.path("e.png"), "empty", "x", "y", true, &[]).unwrap();
    out.check_png("e.png", 1_000);
}

/// The run figure's rows for `n` tasks of [`run_report`] (task i has nice i).
fn run_legend(r: &RunReport) -> Vec<(String, String)> {
    let n = r.series.tasks.len();
    let mut rows: Vec<(String, String)> = r
        .series
        .tasks
        .iter()
        .enumerate()
        .map(|(i, name)| {
            let label = if i == 0 {
                name.clone()
            } else {
                format!("{name} (nice {i})")
            };
            (hex(color(i, n)), label)
        })
        .collect();
    rows.push((
        hex(BLACK),
        format!("{} throughput", r.metrics.headline.task),
    ));
    if !r.events.is_empty() {
        rows.push((hex(EVENT_OK), "knob change".into()));
    }
    rows
}

#[test]
fn run_plots_have_a_line_per_task_and_panel_and_mark_every_knob_change() {
    let out = Out::new();
    let report = run_report(2, "bytes");
    plot_run(&report, &out.path("run.png")).unwrap();
    out.check_png("run.png", 20_000);
    plot_run(&report, &out.path("run.svg")).unwrap();
    let svg = Svg::parse(&out.read_svg("run.svg"));
    for text in [
        "pipe-wakeup - Linux 6.18.44, 2 CPUs",
        "4.0 s sampled every 100 ms; --set writer.cpus=0",
        "CPU share (% of one CPU)",
        "switches/s per task (log)",
        "writer throughput (MB/s)",
    ] {
        assert_eq!(svg.count(text), 1, "{text:?} in {:?}", svg.texts);
    }
    assert_eq!(svg.count("time (s)"), 3, "an x axis per panel");
    // CPU share and switches: a line per task; throughput: the writer group's. Each has
    // 40 of the 41 samples: the last came 5 ms after the one before, under half an
    // interval, and a rate over 5 ms is noise.
    let (t0, t1, black) = (hex(TAB10[0]), hex(TAB10[1]), hex(BLACK));
    assert_eq!(
        svg.series,
        [&t0, &t1, &t0, &t1, &black]
            .map(|c| (c.clone(), 40))
            .to_vec()
    );
    assert_eq!(svg.legend, run_legend(&report));
    // Each knob change is marked in all three panels, a refused one in red.
    for (label, colour) in [
        ("reader.policy=batch", EVENT_OK),
        ("writer.policy=batch", EVENT_OK),
        ("writer.policy=fifo (refused)", EVENT_REFUSED),
    ] {
        let marks = svg
            .coloured
            .iter()
            .filter(|(t, c)| t == label && *c == hex(colour))
            .count();
        assert_eq!(marks, 3, "{label}");
    }

    let many = run_report(21, "iterations");
    plot_run(&many, &out.path("run21.png")).unwrap();
    out.check_png("run21.png", 20_000);
    plot_run(&many, &out.path("run21.svg")).unwrap();
    let svg = Svg::parse(&out.read_svg("run21.svg"));
    let mut colours: Vec<String> = (0..21).map(|i| hex(color(i, 21))).collect();
    colours.extend(colours.clone());
    colours.push(hex(BLACK));
    assert_eq!(
        svg.series_colours(),
        colours,
        "21 tasks twice, then the throughput"
    );
    // 23 rows of 24 px fit the figure's height: all of them.
    assert_eq!(svg.legend, run_legend(&many));

    let mut empty = run_report(2, "");
    empty.series.points.clear();
    empty.events.clear();
    plot_run(&empty, &out.path("empty.png")).unwrap();
    out.check_png("empty.png", 5_000);
    plot_run(&empty, &out.path("empty.svg")).unwrap();
    let svg = Svg::parse(&out.read_svg("empty.svg"));
    assert_eq!(svg.count("no samples"), 2, "{:?}", svg.texts);
    assert_eq!(svg.count("the writer tasks count no progress"), 1);
    assert!(svg.series.is_empty());
    assert_eq!(svg.legend, run_legend(&empty), "no knob change row");
}

/// A lesson's document: three steps 4/3 s each, every check passed with `texts`.
fn lesson_doc(texts: &[&str]) -> crate::report::lesson::LessonReport {
    use crate::report::lesson::{CheckReport, LessonReport, StepReport, StepResult};
    let steps: Vec<StepReport> = texts
        .iter()
        .enumerate()
        .map(|(i, text)| StepReport {
            step: i + 1,
            caption: format!("caption {}", i + 1),
            question: None,
            look: "graph:headline".into(),
            start_s: i as f64 * 4.0 / 3.0,
            end_s: (i + 1) as f64 * 4.0 / 3.0,
            changes: Vec::new(),
            result: StepResult::Pass,
            check: Some(CheckReport {
                metric: "portion".into(),
                task: Some("busy-0".into()),
                says: "s".into(),
                value: Some(0.2),
                reference: None,
                ratio: None,
                unit: "share".into(),
                settle_s: 0.5,
                text: text.to_string(),
            }),
            reasons: Vec::new(),
            throttling: Vec::new(),
        })
        .collect();
    LessonReport {
        lesson: "nice-ladder".into(),
        title: "Nice values are weights".into(),
        preset: "nice-ladder".into(),
        kernel: "6.18.44".into(),
        cpus: 2,
        passed: steps.len(),
        failed: 0,
        not_applicable: 0,
        steps,
        warnings: Vec::new(),
        interrupted: false,
    }
}

/// A lesson whose checks all passed once plotted "fairness error 40.1 %": the whole
/// session's shares against the last step's ideal. Each step is judged on its own.
#[test]
fn a_lesson_plot_judges_each_step_against_its_own_expectation() {
    let out = Out::new();
    let mut run = run_report(3, "loops");
    for (t, ideal) in run.tasks.iter_mut().zip([0.6, 0.3, 0.1]) {
        t.ideal_share = Some(ideal);
    }
    run.metrics.fairness_error = Some(0.401);
    let doc = lesson_doc(&[
        "yes: little CPU time went to the wrong task (12.3 %; expected <= 20.0 %)",
        "yes: the nice 0 loop gets about a fifth (20.1 %; expected 17.0 %..23.0 %)",
        "yes: the nice 0 loop is down to 1/21 (4.8 %; expected 3.0 %..7.0 %)",
    ]);
    plot_lesson(&run, &doc, &out.path("lesson.png")).unwrap();
    out.check_png("lesson.png", 20_000);
    plot_lesson(&run, &doc, &out.path("lesson.svg")).unwrap();
    let svg = Svg::parse(&out.read_svg("lesson.svg"));
    assert!(
        !svg.texts.iter().any(|t| t.contains("fairness error")),
        "no whole-session fairness error: {:?}",
        svg.texts
    );
    assert!(!svg.legend.iter().any(|(_, l)| l == "ideal share"));
    for text in [
        "lesson nice-ladder on nice-ladder - Linux 6.18.44, 2 CPUs",
        "Nice values are weights; 3 of 3 checks passed, 0 not applicable here, 0 failed",
        "step 1 (0.0-1.3 s), pass: little CPU time went to the wrong task (12.3 %; expected <= 20.0 %)",
        "step 2 (1.3-2.7 s), pass: the nice 0 loop gets about a fifth (20.1 %; expected 17.0 %..23.0 %)",
        "step 3 (2.7-4.0 s), pass: the nice 0 loop is down to 1/21 (4.8 %; expected 3.0 %..7.0 %)",
    ] {
        assert_eq!(svg.count(text), 1, "{text:?} in {:?}", svg.texts);
    }
    assert_eq!(svg.count("time (s)"), 2, "CPU share and switches over time");
}

#[test]
fn sweep_plots_have_a_line_per_task_and_one_for_the_headline() {
    let out = Out::new();
    let numeric = sweep_report(&["200000", "300000", "400000", "500000", "600000"], 2);
    plot_sweep(&numeric, &out.path("sweep.png")).unwrap();
    out.check_png("sweep.png", 20_000);
    plot_sweep(&numeric, &out.path("sweep.svg")).unwrap();
    let svg = Svg::parse(&out.read_svg("sweep.svg"));
    // A point per value, on each task's line and on the headline's; a sweep of
    // sys.rt_runtime_us also draws 1 - runtime/period as a dashed grey reference
    // (many short grey polylines), not a data series.
    let (t0, t1, black) = (hex(TAB10[0]), hex(TAB10[1]), hex(BLACK));
    let grey = "#787878".to_string();
    let data: Vec<_> = svg
        .series
        .iter()
        .filter(|(c, _)| *c != grey)
        .cloned()
        .collect();
    assert_eq!(
        data,
        vec![(t0.clone(), 5), (t1.clone(), 5), (black.clone(), 5)]
    );
    assert_eq!(svg.circles.len(), 15);
    for v in ["200000", "300000", "400000", "500000", "600000"] {
        assert_eq!(svg.count(v), 2, "{v} under both panels");
    }
    assert_eq!(
        svg.legend,
        vec![
            (t0, "task-0".to_string()),
            (t1, "task-1".to_string()),
            (grey, "1 - runtime/period".to_string())
        ]
    );

    let mut cat = sweep_report(&["fifo", "rr", "other", "batch"], 12);
    cat.knob = "fifo.policy".into();
    plot_sweep(&cat, &out.path("cat.svg")).unwrap();
    let svg = Svg::parse(&out.read_svg("cat.svg"));
    for text in [
        "rt-throttle - Linux 6.18.44, 2 CPUs: sweep of fifo.policy",
        "4 values, 2.0 s each (measured after 1.0 s of warm-up)",
        "CPU share (% of one CPU)",
        "fair CPU share (% of one CPU)",
    ] {
        assert_eq!(svg.count(text), 1, "{text:?} in {:?}", svg.texts);
    }
    for text in ["fifo.policy", "fifo", "rr", "other", "batch"] {
        assert_eq!(svg.count(text), 2, "{text:?} under both panels");
    }
    let colours: Vec<String> = (0..12).map(|i| hex(color(i, 12))).collect();
    let mut lines = colours.clone();
    lines.push(black.clone());
    assert_eq!(svg.series_colours(), lines);
    assert!(svg.series.iter().all(|(_, n)| *n == 4));
    let dots: Vec<String> = lines
        .iter()
        .flat_map(|c| std::iter::repeat_n(c.clone(), 4))
        .collect();
    assert_eq!(
        svg.circles, dots,
        "a point per value, in each line's colour"
    );
    let names: Vec<(String, String)> = colours
        .into_iter()
        .enumerate()
        .map(|(i, c)| (c, format!("task-{i}")))
        .collect();
    assert_eq!(svg.legend, names);

    plot_sweep(&sweep_report(&[], 0), &out.path("none.svg")).unwrap();
    let none = Svg::parse(&out.read_svg("none.svg"));
    assert_eq!(none.count("no runs"), 2);
    assert!(none.series.is_empty() && none.legend.is_empty());
    plot_sweep(&sweep_report(&[], 0), &out.path("none.png")).unwrap();
    out.check_png("none.png", 1_000);
}

#[test]
fn compare_plots_have_two_bars_per_metric_with_rounds_whiskers_and_ratio() {
    let out = Out::new();
    plot_compare(&compare_report(2), &out.path("cmp.png")).unwrap();
    out.check_png("cmp.png", 20_000);
    plot_compare(&compare_report(2), &out.path("cmp.svg")).unwrap();
    let svg = Svg::parse(&out.read_svg("cmp.svg"));
    for text in [
        "pipe-wakeup - Linux 6.18.44, 2 CPUs: A (writer.policy=other) vs B (writer.policy=batch,reader.policy=batch)",
        "3 rounds of A then B, 3.0 s each; bars: median, whiskers: min-max, dots beside: every round; above: median of B/A per round",
        "A: writer.policy=other",
        "B: writer.policy=batch,reader.policy=batch",
        // A panel per unit; a panel's common suffix goes to its axis.
        "MB/s",
        "CPU share (%)",
        "µs",
        "k switches/s",
        "writer throughput",
        "busy-0",
        "busy-1",
        "latency p99",
        "writer switches",
        // Medians of B/A per round: 51/21.2, 54/21.5, 57/21.9 -> 2.51; 90/60, 97/61,
        // 93/63 -> 1.50; 88/59, 95/60, 91/62 -> 1.49; 4100/3700 = 1.11; 130/83000.
        "B/A 2.51x",
        "B/A 1.50x",
        "B/A 1.49x",
        "B/A 1.11x",
        "B/A 0.0016x",
    ] {
        assert_eq!(svg.count(text), 1, "{text:?} in {:?}", svg.texts);
    }
    // Five metrics: a bar per side each, and each side's square in the key.
    let side = |c: RGBColor| svg.rects.iter().filter(|r| **r == hex(c)).count();
    assert_eq!((side(SIDE_A), side(SIDE_B), svg.rects.len()), (6, 6, 12));
    // Three rounds: three dots beside each of the ten bars in its side's colour, each
    // with an outline ring (fill none), and a min-max whisker.
    let dots = |fill: String| svg.circles.iter().filter(|c| **c == fill).count();
    assert_eq!(
        (dots(hex(SIDE_A)), dots(hex(SIDE_B)), dots("none".into())),
        (15, 15, 30),
        "{:?}",
        svg.circles
    );
    let whiskers = svg
        .segments
        .iter()
        .filter(|s| **s == (hex(BLACK), "2".to_string()))
        .count();
    assert_eq!(whiskers, 10 * 3);
    assert!(svg.series.is_empty() && svg.legend.is_empty());

    plot_compare(&compare_report(21), &out.path("cmp21.png")).unwrap();
    out.check_png("cmp21.png", 20_000);
    plot_compare(&compare_report(21), &out.path("cmp21.svg")).unwrap();
    let svg = Svg::parse(&out.read_svg("cmp21.svg"));
    let side = |c: RGBColor| svg.rects.iter().filter(|r| **r == hex(c)).count();
    // Throughput, 21 shares, latency and switches; and the key.
    assert_eq!((side(SIDE_A), side(SIDE_B)), (25, 25));
    // A filled dot and its ring per round, side and metric.
    assert_eq!(svg.circles.len(), 24 * 2 * 3 * 2);
    assert!(svg.has("B/A 2.51x") && svg.has("busy-20"));

    let mut none = compare_report(0);
    none.metrics.clear();
    plot_compare(&none, &out.path("none.svg")).unwrap();
    let svg = Svg::parse(&out.read_svg("none.svg"));
    assert!(svg.has("no complete round"), "{:?}", svg.texts);
    assert_eq!(svg.rects.len(), 2, "the key only");
    plot_compare(&none, &out.path("none.png")).unwrap();
    out.check_png("none.png", 1_000);
}

#[test]
fn a_legend_too_long_for_its_column_ends_with_how_many_more() {
    register_font().unwrap();
    let entries: Vec<(String, RGBColor, Mark)> = (0..40)
        .map(|i| (format!("task-{i}"), color(i, 40), Mark::Line))
        .collect();
    let mut text = String::new();
    {
        let area = SVGBackend::with_string(&mut text, (200, 300)).into_drawing_area();
        legend(&area, 16, &entries).unwrap();
        area.present().unwrap();
    }
    let svg = Svg::parse(&text);
    // 300 - 16 at the top - 10 below = 274 px: rows shrink to their least, 13 px, so
    // 21 fit; 20 entries, then the row that says how many more.
    assert_eq!(svg.legend.len(), 20);
    for (i, (c, label)) in svg.legend.iter().enumerate() {
        assert_eq!(
            (c.clone(), label.clone()),
            (hex(color(i, 40)), format!("task-{i}"))
        );
    }
    assert!(svg.has("+20 more"), "{:?}", svg.texts);
}

#[test]
fn knob_labels_at_one_time_go_on_separate_rows() {
    let mut rgb = vec![0u8; 1000 * 300 * 3];
    let root = BitMapBackend::with_buffer(&mut rgb, (1000, 300)).into_drawing_area();
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
