//! Reading the rings: every CPU's records decoded and routed to the merger, losses
//! counted and reported per ring (a ring that loses records is grown: see grow.rs).

use super::{decode, order, ring, Decoder, IdleGap, Sink, Worker};

impl Worker {
    /// Drain every ring; the rings (by index) that reported lost records.
    pub(super) fn drain_all(&mut self, now: u64) -> Vec<usize> {
        let mut lossy = Vec::new();
        let Worker {
            rings,
            decoder,
            merger,
            scratch,
            sink,
            idle,
            ..
        } = self;
        let mut reader = Reader {
            decoder,
            merger,
            scratch,
            sink,
            idle,
        };
        for (q, r) in rings.iter_mut().enumerate() {
            if reader.drain(q, r) {
                lossy.push(q);
            }
            r.switch_records(reader.idle.wants_records(q, now));
        }
        lossy
    }
}

/// What reading a ring needs of the worker, borrowed apart from the rings.
pub(super) struct Reader<'a> {
    pub(super) decoder: &'a Decoder,
    pub(super) merger: &'a mut order::Merger,
    pub(super) scratch: &'a mut [u8; ring::MAX_RECORD],
    pub(super) sink: &'a mut Sink,
    pub(super) idle: &'a mut IdleGap,
}

impl Reader<'_> {
    /// Decode and route what ring `q` holds; whether it reported lost records.
    pub(super) fn drain(&mut self, q: usize, r: &mut ring::CpuRing) -> bool {
        let Reader {
            decoder,
            merger,
            scratch,
            sink,
            idle,
        } = self;
        let mut lost_here = 0;
        r.drain(scratch, |ty, misc, body| match ty {
            ring::RECORD_SAMPLE => match decoder.sample(body) {
                Ok(ev) => {
                    if let Some(inferred) = idle.saw_switch(q, &ev) {
                        sink.route(merger, q, inferred);
                    }
                    sink.route(merger, q, ev);
                }
                Err(_) => sink.undecodable += 1,
            },
            ring::RECORD_SWITCH_CPU_WIDE => {
                if let Some(ev) = decode::switch_in(misc, body).and_then(|s| idle.fill(q, s)) {
                    sink.route(merger, q, ev);
                }
            }
            ring::RECORD_LOST => {
                let n = ring::lost_count(body);
                sink.lost += n;
                sink.interval_lost += n;
                sink.lost_since_release = true;
                lost_here += n;
            }
            _ => {}
        });
        r.lost += lost_here;
        lost_here > 0
    }
}
