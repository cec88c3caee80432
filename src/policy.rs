//! Scheduling policies: the names schedlab takes and shows, and the kernel's numbers.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::Invalid;

/// A scheduling policy, as `sched_setattr` knows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    #[serde(alias = "normal")]
    Other,
    Batch,
    Idle,
    Fifo,
    Rr,
    Deadline,
}

impl Policy {
    pub const ALL: [Policy; 6] = [
        Policy::Other,
        Policy::Batch,
        Policy::Idle,
        Policy::Fifo,
        Policy::Rr,
        Policy::Deadline,
    ];
    pub const ALLOWED: &'static str = "other, batch, idle, fifo, rr, deadline";

    pub fn to_kernel(self) -> u32 {
        match self {
            Policy::Other => libc::SCHED_OTHER as u32,
            Policy::Fifo => libc::SCHED_FIFO as u32,
            Policy::Rr => libc::SCHED_RR as u32,
            Policy::Batch => libc::SCHED_BATCH as u32,
            Policy::Idle => libc::SCHED_IDLE as u32,
            Policy::Deadline => 6,
        }
    }

    pub fn from_kernel(policy: u32) -> Option<Policy> {
        Policy::ALL.into_iter().find(|p| p.to_kernel() == policy)
    }

    pub fn name(self) -> &'static str {
        match self {
            Policy::Other => "other",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
            Policy::Fifo => "fifo",
            Policy::Rr => "rr",
            Policy::Deadline => "deadline",
        }
    }

    pub fn is_realtime(self) -> bool {
        matches!(self, Policy::Fifo | Policy::Rr)
    }

    /// Policies of the fair class, where nice sets the weight and a custom slice applies.
    pub fn is_fair(self) -> bool {
        matches!(self, Policy::Other | Policy::Batch)
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Policy {
    type Err = Invalid;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let lower = s.trim().to_ascii_lowercase();
        let lower = lower.strip_prefix("sched_").unwrap_or(&lower);
        match lower {
            "other" | "normal" => Ok(Policy::Other),
            "batch" => Ok(Policy::Batch),
            "idle" => Ok(Policy::Idle),
            "fifo" => Ok(Policy::Fifo),
            "rr" => Ok(Policy::Rr),
            "deadline" => Ok(Policy::Deadline),
            _ => Err(Invalid(format!(
                "unknown policy \"{s}\": allowed are {}",
                Policy::ALLOWED
            ))),
        }
    }
}

/// Short lower-case name of a scheduling policy number: the knob path's names (one
/// table), and sched_ext's, which schedlab reads but never sets.
pub fn policy_name(policy: u32) -> &'static str {
    const SCHED_EXT: u32 = 7;
    match Policy::from_kernel(policy) {
        Some(p) => p.name(),
        None if policy == SCHED_EXT => "ext",
        None => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_numbers_have_names() {
        let names: Vec<_> = (0..9).map(policy_name).collect();
        assert_eq!(
            names,
            ["other", "fifo", "rr", "batch", "unknown", "idle", "deadline", "ext", "unknown"]
        );
        assert_eq!(policy_name(u32::MAX), "unknown");
    }
}
