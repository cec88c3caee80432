//! Log-linear latency histogram: lock-free single-writer recording in shared memory,
//! plain snapshots with percentiles for reports.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::Serialize;

/// Sub-buckets per power of two: a value is kept to within 1/64 of itself (1.6 %), so
/// a 2 % change in a percentile is visible (at 1/32 a p50 moved in 3 % steps).
pub const SUB_BITS: u32 = 6;
pub const SUB: usize = 1 << SUB_BITS;
/// The sub-bucket resolution of recordings made before it was 6 (their JSON has none).
const OLD_SUB_BITS: u32 = 5;
/// Enough buckets for any u64 value.
pub const BUCKETS: usize = (64 - SUB_BITS as usize + 1) * SUB;

/// Bucket index of a value; exact below 64.
pub fn bucket_of(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let magnitude = 63 - v.leading_zeros();
    let sub = ((v >> (magnitude - SUB_BITS)) as usize) & (SUB - 1);
    (magnitude - SUB_BITS + 1) as usize * SUB + sub
}

/// The smallest and largest value that land in bucket `i`.
pub fn bucket_bounds(i: usize) -> (u64, u64) {
    if i < SUB {
        return (i as u64, i as u64);
    }
    let shift = (i / SUB - 1) as u32;
    let low = ((SUB + i % SUB) as u64) << shift;
    (low, low + ((1u64 << shift) - 1))
}

/// The histogram as it lives in shared memory: one writer (the worker thread), many
/// readers. Plain load+store instead of fetch_add keeps the hot path free of locked
/// instructions; readers may see a sample's count before its bucket, which is harmless.
#[repr(C)]
pub struct AtomicHistogram {
    count: AtomicU64,
    sum: AtomicU64,
    min: AtomicU64,
    max: AtomicU64,
    /// Measurements the worker threw away as not being the experiment (a yield batch
    /// in which the partner never ran).
    dropped: AtomicU64,
    buckets: [AtomicU64; BUCKETS],
}

impl AtomicHistogram {
    /// Record one value. Only one thread may call this.
    pub fn record(&self, v: u64) {
        let b = &self.buckets[bucket_of(v)];
        b.store(b.load(Relaxed) + 1, Relaxed);
        self.sum
            .store(self.sum.load(Relaxed).wrapping_add(v), Relaxed);
        let count = self.count.load(Relaxed);
        if count == 0 || v < self.min.load(Relaxed) {
            self.min.store(v, Relaxed);
        }
        if v > self.max.load(Relaxed) {
            self.max.store(v, Relaxed);
        }
        self.count.store(count + 1, Relaxed);
    }

    /// Count one measurement that was not recorded. Only the recording thread may call this.
    pub fn drop_one(&self) {
        self.dropped.store(self.dropped.load(Relaxed) + 1, Relaxed);
    }

    pub fn count(&self) -> u64 {
        self.count.load(Relaxed)
    }

    /// Copy into `out`, reusing its allocation.
    pub fn snapshot_into(&self, out: &mut Histogram) {
        out.buckets.resize(BUCKETS, 0);
        for (dst, src) in out.buckets.iter_mut().zip(self.buckets.iter()) {
            *dst = src.load(Relaxed);
        }
        out.count = self.count.load(Relaxed);
        out.sum = self.sum.load(Relaxed);
        out.min = self.min.load(Relaxed);
        out.max = self.max.load(Relaxed);
        out.dropped = self.dropped.load(Relaxed);
    }

    pub fn snapshot(&self) -> Histogram {
        let mut h = Histogram::default();
        self.snapshot_into(&mut h);
        h
    }
}

/// A plain copy of a histogram. Serialized sparsely: only non-empty buckets.
#[derive(Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(into = "SparseHistogram", from = "SparseHistogram")]
pub struct Histogram {
    pub buckets: Vec<u64>,
    pub count: u64,
    pub sum: u64,
    pub min: u64,
    pub max: u64,
    /// Measurements discarded as invalid (not in the buckets).
    pub dropped: u64,
}

/// The on-disk form of a histogram: (bucket, count) pairs for non-empty buckets.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
struct SparseHistogram {
    /// log2 of the sub-buckets per power of two the bucket indices are in.
    #[serde(default = "old_sub_bits")]
    sub_bits: u32,
    count: u64,
    sum: u64,
    min: u64,
    max: u64,
    #[serde(default, skip_serializing_if = "is_zero")]
    dropped: u64,
    buckets: Vec<(u32, u64)>,
}

fn old_sub_bits() -> u32 {
    OLD_SUB_BITS
}

/// The lowest value of bucket `i` at a resolution of `bits` sub-bucket bits.
fn bucket_low_at(i: usize, bits: u32) -> u64 {
    let sub = 1usize << bits;
    if i < sub {
        return i as u64;
    }
    let shift = (i / sub - 1) as u32;
    ((sub + i % sub) as u64)
        .checked_shl(shift)
        .unwrap_or(u64::MAX)
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl From<Histogram> for SparseHistogram {
    fn from(h: Histogram) -> Self {
        SparseHistogram {
            sub_bits: SUB_BITS,
            count: h.count,
            sum: h.sum,
            min: h.min,
            max: h.max,
            dropped: h.dropped,
            buckets: h
                .buckets
                .iter()
                .enumerate()
                .filter(|(_, n)| **n > 0)
                .map(|(i, n)| (i as u32, *n))
                .collect(),
        }
    }
}

impl From<SparseHistogram> for Histogram {
    fn from(s: SparseHistogram) -> Self {
        let mut buckets = vec![0; BUCKETS];
        for (i, n) in s.buckets {
            // A recording at another resolution: each count goes to the bucket of its
            // old bucket's lowest value (within the old resolution, as it was).
            let i = if s.sub_bits == SUB_BITS || s.sub_bits > 16 {
                i as usize
            } else {
                bucket_of(bucket_low_at(i as usize, s.sub_bits))
            };
            if let Some(b) = buckets.get_mut(i) {
                *b += n;
            }
        }
        Histogram {
            buckets,
            count: s.count,
            sum: s.sum,
            min: s.min,
            max: s.max,
            dropped: s.dropped,
        }
    }
}

impl Clone for Histogram {
    fn clone(&self) -> Self {
        Histogram {
            buckets: self.buckets.clone(),
            ..*self
        }
    }

    /// Reuses the bucket buffer: the sampler copies histograms every round.
    fn clone_from(&mut self, src: &Self) {
        self.buckets.clone_from(&src.buckets);
        self.count = src.count;
        self.sum = src.sum;
        self.min = src.min;
        self.max = src.max;
        self.dropped = src.dropped;
    }
}

/// The summary every report prints: min, percentiles, max, count (values in ns; the
/// JSON names say so, `p50_ns`, since a reader sees the field and not this type).
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Percentiles {
    #[serde(rename = "min_ns")]
    pub min: u64,
    #[serde(rename = "p50_ns")]
    pub p50: u64,
    #[serde(rename = "p90_ns")]
    pub p90: u64,
    #[serde(rename = "p99_ns")]
    pub p99: u64,
    #[serde(rename = "p999_ns")]
    pub p999: u64,
    #[serde(rename = "max_ns")]
    pub max: u64,
    pub count: u64,
    #[serde(rename = "mean_ns")]
    pub mean: u64,
}

impl Histogram {
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    pub fn from_values(values: impl IntoIterator<Item = u64>) -> Histogram {
        let mut h = Histogram {
            buckets: vec![0; BUCKETS],
            ..Default::default()
        };
        for v in values {
            h.buckets[bucket_of(v)] += 1;
            h.min = if h.count == 0 { v } else { h.min.min(v) };
            h.max = h.max.max(v);
            h.sum = h.sum.wrapping_add(v);
            h.count += 1;
        }
        h
    }

    /// Counts recorded since `earlier` (a previous snapshot of the same histogram).
    /// Min and max are the later snapshot's: they cannot be un-merged.
    pub fn since(&self, earlier: &Histogram) -> Histogram {
        let buckets = self
            .buckets
            .iter()
            .enumerate()
            .map(|(i, &b)| b.saturating_sub(earlier.buckets.get(i).copied().unwrap_or(0)))
            .collect();
        Histogram {
            buckets,
            count: self.count.saturating_sub(earlier.count),
            sum: self.sum.wrapping_sub(earlier.sum),
            min: self.min,
            max: self.max,
            dropped: self.dropped.saturating_sub(earlier.dropped),
        }
    }

    /// Add `other`'s samples (another task's histogram) to these.
    pub fn merge(&mut self, other: &Histogram) {
        self.dropped += other.dropped;
        if other.count == 0 {
            return;
        }
        if self.buckets.len() < other.buckets.len() {
            self.buckets.resize(other.buckets.len(), 0);
        }
        for (a, b) in self.buckets.iter_mut().zip(&other.buckets) {
            *a += b;
        }
        self.min = if self.count == 0 {
            other.min
        } else {
            self.min.min(other.min)
        };
        self.max = self.max.max(other.max);
        self.sum = self.sum.wrapping_add(other.sum);
        self.count += other.count;
    }

    /// The value below which a fraction `q` of samples fall (bucket midpoint, clamped
    /// to the exact min and max).
    pub fn quantile(&self, q: f64) -> u64 {
        let total: u64 = self.buckets.iter().sum();
        if total == 0 {
            return 0;
        }
        let rank = ((q.clamp(0.0, 1.0) * total as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for (i, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                let (lo, hi) = bucket_bounds(i);
                return (lo + (hi - lo) / 2).clamp(self.min, self.max.max(self.min));
            }
        }
        self.max
    }

    pub fn percentiles(&self) -> Option<Percentiles> {
        let total: u64 = self.buckets.iter().sum();
        if total == 0 {
            return None;
        }
        Some(Percentiles {
            min: self.min,
            p50: self.quantile(0.5),
            p90: self.quantile(0.9),
            p99: self.quantile(0.99),
            p999: self.quantile(0.999),
            max: self.max,
            count: total,
            mean: self.sum / self.count.max(1),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_exact_for_small_values_and_tight_for_large() {
        for v in 0..64 {
            assert_eq!(bucket_bounds(bucket_of(v)), (v, v));
        }
        for v in [64u64, 100, 1_500, 1_000_000, 18_000_000_000, u64::MAX] {
            let (lo, hi) = bucket_bounds(bucket_of(v));
            assert!(lo <= v && v <= hi, "{v} not in {lo}..{hi}");
            assert!((hi - lo) as f64 <= v as f64 / 63.0, "{v}: bucket too wide");
        }
        assert!(bucket_of(u64::MAX) < BUCKETS);
    }

    #[test]
    fn percentiles_of_a_known_distribution() {
        let h = Histogram::from_values(1..=10_000u64);
        let p = h.percentiles().expect("has values");
        assert_eq!((p.min, p.max, p.count), (1, 10_000, 10_000));
        for (got, want) in [(p.p50, 5_000.0), (p.p90, 9_000.0), (p.p99, 9_900.0)] {
            assert!((got as f64 - want).abs() / want < 0.04, "{got} vs {want}");
        }
        assert_eq!(Histogram::default().percentiles(), None);
    }

    #[test]
    fn since_subtracts_an_earlier_snapshot() {
        let early = Histogram::from_values([10, 20]);
        let late = Histogram::from_values([10, 20, 30, 30]);
        let d = late.since(&early);
        assert_eq!(d.count, 2);
        assert_eq!(d.buckets[bucket_of(30)], 2);
        assert_eq!(d.buckets[bucket_of(10)], 0);
    }

    #[test]
    fn an_old_recordings_buckets_are_read_at_their_own_resolution() {
        // Version-1 recordings had 32 sub-buckets and no sub_bits field: 1500 ns was in
        // bucket 6 * 32 + 14 = 206 (1472..1503).
        let old = r#"{"count":1,"sum":1500,"min":1500,"max":1500,"buckets":[[206,1]]}"#;
        let h: Histogram = serde_json::from_str(old).expect("parses");
        let (lo, hi) = bucket_bounds(h.buckets.iter().position(|&n| n == 1).expect("one"));
        assert!(lo <= 1472 && 1472 <= hi, "{lo}..{hi}");
        let back: Histogram =
            serde_json::from_str(&serde_json::to_string(&h).expect("json")).expect("parses");
        assert_eq!(back, h, "the current format round-trips");
    }

    #[test]
    fn merge_adds_counts_and_keeps_the_true_min_and_max() {
        let mut a = Histogram::from_values([]);
        a.merge(&Histogram::from_values([300, 40]));
        let mut b = Histogram::from_values([7_000]);
        b.dropped = 2;
        a.merge(&b);
        assert_eq!(
            a,
            Histogram {
                dropped: 2,
                ..Histogram::from_values([300, 40, 7_000])
            }
        );
        // An empty histogram's zero min must not become the merged min.
        let mut c = Histogram::from_values([500]);
        c.merge(&Histogram::default());
        assert_eq!((c.min, c.max, c.count), (500, 500, 1));
    }

    #[test]
    fn atomic_histogram_records_like_the_plain_one() {
        // SAFETY: an all-zero AtomicHistogram is its valid empty state (atomics of 0).
        let h: Box<AtomicHistogram> = unsafe { Box::new(std::mem::zeroed()) };
        for v in [5u64, 500, 50_000] {
            h.record(v);
        }
        h.drop_one();
        let snap = h.snapshot();
        assert_eq!(
            snap,
            Histogram {
                dropped: 1,
                ..Histogram::from_values([5, 500, 50_000])
            }
        );
    }
}

/// One bucket of a histogram in a JSON report: `count` values from `low_ns` to `high_ns`
/// (both included). Each histogram's buckets are as wide as its source keeps them (a
/// run's latency: a quarter octave; the trace's: a power of two): readers go by the bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ReportBucket {
    pub low_ns: u64,
    pub high_ns: u64,
    pub count: u64,
}

/// Sub-buckets merged into one bucket of a report: four buckets per doubling (a quarter
/// octave), fine enough for a step histogram on a log axis, and a few dozen for any run.
pub const REPORT_MERGE: usize = SUB / 4;

impl Histogram {
    /// The non-empty buckets, [`REPORT_MERGE`] sub-buckets each: a quarter octave from 64
    /// ns up ([64, 79], [80, 95], ...), 16 ns wide below.
    pub fn report_buckets(&self) -> Vec<ReportBucket> {
        self.buckets
            .chunks(REPORT_MERGE)
            .enumerate()
            .map(|(i, c)| (i * REPORT_MERGE, c.iter().sum::<u64>()))
            .filter(|&(_, count)| count > 0)
            .map(|(first, count)| ReportBucket {
                low_ns: bucket_bounds(first).0,
                high_ns: bucket_bounds(first + REPORT_MERGE - 1).1,
                count,
            })
            .collect()
    }
}

#[cfg(test)]
mod report_bucket_tests {
    use super::*;

    #[test]
    fn report_buckets_merge_sub_buckets_per_quarter_octave() {
        let b =
            Histogram::from_values([0, 5, 15, 16, 64, 79, 80, 1000, 1023, 1024]).report_buckets();
        let got: Vec<(u64, u64, u64)> = b.iter().map(|b| (b.low_ns, b.high_ns, b.count)).collect();
        assert_eq!(
            got,
            vec![
                (0, 15, 3),
                (16, 31, 1),
                (64, 79, 2),
                (80, 95, 1),
                (896, 1023, 2),
                (1024, 1279, 1)
            ]
        );
        // Every sub-bucket lands in exactly one report bucket: bounds tile the range.
        let all = Histogram::from_values((0..5000).map(|v| v * 7)).report_buckets();
        for w in all.windows(2) {
            assert!(w[0].high_ns < w[1].low_ns, "{w:?}");
        }
        assert_eq!(all.iter().map(|b| b.count).sum::<u64>(), 5000);
    }
}
