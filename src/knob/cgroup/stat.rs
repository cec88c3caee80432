//! A cgroup's CFS bandwidth counters from its cpu.stat: periods, throttled periods and
//! time throttled (v2 `throttled_usec`, v1 `throttled_time` in ns).

use serde::Serialize;

use super::Version;

/// The counters as the kernel keeps them since the group was made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Throttling {
    /// Enforcement periods in which the group had runnable tasks (`nr_periods`).
    pub periods: u64,
    /// Of those, periods in which it ran out of quota (`nr_throttled`).
    pub throttled: u64,
    /// Time its run queues spent throttled, in us.
    pub throttled_us: u64,
}

impl Throttling {
    /// What happened between `earlier` and this reading.
    pub fn since(&self, earlier: &Throttling) -> Throttling {
        Throttling {
            periods: self.periods.saturating_sub(earlier.periods),
            throttled: self.throttled.saturating_sub(earlier.throttled),
            throttled_us: self.throttled_us.saturating_sub(earlier.throttled_us),
        }
    }
}

/// Parse cpu.stat; None when it has no bandwidth counters (no CONFIG_CFS_BANDWIDTH).
pub fn parse(text: &str, version: Version) -> Option<Throttling> {
    let field = |name: &str| -> Option<u64> {
        text.lines().find_map(|l| {
            let (k, v) = l.split_once(' ')?;
            (k == name).then(|| v.trim().parse().ok()).flatten()
        })
    };
    let throttled_us = match version {
        Version::V2 => field("throttled_usec")?,
        Version::V1 => field("throttled_time")? / 1000,
    };
    Some(Throttling {
        periods: field("nr_periods")?,
        throttled: field("nr_throttled")?,
        throttled_us,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_versions_parse_and_differences_are_taken() {
        let v2 = "usage_usec 5\nuser_usec 3\nsystem_usec 2\nnr_periods 40\nnr_throttled 30\nthrottled_usec 2500000\nnr_bursts 0\n";
        let a = parse(v2, Version::V2).expect("v2");
        assert_eq!(
            (a.periods, a.throttled, a.throttled_us),
            (40, 30, 2_500_000)
        );
        let v1 = "nr_periods 10\nnr_throttled 4\nthrottled_time 300000000\n";
        let b = parse(v1, Version::V1).expect("v1");
        assert_eq!((b.periods, b.throttled, b.throttled_us), (10, 4, 300_000));
        // v1's time is in ns, v2's in us: neither is read as the other.
        assert_eq!(parse(v1, Version::V2), None);
        assert_eq!(parse("usage_usec 5\n", Version::V2), None);
        let d = a.since(&Throttling {
            periods: 10,
            throttled: 5,
            throttled_us: 500_000,
        });
        assert_eq!(
            (d.periods, d.throttled, d.throttled_us),
            (30, 25, 2_000_000)
        );
    }
}
