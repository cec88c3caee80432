//! A running experiment: its session (workload and task knobs), sampler, store,
//! recorder and the log of knob changes.

pub mod describe;
pub mod experiment;
#[cfg(test)]
pub(crate) mod fixtures;
pub mod live;
pub mod pingpong;
pub mod record;
pub mod session;
pub mod store;
pub mod switches;
