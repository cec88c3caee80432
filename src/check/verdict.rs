//! Verdicts of `schedlab check`: pure functions from numbers to ok / notable / problem.

use crate::facts::{numbers, RtBandwidth};
use crate::format::ns;
use crate::report::check::Verdict;

/// An idle bare-metal machine with a stock (non-RT) kernel wakes a 1 ms timer within tens
/// of us at p99; SCHED_OTHER adds its 50 us default timer slack on top.
pub const WAKEUP_OK_P99_NS: u64 = 200_000;
/// ...and its worst wakeup in a few thousand stays below a couple of ms.
pub const WAKEUP_OK_MAX_NS: u64 = 2_000_000;
/// One wakeup in a hundred later than 2 ms: a 1 ms periodic task misses deadlines.
pub const WAKEUP_PROBLEM_P99_NS: u64 = 2_000_000;
/// Any wakeup 50 ms late: the CPU was gone for a dozen scheduler ticks.
pub const WAKEUP_PROBLEM_MAX_NS: u64 = 50_000_000;

/// What a healthy machine shows for timer wakeup latency, in words.
pub const WAKEUP_HEALTHY: &str = "p99 <= 200 us, max <= 2 ms";

/// Timer wakeup latency (cyclictest-like) from its p99 and max, in ns.
pub fn verdict_wakeup(p99_ns: u64, max_ns: u64, vm: bool) -> (Verdict, String) {
    let where_from = if vm {
        "on a VM the host can deschedule the vCPU or deliver its timer interrupt late, which bare metal does not do"
    } else {
        "interrupts, non-preemptible kernel paths or deep idle-state exits delay the wakeup"
    };
    if p99_ns > WAKEUP_PROBLEM_P99_NS || max_ns > WAKEUP_PROBLEM_MAX_NS {
        return (
            Verdict::Problem,
            format!(
                "a 1 ms periodic task would miss deadlines here: 1 % of wakeups are later than {}, the worst {} ({where_from})",
                ns(p99_ns),
                ns(max_ns)
            ),
        );
    }
    if p99_ns > WAKEUP_OK_P99_NS || max_ns > WAKEUP_OK_MAX_NS {
        return (
            Verdict::Notable,
            format!(
                "most wakeups are on time but outliers reach {} (p99 {}): {where_from}; fine for experiments, not for timing-critical work",
                ns(max_ns),
                ns(p99_ns)
            ),
        );
    }
    (
        Verdict::Ok,
        format!(
            "timer wakeups arrive on time: 99 % within {}, the worst {}",
            ns(p99_ns),
            ns(max_ns)
        ),
    )
}

/// A pipe round trip on one CPU: ~2-5 us on current bare metal, ~8 us on the dev VM.
pub const SWITCH_SAME_OK_US: f64 = 10.0;
/// Beyond this, switching itself is unusually expensive (old CPU, heavy mitigations).
pub const SWITCH_SAME_PROBLEM_US: f64 = 30.0;
pub const TRACED_WAKEUP_HEALTHY: &str = "p99 <= 50 us (bare metal ~2-10)";

/// Wakeup latency of the traced ping-pong's woken side (sched_waking to switch-in), in
/// us: the waker blocks right after it wakes its partner, so anything long is the
/// scheduler (or the hypervisor) making the woken side wait.
pub fn verdict_traced_wakeup(p50_us: f64, p99_us: f64, vm: bool) -> (Verdict, String) {
    let where_from = if vm {
        " (a VM adds exits on every switch and can deschedule the vCPU)"
    } else {
        ""
    };
    if p99_us > 200.0 {
        (
            Verdict::Problem,
            format!("a woken task waits {p99_us:.0} us for its CPU at p99 (p50 {p50_us:.1} us) although its waker blocks at once: something else holds the CPU{where_from}"),
        )
    } else if p99_us > 50.0 {
        (
            Verdict::Notable,
            format!("p99 {p99_us:.0} us (p50 {p50_us:.1} us): slower than a healthy switch path{where_from}"),
        )
    } else {
        (
            Verdict::Ok,
            format!("p50 {p50_us:.1} us, p99 {p99_us:.1} us from wakeup to running: the switch path is quick{where_from}"),
        )
    }
}

pub const SWITCH_SAME_HEALTHY: &str = "<= 10 us/op (bare metal ~2-5)";

/// Pipe ping-pong with both ends on one CPU, in us per round trip.
pub fn verdict_switch_same(us_per_op: f64, vm: bool) -> (Verdict, String) {
    let vm_note = if vm {
        " (a VM adds exits on every switch)"
    } else {
        ""
    };
    if us_per_op > SWITCH_SAME_PROBLEM_US {
        (
            Verdict::Problem,
            format!("a round trip of two switches costs {us_per_op:.1} us, several times current hardware{vm_note}: switch-heavy presets run slowly here"),
        )
    } else if us_per_op > SWITCH_SAME_OK_US {
        (
            Verdict::Notable,
            format!("switches cost more than on current bare metal{vm_note}; switch-heavy presets (pipe-wakeup, yield-latency) show lower rates"),
        )
    } else {
        (
            Verdict::Ok,
            format!("two context switches and two pipe operations take {us_per_op:.1} us{vm_note}, as expected"),
        )
    }
}

/// Cross-CPU round trip: bare metal pays an IPI and an idle exit, ~5-20 us.
pub const SWITCH_CROSS_OK_US: f64 = 30.0;
/// Beyond this, every cross-CPU wakeup costs about a scheduler tick's worth of latency.
pub const SWITCH_CROSS_PROBLEM_US: f64 = 200.0;
pub const SWITCH_CROSS_HEALTHY: &str = "<= 30 us/op (bare metal ~5-20)";

/// Pipe ping-pong across two CPUs, in us per round trip; `same_us` is the one-CPU cost.
pub fn verdict_switch_cross(us_per_op: f64, same_us: f64, vm: bool) -> (Verdict, String) {
    let ratio = if same_us > 0.0 {
        format!("{:.0}x the one-CPU cost", us_per_op / same_us)
    } else {
        "no one-CPU cost to compare with".to_string()
    };
    let why = if vm {
        "each wakeup of the other CPU is an IPI, and on a VM the host must first schedule the idle vCPU again"
    } else {
        "each wakeup of the other CPU is an IPI plus an idle-state exit (deep C-states make it slow)"
    };
    if us_per_op > SWITCH_CROSS_PROBLEM_US {
        (
            Verdict::Problem,
            format!("cross-CPU wakeups take {us_per_op:.0} us ({ratio}): {why}; tasks that talk across CPUs crawl"),
        )
    } else if us_per_op > SWITCH_CROSS_OK_US {
        (
            Verdict::Notable,
            format!("cross-CPU wakeups are slow ({ratio}): {why}; pinning both ends to one CPU is faster here"),
        )
    } else {
        (
            Verdict::Ok,
            format!("cross-CPU wakeups are cheap ({ratio})"),
        )
    }
}

/// BATCH at least this much faster: the kernel skips wakeup preemption for BATCH wakees.
pub const BATCH_OK_RATIO: f64 = 1.5;
/// BATCH slower than OTHER by this much has no scheduler explanation: the runs were disturbed.
pub const BATCH_PROBLEM_RATIO: f64 = 0.9;
/// What `check` calls healthy for the BATCH gain, with the gain measured here.
pub fn batch_healthy() -> String {
    format!(
        ">= {BATCH_OK_RATIO}x ({} on 6.18 pinned to one CPU)",
        numbers::BATCH_GAIN
    )
}

/// pipe-wakeup writer throughput BATCH / OTHER.
pub fn verdict_batch_ratio(ratio: f64) -> (Verdict, String) {
    if ratio < BATCH_PROBLEM_RATIO {
        (
            Verdict::Problem,
            format!("BATCH moved fewer bytes than OTHER ({ratio:.2}x), which no scheduler policy explains: other load or steal disturbed the runs"),
        )
    } else if ratio < BATCH_OK_RATIO {
        (
            Verdict::Notable,
            format!("BATCH is only {ratio:.2}x faster: this kernel still wakeup-preempts on most writes, or both runs hit the slow regime"),
        )
    } else {
        (
            Verdict::Ok,
            format!("a woken BATCH reader does not preempt the writer, so the pipe fills before it runs: {ratio:.2}x the bytes"),
        )
    }
}

/// Linux tracks nice weights within a few percent over seconds.
pub const FAIRNESS_OK: f64 = numbers::LADDER_ERROR_HEALTHY;
/// Beyond this share of CPU time at the wrong task, nice does not work as documented.
pub const FAIRNESS_PROBLEM: f64 = 0.10;
/// What `check` calls healthy for the nice-ladder error, with what its run showed here.
pub fn fairness_healthy() -> String {
    format!(
        "< {:.0} % ({} on the dev VM)",
        FAIRNESS_OK * 100.0,
        numbers::LADDER_ERROR_CHECK_RUN
    )
}

/// The nice-ladder fairness error, and the same error with the measured shares scaled to
/// the CPU time the ladder actually got (how well it was split, not how much was lost).
pub fn verdict_fairness(error: f64, split_error: f64) -> (Verdict, String) {
    let pct = |v: f64| format!("{:.1} %", v * 100.0);
    if split_error > FAIRNESS_PROBLEM {
        (
            Verdict::Problem,
            format!("{} of the ladder's CPU time went to the wrong task: shares do not follow the kernel's nice weights", pct(split_error)),
        )
    } else if split_error > FAIRNESS_OK {
        (
            Verdict::Notable,
            format!("shares follow the nice weights only roughly ({} misplaced among the ladder); short runs and other load add noise", pct(split_error)),
        )
    } else if error > FAIRNESS_OK {
        (
            Verdict::Notable,
            format!("the ladder is split by weight ({} misplaced), but part of the CPUs went to other work (steal, schedlab's sampler, other tasks)", pct(split_error)),
        )
    } else {
        (
            Verdict::Ok,
            format!(
                "CPU share follows the kernel's nice-to-weight table ({} misplaced)",
                pct(error)
            ),
        )
    }
}

/// Relative tolerance on the fair share RT throttling promises (one second of a spinner
/// throttled once per period is a coarse quantity).
pub const FIFO_SHARE_LOW: f64 = 0.6;
pub const FIFO_SHARE_HIGH: f64 = 1.5;
/// Absolute tolerance, for small promises.
pub const FIFO_SHARE_SLACK: f64 = 0.01;
/// Below this fraction of the promise the fair task is starving.
pub const FIFO_SHARE_STARVED: f64 = 0.3;

/// What `check` calls healthy for the fair share beside a FIFO spinner on a kernel with
/// `rt`: what acts there, and its share at the defaults.
pub fn fifo_healthy(rt: RtBandwidth) -> String {
    let share = numbers::FIFO_DEFAULT_FAIR_SHARE;
    match rt {
        RtBandwidth::Throttling => format!("1 - rt_runtime/rt_period ({share})"),
        RtBandwidth::ThrottlingAndFairServer => {
            format!("max(1 - rt_runtime/rt_period, fair server) ({share})")
        }
        RtBandwidth::FairServerOnly => {
            format!("fair server runtime/period ({share}); no RT throttling here")
        }
    }
}

/// The fair thread's CPU share next to a SCHED_FIFO spinner, against what the RT
/// settings (and the fair server) promise on a kernel with `rt`.
pub fn verdict_fifo_share(measured: f64, expected: f64, rt: RtBandwidth) -> (Verdict, String) {
    let pct = |v: f64| format!("{:.1} %", v * 100.0);
    // What protects the fair thread here.
    let guard = if rt.throttles() {
        "RT throttling"
    } else {
        "the fair server"
    };
    if expected < 0.005 {
        return if measured < 0.005 {
            (
                Verdict::Notable,
                "RT throttling is off and no fair server reserves time: a FIFO spinner starves every fair task on its CPU".to_string(),
            )
        } else {
            (
                Verdict::Ok,
                format!(
                    "nothing is promised, yet the fair thread got {}",
                    pct(measured)
                ),
            )
        };
    }
    let ratio = measured / expected;
    if ratio < FIFO_SHARE_STARVED && expected - measured > FIFO_SHARE_SLACK {
        return (
            Verdict::Problem,
            format!("the fair thread got {} where {} is promised: {guard} does not protect fair tasks here", pct(measured), pct(expected)),
        );
    }
    if (FIFO_SHARE_LOW..=FIFO_SHARE_HIGH).contains(&ratio)
        || (measured - expected).abs() <= FIFO_SHARE_SLACK
    {
        return (
            Verdict::Ok,
            format!(
                "{guard} holds: the FIFO spinner leaves the fair thread {} of the CPU",
                pct(measured)
            ),
        );
    }
    let how = if measured > expected { "more" } else { "less" };
    (
        Verdict::Notable,
        format!("the fair thread got {how} than promised ({} vs {}): what acts here does not match the settings ({})", pct(measured), pct(expected), rt.causes()),
    )
}

/// Steal up to this total share is noise even on a dedicated VM.
pub const STEAL_OK_TOTAL: f64 = 0.02;
pub const STEAL_OK_CPU: f64 = 0.05;
/// Beyond this the host takes a tenth of the machine: every timing is disturbed.
pub const STEAL_PROBLEM_TOTAL: f64 = 0.10;
pub const STEAL_PROBLEM_CPU: f64 = 0.20;
pub const STEAL_HEALTHY: &str = "<= 2 % (bare metal 0), no CPU above 5 %";

/// Steal time over the check: the total share and the worst CPU's.
pub fn verdict_steal(total: f64, worst_cpu: f64) -> (Verdict, String) {
    let pct = |v: f64| format!("{:.1} %", v * 100.0);
    if total > STEAL_PROBLEM_TOTAL || worst_cpu > STEAL_PROBLEM_CPU {
        (
            Verdict::Problem,
            format!("the hypervisor took {} of the time (worst CPU {}): every measurement here is disturbed by other guests", pct(total), pct(worst_cpu)),
        )
    } else if total > STEAL_OK_TOTAL || worst_cpu > STEAL_OK_CPU {
        (
            Verdict::Notable,
            format!("the hypervisor ran other work on these vCPUs ({} overall, worst CPU {}): expect noisier latencies", pct(total), pct(worst_cpu)),
        )
    } else {
        (
            Verdict::Ok,
            format!("the CPUs were ours: {} stolen", pct(total)),
        )
    }
}

/// CPUs of one machine spin within this relative spread of each other.
pub const SPEED_OK_SPREAD: f64 = 0.10;
pub const SPEED_PROBLEM_SPREAD: f64 = 0.25;
pub const SPEED_HEALTHY: &str = "CPUs within 10 % of each other";

/// Relative spread of spin rates: 1 - slowest / fastest (0 for fewer than two CPUs).
pub fn spread(rates: &[f64]) -> f64 {
    let max = rates.iter().copied().fold(0.0, f64::max);
    let min = rates.iter().copied().fold(f64::INFINITY, f64::min);
    if rates.len() < 2 || max <= 0.0 {
        return 0.0;
    }
    1.0 - min / max
}

/// Spin rates per CPU (iterations/s).
pub fn verdict_cpu_speed(rates: &[f64]) -> (Verdict, String) {
    if rates.len() < 2 {
        return (
            Verdict::Ok,
            "one CPU: nothing to compare it with".to_string(),
        );
    }
    let s = spread(rates);
    let pct = format!("{:.1} %", s * 100.0);
    if s > SPEED_PROBLEM_SPREAD {
        (
            Verdict::Problem,
            format!("the slowest CPU spins {pct} slower than the fastest (big.LITTLE, a frequency cap, or a busy host core): pinned experiments depend on the CPU they get"),
        )
    } else if s > SPEED_OK_SPREAD {
        (
            Verdict::Notable,
            format!("CPUs differ by {pct} (frequency, SMT siblings busy, or a host core shared with another guest)"),
        )
    } else {
        (
            Verdict::Ok,
            format!("every CPU runs a pinned loop at the same speed (spread {pct})"),
        )
    }
}

pub const KNOBS_HEALTHY: &str = "root; RT and debugfs knobs writable";

/// Which knobs can be changed: `rt_why` / `debugfs_why` say why the RT sysctls / the
/// debugfs knobs cannot (None: they can).
pub fn verdict_knobs(
    root: bool,
    rt_why: Option<&str>,
    debugfs_why: Option<&str>,
) -> (Verdict, String) {
    if !root {
        return (
            Verdict::Problem,
            "not root: FIFO/RR/DEADLINE, negative nice and every system knob are refused; run schedlab as root".to_string(),
        );
    }
    if let Some(why) = rt_why {
        return (
            Verdict::Problem,
            format!("RT throttling cannot be changed ({why}): rt-throttle sweeps will not work"),
        );
    }
    if let Some(why) = debugfs_why {
        return (
            Verdict::Notable,
            format!("RT sysctls are writable, debugfs scheduler knobs are not: {why}"),
        );
    }
    (
        Verdict::Ok,
        "every system knob can be changed (and is restored at exit)".to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    // The boundaries are written out as the README and the `*_HEALTHY` texts state
    // them, not taken from the constants: a changed constant must fail here.
    const US: u64 = 1_000;
    const MS: u64 = 1_000_000;

    #[test]
    fn the_healthy_texts_state_the_boundaries_the_verdicts_use() {
        assert_eq!(WAKEUP_HEALTHY, "p99 <= 200 us, max <= 2 ms");
        assert_eq!(SWITCH_SAME_HEALTHY, "<= 10 us/op (bare metal ~2-5)");
        assert_eq!(SWITCH_CROSS_HEALTHY, "<= 30 us/op (bare metal ~5-20)");
        assert_eq!(
            batch_healthy(),
            ">= 1.5x (2.3-2.5x on 6.18 pinned to one CPU)"
        );
        assert_eq!(fairness_healthy(), "< 3 % (~2 % over 6 s on the dev VM)");
        assert_eq!(STEAL_HEALTHY, "<= 2 % (bare metal 0), no CPU above 5 %");
        assert_eq!(SPEED_HEALTHY, "CPUs within 10 % of each other");
    }

    #[test]
    fn wakeup_thresholds_at_their_boundaries() {
        assert_eq!(verdict_wakeup(60 * US, 500 * US, false).0, Verdict::Ok);
        assert_eq!(verdict_wakeup(200 * US, 2 * MS, false).0, Verdict::Ok);
        assert_eq!(verdict_wakeup(200 * US + 1, MS, false).0, Verdict::Notable);
        assert_eq!(
            verdict_wakeup(100 * US, 2 * MS + 1, true).0,
            Verdict::Notable
        );
        // The dev VM: avg ~60-100 us, max 10-18 ms.
        let (v, why) = verdict_wakeup(150 * US, 18 * MS, true);
        assert_eq!(v, Verdict::Notable);
        assert!(why.contains("VM"), "{why}");
        assert_eq!(verdict_wakeup(2 * MS, 50 * MS, false).0, Verdict::Notable);
        assert_eq!(verdict_wakeup(2 * MS + 1, MS, false).0, Verdict::Problem);
        assert_eq!(
            verdict_wakeup(50 * US, 50 * MS + 1, false).0,
            Verdict::Problem
        );
    }

    #[test]
    fn switch_cost_thresholds() {
        assert_eq!(verdict_switch_same(7.7, true).0, Verdict::Ok);
        assert_eq!(verdict_switch_same(10.0, false).0, Verdict::Ok);
        assert_eq!(verdict_switch_same(10.01, false).0, Verdict::Notable);
        assert_eq!(verdict_switch_same(30.0, false).0, Verdict::Notable);
        assert_eq!(verdict_switch_same(30.01, false).0, Verdict::Problem);

        let (v, why) = verdict_switch_cross(87.0, 7.7, true);
        assert_eq!(v, Verdict::Notable);
        assert!(why.contains("11x"), "{why}");
        assert_eq!(verdict_switch_cross(30.0, 3.0, false).0, Verdict::Ok);
        assert_eq!(verdict_switch_cross(30.1, 3.0, false).0, Verdict::Notable);
        assert_eq!(verdict_switch_cross(200.0, 3.0, false).0, Verdict::Notable);
        assert_eq!(verdict_switch_cross(200.1, 0.0, false).0, Verdict::Problem);
    }

    #[test]
    fn batch_ratio_thresholds() {
        assert_eq!(verdict_batch_ratio(2.3).0, Verdict::Ok);
        assert_eq!(verdict_batch_ratio(1.5).0, Verdict::Ok);
        assert_eq!(verdict_batch_ratio(1.49).0, Verdict::Notable);
        assert_eq!(verdict_batch_ratio(0.9).0, Verdict::Notable);
        assert_eq!(verdict_batch_ratio(0.89).0, Verdict::Problem);
    }

    #[test]
    fn fairness_separates_a_wrong_split_from_lost_capacity() {
        assert_eq!(verdict_fairness(0.007, 0.005).0, Verdict::Ok);
        assert_eq!(verdict_fairness(0.03, 0.03).0, Verdict::Ok);
        // The quick run here: 2.9 % raw, almost all of it CPU the ladder never got.
        let (v, why) = verdict_fairness(0.029 + 0.002, 0.004);
        assert_eq!(v, Verdict::Notable);
        assert!(why.contains("other work"), "{why}");
        assert_eq!(verdict_fairness(0.04, 0.031).0, Verdict::Notable);
        assert_eq!(verdict_fairness(0.2, 0.10).0, Verdict::Notable);
        assert_eq!(verdict_fairness(0.2, 0.101).0, Verdict::Problem);
    }

    #[test]
    fn fifo_share_against_the_promise() {
        // 950000/1000000: 5 % promised, 5.1 % measured on the dev VM.
        assert_eq!(verdict_fifo_share_here(0.051, 0.05).0, Verdict::Ok);
        assert_eq!(
            verdict_fifo_share_here(0.031, 0.05).0,
            Verdict::Ok,
            "within 0.6x..1.5x"
        );
        assert_eq!(verdict_fifo_share_here(0.075, 0.05).0, Verdict::Ok);
        assert_eq!(verdict_fifo_share_here(0.35, 0.40).0, Verdict::Ok);
        assert_eq!(
            verdict_fifo_share_here(0.20, 0.40).0,
            Verdict::Notable,
            "0.5x"
        );
        assert_eq!(
            verdict_fifo_share_here(0.70, 0.40).0,
            Verdict::Notable,
            "1.75x"
        );
        assert_eq!(
            verdict_fifo_share_here(0.10, 0.40).0,
            Verdict::Problem,
            "0.25x"
        );
        // Tiny promises: within one point is fine whatever the ratio.
        assert_eq!(verdict_fifo_share_here(0.0, 0.01).0, Verdict::Ok);
        assert_eq!(verdict_fifo_share_here(0.0, 0.0).0, Verdict::Notable);
        assert_eq!(verdict_fifo_share_here(0.3, 0.0).0, Verdict::Ok);
    }

    /// This machine's kind of kernel: RT throttling and the fair server.
    fn verdict_fifo_share_here(measured: f64, expected: f64) -> (Verdict, String) {
        verdict_fifo_share(measured, expected, RtBandwidth::ThrottlingAndFairServer)
    }

    /// Each kernel's words name what acts on it: a kernel without RT group scheduling
    /// (6.12+) throttles nothing, so neither RT throttling nor RT_RUNTIME_SHARE is why.
    #[test]
    fn fifo_share_texts_name_what_acts_on_the_kernel() {
        let fair = RtBandwidth::FairServerOnly;
        let (v, why) = verdict_fifo_share(0.05, 0.05, fair);
        assert_eq!(v, Verdict::Ok);
        assert!(why.starts_with("the fair server holds"), "{why}");
        let (_, why) = verdict_fifo_share(0.40, 0.05, fair);
        assert!(
            why.contains("fair server") && !why.contains("RT_RUNTIME_SHARE"),
            "{why}"
        );
        let (_, why) = verdict_fifo_share(0.0, 0.40, fair);
        assert!(why.contains("the fair server does not protect"), "{why}");
        let (_, why) = verdict_fifo_share(0.05, 0.05, RtBandwidth::Throttling);
        assert!(why.starts_with("RT throttling holds"), "{why}");
        let (_, why) = verdict_fifo_share(0.20, 0.40, RtBandwidth::Throttling);
        assert!(
            why.contains("RT_RUNTIME_SHARE") && !why.contains("fair server"),
            "{why}"
        );
        assert_eq!(
            fifo_healthy(RtBandwidth::Throttling),
            "1 - rt_runtime/rt_period (5 %)"
        );
        assert!(fifo_healthy(fair).contains("no RT throttling here"));
    }

    #[test]
    fn steal_thresholds() {
        assert_eq!(verdict_steal(0.0, 0.0).0, Verdict::Ok);
        assert_eq!(verdict_steal(0.02, 0.05).0, Verdict::Ok);
        assert_eq!(verdict_steal(0.021, 0.03).0, Verdict::Notable);
        assert_eq!(verdict_steal(0.01, 0.051).0, Verdict::Notable);
        assert_eq!(verdict_steal(0.10, 0.20).0, Verdict::Notable);
        assert_eq!(verdict_steal(0.101, 0.101).0, Verdict::Problem);
        assert_eq!(verdict_steal(0.05, 0.201).0, Verdict::Problem);
    }

    #[test]
    fn cpu_speed_spread() {
        assert_eq!(spread(&[]), 0.0);
        assert_eq!(spread(&[1e9]), 0.0);
        assert!((spread(&[1e9, 0.8e9]) - 0.2).abs() < 1e-12);
        assert_eq!(verdict_cpu_speed(&[1e9]).0, Verdict::Ok);
        assert_eq!(verdict_cpu_speed(&[1e9, 0.95e9]).0, Verdict::Ok);
        assert_eq!(
            verdict_cpu_speed(&[1e9, 0.9e9]).0,
            Verdict::Ok,
            "10 % exactly"
        );
        assert_eq!(verdict_cpu_speed(&[1e9, 0.89e9]).0, Verdict::Notable);
        assert_eq!(verdict_cpu_speed(&[1e9, 0.75e9]).0, Verdict::Notable);
        assert_eq!(verdict_cpu_speed(&[1e9, 0.74e9, 1e9]).0, Verdict::Problem);
        assert_eq!(verdict_cpu_speed(&[0.0, 0.0]).0, Verdict::Ok);
    }

    #[test]
    fn knobs_verdicts() {
        assert_eq!(verdict_knobs(false, None, None).0, Verdict::Problem);
        assert_eq!(
            verdict_knobs(true, Some("read-only /proc/sys"), None).0,
            Verdict::Problem
        );
        let (v, why) = verdict_knobs(
            true,
            None,
            Some("kernel lockdown (integrity) blocks debugfs writes"),
        );
        assert_eq!(v, Verdict::Notable);
        assert!(why.contains("lockdown"), "{why}");
        assert_eq!(verdict_knobs(true, None, None).0, Verdict::Ok);
    }
}
