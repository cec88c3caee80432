use super::encode::*;
use super::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

const B: u64 = 5_000_000_000;

fn names() -> BTreeMap<i32, String> {
    BTreeMap::from([
        (100, "writer".to_string()),
        (200, "reader".to_string()),
        (300, "kworker/0:1".to_string()),
    ])
}

fn sw(t: u64, cpu: u32, prev: i32, next: i32, prev_runnable: bool) -> TimelineEvent {
    TimelineEvent::Switch {
        t_ns: B + t,
        cpu,
        prev,
        next,
        prev_runnable,
    }
}

fn wk(t: u64, cpu: u32, pid: i32, waker: i32, target_cpu: i32) -> TimelineEvent {
    TimelineEvent::Waking {
        t_ns: B + t,
        cpu,
        pid,
        waker,
        target_cpu,
    }
}

/// Two CPUs, writer (100) and reader (200) as targets, kworker (300, named) and 400
/// (unnamed) as others.
fn events() -> Vec<TimelineEvent> {
    vec![
        wk(0, 1, 200, 0, 1),
        sw(1000, 0, 400, 100, true),
        sw(1500, 1, 0, 200, false),
        sw(3000, 1, 200, 0, false),
        wk(4000, 0, 200, 100, 1),
        sw(4500, 1, 0, 200, false),
        sw(6000, 0, 100, 300, true),
        TimelineEvent::Migrate {
            t_ns: B + 7000,
            pid: 100,
            orig_cpu: 0,
            dest_cpu: 1,
        },
        sw(8000, 1, 200, 100, true),
        sw(9000, 0, 300, 0, false),
        wk(10_000, 1, 200, 100, 0),
        sw(12_000, 0, 0, 200, false),
        wk(15_000, 0, 400, 200, 0),
    ]
}

fn marks() -> Vec<(u64, String)> {
    vec![
        (B + 5000, "writer.policy=batch -> ok: applied".to_string()),
        (
            B + 11_000,
            "reader.nice=\"5\" -> ok\nsecond line".to_string(),
        ),
    ]
}

fn render(input: &TimelineInput) -> (Summary, String, Value) {
    let mut buf = Vec::new();
    let summary = match write_chrome_json(input, &mut buf) {
        Ok(s) => s,
        Err(e) => panic!("write failed: {e}"),
    };
    let text = String::from_utf8(buf).expect("utf8");
    let json: Value = serde_json::from_str(&text).expect("valid JSON");
    (summary, text, json)
}

fn sample() -> (Summary, String, Value) {
    let names = names();
    let events = events();
    let marks = marks();
    let input = TimelineInput {
        events: &events,
        names: &names,
        targets: &[100, 200],
        marks: &marks,
        title: "pipe \"demo\"",
    };
    render(&input)
}

fn trace_events(json: &Value) -> &Vec<Value> {
    json["traceEvents"].as_array().expect("traceEvents array")
}

/// ns as Perfetto reads `ts` (multiply, truncate), which the half-ns bias makes exact.
fn ts_ns(v: &Value) -> u64 {
    (v.as_f64().expect("ts") * 1000.0) as u64
}

fn dur_ns(v: &Value) -> u64 {
    (v.as_f64().expect("dur") * 1000.0).round() as u64
}

/// (name, start ns, dur ns, state_at_end) of the X slices on one track.
fn slices(json: &Value, pid: u64, tid: u64) -> Vec<(String, u64, u64, String)> {
    trace_events(json)
        .iter()
        .filter(|e| e["ph"] == "X" && e["pid"] == pid && e["tid"] == tid)
        .map(|e| {
            (
                e["name"].as_str().expect("name").to_string(),
                ts_ns(&e["ts"]),
                dur_ns(&e["dur"]),
                e["args"]["state_at_end"]
                    .as_str()
                    .expect("state")
                    .to_string(),
            )
        })
        .collect()
}

fn s(name: &str, start: u64, dur: u64, state: &str) -> (String, u64, u64, String) {
    (name.to_string(), start, dur, state.to_string())
}

fn meta_name(json: &Value, kind: &str, pid: u64, tid: Option<u64>) -> Option<String> {
    trace_events(json)
        .iter()
        .find(|e| {
            e["ph"] == "M"
                && e["name"] == kind
                && e["pid"] == pid
                && tid.is_none_or(|t| e["tid"] == t)
        })
        .and_then(|e| e["args"]["name"].as_str().map(str::to_string))
}

#[test]
fn metadata_names_processes_and_tracks() {
    let (_, _, json) = sample();
    assert_eq!(json["displayTimeUnit"], "ns");
    assert_eq!(json["otherData"]["title"], "pipe \"demo\"");
    assert_eq!(json["otherData"]["t0_ns"], B);
    assert_eq!(
        meta_name(&json, "process_name", 0, None).as_deref(),
        Some("CPUs")
    );
    assert_eq!(
        meta_name(&json, "process_name", 1, None).as_deref(),
        Some("tasks")
    );
    assert_eq!(
        meta_name(&json, "thread_name", 0, Some(1)).as_deref(),
        Some("CPU 0")
    );
    assert_eq!(
        meta_name(&json, "thread_name", 0, Some(2)).as_deref(),
        Some("CPU 1")
    );
    assert_eq!(
        meta_name(&json, "thread_name", 1, Some(100)).as_deref(),
        Some("writer")
    );
    assert_eq!(
        meta_name(&json, "thread_name", 1, Some(200)).as_deref(),
        Some("reader")
    );
    let evs = trace_events(&json);
    let sort = |pid: u64, tid: u64| {
        evs.iter()
            .find(|e| e["name"] == "thread_sort_index" && e["pid"] == pid && e["tid"] == tid)
            .map(|e| e["args"]["sort_index"].clone())
    };
    assert_eq!(sort(0, 2), Some(Value::from(1)));
    assert_eq!(sort(1, 200), Some(Value::from(1)));
    // No process event may fall back to tid = pid = 1, which is CPU 0's track.
    assert!(evs.iter().filter(|e| e["pid"] == 1).all(|e| e["tid"] != 1));
    // Metadata comes before everything else.
    let first_other = evs.iter().position(|e| e["ph"] != "M").expect("events");
    assert!(evs[first_other..].iter().all(|e| e["ph"] != "M"));
}

#[test]
fn cpu_tracks_hold_one_slice_per_run() {
    let (summary, _, json) = sample();
    assert_eq!(
        slices(&json, 0, 1),
        vec![
            s("pid 400", 0, 1000, "preempted"),
            s("writer", 1000, 5000, "preempted"),
            s("kworker/0:1", 6000, 3000, "blocked"),
            s("reader", 12_000, 3000, "running"),
        ]
    );
    assert_eq!(
        slices(&json, 0, 2),
        vec![
            s("reader", 1500, 1500, "blocked"),
            s("reader", 4500, 3500, "preempted"),
            s("writer", 8000, 7000, "running"),
        ]
    );
    let evs = trace_events(&json);
    let first = evs
        .iter()
        .find(|e| e["ph"] == "X" && e["name"] == "pid 400")
        .expect("pid 400 slice");
    assert_eq!(first["args"]["tid"], 400);
    assert_eq!(first["args"]["from_trace_start"], true);
    let kw = evs
        .iter()
        .find(|e| e["ph"] == "X" && e["name"] == "kworker/0:1")
        .expect("kworker slice");
    assert_eq!(kw["args"]["tid"], 300);
    assert!(kw["args"].get("from_trace_start").is_none());
    assert_eq!(summary.slices, 4 + 3 + 2 + 3);
}

#[test]
fn task_tracks_follow_a_task_across_cpus() {
    let (_, _, json) = sample();
    assert_eq!(
        slices(&json, 1, 100),
        vec![
            s("writer", 1000, 5000, "preempted"),
            s("writer", 8000, 7000, "running")
        ]
    );
    assert_eq!(
        slices(&json, 1, 200),
        vec![
            s("reader", 1500, 1500, "blocked"),
            s("reader", 4500, 3500, "preempted"),
            s("reader", 12_000, 3000, "running"),
        ]
    );
    let cpus: Vec<Value> = trace_events(&json)
        .iter()
        .filter(|e| e["ph"] == "X" && e["pid"] == 1 && e["tid"] == 100)
        .map(|e| e["args"]["cpu"].clone())
        .collect();
    assert_eq!(cpus, vec![Value::from(0), Value::from(1)]);
}

#[test]
fn wakings_are_instants_with_latency() {
    let (summary, _, json) = sample();
    let wakes: Vec<&Value> = trace_events(&json)
        .iter()
        .filter(|e| e["ph"] == "i" && e["s"] == "t" && e["tid"] == 200)
        .collect();
    let got: Vec<(String, u64, f64, i64, i64)> = wakes
        .iter()
        .map(|e| {
            (
                e["name"].as_str().expect("name").to_string(),
                ts_ns(&e["ts"]),
                e["args"]["latency_us"].as_f64().expect("latency"),
                e["args"]["waker"].as_i64().expect("waker"),
                e["args"]["target_cpu"].as_i64().expect("target_cpu"),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("woken by swapper/1".to_string(), 0, 1.5, 0, 1),
            ("woken by writer".to_string(), 4000, 0.5, 100, 1),
            ("woken by writer".to_string(), 10_000, 2.0, 100, 0),
        ]
    );
    assert!(wakes.iter().all(|e| e["pid"] == 1));
    assert_eq!(wakes[1]["args"]["waker_name"], "writer");
    // Non-targets get no instants: pid 400's waking is not there.
    assert_eq!(summary.wakeups, 3);
    let migrated: Vec<&Value> = trace_events(&json)
        .iter()
        .filter(|e| e["name"] == "migrated CPU 0 -> 1")
        .collect();
    assert_eq!(migrated.len(), 1);
    assert_eq!(migrated[0]["tid"], 100);
    assert_eq!(ts_ns(&migrated[0]["ts"]), 7000);
}

#[test]
fn flows_link_waker_slice_to_wakee_slice() {
    let (_, _, json) = sample();
    let evs = trace_events(&json);
    let flows: Vec<(String, u64, u64, u64)> = evs
        .iter()
        .filter(|e| e["ph"] == "s" || e["ph"] == "f")
        .map(|e| {
            (
                e["ph"].as_str().expect("ph").to_string(),
                e["id"].as_u64().expect("id"),
                e["tid"].as_u64().expect("tid"),
                ts_ns(&e["ts"]),
            )
        })
        .collect();
    // Waker writer on CPU 0 at 4000 -> reader's run on CPU 1 from 4500; writer on CPU 1 at
    // 10000 -> reader on CPU 0 from 12000. The wakeup from idle has no flow.
    assert_eq!(
        flows,
        vec![
            ("s".to_string(), 1, 1, 4000),
            ("f".to_string(), 1, 2, 4501),
            ("s".to_string(), 2, 2, 10_000),
            ("f".to_string(), 2, 1, 12_001),
        ]
    );
    assert!(evs
        .iter()
        .filter(|e| e["ph"] == "f")
        .all(|e| e["bp"] == "e" && e["cat"] == "sched" && e["name"] == "wakeup"));
}

#[test]
fn marks_are_global_instants_escaped() {
    let (summary, text, json) = sample();
    let marks: Vec<(String, u64)> = trace_events(&json)
        .iter()
        .filter(|e| e["ph"] == "i" && e["s"] == "g")
        .map(|e| {
            (
                e["name"].as_str().expect("name").to_string(),
                ts_ns(&e["ts"]),
            )
        })
        .collect();
    assert_eq!(
        marks,
        vec![
            ("writer.policy=batch -> ok: applied".to_string(), 5000),
            ("reader.nice=\"5\" -> ok\nsecond line".to_string(), 11_000),
        ]
    );
    assert_eq!(summary.marks, 2);
    assert!(text.contains(r#"reader.nice=\"5\" -> ok\nsecond line"#));
}

#[test]
fn timestamps_never_decrease_per_track_or_overall() {
    let (_, _, json) = sample();
    let mut last: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    let mut overall = 0;
    for e in trace_events(&json).iter().filter(|e| e["ph"] != "M") {
        let t = ts_ns(&e["ts"]);
        assert!(t >= overall, "out of order: {e}");
        overall = t;
        let key = (
            e["pid"].as_u64().expect("pid"),
            e["tid"].as_u64().unwrap_or(0),
        );
        let prev = last.insert(key, t).unwrap_or(0);
        assert!(t >= prev, "track {key:?} goes back: {e}");
    }
}

#[test]
fn empty_input_is_a_valid_empty_trace() {
    let names = BTreeMap::new();
    let input = TimelineInput {
        events: &[],
        names: &names,
        targets: &[],
        marks: &[],
        title: "empty",
    };
    let (summary, _, json) = render(&input);
    assert_eq!(summary, Summary::default());
    assert_eq!(trace_events(&json).len(), 0);
    assert_eq!(json["otherData"]["title"], "empty");

    // Targets but no events: only their track names.
    let input = TimelineInput {
        targets: &[7],
        ..input
    };
    let (summary, _, json) = render(&input);
    assert_eq!(summary, Summary::default());
    assert!(trace_events(&json).iter().all(|e| e["ph"] == "M"));
    assert_eq!(
        meta_name(&json, "thread_name", 1, Some(7)).as_deref(),
        Some("pid 7")
    );
}

#[test]
fn a_mark_before_the_first_event_moves_t0() {
    let names = names();
    let events = vec![sw(2000, 0, 100, 200, false)];
    let marks = vec![(B + 500, "early".to_string())];
    let input = TimelineInput {
        events: &events,
        names: &names,
        targets: &[100],
        marks: &marks,
        title: "t",
    };
    let (_, _, json) = render(&input);
    // t0 is the mark, so nothing has a negative time. Writer ran from the first event; reader
    // (named, not a target) starts at the last one and gets a zero-length slice there.
    assert_eq!(json["otherData"]["t0_ns"], B + 500);
    assert_eq!(
        slices(&json, 0, 1),
        vec![
            s("writer", 1500, 0, "blocked"),
            s("reader", 1500, 0, "running")
        ]
    );
    assert_eq!(
        ts_ns(&trace_events(&json).last().expect("an event")["ts"]),
        1500
    );
    assert_eq!(
        trace_events(&json).iter().filter(|e| e["s"] == "g").count(),
        1
    );
}

#[test]
fn lost_switch_out_keeps_task_track_nested() {
    let names = names();
    // writer switched in on CPU 0, then in on CPU 1 without a switch-out on CPU 0.
    let events = vec![
        sw(0, 0, 0, 100, false),
        sw(1000, 1, 0, 100, false),
        sw(2000, 0, 300, 0, false),
        sw(3000, 1, 100, 0, false),
    ];
    let input = TimelineInput {
        events: &events,
        names: &names,
        targets: &[100],
        marks: &[],
        title: "t",
    };
    let (_, _, json) = render(&input);
    assert_eq!(
        slices(&json, 1, 100),
        vec![
            s("writer", 0, 1000, "unknown"),
            s("writer", 1000, 2000, "blocked")
        ]
    );
    // CPU 0's switch named kworker as prev, not writer: state unknown.
    assert_eq!(slices(&json, 0, 1), vec![s("writer", 0, 2000, "unknown")]);
}

/// Perfetto's own number parser (integer part, then the fraction as digits / 10^k), then
/// multiply by 1000 and truncate: what a `ts` becomes in its tables.
fn perfetto_ns(text: &str) -> u64 {
    let (int, frac) = text.split_once('.').unwrap_or((text, ""));
    let mut out = 0.0f64;
    for c in int.bytes() {
        out = out * 10.0 + f64::from(c - b'0');
    }
    if !frac.is_empty() {
        let (mut f, mut div) = (0.0f64, 1.0f64);
        for c in frac.bytes() {
            f = f * 10.0 + f64::from(c - b'0');
            div *= 10.0;
        }
        out += f / div;
    }
    (out * 1000.0) as u64
}

#[test]
fn ts_survives_perfetto_truncation() {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    for base in [
        0u64,
        1_000_000,
        1_000_000_000,
        100_000_000_000,
        10_000_000_000_000,
    ] {
        for _ in 0..20_000 {
            x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            let n = base + (x >> 40);
            let text = serde_json::to_string(&ts_us(n, 0)).expect("f64");
            assert!(!text.contains('e'), "{text}");
            assert_eq!(perfetto_ns(&text), n, "{n} written as {text}");
            // The exact form would not survive for every n; that is why the bias exists.
            let dur = serde_json::to_string(&dur_us(n)).expect("f64");
            assert!(perfetto_ns(&dur) + 1 >= n && perfetto_ns(&dur) <= n);
        }
    }
}

/// A generated run over 4 CPUs: every track's slices, as Perfetto reads them, are sorted
/// and never overlap, and every flow has both ends.
#[test]
fn generated_run_has_no_overlaps_as_perfetto_reads_it() {
    let events = generated_run();
    let names: BTreeMap<i32, String> = (10..14).map(|p| (p, format!("task-{p}"))).collect();
    let targets: Vec<i32> = (10..18).collect();
    let input = TimelineInput {
        events: &events,
        names: &names,
        targets: &targets,
        marks: &[],
        title: "gen",
    };
    let mut buf = Vec::new();
    let summary = write_chrome_json(&input, &mut buf).expect("write");
    let text = String::from_utf8(buf).expect("utf8");
    let json: Value = serde_json::from_str(&text).expect("json");
    let (tracks, flows) = slices_and_flows_as_perfetto_reads_them(&json);
    let mut n = 0;
    for (key, spans) in &tracks {
        for pair in spans.windows(2) {
            assert!(pair[0].1 <= pair[1].0, "track {key:?}: {pair:?} overlap");
        }
        n += spans.len();
    }
    assert_eq!(n, summary.slices);
    assert!(summary.slices > 20_000);
    assert!(!flows.is_empty());
    assert!(flows.values().all(|ends| ends.len() == 2));
}

/// 40,000 pseudo-random switches and wakings (a fixed seed) over 4 CPUs and 8 tasks.
fn generated_run() -> Vec<TimelineEvent> {
    let mut x: u64 = 42;
    let mut rnd = |m: u64| {
        x = x
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (x >> 33) % m
    };
    let mut running = [0i32; 4];
    let mut t = 1_000_000u64;
    let mut events = Vec::new();
    for _ in 0..40_000 {
        t += 1 + rnd(5000);
        let cpu = rnd(4) as usize;
        if rnd(3) == 0 {
            let pid = 10 + rnd(8) as i32;
            events.push(TimelineEvent::Waking {
                t_ns: t,
                cpu: cpu as u32,
                pid,
                waker: running[cpu],
                target_cpu: rnd(4) as i32,
            });
        } else {
            let mut next = if rnd(5) == 0 { 0 } else { 10 + rnd(8) as i32 };
            if next != 0 && running.contains(&next) {
                next = 0;
            }
            events.push(TimelineEvent::Switch {
                t_ns: t,
                cpu: cpu as u32,
                prev: running[cpu],
                next,
                prev_runnable: rnd(2) == 0,
            });
            running[cpu] = next;
        }
    }
    events
}

/// Each track's (pid, tid) slices as (start, end) ns.
type Tracks = BTreeMap<(u64, u64), Vec<(u64, u64)>>;
/// Each flow id's ends ("s", "f").
type Flows = BTreeMap<u64, BTreeSet<String>>;

/// The file's slices and flows, at the precision Perfetto reads its times.
fn slices_and_flows_as_perfetto_reads_them(json: &Value) -> (Tracks, Flows) {
    let mut tracks = Tracks::new();
    let mut flows = Flows::new();
    for e in trace_events(json) {
        let ts = || perfetto_ns(&e["ts"].to_string());
        match e["ph"].as_str() {
            Some("X") => {
                let key = (
                    e["pid"].as_u64().expect("pid"),
                    e["tid"].as_u64().expect("tid"),
                );
                let dur = perfetto_ns(&e["dur"].to_string());
                tracks.entry(key).or_default().push((ts(), ts() + dur));
            }
            Some(ph @ ("s" | "f")) => {
                flows
                    .entry(e["id"].as_u64().expect("id"))
                    .or_default()
                    .insert(ph.to_string());
            }
            _ => {}
        }
    }
    (tracks, flows)
}
