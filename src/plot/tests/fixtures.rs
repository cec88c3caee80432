//! A run, a sweep and a comparison with known numbers, for the plot tests and reference figures.

use crate::report::compare::{outliers, ratios, stats, CompareReport, MetricStats};
use crate::report::sweep::{SweepReport, SweepRow};
use crate::report::{
    EventReport, Headline, Metrics, RunReport, RunSeries, SeriesPoint, TaskReport,
};

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
        sched: None,
    }
}

/// A run of `n` tasks over 4 s with two knob changes at 2 s (one refused).
pub(crate) fn run_report(n: usize, unit: &str) -> RunReport {
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
        metrics: throughput_metrics(group, unit),
        warnings: Vec::new(),
        events: knob_events(),
        interrupted: false,
        refused: Vec::new(),
        partial: false,
        foreign_load: false,
        failed: Vec::new(),
        observer: Default::default(),
        trace: None,
        series: RunSeries {
            tasks: names,
            points: series_points(n),
            cpus: Vec::new(),
        },
    }
}

/// Samples every 0.1 s (the last one 5 ms past 4 s) of `n` tasks whose shares and rates
/// change at 2 s.
fn series_points(n: usize) -> Vec<SeriesPoint> {
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
    points
}

/// Throughput metrics of `group` in `unit`, the headline repeating them.
fn throughput_metrics(group: &str, unit: &str) -> Metrics {
    Metrics {
        throughput_per_s: 36e6,
        throughput_unit: unit.into(),
        latency: None,
        latency_dropped: None,
        fairness_error: None,
        stages: Vec::new(),
        cpu: Vec::new(),
        cpu_idle_share: 0.0,
        foreign_cpus: None,
        headline: Headline {
            kind: "throughput".into(),
            task: group.into(),
            value: 36e6,
            unit: format!("{unit}/s"),
            text: String::new(),
        },
    }
}

/// Two knob changes applied at 2 s and one refused at 3.9 s.
fn knob_events() -> Vec<EventReport> {
    vec![
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
    ]
}

pub(in crate::plot) fn sweep_report(values: &[&str], tasks: usize) -> SweepReport {
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
                foreign_cpus: None,
                foreign_load: false,
            })
            .collect(),
        interrupted: false,
    }
}

pub(in crate::plot) fn compare_report(tasks: usize) -> CompareReport {
    let metric = |name: String, unit: &str, a: Vec<f64>, b: Vec<f64>| {
        let r = ratios(&a, &b);
        MetricStats {
            name,
            unit: unit.into(),
            a: stats(&a),
            b: stats(&b),
            ratio_median: stats(&r).median,
            outlier_rounds: outliers(&r),
            ratio_rounds: (1..=r.len()).collect(),
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
