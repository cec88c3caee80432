//! A CPU ring that loses records is replaced, while the trace runs, by one sized from
//! the rate its CPU was seen to produce (at least four times larger): that rate is known
//! only once the experiment runs, and a debug build or a loaded machine falls behind a
//! ring that a release build keeps up with. The lost count stays in the report and the
//! workbench's header.

use super::ring::{self, CpuRing, TracepointId, RING_GROWTH, RING_HOLDS_NS, RING_PAGES_MAX};
use super::{Reader, Wakings, Worker};

/// How to open a larger ring, and whether it is worth trying again.
#[derive(Default)]
pub(super) struct Grower {
    ids: Vec<TracepointId>,
    wakings: Wakings,
    /// Opening a larger ring failed once (the locked-memory limit, most likely): the
    /// trace keeps the rings it has.
    failed: bool,
    /// Rings replaced so far.
    pub(super) grown: u64,
}

impl Grower {
    pub(super) fn new(ids: Vec<TracepointId>, wakings: Wakings) -> Self {
        Grower {
            ids,
            wakings,
            ..Grower::default()
        }
    }
}

impl Worker {
    /// Replace each ring in `lossy` (indexes) by a larger one, its poll entry with it.
    pub(super) fn grow_rings(&mut self, lossy: &[usize], fds: &mut [libc::pollfd]) {
        for &q in lossy {
            let pages = self.rings[q].pages;
            if self.grow.failed || self.grow.ids.is_empty() || pages >= RING_PAGES_MAX {
                continue;
            }
            let cpu = self.rings[q].cpu;
            let larger = pages_for(&self.rings[q]);
            let mut bigger = match CpuRing::open(cpu, &self.grow.ids, larger, self.grow.wakings) {
                Ok(r) => r,
                Err(_) => {
                    self.grow.failed = true;
                    continue;
                }
            };
            // Off, then on: the few microseconds between lose events (after records
            // were lost anyway, so what the tasks were doing is forgotten), but no
            // event is seen twice.
            self.rings[q].disable();
            if bigger.enable().is_err() {
                let _ = self.rings[q].enable();
                self.grow.failed = true;
                continue;
            }
            let mut old = std::mem::replace(&mut self.rings[q], bigger);
            fds[q].fd = self.rings[q].fd();
            // What the old ring still holds is older than anything in the new one.
            let mut reader = Reader {
                decoder: &self.decoder,
                merger: &mut self.merger,
                scratch: &mut self.scratch,
                sink: &mut self.sink,
                idle: &mut self.idle,
            };
            reader.drain(q, &mut old);
            self.sink.lost_since_release = true;
            self.grow.grown += 1;
        }
    }
}

/// Data pages for a ring replacing `r`: [`RING_HOLDS_NS`] of what `r` was handed (read
/// and lost, at the size of the records read), at least [`RING_GROWTH`] times `r`, at
/// most [`RING_PAGES_MAX`]; a power of two.
fn pages_for(r: &CpuRing) -> usize {
    let elapsed = crate::clock::monotonic_ns()
        .saturating_sub(r.opened_ns)
        .max(1_000_000);
    let record = r
        .read_bytes
        .checked_div(r.read_records)
        .unwrap_or(96)
        .max(8);
    let bytes = r.read_bytes + r.lost * record;
    let want = u128::from(bytes) * u128::from(RING_HOLDS_NS) / u128::from(elapsed);
    let pages = usize::try_from(want / ring::page_size() as u128).unwrap_or(usize::MAX);
    pages
        .max(r.pages * RING_GROWTH)
        .min(RING_PAGES_MAX)
        .next_power_of_two()
}
