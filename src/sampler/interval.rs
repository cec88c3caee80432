//! The sampling interval: one value, stepped by the workbench and read by the sampler at
//! every round.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The fastest interval a sampler keeps: a round must not start before the last ended.
pub const FASTEST: Duration = Duration::from_millis(1);

/// The one place the sampling interval lives. Clones share it: the workbench's App steps
/// it, the controller hands it to each experiment it starts, and that experiment's
/// sampler and tracer read it, so none of them keeps a copy that could disagree.
#[derive(Clone, Debug)]
pub struct Interval(Arc<AtomicU64>);

impl Interval {
    pub fn new(d: Duration) -> Interval {
        Interval(Arc::new(AtomicU64::new(nanos(d))))
    }

    pub fn get(&self) -> Duration {
        Duration::from_nanos(self.0.load(Ordering::Relaxed))
    }

    /// Change it for every holder; a running sampler takes it at its next round, or at
    /// once when told [`super::Command::Reschedule`].
    pub fn set(&self, d: Duration) {
        self.0.store(nanos(d), Ordering::Relaxed);
    }
}

/// An interval nobody changes (a fixed-length run, a test).
impl From<Duration> for Interval {
    fn from(d: Duration) -> Interval {
        Interval::new(d)
    }
}

/// Two intervals are equal when they hold the same value (the App's state compares so).
impl PartialEq for Interval {
    fn eq(&self, other: &Interval) -> bool {
        self.get() == other.get()
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.max(FASTEST).as_nanos()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clones_share_one_value_and_it_is_never_below_the_fastest() {
        let a = Interval::new(Duration::from_millis(100));
        let b = a.clone();
        b.set(Duration::from_millis(250));
        assert_eq!(a.get(), Duration::from_millis(250));
        a.set(Duration::ZERO);
        assert_eq!(b.get(), FASTEST);
        assert_ne!(a, Interval::new(Duration::from_millis(2)));
    }
}
