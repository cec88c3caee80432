//! Running a preset's tasks as real processes and threads: spawning, the start gate,
//! shared-memory progress, and making sure no worker outlives schedlab.

pub mod attach;
pub mod contain;
pub mod kinds;
pub mod lock;
pub mod make;
pub mod shm;
pub mod spawn;
pub mod spec;
pub mod tail;
pub mod workers;

pub use spawn::{adopt_orphans, CannotRun, RunningTask, Workload};

/// The most instances one task group may have, and the most tasks an experiment follows.
/// It lives here, not with the presets that check it, because attaching caps the tasks by
/// it too and presets build on workload.
pub const MAX_COUNT: usize = 256;
