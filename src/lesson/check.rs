//! A step's check over the live model between two times: the one evaluation the
//! workbench and `lesson --headless` both use, so they agree.

use serde::Serialize;

use super::{Bound, Check, Metric};
use crate::lab::live::Live;
use crate::lab::store::TaskRates;
use crate::preset::Headline;

/// A step's time on the run's clock (seconds since the first sample).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Window {
    pub from_s: f64,
    pub to_s: f64,
}

impl Window {
    /// The part of the window after the check's settle time.
    pub fn settled(&self, check: &Check) -> Window {
        Window {
            from_s: (self.from_s + check.settle.as_secs_f64()).min(self.to_s),
            to_s: self.to_s,
        }
    }
}

/// What a check found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Pass,
    Fail,
    /// Fewer than two samples in a window: nothing to judge yet.
    NoData,
}

/// A check's result: the verdict, the figures behind it and the sentence that says so.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Outcome {
    pub verdict: Verdict,
    /// The metric's mean over this step's settled window.
    pub value: Option<f64>,
    /// The same over the earlier step's window (ratio checks).
    pub reference: Option<f64>,
    /// value / reference (ratio checks).
    pub ratio: Option<f64>,
    pub text: String,
}

/// Fewer samples than this in a window judge nothing.
const MIN_POINTS: usize = 2;

/// Evaluate `check` over `this` step's window (and `earlier`, the window of the step a
/// ratio compares with) in `live`. `headline` is the preset's.
pub fn evaluate(
    live: &Live,
    headline: Headline,
    check: &Check,
    this: Window,
    earlier: Option<Window>,
) -> Outcome {
    let value = mean_over(live, headline, check, this.settled(check));
    let (min, max, reference) = match check.bound {
        Bound::Absolute { min, max } => (min, max, None),
        Bound::Ratio { min, max, .. } => (
            min,
            max,
            Some(earlier.and_then(|w| mean_over(live, headline, check, w.settled(check)))),
        ),
    };
    let Some(value) = value else {
        return no_data(check, "this step");
    };
    let (judged, ratio, reference) = match reference {
        None => (value, None, None),
        Some(None) => return no_data(check, "the step it compares with"),
        Some(Some(r)) if r.abs() < 1e-12 => {
            return no_data(check, "the step it compares with (its value is 0)")
        }
        Some(Some(r)) => (value / r, Some(value / r), Some(r)),
    };
    let pass = min.is_none_or(|m| judged >= m) && max.is_none_or(|m| judged <= m);
    let figure = match ratio {
        Some(q) => format!(
            "{} vs {}: {q:.2}x",
            show(check.metric, headline, value),
            show(check.metric, headline, reference.unwrap_or(0.0))
        ),
        None => show(check.metric, headline, value),
    };
    Outcome {
        verdict: if pass { Verdict::Pass } else { Verdict::Fail },
        value: Some(value),
        reference,
        ratio,
        text: format!(
            "{}: {} ({figure}; expected {})",
            if pass { "yes" } else { "NO" },
            check.says,
            expected(check, headline)
        ),
    }
}

fn no_data(check: &Check, whose: &str) -> Outcome {
    Outcome {
        verdict: Verdict::NoData,
        value: None,
        reference: None,
        ratio: None,
        text: format!(
            "not enough samples yet in {whose} to check \"{}\"",
            check.says
        ),
    }
}

/// The bound in words: `>= 2x step 1`, `55.0 %..63.0 %`.
fn expected(check: &Check, headline: Headline) -> String {
    let (min, max, fmt): (_, _, Box<dyn Fn(f64) -> String>) = match check.bound {
        Bound::Absolute { min, max } => {
            (min, max, Box::new(move |v| show(check.metric, headline, v)))
        }
        Bound::Ratio { min, max, .. } => (min, max, Box::new(|v| format!("{v}x"))),
    };
    let vs = match check.bound {
        Bound::Ratio { step, .. } => format!(" step {}", step + 1),
        Bound::Absolute { .. } => String::new(),
    };
    match (min, max) {
        (Some(a), Some(b)) => format!("{}..{}{vs}", fmt(a), fmt(b)),
        (Some(a), None) => format!(">= {}{vs}", fmt(a)),
        (None, Some(b)) => format!("<= {}{vs}", fmt(b)),
        (None, None) => "anything".into(),
    }
}

/// A value as the table shows it: shares in %, latencies in us, rates with k/M.
pub fn show(metric: Metric, headline: Headline, v: f64) -> String {
    let share = matches!(metric, Metric::Cpu | Metric::Portion | Metric::Wait)
        || (metric == Metric::Headline && matches!(headline, Headline::Share | Headline::Fairness));
    if share {
        return format!("{:.1} %", v * 100.0);
    }
    if metric == Metric::Headline && headline == Headline::Latency {
        return format!("p50 {:.2} us", v / 1000.0);
    }
    let (scaled, suffix) = match v.abs() {
        a if a >= 1e9 => (v / 1e9, "G"),
        a if a >= 1e6 => (v / 1e6, "M"),
        a if a >= 1e3 => (v / 1e3, "k"),
        _ => (v, ""),
    };
    format!("{scaled:.1}{suffix}/s")
}

/// The metric's mean over the window's samples, or None with fewer than [`MIN_POINTS`].
pub fn mean_over(live: &Live, headline: Headline, check: &Check, w: Window) -> Option<f64> {
    let inside = |t: f64| t > w.from_s && t <= w.to_s;
    let values: Vec<f64> = match check.metric {
        Metric::Headline => headline_points(live, headline, &inside),
        Metric::Portion => portion_points(live, check.task.as_deref(), &inside),
        m => task_points(live, check.task.as_deref(), m, &inside),
    };
    (values.len() >= MIN_POINTS).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

fn headline_points(live: &Live, headline: Headline, inside: &dyn Fn(f64) -> bool) -> Vec<f64> {
    match headline {
        Headline::Throughput => pick(live.throughput.iter().copied(), inside),
        Headline::Fairness => pick(live.fairness.iter().copied(), inside),
        Headline::Latency => live
            .store
            .latency
            .iter()
            .filter(|l| inside(l.t_s) && l.count > 0)
            .map(|l| l.p50_ns as f64)
            .collect(),
        Headline::Share => task_points(live, None, Metric::Cpu, inside),
    }
}

fn pick(series: impl Iterator<Item = (f64, f64)>, inside: &dyn Fn(f64) -> bool) -> Vec<f64> {
    series.filter(|(t, _)| inside(*t)).map(|(_, v)| v).collect()
}

/// Per sample time in the window, the metric summed over the tasks named (a group: all
/// its instances; None: the preset's headline group).
fn task_points(
    live: &Live,
    task: Option<&str>,
    metric: Metric,
    inside: &dyn Fn(f64) -> bool,
) -> Vec<f64> {
    sums_by_time(live, &ids_of(live, task), metric, inside)
        .into_iter()
        .map(|(_, v)| v)
        .collect()
}

/// The tasks a check names: a group's instances, one instance, or (None) the preset's
/// headline group.
fn ids_of(live: &Live, task: Option<&str>) -> Vec<usize> {
    match task {
        None => live.group_ids(),
        Some(t) => (0..live.tasks.len())
            .filter(|&i| live.tasks[i].name == t || live.tasks[i].group == t)
            .collect(),
    }
}

/// (sample time, the metric summed over `ids`) for the samples in the window.
fn sums_by_time(
    live: &Live,
    ids: &[usize],
    metric: Metric,
    inside: &dyn Fn(f64) -> bool,
) -> Vec<(f64, f64)> {
    let mut by_time: Vec<(f64, f64)> = Vec::new();
    for &i in ids {
        let Some(series) = live.store.tasks.get(i) else {
            continue;
        };
        for r in series.points.iter().filter(|r| inside(r.t_s)) {
            let v = rate(r, metric);
            match by_time.iter_mut().find(|(t, _)| (*t - r.t_s).abs() < 1e-6) {
                Some((_, sum)) => *sum += v,
                None => by_time.push((r.t_s, v)),
            }
        }
    }
    by_time
}

/// Per sample time, the named tasks' CPU share over all tasks' (None: every task).
fn portion_points(live: &Live, task: Option<&str>, inside: &dyn Fn(f64) -> bool) -> Vec<f64> {
    let part = sums_by_time(live, &ids_of(live, task), Metric::Cpu, inside);
    let all: Vec<usize> = (0..live.tasks.len()).collect();
    let whole = sums_by_time(live, &all, Metric::Cpu, inside);
    part.iter()
        .filter_map(|(t, p)| {
            let w = whole.iter().find(|(u, _)| (u - t).abs() < 1e-6)?.1;
            (w > 0.0).then(|| p / w)
        })
        .collect()
}

fn rate(r: &TaskRates, metric: Metric) -> f64 {
    match metric {
        Metric::Cpu | Metric::Portion | Metric::Headline => r.cpu_share,
        Metric::Wait => r.wait_share.unwrap_or(0.0),
        Metric::Switches => r.switches_per_s,
        Metric::Voluntary => r.voluntary_per_s,
        Metric::Involuntary => r.involuntary_per_s,
        Metric::Migrations => r.migrations_per_s.unwrap_or(0.0),
        Metric::Progress => r.progress_per_s,
    }
}

/// What schedlab knows that may explain a check of `metric` that did not pass: refused
/// knob changes, foreign load over the window, fewer CPUs than the lesson assumes. A
/// `portion` is the tasks' split of the experiment's own CPU time: other programs and a
/// single CPU take from every task alike and do not move it, so they excuse no portion.
pub fn known_reasons(
    live: &Live,
    w: Window,
    refused: &[String],
    cpus: usize,
    metric: Metric,
) -> Vec<String> {
    let mut out: Vec<String> = refused
        .iter()
        .map(|r| format!("the kernel refused a change of this step: {r}"))
        .collect();
    if metric == Metric::Portion {
        return out;
    }
    let foreign = pick(live.store.foreign.iter().copied(), &|t| {
        t > w.from_s && t <= w.to_s
    });
    if !foreign.is_empty() {
        let mean = foreign.iter().sum::<f64>() / foreign.len() as f64;
        if mean > crate::lab::store::FOREIGN_LIMIT_CPU {
            out.push(format!(
                "other programs took {mean:.2} CPU of the experiment's CPUs meanwhile"
            ));
        }
    }
    if cpus < 2 {
        out.push(format!(
            "this machine has {cpus} CPU: the lessons assume at least 2"
        ));
    }
    out
}
