//! Drivers that run an experiment to its end without a terminal: `run`, `sweep` and
//! `compare`.

pub mod compare;
pub mod lesson;
pub mod run;
pub mod sweep;
