//! Test data shared by the tests of the engine and of the workbench: a started
//! rt-throttle experiment, its batches, its system knobs.

use crate::cpuset::CpuSet;
use crate::knob::sys::KnobInfo;
use crate::lab::describe::{PresetView, Started, TaskInfo};
use crate::preset::Headline;
use crate::sampler::parse::{SchedFile, Schedstat, StatFile};
use crate::sampler::{Batch, TaskSample};

pub(crate) fn started() -> Started {
    Started {
        preset: PresetView {
            name: "rt-throttle".into(),
            summary: "a spinner and a fair thread".into(),
            note: "Try sys.rt_runtime_us=600000.".into(),
            focus: vec!["sys.rt_runtime_us".into()],
            headline: Headline::Share,
            metric_task: "fair".into(),
        },
        tasks: ["fifo", "fair"]
            .iter()
            .enumerate()
            .map(|(i, n)| TaskInfo {
                name: n.to_string(),
                group: n.to_string(),
                // Processes of their own: the tests sort and filter them as equals.
                pid: 100 + i as i32,
                tid: 100 + i as i32,
                progress_unit: "iterations".into(),
                measures_latency: false,
            })
            .collect(),
        kernel: "6.18.0-test".into(),
        scheduler: "EEVDF".into(),
        cpus: 2,
        warnings: Vec::new(),
    }
}

/// A batch at `t` seconds: fifo runs 90 % of the time, fair 10 %.
pub(crate) fn batch(t: u64) -> Batch {
    let sample = |id: usize, share: f64, policy: u32, prio: i32| TaskSample {
        id,
        alive: true,
        sched: SchedFile {
            sum_exec_runtime_ns: Some((t as f64 * share * 1e9) as u64),
            nr_switches: Some(t * 10),
            nr_voluntary_switches: Some(t * 2),
            nr_involuntary_switches: Some(t * 8),
            nr_migrations: Some(0),
            policy: Some(policy),
            prio: Some(prio),
            ..SchedFile::default()
        },
        schedstat: Some(Schedstat {
            run_ns: (t as f64 * share * 1e9) as u64,
            wait_ns: (t as f64 * (1.0 - share) * 1e9) as u64,
            timeslices: t * 10,
        }),
        stat: Some(StatFile {
            processor: Some(0),
            nice: if policy == 0 { -20 } else { 0 },
            ..StatFile::default()
        }),
        cpus_allowed: Some(CpuSet::single(0)),
        progress: t * 1_000_000,
        ..TaskSample::default()
    };
    let cpu = |busy: u64, steal: u64| crate::sampler::parse::CpuTimes {
        user: t * busy,
        steal: t * steal,
        idle: t * (100 - busy - steal),
        ..Default::default()
    };
    Batch {
        seq: t,
        t_ns: 1_000_000_000 + t * 1_000_000_000,
        tasks: vec![sample(0, 0.9, 1, 98), sample(1, 0.1, 0, 100)],
        system: crate::sampler::SystemSample {
            cpus: vec![cpu(98, 2), cpu(5, 1)],
            ..Default::default()
        },
        ..Batch::default()
    }
}

pub(crate) fn knobs() -> Vec<KnobInfo> {
    vec![
        KnobInfo {
            name: "sys.rt_runtime_us".into(),
            value: Some("950000".into()),
            allowed: "-1 or 0..period".into(),
            writable: true,
            why_not: None,
            path: None,
            help: String::new(),
        },
        KnobInfo {
            name: "sys.feature.WA_IDLE".into(),
            value: Some("on".into()),
            allowed: "on or off".into(),
            writable: false,
            why_not: Some("kernel lockdown blocks debugfs writes".into()),
            path: None,
            help: String::new(),
        },
    ]
}
