//! The comparison's statistics, its report from rounds, and its table.

use std::collections::BTreeSet;

use super::render::per_round_ratios;
use super::*;

#[test]
fn stats_of_odd_even_and_single_counts() {
    let s = stats(&[3.0, 1.0, 2.0]);
    assert_eq!((s.min, s.median, s.max), (1.0, 2.0, 3.0));
    assert_eq!(s.values, vec![3.0, 1.0, 2.0], "values stay in run order");
    let s = stats(&[4.0, 1.0, 3.0, 2.0]);
    assert_eq!((s.min, s.median, s.max), (1.0, 2.5, 4.0));
    let s = stats(&[7.5]);
    assert_eq!((s.min, s.median, s.max), (7.5, 7.5, 7.5));
    let s = stats(&[]);
    assert_eq!((s.min, s.median, s.max), (0.0, 0.0, 0.0));
    assert!(s.values.is_empty());
}

#[test]
fn ratios_pair_in_order_and_skip_a_zero_a() {
    assert_eq!(ratios(&[2.0, 4.0], &[5.0, 2.0]), vec![2.5, 0.5]);
    assert_eq!(ratios(&[10.0], &[25.0]), vec![2.5]);
    // 0/0 is no change; x/0 has no finite ratio and is left out.
    assert_eq!(ratios(&[0.0, 0.0, 1.0], &[0.0, 3.0, 2.0]), vec![1.0, 2.0]);
    assert!(ratios(&[0.0], &[1.0]).is_empty());
    // Unequal lengths pair up to the shorter.
    assert_eq!(ratios(&[1.0, 1.0, 1.0], &[2.0]), vec![2.0]);
    assert!(ratios(&[1.0, 0.0], &[f64::NAN, 1.0])
        .iter()
        .all(|r| r.is_finite()));
}

#[test]
fn a_round_far_from_the_others_is_another_regime() {
    // pipe-wakeup's slow BATCH regime: one round at 0.4x where the rest are 2.2x.
    assert_eq!(outliers(&[2.21, 0.40, 2.43, 2.21]), vec![2]);
    // Within 25 % of the median is one regime.
    assert!(outliers(&[2.0, 2.4, 1.7]).is_empty());
    // Two rounds cannot say which one is odd.
    assert!(outliers(&[1.0, 3.0]).is_empty());
}

#[test]
fn display_units() {
    assert_eq!(display_unit("bytes/s", 5e7), (1e6, "MB/s".to_string()));
    assert_eq!(display_unit("ns", 1800.0), (1e3, "us".to_string()));
    assert_eq!(display_unit("ns", 2e6), (1e6, "ms".to_string()));
    assert_eq!(display_unit("%", 63.0), (1.0, "%".to_string()));
    assert_eq!(
        display_unit("switches/s", 83_000.0),
        (1e3, "k switches/s".to_string())
    );
    assert_eq!(display_unit("loops/s", 450.0), (1.0, "loops/s".to_string()));
    assert_eq!(short(21.456), "21.5");
    assert_eq!(short(0.0), "0");
    assert_eq!(short(1234.4), "1234");
    assert_eq!(ratio_text(2.434), "2.43");
    assert_eq!(ratio_text(0.0016), "0.0016");
    assert_eq!(ratio_text(0.05), "0.050");
    assert_eq!(ratio_text(0.0), "0.00");
}

fn synthetic() -> CompareReport {
    let metric = |name: &str, unit: &str, a: &[f64], b: &[f64]| {
        let r = ratios(a, b);
        MetricStats {
            name: name.into(),
            unit: unit.into(),
            a: stats(a),
            b: stats(b),
            ratio_median: stats(&r).median,
            outlier_rounds: outliers(&r),
            ratio_rounds: (1..=r.len()).collect(),
            ratios: r,
        }
    };
    CompareReport {
        preset: "pipe-wakeup".into(),
        kernel: "6.18.44".into(),
        cpus: 2,
        a: vec!["writer.policy=other".into()],
        b: vec!["writer.policy=batch".into(), "reader.policy=batch".into()],
        rounds: 2,
        duration_s: 3.0,
        metrics: vec![
            metric(
                "writer throughput",
                "bytes/s",
                &[21.4e6, 21.6e6],
                &[52.0e6, 54.0e6],
            ),
            metric("reader CPU share", "%", &[36.0, 35.0], &[2.0, 3.0]),
            metric(
                "writer switches",
                "switches/s",
                &[0.0, 83_000.0],
                &[130.0, 0.0],
            ),
        ],
        warnings: vec!["reader: something refused; running without it".into()],
        partial_runs: 0,
        foreign_load_runs: 0,
        interrupted: false,
    }
}

#[test]
fn render_has_a_row_per_metric_with_units_and_ratios() {
    let text = render(&synthetic());
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("compare pipe-wakeup on Linux 6.18.44 (2 CPUs): 2 rounds"));
    assert_eq!(lines[1], "A: writer.policy=other");
    assert_eq!(lines[2], "B: writer.policy=batch,reader.policy=batch");
    assert!(lines[3].starts_with("METRIC"), "{text}");
    let tp = lines[4];
    assert!(tp.starts_with("writer throughput"), "{text}");
    for cell in [
        "MB/s",
        "21.4",
        "21.5",
        "21.6",
        "52.0",
        "53.0",
        "54.0",
        "2.43 2.50",
        "2.46x",
    ] {
        assert!(tp.contains(cell), "{cell} missing from {tp}");
    }
    assert!(
        lines[5].contains("0.056 0.086") && lines[5].ends_with("0.071x"),
        "{text}"
    );
    // 0 -> 130 has no ratio, 83k -> 0 is 0.
    assert!(lines[6].contains("k switches/s"), "{text}");
    assert!(
        lines[6].ends_with("0.00x") && !lines[6].contains("inf"),
        "{text}"
    );
    assert!(text.ends_with("warning: reader: something refused; running without it\n"));
    // Columns line up: the last one is right-aligned, so every row is as long.
    let lens: BTreeSet<usize> = lines[3..7].iter().map(|l| l.chars().count()).collect();
    assert_eq!(lens.len(), 1, "{text}");
}

#[test]
fn render_marks_odd_rounds_interruption_and_runs_that_are_not_the_experiment() {
    let mut r = synthetic();
    r.rounds = 1;
    r.interrupted = true;
    r.a.clear();
    r.partial_runs = 1;
    r.foreign_load_runs = 2;
    let rs = ratios(&[1.0; 4], &[2.21, 0.40, 2.43, 2.21]);
    r.metrics = vec![MetricStats {
        name: "writer throughput".into(),
        unit: "loops/s".into(),
        a: stats(&[1.0; 4]),
        b: stats(&[2.21, 0.40, 2.43, 2.21]),
        ratio_median: stats(&rs).median,
        outlier_rounds: outliers(&rs),
        ratio_rounds: (1..=rs.len()).collect(),
        ratios: rs,
    }];
    let text = render(&r);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].contains(": 1 round of A then B, 3.0 s each (interrupted)"),
        "{text}"
    );
    assert_eq!(lines[1], "A: (preset as is)");
    assert!(lines[4].contains("2.21 0.40* 2.43 2.21"), "{text}");
    assert!(lines[4].ends_with("2.21x"), "{text}");
    assert_eq!(
        lines.last().copied(),
        Some("=> NOT THE EXPERIMENT in 2 of the runs (1 with a refused setting, 2 under foreign load)")
    );
}

/// A run's metrics as [`metrics_of`] gives them.
fn run(metrics: &[(&str, &str, f64)]) -> Option<RunMetrics> {
    Some(
        metrics
            .iter()
            .map(|(n, u, v)| (n.to_string(), u.to_string(), *v))
            .collect(),
    )
}

#[test]
fn rounds_become_medians_and_ratios_of_the_rounds_both_sides_have() {
    // Three rounds; round 2's B run lacks the share metric (its task exited early),
    // round 3's B run did not complete (the comparison was stopped in it).
    let rounds: Vec<Round> = vec![
        [
            run(&[("tput", "loops/s", 20.0), ("share", "%", 50.0)]),
            run(&[("tput", "loops/s", 50.0), ("share", "%", 10.0)]),
        ],
        [
            run(&[("tput", "loops/s", 25.0), ("share", "%", 40.0)]),
            run(&[("tput", "loops/s", 55.0)]),
        ],
        [
            run(&[("tput", "loops/s", 30.0), ("share", "%", 60.0)]),
            None,
        ],
    ];
    let m = metric_stats(&rounds);
    let v = serde_json::to_value(&m).expect("json");
    let close = |v: &serde_json::Value, want: f64| {
        let got = v.as_f64().expect("a number");
        assert!((got - want).abs() < 1e-12, "{got} != {want}");
    };
    // Metrics in the order the runs first name them.
    assert_eq!(v[0]["name"], "tput");
    assert_eq!(v[0]["unit"], "loops/s");
    assert_eq!(v[1]["name"], "share");
    assert_eq!(v.as_array().expect("a list").len(), 2);
    // tput: A 20, 25, 30 (median 25); B 50, 55 (median 52.5, the mean of the two);
    // ratios only where both sides ran: 50/20 = 2.5, 55/25 = 2.2, median 2.35.
    assert_eq!(v[0]["a"]["values"], serde_json::json!([20.0, 25.0, 30.0]));
    close(&v[0]["a"]["min"], 20.0);
    close(&v[0]["a"]["max"], 30.0);
    close(&v[0]["a"]["median"], 25.0);
    assert_eq!(v[0]["b"]["values"], serde_json::json!([50.0, 55.0]));
    close(&v[0]["b"]["median"], 52.5);
    close(&v[0]["ratios"][0], 2.5);
    close(&v[0]["ratios"][1], 2.2);
    assert_eq!(v[0]["ratios"].as_array().map(Vec::len), Some(2));
    close(&v[0]["ratio_median"], (2.5 + 2.2) / 2.0);
    // share: A 50, 40, 60 (median 50); B 10 alone; one pair, 10/50 = 0.2.
    close(&v[1]["a"]["median"], 50.0);
    assert_eq!(v[1]["b"]["values"], serde_json::json!([10.0]));
    close(&v[1]["b"]["median"], 10.0);
    assert_eq!(v[1]["ratios"].as_array().map(Vec::len), Some(1));
    close(&v[1]["ratios"][0], 0.2);
    close(&v[1]["ratio_median"], 0.2);
    // Two ratios cannot make a regime; neither can one.
    assert_eq!(v[0]["outlier_rounds"], serde_json::json!([]));
    assert_eq!(v[1]["outlier_rounds"], serde_json::json!([]));
    assert!(regime_warnings(&m).is_empty());
}

/// Rounds of one metric, "tput", from (A, B) values.
fn tput_rounds(ab: &[(f64, f64)]) -> Vec<Round> {
    ab.iter()
        .map(|&(a, b)| {
            [
                run(&[("tput", "loops/s", a)]),
                run(&[("tput", "loops/s", b)]),
            ]
        })
        .collect()
}

#[test]
fn a_round_in_another_regime_is_named_in_a_warning() {
    // B/A per round: 2.0, 2.0, 0.4. The median is 2.0; 0.4 is 5x off it, past the
    // 1.25x that still counts as one regime.
    let rounds = tput_rounds(&[(10.0, 20.0), (20.0, 40.0), (50.0, 20.0)]);
    let m = metric_stats(&rounds);
    assert_eq!(m[0].ratios, [2.0, 2.0, 0.4]);
    assert_eq!(m[0].ratio_median, 2.0);
    assert_eq!(m[0].outlier_rounds, [3]);
    assert_eq!(
        regime_warnings(&m),
        ["tput: the rounds split into regimes: B/A of round 3 (0.40) is more than 25 % from the median 2.00 (every round is shown)"]
    );
    let v = serde_json::to_value(&m[0]).expect("json");
    assert_eq!(v["outlier_rounds"], serde_json::json!([3]));
}

#[test]
fn an_odd_round_is_named_by_its_round_even_after_a_round_without_a_ratio() {
    // Round 1's A is 0 (x/0 has no ratio): the ratios come from rounds 2-5, and the
    // odd one (0.4) is round 5, the fourth ratio.
    let rounds = tput_rounds(&[
        (0.0, 5.0),
        (10.0, 20.0),
        (20.0, 40.0),
        (5.0, 10.0),
        (50.0, 20.0),
    ]);
    let m = metric_stats(&rounds);
    assert_eq!(m[0].ratios, [2.0, 2.0, 2.0, 0.4]);
    assert_eq!(m[0].ratio_rounds, [2, 3, 4, 5]);
    assert_eq!(m[0].outlier_rounds, [5]);
    assert!(
        regime_warnings(&m)[0].contains("round 5 (0.40)"),
        "{:?}",
        regime_warnings(&m)
    );
    assert_eq!(per_round_ratios(&m[0]), "2.00 2.00 2.00 0.40*");
}
