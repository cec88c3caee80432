//! The knob path: everything that changes how the kernel schedules a task or the system.

pub mod errno;
pub mod task;

pub use task::{Policy, SchedSettings};
