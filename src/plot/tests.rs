//! Tests of the plot module: every figure in PNG and SVG, and the layout helpers.

use super::compare::{common_suffix, compare_layout};
use super::run::EVENT_OK;
use super::style::{color, label_rows, si_tick, trim_number, Marker, TAB10};
use super::sweep::sweep_axis;
use super::*;
use crate::headless::compare::{outliers, ratios, stats, MetricStats};
use crate::headless::sweep::SweepRow;
use crate::report::{EventReport, Headline, Metrics, RunSeries, SeriesPoint, TaskReport};

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

pub(super) fn task(name: &str, group: &str, nice: i32, share: f64) -> TaskReport {
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
        sched: None,
    }
}

/// A run of `n` tasks over 4 s with two knob changes at 2 s (one refused).
pub(super) fn run_report(n: usize, unit: &str) -> RunReport {
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
            latency_dropped: None,
            fairness_error: None,
            stages: Vec::new(),
            cpu: Vec::new(),
            cpu_idle_share: 0.0,
            foreign_cpu: None,
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
        refused: Vec::new(),
        partial: false,
        foreign_load: false,
        observer: Default::default(),
        trace: None,
        series: RunSeries {
            tasks: names,
            points,
            cpus: Vec::new(),
        },
    }
}

pub(super) fn sweep_report(values: &[&str], tasks: usize) -> SweepReport {
    SweepReport {
        preset: "rt-throttle".into(),
        kernel: "6.18.44".into(),
        cpus: 2,
        knob: "sys.rt_runtime_us".into(),
        duration_s: 2.0,
        summary_from_s: 1.0,
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
                partial: false,
                foreign_cpu: None,
                foreign_load: false,
            })
            .collect(),
        interrupted: false,
    }
}

pub(super) fn compare_report(tasks: usize) -> CompareReport {
    let metric = |name: String, unit: &str, a: Vec<f64>, b: Vec<f64>| {
        let r = ratios(&a, &b);
        MetricStats {
            name,
            unit: unit.into(),
            a: stats(&a),
            b: stats(&b),
            ratio_median: stats(&r).median,
            outlier_rounds: outliers(&r),
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
        partial_runs: 0,
        foreign_load_runs: 0,
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
