//! The errors callers tell apart: bad input (exit code 2), a knob the kernel or the
//! machine refused, another schedlab holding the knob lock (exit code 4). Everything
//! else is an `anyhow::Error` with context, reported at the edges.

/// Bad input the user can fix: a malformed preset, an unknown task or knob name, a
/// value out of range. The message names what was wrong and what is allowed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Invalid(pub String);

impl Invalid {
    pub fn new(msg: impl Into<String>) -> Invalid {
        Invalid(msg.into())
    }
}

/// Why a knob change did not happen.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum KnobError {
    /// The name or value is not allowed; nothing was tried.
    #[error("{0}")]
    Invalid(String),
    /// The kernel or the machine's state refused it (a privilege, lockdown, a missing
    /// feature, a task that died, RT bandwidth).
    #[error("{0}")]
    Refused(String),
    /// Another schedlab is changing system knobs; nothing was tried.
    #[error("another schedlab ({holder}) is changing system knobs; wait for it to finish")]
    Locked { holder: String },
}

impl KnobError {
    pub fn refused(msg: impl Into<String>) -> KnobError {
        KnobError::Refused(msg.into())
    }

    pub fn invalid(msg: impl Into<String>) -> KnobError {
        KnobError::Invalid(msg.into())
    }

    /// The same error with `prefix: ` before its message (a knob's name, a step).
    pub fn context(self, prefix: impl std::fmt::Display) -> KnobError {
        match self {
            KnobError::Invalid(m) => KnobError::Invalid(format!("{prefix}: {m}")),
            KnobError::Refused(m) => KnobError::Refused(format!("{prefix}: {m}")),
            locked @ KnobError::Locked { .. } => locked,
        }
    }
}

impl From<Invalid> for KnobError {
    fn from(e: Invalid) -> KnobError {
        KnobError::Invalid(e.0)
    }
}

/// What an error means for the exit code: 2 for input the user can fix, 4 when another
/// schedlab holds the knob lock, else None (the caller decides).
pub fn usage_or_locked(e: &anyhow::Error) -> Option<u8> {
    for cause in e.chain() {
        if cause.is::<Invalid>() || matches!(cause.downcast_ref(), Some(KnobError::Invalid(_))) {
            return Some(2);
        }
        if matches!(cause.downcast_ref(), Some(KnobError::Locked { .. })) {
            return Some(4);
        }
    }
    None
}
