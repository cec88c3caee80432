//! Cost of sampling one task once: schedlab's reader against a naive sampler that does
//! the same job, reading AND parsing each of sched, schedstat, stat and status once per
//! task every round (and /proc/stat at most every 100 ms, as the reader does), with the
//! same parsers. Their difference is only what the reader skips. Run:
//!
//!     cargo bench --features bench --bench sampler              # criterion's figures, then side by side
//!     SAMPLER_SIDE_BY_SIDE=1 cargo bench --features bench --bench sampler   # side by side only
//!
//! The tasks sampled wake every 2 ms. Criterion times back-to-back rounds, in which a
//! task may not have run since the last one, so the reader can skip its sched file.
//! Side by side, rounds are 20 ms apart as in an experiment: every task has run since
//! the last round. Each round times both, in alternating order so that drift hits both
//! alike; the figure is the median of the per-round ratios, with its quartiles, and the
//! bench fails if the median is not below the goal.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, Throughput};
use schedlab::sampler::files::{pread_all, SystemFiles, TaskFiles};
use schedlab::sampler::parse::{self, CpuTimes};
use schedlab::sampler::{Batch, Reader, Target, SYSTEM_EVERY_NS};

const TASKS: usize = 16;
/// The reader costs at most this much of the naive sampler, side by side.
const GOAL: f64 = 0.7;
const ROUNDS: usize = 300;
const INTERVAL: Duration = Duration::from_millis(20);

/// TASKS threads of this process that wake every 2 ms, and a flag that ends them.
fn threads() -> (Vec<i32>, Arc<AtomicBool>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    for _ in 0..TASKS {
        let (tx, stop) = (tx.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let _ = tx.send(nix::unistd::gettid().as_raw());
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(2));
            }
        });
    }
    let tids = (0..TASKS).filter_map(|_| rx.recv().ok()).collect();
    (tids, stop)
}

/// The naive sampler: every file of every task read and parsed each round, /proc/stat
/// when 90 ms have passed (the reader's rule for its 100 ms).
struct Naive {
    files: Vec<TaskFiles>,
    system: SystemFiles,
    buf: Vec<u8>,
    total: CpuTimes,
    cpus: Vec<CpuTimes>,
    system_read: Option<Instant>,
}

impl Naive {
    fn new(pid: i32, tids: &[i32]) -> Naive {
        Naive {
            files: tids
                .iter()
                .map(|&t| TaskFiles::open(pid, t).expect("open"))
                .collect(),
            system: SystemFiles::open(),
            buf: vec![0u8; 16 * 1024],
            total: CpuTimes::default(),
            cpus: Vec::new(),
            system_read: None,
        }
    }

    fn round(&mut self) {
        let buf = &mut self.buf;
        for f in &self.files {
            if let Some(text) = f.sched.as_ref().and_then(|x| pread_all(x, buf).ok()) {
                black_box(parse::parse_sched(text));
            }
            if let Some(text) = f.schedstat.as_ref().and_then(|x| pread_all(x, buf).ok()) {
                black_box(parse::parse_schedstat(text));
            }
            if let Some(text) = f.stat.as_ref().and_then(|x| pread_all(x, buf).ok()) {
                black_box(parse::parse_stat(text));
            }
            if let Some(text) = f.status.as_ref().and_then(|x| pread_all(x, buf).ok()) {
                black_box(parse::parse_status(text));
            }
        }
        let every = Duration::from_nanos(SYSTEM_EVERY_NS * 9 / 10);
        if self.system_read.is_none_or(|t| t.elapsed() >= every) {
            if let Some(text) = self
                .system
                .stat
                .as_ref()
                .and_then(|x| pread_all(x, buf).ok())
            {
                black_box(parse::parse_proc_stat(
                    text,
                    &mut self.total,
                    &mut self.cpus,
                ));
            }
            self.system_read = Some(Instant::now());
        }
    }

    /// The floor under both: one pread of each file, nothing parsed.
    fn preads_only(&mut self) -> usize {
        let mut bytes = 0;
        for f in &self.files {
            for file in [&f.sched, &f.schedstat, &f.stat, &f.status]
                .into_iter()
                .flatten()
            {
                bytes += pread_all(file, &mut self.buf).map(<[u8]>::len).unwrap_or(0);
            }
        }
        bytes
    }
}

fn reader(pid: i32, tids: &[i32]) -> Reader {
    let targets: Vec<Target> = tids
        .iter()
        .enumerate()
        .map(|(id, &tid)| Target {
            id,
            pid,
            tid,
            slot: None,
            latency: false,
            outside: false,
        })
        .collect();
    Reader::new(targets, None)
}

fn bench(c: &mut Criterion) {
    let (tids, stop) = threads();
    let pid = std::process::id() as i32;
    let mut naive = Naive::new(pid, &tids);
    let mut reader = reader(pid, &tids);
    let mut batch = Batch::default();
    let mut group = c.benchmark_group("sample_per_task");
    group.throughput(Throughput::Elements(TASKS as u64));
    group.bench_function("naive_read_and_parse_4_files", |b| b.iter(|| naive.round()));
    group.bench_function("schedlab_reader", |b| {
        b.iter(|| {
            reader.sample_into(&mut batch);
            black_box(&batch);
        })
    });
    group.bench_function("preads_only_4_files", |b| {
        b.iter(|| black_box(naive.preads_only()))
    });
    group.finish();
    stop.store(true, Ordering::Relaxed);
}

/// Quartiles of `values` (sorted in place): (q1, median, q3).
fn quartiles(values: &mut [f64]) -> (f64, f64, f64) {
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    (at(0.25), at(0.5), at(0.75))
}

/// Both samplers on the same tasks, ROUNDS rounds INTERVAL apart, each round timing
/// both in alternating order. Prints the costs and the ratio; false if the ratio
/// misses the goal.
fn side_by_side() -> bool {
    let (tids, stop) = threads();
    let pid = std::process::id() as i32;
    let mut naive = Naive::new(pid, &tids);
    let mut reader = reader(pid, &tids);
    let mut batch = Batch::default();
    let (mut naive_ns, mut ours_ns) = (Vec::new(), Vec::new());
    let mut floor_ns = 0u128;
    // A first round of each outside the figures: the reader reads everything once.
    naive.round();
    reader.sample_into(&mut batch);
    for i in 0..ROUNDS {
        std::thread::sleep(INTERVAL);
        let order = if i % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            let start = Instant::now();
            if which == 0 {
                naive.round();
                naive_ns.push(start.elapsed().as_nanos() as f64);
            } else {
                reader.sample_into(&mut batch);
                black_box(&batch);
                ours_ns.push(start.elapsed().as_nanos() as f64);
            }
        }
        if i % 10 == 0 {
            let start = Instant::now();
            black_box(naive.preads_only());
            floor_ns += start.elapsed().as_nanos();
        }
    }
    stop.store(true, Ordering::Relaxed);
    let per = |ns: f64| ns / TASKS as f64 / 1000.0;
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let mut ratios: Vec<f64> = ours_ns.iter().zip(&naive_ns).map(|(o, n)| o / n).collect();
    let (q1, median, q3) = quartiles(&mut ratios);
    println!(
        "side by side, {ROUNDS} rounds {} ms apart of {TASKS} tasks, us per task-sample: naive read+parse {:.2}, schedlab's reader {:.2} (preads alone {:.2})",
        INTERVAL.as_millis(),
        per(mean(&naive_ns)),
        per(mean(&ours_ns)),
        per(floor_ns as f64 / ROUNDS.div_ceil(10) as f64),
    );
    println!(
        "reader/naive ratio: median {median:.2} (quartiles {q1:.2}-{q3:.2}); goal < {GOAL:.2}: {}",
        if median < GOAL { "met" } else { "NOT MET" }
    );
    // One line for benches/sampler-vs-c.sh.
    println!(
        "RESULT naive_us={:.3} reader_us={:.3} ratio={median:.3} q1={q1:.3} q3={q3:.3}",
        per(mean(&naive_ns)),
        per(mean(&ours_ns))
    );
    median < GOAL
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots().sample_size(30).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = bench
}

fn main() {
    if std::env::var_os("SAMPLER_SIDE_BY_SIDE").is_none() {
        benches();
        Criterion::default().configure_from_args().final_summary();
    }
    if !side_by_side() {
        eprintln!("the reader's cost is not below {GOAL} of the naive sampler's");
        std::process::exit(1);
    }
}
