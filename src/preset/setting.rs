//! `TASK.KNOB=VALUE` settings as typed by a user (`--set`, variants, compare sides) and
//! the value syntaxes they share: durations, nice ladders, CPU lists.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::error::Invalid;
use crate::safe_text::echo;

pub(crate) use crate::workload::MAX_COUNT;

/// One `TARGET.KNOB=VALUE`. `sys.feature.WA_IDLE=off` has target `sys`, knob `feature.WA_IDLE`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Setting {
    pub target: String,
    pub knob: String,
    pub value: String,
}

impl FromStr for Setting {
    type Err = Invalid;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let shape = || {
            Invalid(format!("bad setting \"{s}\": expected TASK.KNOB=VALUE, e.g. writer.policy=batch or hog.nice=10"))
        };
        let (lhs, value) = s.split_once('=').ok_or_else(shape)?;
        let (target, knob) = lhs.trim().split_once('.').ok_or_else(shape)?;
        let value = value.trim();
        if target.is_empty() || knob.is_empty() || value.is_empty() {
            return Err(shape());
        }
        Ok(Setting {
            target: target.to_string(),
            knob: knob.to_string(),
            value: value.to_string(),
        })
    }
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}={}", self.target, self.knob, self.value)
    }
}

/// Parse a comma-separated list of settings (`writer.policy=batch,reader.cpus=0-1`).
/// A comma only starts a new setting when what follows looks like `NAME.KNOB=`, so CPU
/// lists such as `cpus=0,2` stay whole.
pub fn parse_list(s: &str) -> Result<Vec<Setting>, Invalid> {
    let mut parts: Vec<String> = Vec::new();
    for piece in s.split(',') {
        let starts_setting = piece
            .split_once('=')
            .is_some_and(|(lhs, _)| lhs.contains('.') && !lhs.trim().is_empty());
        match parts.last_mut() {
            Some(last) if !starts_setting => {
                last.push(',');
                last.push_str(piece);
            }
            _ => parts.push(piece.to_string()),
        }
    }
    parts.iter().map(|p| p.parse()).collect()
}

/// `5s:writer.policy=batch` -> (5 s, the setting).
pub fn parse_at(s: &str) -> Result<(Duration, Setting), Invalid> {
    let (time, setting) = s.split_once(':').ok_or_else(|| {
        Invalid(format!(
            "bad --at \"{s}\": expected TIME:TASK.KNOB=VALUE, e.g. 5s:writer.policy=batch"
        ))
    })?;
    Ok((
        parse_duration(time).map_err(|e| Invalid(format!("--at {s}: {e}")))?,
        setting.parse()?,
    ))
}

/// A sweep: `KNOB=V1,V2,...` or `KNOB=FROM..TO:STEP` (whole numbers) -> (knob, values).
pub fn parse_sweep(s: &str) -> Result<(String, Vec<String>), Invalid> {
    let bad = || {
        Invalid(format!("bad --knob \"{s}\": expected KNOB=V1,V2,... or KNOB=FROM..TO:STEP, e.g. sys.rt_runtime_us=200000..700000:100000"))
    };
    let (knob, values) = s.split_once('=').ok_or_else(bad)?;
    if !knob.contains('.') || values.is_empty() {
        return Err(bad());
    }
    if let Some((from, rest)) = values.split_once("..") {
        let (to, step) = rest.split_once(':').unwrap_or((rest, "1"));
        let (from, to, step) = match (
            from.trim().parse::<i64>(),
            to.trim().parse::<i64>(),
            step.trim().parse::<i64>(),
        ) {
            (Ok(f), Ok(t), Ok(st)) if st > 0 && f <= t => (f, t, st),
            _ => return Err(bad()),
        };
        let values: Vec<String> = (0..)
            .map_while(|i: i64| from.checked_add(i.checked_mul(step)?))
            .take_while(|v| *v <= to)
            .take(1001)
            .map(|v| v.to_string())
            .collect();
        if values.len() > 1000 {
            return Err(Invalid(format!(
                "--knob {s}: more than 1000 values; use a larger step"
            )));
        }
        return Ok((knob.to_string(), values));
    }
    if values.split(',').count() > 1000 {
        return Err(Invalid(format!("--knob {knob}=...: more than 1000 values")));
    }
    let values: Vec<String> = values
        .split(',')
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
        .collect();
    if values.is_empty() {
        return Err(bad());
    }
    Ok((knob.to_string(), values))
}

/// The longest duration schedlab takes anywhere: a year. Every field has a narrower
/// range of its own; this one keeps the arithmetic on durations (deadlines, sums,
/// nanoseconds in a u64) clear of overflow whatever a file or argument says.
pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

/// How [`MAX_DURATION`] is written in errors.
const MAX_DURATION_TEXT: &str = "365d";

/// A duration as users write it: `10s`, `1.5s`, `100ms`, `250us`, `500ns`, `1h 30m`;
/// 0s..365d. A bare number is refused (is `10` seconds or nanoseconds?), except `0`,
/// which is the same in every unit.
pub fn parse_duration(s: &str) -> Result<Duration, Invalid> {
    let t = s.trim();
    let out_of_range = || {
        Invalid(format!(
            "duration \"{}\" is out of range: allowed 0s..{MAX_DURATION_TEXT}",
            echo(s)
        ))
    };
    if let Ok(n) = t.parse::<f64>() {
        if n == 0.0 {
            return Ok(Duration::ZERO);
        }
        return Err(Invalid(format!(
            "bad duration \"{}\": add a unit: 10s, 100ms",
            echo(s)
        )));
    }
    let parsed = match t
        .strip_suffix('s')
        .filter(|x| !x.ends_with(['m', 'u', 'n', 'µ']))
        .and_then(|secs| secs.parse::<f64>().ok())
        .filter(|f| !f.is_nan())
    {
        // Checked as a float first: from_secs_f64 panics beyond u64 seconds.
        Some(f) if f < 0.0 => Err(out_of_range()),
        Some(f) if f > MAX_DURATION.as_secs_f64() => Err(out_of_range()),
        Some(f) => Ok(Duration::from_secs_f64(f)),
        None => humantime::parse_duration(t).map_err(|e| match e {
            humantime::DurationError::NumberOverflow => out_of_range(),
            _ => Invalid(format!(
                "bad duration \"{}\": expected e.g. 10s, 1.5s, 100ms, 250us or 500ns",
                echo(s)
            )),
        }),
    };
    match parsed? {
        d if d > MAX_DURATION => Err(out_of_range()),
        d => Ok(d),
    }
}

/// A duration in whole nanoseconds; errors name the `field` it was given for.
pub(super) fn duration_ns(field: &str, s: &str) -> Result<u64, Invalid> {
    parse_duration(s)
        .map(|d| d.as_nanos().min(u64::MAX as u128) as u64)
        .map_err(|e| Invalid(format!("{field}: {e}")))
}

/// A nice value for every instance of a task group.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NiceLadder {
    One(i32),
    Each(Vec<i32>),
}

impl NiceLadder {
    /// `5`, `0..20` (step 1), `-20..20:4`, or `0/5/10`.
    pub fn parse(s: &str) -> Result<NiceLadder, Invalid> {
        let t = s.trim();
        let bad = || {
            Invalid(format!("bad nice \"{s}\": expected a number -20..19, a ladder FROM..TO[:STEP] like -20..20:4, or a list like 0/5/10"))
        };
        if let Some((range, step)) = t.split_once("..") {
            let (to, step) = match step.split_once(':') {
                Some((to, st)) => (to, st.trim().parse::<i32>().map_err(|_| bad())?),
                None => (step, 1),
            };
            let from = range.trim().parse::<i32>().map_err(|_| bad())?;
            let to = to.trim().parse::<i32>().map_err(|_| bad())?;
            // Checked before anything is expanded: a ladder is at most 41 rungs.
            for n in [from, to] {
                if !(-20..=20).contains(&n) {
                    return Err(Invalid(format!(
                        "bad nice ladder \"{s}\": nice {n} is out of range: allowed -20..19 (20 is clamped to 19)"
                    )));
                }
            }
            if step <= 0 || from > to {
                return Err(Invalid(format!(
                    "bad nice ladder \"{s}\": need FROM <= TO and a positive STEP"
                )));
            }
            return Ok(NiceLadder::Each(
                (from..=to).step_by(step as usize).collect(),
            ));
        }
        if t.contains('/') {
            // As many values as a group may have instances; more is refused unread.
            if t.split('/').count() > MAX_COUNT {
                return Err(Invalid(format!(
                    "bad nice list \"{}...\": more than {MAX_COUNT} values (a group has at most {MAX_COUNT} tasks)",
                    t.chars().take(20).collect::<String>(),
                )));
            }
            let values: Result<Vec<i32>, _> = t.split('/').map(|v| v.trim().parse()).collect();
            return values.map(NiceLadder::Each).map_err(|_| bad());
        }
        t.parse().map(NiceLadder::One).map_err(|_| bad())
    }

    pub fn get(&self, index: usize) -> i32 {
        match self {
            NiceLadder::One(n) => *n,
            NiceLadder::Each(v) => v.get(index).copied().unwrap_or(0),
        }
    }

    pub fn values(&self) -> Vec<i32> {
        match self {
            NiceLadder::One(n) => vec![*n],
            NiceLadder::Each(v) => v.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_split_at_the_first_dot_and_equals() {
        let s: Setting = "sys.feature.WA_IDLE=off".parse().expect("parses");
        assert_eq!(
            (s.target.as_str(), s.knob.as_str(), s.value.as_str()),
            ("sys", "feature.WA_IDLE", "off")
        );
        let s: Setting = " hog.nice = 10 ".parse().expect("parses");
        assert_eq!(s.to_string(), "hog.nice=10");
        for bad in [
            "writer",
            "writer.policy",
            "writer=batch",
            ".policy=x",
            "writer.=x",
            "a.b=",
        ] {
            let err = bad.parse::<Setting>().unwrap_err().0;
            assert!(err.contains("TASK.KNOB=VALUE"), "{bad}: {err}");
        }
    }

    #[test]
    fn lists_keep_commas_inside_cpu_lists() {
        let v = parse_list("writer.policy=batch,reader.cpus=0,1,writer.nice=5").expect("parses");
        let texts: Vec<String> = v.iter().map(|s| s.to_string()).collect();
        assert_eq!(
            texts,
            ["writer.policy=batch", "reader.cpus=0,1", "writer.nice=5"]
        );
        assert!(parse_list("nonsense").is_err());
    }

    #[test]
    fn at_and_sweep_specs() {
        let (t, s) = parse_at("5s:writer.policy=batch").expect("at");
        assert_eq!(
            (t, s.to_string()),
            (Duration::from_secs(5), "writer.policy=batch".to_string())
        );
        assert!(parse_at("writer.policy=batch")
            .unwrap_err()
            .0
            .contains("TIME:TASK.KNOB=VALUE"));
        let (k, v) = parse_sweep("sys.rt_runtime_us=200000..700000:100000").expect("range");
        assert_eq!(k, "sys.rt_runtime_us");
        assert_eq!(
            v,
            ["200000", "300000", "400000", "500000", "600000", "700000"]
        );
        let (_, v) = parse_sweep("writer.policy=other,batch").expect("list");
        assert_eq!(v, ["other", "batch"]);
        assert!(parse_sweep("x=1..0:1").is_err());
        assert!(parse_sweep("nodot=1,2").is_err());
        assert!(parse_sweep("a.b=0..100000:1")
            .unwrap_err()
            .0
            .contains("more than 1000"));
    }

    #[test]
    fn durations_in_every_spelling() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_duration("100ms"), Ok(Duration::from_millis(100)));
        assert_eq!(parse_duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(parse_duration("3000ns"), Ok(Duration::from_nanos(3000)));
        assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
        assert!(parse_duration("soon").unwrap_err().0.contains("10s"));
        assert!(parse_duration("-1s").is_err());
    }

    #[test]
    fn nice_ladders() {
        assert_eq!(NiceLadder::parse("5"), Ok(NiceLadder::One(5)));
        assert_eq!(NiceLadder::parse("0..20").map(|l| l.values().len()), Ok(21));
        assert_eq!(
            NiceLadder::parse("-20..20:4"),
            Ok(NiceLadder::Each(vec![
                -20, -16, -12, -8, -4, 0, 4, 8, 12, 16, 20
            ]))
        );
        assert_eq!(
            NiceLadder::parse("0/5/10"),
            Ok(NiceLadder::Each(vec![0, 5, 10]))
        );
        assert!(NiceLadder::parse("20..0").is_err());
        assert!(NiceLadder::parse("0..20:0").is_err());
        assert!(NiceLadder::parse("low").unwrap_err().0.contains("-20..19"));
    }

    #[test]
    fn huge_ranges_are_refused_before_anything_is_expanded() {
        // These once took 9.8 s and 3.9 GB, or aborted allocating 16 GiB: the bound is
        // checked on the two ends, so the refusal is immediate and names the range.
        for ladder in ["0..500000000", "-2147483648..2147483647"] {
            let err = NiceLadder::parse(ladder).unwrap_err().0;
            assert!(err.contains("allowed -20..19"), "{err}");
        }
        let long = vec!["1"; 300].join("/");
        assert!(NiceLadder::parse(&long)
            .unwrap_err()
            .0
            .contains("more than 256"));
        // A sweep near i64's end neither overflows nor loops.
        let (_, v) = parse_sweep("x.y=9223372036854775800..9223372036854775807:5").expect("parses");
        assert_eq!(v.len(), 2);
        let many = format!("x.y={}", vec!["1"; 2000].join(","));
        assert!(parse_sweep(&many).unwrap_err().0.contains("more than 1000"));
    }
}
