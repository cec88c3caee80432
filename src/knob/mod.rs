//! The knob path: everything that changes how the kernel schedules a task or the system,
//! with the journal that puts system-wide values back.

pub mod cgroup;
pub mod child;
pub mod errno;
pub mod features;
pub mod foreign;
pub mod fs;
pub mod journal;
pub mod scx;
pub mod sys;
pub mod task;

pub use task::SchedSettings;
