//! schedlab: a workbench that makes the Linux CPU scheduler visible.
//!
//! Two paths carry everything, and the module names follow them:
//! - samples: procfs -> [`sampler`] thread -> owned `Batch`es over a channel ->
//!   [`lab`]`::experiment` -> [`lab`]`::store` (counters turned into rates) ->
//!   [`report`] (headless) or [`app`] (the workbench's state) -> [`ui`] (drawing);
//!   with tracing, the sched tracepoints -> [`trace`] thread -> the same experiment
//!   (and [`report::perfetto`] for a Perfetto export);
//! - knobs: a key ([`app`]) or `--set`/`--at` ([`preset`]`::setting`) ->
//!   [`lab`]`::experiment::Experiment::apply` -> [`lab`]`::session` -> [`knob`] (task
//!   syscalls, system files through the journal, cgroup files) -> the kernel.
//!
//! [`commands`] has one file per subcommand; [`headless`], [`check`] and [`tui`] drive an
//! `Experiment`; [`workload`] starts and contains the tasks; [`error`] holds the errors
//! callers tell apart. The words every path shares each have one leaf module: [`clock`]
//! (the monotonic clock), [`histogram`] (latency histograms), [`format`] (how numbers are
//! printed) and [`policy`] (scheduling policies).

pub mod app;
pub mod check;
pub mod cli;
pub mod clock;
pub mod columns;
pub mod commands;
pub mod cpuset;
pub mod error;
pub mod facts;
pub mod format;
pub mod headless;
pub mod histogram;
pub mod ideal;
pub mod input;
pub mod kconfig;
pub mod knob;
pub mod lab;
pub mod lesson;
pub mod outfile;
pub mod plot;
pub mod policy;
pub mod preset;
#[cfg(test)]
mod proptests;
pub mod report;
pub mod safe_text;
pub mod sampler;
pub mod state;
pub mod system;
#[cfg(test)]
pub(crate) mod testing;
pub mod trace;
pub mod tui;
pub mod ui;
pub mod workload;
