//! The deadline-cbs lesson played for real: admission control refusing the 55 ms
//! spinner is the step's effect, reported as a pass with the refusal listed.

use crate::common;

use std::process::Command;

#[test]
fn deadline_admission_refusal_is_the_step_passing() {
    let _guard = common::serial();
    let kernel = schedlab::facts::version(&schedlab::system::kernel_release());
    if !common::is_root() || kernel < (6, 12) {
        eprintln!("skipped: needs root and 6.12+ (the fair servers in the admission sum)");
        return;
    }
    let before = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us");
    // Three steps of 2 s: bounded by the lesson itself (and the timeout below).
    let out = Command::new("timeout")
        .arg("60")
        .arg(common::exe())
        .args(["lesson", "deadline-cbs", "--headless", "--json", "-"])
        .args(["--step-time", "2s"])
        .output()
        .expect("run");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    assert_eq!(
        std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").ok(),
        before.ok(),
        "the deadline limit is restored"
    );
    let step3 = &doc["steps"][2];
    let refused: Vec<&serde_json::Value> = step3["changes"]
        .as_array()
        .expect("changes")
        .iter()
        .filter(|c| c["ok"] == serde_json::Value::Bool(false))
        .collect();
    assert_eq!(refused.len(), 1, "{step3}");
    assert!(
        refused[0].to_string().contains("EBUSY"),
        "admission control refused it: {step3}"
    );
    assert_eq!(step3["result"], "pass", "{step3}");
}
