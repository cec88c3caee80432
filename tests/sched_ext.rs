//! `sys.sched_ext` through the binary: the knobs row says what this kernel has, and a
//! scheduler that is not installed is bad input, refused before anything starts.

use crate::common;

use std::path::Path;

use schedlab::knob::scx;

#[test]
fn knobs_shows_sched_ext_as_the_kernel_has_it() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(common::exe())
        .args(["knobs", "--json"])
        .env("SCHEDLAB_JOURNAL", tmp.path().join("journal.jsonl"))
        .output()
        .expect("run schedlab knobs");
    let j = common::json_output(&out);
    let row = j["system"]
        .as_array()
        .and_then(|rows| rows.iter().find(|k| k["name"] == "sys.sched_ext"))
        .cloned()
        .unwrap_or_else(|| panic!("no sys.sched_ext row in {j}"));
    let here = scx::detect(Path::new("/"));
    assert_eq!(row["path"], "/sys/kernel/sched_ext/state", "{row}");
    match here.unavailable() {
        Some(why) => {
            assert_eq!(row["why_not"], why.as_str(), "{row}");
            assert!(row["value"].is_null() && row["writable"] == false, "{row}");
        }
        None => assert_eq!(row["value"], here.value().unwrap_or_default().as_str()),
    }
}

#[test]
fn a_scheduler_that_is_not_installed_is_refused_before_anything_starts() {
    // Held in case a regression lets the run start its workload.
    let _serial = common::serial();
    let tmp = tempfile::tempdir().expect("tempdir");
    let out = std::process::Command::new(common::exe())
        .args(["run", "pipe-wakeup", "--duration", "1s"])
        .args(["--set", "sys.sched_ext=scx_not_installed_here"])
        .env("SCHEDLAB_JOURNAL", tmp.path().join("journal.jsonl"))
        .env("PATH", tmp.path())
        .output()
        .expect("run schedlab");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("sys.sched_ext=scx_not_installed_here: no program \"scx_not_installed_here\" on PATH; allowed off"),
        "{stderr}"
    );
}
