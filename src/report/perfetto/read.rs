//! Reading a written trace back (protobuf's wire format, then the few messages the
//! export writes): what the tests check a timeline file against.

use std::collections::{BTreeMap, BTreeSet};

use crate::trace::{WakeRecord, WakeupOnce};

/// What a trace file holds, as the Perfetto UI would read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contents {
    /// sched_switch records.
    pub switches: u64,
    /// sched_switch records by next_pid (switches in).
    pub switches_in: BTreeMap<i32, u64>,
    /// Wake-ups, one each however many records hold one (a sched_waking and the
    /// sched_wakeup after it are one, [`WakeupOnce`]), counted in time order. The writer
    /// counts in the tracer's order, which is the same but for events it released late
    /// (its `late` count): a sched_waking that came after its own sched_wakeup.
    pub wakeups: u64,
    /// sched_wakeup records (not sched_waking) by the woken pid.
    pub wakeups_of: BTreeMap<i32, u64>,
    /// The CPUs with ftrace bundles.
    pub cpus: BTreeSet<u32>,
    /// The process tree's threads: tid -> name.
    pub threads: BTreeMap<i32, String>,
    /// Track names, then instant event names, in file order.
    pub tracks: Vec<String>,
    pub instants: Vec<String>,
}

/// Why the bytes are not a trace as schedlab writes one.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct Malformed(pub String);

impl From<&str> for Malformed {
    fn from(why: &str) -> Self {
        Malformed(why.to_string())
    }
}

impl From<String> for Malformed {
    fn from(why: String) -> Self {
        Malformed(why)
    }
}

/// Read `b`, a Trace; an error names what is malformed.
pub fn read(b: &[u8]) -> Result<Contents, Malformed> {
    let mut c = Contents::default();
    // The switches and wake records with their times: bundles are per CPU, so the file's
    // order is not the events'.
    let mut timed = Vec::new();
    for (n, packet) in fields(b)? {
        if n != 1 {
            return Err(format!("Trace field {n}, not packet (1)").into());
        }
        let packet = fields(bytes(packet)?)?;
        for (n, v) in &packet {
            match n {
                1 => bundle(bytes(*v)?, &mut c, &mut timed)?,
                2 => tree(bytes(*v)?, &mut c)?,
                60 => c.tracks.push(text(&fields(bytes(*v)?)?, 2)?),
                11 => c.instants.push(text(&fields(bytes(*v)?)?, 23)?),
                _ => {}
            }
        }
    }
    timed.sort_by_key(|&(t, _)| t);
    let mut once = WakeupOnce::default();
    c.wakeups = timed.iter().filter(|&&(_, r)| once.record(r)).count() as u64;
    Ok(c)
}

type Value<'a> = Result<u64, &'a [u8]>;

fn bundle(b: &[u8], c: &mut Contents, timed: &mut Vec<(u64, WakeRecord)>) -> Result<(), Malformed> {
    let f = fields(b)?;
    let cpu = get(&f, 1).ok_or("a bundle without cpu")?;
    c.cpus
        .insert(u32::try_from(varint(cpu)?).map_err(|e| e.to_string())?);
    for (_, ev) in f.iter().filter(|(n, _)| *n == 2) {
        let ev = fields(bytes(*ev)?)?;
        let t = varint(get(&ev, 1).ok_or("an event without timestamp")?)?;
        if let Some(s) = get(&ev, 4) {
            c.switches += 1;
            let next_pid = pid_field(s, 6, "next_pid")?;
            *c.switches_in.entry(next_pid).or_default() += 1;
            timed.push((t, WakeRecord::SwitchIn(next_pid)));
        }
        if let Some(w) = get(&ev, 20) {
            timed.push((t, WakeRecord::Waking(pid_field(w, 2, "pid")?)));
        }
        if let Some(w) = get(&ev, 17) {
            let pid = pid_field(w, 2, "pid")?;
            *c.wakeups_of.entry(pid).or_default() += 1;
            timed.push((t, WakeRecord::Wakeup(pid)));
        }
    }
    Ok(())
}

/// Field `n` of message `m`, a pid.
fn pid_field(m: Value<'_>, n: u32, what: &str) -> Result<i32, Malformed> {
    let f = fields(bytes(m)?)?;
    Ok(varint(get(&f, n).ok_or_else(|| format!("no {what}"))?)? as i32)
}

fn tree(b: &[u8], c: &mut Contents) -> Result<(), Malformed> {
    for (_, th) in fields(b)?.iter().filter(|(n, _)| *n == 2) {
        let th = fields(bytes(*th)?)?;
        let tid = varint(get(&th, 1).ok_or("a thread without tid")?)? as i32;
        c.threads.insert(tid, text(&th, 2)?);
    }
    Ok(())
}

fn get<'a>(f: &[(u32, Value<'a>)], n: u32) -> Option<Value<'a>> {
    f.iter().find(|(k, _)| *k == n).map(|(_, v)| *v)
}

fn varint(v: Value<'_>) -> Result<u64, Malformed> {
    v.map_err(|_| "bytes where a varint belongs".into())
}

fn bytes(v: Value<'_>) -> Result<&[u8], Malformed> {
    match v {
        Ok(_) => Err("a varint where bytes belong".into()),
        Err(b) => Ok(b),
    }
}

fn text(f: &[(u32, Value<'_>)], n: u32) -> Result<String, Malformed> {
    let b = bytes(get(f, n).ok_or(format!("no string field {n}"))?)?;
    String::from_utf8(b.to_vec()).map_err(|e| e.to_string().into())
}

/// (field number, varint or bytes) for each field of the message `b`.
fn fields(mut b: &[u8]) -> Result<Vec<(u32, Value<'_>)>, Malformed> {
    let mut out = Vec::new();
    while !b.is_empty() {
        let key = take_varint(&mut b)?;
        let n = u32::try_from(key >> 3).map_err(|e| e.to_string())?;
        match key & 7 {
            0 => out.push((n, Ok(take_varint(&mut b)?))),
            2 => {
                let len = usize::try_from(take_varint(&mut b)?).map_err(|e| e.to_string())?;
                let (v, rest) = b.split_at_checked(len).ok_or("a field past the end")?;
                out.push((n, Err(v)));
                b = rest;
            }
            w => {
                return Err(Malformed(format!(
                    "wire type {w} (field {n}): not written by schedlab"
                )));
            }
        }
    }
    Ok(out)
}

fn take_varint(b: &mut &[u8]) -> Result<u64, Malformed> {
    let mut v = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = b.split_first().ok_or("a varint past the end")?;
        *b = rest;
        v |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(v);
        }
    }
    Err("a varint over ten bytes".into())
}
