//! Every integration test, in one binary: a file per area, each a module. One binary
//! links once (twenty took a fresh `cargo test` 17 s of linking on two CPUs), and
//! [`common::serial`] then keeps real workloads one at a time across all of them.
//! Run one area with `cargo test --test integration trace_run::`.

mod common;

mod architecture;
mod attach;
mod build_script;
mod cgroup_v2;
mod check;
mod check_diff;
mod cli;
mod conventions;
mod docs;
mod hardening;
mod hostile_input;
mod knobs;
mod lesson;
mod limits;
mod measurement;
mod plot_compare;
mod pmqos;
mod replay;
mod sampler;
mod sched_ext;
mod trace;
mod trace_run;
mod tui_e2e;
mod workload;
