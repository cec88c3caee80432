//! Cost of sampling one task once, against the physical floor: a raw loop that preads
//! each of sched, schedstat, stat and status once per task (what a minimal C sampler
//! does; the same system calls from Rust). Run: cargo bench --bench sampler
//!
//! The tasks sampled wake every 2 ms. After criterion's figures (back-to-back rounds,
//! in which a task may not have run since the last one, so schedlab's reader can skip
//! its sched file) the bench times both side by side at a 20 ms interval, where every
//! task has run between two rounds as in an experiment and nothing can be skipped, and
//! prints schedlab's cost as a fraction of the raw loop's (goal: below 0.7).

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use schedlab::sampler::files::{pread_all, TaskFiles};
use schedlab::sampler::{parse, Batch, Reader, Target};

const TASKS: usize = 16;

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

/// The floor: one pread of each of the four files per task, nothing parsed.
fn raw_round(files: &[TaskFiles], buf: &mut Vec<u8>) -> usize {
    let mut bytes = 0;
    for f in files {
        for file in [&f.sched, &f.schedstat, &f.stat, &f.status]
            .into_iter()
            .flatten()
        {
            bytes += pread_all(file, buf).map(<[u8]>::len).unwrap_or(0);
        }
    }
    bytes
}

/// Everything read and parsed every round, each file by its own parser.
fn raw_parsed_round(files: &[TaskFiles], buf: &mut Vec<u8>) {
    for f in files {
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
}

fn f_text(f: &TaskFiles) -> Vec<u8> {
    let mut buf = vec![0u8; 16 * 1024];
    f.sched
        .as_ref()
        .and_then(|x| pread_all(x, &mut buf).ok())
        .map(<[u8]>::to_vec)
        .unwrap_or_default()
}

fn bench(c: &mut Criterion) {
    let (tids, stop) = threads();
    let pid = std::process::id() as i32;
    let files: Vec<TaskFiles> = tids
        .iter()
        .map(|&t| TaskFiles::open(pid, t).expect("open"))
        .collect();
    let mut buf = vec![0u8; 16 * 1024];
    let targets: Vec<Target> = tids
        .iter()
        .enumerate()
        .map(|(id, &tid)| Target {
            id,
            pid,
            tid,
            slot: None,
            latency: false,
        })
        .collect();
    let mut reader = Reader::new(targets, None);
    let mut batch = Batch::default();

    let mut group = c.benchmark_group("sample_per_task");
    group.throughput(Throughput::Elements(TASKS as u64));
    group.bench_function("raw_one_pread_per_file_4_files", |b| {
        b.iter(|| black_box(raw_round(&files, &mut buf)))
    });
    group.bench_function("raw_one_pread_per_file_4_files_parsed", |b| {
        b.iter(|| raw_parsed_round(&files, &mut buf))
    });
    for (name, pick) in [
        ("sched", 0usize),
        ("schedstat", 1),
        ("stat", 2),
        ("status", 3),
    ] {
        group.bench_function(format!("pread_only_{name}"), |b| {
            b.iter(|| {
                for f in &files {
                    if let Some(file) = [&f.sched, &f.schedstat, &f.stat, &f.status][pick] {
                        black_box(pread_all(file, &mut buf).map(<[u8]>::len).unwrap_or(0));
                    }
                }
            })
        });
    }
    let sched_text = f_text(&files[0]);
    group.bench_function("parse_sched_only", |b| {
        b.iter(|| {
            for _ in 0..TASKS {
                black_box(parse::parse_sched(black_box(&sched_text)));
            }
        })
    });
    group.bench_function("schedlab_reader", |b| {
        b.iter(|| {
            reader.sample_into(&mut batch);
            black_box(&batch);
        })
    });
    group.finish();

    // Side by side, alternating which goes first so drift hits both alike. Rounds are
    // 20 ms apart: every task has woken since the last one, as between samples.
    let (mut raw_ns, mut ours_ns) = (0u128, 0u128);
    let rounds = 300;
    for i in 0..rounds {
        std::thread::sleep(Duration::from_millis(20));
        let order = if i % 2 == 0 { [0, 1] } else { [1, 0] };
        for which in order {
            let start = Instant::now();
            if which == 0 {
                black_box(raw_round(&files, &mut buf));
                raw_ns += start.elapsed().as_nanos();
            } else {
                reader.sample_into(&mut batch);
                black_box(&batch);
                ours_ns += start.elapsed().as_nanos();
            }
        }
    }
    if std::env::var_os("SAMPLER_BENCH_COUNT").is_some() {
        let syscr = || -> u64 {
            std::fs::read_to_string("/proc/thread-self/io")
                .ok()
                .and_then(|t| {
                    t.lines().find_map(|l| {
                        l.strip_prefix("syscr: ")
                            .and_then(|v| v.trim().parse().ok())
                    })
                })
                .unwrap_or(0)
        };
        let a = syscr();
        for _ in 0..100 {
            std::thread::sleep(Duration::from_millis(20));
            reader.sample_into(&mut batch);
        }
        println!("reads per round: {}", (syscr() - a) as f64 / 100.0);
    }
    let per = |ns: u128| ns as f64 / (rounds * TASKS) as f64 / 1000.0;
    println!(
        "side by side, {rounds} rounds 20 ms apart of {TASKS} tasks: raw one-pread-per-file loop {:.2} us per task-sample, schedlab's reader {:.2} us: ratio {:.2} (goal < 0.70)",
        per(raw_ns),
        per(ours_ns),
        ours_ns as f64 / raw_ns as f64
    );
    stop.store(true, Ordering::Relaxed);
}

criterion_group! {
    name = benches;
    config = Criterion::default().without_plots().sample_size(30).measurement_time(Duration::from_secs(3)).warm_up_time(Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
