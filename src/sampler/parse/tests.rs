//! The procfs parsers against the 6.18 and 2.6.29 fixtures, reordered, cut, damaged and random input.

use super::*;

const SCHED: &[u8] = include_bytes!("../../../assets/fixtures/linux-6.18/task-sched");
const SCHED_OLD: &[u8] = include_bytes!("../../../assets/fixtures/linux-2.6.29/task-sched");
const SCHEDSTAT: &[u8] = include_bytes!("../../../assets/fixtures/linux-6.18/task-schedstat");
const STAT: &[u8] = include_bytes!("../../../assets/fixtures/linux-6.18/task-stat");
const STATUS: &[u8] = include_bytes!("../../../assets/fixtures/linux-6.18/task-status");
const PROC_STAT: &[u8] = include_bytes!("../../../assets/fixtures/linux-6.18/proc-stat");
const PRESSURE: &[u8] = include_bytes!("../../../assets/fixtures/linux-6.18/pressure-cpu");
const LOADAVG: &[u8] = include_bytes!("../../../assets/fixtures/linux-6.18/loadavg");

const ALL: [&[u8]; 8] = [
    SCHED, SCHED_OLD, SCHEDSTAT, STAT, STATUS, PROC_STAT, PRESSURE, LOADAVG,
];

fn text(buf: &[u8]) -> &str {
    std::str::from_utf8(buf).unwrap()
}

/// The fixture with every line containing `needle` removed.
fn without(buf: &[u8], needle: &str) -> String {
    text(buf)
        .lines()
        .filter(|l| !l.contains(needle))
        .map(|l| format!("{l}\n"))
        .collect()
}

/// The fixture's lines in reverse order.
fn reversed(buf: &[u8]) -> String {
    text(buf).lines().rev().map(|l| format!("{l}\n")).collect()
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

const SCHED_618: SchedFile = SchedFile {
    sum_exec_runtime_ns: Some(1_022_815_609),
    nr_switches: Some(5),
    nr_voluntary_switches: Some(0),
    nr_involuntary_switches: Some(5),
    nr_migrations: Some(1),
    policy: Some(0),
    prio: Some(120),
    slice_ns: Some(1_400_000),
    load_weight: Some(1_048_576),
};

#[test]
fn sched_618() {
    assert_eq!(parse_sched(SCHED), SCHED_618);
    assert_eq!(parse_sched_header(SCHED), Some(("sh", 8642, 1)));
}

#[test]
fn sched_2629() {
    assert_eq!(
        parse_sched(SCHED_OLD),
        SchedFile {
            sum_exec_runtime_ns: Some(139_434_783_417),
            nr_switches: Some(2246),
            nr_voluntary_switches: Some(1),
            nr_involuntary_switches: Some(2245),
            nr_migrations: None,
            policy: Some(0),
            prio: Some(120),
            slice_ns: None,
            load_weight: Some(1024),
        }
    );
    assert_eq!(parse_sched_header(SCHED_OLD), Some(("pipetest", 6701, 1)));
}

#[test]
fn sched_missing_reordered_added() {
    let missing = without(SCHED, "se.slice");
    assert_eq!(
        parse_sched(missing.as_bytes()),
        SchedFile {
            slice_ns: None,
            ..SCHED_618
        }
    );
    // Reversed puts the header last, where it is no header: all fields are still read.
    let rev = reversed(SCHED);
    assert_eq!(parse_sched(rev.as_bytes()), SCHED_618);
    assert_eq!(parse_sched_header(rev.as_bytes()), None);
    let mut fields: Vec<&str> = text(SCHED).lines().collect();
    fields[2..].reverse();
    let reordered = fields.join("\n");
    assert_eq!(parse_sched(reordered.as_bytes()), SCHED_618);
    assert_eq!(
        parse_sched_header(reordered.as_bytes()),
        Some(("sh", 8642, 1))
    );
    let added = text(SCHED).replace(
        "policy   ",
        "se.brand_new_field                           :                   42\npolicy   ",
    );
    assert_eq!(parse_sched(added.as_bytes()), SCHED_618);
    let body = without(SCHED, "#threads");
    assert_eq!(parse_sched(body.as_bytes()), SCHED_618);
    assert_eq!(parse_sched_header(body.as_bytes()), None);
}

#[test]
fn sched_values() {
    let p = |s: &str| parse_sched(s.as_bytes());
    assert_eq!(p("prio : -1\n").prio, Some(-1));
    assert_eq!(p("prio : 98\npolicy : 1\n").policy, Some(1));
    assert_eq!(p("prio : 99999999999\n").prio, None);
    assert_eq!(
        p("se.sum_exec_runtime : 0.000001\n").sum_exec_runtime_ns,
        Some(1)
    );
    assert_eq!(
        p("se.sum_exec_runtime : 5\n").sum_exec_runtime_ns,
        Some(5_000_000)
    );
    assert_eq!(
        p("se.sum_exec_runtime : 5.5\n").sum_exec_runtime_ns,
        Some(5_500_000)
    );
    assert_eq!(
        p("se.sum_exec_runtime : 1.1234567\n").sum_exec_runtime_ns,
        Some(1_123_456)
    );
    for bad in [
        "-1.000000",
        "1.",
        ".5",
        "1.2x",
        "1.2.3",
        "x",
        "",
        "18446744073709.551616",
    ] {
        let line = format!("se.sum_exec_runtime : {bad}\n");
        assert_eq!(p(&line).sum_exec_runtime_ns, None, "{bad:?}");
    }
    assert_eq!(
        p("se.sum_exec_runtime : 18446744073709.551615\n").sum_exec_runtime_ns,
        Some(u64::MAX)
    );
    assert_eq!(p("nr_switches : 18446744073709551616\n").nr_switches, None);
    assert_eq!(p("se.nr_migrations:7").nr_migrations, Some(7));
}

#[test]
fn sched_header_tricky_comm() {
    let buf = b"a (b) (c (77, #threads: 3)\n---\nprio : 100\n";
    assert_eq!(parse_sched_header(buf), Some(("a (b) (c", 77, 3)));
    assert_eq!(parse_sched(buf).prio, Some(100));
    // A comm with newlines cannot inject fields.
    let forged = b"\nse.slice : 1\n (9, #threads: 1)\n----\nprio : 120\n";
    assert_eq!(parse_sched(forged).slice_ns, None);
    assert_eq!(parse_sched_header(forged), Some(("\nse.slice : 1\n", 9, 1)));
    assert_eq!(parse_sched_header(b"\xff (1, #threads: 1)\n"), None);
    assert_eq!(parse_sched_header(b"sh (1, #threads: )\n"), None);
    assert_eq!(parse_sched_header(b"sh (1,#threads: 1)\n"), None);
    assert_eq!(parse_sched_header(b" (1, #threads: 1)"), Some(("", 1, 1)));
}

#[test]
fn schedstat() {
    assert_eq!(
        parse_schedstat(SCHEDSTAT),
        Some(Schedstat {
            run_ns: 1_022_815_609,
            wait_ns: 657_535,
            timeslices: 6
        })
    );
    assert_eq!(parse_schedstat(b"0 0 0\n"), Some(Schedstat::default()));
    assert_eq!(
        parse_schedstat(b"1 2 3 4\n"),
        Some(Schedstat {
            run_ns: 1,
            wait_ns: 2,
            timeslices: 3
        })
    );
    for bad in [
        &b""[..],
        b"\n",
        b"1 2",
        b"1 2 x",
        b"-1 2 3",
        b"99999999999999999999 0 0",
    ] {
        assert_eq!(parse_schedstat(bad), None, "{bad:?}");
    }
}

const STAT_618: StatFile = StatFile {
    state: b'R',
    utime_ticks: 101,
    stime_ticks: 0,
    priority: 20,
    nice: 0,
    num_threads: 1,
    processor: Some(1),
    rt_priority: Some(0),
    policy: Some(0),
};

#[test]
fn stat_618() {
    assert_eq!(parse_stat(STAT), Some(STAT_618));
}

#[test]
fn stat_tricky_comm() {
    let s = text(STAT).replace("(sh)", "(my ) (prog) R 1 2)");
    assert_eq!(parse_stat(s.as_bytes()), Some(STAT_618));
    let s = text(STAT).replace("(sh)", "(a\nb c)");
    assert_eq!(parse_stat(s.as_bytes()), Some(STAT_618));
}

#[test]
fn stat_old_and_truncated() {
    // An old kernel stops before field 39.
    let fields: Vec<&str> = text(STAT).split_whitespace().collect();
    let old = fields[..38].join(" ");
    assert_eq!(
        parse_stat(old.as_bytes()),
        Some(StatFile {
            processor: None,
            rt_priority: None,
            policy: None,
            ..STAT_618
        })
    );
    let twenty = fields[..20].join(" ");
    assert_eq!(
        parse_stat(twenty.as_bytes()).map(|s| s.num_threads),
        Some(1)
    );
    let nineteen = fields[..19].join(" ");
    assert_eq!(parse_stat(nineteen.as_bytes()), None);
    assert_eq!(parse_stat(b"1 (x)"), None);
    assert_eq!(parse_stat(b"no paren at all"), None);
    // Garbage in a field we need is None; in one we do not read, it is ignored.
    let mut bad = fields.clone();
    bad[13] = "x";
    assert_eq!(parse_stat(bad.join(" ").as_bytes()), None);
    let mut odd = fields.clone();
    odd[24] = "garbage";
    odd[38] = "-1";
    assert_eq!(
        parse_stat(odd.join(" ").as_bytes()),
        Some(StatFile {
            processor: None,
            ..STAT_618
        })
    );
    // RT task: priority -1 - rt_priority, nice 0; a negative nice.
    let mut rt = fields.clone();
    rt[17] = "-51";
    rt[18] = "-5";
    let parsed = parse_stat(rt.join(" ").as_bytes()).unwrap();
    assert_eq!((parsed.priority, parsed.nice), (-51, -5));
}

const STATUS_618: StatusFile = StatusFile {
    voluntary_ctxt_switches: Some(0),
    nonvoluntary_ctxt_switches: Some(5),
    cpus_allowed: None,
    threads: Some(1),
    state: Some(b'R'),
};

fn status_618() -> StatusFile {
    StatusFile {
        cpus_allowed: Some(CpuSet::parse_list("0-1").unwrap()),
        ..STATUS_618
    }
}

#[test]
fn status() {
    assert_eq!(parse_status(STATUS), status_618());
    let rev = reversed(STATUS);
    assert_eq!(parse_status(rev.as_bytes()), status_618());
    let added = format!("{}Future_field:\t12\n", text(STATUS));
    assert_eq!(parse_status(added.as_bytes()), status_618());
    let fewer = without(STATUS, "voluntary_ctxt_switches");
    assert_eq!(
        parse_status(fewer.as_bytes()),
        StatusFile {
            voluntary_ctxt_switches: None,
            nonvoluntary_ctxt_switches: None,
            ..status_618()
        }
    );
}

#[test]
fn status_cpus_fallback() {
    let no_list = without(STATUS, "Cpus_allowed_list");
    assert_eq!(parse_status(no_list.as_bytes()), status_618());
    let bad_list = text(STATUS).replace("Cpus_allowed_list:\t0-1", "Cpus_allowed_list:\tzz");
    assert_eq!(parse_status(bad_list.as_bytes()), status_618());
    let list_wins = text(STATUS).replace("Cpus_allowed:\t3", "Cpus_allowed:\t1");
    assert_eq!(parse_status(list_wins.as_bytes()), status_618());
    let neither = without(STATUS, "Cpus_allowed");
    assert_eq!(parse_status(neither.as_bytes()), STATUS_618);
}

#[test]
fn proc_stat() {
    let mut total = CpuTimes::default();
    let mut cpus = vec![CpuTimes::default(); 7];
    assert!(parse_proc_stat(PROC_STAT, &mut total, &mut cpus));
    assert_eq!(
        total,
        CpuTimes {
            user: 10203,
            nice: 0,
            system: 8904,
            idle: 68138,
            iowait: 521,
            irq: 0,
            softirq: 90,
            steal: 2145,
            guest: 0,
            guest_nice: 0
        }
    );
    assert_eq!(cpus.len(), 2);
    assert_eq!(
        cpus[1],
        CpuTimes {
            user: 8698,
            nice: 0,
            system: 3544,
            idle: 31249,
            iowait: 423,
            irq: 0,
            softirq: 72,
            steal: 1035,
            guest: 0,
            guest_nice: 0
        }
    );
    assert_eq!(cpus[0].user, 1504);
    assert_eq!(total.busy(), 10203 + 8904 + 90);
    assert_eq!(total.total(), 10203 + 8904 + 90 + 68138 + 521 + 2145);
    assert_eq!(parse_proc_stat_ctxt(PROC_STAT), Some(4_482_269));
}

#[test]
fn proc_stat_odd_files() {
    let mut total = CpuTimes::default();
    let mut cpus = Vec::new();
    // Offline cpu1, short lines (2.6.9 has no steal/guest), an unknown extra column.
    let buf = b"cpu  1 2 3 4\ncpu0 1 1 1 1\ncpu2 5 6 7 8 9 10 11 12 13 14 15\nctxt 9\n";
    assert!(parse_proc_stat(buf, &mut total, &mut cpus));
    assert_eq!(cpus.len(), 3);
    assert_eq!(cpus[1], CpuTimes::default());
    assert_eq!(cpus[2].guest_nice, 14);
    assert_eq!(
        total,
        CpuTimes {
            user: 1,
            nice: 2,
            system: 3,
            idle: 4,
            ..CpuTimes::default()
        }
    );
    // Reordered lines.
    let rev = reversed(PROC_STAT);
    assert!(parse_proc_stat(rev.as_bytes(), &mut total, &mut cpus));
    assert_eq!(cpus[1].steal, 1035);
    assert_eq!(total.steal, 2145);
    assert_eq!(parse_proc_stat_ctxt(rev.as_bytes()), Some(4_482_269));
    // No cpu lines; malformed ones are skipped; huge indexes are ignored.
    for bad in [
        &b""[..],
        b"intr 1 2\nctxt 5\n",
        b"cpu 1 x 3\n",
        b"cpu\n",
        b"cpu0\n",
        b"cpux 1 2\n",
        b"cpu99999999999999999999 1 2\n",
        b"cpu4000000000 1 2\n",
    ] {
        assert!(!parse_proc_stat(bad, &mut total, &mut cpus), "{bad:?}");
        assert!(cpus.is_empty());
    }
    assert_eq!(parse_proc_stat_ctxt(b"ctxt\nctxt x\n"), None);
    assert_eq!(parse_proc_stat_ctxt(b"ctxtx 5\nctxt 6\n"), Some(6));
    // Garbage totals saturate instead of overflowing.
    let max = CpuTimes {
        user: u64::MAX,
        idle: u64::MAX,
        ..CpuTimes::default()
    };
    assert_eq!(max.busy(), u64::MAX);
    assert_eq!(max.total(), u64::MAX);
}

#[test]
fn pressure() {
    assert_eq!(
        parse_pressure(PRESSURE),
        Some(Pressure {
            some_avg10: 2.36,
            some_avg60: 7.74,
            some_avg300: 12.00,
            some_total_us: 70_639_998,
            full_total_us: Some(0),
        })
    );
    let some_only = without(PRESSURE, "full");
    let p = parse_pressure(some_only.as_bytes()).unwrap();
    assert_eq!((p.some_total_us, p.full_total_us), (70_639_998, None));
    let rev = reversed(PRESSURE);
    assert_eq!(parse_pressure(rev.as_bytes()), parse_pressure(PRESSURE));
    let reordered = b"some total=5 avg300=3.00 new=1 avg60=2.00 avg10=1.00\n";
    assert_eq!(
        parse_pressure(reordered),
        Some(Pressure {
            some_avg10: 1.0,
            some_avg60: 2.0,
            some_avg300: 3.0,
            some_total_us: 5,
            full_total_us: None,
        })
    );
    for bad in [
        &b""[..],
        b"full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
        b"some avg10=2.36 avg60=7.74 avg300=12.00\n",
        b"some avg10=inf avg60=7.74 avg300=12.00 total=1\n",
        b"some avg10=NaN avg60=7.74 avg300=12.00 total=1\n",
        b"some avg10=1e3 avg60=7.74 avg300=12.00 total=1\n",
    ] {
        assert_eq!(parse_pressure(bad), None, "{bad:?}");
    }
}

#[test]
fn loadavg() {
    assert_eq!(parse_loadavg(LOADAVG), Some((0.29, 0.53, 0.27, 2, 86)));
    assert_eq!(
        parse_loadavg(b"1.00 2.00 3.00 4/5"),
        Some((1.0, 2.0, 3.0, 4, 5))
    );
    for bad in [
        &b""[..],
        b"0.29 0.53 0.27",
        b"0.29 0.53 0.27 2",
        b"0.29 0.53 0.27 2/",
        b"0.29 0.53 x 2/86 1",
        b"-0.29 0.53 0.27 2/86 1",
        b"0.29 0.53 0.27 2/99999999999 1",
    ] {
        assert_eq!(parse_loadavg(bad), None, "{bad:?}");
    }
}

#[test]
fn helpers() {
    assert_eq!(nice_from_prio(120), Some(0));
    assert_eq!(nice_from_prio(100), Some(-20));
    assert_eq!(nice_from_prio(139), Some(19));
    assert_eq!(nice_from_prio(99), None);
    assert_eq!(nice_from_prio(140), None);
    assert_eq!(nice_from_prio(-1), None);
}

#[test]
fn find_byte_and_lines_match_std() {
    let mut state = 0x1234_5678_9abc_def1;
    for _ in 0..3000 {
        let len = (xorshift(&mut state) % 40) as usize;
        let hay: Vec<u8> = (0..len)
            .map(|_| b"ab:\n\x80\xff"[(xorshift(&mut state) % 6) as usize])
            .collect();
        for needle in [b':', b'\n', 0x80, 0xff, b'z'] {
            assert_eq!(
                find_byte(&hay, needle),
                hay.iter().position(|&b| b == needle),
                "{hay:?} {needle}"
            );
        }
        assert!(lines(&hay).eq(hay.split(|&b| b == b'\n')), "{hay:?}");
        let spacey: Vec<u8> = hay
            .iter()
            .map(|&b| if b == b'a' { b' ' } else { b })
            .collect();
        assert_eq!(trim(&spacey), spacey.trim_ascii(), "{spacey:?}");
    }
}

#[test]
fn empty_input() {
    assert_eq!(parse_sched(b""), SchedFile::default());
    assert_eq!(parse_sched_header(b""), None);
    assert_eq!(parse_schedstat(b""), None);
    assert_eq!(parse_stat(b""), None);
    assert_eq!(parse_status(b""), StatusFile::default());
    let mut total = CpuTimes::default();
    let mut cpus = Vec::new();
    assert!(!parse_proc_stat(b"", &mut total, &mut cpus));
    assert_eq!(parse_proc_stat_ctxt(b""), None);
    assert_eq!(parse_pressure(b""), None);
    assert_eq!(parse_loadavg(b""), None);
}

#[test]
fn truncated_input() {
    // Cut in the middle of a number: the cut value is whatever digits arrived, the
    // fields after it are missing.
    let cut = &SCHED[..text(SCHED).find("nr_voluntary").unwrap() + 30];
    let s = parse_sched(cut);
    assert_eq!(s.nr_switches, Some(5));
    assert_eq!(s.nr_involuntary_switches, None);
    assert_eq!(s.prio, None);
    assert_eq!(parse_stat(&STAT[..40]), None);
    assert_eq!(parse_loadavg(&LOADAVG[..10]), None);
    assert_eq!(parse_pressure(&PRESSURE[..30]), None);
}

// Damaged input. The sampler reads files that can be cut short (a task exits mid-read)
// or hold anything (comm is raw bytes), so every parser's answer to a damaged buffer is
// stated below: from what is left of the fixture's lines, or from std's parsing of the
// format proc(5) documents.

/// What one field must be after parsing a damaged fixture.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Want {
    /// Exactly this.
    Is(Option<i128>),
    /// None, or 0 up to this: the line was cut inside its value, and a non-negative
    /// number cut short keeps the digits that arrived, which is never more than all of
    /// them ("1022.8" of "1022.815609" ms, "12" of prio 120).
    UpTo(i128),
    /// Anything: the line itself was damaged.
    Any,
}

impl Want {
    fn admits(self, got: Option<i128>) -> bool {
        match self {
            Want::Is(v) => got == v,
            Want::UpTo(max) => got.is_none_or(|v| (0..=max).contains(&v)),
            Want::Any => true,
        }
    }
}

/// The key of a "key: value" line, trimmed as the parsers trim it.
fn line_key(line: &str) -> Option<&str> {
    line.split_once(':').map(|(k, _)| k.trim())
}

/// Each line of `full` as (start, end of its text without the '\n').
fn line_spans(full: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut at = 0;
    for l in full.split_inclusive('\n') {
        out.push((at, at + l.trim_end_matches('\n').len()));
        at += l.len();
    }
    out
}

/// A field list: each key a parser reads, with its value in the whole file.
type Fields = Vec<(&'static str, Option<i128>)>;

fn sched_fields(s: &SchedFile) -> Fields {
    let w = |v: Option<u64>| v.map(i128::from);
    vec![
        ("se.sum_exec_runtime", w(s.sum_exec_runtime_ns)),
        ("nr_switches", w(s.nr_switches)),
        ("nr_voluntary_switches", w(s.nr_voluntary_switches)),
        ("nr_involuntary_switches", w(s.nr_involuntary_switches)),
        ("se.nr_migrations", w(s.nr_migrations)),
        ("policy", s.policy.map(i128::from)),
        ("prio", s.prio.map(i128::from)),
        ("se.slice", w(s.slice_ns)),
        ("se.load.weight", w(s.load_weight)),
    ]
}

/// The allowed CPUs as a bit mask, so that a set compares like a number: a list cut
/// short ("0" of "0-1") is a subset, hence a smaller mask.
fn cpu_bits(set: &Option<CpuSet>) -> Option<i128> {
    set.as_ref().map(|s| s.iter().map(|c| 1i128 << c).sum())
}

/// The status fields; the allowed CPUs twice, once per line that can give them.
fn status_fields(s: &StatusFile) -> Fields {
    let w = |v: Option<u64>| v.map(i128::from);
    vec![
        ("voluntary_ctxt_switches", w(s.voluntary_ctxt_switches)),
        (
            "nonvoluntary_ctxt_switches",
            w(s.nonvoluntary_ctxt_switches),
        ),
        ("Threads", s.threads.map(i128::from)),
        ("State", s.state.map(i128::from)),
        ("Cpus_allowed_list", cpu_bits(&s.cpus_allowed)),
        ("Cpus_allowed", cpu_bits(&s.cpus_allowed)),
    ]
}

/// The parsed status compared with what its lines allow: the list line decides the CPUs
/// unless it gave nothing, then the mask line does (the parser's fallback).
fn status_matches(got: &StatusFile, want: &[Want]) -> bool {
    let [vol, nonvol, threads, state, list, mask] = want else {
        panic!("six status fields")
    };
    let cpus = match list {
        Want::Is(None) => *mask,
        Want::UpTo(max) => Want::UpTo(*max),
        other => *other,
    };
    let g = status_fields(got);
    vol.admits(g[0].1)
        && nonvol.admits(g[1].1)
        && threads.admits(g[2].1)
        && state.admits(g[3].1)
        && cpus.admits(g[4].1)
}

/// What a key-value parser must read from `full[start..end]`, field by field: a line
/// whole in the window gives its value, a line outside gives nothing, a line that `end`
/// cuts after its ':' gives at most its value, and a line that `start` cuts gives
/// whatever key its rest names, with the line's value ("non|voluntary_ctxt_switches: 5"
/// is a voluntary count of 5). Later lines win, as in the parsers.
fn want_window(full: &str, start: usize, end: usize, fields: &Fields) -> Vec<Want> {
    let value_of = |key: &str| fields.iter().find(|(k, _)| *k == key).map(|(_, v)| *v);
    let mut want = vec![Want::Is(None); fields.len()];
    for (ls, lc) in line_spans(full) {
        let (vs, ve) = (ls.max(start), lc.min(end));
        if vs >= ve {
            continue;
        }
        let Some(key) = line_key(&full[vs..ve]) else {
            continue;
        };
        let Some(slot) = fields.iter().position(|(k, _)| *k == key) else {
            continue;
        };
        let own = line_key(&full[ls..lc]).unwrap_or_default();
        let Some(value) = value_of(own) else {
            panic!("the line of {own:?} reads as {key:?} when cut: not modelled")
        };
        want[slot] = match (ve == lc, value) {
            (true, v) => Want::Is(v),
            (false, Some(v)) => Want::UpTo(v),
            (false, None) => Want::Is(None),
        };
    }
    want
}

/// The lines a byte at `at` belongs to: its own, and the next one when it is the '\n'
/// that separates them (overwritten, the two lines become one).
fn touched_lines(full: &str, at: usize) -> Vec<usize> {
    let spans = line_spans(full);
    let Some(hit) = spans.iter().position(|&(ls, lc)| (ls..=lc).contains(&at)) else {
        panic!("{at} is in no line")
    };
    let mut lines = vec![hit];
    if full.as_bytes()[at] == b'\n' && hit + 1 < spans.len() {
        lines.push(hit + 1);
    }
    lines
}

/// What a key-value parser must read from `full` with the byte at `at` overwritten:
/// every field as in the whole file, except those the damaged line (or lines) can give
/// now: any key that a stretch of it is, or is one byte away from (a new ':' or '\n'
/// cuts a key short, a new letter changes it).
fn want_mutated(full: &str, at: usize, fields: &Fields) -> Vec<Want> {
    let spans = line_spans(full);
    let near = |line: &[u8], key: &[u8]| {
        line.windows(key.len())
            .any(|w| w.iter().zip(key).filter(|(a, b)| a != b).count() <= 1)
    };
    let mut want: Vec<Want> = fields.iter().map(|(_, v)| Want::Is(*v)).collect();
    for i in touched_lines(full, at) {
        let (ls, lc) = spans[i];
        let line = &full.as_bytes()[ls..lc];
        for (slot, (key, _)) in fields.iter().enumerate() {
            if near(line, key.as_bytes()) {
                want[slot] = Want::Any;
            }
        }
    }
    want
}

fn sched_matches(got: &SchedFile, want: &[Want]) -> bool {
    sched_fields(got)
        .iter()
        .zip(want)
        .all(|((_, v), w)| w.admits(*v))
}

/// The comm of a fixture's sched header: the text before its " (".
fn header_comm(full: &str) -> &str {
    full.split_once(" (").map_or("", |(c, _)| c)
}

/// The ten columns of a cpu line in kernel order.
fn columns(c: &CpuTimes) -> [u64; 10] {
    [
        c.user,
        c.nice,
        c.system,
        c.idle,
        c.iowait,
        c.irq,
        c.softirq,
        c.steal,
        c.guest,
        c.guest_nice,
    ]
}

/// Marks what parse_proc_stat did not write.
const UNTOUCHED: CpuTimes = CpuTimes {
    user: u64::MAX,
    nice: u64::MAX,
    system: u64::MAX,
    idle: u64::MAX,
    iowait: u64::MAX,
    irq: u64::MAX,
    softirq: u64::MAX,
    steal: u64::MAX,
    guest: u64::MAX,
    guest_nice: u64::MAX,
};

/// parse_proc_stat on `buf`, with `total` and the vector filled with [`UNTOUCHED`]
/// first, so that what it did not write shows.
fn proc_stat_of(buf: &[u8]) -> (bool, CpuTimes, Vec<CpuTimes>) {
    let mut total = UNTOUCHED;
    let mut cpus = vec![UNTOUCHED; 3];
    let found = parse_proc_stat(buf, &mut total, &mut cpus);
    (found, total, cpus)
}

/// A cpu line's slot, for "cpu" (None: the total) and "cpuN".
fn cpu_slot(name: &str) -> Option<Option<usize>> {
    let index = name.strip_prefix("cpu")?;
    if index.is_empty() {
        return Some(None);
    }
    index.parse().ok().map(Some)
}

/// parse_proc_stat on `full[start..end]` against the lines in the window: a cpu line
/// whole in it gives its columns; one that `end` cuts gives each column at most its
/// whole value (missing ones 0), once its name and one column digit arrived; one that
/// `start` cuts gives nothing, since no line has "cpu" but at its start (checked).
fn check_proc_stat_window(full: &str, start: usize, end: usize) {
    for line in full.lines() {
        assert!(
            !line.get(1..).unwrap_or_default().contains("cpu"),
            "{line:?}: a cut could make a cpu line"
        );
    }
    let (_, full_total, full_cpus) = proc_stat_of(full.as_bytes());
    let (found, total, cpus) = proc_stat_of(&full.as_bytes()[start..end]);
    let whole_of = |slot: Option<usize>| match slot {
        None => full_total,
        Some(i) => full_cpus[i],
    };
    let mut want: Vec<(Option<usize>, bool)> = Vec::new();
    for (ls, lc) in line_spans(full) {
        if ls < start || ls >= end {
            continue;
        }
        let seen = &full[ls..lc.min(end)];
        let Some((name, rest)) = seen.split_once(|c: char| c.is_ascii_whitespace()) else {
            continue;
        };
        let Some(slot) = cpu_slot(name) else {
            continue;
        };
        if rest.split_ascii_whitespace().next().is_some() {
            want.retain(|(s, _)| *s != slot);
            want.push((slot, lc <= end));
        }
    }
    let what = format!("{:?}", &full[start..end]);
    assert_eq!(found, !want.is_empty(), "{what}");
    let check = |got: &CpuTimes, slot: Option<usize>, whole: bool| {
        let all = whole_of(slot);
        if whole {
            assert_eq!(*got, all, "{what}");
        } else {
            for (g, a) in columns(got).iter().zip(columns(&all)) {
                assert!(*g <= a, "{what}: {got:?} above {all:?}");
            }
        }
    };
    match want.iter().find(|(s, _)| s.is_none()) {
        Some(&(slot, whole)) => check(&total, slot, whole),
        None => assert_eq!(total, UNTOUCHED, "{what}"),
    }
    let highest = want.iter().filter_map(|(s, _)| *s).max();
    assert_eq!(cpus.len(), highest.map_or(0, |h| h + 1), "{what}");
    for (i, got) in cpus.iter().enumerate() {
        match want.iter().find(|(s, _)| *s == Some(i)) {
            Some(&(slot, whole)) => check(got, slot, whole),
            None => assert_eq!(*got, CpuTimes::default(), "{what}: an absent CPU"),
        }
    }
}

/// parse_pressure on a prefix or suffix of the pressure fixture: nothing unless the
/// "some" line is there from its start up to a first digit of its total (all four
/// values are needed); its total is the digits that arrived, and the "full" line's
/// total likewise once one of its digits did.
fn want_pressure(full: &str, start: usize, end: usize) -> Option<Pressure> {
    let whole = parse_pressure(full.as_bytes())?;
    let total_after = |from: usize| {
        let line_end = full[from..].find('\n').map_or(full.len(), |i| from + i);
        let digits = from + full[from..].find("total=")? + "total=".len();
        full.get(digits..end.min(line_end))?.parse::<u64>().ok()
    };
    if start > 0 {
        return None;
    }
    let full_line = full.find("\nfull")? + 1;
    Some(Pressure {
        some_total_us: total_after(0)?,
        full_total_us: total_after(full_line),
        ..whole
    })
}

// The formats of proc(5), parsed with std: the answers the single-line parsers must give.

fn std_tokens(buf: &[u8]) -> Vec<&[u8]> {
    buf.split(u8::is_ascii_whitespace)
        .filter(|t| !t.is_empty())
        .collect()
}

/// An unsigned decimal: digits only ("+5" and "" are none).
fn std_u64(t: &[u8]) -> Option<u64> {
    let digits = !t.is_empty() && t.iter().all(u8::is_ascii_digit);
    digits.then(|| std::str::from_utf8(t).ok()?.parse().ok())?
}

fn std_u32(t: &[u8]) -> Option<u32> {
    std_u64(t).and_then(|v| u32::try_from(v).ok())
}

/// A decimal with an optional minus sign.
fn std_i64(t: &[u8]) -> Option<i64> {
    std_u64(t.strip_prefix(b"-").unwrap_or(t))?;
    std::str::from_utf8(t).ok()?.parse().ok()
}

/// "12.34": digits, then optionally '.' and digits.
fn std_decimal(t: &[u8]) -> Option<f64> {
    let s = std::str::from_utf8(t).ok()?;
    let digits = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let ok = match s.split_once('.') {
        Some((int, frac)) => digits(int) && digits(frac),
        None => digits(s),
    };
    ok.then(|| s.parse().ok())?
}

fn std_schedstat(buf: &[u8]) -> Option<Schedstat> {
    let t = std_tokens(buf);
    Some(Schedstat {
        run_ns: std_u64(t.first()?)?,
        wait_ns: std_u64(t.get(1)?)?,
        timeslices: std_u64(t.get(2)?)?,
    })
}

fn std_loadavg(buf: &[u8]) -> Option<(f64, f64, f64, u32, u32)> {
    let t = std_tokens(buf);
    let slash = t.get(3)?.iter().position(|&b| b == b'/')?;
    let (running, total) = t[3].split_at(slash);
    Some((
        std_decimal(t[0])?,
        std_decimal(t[1])?,
        std_decimal(t[2])?,
        std_u32(running)?,
        std_u32(&total[1..])?,
    ))
}

fn std_ctxt(buf: &[u8]) -> Option<u64> {
    buf.split(|&b| b == b'\n').find_map(|line| {
        let t = std_tokens(line);
        (t.first() == Some(&&b"ctxt"[..]))
            .then(|| std_u64(t.get(1)?))
            .flatten()
    })
}

/// Fields counted from 3 after the last ')' (comm may hold anything, ')' too).
fn std_stat(buf: &[u8]) -> Option<StatFile> {
    let paren = buf.iter().rposition(|&b| b == b')')?;
    let t = std_tokens(&buf[paren + 1..]);
    let field = |n: usize| t.get(n - 3).copied();
    Some(StatFile {
        state: *field(3)?.first()?,
        utime_ticks: std_u64(field(14)?)?,
        stime_ticks: std_u64(field(15)?)?,
        priority: std_i64(field(18)?)?,
        nice: i32::try_from(std_i64(field(19)?)?).ok()?,
        num_threads: std_u32(field(20)?)?,
        processor: field(39).and_then(std_u32),
        rt_priority: field(40).and_then(std_u32),
        policy: field(41).and_then(std_u32),
    })
}

/// The single-line parsers (and ctxt, which takes the first good "ctxt" line) give what
/// std makes of the same bytes.
fn check_against_std(buf: &[u8]) {
    assert_eq!(parse_schedstat(buf), std_schedstat(buf), "{buf:?}");
    assert_eq!(parse_loadavg(buf), std_loadavg(buf), "{buf:?}");
    assert_eq!(parse_proc_stat_ctxt(buf), std_ctxt(buf), "{buf:?}");
    assert_eq!(parse_stat(buf), std_stat(buf), "{buf:?}");
}

#[test]
fn every_prefix_and_suffix_reads_what_is_left_of_its_lines() {
    for fixture in ALL {
        let full = text(fixture);
        let sched = sched_fields(&parse_sched(fixture));
        let status = status_fields(&parse_status(fixture));
        let header = parse_sched_header(fixture);
        let comm = header_comm(full);
        for cut in 0..=full.len() {
            for (start, end) in [(0, cut), (cut, full.len())] {
                let buf = &fixture[start..end];
                // Described only when an assertion fails: formatting every window costs more than
                // parsing it.
                let what = || format!("{:?}", &full[start..end]);
                let want = want_window(full, start, end, &sched);
                assert!(
                    sched_matches(&parse_sched(buf), &want),
                    "{}: {want:?}",
                    what()
                );
                let want = want_window(full, start, end, &status);
                assert!(
                    status_matches(&parse_status(buf), &want),
                    "{}: {want:?}",
                    what()
                );
                check_proc_stat_window(full, start, end);
                check_against_std(buf);
                // The header needs its whole line but may lose the start of comm.
                let want_header = header.and_then(|(_, pid, threads)| {
                    let line_end = full.find('\n').unwrap_or(full.len());
                    (start <= comm.len() && end >= line_end).then(|| (&comm[start..], pid, threads))
                });
                assert_eq!(parse_sched_header(buf), want_header, "{}", what());
                let want_pressure = if fixture == PRESSURE {
                    want_pressure(full, start, end)
                } else {
                    None
                };
                assert_eq!(parse_pressure(buf), want_pressure, "{}", what());
            }
        }
    }
}

#[test]
fn a_damaged_byte_spoils_at_most_its_own_line() {
    let mut state = 0x2545_f491_4f6c_dd1d;
    for round in 0..4000 {
        let fixture = ALL[round % ALL.len()];
        let full = text(fixture);
        let at = (xorshift(&mut state) as usize) % fixture.len();
        let mut buf = fixture.to_vec();
        buf[at] = xorshift(&mut state) as u8;
        let what = || format!("{at}: {:?}", String::from_utf8_lossy(&buf));
        let want = want_mutated(full, at, &sched_fields(&parse_sched(fixture)));
        assert!(
            sched_matches(&parse_sched(&buf), &want),
            "{}: {want:?}",
            what()
        );
        let want = want_mutated(full, at, &status_fields(&parse_status(fixture)));
        assert!(
            status_matches(&parse_status(&buf), &want),
            "{}: {want:?}",
            what()
        );
        check_against_std(&buf);
        // A cpu line keeps its values unless it or a cpu line after it (a damaged "cpu1"
        // can read as "cpu0" and, coming later, win) was hit.
        let spans = line_spans(full);
        let touched = touched_lines(full, at);
        let cpu_line = |i: usize| full[spans[i].0..spans[i].1].starts_with("cpu");
        let last_hit_cpu = touched.iter().copied().filter(|&i| cpu_line(i)).max();
        let (_, full_total, full_cpus) = proc_stat_of(fixture);
        let (found, total, cpus) = proc_stat_of(&buf);
        for (i, &(ls, lc)) in spans.iter().enumerate() {
            let line = &full[ls..lc];
            let Some(slot) = line.split_whitespace().next().and_then(cpu_slot) else {
                continue;
            };
            if touched.contains(&i) || last_hit_cpu.is_some_and(|h| h > i) {
                continue;
            }
            assert!(found, "{}", what());
            match slot {
                None => assert_eq!(total, full_total, "{}", what()),
                Some(c) => assert_eq!(cpus.get(c), Some(&full_cpus[c]), "{}", what()),
            }
        }
    }
}

#[test]
fn random_bytes_give_only_what_they_spell() {
    let mut state = 0x9e37_79b9_7f4a_7c15;
    let mut buf = Vec::new();
    // A field can only come from a line whose text before its first ':' is the field's
    // key; a header only from a ", #threads: "; cpu times only from a "cpu" line;
    // pressure only from a "some" line.
    let keyed = |buf: &[u8], key: &str| {
        buf.split(|&b| b == b'\n').any(|line| {
            line.iter()
                .position(|&b| b == b':')
                .is_some_and(|c| line[..c].trim_ascii() == key.as_bytes())
        })
    };
    for _ in 0..4000 {
        buf.clear();
        let len = (xorshift(&mut state) % 300) as usize;
        for _ in 0..len {
            let r = xorshift(&mut state);
            // Mostly bytes that matter to the parsers, so that deep paths are reached.
            let byte = match r % 4 {
                0 => (r >> 8) as u8,
                1 => b"0123456789"[(r >> 8) as usize % 10],
                2 => b" \n:()-.,/=\t#"[(r >> 8) as usize % 12],
                _ => b"cpusomefullctxtprioseNR"[(r >> 8) as usize % 23],
            };
            buf.push(byte);
        }
        let what = format!("{:?}", String::from_utf8_lossy(&buf));
        check_against_std(&buf);
        for (key, v) in sched_fields(&parse_sched(&buf)) {
            assert!(v.is_none() || keyed(&buf, key), "{key} from {what}");
        }
        let status = parse_status(&buf);
        for (key, v) in status_fields(&status).into_iter().take(4) {
            assert!(v.is_none() || keyed(&buf, key), "{key} from {what}");
        }
        assert!(
            status.cpus_allowed.is_none()
                || keyed(&buf, "Cpus_allowed_list")
                || keyed(&buf, "Cpus_allowed"),
            "{what}"
        );
        // (A pid may have leading zeros, so only the fixed words are looked for.)
        if parse_sched_header(&buf).is_some() {
            let words = b", #threads: ";
            assert!(buf.windows(words.len()).any(|w| w == words), "{what}");
        }
        let (found, _, _) = proc_stat_of(&buf);
        let starts = |word: &[u8]| buf.split(|&b| b == b'\n').any(|l| l.starts_with(word));
        assert!(!found || starts(b"cpu"), "{what}");
        assert!(parse_pressure(&buf).is_none() || starts(b"some"), "{what}");
    }
}

#[test]
fn extreme_buffers() {
    let none = |buf: &[u8]| {
        assert_eq!(parse_sched(buf), SchedFile::default());
        assert_eq!(parse_sched_header(buf), None);
        assert_eq!(parse_status(buf), StatusFile::default());
        assert!(!proc_stat_of(buf).0);
        assert_eq!(parse_pressure(buf), None);
        check_against_std(buf);
        assert_eq!(parse_schedstat(buf), None);
        assert_eq!(parse_loadavg(buf), None);
        assert_eq!(parse_stat(buf), None);
    };
    none(&[0xff; 4096]);
    // One 4096-digit number overflows every integer; a comm of ')' leaves no fields.
    none(&[b'9'; 4096]);
    none(&[b')'; 100]);
    // The highest cpu index taken, and the first one refused.
    let (found, _, cpus) = proc_stat_of(b"cpu16383 1\n");
    assert!(found);
    assert_eq!(cpus.len(), MAX_PROC_STAT_CPUS);
    assert_eq!(cpus[16383].user, 1);
    assert_eq!(cpus[0], CpuTimes::default());
    let (found, _, cpus) = proc_stat_of(b"cpu16384 1\n");
    assert!(!found && cpus.is_empty());
}
