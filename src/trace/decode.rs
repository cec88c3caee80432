//! Raw perf samples -> [`SchedEvent`]: the sample layout that ring.rs asks the kernel for
//! (TIME, CPU, RAW), and every tracepoint field read at the offset, size and signedness
//! its format file gives, never at an offset written here.

use perf_event_open_sys::bindings;

use super::format::Format;
use super::{EventKind, SchedEvent};

/// The tracepoints schedlab opens, all in the `sched` system. sched_switch comes first:
/// its perf event owns the CPU's ring and the others are redirected into it.
pub const TRACEPOINTS: [&str; 5] = [
    "sched_switch",
    "sched_waking",
    "sched_wakeup",
    "sched_wakeup_new",
    "sched_migrate_task",
];

/// The sample fields ring.rs requests. The kernel writes them in this order after the
/// record header: time (u64), cpu and a reserved word (u32 each), then the raw size
/// (u32) and the tracepoint's raw record.
pub const SAMPLE_TYPE: u64 =
    (bindings::PERF_SAMPLE_TIME | bindings::PERF_SAMPLE_CPU | bindings::PERF_SAMPLE_RAW) as u64;

/// The sample fields of the context-switch record event (see [`switch_in`]): with
/// sample_id_all, every record it writes ends in pid and tid (u32 each), time (u64),
/// cpu and a reserved word (u32 each).
pub const SWITCH_SAMPLE_TYPE: u64 =
    (bindings::PERF_SAMPLE_TID | bindings::PERF_SAMPLE_TIME | bindings::PERF_SAMPLE_CPU) as u64;

/// A PERF_RECORD_SWITCH_CPU_WIDE "in" record: `tid` was switched in on `cpu` at
/// `t_ns`, after `prev_tid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SwitchIn {
    pub t_ns: u64,
    pub cpu: u32,
    pub tid: i32,
    pub prev_tid: i32,
}

/// Decode a PERF_RECORD_SWITCH_CPU_WIDE body (after its header) when it is a switch-in;
/// None for a switch-out or a short record. Layout: next_prev_pid, next_prev_tid (u32
/// each), then the sample_id of [`SWITCH_SAMPLE_TYPE`].
pub fn switch_in(misc: u16, body: &[u8]) -> Option<SwitchIn> {
    if u32::from(misc) & bindings::PERF_RECORD_MISC_SWITCH_OUT != 0 {
        return None;
    }
    Some(SwitchIn {
        prev_tid: u32_at(body, 4)? as i32,
        tid: u32_at(body, 12)? as i32,
        t_ns: u64_at(body, 16)?,
        cpu: u32_at(body, 24)?,
    })
}

/// The length of a task name in the kernel (TASK_COMM_LEN).
const COMM_LEN: usize = 16;

/// A field the decoder reads is missing or of a type it cannot use (the message names
/// the tracepoint and the field).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unusable(pub String);

/// An integer field: where it is and how to widen it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Int {
    offset: usize,
    size: usize,
    signed: bool,
}

impl Int {
    fn of(format: &Format, name: &str) -> Result<Int, Unusable> {
        let f = format
            .field(name)
            .ok_or_else(|| Unusable(format!("{} has no field {name}", format.name)))?;
        if !matches!(f.size, 1 | 2 | 4 | 8) || f.array_len.is_some() {
            return Err(Unusable(format!(
                "{}: field {name} is {} ({} bytes), not an integer",
                format.name, f.ty, f.size
            )));
        }
        Ok(Int {
            offset: f.offset,
            size: f.size,
            signed: f.signed,
        })
    }

    /// The value, sign- or zero-extended; None if the record is too short.
    #[inline]
    fn read(&self, raw: &[u8]) -> Option<i64> {
        let o = self.offset;
        if raw.len() < o + self.size {
            return None;
        }
        // One arm per size, no intermediate buffer: this runs for every field of
        // every event, in debug builds too.
        Some(match (self.size, self.signed) {
            (1, true) => i64::from(raw[o] as i8),
            (1, false) => i64::from(raw[o]),
            (2, true) => i64::from(i16::from_ne_bytes([raw[o], raw[o + 1]])),
            (2, false) => i64::from(u16::from_ne_bytes([raw[o], raw[o + 1]])),
            (4, true) => i64::from(i32::from_ne_bytes([
                raw[o],
                raw[o + 1],
                raw[o + 2],
                raw[o + 3],
            ])),
            (4, false) => i64::from(u32::from_ne_bytes([
                raw[o],
                raw[o + 1],
                raw[o + 2],
                raw[o + 3],
            ])),
            _ => u64_at(raw, o)? as i64,
        })
    }

    #[inline]
    fn read_i32(&self, raw: &[u8]) -> Option<i32> {
        self.read(raw).map(|v| v as i32)
    }
}

/// A fixed `char name[N]` field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Comm {
    offset: usize,
    len: usize,
}

impl Comm {
    fn of(format: &Format, name: &str) -> Result<Comm, Unusable> {
        let f = format
            .field(name)
            .ok_or_else(|| Unusable(format!("{} has no field {name}", format.name)))?;
        if f.array_len.is_none() || f.size == 0 {
            return Err(Unusable(format!(
                "{}: field {name} is {}, not a fixed char array",
                format.name, f.ty
            )));
        }
        Ok(Comm {
            offset: f.offset,
            len: f.size.min(COMM_LEN),
        })
    }

    #[inline]
    fn read(&self, raw: &[u8]) -> Option<[u8; COMM_LEN]> {
        let b = raw.get(self.offset..self.offset + self.len)?;
        let mut out = [0u8; COMM_LEN];
        out[..self.len].copy_from_slice(b);
        Some(out)
    }
}

#[derive(Clone, Copy, Debug)]
struct Wake {
    id: u64,
    pid: Int,
    target_cpu: Int,
}

impl Wake {
    fn of(format: &Format) -> Result<Wake, Unusable> {
        Ok(Wake {
            id: u64::from(format.id),
            pid: Int::of(format, "pid")?,
            target_cpu: Int::of(format, "target_cpu")?,
        })
    }
}

/// The five format files, as tracefs.rs reads them.
#[derive(Clone, Debug, PartialEq)]
pub struct SchedFormats {
    pub switch: Format,
    pub waking: Format,
    pub wakeup: Format,
    pub wakeup_new: Format,
    pub migrate: Format,
}

impl SchedFormats {
    /// In the order of [`TRACEPOINTS`].
    pub fn all(&self) -> [&Format; 5] {
        [
            &self.switch,
            &self.waking,
            &self.wakeup,
            &self.wakeup_new,
            &self.migrate,
        ]
    }
}

/// Why one sample did not become an event (counted, never fatal).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Undecodable {
    /// The sample or its raw record ends before a field.
    Short,
    /// common_type names none of the five tracepoints.
    Unknown(u64),
}

/// Decodes samples using the offsets of the formats it was built from.
#[derive(Clone, Debug)]
pub struct Decoder {
    common_type: Int,
    common_pid: Int,
    switch_id: u64,
    prev_comm: Comm,
    prev_pid: Int,
    prev_state: Int,
    next_comm: Comm,
    next_pid: Int,
    waking: Wake,
    wakeup: Wake,
    wakeup_new: Wake,
    migrate_id: u64,
    migrate_pid: Int,
    orig_cpu: Int,
    dest_cpu: Int,
}

impl Decoder {
    /// Check that every field the decoder reads is there and has a usable type; the
    /// message names the tracepoint and field otherwise.
    pub fn new(f: &SchedFormats) -> Result<Decoder, Unusable> {
        let common_type = Int::of(&f.switch, "common_type")?;
        let common_pid = Int::of(&f.switch, "common_pid")?;
        // All tracepoints share struct trace_entry; the tracepoint is told apart by
        // common_type, so it must be where sched_switch says in every one of them.
        for other in f.all() {
            if Int::of(other, "common_type")? != common_type
                || Int::of(other, "common_pid")? != common_pid
            {
                return Err(Unusable(format!(
                    "{}: common fields differ from sched_switch's",
                    other.name
                )));
            }
        }
        Ok(Decoder {
            common_type,
            common_pid,
            switch_id: u64::from(f.switch.id),
            prev_comm: Comm::of(&f.switch, "prev_comm")?,
            prev_pid: Int::of(&f.switch, "prev_pid")?,
            prev_state: Int::of(&f.switch, "prev_state")?,
            next_comm: Comm::of(&f.switch, "next_comm")?,
            next_pid: Int::of(&f.switch, "next_pid")?,
            waking: Wake::of(&f.waking)?,
            wakeup: Wake::of(&f.wakeup)?,
            wakeup_new: Wake::of(&f.wakeup_new)?,
            migrate_id: u64::from(f.migrate.id),
            migrate_pid: Int::of(&f.migrate, "pid")?,
            orig_cpu: Int::of(&f.migrate, "orig_cpu")?,
            dest_cpu: Int::of(&f.migrate, "dest_cpu")?,
        })
    }

    /// Decode a PERF_RECORD_SAMPLE's body (the bytes after its 8-byte header) laid out
    /// as [`SAMPLE_TYPE`] says.
    #[inline]
    pub fn sample(&self, body: &[u8]) -> Result<SchedEvent, Undecodable> {
        let t_ns = u64_at(body, 0).ok_or(Undecodable::Short)?;
        let cpu = u32_at(body, 8).ok_or(Undecodable::Short)?;
        let raw_size = u32_at(body, 16).ok_or(Undecodable::Short)? as usize;
        let raw = body.get(20..20 + raw_size).ok_or(Undecodable::Short)?;
        let kind = self.raw(raw)?;
        Ok(SchedEvent { t_ns, cpu, kind })
    }

    /// Decode a tracepoint's raw record (starting with its common fields).
    #[inline]
    pub fn raw(&self, raw: &[u8]) -> Result<EventKind, Undecodable> {
        let short = Undecodable::Short;
        let ty = self.common_type.read(raw).ok_or(short)? as u64;
        if ty == self.switch_id {
            return Ok(EventKind::Switch {
                prev_pid: self.prev_pid.read_i32(raw).ok_or(short)?,
                prev_state: self.prev_state.read(raw).ok_or(short)?,
                next_pid: self.next_pid.read_i32(raw).ok_or(short)?,
                prev_comm: self.prev_comm.read(raw).ok_or(short)?,
                next_comm: self.next_comm.read(raw).ok_or(short)?,
            });
        }
        if ty == self.waking.id {
            return Ok(EventKind::Waking {
                pid: self.waking.pid.read_i32(raw).ok_or(short)?,
                waker: self.common_pid.read_i32(raw).ok_or(short)?,
                target_cpu: self.waking.target_cpu.read_i32(raw).ok_or(short)?,
            });
        }
        for w in [&self.wakeup, &self.wakeup_new] {
            if ty == w.id {
                return Ok(EventKind::Wakeup {
                    pid: w.pid.read_i32(raw).ok_or(short)?,
                    waker: self.common_pid.read_i32(raw).ok_or(short)?,
                    target_cpu: w.target_cpu.read_i32(raw).ok_or(short)?,
                });
            }
        }
        if ty == self.migrate_id {
            return Ok(EventKind::Migrate {
                pid: self.migrate_pid.read_i32(raw).ok_or(short)?,
                orig_cpu: self.orig_cpu.read_i32(raw).ok_or(short)?,
                dest_cpu: self.dest_cpu.read_i32(raw).ok_or(short)?,
            });
        }
        Err(Undecodable::Unknown(ty))
    }
}

#[inline]
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    if b.len() < at + 8 {
        return None;
    }
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    Some(u64::from_ne_bytes(a))
}

#[inline]
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    if b.len() < at + 4 {
        return None;
    }
    Some(u32::from_ne_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::trace::format::{parse, tests::fixture};

    pub(crate) fn fixture_formats() -> SchedFormats {
        let p = |n: &str| parse(&fixture(n)).unwrap();
        SchedFormats {
            switch: p("sched_switch"),
            waking: p("sched_waking"),
            wakeup: p("sched_wakeup"),
            wakeup_new: p("sched_wakeup_new"),
            migrate: p("sched_migrate_task"),
        }
    }

    /// A raw record for `format` with `values` written where the format puts them
    /// (integers at their size, strings as char arrays), the way the kernel fills it.
    fn raw_record(format: &Format, values: &[(&str, Value)]) -> Vec<u8> {
        let end = format
            .fields
            .iter()
            .map(|f| f.offset + f.size)
            .max()
            .unwrap();
        let mut raw = vec![0u8; end];
        let mut put = |name: &str, v: &Value| {
            let f = format.field(name).unwrap_or_else(|| panic!("{name}"));
            let dst = &mut raw[f.offset..f.offset + f.size];
            match v {
                Value::Int(i) => dst.copy_from_slice(&i.to_ne_bytes()[..f.size]),
                Value::Str(s) => dst[..s.len()].copy_from_slice(s.as_bytes()),
            }
        };
        put("common_type", &Value::Int(i64::from(format.id)));
        for (name, v) in values {
            put(name, v);
        }
        raw
    }

    enum Value {
        Int(i64),
        Str(&'static str),
    }
    use Value::{Int as I, Str as S};

    /// A sample body as the kernel writes it for SAMPLE_TYPE, raw padded to 8 bytes.
    fn sample_body(t_ns: u64, cpu: u32, raw: &[u8]) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&t_ns.to_ne_bytes());
        b.extend_from_slice(&cpu.to_ne_bytes());
        b.extend_from_slice(&0u32.to_ne_bytes());
        let padded = (4 + raw.len()).div_ceil(8) * 8 - 4;
        b.extend_from_slice(&(padded as u32).to_ne_bytes());
        b.extend_from_slice(raw);
        b.resize(20 + padded, 0);
        b
    }

    fn comm(s: &str) -> [u8; 16] {
        let mut c = [0u8; 16];
        c[..s.len()].copy_from_slice(s.as_bytes());
        c
    }

    #[test]
    fn decodes_each_tracepoint_from_fixture_offsets() {
        let f = fixture_formats();
        let d = Decoder::new(&f).unwrap();
        let raw = raw_record(
            &f.switch,
            &[
                ("common_pid", I(4242)),
                ("prev_comm", S("pinger")),
                ("prev_pid", I(4242)),
                ("prev_state", I(0x100)),
                ("next_comm", S("swapper/1")),
                ("next_pid", I(0)),
                ("next_prio", I(120)),
            ],
        );
        let body = sample_body(123_456_789, 1, &raw);
        assert_eq!(
            d.sample(&body),
            Ok(SchedEvent {
                t_ns: 123_456_789,
                cpu: 1,
                kind: EventKind::Switch {
                    prev_pid: 4242,
                    prev_state: 0x100,
                    next_pid: 0,
                    prev_comm: comm("pinger"),
                    next_comm: comm("swapper/1"),
                },
            })
        );

        let raw = raw_record(
            &f.waking,
            &[("common_pid", I(7)), ("pid", I(4243)), ("target_cpu", I(3))],
        );
        assert_eq!(
            d.raw(&raw),
            Ok(EventKind::Waking {
                pid: 4243,
                waker: 7,
                target_cpu: 3
            })
        );
        for fmt in [&f.wakeup, &f.wakeup_new] {
            let raw = raw_record(
                fmt,
                &[("common_pid", I(31)), ("pid", I(99)), ("target_cpu", I(0))],
            );
            assert_eq!(
                d.raw(&raw),
                Ok(EventKind::Wakeup {
                    pid: 99,
                    waker: 31,
                    target_cpu: 0
                }),
                "{}",
                fmt.name
            );
        }
        // sched_migrate_task's comm is a __data_loc on 6.18: pid sits at 12, not 24.
        let raw = raw_record(
            &f.migrate,
            &[
                ("pid", I(5)),
                ("orig_cpu", I(0)),
                ("dest_cpu", I(1)),
                ("prio", I(120)),
            ],
        );
        assert_eq!(
            d.raw(&raw),
            Ok(EventKind::Migrate {
                pid: 5,
                orig_cpu: 0,
                dest_cpu: 1
            })
        );
    }

    #[test]
    fn signed_fields_are_sign_extended_and_prev_state_is_64_bit() {
        let f = fixture_formats();
        let d = Decoder::new(&f).unwrap();
        let raw = raw_record(
            &f.switch,
            &[
                ("prev_pid", I(-1)),
                ("prev_state", I(0x1_0000_0001)),
                ("next_pid", I(i64::from(i32::MAX))),
            ],
        );
        match d.raw(&raw).unwrap() {
            EventKind::Switch {
                prev_pid,
                prev_state,
                next_pid,
                ..
            } => {
                assert_eq!((prev_pid, next_pid), (-1, i32::MAX));
                assert_eq!(prev_state, 0x1_0000_0001);
            }
            other => panic!("{other:?}"),
        }
        let byte = Int {
            offset: 0,
            size: 1,
            signed: true,
        };
        assert_eq!(byte.read(&[0xff]), Some(-1));
        let ubyte = Int {
            signed: false,
            ..byte
        };
        assert_eq!(ubyte.read(&[0xff]), Some(255));
    }

    #[test]
    fn a_kernel_that_moves_fields_still_decodes() {
        // The same tracepoint on a kernel whose prev_state is 4 bytes and everything
        // after it moved: the decoder follows the format file.
        let text = fixture("sched_switch")
            .replace(
                "field:long prev_state;\toffset:32;\tsize:8;",
                "field:int prev_state;\toffset:32;\tsize:4;",
            )
            .replace("next_comm[16];\toffset:40;", "next_comm[16];\toffset:36;")
            .replace("next_pid;\toffset:56;", "next_pid;\toffset:52;")
            .replace("next_prio;\toffset:60;", "next_prio;\toffset:56;")
            .replace("ID: 372", "ID: 900");
        let mut f = fixture_formats();
        f.switch = parse(&text).unwrap();
        assert_eq!(f.switch.field("next_pid").unwrap().offset, 52);
        let d = Decoder::new(&f).unwrap();
        let raw = raw_record(
            &f.switch,
            &[
                ("prev_pid", I(10)),
                ("prev_state", I(1)),
                ("next_comm", S("b")),
                ("next_pid", I(11)),
            ],
        );
        assert_eq!(raw.len(), 60);
        assert_eq!(
            d.raw(&raw),
            Ok(EventKind::Switch {
                prev_pid: 10,
                prev_state: 1,
                next_pid: 11,
                prev_comm: [0; 16],
                next_comm: comm("b"),
            })
        );
    }

    #[test]
    fn short_and_unknown_records_are_refused_without_panicking() {
        let f = fixture_formats();
        let d = Decoder::new(&f).unwrap();
        let raw = raw_record(&f.switch, &[("next_pid", I(3))]);
        // The last field the decoder reads ends here (next_prio after it is not read).
        let needed = f
            .switch
            .field("next_pid")
            .map(|x| x.offset + x.size)
            .unwrap();
        assert!(d.raw(&raw[..needed]).is_ok());
        for cut in 0..needed {
            let r = d.raw(&raw[..cut]);
            assert_eq!(r, Err(Undecodable::Short), "cut at {cut}");
        }
        let body = sample_body(1, 0, &raw);
        for cut in 0..20 + needed {
            assert_eq!(d.sample(&body[..cut]), Err(Undecodable::Short), "{cut}");
        }
        let mut other = raw.clone();
        other[..2].copy_from_slice(&4u16.to_ne_bytes());
        assert_eq!(d.raw(&other), Err(Undecodable::Unknown(4)));
    }

    #[test]
    fn switch_in_records() {
        let mut body = Vec::new();
        for v in [0u32, 0, 4242, 4243] {
            body.extend_from_slice(&v.to_ne_bytes());
        }
        body.extend_from_slice(&987_654_321u64.to_ne_bytes());
        body.extend_from_slice(&1u32.to_ne_bytes());
        body.extend_from_slice(&0u32.to_ne_bytes());
        assert_eq!(
            switch_in(0, &body),
            Some(SwitchIn {
                t_ns: 987_654_321,
                cpu: 1,
                tid: 4243,
                prev_tid: 0
            })
        );
        let out = bindings::PERF_RECORD_MISC_SWITCH_OUT as u16;
        assert_eq!(switch_in(out, &body), None);
        assert_eq!(switch_in(0, &body[..27]), None);
    }

    #[test]
    fn missing_or_odd_fields_are_named() {
        let mut f = fixture_formats();
        f.waking.fields.retain(|x| x.name != "target_cpu");
        let e = Decoder::new(&f).unwrap_err().0;
        assert!(
            e.contains("sched_waking") && e.contains("target_cpu"),
            "{e}"
        );
        let mut f = fixture_formats();
        f.switch.fields.iter_mut().for_each(|x| {
            if x.name == "next_pid" {
                x.size = 3;
            }
        });
        let e = Decoder::new(&f).unwrap_err().0;
        assert!(
            e.contains("next_pid") && e.contains("not an integer"),
            "{e}"
        );
        let mut f = fixture_formats();
        f.migrate.fields[0].offset = 2;
        let e = Decoder::new(&f).unwrap_err().0;
        assert!(e.contains("common fields"), "{e}");
    }
}
