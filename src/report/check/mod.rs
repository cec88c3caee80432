//! What `schedlab check` reports: its findings, their verdicts, and the data behind its plots.

mod diff;
mod diff_text;
mod noise;
mod text;

use std::fmt;

use serde::Serialize;
use serde_json::{json, Value};

use crate::histogram::Histogram;

pub use diff::{diff, Compared, DiffReport, Moved};
pub use diff_text::render_diff;
pub use noise::{Noise, Worse};
pub use text::render_text;

/// How a finding compares with a healthy machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Ok,
    Notable,
    Problem,
}

impl Verdict {
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Notable => "notable",
            Verdict::Problem => "problem",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Other load (in CPUs) from which a finding, and the text report, note it.
pub const OTHER_LOAD_NOTE: f64 = 0.2;

/// Every finding's id, in report order. The JSON always has all of them.
pub const IDS: [&str; 12] = [
    "wakeup_latency_other",
    "wakeup_latency_fifo",
    "pm_qos_latency",
    "switch_cost_same_cpu",
    "traced_wakeup_latency",
    "switch_cost_cross_cpu",
    "pipe_wakeup_batch_ratio",
    "nice_fairness_error",
    "fifo_fair_share",
    "steal_time",
    "cpu_speed",
    "knobs",
];

/// Budget of the default run and of `--quick`, in seconds (the check prints what it took).
pub const BUDGET_S: f64 = 60.0;
pub const QUICK_BUDGET_S: f64 = 15.0;

/// One line of the check.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Finding {
    pub id: String,
    /// What was measured, in a few words.
    pub title: String,
    /// The headline number (always finite; 0 when it could not be measured, see details).
    pub value: f64,
    pub unit: String,
    /// What a healthy machine shows.
    pub healthy: String,
    pub verdict: Verdict,
    /// One sentence: why this verdict.
    pub explanation: String,
    /// How it was measured (and which tool it matches).
    pub method: String,
    pub details: Value,
    /// Which way the value gets worse (None: no direction, `check diff` does not judge it).
    pub worse: Option<Worse>,
    /// Its repeated measurements or honest tolerance, for `check diff`.
    pub noise: Option<Noise>,
    /// The value as the text report shows it.
    #[serde(skip)]
    pub shown: String,
}

/// One bar of a plot: label, value, and the range it varied over.
pub type Bar = (String, f64, Option<(f64, f64)>);

/// Data behind the plots, kept out of the JSON.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CheckData {
    /// Wakeup latency histograms by policy (ns).
    pub latency: Vec<(String, Histogram)>,
    /// (label, us per round trip, range over chunks of the run).
    pub switch_cost: Vec<Bar>,
    /// (cpuN, M iterations/s best, range over slices).
    pub cpu_speed: Vec<Bar>,
}

/// Everything `schedlab check` found.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct CheckReport {
    pub kernel: String,
    pub cpus: usize,
    pub quick: bool,
    /// Wall time of the whole check.
    pub duration_s: f64,
    pub budget_s: f64,
    /// A hypervisor flag, a registered hypervisor or steal time was seen.
    pub vm: bool,
    /// CPUs kept busy on average by other processes during the check (their load
    /// disturbs every number here).
    pub other_load_cpus: f64,
    pub interrupted: bool,
    pub findings: Vec<Finding>,
    #[serde(skip)]
    pub data: CheckData,
}

impl CheckReport {
    pub fn finding(&self, id: &str) -> Option<&Finding> {
        self.findings.iter().find(|f| f.id == id)
    }
}

/// A finding not judged yet: notable and "-" until its builder fills it in.
pub fn finding(id: &str, title: &str, unit: &str, healthy: &str, method: String) -> Finding {
    Finding {
        id: id.to_string(),
        title: title.to_string(),
        value: 0.0,
        unit: unit.to_string(),
        healthy: healthy.to_string(),
        verdict: Verdict::Notable,
        explanation: String::new(),
        method,
        details: json!({}),
        worse: None,
        noise: None,
        shown: "-".to_string(),
    }
}

impl Finding {
    /// Which way is worse, and how much the value moves by itself.
    pub fn spread(mut self, worse: Worse, noise: Option<Noise>) -> Finding {
        self.worse = Some(worse);
        self.noise = noise;
        self
    }

    pub fn judged(mut self, (verdict, explanation): (Verdict, String)) -> Finding {
        self.verdict = verdict;
        self.explanation = explanation;
        self
    }

    /// Not measured: why, and how bad that is.
    pub fn skipped(mut self, verdict: Verdict, why: String) -> Finding {
        self.verdict = verdict;
        self.shown = "not measured".to_string();
        self.details = json!({ "skipped": true, "reason": why });
        self.noise = None;
        self.explanation = why;
        self
    }

    /// Not measured because a signal asked the check to stop: not the machine's fault.
    pub fn interrupted(self) -> Finding {
        self.skipped(
            Verdict::Notable,
            "not measured: the check was interrupted".to_string(),
        )
    }
}

/// A report with every finding ok, for the renderers' tests.
#[cfg(test)]
pub(crate) fn sample() -> CheckReport {
    let findings = IDS
        .iter()
        .map(|id| {
            let mut f = finding(id, id, "us", "healthy", format!("method of {id}"));
            f.value = 1.0;
            f.shown = "1.0 us".into();
            f.judged((Verdict::Ok, "fine".into()))
        })
        .collect();
    CheckReport {
        kernel: "6.18.0".into(),
        cpus: 2,
        quick: true,
        duration_s: 11.2,
        budget_s: QUICK_BUDGET_S,
        vm: true,
        other_load_cpus: 0.0,
        interrupted: false,
        findings,
        data: CheckData::default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_has_the_documented_shape() {
        let v = serde_json::to_value(sample()).expect("json");
        for key in ["kernel", "cpus", "quick", "duration_s", "findings"] {
            assert!(!v[key].is_null(), "{key}");
        }
        let f = &v["findings"][0];
        for key in [
            "id",
            "title",
            "value",
            "unit",
            "healthy",
            "verdict",
            "explanation",
            "method",
            "details",
        ] {
            assert!(!f[key].is_null(), "{key}");
        }
        assert_eq!(f["verdict"], "ok");
        assert!(f.get("shown").is_none());
    }

    #[test]
    fn skipped_findings_keep_a_finite_value_and_say_why() {
        let f = finding("x", "x", "us", "h", String::new())
            .skipped(Verdict::Notable, "only one CPU".into());
        assert_eq!(f.value, 0.0);
        assert_eq!(f.details["skipped"], true);
        assert_eq!(f.explanation, "only one CPU");
    }
}
