//! Cost of sampling one task once: schedlab's Reader (open descriptors, pread, status
//! only every 10th round) against re-reading all four files with pread and against the
//! naive open-read-close of all four. Run: cargo bench --bench sampler

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use schedlab::sampler::files::{pread_all, TaskFiles};
use schedlab::sampler::{parse, Batch, Reader, Target};

const TASKS: usize = 16;

/// TASKS sleeping threads of this process to sample, and a flag that ends them.
fn threads() -> (Vec<i32>, Arc<AtomicBool>) {
    let stop = Arc::new(AtomicBool::new(false));
    let (tx, rx) = std::sync::mpsc::channel();
    for _ in 0..TASKS {
        let (tx, stop) = (tx.clone(), Arc::clone(&stop));
        std::thread::spawn(move || {
            let _ = tx.send(nix::unistd::gettid().as_raw());
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(5));
            }
        });
    }
    let tids = (0..TASKS).filter_map(|_| rx.recv().ok()).collect();
    (tids, stop)
}

fn bench(c: &mut Criterion) {
    let (tids, stop) = threads();
    let pid = std::process::id() as i32;
    let mut group = c.benchmark_group("sample_per_task");
    group.throughput(Throughput::Elements(TASKS as u64));

    group.bench_function("naive_open_read_4_files", |b| {
        b.iter(|| {
            for &tid in &tids {
                for f in ["sched", "schedstat", "stat", "status"] {
                    let text =
                        std::fs::read(format!("/proc/{pid}/task/{tid}/{f}")).unwrap_or_default();
                    black_box(text);
                }
            }
        })
    });

    let files: Vec<TaskFiles> = tids
        .iter()
        .map(|&t| TaskFiles::open(pid, t).expect("open"))
        .collect();
    let mut buf = vec![0u8; 16 * 1024];
    group.bench_function("pread_parse_4_files", |b| {
        b.iter(|| {
            for f in &files {
                for file in [&f.sched, &f.schedstat, &f.stat, &f.status]
                    .into_iter()
                    .flatten()
                {
                    let text = pread_all(file, &mut buf).unwrap_or_default();
                    black_box(parse::parse_sched(text));
                }
            }
        })
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
                    let file = [&f.sched, &f.schedstat, &f.stat, &f.status][pick];
                    if let Some(file) = file {
                        black_box(pread_all(file, &mut buf).map(<[u8]>::len).unwrap_or(0));
                    }
                }
            })
        });
    }

    let targets = tids
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
    group.bench_function("schedlab_reader", |b| {
        b.iter(|| {
            reader.sample_into(&mut batch);
            black_box(&batch);
        })
    });
    group.finish();
    stop.store(true, Ordering::Relaxed);
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(30).measurement_time(Duration::from_secs(4)).warm_up_time(Duration::from_secs(1));
    targets = bench
}
criterion_main!(benches);
