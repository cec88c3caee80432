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

/// The kinds of error that get their own exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Input the user can fix.
    Invalid,
    /// Another schedlab holds the knob lock.
    Locked,
}

/// What kind of error `e` is, by the first cause that says; None for other failures.
pub fn kind_of(e: &anyhow::Error) -> Option<Kind> {
    e.chain().find_map(|cause| {
        if cause.is::<Invalid>() {
            return Some(Kind::Invalid);
        }
        match cause.downcast_ref::<KnobError>()? {
            KnobError::Invalid(_) => Some(Kind::Invalid),
            KnobError::Locked { .. } => Some(Kind::Locked),
            KnobError::Refused(_) => None,
        }
    })
}

impl KnobError {
    /// A journal failure (an I/O error, or the knob lock held by another schedlab),
    /// which means the knob was not touched.
    pub fn from_journal(e: anyhow::Error) -> KnobError {
        match e.downcast_ref::<KnobError>() {
            Some(locked @ KnobError::Locked { .. }) => locked.clone(),
            _ => KnobError::Refused(format!("journal: {e:#}")),
        }
    }
}
