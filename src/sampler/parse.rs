//! Allocation-free, panic-free parsers for the procfs files the sampler reads every tick.

use crate::cpuset::CpuSet;

/// Fields of /proc/PID/task/TID/sched. Times in ns: the file prints ms with 6 decimals
/// ("1022.815609" -> 1_022_815_609 ns), parsed exactly with integer arithmetic.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SchedFile {
    /// se.sum_exec_runtime
    pub sum_exec_runtime_ns: Option<u64>,
    pub nr_switches: Option<u64>,
    pub nr_voluntary_switches: Option<u64>,
    pub nr_involuntary_switches: Option<u64>,
    /// se.nr_migrations (absent on 2.6.29)
    pub nr_migrations: Option<u64>,
    pub policy: Option<u32>,
    /// Kernel prio: 120 = nice 0; RT: 99 - rt_priority; deadline: -1.
    pub prio: Option<i32>,
    /// se.slice, EEVDF only.
    pub slice_ns: Option<u64>,
    /// se.load.weight
    pub load_weight: Option<u64>,
}

/// Parses /proc/PID/task/TID/sched. Never fails; missing or unparsable fields are None.
///
/// Lines before the header's end are skipped: the kernel prints comm raw, so a task could
/// name itself "\nse.slice:1\n" to forge fields. A later duplicate key wins.
pub fn parse_sched(buf: &[u8]) -> SchedFile {
    let body = match find_sched_header(buf) {
        Some(h) => buf.get(h.end..).unwrap_or_default(),
        None => buf,
    };
    let mut out = SchedFile::default();
    for line in lines(body) {
        let Some((key, value)) = split_key_value(line) else {
            continue;
        };
        match key {
            b"se.sum_exec_runtime" => out.sum_exec_runtime_ns = parse_ms_as_ns(value),
            b"nr_switches" => out.nr_switches = parse_u64(value),
            b"nr_voluntary_switches" => out.nr_voluntary_switches = parse_u64(value),
            b"nr_involuntary_switches" => out.nr_involuntary_switches = parse_u64(value),
            b"se.nr_migrations" => out.nr_migrations = parse_u64(value),
            b"policy" => out.policy = parse_u32(value),
            b"prio" => out.prio = parse_i64(value).and_then(|v| i32::try_from(v).ok()),
            b"se.slice" => out.slice_ns = parse_u64(value),
            b"se.load.weight" => out.load_weight = parse_u64(value),
            _ => {}
        }
    }
    out
}

/// Returns (comm, pid, threads) from the header line "sh (8642, #threads: 1)" — comm may
/// contain spaces and parens, so the split is at the last " (". None if there is no
/// header or comm is not UTF-8 (the kernel does not guarantee it is).
pub fn parse_sched_header(buf: &[u8]) -> Option<(&str, u32, u32)> {
    let header = find_sched_header(buf)?;
    let comm = std::str::from_utf8(buf.get(..header.comm_len)?).ok()?;
    Some((comm, header.pid, header.threads))
}

struct SchedHeader {
    comm_len: usize,
    pid: u32,
    threads: u32,
    /// Offset just past the header line.
    end: usize,
}

/// Longest comm accepted in a sched header. The kernel's is at most 15 bytes; the slack
/// allows for longer names in future kernels while a header-like line deep inside a
/// file still does not count as the header.
const MAX_SCHED_COMM: usize = 64;

/// Finds the first line ending in " (PID, #threads: N)" whose comm starts the file. comm
/// can hold newlines, so the header may span lines, but comm is at most 15 bytes and that
/// suffix is longer, so the first such line is the real header.
fn find_sched_header(buf: &[u8]) -> Option<SchedHeader> {
    let mut start = 0;
    for line in lines(buf) {
        if start > MAX_SCHED_COMM {
            return None;
        }
        if let Some((comm_len, pid, threads)) = split_header_line(line) {
            if start + comm_len > MAX_SCHED_COMM {
                return None;
            }
            return Some(SchedHeader {
                comm_len: start + comm_len,
                pid,
                threads,
                end: (start + line.len() + 1).min(buf.len()),
            });
        }
        start += line.len() + 1;
    }
    None
}

/// Reads " (PID, #threads: N)" backwards from the end of `line`; returns comm's length.
fn split_header_line(line: &[u8]) -> Option<(usize, u32, u32)> {
    let rest = line.strip_suffix(b")")?;
    let (rest, threads) = take_trailing_u32(rest)?;
    let rest = rest.strip_suffix(b", #threads: ")?;
    let (rest, pid) = take_trailing_u32(rest)?;
    let comm = rest.strip_suffix(b" (")?;
    Some((comm.len(), pid, threads))
}

fn take_trailing_u32(s: &[u8]) -> Option<(&[u8], u32)> {
    let digits = s.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    let split = s.len() - digits;
    Some((&s[..split], parse_u32(&s[split..])?))
}

/// /proc/.../schedstat: "run_ns wait_ns timeslices".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Schedstat {
    pub run_ns: u64,
    pub wait_ns: u64,
    pub timeslices: u64,
}

/// None unless the first three fields are numbers. "0 0 0" (CONFIG_SCHED_INFO off) parses
/// as zeroes; telling that apart from a task that never ran is the caller's business.
pub fn parse_schedstat(buf: &[u8]) -> Option<Schedstat> {
    let mut fields = tokens(buf);
    Some(Schedstat {
        run_ns: parse_u64(fields.next()?)?,
        wait_ns: parse_u64(fields.next()?)?,
        timeslices: parse_u64(fields.next()?)?,
    })
}

/// /proc/.../stat. comm is in parens and may contain spaces and ')' — split at the LAST ')'.
/// Field numbers as in proc(5) (1-based): 3 state, 14 utime, 15 stime, 18 priority,
/// 19 nice, 20 num_threads, 39 processor, 40 rt_priority, 41 policy.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StatFile {
    pub state: u8,
    pub utime_ticks: u64,
    pub stime_ticks: u64,
    pub priority: i64,
    pub nice: i32,
    pub num_threads: u32,
    pub processor: Option<u32>,
    pub rt_priority: Option<u32>,
    pub policy: Option<u32>,
}

/// None if any of fields 3..=20 that we use is missing or malformed; 39-41 are Option
/// because old kernels do not print them.
pub fn parse_stat(buf: &[u8]) -> Option<StatFile> {
    let paren = buf.iter().rposition(|&b| b == b')')?;
    let rest = buf.get(paren + 1..)?;
    let mut state = None;
    let mut utime = None;
    let mut stime = None;
    let mut priority = None;
    let mut nice = None;
    let mut num_threads = None;
    let mut out = StatFile::default();
    // Field 3 is the first token after the comm.
    for (field, token) in (3usize..).zip(tokens(rest)) {
        match field {
            3 => state = token.first().copied(),
            14 => utime = parse_u64(token),
            15 => stime = parse_u64(token),
            18 => priority = parse_i64(token),
            19 => nice = parse_i64(token).and_then(|v| i32::try_from(v).ok()),
            20 => num_threads = parse_u32(token),
            39 => out.processor = parse_u32(token),
            40 => out.rt_priority = parse_u32(token),
            41 => {
                out.policy = parse_u32(token);
                break;
            }
            _ => {}
        }
    }
    out.state = state?;
    out.utime_ticks = utime?;
    out.stime_ticks = stime?;
    out.priority = priority?;
    out.nice = nice?;
    out.num_threads = num_threads?;
    Some(out)
}

/// /proc/.../status (only the fields we need).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StatusFile {
    pub voluntary_ctxt_switches: Option<u64>,
    pub nonvoluntary_ctxt_switches: Option<u64>,
    pub cpus_allowed: Option<CpuSet>,
    pub threads: Option<u32>,
    /// The letter of "State:", e.g. b'R'.
    pub state: Option<u8>,
}

/// Prefers Cpus_allowed_list and falls back to the Cpus_allowed hex mask when the list is
/// missing or does not parse.
pub fn parse_status(buf: &[u8]) -> StatusFile {
    let mut out = StatusFile::default();
    let mut list = None;
    let mut mask = None;
    for line in lines(buf) {
        let Some((key, value)) = split_key_value(line) else {
            continue;
        };
        match key {
            b"voluntary_ctxt_switches" => out.voluntary_ctxt_switches = parse_u64(value),
            b"nonvoluntary_ctxt_switches" => out.nonvoluntary_ctxt_switches = parse_u64(value),
            b"Threads" => out.threads = parse_u32(value),
            b"State" => out.state = value.first().copied().filter(|b| b.is_ascii_alphabetic()),
            b"Cpus_allowed_list" => list = Some(value),
            b"Cpus_allowed" => mask = Some(value),
            _ => {}
        }
    }
    let from_list = list
        .and_then(|v| std::str::from_utf8(v).ok())
        .and_then(|s| CpuSet::parse_list(s).ok());
    out.cpus_allowed = from_list.or_else(|| {
        mask.and_then(|v| std::str::from_utf8(v).ok())
            .and_then(|s| CpuSet::parse_hex_mask(s).ok())
    });
    out
}

/// One CPU's line of /proc/stat, in USER_HZ ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CpuTimes {
    pub user: u64,
    pub nice: u64,
    pub system: u64,
    pub idle: u64,
    pub iowait: u64,
    pub irq: u64,
    pub softirq: u64,
    pub steal: u64,
    pub guest: u64,
    pub guest_nice: u64,
}

impl CpuTimes {
    /// user+nice+system+irq+softirq (guest is already inside user; steal and idle/iowait
    /// are not busy). Saturates rather than overflowing on garbage input.
    pub fn busy(&self) -> u64 {
        self.user
            .saturating_add(self.nice)
            .saturating_add(self.system)
            .saturating_add(self.irq)
            .saturating_add(self.softirq)
    }

    /// busy + idle + iowait + steal.
    pub fn total(&self) -> u64 {
        self.busy()
            .saturating_add(self.idle)
            .saturating_add(self.iowait)
            .saturating_add(self.steal)
    }

    /// Fills the columns in kernel order; None if a column is not a number or there are none.
    fn from_columns(columns: &[u8]) -> Option<CpuTimes> {
        let mut out = CpuTimes::default();
        let mut seen = 0;
        {
            let mut slots = [
                &mut out.user,
                &mut out.nice,
                &mut out.system,
                &mut out.idle,
                &mut out.iowait,
                &mut out.irq,
                &mut out.softirq,
                &mut out.steal,
                &mut out.guest,
                &mut out.guest_nice,
            ];
            // Columns past guest_nice (a future kernel's) are ignored.
            for (slot, token) in slots.iter_mut().zip(tokens(columns)) {
                **slot = parse_u64(token)?;
                seen += 1;
            }
        }
        (seen > 0).then_some(out)
    }
}

/// Highest "cpuN" index accepted, so that a garbage "cpu4000000000" line cannot make us
/// allocate gigabytes; no kernel supports more CPUs than this.
const MAX_PROC_STAT_CPUS: usize = 16384;

/// Parses the aggregate "cpu " line into `total` and each "cpuN" line into out[N] (out is
/// cleared then resized to the highest N+1, reusing its capacity; missing trailing columns
/// are 0; CPUs absent in the file (offline) stay Default). Malformed cpu lines are
/// skipped. Returns false if no cpu line was found.
pub fn parse_proc_stat(buf: &[u8], total: &mut CpuTimes, out: &mut Vec<CpuTimes>) -> bool {
    out.clear();
    let mut found = false;
    for line in lines(buf) {
        let Some(rest) = line.strip_prefix(b"cpu") else {
            continue;
        };
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let (index, columns) = rest.split_at(digits);
        if !columns.first().is_some_and(|&b| b == b' ' || b == b'\t') {
            continue;
        }
        let Some(times) = CpuTimes::from_columns(columns) else {
            continue;
        };
        if digits == 0 {
            *total = times;
        } else {
            let Some(cpu) = parse_u64(index)
                .and_then(|n| usize::try_from(n).ok())
                .filter(|&n| n < MAX_PROC_STAT_CPUS)
            else {
                continue;
            };
            if out.len() <= cpu {
                out.resize(cpu + 1, CpuTimes::default());
            }
            out[cpu] = times;
        }
        found = true;
    }
    found
}

/// The context switch counter "ctxt N" of /proc/stat.
pub fn parse_proc_stat_ctxt(buf: &[u8]) -> Option<u64> {
    lines(buf).find_map(|line| {
        let mut fields = tokens(line);
        if fields.next()? != b"ctxt" {
            return None;
        }
        parse_u64(fields.next()?)
    })
}

/// /proc/pressure/cpu.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Pressure {
    pub some_avg10: f64,
    pub some_avg60: f64,
    pub some_avg300: f64,
    pub some_total_us: u64,
    /// The "full" line exists for cpu only since Linux 5.13.
    pub full_total_us: Option<u64>,
}

/// None unless the "some" line has avg10, avg60, avg300 and total.
pub fn parse_pressure(buf: &[u8]) -> Option<Pressure> {
    let mut some = None;
    let mut full_total = None;
    for line in lines(buf) {
        let mut fields = tokens(line);
        let kind = fields.next();
        let (mut avg10, mut avg60, mut avg300, mut total) = (None, None, None, None);
        for field in fields {
            let Some(eq) = field.iter().position(|&b| b == b'=') else {
                continue;
            };
            let (key, value) = (&field[..eq], &field[eq + 1..]);
            match key {
                b"avg10" => avg10 = parse_decimal(value),
                b"avg60" => avg60 = parse_decimal(value),
                b"avg300" => avg300 = parse_decimal(value),
                b"total" => total = parse_u64(value),
                _ => {}
            }
        }
        match kind {
            Some(b"some") => {
                some = Some(Pressure {
                    some_avg10: avg10?,
                    some_avg60: avg60?,
                    some_avg300: avg300?,
                    some_total_us: total?,
                    full_total_us: None,
                })
            }
            Some(b"full") => full_total = total,
            _ => {}
        }
    }
    some.map(|p| Pressure {
        full_total_us: full_total,
        ..p
    })
}

/// /proc/loadavg: (avg1, avg5, avg15, running, total)
pub fn parse_loadavg(buf: &[u8]) -> Option<(f64, f64, f64, u32, u32)> {
    let mut fields = tokens(buf);
    let avg1 = parse_decimal(fields.next()?)?;
    let avg5 = parse_decimal(fields.next()?)?;
    let avg15 = parse_decimal(fields.next()?)?;
    let tasks = fields.next()?;
    let slash = tasks.iter().position(|&b| b == b'/')?;
    let running = parse_u32(&tasks[..slash])?;
    let total = parse_u32(&tasks[slash + 1..])?;
    Some((avg1, avg5, avg15, running, total))
}

/// 100..=139 -> prio-120, else None (RT and deadline tasks have no nice).
pub fn nice_from_prio(prio: i32) -> Option<i32> {
    (100..=139).contains(&prio).then(|| prio - 120)
}

/// Short lower-case name of a scheduling policy number: the knob path's names (one
/// table), and sched_ext's, which schedlab reads but never sets.
pub fn policy_name(policy: u32) -> &'static str {
    const SCHED_EXT: u32 = 7;
    match crate::knob::task::Policy::from_kernel(policy) {
        Some(p) => p.name(),
        None if policy == SCHED_EXT => "ext",
        None => "unknown",
    }
}

/// Lines split at '\n', like `split`, but searching eight bytes at a time: the line scan
/// is most of the cost of the key-value files.
fn lines(buf: &[u8]) -> Lines<'_> {
    Lines { rest: Some(buf) }
}

struct Lines<'a> {
    rest: Option<&'a [u8]>,
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a [u8];

    fn next(&mut self) -> Option<&'a [u8]> {
        let rest = self.rest?;
        match find_byte(rest, b'\n') {
            Some(i) => {
                self.rest = rest.get(i + 1..);
                rest.get(..i)
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}

/// Index of the first `needle` in `hay`, checking a u64 at a time (no memchr dependency).
fn find_byte(hay: &[u8], needle: u8) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = LO * u64::from(needle);
    let mut chunks = hay.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let word = u64::from_le_bytes(chunk.try_into().ok()?);
        let x = word ^ pattern;
        // Nonzero iff some byte of x is zero; the lowest flagged byte is always a real
        // match (false positives only appear above it), and little-endian order makes
        // the lowest byte the first in memory.
        let found = x.wrapping_sub(LO) & !x & HI;
        if found != 0 {
            return Some(offset + (found.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    let tail = chunks.remainder();
    tail.iter().position(|&b| b == needle).map(|i| offset + i)
}

/// Whitespace-separated tokens, skipping runs of separators.
fn tokens(buf: &[u8]) -> impl Iterator<Item = &[u8]> {
    buf.split(|b| b.is_ascii_whitespace())
        .filter(|t| !t.is_empty())
}

/// "key : value" split at the first ':', both sides trimmed.
fn split_key_value(line: &[u8]) -> Option<(&[u8], &[u8])> {
    let colon = find_byte(line, b':')?;
    Some((trim(&line[..colon]), trim(&line[colon + 1..])))
}

/// `trim_ascii`, but skipping spaces eight at a time: sched pads every line to align its
/// columns, and byte-wise trimming of that padding was half the cost of parse_sched.
fn trim(s: &[u8]) -> &[u8] {
    const SPACES: u64 = 0x2020_2020_2020_2020;
    let mut start = 0;
    for chunk in s.chunks_exact(8) {
        let x = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8])) ^ SPACES;
        if x != 0 {
            start += (x.trailing_zeros() / 8) as usize;
            break;
        }
        start += 8;
    }
    let rest = s.get(start..).unwrap_or_default();
    let mut end = rest.len();
    for chunk in rest.rchunks_exact(8) {
        let x = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8])) ^ SPACES;
        if x != 0 {
            end -= (x.leading_zeros() / 8) as usize;
            break;
        }
        end -= 8;
    }
    rest.get(..end).unwrap_or_default().trim_ascii()
}

/// Plain unsigned decimal; None on empty input, any non-digit, or overflow.
fn parse_u64(s: &[u8]) -> Option<u64> {
    if s.is_empty() {
        return None;
    }
    let mut n: u64 = 0;
    for &b in s {
        if !b.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(u64::from(b - b'0'))?;
    }
    Some(n)
}

fn parse_u32(s: &[u8]) -> Option<u32> {
    parse_u64(s).and_then(|n| u32::try_from(n).ok())
}

fn parse_i64(s: &[u8]) -> Option<i64> {
    match s.split_first() {
        Some((b'-', digits)) => {
            let magnitude = parse_u64(digits)?;
            0i64.checked_sub_unsigned(magnitude)
        }
        _ => parse_u64(s).and_then(|n| i64::try_from(n).ok()),
    }
}

/// The kernel's "%lld.%06ld" milliseconds as nanoseconds, exactly. Fewer fraction digits
/// are padded; digits past the sixth (below a nanosecond) are dropped. Negative -> None.
fn parse_ms_as_ns(s: &[u8]) -> Option<u64> {
    let (int, frac) = match s.iter().position(|&b| b == b'.') {
        Some(dot) => (&s[..dot], &s[dot + 1..]),
        None => (s, &b""[..]),
    };
    let ms = parse_u64(int)?;
    if s.len() > int.len() && frac.is_empty() {
        return None;
    }
    let mut ns_part: u64 = 0;
    for i in 0..6 {
        let digit = match frac.get(i) {
            Some(&b) if b.is_ascii_digit() => u64::from(b - b'0'),
            Some(_) => return None,
            None => 0,
        };
        ns_part = ns_part * 10 + digit;
    }
    if !frac.iter().skip(6).all(|b| b.is_ascii_digit()) {
        return None;
    }
    ms.checked_mul(1_000_000)?.checked_add(ns_part)
}

/// "12.34"-style non-negative decimal. The charset is checked first because str::parse
/// would also take "inf", "NaN" and exponents.
fn parse_decimal(s: &[u8]) -> Option<f64> {
    let int_digits = s.iter().take_while(|b| b.is_ascii_digit()).count();
    let frac = &s[int_digits..];
    let valid = int_digits > 0
        && (frac.is_empty()
            || (frac.len() > 1 && frac[0] == b'.' && frac[1..].iter().all(|b| b.is_ascii_digit())));
    if !valid {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCHED: &[u8] = include_bytes!("../../assets/fixtures/linux-6.18/task-sched");
    const SCHED_OLD: &[u8] = include_bytes!("../../assets/fixtures/linux-2.6.29/task-sched");
    const SCHEDSTAT: &[u8] = include_bytes!("../../assets/fixtures/linux-6.18/task-schedstat");
    const STAT: &[u8] = include_bytes!("../../assets/fixtures/linux-6.18/task-stat");
    const STATUS: &[u8] = include_bytes!("../../assets/fixtures/linux-6.18/task-status");
    const PROC_STAT: &[u8] = include_bytes!("../../assets/fixtures/linux-6.18/proc-stat");
    const PRESSURE: &[u8] = include_bytes!("../../assets/fixtures/linux-6.18/pressure-cpu");
    const LOADAVG: &[u8] = include_bytes!("../../assets/fixtures/linux-6.18/loadavg");

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

    fn run_all_parsers(buf: &[u8]) {
        let _ = parse_sched(buf);
        let _ = parse_sched_header(buf);
        let _ = parse_schedstat(buf);
        let _ = parse_stat(buf);
        let _ = parse_status(buf);
        let mut total = CpuTimes::default();
        let mut cpus = Vec::new();
        let _ = parse_proc_stat(buf, &mut total, &mut cpus);
        let _ = parse_proc_stat_ctxt(buf);
        let _ = parse_pressure(buf);
        let _ = parse_loadavg(buf);
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
        let names: Vec<_> = (0..9).map(policy_name).collect();
        assert_eq!(
            names,
            ["other", "fifo", "rr", "batch", "unknown", "idle", "deadline", "ext", "unknown"]
        );
        assert_eq!(policy_name(u32::MAX), "unknown");
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

    #[test]
    fn every_prefix_of_every_fixture() {
        for fixture in ALL {
            for end in 0..=fixture.len() {
                run_all_parsers(&fixture[..end]);
                run_all_parsers(&fixture[end..]);
            }
        }
    }

    #[test]
    fn garbage_does_not_panic() {
        let mut state = 0x2545_f491_4f6c_dd1d;
        let mut buf = Vec::new();
        for round in 0..2000 {
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
            run_all_parsers(&buf);
            // Fixtures with a random byte overwritten.
            let fixture = ALL[round % ALL.len()];
            let mut mutated = fixture.to_vec();
            let at = (xorshift(&mut state) as usize) % mutated.len();
            mutated[at] = xorshift(&mut state) as u8;
            run_all_parsers(&mutated);
        }
        run_all_parsers(&[0xff; 4096]);
        run_all_parsers(&[b'9'; 4096]);
        run_all_parsers(&[b')'; 100]);
        run_all_parsers(b"cpu16383 1\n");
    }
}
