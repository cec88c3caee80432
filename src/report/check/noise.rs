//! How much a finding's number moves by itself, and which way is worse: what `check diff` judges a change by.

use serde::{Deserialize, Serialize};

/// Which way a finding's value gets worse.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Worse {
    /// Latency, switch cost, error, steal: more is worse.
    Higher,
    /// Speedup, share, writable knobs: less is worse.
    Lower,
}

impl Worse {
    pub fn name(self) -> &'static str {
        match self {
            Worse::Higher => "higher",
            Worse::Lower => "lower",
        }
    }
}

/// The finding's own spread: its repeated measurements, or for one measurement an
/// honest tolerance and why. Every number is in the finding's `unit`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Noise {
    pub unit: String,
    /// What one repeat is ("us/op of each tenth of the run").
    pub of: String,
    /// The repeated measurements of the value, in order (empty: one measurement).
    #[serde(default)]
    pub repeats: Vec<f64>,
    /// With one measurement: how far the value may move either way and mean nothing.
    #[serde(default)]
    pub tolerance: Option<f64>,
}

impl Noise {
    /// Repeated measurements of a value in `unit`.
    pub fn repeats(unit: &str, of: &str, repeats: Vec<f64>) -> Noise {
        Noise {
            unit: unit.to_string(),
            of: of.to_string(),
            repeats: repeats.into_iter().filter(|v| v.is_finite()).collect(),
            tolerance: None,
        }
    }

    /// One measurement, honestly uncertain by `tolerance` (in `unit`) because of `why`.
    pub fn single(unit: &str, why: &str, tolerance: f64) -> Noise {
        Noise {
            unit: unit.to_string(),
            of: why.to_string(),
            repeats: Vec::new(),
            tolerance: Some(tolerance.max(0.0)),
        }
    }
}
