//! Per-run cpu-controller cgroups (v1 or v2): find the controller, create groups, set
//! weight/quota/idle/RT runtime, move tasks.

mod files;
mod groups;
mod mount;
pub mod stat;
mod values;

pub use groups::Cgroups;
pub use mount::{at, detect, detect_from, CgroupRoot, MountError, Version};
pub use values::{precheck, CgroupValue, Quota, KNOBS};
