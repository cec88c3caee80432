use super::*;
use std::time::Duration;

/// (field number, varint value or bytes) for each field of `b`.
fn fields(mut b: &[u8]) -> Vec<(u32, Result<u64, &[u8]>)> {
    fn varint(b: &mut &[u8]) -> u64 {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = b[0];
            *b = &b[1..];
            v |= u64::from(byte & 0x7f) << shift;
            if byte < 0x80 {
                break;
            }
        }
        v
    }
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = varint(&mut b);
        let field = (key >> 3) as u32;
        match key & 7 {
            0 => out.push((field, Ok(varint(&mut b)))),
            2 => {
                let n = varint(&mut b) as usize;
                out.push((field, Err(&b[..n])));
                b = &b[n..];
            }
            w => panic!("wire type {w}"),
        }
    }
    out
}

fn get<'a>(f: &[(u32, Result<u64, &'a [u8]>)], n: u32) -> Option<Result<u64, &'a [u8]>> {
    f.iter().find(|(k, _)| *k == n).map(|(_, v)| *v)
}

fn switch(t_ns: u64, cpu: u32, prev_pid: i32, next_pid: i32) -> SchedEvent {
    let mut comm = [0u8; 16];
    comm[..4].copy_from_slice(b"kcom");
    SchedEvent {
        t_ns,
        cpu,
        kind: EventKind::Switch {
            prev_pid,
            prev_state: 1,
            next_pid,
            prev_comm: comm,
            next_comm: comm,
        },
    }
}

fn sample() -> Timeline {
    let mut events = vec![
        switch(1_000, 0, 10, 11),
        SchedEvent {
            t_ns: 2_000,
            cpu: 1,
            kind: EventKind::Waking {
                pid: 10,
                waker: 11,
                target_cpu: 0,
            },
        },
        SchedEvent {
            t_ns: 2_500,
            cpu: 0,
            kind: EventKind::SwitchedIn { pid: 10 },
        },
        switch(3_000, 0, 11, 10),
    ];
    // Enough for several bundles and progress reports.
    for i in 0..200_000u64 {
        events.push(switch(4_000 + i, (i % 2) as u32, 10, 99));
    }
    let window = KeptWindow::of(&events, Duration::from_secs(30), 1 << 20);
    Timeline {
        events,
        names: [(10, "writer".to_string()), (11, "reader".to_string())].into(),
        targets: vec![10, 11],
        tgids: [(10, 10), (11, 10)].into(),
        marks: vec![(2_200, "writer.nice=5 -> ok".into())],
        title: "pipe".into(),
        window,
    }
}

#[test]
fn the_trace_holds_every_switch_and_wakeup_with_names_and_marks() {
    let t = sample();
    let mut out = Vec::new();
    let mut reports = Vec::new();
    let w = write(&t, &mut out, &mut |n| {
        reports.push(n);
        true
    })
    .expect("written");
    assert_eq!(
        w,
        Written {
            switches: 200_002,
            wakeups: 1,
            marks: 1
        }
    );
    assert_eq!(reports, [65_536, 131_072, 196_608, 200_004]);
    let (mut switches, mut wakings, mut names, mut instants) = (0, 0, Vec::new(), Vec::new());
    let mut cpus = std::collections::BTreeSet::new();
    for (field, packet) in fields(&out) {
        assert_eq!(field, 1, "Trace.packet");
        let packet = fields(packet.expect_err("a message"));
        if let Some(Err(bundle)) = get(&packet, 1) {
            let bundle = fields(bundle);
            cpus.insert(get(&bundle, 1).expect("cpu").expect("varint"));
            for (_, ev) in bundle.iter().filter(|(k, _)| *k == 2) {
                let ev = fields((*ev).expect_err("event"));
                if let Some(Err(s)) = get(&ev, 4) {
                    switches += 1;
                    let s = fields(s);
                    let prev = get(&s, 2).expect("prev_pid").expect("varint");
                    assert_eq!(get(&ev, 2), Some(Ok(prev)), "common pid is prev");
                    if prev == 10 {
                        assert_eq!(get(&s, 1), Some(Err(&b"writer"[..])));
                    }
                    if get(&s, 6) == Some(Ok(99)) {
                        assert_eq!(get(&s, 5), Some(Err(&b"kcom"[..])), "the kernel's comm");
                    }
                }
                if let Some(Err(s)) = get(&ev, 20) {
                    wakings += 1;
                    assert_eq!(get(&ev, 2), Some(Ok(11)), "the waker");
                    assert_eq!(get(&fields(s), 2), Some(Ok(10)));
                }
            }
        }
        if let Some(Err(tree)) = get(&packet, 2) {
            for (_, th) in fields(tree).iter().filter(|(k, _)| *k == 2) {
                let th = fields((*th).expect_err("thread"));
                names.push(
                    String::from_utf8_lossy(get(&th, 2).expect("name").expect_err("bytes"))
                        .to_string(),
                );
                assert_eq!(get(&th, 3), Some(Ok(10)), "tgid");
            }
        }
        if let Some(Err(te)) = get(&packet, 11) {
            let te = fields(te);
            assert_eq!(get(&te, 9), Some(Ok(3)), "an instant");
            let name = get(&te, 23).expect("name").expect_err("bytes");
            instants.push(String::from_utf8_lossy(name).to_string());
        }
    }
    assert_eq!((switches, wakings), (200_002, 1));
    assert_eq!(cpus.into_iter().collect::<Vec<_>>(), [0, 1]);
    assert_eq!(names, ["writer", "reader"]);
    assert_eq!(
        instants,
        [
            "schedlab pipe: last 0.0 s (200,004 events)",
            "writer.nice=5 -> ok"
        ]
    );
}

#[test]
fn a_write_stops_when_progress_says_so() {
    let t = sample();
    let mut out = Vec::new();
    let e = write(&t, &mut out, &mut |_| false).expect_err("cancelled");
    assert_eq!(e.kind(), io::ErrorKind::Interrupted);
}

#[test]
fn the_reader_reads_back_what_was_written() {
    let t = sample();
    let mut out = Vec::new();
    let w = write(&t, &mut out, &mut |_| true).expect("written");
    let c = read::read(&out).expect("reads");
    assert_eq!((c.switches, c.wakeups), (w.switches, w.wakeups));
    assert_eq!(c.switches_in[&99], 200_000);
    assert_eq!(c.threads[&10], "writer");
    assert_eq!(
        c.tracks,
        ["schedlab pipe: last 0.0 s (200,004 events)", "knob changes"]
    );
    assert_eq!(c.instants.len(), 2);
    assert!(read::read(&out[..out.len() - 1]).is_err(), "cut short");
}

#[test]
fn a_file_is_named_only_when_complete_and_by_its_extension() {
    let dir = tempfile::tempdir().expect("tempdir");
    let t = sample();
    let pf = dir.path().join("t.pftrace");
    let w = crate::report::trace::write_file(&t, &pf, &mut |_| true).expect("written");
    assert_eq!(w.switches, 200_002);
    let bytes = std::fs::read(&pf).expect("there");
    assert_eq!(read::read(&bytes).expect("protobuf").switches, 200_002);
    let json = dir.path().join("t.json");
    crate::report::trace::write_file(&t, &json, &mut |_| true).expect("written");
    let text = std::fs::read_to_string(&json).expect("there");
    assert!(
        text.starts_with('{') && text.contains("traceEvents"),
        "JSON"
    );
    // An existing file is refused and left as it was.
    let e = crate::report::trace::write_file(&t, &pf, &mut |_| true).expect_err("exists");
    assert!(format!("{e:#}").contains("naming the timeline"), "{e:#}");
    assert_eq!(std::fs::read(&pf).expect("there"), bytes);
    // Stopped half-way: nothing under the name, no .part left.
    let cut = dir.path().join("cut.pftrace");
    assert!(crate::report::trace::write_file(&t, &cut, &mut |_| false).is_err());
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().to_string())
        .collect();
    assert!(
        !names
            .iter()
            .any(|n| n.starts_with("cut") || n.ends_with(".part")),
        "{names:?}"
    );
}

#[test]
fn both_formats_count_a_waking_and_its_wakeup_as_one_wake_up() {
    // 10 wakes 11 across CPUs (sched_waking on CPU 0, sched_wakeup on CPU 1), then 11
    // wakes 10 on its own CPU (sched_wakeup alone): two wake-ups in three records.
    // (time, CPU, sched_waking rather than sched_wakeup, wakee, waker)
    let wake = |t_ns, cpu, waking, pid, waker| SchedEvent {
        t_ns,
        cpu,
        kind: if waking {
            EventKind::Waking {
                pid,
                waker,
                target_cpu: 1,
            }
        } else {
            EventKind::Wakeup {
                pid,
                waker,
                target_cpu: 1,
            }
        },
    };
    let events = vec![
        switch(1_000, 0, 0, 10),
        switch(1_100, 1, 11, 0),
        wake(2_000, 0, true, 11, 10),
        wake(2_400, 1, false, 11, 0),
        switch(2_500, 1, 0, 11),
        switch(3_000, 0, 10, 0),
        wake(4_000, 1, false, 10, 11),
        switch(4_100, 1, 11, 10),
    ];
    let window = KeptWindow::of(&events, Duration::from_secs(30), 1 << 20);
    let t = Timeline {
        events,
        names: [(10, "writer".to_string()), (11, "reader".to_string())].into(),
        targets: vec![10, 11],
        tgids: [(10, 10), (11, 10)].into(),
        marks: Vec::new(),
        title: "pipe".into(),
        window,
    };
    let mut out = Vec::new();
    let w = write(&t, &mut out, &mut |_| true).expect("written");
    assert_eq!((w.switches, w.wakeups), (5, 2));
    let c = read::read(&out).expect("reads");
    assert_eq!((c.switches, c.wakeups), (5, 2), "read back in time order");
    assert_eq!(
        c.wakeups_of,
        [(10, 1), (11, 1)].into(),
        "a sched_wakeup each"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let json = crate::report::trace::write_file(&t, &dir.path().join("t.json"), &mut |_| true)
        .expect("the JSON written");
    assert_eq!(
        (json.switches, json.wakeups),
        (5, 2),
        "the JSON counts alike"
    );
}
