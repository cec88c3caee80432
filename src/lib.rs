//! schedlab: a workbench that makes the Linux CPU scheduler visible.
//!
//! Two paths carry everything, and the module names follow them:
//! - samples: [`workload`] tasks -> [`sampler`] thread (procfs) -> `Batch` over a channel
//!   -> [`store`] (counters turned into rates) -> [`report`] / views;
//! - knobs: `--set` or a key -> [`setting`] -> [`knob`] (syscalls, files) -> result.

pub mod app;
pub mod check;
pub mod cli;
pub mod commands;
pub mod cpuset;
pub mod error;
pub mod headless;
pub mod ideal;
pub mod input;
pub mod knob;
pub mod lab;
pub mod plot;
pub mod preset;
pub mod report;
pub mod sampler;
pub mod state;
pub mod system;
pub mod tui;
pub mod ui;
pub mod workload;
