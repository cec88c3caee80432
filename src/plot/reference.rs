//! Reference tests: every figure kind as SVG, its text labels and element counts against
//! a stored file in tests/plot_refs (`SCHEDLAB_BLESS=1` rewrites the files).
//!
//! Structure, not pixels: the labels say what a reader is told (units, footer, markers),
//! the element counts how many series and bars are drawn; neither depends on the font.

use std::collections::BTreeMap;
use std::path::PathBuf;

use super::tests::{compare_report, run_report, sweep_report};
use super::*;

/// The host and the date of a footer vary; the rest of it is compared.
fn normalise(label: &str) -> String {
    let re = regex_lite::Regex::new(r"host [^,]+, \d{4}-\d\d-\d\d \d\d:\d\d UTC").unwrap();
    re.replace_all(label, "host HOST, DATE").into_owned()
}

/// The summary of an SVG: "elements: NAME COUNT" lines, then every text label, sorted.
fn summary(svg: &str) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for el in [
        "polyline", "rect", "circle", "line", "polygon", "path", "text",
    ] {
        counts.insert(el, svg.matches(&format!("<{el} ")).count());
    }
    let text = regex_lite::Regex::new(r"(?s)<text[^>]*>(.*?)</text>").unwrap();
    let mut labels: Vec<String> = text
        .captures_iter(svg)
        .map(|c| normalise(c[1].trim()))
        .collect();
    labels.sort();
    let mut out = String::new();
    for (el, n) in counts {
        out.push_str(&format!("elements: {el} {n}\n"));
    }
    for l in labels {
        out.push_str(&format!("label: {l}\n"));
    }
    out
}

fn reference(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/plot_refs")
        .join(format!("{name}.txt"))
}

/// Renders `draw` into an SVG and compares its summary with the stored one.
/// With `SCHEDLAB_KEEP_PLOTS=DIR` the figure is also drawn as DIR/name.png and .svg to
/// look at.
fn check(name: &str, draw: impl Fn(&Path) -> Result<()>) {
    if let Some(keep) = std::env::var_os("SCHEDLAB_KEEP_PLOTS") {
        for ext in ["png", "svg"] {
            draw(&Path::new(&keep).join(format!("{name}.{ext}"))).unwrap();
        }
    }
    let dir = tempfile::tempdir().unwrap();
    let svg_path = dir.path().join(format!("{name}.svg"));
    draw(&svg_path).unwrap();
    let got = summary(&std::fs::read_to_string(&svg_path).unwrap());
    let path = reference(name);
    if std::env::var_os("SCHEDLAB_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (SCHEDLAB_BLESS=1 writes it)", path.display()));
    if got != want {
        let diff: Vec<String> = diff_lines(&want, &got);
        panic!(
            "{name}: the figure differs from {}:\n{}",
            path.display(),
            diff.join("\n")
        );
    }
}

/// Lines only in `want` (-) or only in `got` (+).
fn diff_lines(want: &str, got: &str) -> Vec<String> {
    let w: Vec<&str> = want.lines().collect();
    let g: Vec<&str> = got.lines().collect();
    let mut out: Vec<String> = w
        .iter()
        .filter(|l| !g.contains(l))
        .map(|l| format!("- {l}"))
        .collect();
    out.extend(
        g.iter()
            .filter(|l| !w.contains(l))
            .map(|l| format!("+ {l}")),
    );
    out
}

#[test]
fn run_pipe_wakeup_matches_reference() {
    check("run_pipe_wakeup", |p| plot_run(&run_report(2, "bytes"), p));
}

#[test]
fn run_nice_ladder_matches_reference() {
    let mut r = run_report(5, "loops");
    for (i, t) in r.tasks.iter_mut().enumerate() {
        t.ideal_share = Some(0.4 - 0.05 * i as f64);
    }
    r.metrics.fairness_error = Some(0.021);
    check("run_nice_ladder", |p| plot_run(&r, p));
}

#[test]
fn sweep_over_decades_matches_reference() {
    let r = sweep_report(&["1000", "10000", "100000", "1000000"], 2);
    check("sweep_decades", |p| plot_sweep(&r, p));
}

#[test]
fn sweep_categorical_matches_reference() {
    let mut r = sweep_report(&["fifo", "rr", "other", "batch"], 3);
    r.knob = "fifo.policy".into();
    check("sweep_categorical", |p| plot_sweep(&r, p));
}

#[test]
fn compare_matches_reference() {
    check("compare", |p| plot_compare(&compare_report(2), p));
}

#[test]
fn bars_and_curves_match_reference() {
    let bars: Vec<Bar> = vec![
        ("cpu0".into(), 1.5, Some((1.2, 1.9))),
        ("cpu1".into(), 1.4, Some((1.1, 1.6))),
    ];
    check("bars", |p| {
        plot_bars_footed(
            p,
            "Pipe ping-pong",
            "µs per round trip",
            &bars,
            &footer("6.18.44", 2, "2 runs"),
        )
    });
    let series = vec![
        (
            "cpu0".to_string(),
            vec![(10.0, 5.0), (100.0, 80.0), (1000.0, 15.0)],
        ),
        ("cpu1".to_string(), vec![(20.0, 50.0), (200.0, 50.0)]),
    ];
    check("curves", |p| {
        plot_curves_footed(
            p,
            "Wakeup latency",
            "latency (µs, log)",
            "% of wakeups",
            true,
            &series,
            &footer("6.18.44", 2, "5 wakeups"),
        )
    });
}

#[test]
fn summary_counts_elements_and_normalises_the_footer() {
    let svg = "<svg><polyline points=\"\"/><text x=\"1\">\nLinux 6.1; host a-b, 2026-01-02 03:04 UTC; 3 samples\n</text></svg>";
    let s = summary(svg);
    assert!(s.contains("elements: polyline 1\n"), "{s}");
    assert!(
        s.contains("label: Linux 6.1; host HOST, DATE; 3 samples\n"),
        "{s}"
    );
}

#[test]
fn latency_matches_reference() {
    let curve = |name: &str, shift: f64| LatencyCurve {
        name: name.into(),
        bins: vec![
            (40.0 * shift, 50.0 * shift, 10.0),
            (50.0 * shift, 60.0 * shift, 85.0),
            (60.0 * shift, 70.0 * shift, 0.0),
            (70.0 * shift, 80.0 * shift, 4.9),
            (800.0 * shift, 900.0 * shift, 0.1),
        ],
        marks: vec![
            ("p50".into(), 55.0 * shift),
            ("p99".into(), 75.0 * shift),
            ("max".into(), 850.0 * shift),
        ],
    };
    let curves = [curve("idle", 1.0), curve("loaded", 2.0)];
    let f = footer("6.18.44", 2, "2000 wakeups");
    check("latency", |p| {
        plot_latency(p, "Timer wakeup latency", &curves, &f)
    });
}

/// A yield-latency run: switches around 1.2 µs with a tail to 3 ms, its p50 rising after
/// the knob change at 2 s.
fn yield_latency_report() -> RunReport {
    use crate::histogram::Histogram;
    use crate::lab::store::LatencyInterval;
    let mut r = run_report(2, "yields");
    r.preset = "yield-latency".into();
    for (t, name) in r.tasks.iter_mut().zip(["yield-0", "yield-1"]) {
        t.name = name.into();
        t.group = "yield".into();
    }
    r.series.tasks = vec!["yield-0".into(), "yield-1".into()];
    // 10 000 switches: most at 1.1-1.5 µs, a few at 2-6 µs, one each at 40 µs and 3 ms.
    let values = (0..10_000u64).map(|i| match i % 1000 {
        0 => 40_000 + i,
        1 if i == 1 => 3_000_000,
        2..=60 => 2_000 + 70 * (i % 60),
        _ => 1_100 + (i * 7) % 400,
    });
    let h = Histogram::from_values(values);
    let p = h.percentiles().expect("values");
    let intervals = (1..=40)
        .map(|k| {
            let t_s = k as f64 * 0.1;
            let later = if t_s >= 2.0 { 1.4 } else { 1.0 };
            LatencyInterval {
                t_s,
                p50_ns: (1_250.0 * later) as u64,
                p99_ns: (2_900.0 * later) as u64 + 10 * k,
                max_ns: if k == 17 { 3_000_000 } else { 40_000 + 500 * k },
                count: 250,
            }
        })
        .collect();
    r.metrics.latency = Some(crate::report::LatencyReport {
        percentiles: p,
        histogram: h.report_buckets(),
        intervals,
    });
    r.metrics.latency_dropped = Some(3);
    r.metrics.headline = crate::report::Headline {
        kind: "latency".into(),
        task: "yield".into(),
        value: p.p50 as f64,
        unit: "ns".into(),
        text: String::new(),
    };
    r
}

#[test]
fn run_yield_latency_shows_its_latency_over_time_and_histogram() {
    check("run_yield_latency", |p| {
        plot_run(&yield_latency_report(), p)
    });
}

#[test]
fn run_pipe_wakeup_with_zero_switches_keeps_them_on_a_zero_tick() {
    // The reader sleeps through the first second: no switches in those samples.
    let mut r = run_report(2, "bytes");
    for p in r.series.points.iter_mut() {
        if p.task == 1 && p.t_s <= 1.0 {
            p.switches_per_s = 0.0;
        }
    }
    check("run_pipe_wakeup_zero", |p| plot_run(&r, p));
}
