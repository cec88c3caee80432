//! The steps' cgroup throttling as the headless lesson report takes it from the live
//! model: the growth of cpu.stat's counters over a step's window.

use std::time::Duration;

use crate::knob::cgroup::stat::Throttling;
use crate::lab::fixtures::started;
use crate::lab::live::Live;

/// A step's throttling is the counters' growth over its window, per cgroup.
#[test]
fn throttling_over_a_window_is_the_growth_of_the_counters() {
    let mut live = Live::new(&started(), 100, Duration::ZERO);
    let reading = |periods: u64, throttled_us: u64| Throttling {
        periods,
        throttled: periods / 2,
        throttled_us,
    };
    for (t_s, periods, us) in [(1.0, 10, 0), (2.0, 20, 50_000), (3.0, 40, 450_000)] {
        live.throttling
            .push_back((t_s, vec![("capped".to_string(), reading(periods, us))]));
    }
    let got = live.throttling_between(2.0, 3.0);
    assert_eq!(got, vec![("capped".to_string(), reading(20, 400_000))]);
    // Before the first reading: counted from the first.
    assert_eq!(live.throttling_between(0.0, 1.5)[0].1, reading(0, 0));
    assert!(Live::new(&started(), 100, Duration::ZERO)
        .throttling_between(0.0, 1.0)
        .is_empty());
}
