//! The RT throttle's windows in an rt-throttle run's samples: how long the fair thread's
//! first stretch on the CPU lasted, and its share over whole RT periods after it.
//!
//! When a FIFO spinner starts after a spell with no RT task running (2 s here), this
//! kernel (6.18) sometimes keeps it off the CPU for far longer than the promised window
//! the first time it throttles it (0.2 to 1.5 s instead of 50 ms; a plain C program
//! shows the same), then settles into the promised window every period. The steady
//! share is measured after that first window.

use crate::report::RunReport;

/// The fair thread's time on the CPU, as the samples show it.
#[derive(Clone, Debug, PartialEq)]
pub struct Windows {
    /// CPU time (s) of the first stretch of samples in which the fair thread ran.
    pub first_s: f64,
    /// When the samples of that stretch ended (s into the run).
    pub first_ended_s: f64,
    /// The stretch was still going at the last sample.
    pub first_unended: bool,
    /// The share over whole RT periods after the first stretch, with its window (s into
    /// the run); None when no whole period was left.
    pub steady: Option<(f64, f64, f64)>,
}

impl Windows {
    /// What to say of the first window when it lasted more than twice the `promised_s`
    /// window (a normal one is 50-55 ms of 50; a stretched one 0.2 s and more).
    pub fn stretched(&self, promised_s: f64) -> Option<String> {
        (self.first_s > 2.0 * promised_s).then(|| {
            format!(
                "the first throttled window lasted {}{} where {:.0} ms is promised, a start-up transient of this kernel when RT tasks start after a spell without any (docs/src/known-effects.md: rt-throttle's first window)",
                if self.first_unended { "at least " } else { "" },
                crate::format::ns((self.first_s * 1e9) as u64),
                promised_s * 1e3
            )
        })
    }
}

/// Below this share of a sample the thread is taken not to have run (0.5 ms in 100 ms:
/// a sample's boundary cutting a window leaves more than that on one side or the other).
const RAN: f64 = 0.005;

/// A stretch starts at a sample with more than this share (and takes in the sample
/// before if the thread ran in it): a window of 50 ms puts at least 25 ms into one of
/// the 100 ms samples it falls in, while the fair thread's moment on the CPU before the
/// spinner gets going at the start (about 1 ms) is no window.
const WINDOW: f64 = 0.1;

/// `task`'s samples in `r`: (start, end, share), in time order.
fn samples(r: &RunReport, task: &str) -> Option<Vec<(f64, f64, f64)>> {
    let idx = r.series.tasks.iter().position(|t| t == task)?;
    let mut prev = 0.0;
    Some(
        r.series
            .points
            .iter()
            .filter(|p| p.task == idx)
            .map(|p| {
                let s = (prev, p.t_s, p.cpu_share);
                prev = p.t_s;
                s
            })
            .collect(),
    )
}

/// CPU time (s) in the samples that end after `from` and by `to`.
fn ran(samples: &[(f64, f64, f64)], from: f64, to: f64) -> f64 {
    samples
        .iter()
        .filter(|s| s.1 > from && s.1 <= to)
        .map(|(a, b, share)| share * (b - a))
        .sum()
}

/// `task`'s share between two sample ends.
pub fn share_between(r: &RunReport, task: &str, from: f64, to: f64) -> Option<f64> {
    let samples = samples(r, task)?;
    (to > from).then(|| ran(&samples, from, to) / (to - from))
}

/// The windows of `task` in `r`'s samples, with RT periods of `period_s`.
pub fn windows(r: &RunReport, task: &str, period_s: f64) -> Option<Windows> {
    let samples = samples(r, task)?;
    let big = samples.iter().position(|s| s.2 > WINDOW)?;
    let start = if big > 0 && samples[big - 1].2 > RAN {
        big - 1
    } else {
        big
    };
    let end = samples[start..]
        .iter()
        .position(|s| s.2 <= RAN)
        .map(|n| start + n);
    let stretch = &samples[start..end.unwrap_or(samples.len())];
    let first_s = stretch.iter().map(|(a, b, share)| share * (b - a)).sum();
    let first_ended_s = stretch.last().map_or(0.0, |s| s.1);
    let steady = end.and_then(|e| steady_share(&samples[e..], first_ended_s, period_s));
    Some(Windows {
        first_s,
        first_ended_s,
        first_unended: end.is_none(),
        steady,
    })
}

/// How late a sample may end and still count as ending on time (a sampler's jitter).
const JITTER_S: f64 = 0.01;

/// The share over the most whole periods from `from` that `samples` cover, with its
/// window: it ends at the first sample end at or after the last whole period (never
/// before it, which could cut off the throttled window that closes each period).
fn steady_share(samples: &[(f64, f64, f64)], from: f64, period_s: f64) -> Option<(f64, f64, f64)> {
    let last = samples.last()?.1;
    if period_s <= 0.0 {
        return None;
    }
    let periods = ((last - from + JITTER_S) / period_s).floor();
    if periods < 1.0 {
        return None;
    }
    let goal = from + periods * period_s;
    let to = samples
        .iter()
        .map(|s| s.1)
        .find(|&t| t >= goal - JITTER_S)?;
    (to > from).then(|| (ran(samples, from, to) / (to - from), from, to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::{RunSeries, SeriesPoint};

    /// A run whose "fair" thread had `shares` in samples of 0.1 s.
    fn run(shares: &[f64]) -> RunReport {
        let mut r = crate::plot::tests::fixtures::run_report(2, "loops");
        r.series = RunSeries {
            tasks: vec!["fifo".into(), "fair".into()],
            points: shares
                .iter()
                .enumerate()
                .map(|(i, &s)| SeriesPoint {
                    t_s: (i + 1) as f64 / 10.0,
                    task: 1,
                    cpu_share: s,
                    ..SeriesPoint::default()
                })
                .collect(),
            cpus: Vec::new(),
        };
        r
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn a_first_window_as_promised_then_one_whole_period() {
        // 50 ms at 0.95-1.0 s, then at 1.95-2.0 s; the run ends at 2.1 s.
        let mut s = vec![0.0; 21];
        s[9] = 0.5;
        s[19] = 0.5;
        let w = windows(&run(&s), "fair", 1.0).expect("windows");
        assert!(close(w.first_s, 0.05), "{w:?}");
        assert!(close(w.first_ended_s, 1.0) && !w.first_unended, "{w:?}");
        let (share, from, to) = w.steady.expect("a whole period");
        assert!(
            close(share, 0.05) && close(from, 1.0) && close(to, 2.0),
            "{w:?}"
        );
    }

    #[test]
    fn a_stretched_first_window_is_left_out_of_the_steady_share() {
        // What the C reference showed: 0.95 s to 1.5 s, then 50 ms a period.
        let mut s = vec![0.0; 40];
        s[9] = 0.5;
        s[10..15].fill(1.0);
        s[24] = 0.5;
        s[34] = 0.5;
        let w = windows(&run(&s), "fair", 1.0).expect("windows");
        assert!(close(w.first_s, 0.55), "{w:?}");
        assert!(close(w.first_ended_s, 1.5), "{w:?}");
        let (share, from, to) = w.steady.expect("two whole periods");
        assert!(
            close(share, 0.05) && close(from, 1.5) && close(to, 3.5),
            "{w:?}"
        );
    }

    #[test]
    fn no_whole_period_after_the_first_window_measures_no_steady_share() {
        let mut s = vec![0.0; 21];
        s[9] = 0.5;
        s[10..15].fill(1.0);
        let w = windows(&run(&s), "fair", 1.0).expect("windows");
        assert!(close(w.first_s, 0.55) && w.steady.is_none(), "{w:?}");
        // Still running at the end: unended.
        s[15..].fill(1.0);
        let w = windows(&run(&s), "fair", 1.0).expect("windows");
        assert!(w.first_unended && w.steady.is_none(), "{w:?}");
        assert!(close(w.first_s, 1.15), "{w:?}");
    }

    #[test]
    fn a_moment_on_the_cpu_at_the_start_is_no_window() {
        // 1 ms in the first sample, then the window at 0.95-1.0 s as promised.
        let mut s = vec![0.0; 21];
        s[0] = 0.01;
        s[9] = 0.3;
        s[10] = 0.2;
        let w = windows(&run(&s), "fair", 1.0).expect("windows");
        assert!(
            close(w.first_s, 0.05) && close(w.first_ended_s, 1.1),
            "{w:?}"
        );
        assert!(w.steady.is_some(), "{w:?}");
    }

    #[test]
    fn a_period_off_the_sample_grid_is_measured_to_the_sample_after_it() {
        // Periods of 0.93 s: windows at 1.88-1.93 and 2.81-2.86 s after the first at
        // 0.95-1.0 s (samples 1.8-1.9, 1.9-2.0, 2.8-2.9 hold them).
        let mut s = vec![0.0; 30];
        s[9] = 0.5;
        s[18] = 0.2;
        s[19] = 0.3;
        s[28] = 0.5;
        let w = windows(&run(&s), "fair", 0.93).expect("windows");
        let (share, from, to) = w.steady.expect("two whole periods");
        assert!(close(from, 1.0) && close(to, 2.9), "{w:?}");
        assert!(close(share, 0.1 / 1.9), "{w:?}");
    }

    #[test]
    fn a_window_over_twice_the_promise_is_stretched() {
        let w = |first_s, first_unended| Windows {
            first_s,
            first_ended_s: 1.0,
            first_unended,
            steady: None,
        };
        assert_eq!(w(0.055, false).stretched(0.05), None);
        let said = w(0.55, false).stretched(0.05).expect("stretched");
        assert!(
            said.starts_with("the first throttled window lasted 550.0 ms where 50 ms"),
            "{said}"
        );
        let said = w(1.15, true).stretched(0.05).expect("stretched");
        assert!(said.contains("lasted at least 1.15 s"), "{said}");
    }

    #[test]
    fn the_share_between_two_sample_ends() {
        let r = run(&[0.0, 0.5, 1.0, 0.25]);
        let share = share_between(&r, "fair", 0.1, 0.3).expect("a share");
        assert!(close(share, 0.75), "{share}");
        assert_eq!(share_between(&r, "fair", 0.3, 0.3), None);
        assert_eq!(share_between(&r, "nobody", 0.0, 0.4), None);
    }

    #[test]
    fn a_thread_that_never_ran_or_is_not_there_has_no_windows() {
        assert_eq!(windows(&run(&[0.0; 10]), "fair", 1.0), None);
        assert_eq!(windows(&run(&[0.05; 10]), "fair", 1.0), None);
        assert_eq!(windows(&run(&[0.5; 10]), "nobody", 1.0), None);
    }
}
