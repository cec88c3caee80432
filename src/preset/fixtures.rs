//! Test helpers shared by the preset modules' tests: a built-in preset, one `--set`,
//! a two-CPU machine.

use super::setting::Setting;
use super::{Preset, BUILTIN};
use crate::cpuset::CpuSet;
use crate::error::Invalid;

pub(super) fn builtin(name: &str) -> Preset {
    let text = BUILTIN
        .iter()
        .find(|(n, _)| *n == name)
        .expect("built-in")
        .1;
    Preset::parse(text, "built-in").expect("built-in presets parse")
}

pub(super) fn set(p: &mut Preset, s: &str) -> Result<(), Invalid> {
    p.apply_all(&[s.parse::<Setting>()?])
}

pub(super) fn two_cpus() -> CpuSet {
    CpuSet::first_n(2)
}
