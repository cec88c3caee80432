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
mod tests;
