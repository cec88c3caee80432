//! `run --record FILE`, then `replay FILE --speed N` in a real terminal (tmux): the
//! recording is well formed and matches the run, the replay shows the recorded samples'
//! values, and `--speed` sets the pace.

use crate::common;
use crate::common::tmux::Tmux;

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::Value;

/// One task's row of one sample in the run's CSV.
#[derive(Debug)]
struct Row {
    t_s: f64,
    task: String,
    pid_tid: String,
    policy: String,
    nice: String,
    cpu: String,
    cpu_share: f64,
    wait_share: Option<f64>,
}

/// The CSV's task rows (knob-change rows have no pid), in order.
fn csv_rows(text: &str) -> Vec<Row> {
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (!f[2].is_empty()).then(|| Row {
                t_s: f[0].parse().expect("t_s"),
                task: f[1].to_string(),
                pid_tid: format!("{}/{}", f[2], f[3]),
                policy: f[4].to_string(),
                nice: f[5].to_string(),
                cpu: f[6].to_string(),
                cpu_share: f[7].parse().expect("cpu_share"),
                wait_share: f[8].parse().ok(),
            })
        })
        .collect()
}

fn pct(v: f64) -> String {
    format!("{:.1}", v * 100.0)
}

/// Whether the screen shows this sample: its time in the header, and in the task table
/// each row's ids, policy, nice, last CPU, CPU% and WAIT% (the table's own one-decimal
/// rounding of the same numbers).
fn shows(screen: &str, rows: &[&Row]) -> bool {
    // The CSV's t_s is rounded to the ms: 4.05 may be the screen's 4.0 or 4.1.
    [-0.0005, 0.0005]
        .iter()
        .any(|d| screen.contains(&format!("t={:.1}s", rows[0].t_s + d)))
        && rows.iter().all(|r| {
            screen.lines().any(|l| {
                // A thread's name comes after its tree glyph (`└─ fair`).
                let f: Vec<&str> = l
                    .split_whitespace()
                    .skip_while(|w| w.starts_with(['├', '└']))
                    .collect();
                f.len() > 7
                && f[0] == r.task
                // A long pid/tid is cut to the column's 11 characters.
                && r.pid_tid.starts_with(f[1])
                && f[2].starts_with(&r.policy)
                && f[3] == r.nice
                && f[5] == r.cpu
                && f[6] == pct(r.cpu_share)
                && f[7] == r.wait_share.map_or("-".to_string(), pct)
            })
        })
}

#[test]
fn a_recorded_run_replays_its_samples_at_the_asked_speed() {
    if !common::require("tmux", common::have("tmux")) {
        return;
    }
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let (rec, csv) = (dir.path().join("run.jsonl"), dir.path().join("run.csv"));
    let report = record_rt_throttle(&rec, &csv, dir.path());

    let records = read_recording(&rec);
    let t_ns = assert_in_time_order(&records);
    assert_kinds_and_the_runs_tasks(&records, &report);
    let batches: Vec<&Value> = records.iter().filter(|r| r["kind"] == "batch").collect();
    assert!(
        batches
            .iter()
            .all(|b| b["batch"]["tasks"].as_array().map(Vec::len) == Some(2)),
        "every sample has both tasks"
    );
    // The CSV has a row per task per interval: one sample fewer than the recording.
    let rows = csv_rows(&std::fs::read_to_string(&csv).expect("csv"));
    let samples: Vec<&[Row]> = rows.chunks(2).collect();
    assert!(samples
        .iter()
        .all(|s| s[0].task == "fifo" && s[1].task == "fair"));
    assert_eq!(
        samples.len() + 1,
        batches.len(),
        "one CSV sample per interval"
    );
    let last_batch_ns = batches.last().expect("batches")["t_ns"]
        .as_u64()
        .expect("t_ns");
    // The replay starts at the first record and shows the last sample once the last
    // batch is due: `span` of recorded time.
    let span = Duration::from_nanos(last_batch_ns - t_ns[0]);
    // The run ends at the first sample 4 s after the first one.
    assert!(span >= Duration::from_secs(4), "{span:?}");

    let speed = 4.0;
    let launched = Instant::now();
    let journal = dir.path().join("journal.jsonl");
    let rec_arg = rec.display().to_string();
    let speed_arg = speed.to_string();
    let Some(t) = Tmux::start(&["replay", &rec_arg, "--speed", &speed_arg], &journal) else {
        return;
    };
    let (up, done) = wait_for_the_last_sample(&t, &samples);
    assert_pace(launched, up, done, span, speed);
    assert_stepping_back_shows_each_sample(&t, &samples);
    t.keys(&["q"]);
    assert!(
        t.when(Duration::from_secs(10), |s| s.contains("SCHEDLAB-EXITED-0"))
            .is_some(),
        "{}",
        t.screen()
    );
}

/// `run rt-throttle` for 4 s at 100 ms, recorded to `rec` with its CSV in `csv`: the
/// run's JSON report.
fn record_rt_throttle(rec: &Path, csv: &Path, dir: &Path) -> Value {
    let out = Command::new(common::exe())
        .args([
            "run",
            "rt-throttle",
            "--duration",
            "4s",
            "--interval",
            "100ms",
        ])
        .arg("--record")
        .arg(rec)
        .arg("--csv")
        .arg(csv)
        .args(["--json", "-"])
        .env("SCHEDLAB_JOURNAL", dir.join("journal.jsonl"))
        .output()
        .expect("run");
    common::json_output(&out)
}

/// The recording's records, after checking its header.
fn read_recording(rec: &Path) -> Vec<Value> {
    // The recording: a version-1 header, then one JSON record per line in time order.
    let text = std::fs::read_to_string(rec).expect("recording written");
    let mut lines = text.lines();
    let header: Value = serde_json::from_str(lines.next().expect("header")).expect("json");
    assert_eq!(header["schedlab_recording"], 1, "{header}");
    assert_eq!(header["schedlab"], env!("CARGO_PKG_VERSION"));
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    let created = header["created_unix_s"].as_u64().expect("created_unix_s");
    assert!(now.abs_diff(created) < 600, "{created} vs now {now}");
    lines
        .map(|l| serde_json::from_str(l).expect("every line is JSON"))
        .collect()
}

/// The records' times, checked to be in order: the records' `t_ns`.
fn assert_in_time_order(records: &[Value]) -> Vec<u64> {
    let t_ns: Vec<u64> = records
        .iter()
        .map(|r| r["t_ns"].as_u64().expect("t_ns"))
        .collect();
    // In time order, but for a sampling round that was on its way from the sampler
    // when a knob changed: written after the change, stamped up to one interval
    // before it (replay sorts by t_ns).
    for (i, w) in t_ns.windows(2).enumerate() {
        if w[1] >= w[0] {
            continue;
        }
        let (k0, k1) = (&records[i]["kind"], &records[i + 1]["kind"]);
        assert!(
            k0 != "batch" && k1 == "batch" && w[0] - w[1] < 200_000_000,
            "record {} ({k1}) at {} ns comes after {k0} at {} ns",
            i + 1,
            w[1],
            w[0]
        );
    }
    t_ns
}

/// Every record is of a known kind, and the one `started` record names the preset and
/// the run's tasks.
fn assert_kinds_and_the_runs_tasks(records: &[Value], report: &Value) {
    for r in records {
        let kind = r["kind"].as_str().expect("kind");
        assert!(
            ["started", "batch", "knob", "system_knobs"].contains(&kind),
            "{kind}"
        );
    }
    let started: Vec<&Value> = records.iter().filter(|r| r["kind"] == "started").collect();
    assert_eq!(started.len(), 1);
    let info = &started[0]["info"];
    assert_eq!(info["preset"]["name"], "rt-throttle");
    let ids = |tasks: &Value| -> Vec<(String, i64, i64)> {
        tasks
            .as_array()
            .expect("tasks")
            .iter()
            .map(|t| {
                (
                    t["name"].as_str().expect("name").to_string(),
                    t["pid"].as_i64().expect("pid"),
                    t["tid"].as_i64().expect("tid"),
                )
            })
            .collect()
    };
    assert_eq!(
        ids(&info["tasks"]),
        ids(&report["tasks"]),
        "the run's tasks"
    );
}

/// When the replay drew its first frame and when it showed the last sample.
fn wait_for_the_last_sample(t: &Tmux, samples: &[&[Row]]) -> (Instant, Instant) {
    // The player's clock starts at its first drawn frame (REPLAY in the header): from
    // there the pace is the player's, not how fast tmux and schedlab started.
    let Some(up) = t.when(Duration::from_secs(60), |s| s.contains("REPLAY")) else {
        panic!("the replay never drew:\n{}", t.screen());
    };
    let last: Vec<&Row> = samples[samples.len() - 1].iter().collect();
    let done = t.when(Duration::from_secs(60), |s| {
        s.contains("REPLAY") && shows(s, &last)
    });
    let Some(done) = done else {
        panic!(
            "the replay never showed the last sample {last:?}:\n{}",
            t.screen()
        );
    };
    (up, done)
}

fn assert_pace(launched: Instant, up: Instant, done: Instant, span: Duration, speed: f64) {
    // Pace: the player feeds a record when speed x elapsed reaches its recorded time,
    // so the last sample cannot show before span/speed from the launch (a lower bound
    // that load cannot break). From its first frame, 4x takes span/4; real time would
    // take the whole span: half of it tells the two apart with room for a slow draw,
    // whatever the start-up took.
    let took = done - launched;
    assert!(
        took >= span.div_f64(speed),
        "{took:?}: faster than span {span:?} / {speed}"
    );
    let paced = done - up;
    assert!(
        paced < span / 2,
        "{paced:?} from the first frame: --speed {speed} is no faster than the recording ({span:?})"
    );
    eprintln!(
        "replay of {span:?} at {speed}x showed the last sample {paced:?} after its first frame ({took:?} after the launch)"
    );
}

/// Step back through the samples, paused: each shows that sample's recorded values.
fn assert_stepping_back_shows_each_sample(t: &Tmux, samples: &[&[Row]]) {
    t.keys(&["Space"]);
    assert!(
        t.when(Duration::from_secs(5), |s| s.contains("REPLAY paused"))
            .is_some(),
        "{}",
        t.screen()
    );
    for back in 2..=4 {
        let want: Vec<&Row> = samples[samples.len() - back].iter().collect();
        t.keys(&[","]);
        assert!(
            t.when(Duration::from_secs(5), |s| shows(s, &want))
                .is_some(),
            "{back} samples from the end, want {want:?}:\n{}",
            t.screen()
        );
    }
}

#[test]
fn the_workbench_model_of_a_recording_states_the_runs_headline_to_the_last_digit() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    // A fairness headline (ideal shares from the nice weights) and a throughput one.
    for preset in ["nice-ladder", "pipe-wakeup"] {
        let rec = dir.path().join(format!("{preset}.jsonl"));
        let out = Command::new(common::exe())
            .args(["run", preset, "--duration", "1500ms", "--warmup", "0s"])
            .arg("--record")
            .arg(&rec)
            .args(["--json", "-"])
            .env("SCHEDLAB_JOURNAL", dir.path().join("journal.jsonl"))
            .output()
            .expect("run");
        let report = common::json_output(&out);
        let (app, fed) = model_of_the_recording(&rec);
        let s = app.live.summary();
        // What to look at when they disagree: the rounds each side took.
        let sides = format!(
            "{preset}: the run took {} rounds over {} s; the replay fed {} batches ({:?}..{:?}), \
             its model spans {} s",
            report["observer"]["samples"],
            report["duration_s"],
            fed.len(),
            fed.first(),
            fed.last(),
            app.live.store.elapsed_s()
        );
        assert_headline_to_the_last_digit(&report, &s, &sides);
        if preset == "nice-ladder" {
            assert!(s.fairness_error.is_some() && s.ideal_share.iter().any(Option::is_some));
        } else {
            assert!(s.throughput_per_s > 0.0, "{sides}: {s:?}");
        }
    }
}

/// The workbench's model, fed the recording as `schedlab replay` feeds it, and the
/// times of the batches it was fed.
fn model_of_the_recording(rec: &Path) -> (schedlab::app::App, Vec<u64>) {
    use schedlab::app::keys::KeyMap;
    use schedlab::app::App;
    // No warm-up: the run had none either.
    let records = schedlab::lab::record::read(rec).expect("the recording");
    let mut app = App::new(KeyMap::default(), Duration::from_millis(100), true);
    app.replay = true;
    let mut player = schedlab::tui::player::Player::new(records, 1.0);
    let actions = player.seek(1e6);
    let fed: Vec<u64> = actions
        .iter()
        .filter_map(|a| match a {
            schedlab::app::Action::Batch(b) => Some(b.t_ns),
            _ => None,
        })
        .collect();
    for action in actions {
        app.update(action);
    }
    (app, fed)
}

/// Every headline figure, to the last digit (JSON numbers round-trip exactly).
fn assert_headline_to_the_last_digit(
    report: &Value,
    s: &schedlab::lab::live::Summary,
    sides: &str,
) {
    let metrics = &report["metrics"];
    assert_eq!(
        metrics["throughput_per_s"].as_f64(),
        Some(s.throughput_per_s),
        "{sides}"
    );
    assert_eq!(
        metrics["fairness_error"].as_f64(),
        s.fairness_error,
        "{sides}"
    );
    assert_eq!(report["summary_s"].as_f64(), Some(s.summary_s), "{sides}");
    let tasks = report["tasks"].as_array().expect("tasks");
    assert_eq!(tasks.len(), s.cpu_share.len(), "{sides}");
    for (i, t) in tasks.iter().enumerate() {
        let name = &t["name"];
        assert_eq!(
            t["cpu_share"].as_f64(),
            Some(s.cpu_share[i]),
            "{sides}: {name}"
        );
        assert_eq!(
            t["progress_per_s"].as_f64(),
            Some(s.progress_per_s[i]),
            "{sides}: {name}"
        );
        assert_eq!(
            t["ideal_share"].as_f64(),
            s.ideal_share[i],
            "{sides}: {name}"
        );
    }
}
