//! A fixed-size, allocation-free CPU bitmask with the kernel's cpulist and hex-mask text forms.

use std::fmt;
use std::str::FromStr;

/// Up to 1024 CPUs, no allocation, Copy.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct CpuSet {
    bits: [u64; 16],
}

/// Why a CPU list or mask was refused. Every message is one line that names the bad
/// input and says what is accepted, so the UI can show it as is.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CpuListError {
    #[error("empty CPU list: expected CPU numbers and ranges like 0,2-3")]
    Empty,
    #[error("bad CPU list \"{list}\": expected CPU numbers and ranges like 0,2-3")]
    Syntax { list: String },
    /// `cpu` is text because the offending number may not fit any integer type.
    #[error("CPU {cpu} is out of range (0..{max})", max = CpuSet::MAX_CPUS - 1)]
    OutOfRange { cpu: String },
    #[error("bad CPU range \"{range}\": the first CPU must not be above the last, as in 2-5")]
    Reversed { range: String },
    #[error(
        "bad stride in CPU range \"{range}\": expected a stride like 0-7:2 or used/group like 0-7:2/4 (group at least 1, used at most group)"
    )]
    BadStride { range: String },
    #[error(
        "bad CPU mask \"{mask}\": expected hex digits in comma-separated 32-bit groups like ff,ffffffff"
    )]
    BadHexMask { mask: String },
}

/// How many CPUs a `libc::cpu_set_t` can hold here (1024 on glibc; older musl declares
/// fewer), so that the libc macros are never asked for a bit outside the struct.
const LIBC_CPUS: usize = {
    let declared = libc::CPU_SETSIZE as usize;
    let storage = 8 * std::mem::size_of::<libc::cpu_set_t>();
    if declared < storage {
        declared
    } else {
        storage
    }
};

impl CpuSet {
    pub const MAX_CPUS: usize = 1024;

    /// The empty set.
    pub fn new() -> Self {
        CpuSet { bits: [0; 16] }
    }

    /// A set holding only `cpu` (empty if `cpu >= MAX_CPUS`).
    pub fn single(cpu: usize) -> Self {
        let mut set = CpuSet::new();
        set.insert(cpu);
        set
    }

    /// CPUs `0..n`, clamped to `MAX_CPUS`.
    pub fn first_n(n: usize) -> Self {
        let n = n.min(Self::MAX_CPUS);
        let mut set = CpuSet::new();
        let full = n / 64;
        for word in &mut set.bits[..full] {
            *word = u64::MAX;
        }
        if n % 64 != 0 {
            set.bits[full] = (1u64 << (n % 64)) - 1;
        }
        set
    }

    /// Adds `cpu`; numbers at or above `MAX_CPUS` are ignored.
    pub fn insert(&mut self, cpu: usize) {
        if cpu < Self::MAX_CPUS {
            self.bits[cpu / 64] |= 1u64 << (cpu % 64);
        }
    }

    pub fn contains(&self, cpu: usize) -> bool {
        cpu < Self::MAX_CPUS && self.bits[cpu / 64] & (1u64 << (cpu % 64)) != 0
    }

    pub fn count(&self) -> usize {
        self.bits.iter().map(|w| w.count_ones() as usize).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|&w| w == 0)
    }

    /// The CPUs in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.bits
            .iter()
            .enumerate()
            .flat_map(|(i, &word)| Bits { word, base: i * 64 })
    }

    pub fn union(&self, other: &CpuSet) -> CpuSet {
        let mut out = *self;
        for (a, b) in out.bits.iter_mut().zip(other.bits.iter()) {
            *a |= b;
        }
        out
    }

    /// True if every CPU of `self` is also in `other` (the empty set is a subset of all).
    pub fn is_subset(&self, other: &CpuSet) -> bool {
        self.bits
            .iter()
            .zip(other.bits.iter())
            .all(|(a, b)| a & !b == 0)
    }

    /// Parse a kernel cpulist: "0", "0-3", "0,2-3", "0-7:2" (stride form as in the kernel's
    /// bitmap_parselist), surrounding whitespace ok, empty string -> error.
    ///
    /// A range may carry the kernel's `:used/group` suffix ("0-1023:2/256" is 0,1,256,257,...)
    /// or the shorthand `:stride`, which means `:1/stride` ("0-7:2" is 0,2,4,6); the kernel
    /// itself only takes the `used/group` form. Does not allocate unless it fails.
    pub fn parse_list(s: &str) -> Result<CpuSet, CpuListError> {
        let list = s.trim();
        if list.is_empty() {
            return Err(CpuListError::Empty);
        }
        let mut set = CpuSet::new();
        for group in list.split(',') {
            let group = group.trim();
            let region = Region::parse(group).map_err(|e| e.into_error(list, group))?;
            region.apply(&mut set);
        }
        Ok(set)
    }

    /// Format as the kernel does: "0-1,3" (ranges collapsed); empty set -> "".
    pub fn to_list(&self) -> String {
        self.to_string()
    }

    /// Parse the hex mask form of /proc/PID/status `Cpus_allowed:` ("3", "ff,ffffffff"
    /// comma-separated 32-bit groups, most significant first).
    ///
    /// Kernels built for many CPUs print long runs of zero groups; those are accepted, and
    /// only a set bit at or above `MAX_CPUS` is an error.
    pub fn parse_hex_mask(s: &str) -> Result<CpuSet, CpuListError> {
        let mask = s.trim();
        let bad = || CpuListError::BadHexMask {
            mask: mask.to_string(),
        };
        if mask.is_empty() {
            return Err(bad());
        }
        let mut set = CpuSet::new();
        for (index, group) in mask.rsplit(',').enumerate() {
            if group.is_empty() || group.len() > 8 || !group.bytes().all(|b| b.is_ascii_hexdigit())
            {
                return Err(bad());
            }
            let value = u32::from_str_radix(group, 16).map_err(|_| bad())?;
            if value == 0 {
                continue;
            }
            let base = index.saturating_mul(32);
            if base >= Self::MAX_CPUS {
                let cpu = base.saturating_add(value.trailing_zeros() as usize);
                return Err(CpuListError::OutOfRange {
                    cpu: cpu.to_string(),
                });
            }
            set.bits[base / 64] |= u64::from(value) << (base % 64);
        }
        Ok(set)
    }

    /// Convert to libc::cpu_set_t for sched_setaffinity. CPUs beyond what the C library's
    /// set can hold are dropped (none are on glibc, whose set is 1024 CPUs).
    pub fn to_libc(&self) -> libc::cpu_set_t {
        // SAFETY: cpu_set_t is a plain array of integers; all zeroes is the empty set.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for cpu in self.iter().take_while(|&cpu| cpu < LIBC_CPUS) {
            // SAFETY: cpu < LIBC_CPUS, so the macro's word index stays inside the struct.
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        set
    }

    /// Convert from the libc::cpu_set_t filled by sched_getaffinity.
    pub fn from_libc(set: &libc::cpu_set_t) -> CpuSet {
        let mut out = CpuSet::new();
        for cpu in 0..LIBC_CPUS.min(Self::MAX_CPUS) {
            // SAFETY: cpu < LIBC_CPUS, so the macro's word index stays inside the struct.
            if unsafe { libc::CPU_ISSET(cpu, set) } {
                out.insert(cpu);
            }
        }
        out
    }
}

/// Set bits of one word, lowest first.
struct Bits {
    word: u64,
    base: usize,
}

impl Iterator for Bits {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        if self.word == 0 {
            return None;
        }
        let bit = self.word.trailing_zeros() as usize;
        self.word &= self.word - 1;
        Some(self.base + bit)
    }
}

/// One comma-separated part of a cpulist, in the kernel's terms: from `start` to `end`,
/// the first `used` CPUs of every `group` CPUs.
struct Region {
    start: usize,
    end: usize,
    used: usize,
    group: usize,
}

/// Borrowing error so that a successful parse never allocates.
enum RegionError<'a> {
    Syntax,
    OutOfRange(&'a str),
    Reversed,
    BadStride,
}

impl<'a> RegionError<'a> {
    fn into_error(self, list: &str, group: &str) -> CpuListError {
        match self {
            RegionError::Syntax => CpuListError::Syntax {
                list: list.to_string(),
            },
            RegionError::OutOfRange(digits) => {
                let trimmed = digits.trim_start_matches('0');
                CpuListError::OutOfRange {
                    cpu: if trimmed.is_empty() { "0" } else { trimmed }.to_string(),
                }
            }
            RegionError::Reversed => CpuListError::Reversed {
                range: group.to_string(),
            },
            RegionError::BadStride => CpuListError::BadStride {
                range: group.to_string(),
            },
        }
    }
}

fn is_digits(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
}

fn cpu_number(s: &str) -> Result<usize, RegionError<'_>> {
    if !is_digits(s) {
        return Err(RegionError::Syntax);
    }
    match s.parse::<usize>() {
        Ok(cpu) if cpu < CpuSet::MAX_CPUS => Ok(cpu),
        _ => Err(RegionError::OutOfRange(s)),
    }
}

fn stride_number(s: &str) -> Result<usize, RegionError<'_>> {
    if !is_digits(s) {
        return Err(RegionError::Syntax);
    }
    s.parse::<usize>().map_err(|_| RegionError::BadStride)
}

impl Region {
    fn parse(text: &str) -> Result<Region, RegionError<'_>> {
        let (range, pattern) = match text.split_once(':') {
            Some((range, pattern)) => (range, Some(pattern)),
            None => (text, None),
        };
        let (start, end) = match range.split_once('-') {
            Some((a, b)) => (cpu_number(a)?, cpu_number(b)?),
            // The kernel only takes a pattern after a range, never after a single CPU.
            None if pattern.is_some() => return Err(RegionError::Syntax),
            None => {
                let cpu = cpu_number(range)?;
                (cpu, cpu)
            }
        };
        if start > end {
            return Err(RegionError::Reversed);
        }
        let (used, group) = match pattern {
            None => (end - start + 1, end - start + 1),
            Some(p) => match p.split_once('/') {
                Some((used, group)) => (stride_number(used)?, stride_number(group)?),
                None => (1, stride_number(p)?),
            },
        };
        if group == 0 || used > group {
            return Err(RegionError::BadStride);
        }
        Ok(Region {
            start,
            end,
            used,
            group,
        })
    }

    fn apply(&self, set: &mut CpuSet) {
        let mut base = self.start;
        while base <= self.end {
            let stop = base.saturating_add(self.used).min(self.end + 1);
            for cpu in base..stop {
                set.insert(cpu);
            }
            base = match base.checked_add(self.group) {
                Some(next) => next,
                None => break,
            };
        }
    }
}

impl fmt::Display for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut cpus = self.iter().peekable();
        let mut first = true;
        while let Some(start) = cpus.next() {
            let mut end = start;
            while cpus.peek() == Some(&(end + 1)) {
                end += 1;
                cpus.next();
            }
            if !first {
                f.write_str(",")?;
            }
            first = false;
            if start == end {
                write!(f, "{start}")?;
            } else {
                write!(f, "{start}-{end}")?;
            }
        }
        Ok(())
    }
}

impl fmt::Debug for CpuSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CpuSet(\"{self}\")")
    }
}

impl FromStr for CpuSet {
    type Err = CpuListError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        CpuSet::parse_list(s)
    }
}

impl serde::Serialize for CpuSet {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for CpuSet {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ListVisitor;

        impl serde::de::Visitor<'_> for ListVisitor {
            type Value = CpuSet;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a CPU list like \"0,2-3\"")
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<CpuSet, E> {
                // The empty set serializes as "", which parse_list refuses as user input;
                // accept it here so that every set round-trips.
                if v.trim().is_empty() {
                    return Ok(CpuSet::new());
                }
                CpuSet::parse_list(v).map_err(E::custom)
            }
        }

        deserializer.deserialize_str(ListVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(s: &str) -> CpuSet {
        CpuSet::parse_list(s).unwrap()
    }

    /// Kernel-style hex mask, only for round-trip tests: 32-bit groups, most significant first.
    fn hex_mask(set: &CpuSet, groups: usize) -> String {
        let mut parts = Vec::new();
        for g in (0..groups).rev() {
            let word = set.bits[g / 2];
            let value = if g % 2 == 0 {
                word as u32
            } else {
                (word >> 32) as u32
            };
            parts.push(format!("{value:08x}"));
        }
        parts.join(",")
    }

    /// Deterministic pseudo-random sets without a rand dependency.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn constructors() {
        assert!(CpuSet::new().is_empty());
        assert_eq!(CpuSet::new(), CpuSet::default());
        assert_eq!(CpuSet::single(5).to_list(), "5");
        assert!(CpuSet::single(CpuSet::MAX_CPUS).is_empty());
        assert!(CpuSet::first_n(0).is_empty());
        assert_eq!(CpuSet::first_n(3).to_list(), "0-2");
        assert_eq!(CpuSet::first_n(64).to_list(), "0-63");
        assert_eq!(CpuSet::first_n(65).to_list(), "0-64");
        assert_eq!(CpuSet::first_n(5000).count(), CpuSet::MAX_CPUS);
        assert_eq!(CpuSet::first_n(1024).to_list(), "0-1023");
    }

    #[test]
    fn insert_contains_count() {
        let mut set = CpuSet::new();
        set.insert(0);
        set.insert(63);
        set.insert(64);
        set.insert(1023);
        set.insert(1024);
        set.insert(usize::MAX);
        assert!(set.contains(0) && set.contains(63) && set.contains(64) && set.contains(1023));
        assert!(!set.contains(1) && !set.contains(1024) && !set.contains(usize::MAX));
        assert_eq!(set.count(), 4);
        assert!(!set.is_empty());
        assert_eq!(set.iter().collect::<Vec<_>>(), vec![0, 63, 64, 1023]);
    }

    #[test]
    fn union_and_subset() {
        let a = list("0-3");
        let b = list("2-5,100");
        assert_eq!(a.union(&b).to_list(), "0-5,100");
        assert!(a.is_subset(&a.union(&b)));
        assert!(!a.is_subset(&b));
        assert!(CpuSet::new().is_subset(&CpuSet::new()));
        assert!(CpuSet::new().is_subset(&a));
        assert!(list("2-3").is_subset(&a));
    }

    #[test]
    fn parse_forms() {
        assert_eq!(list("0").iter().collect::<Vec<_>>(), vec![0]);
        assert_eq!(list("0-3").to_list(), "0-3");
        assert_eq!(list("0,2-3").to_list(), "0,2-3");
        assert_eq!(list("  0-1\n").to_list(), "0-1");
        assert_eq!(list("0, 2").to_list(), "0,2");
        assert_eq!(list("3,1").to_list(), "1,3");
        assert_eq!(list("0-3,2-5").to_list(), "0-5");
        assert_eq!(list("1-1").to_list(), "1");
        assert_eq!(list("007").to_list(), "7");
        assert_eq!(list("1023").to_list(), "1023");
        assert_eq!(list("0-1023").count(), 1024);
    }

    #[test]
    fn parse_stride() {
        assert_eq!(list("0-7:2").to_list(), "0,2,4,6");
        assert_eq!(list("1-8:3").to_list(), "1,4,7");
        assert_eq!(
            list("0-1023:2/256").iter().collect::<Vec<_>>(),
            vec![0, 1, 256, 257, 512, 513, 768, 769]
        );
        // The kernel's own example: 9-38:4/10.
        assert_eq!(list("9-38:4/10").to_list(), "9-12,19-22,29-32");
        assert!(list("0-7:0/4").is_empty());
        assert_eq!(list("0-3:4/4").to_list(), "0-3");
        assert_eq!(list("0-3:1/100000000000").to_list(), "0");
    }

    #[test]
    fn parse_errors() {
        assert_eq!(CpuSet::parse_list(""), Err(CpuListError::Empty));
        assert_eq!(CpuSet::parse_list(" \n"), Err(CpuListError::Empty));
        assert_eq!(
            CpuSet::parse_list("0-x").unwrap_err().to_string(),
            "bad CPU list \"0-x\": expected CPU numbers and ranges like 0,2-3"
        );
        assert_eq!(
            CpuSet::parse_list("5000").unwrap_err().to_string(),
            "CPU 5000 is out of range (0..1023)"
        );
        assert_eq!(
            CpuSet::parse_list("0-1024"),
            Err(CpuListError::OutOfRange { cpu: "1024".into() })
        );
        assert_eq!(
            CpuSet::parse_list("00099999999999999999999999"),
            Err(CpuListError::OutOfRange {
                cpu: "99999999999999999999999".into()
            })
        );
        assert_eq!(
            CpuSet::parse_list("0,3-1"),
            Err(CpuListError::Reversed {
                range: "3-1".into()
            })
        );
        for bad in [
            "0-7:0",
            "0-7:3/2",
            "0-7:1/0",
            "0-7:1/99999999999999999999999",
        ] {
            assert_eq!(
                CpuSet::parse_list(bad),
                Err(CpuListError::BadStride { range: bad.into() }),
                "{bad}"
            );
        }
        for bad in [
            "0,,1", "0,", ",0", "-1", "+1", "0x3", "1 - 3", "5:2", "0-7:", "0-7:a", "0-7:1/", "0-",
            "a", "0--1", "0-1-2", "all", "\u{663}",
        ] {
            assert_eq!(
                CpuSet::parse_list(bad),
                Err(CpuListError::Syntax {
                    list: bad.trim().into()
                }),
                "{bad}"
            );
        }
        for err in [
            CpuListError::Empty,
            CpuSet::parse_list("3-1").unwrap_err(),
            CpuSet::parse_list("0-7:0").unwrap_err(),
            CpuSet::parse_hex_mask("zz").unwrap_err(),
        ] {
            assert!(!err.to_string().contains('\n'));
        }
    }

    #[test]
    fn list_round_trip() {
        for s in ["0", "0-1,3", "1,3,5-7,64-127,1023", "0-1023", "63-64"] {
            assert_eq!(list(s).to_list(), s);
            assert_eq!(list(s).to_string(), s);
            assert_eq!(s.parse::<CpuSet>().unwrap(), list(s));
        }
        assert_eq!(CpuSet::new().to_list(), "");
        let mut state = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..200 {
            let mut set = CpuSet::new();
            let n = xorshift(&mut state) % 64;
            for _ in 0..n {
                set.insert((xorshift(&mut state) % 1024) as usize);
            }
            if !set.is_empty() {
                assert_eq!(list(&set.to_list()), set);
            }
            assert_eq!(CpuSet::parse_hex_mask(&hex_mask(&set, 32)).unwrap(), set);
        }
    }

    #[test]
    fn debug_format() {
        assert_eq!(format!("{:?}", list("0-1")), "CpuSet(\"0-1\")");
        assert_eq!(format!("{:?}", CpuSet::new()), "CpuSet(\"\")");
    }

    #[test]
    fn hex_masks() {
        let mask = |s: &str| CpuSet::parse_hex_mask(s).unwrap();
        assert_eq!(mask("3").to_list(), "0-1");
        assert_eq!(mask(" 3\n").to_list(), "0-1");
        assert_eq!(mask("ff,ffffffff").to_list(), "0-39");
        assert_eq!(mask("00000001,00000000").to_list(), "32");
        assert_eq!(mask("80000000,00000000,00000000").to_list(), "95");
        assert_eq!(mask("FF").to_list(), "0-7");
        assert!(mask("0").is_empty());
        // A kernel built with NR_CPUS=8192 prints 256 groups.
        let mut wide = vec!["00000000"; 255];
        wide.push("00000005");
        assert_eq!(mask(&wide.join(",")).to_list(), "0,2");
        wide[0] = "80000000";
        assert_eq!(
            CpuSet::parse_hex_mask(&wide.join(",")),
            Err(CpuListError::OutOfRange { cpu: "8191".into() })
        );
        assert_eq!(
            CpuSet::parse_hex_mask(&format!("1,{}", ["00000000"; 32].join(","))),
            Err(CpuListError::OutOfRange { cpu: "1024".into() })
        );
        for bad in [
            "",
            " ",
            "xyz",
            "1,,2",
            ",1",
            "1,",
            "123456789",
            "+3",
            "0x3",
            "-1",
            "3 4",
        ] {
            assert_eq!(
                CpuSet::parse_hex_mask(bad),
                Err(CpuListError::BadHexMask {
                    mask: bad.trim().into()
                }),
                "{bad:?}"
            );
        }
        assert_eq!(
            CpuSet::parse_hex_mask("xyz").unwrap_err().to_string(),
            "bad CPU mask \"xyz\": expected hex digits in comma-separated 32-bit groups like ff,ffffffff"
        );
    }

    #[test]
    fn libc_conversion() {
        let set = list("0,2,63-65,1023");
        let raw = set.to_libc();
        for cpu in 0..LIBC_CPUS {
            assert_eq!(
                unsafe { libc::CPU_ISSET(cpu, &raw) },
                set.contains(cpu),
                "{cpu}"
            );
        }
        assert_eq!(unsafe { libc::CPU_COUNT(&raw) } as usize, set.count());
        assert_eq!(CpuSet::from_libc(&raw), set);
        assert_eq!(CpuSet::from_libc(&CpuSet::new().to_libc()), CpuSet::new());

        let mut raw: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        unsafe {
            libc::CPU_SET(1, &mut raw);
            libc::CPU_SET(40, &mut raw);
        }
        assert_eq!(CpuSet::from_libc(&raw).to_list(), "1,40");
    }

    #[test]
    fn libc_affinity_of_this_thread() {
        let mut raw: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        let rc = unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&raw), &mut raw) };
        assert_eq!(rc, 0);
        let set = CpuSet::from_libc(&raw);
        assert!(!set.is_empty());
        assert_eq!(CpuSet::from_libc(&set.to_libc()), set);
    }

    #[test]
    fn serde_as_list_string() {
        let set = list("0-1,3");
        assert_eq!(serde_json::to_string(&set).unwrap(), "\"0-1,3\"");
        assert_eq!(serde_json::from_str::<CpuSet>("\"0-1,3\"").unwrap(), set);
        assert_eq!(serde_json::to_string(&CpuSet::new()).unwrap(), "\"\"");
        assert_eq!(
            serde_json::from_str::<CpuSet>("\"\"").unwrap(),
            CpuSet::new()
        );
        let err = serde_json::from_str::<CpuSet>("\"0-x\"").unwrap_err();
        assert!(err.to_string().contains("bad CPU list \"0-x\""), "{err}");
        assert!(serde_json::from_str::<CpuSet>("3").is_err());
    }
}
