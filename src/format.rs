//! Numbers as schedlab prints them: counts with their noun, short SI numbers, rates
//! with their unit, nanoseconds as a short time.

/// "1 task", "2 tasks", "1 batch", "3 batches": a count and its noun, singular for
/// one. `noun` is the singular; its plural takes -es after s, x, ch and sh.
pub fn counted(n: u64, noun: &str) -> String {
    if n == 1 {
        return format!("1 {noun}");
    }
    let es = ["s", "x", "ch", "sh"].iter().any(|e| noun.ends_with(e));
    format!("{n} {noun}{}", if es { "es" } else { "s" })
}

/// `1.2k`, `3.4M`: short numbers for a table.
pub fn si(v: f64) -> String {
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    if suffix.is_empty() && scaled.fract().abs() < 1e-9 {
        format!("{scaled:.0}")
    } else if scaled.abs() >= 100.0 {
        format!("{scaled:.0}{suffix}")
    } else {
        format!("{scaled:.1}{suffix}")
    }
}

/// A rate with its unit; bytes in one family scaled to the value (kB/s, MB/s, GB/s).
pub fn rate(v: f64, unit: &str) -> String {
    match unit {
        "bytes" => {
            let (div, shown) = bytes_unit(v.abs());
            if div >= 1e9 {
                format!("{:.2} {shown}", v / div)
            } else {
                format!("{:.1} {shown}", v / div)
            }
        }
        "" => "-".to_string(),
        u => format!("{} {u}/s", si(v)),
    }
}

/// The decimal byte rate unit for values up to `max_abs` bytes/s: (divide by, unit).
pub fn bytes_unit(max_abs: f64) -> (f64, &'static str) {
    if max_abs >= 1e9 {
        (1e9, "GB/s")
    } else if max_abs >= 1e6 {
        (1e6, "MB/s")
    } else if max_abs >= 1e3 {
        (1e3, "kB/s")
    } else {
        (1.0, "B/s")
    }
}

/// ns as a short time: `850 ns`, `1.5 us`, `12.0 ms`.
pub fn ns(v: u64) -> String {
    let f = v as f64;
    if f >= 1e9 {
        format!("{:.2} s", f / 1e9)
    } else if f >= 1e6 {
        format!("{:.1} ms", f / 1e6)
    } else if f >= 1e3 {
        format!("{:.1} us", f / 1e3)
    } else {
        format!("{v} ns")
    }
}
