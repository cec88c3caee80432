//! The one clock schedlab stamps samples, trace events and worker progress with.

/// CLOCK_MONOTONIC in ns: the same clock in every process, so workers and the
/// controller can compare timestamps (and the kernel's perf records, which use it too).
pub fn monotonic_ns() -> u64 {
    let ts = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC)
        .map(|t| t.tv_sec() as u64 * 1_000_000_000 + t.tv_nsec() as u64);
    ts.unwrap_or(0)
}
