//! `schedlab check diff`: two check reports side by side, each finding judged by the baseline's own spread.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{Noise, Worse};
use crate::error::Invalid;

/// The check documents this schedlab reads (their header's `schema_version`).
pub const READS_SCHEMA_VERSIONS: [u64; 1] = [3];

/// How a finding moved from the baseline to the current report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Moved {
    /// Worse than the baseline beyond its noise.
    #[serde(rename = "regressed")]
    Worse,
    /// Better than the baseline beyond its noise.
    #[serde(rename = "better")]
    Better,
    /// Within the baseline's noise.
    #[serde(rename = "same")]
    Within,
    #[serde(rename = "not compared")]
    NotCompared,
}

impl Moved {
    pub fn name(self) -> &'static str {
        match self {
            Moved::Worse => "regressed",
            Moved::Better => "better",
            Moved::Within => "same",
            Moved::NotCompared => "not compared",
        }
    }
}

/// One finding of both reports.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Compared {
    pub id: String,
    pub title: String,
    pub unit: String,
    pub baseline: Option<f64>,
    pub current: Option<f64>,
    /// current / baseline (None when the baseline is 0 or either is missing).
    pub ratio: Option<f64>,
    pub worse: Option<Worse>,
    pub verdict: Moved,
    /// The noise the verdict used, in words (or why there was none).
    pub tolerance: String,
    /// Why it is not compared; empty otherwise.
    pub reason: String,
}

/// A machine fact that differs between the two reports.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct FactDiff {
    pub fact: String,
    pub baseline: String,
    pub current: String,
}

/// Where each report came from.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Side {
    pub source: String,
    pub start_time: String,
    pub host: String,
    pub quick: bool,
    pub other_load_cpus: f64,
}

/// Everything `schedlab check diff` found.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct DiffReport {
    pub baseline: Side,
    pub current: Side,
    pub machine_differences: Vec<FactDiff>,
    pub findings: Vec<Compared>,
    pub regressed: usize,
    pub better: usize,
    pub same: usize,
    pub not_compared: usize,
}

impl DiffReport {
    pub fn regressed_titles(&self) -> Vec<&str> {
        self.findings
            .iter()
            .filter(|c| c.verdict == Moved::Worse)
            .map(|c| c.title.as_str())
            .collect()
    }
}

/// A finding as a check document has it (only what the diff reads).
#[derive(Clone, Debug, Deserialize)]
struct Found {
    id: String,
    #[serde(default)]
    title: String,
    #[serde(default)]
    unit: String,
    value: f64,
    #[serde(default)]
    details: Value,
    #[serde(default)]
    worse: Option<Worse>,
    #[serde(default)]
    noise: Option<Noise>,
}

impl Found {
    /// Why it was not measured, if it was not.
    fn skipped(&self) -> Option<String> {
        (self.details["skipped"] == true).then(|| {
            let why = self.details["reason"].as_str().unwrap_or("no reason given");
            // The verdict already says "not measured".
            why.strip_prefix("not measured: ")
                .unwrap_or(why)
                .to_string()
        })
    }
}

/// A check document, checked to be one: `name` says which file in errors.
struct Doc<'a> {
    name: &'a str,
    value: &'a Value,
    findings: Vec<Found>,
}

fn bad(name: &str, what: impl std::fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Invalid(format!("{name}: {what}")))
}

impl<'a> Doc<'a> {
    fn read(name: &'a str, value: &'a Value) -> anyhow::Result<Doc<'a>> {
        let Some(list) = value.get("findings").and_then(Value::as_array) else {
            return Err(bad(
                name,
                "not a schedlab check report (no \"findings\" list; write one with `schedlab check --json FILE`)",
            ));
        };
        match value.get("schema_version").and_then(Value::as_u64) {
            Some(v) if READS_SCHEMA_VERSIONS.contains(&v) => {}
            Some(v) => {
                return Err(bad(
                    name,
                    format!("schema_version {v} is not one this schedlab reads (it reads {READS_SCHEMA_VERSIONS:?})"),
                ))
            }
            None => {
                return Err(bad(
                    name,
                    "has no schema_version: not a check report written by schedlab check --json",
                ))
            }
        }
        let findings = list
            .iter()
            .enumerate()
            .map(|(i, f)| {
                Found::deserialize(f)
                    .map_err(|e| bad(name, format!("finding {i} is malformed: {e}")))
            })
            .collect::<anyhow::Result<Vec<Found>>>()?;
        Ok(Doc {
            name,
            value,
            findings,
        })
    }

    fn side(&self) -> Side {
        let s = |k: &str| self.value[k].as_str().unwrap_or("").to_string();
        Side {
            source: self.name.to_string(),
            start_time: s("start_time"),
            host: s("host"),
            quick: self.value["quick"] == true,
            other_load_cpus: self.value["other_load_cpus"].as_f64().unwrap_or(0.0),
        }
    }

    fn find(&self, id: &str) -> Option<&Found> {
        self.findings.iter().find(|f| f.id == id)
    }
}

/// Compare `current` with `baseline` (check documents as JSON; the names say which is
/// which in errors and in the report). Bad documents are `Invalid` (exit code 2).
pub fn diff(baseline: (&str, &Value), current: (&str, &Value)) -> anyhow::Result<DiffReport> {
    let b = Doc::read(baseline.0, baseline.1)?;
    let c = Doc::read(current.0, current.1)?;
    let mut ids: Vec<&str> = b.findings.iter().map(|f| f.id.as_str()).collect();
    for f in &c.findings {
        if !ids.contains(&f.id.as_str()) {
            ids.push(&f.id);
        }
    }
    let findings: Vec<Compared> = ids
        .iter()
        .map(|id| compare(id, b.find(id), c.find(id)))
        .collect();
    let count = |m: Moved| findings.iter().filter(|c| c.verdict == m).count();
    Ok(DiffReport {
        baseline: b.side(),
        current: c.side(),
        machine_differences: machine_differences(b.value, c.value),
        regressed: count(Moved::Worse),
        better: count(Moved::Better),
        same: count(Moved::Within),
        not_compared: count(Moved::NotCompared),
        findings,
    })
}

/// One finding: both values, the ratio, and the verdict by the baseline's noise.
fn compare(id: &str, b: Option<&Found>, c: Option<&Found>) -> Compared {
    let any = b.or(c);
    let mut out = Compared {
        id: id.to_string(),
        title: any.map_or_else(|| id.to_string(), |f| f.title.clone()),
        unit: any.map_or_else(String::new, |f| f.unit.clone()),
        baseline: b.filter(|f| f.skipped().is_none()).map(|f| f.value),
        current: c.filter(|f| f.skipped().is_none()).map(|f| f.value),
        ratio: None,
        worse: b.and_then(|f| f.worse).or(c.and_then(|f| f.worse)),
        verdict: Moved::NotCompared,
        tolerance: "-".to_string(),
        reason: String::new(),
    };
    if let (Some(bv), Some(cv)) = (out.baseline, out.current) {
        out.ratio = (bv != 0.0).then(|| cv / bv);
    }
    let (b, c) = match (b, c) {
        (Some(b), Some(c)) => (b, c),
        (Some(_), None) => return not_compared(out, "only in the baseline".into()),
        (_, _) => return not_compared(out, "only in the current report".into()),
    };
    if let Some(why) = b.skipped() {
        return not_compared(out, format!("not measured in the baseline: {why}"));
    }
    if let Some(why) = c.skipped() {
        return not_compared(out, format!("not measured now: {why}"));
    }
    if b.unit != c.unit {
        return not_compared(out, format!("units differ ({} vs {})", b.unit, c.unit));
    }
    let Some(worse) = out.worse else {
        return not_compared(out, "the finding does not say which way is worse".into());
    };
    let Some(noise) = b.noise.as_ref() else {
        return not_compared(
            out,
            "the baseline records no noise for it (written by an older schedlab)".into(),
        );
    };
    let current_repeats = c.noise.as_ref().map_or(&[][..], |n| &n.repeats[..]);
    match judge(b.value, noise, c.value, current_repeats, worse) {
        Some((moved, tolerance)) => {
            out.verdict = moved;
            out.tolerance = tolerance;
            out
        }
        None => not_compared(
            out,
            "the baseline has neither repeated measurements nor a tolerance for it".into(),
        ),
    }
}

fn not_compared(mut c: Compared, reason: String) -> Compared {
    c.verdict = Moved::NotCompared;
    c.reason = reason;
    c
}

/// The baseline's band: the range of its repeats (and its value), or its value plus or
/// minus its tolerance; None when it has neither. Also says which was used.
pub fn band(value: f64, noise: &Noise) -> Option<(f64, f64, String)> {
    if noise.repeats.len() >= 2 {
        let lo = noise.repeats.iter().copied().fold(value, f64::min);
        let hi = noise.repeats.iter().copied().fold(value, f64::max);
        let words = format!(
            "baseline's {} repeats {}..{} ({})",
            noise.repeats.len(),
            short(lo),
            short(hi),
            noise.of
        );
        return Some((lo, hi, words));
    }
    let t = noise.tolerance?;
    let words = format!(
        "one measurement, +-{} {} ({})",
        short(t),
        noise.unit,
        noise.of
    );
    Some((value - t, value + t, words))
}

/// The verdict: worse only when even the current run's best repeat (or its value, with
/// none) lies beyond the baseline's worst, better the other way round; else within its
/// noise. None when the baseline gives no band.
pub fn judge(
    baseline: f64,
    noise: &Noise,
    current: f64,
    current_repeats: &[f64],
    worse: Worse,
) -> Option<(Moved, String)> {
    let (lo, hi, words) = band(baseline, noise)?;
    let cur_lo = current_repeats.iter().copied().fold(current, f64::min);
    let cur_hi = current_repeats.iter().copied().fold(current, f64::max);
    let (above, below) = (cur_lo > hi, cur_hi < lo);
    let moved = match (worse, above, below) {
        (Worse::Higher, true, _) | (Worse::Lower, _, true) => Moved::Worse,
        (Worse::Higher, _, true) | (Worse::Lower, true, _) => Moved::Better,
        _ => Moved::Within,
    };
    Some((moved, words))
}

/// A number in three significant digits, for the tolerance's words and the table.
pub fn short(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let digits = (2 - a.log10().floor() as i32).clamp(0, 6) as usize;
    format!("{v:.digits$}")
}

/// Machine facts (the header's `machine`, and `kernel`) that differ.
fn machine_differences(b: &Value, c: &Value) -> Vec<FactDiff> {
    let shown = |v: Option<&Value>| match v {
        None | Some(Value::Null) => "-".to_string(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    };
    let mut out = Vec::new();
    if b.get("kernel") != c.get("kernel") {
        out.push(FactDiff {
            fact: "kernel".into(),
            baseline: shown(b.get("kernel")),
            current: shown(c.get("kernel")),
        });
    }
    let empty = serde_json::Map::new();
    let bm = b["machine"].as_object().unwrap_or(&empty);
    let cm = c["machine"].as_object().unwrap_or(&empty);
    let mut keys: Vec<&String> = bm.keys().collect();
    keys.extend(cm.keys().filter(|k| !bm.contains_key(*k)));
    for k in keys {
        if bm.get(k) != cm.get(k) {
            out.push(FactDiff {
                fact: k.clone(),
                baseline: shown(bm.get(k)),
                current: shown(cm.get(k)),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn repeats(values: &[f64]) -> Noise {
        Noise::repeats("us/op", "chunks", values.to_vec())
    }

    fn moved(b: f64, n: &Noise, c: f64, cr: &[f64], w: Worse) -> Moved {
        judge(b, n, c, cr, w).map(|(m, _)| m).expect("a band")
    }

    #[test]
    fn the_verdict_uses_the_range_of_the_baselines_repeats() {
        let chunks = [9.0, 9.2, 9.5, 8.8];
        let n = repeats(&chunks);
        // The band, worked out here: the repeats' extremes (the value 9.1 lies inside).
        let (lo, hi) = (8.8, 9.5);
        let h = Worse::Higher;
        assert_eq!(moved(9.1, &n, 9.4, &[9.3, 9.45], h), Moved::Within);
        assert_eq!(moved(9.1, &n, hi, &[hi], h), Moved::Within, "on the edge");
        assert_eq!(moved(9.1, &n, hi + 0.01, &[hi + 0.01], h), Moved::Worse);
        assert_eq!(moved(9.1, &n, 18.2, &[17.6, 19.0], h), Moved::Worse);
        assert_eq!(moved(9.1, &n, lo - 0.01, &[], h), Moved::Better);
        // The current run's own spread overlapping the band: not beyond the noise.
        assert_eq!(moved(9.1, &n, 10.0, &[9.4, 10.5], h), Moved::Within);
        // Lower is worse: the same moves, the other way round.
        let l = Worse::Lower;
        assert_eq!(moved(9.1, &n, 18.2, &[17.6, 19.0], l), Moved::Better);
        assert_eq!(moved(9.1, &n, 4.5, &[4.4, 4.6], l), Moved::Worse);
        assert_eq!(moved(9.1, &n, 9.0, &[], l), Moved::Within);
    }

    #[test]
    fn a_baseline_value_outside_its_repeats_widens_the_band() {
        let n = repeats(&[2.0, 2.1]);
        assert_eq!(moved(2.5, &n, 2.45, &[], Worse::Higher), Moved::Within);
        assert_eq!(moved(2.5, &n, 2.55, &[], Worse::Higher), Moved::Worse);
    }

    #[test]
    fn one_measurement_uses_its_tolerance_and_says_so() {
        let n = Noise::single("% of a CPU", "two ticks", 0.8);
        // 5.0 +- 0.8: 4.2 .. 5.8.
        let l = Worse::Lower;
        assert_eq!(moved(5.0, &n, 5.79, &[], l), Moved::Within);
        assert_eq!(moved(5.0, &n, 4.21, &[], l), Moved::Within);
        assert_eq!(moved(5.0, &n, 4.19, &[], l), Moved::Worse);
        assert_eq!(moved(5.0, &n, 5.81, &[], l), Moved::Better);
        let (_, words) = judge(5.0, &n, 5.0, &[], l).expect("band");
        assert!(words.contains("+-0.800 % of a CPU (two ticks)"), "{words}");
        // An exact count: any change is real.
        let exact = Noise::single("writable", "a count", 0.0);
        assert_eq!(moved(4.0, &exact, 3.0, &[], l), Moved::Worse);
        assert_eq!(moved(4.0, &exact, 4.0, &[], l), Moved::Within);
        // One repeat and no tolerance: no band to judge by.
        assert!(judge(5.0, &repeats(&[5.0]), 9.0, &[], l).is_none());
    }

    fn finding(id: &str, value: f64, chunks: &[f64]) -> Value {
        json!({
            "id": id, "title": id, "unit": "us/op", "value": value, "verdict": "ok",
            "details": {}, "worse": "higher",
            "noise": {"unit": "us/op", "of": "chunks", "repeats": chunks, "tolerance": null},
        })
    }

    fn doc(findings: Vec<Value>, kernel: &str) -> Value {
        json!({
            "schema_version": 3, "kernel": kernel, "host": "h", "quick": true,
            "start_time": "2026-01-01T00:00:00Z", "other_load_cpus": 0.0,
            "machine": {"cpus": 2, "tick_hz": 250},
            "findings": findings,
        })
    }

    #[test]
    fn a_report_against_itself_has_no_regression() {
        let d = doc(
            vec![
                finding("a", 9.0, &[8.0, 10.0]),
                finding("b", 2.0, &[1.9, 2.2]),
            ],
            "6.18",
        );
        let r = diff(("base", &d), ("cur", &d)).expect("diff");
        assert_eq!(
            (r.regressed, r.better, r.same, r.not_compared),
            (0, 0, 2, 0)
        );
        assert_eq!(r.findings[0].ratio, Some(1.0));
        assert!(r.machine_differences.is_empty());
    }

    #[test]
    fn unknown_skipped_and_old_findings_are_not_compared_with_the_reason() {
        let mut skipped = finding("s", 0.0, &[]);
        skipped["details"] = json!({"skipped": true, "reason": "needs root"});
        let mut old = finding("o", 3.0, &[]);
        old.as_object_mut().map(|m| m.remove("noise"));
        let mut undirected = finding("u", 3.0, &[2.0, 4.0]);
        undirected["worse"] = Value::Null;
        let base = doc(
            vec![
                finding("a", 9.0, &[8.0, 10.0]),
                skipped,
                old.clone(),
                undirected.clone(),
            ],
            "6.18",
        );
        let cur = doc(
            vec![
                finding("s", 5.0, &[4.0, 6.0]),
                old,
                undirected,
                finding("new", 1.0, &[1.0, 1.1]),
            ],
            "6.19",
        );
        let r = diff(("base", &base), ("cur", &cur)).expect("diff");
        let reason = |id: &str| {
            let c = r.findings.iter().find(|c| c.id == id).expect(id);
            assert_eq!(c.verdict, Moved::NotCompared, "{id}");
            c.reason.clone()
        };
        assert_eq!(reason("a"), "only in the baseline");
        assert_eq!(reason("new"), "only in the current report");
        assert!(reason("s").contains("needs root"), "{}", reason("s"));
        assert!(reason("o").contains("older schedlab"), "{}", reason("o"));
        assert!(
            reason("u").contains("which way is worse"),
            "{}",
            reason("u")
        );
        assert_eq!(r.not_compared, 5);
        assert_eq!(r.machine_differences.len(), 1);
        assert_eq!(r.machine_differences[0].fact, "kernel");
    }

    #[test]
    fn documents_that_are_not_check_reports_are_bad_input() {
        let good = doc(vec![finding("a", 1.0, &[1.0, 1.1])], "6.18");
        let err = |v: Value| {
            let e = diff(("base.json", &good), ("x.json", &v)).expect_err("bad input");
            assert_eq!(crate::error::kind_of(&e), Some(crate::error::Kind::Invalid));
            e.to_string()
        };
        let e = err(json!({"schema_version": 3, "preset": "pipe-wakeup"}));
        assert!(e.starts_with("x.json: not a schedlab check report"), "{e}");
        let mut future = good.clone();
        future["schema_version"] = json!(99);
        let e = err(future);
        assert!(
            e.contains("schema_version 99 is not one this schedlab reads"),
            "{e}"
        );
        let e = err(json!({"schema_version": 3, "findings": [{"id": "a"}]}));
        assert!(e.contains("finding 0 is malformed"), "{e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
}
