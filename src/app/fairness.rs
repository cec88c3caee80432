//! The fairness headline live: each metric task's ideal CPU share from the kernel's
//! nice weights (water-filled over the CPUs the group may use, as the report does) and
//! the fraction of CPU time that went to the wrong task, over the last second.

use crate::cpuset::CpuSet;
use crate::ideal::{fairness_error, water_fill, weight_of_nice, IDLE_WEIGHT};
use crate::knob::task::Policy;
use crate::lab::describe::TaskInfo;
use crate::lab::store::Store;

/// The shares are averaged over this much of the latest samples: one 100 ms interval
/// holds a few slices of each of 21 tasks, so its shares are mostly rounding.
pub const WINDOW_S: f64 = 1.0;

/// Ideal shares (by task, None outside the metric group) and the fairness error now, or
/// None before the group has a sample.
pub fn now(
    tasks: &[TaskInfo],
    group: &str,
    store: &Store,
    online: usize,
) -> Option<(Vec<Option<f64>>, f64)> {
    let ids: Vec<usize> = (0..tasks.len())
        .filter(|&i| tasks[i].group == group)
        .collect();
    let samples: Vec<_> = ids
        .iter()
        .map(|&i| store.latest.get(i))
        .collect::<Option<_>>()?;
    let weights: Vec<f64> = samples
        .iter()
        .map(|s| match s.policy().and_then(Policy::from_kernel) {
            Some(Policy::Idle) => IDLE_WEIGHT as f64,
            _ => weight_of_nice(s.nice().unwrap_or(0)) as f64,
        })
        .collect();
    let cpus = samples
        .iter()
        .filter_map(|s| s.cpus_allowed)
        .fold(CpuSet::new(), |a, b| a.union(&b));
    let ncpus = if cpus.is_empty() {
        online.max(1)
    } else {
        cpus.count()
    };
    let ideal = water_fill(&weights, ncpus);
    let now_s = store.elapsed_s();
    let measured: Vec<f64> = ids
        .iter()
        .map(|&i| {
            let recent: Vec<f64> = store.tasks.get(i).map_or_else(Vec::new, |s| {
                s.points
                    .iter()
                    .rev()
                    .take_while(|r| r.t_s > now_s - WINDOW_S)
                    .map(|r| r.cpu_share)
                    .collect()
            });
            if recent.is_empty() {
                None
            } else {
                Some(recent.iter().sum::<f64>() / recent.len() as f64)
            }
        })
        .collect::<Option<_>>()?;
    let mut by_task = vec![None; tasks.len()];
    for (&i, &share) in ids.iter().zip(&ideal) {
        by_task[i] = Some(share);
    }
    Some((by_task, fairness_error(&measured, &ideal)))
}
