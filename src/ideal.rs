//! The CPU share each task should get from the kernel's nice weights, water-filled over
//! the CPUs: no task can use more than one CPU, and what a capped task cannot use is
//! shared among the others by weight.

/// The kernel's sched_prio_to_weight table, nice -20..19.
const NICE_TO_WEIGHT: [u32; 40] = [
    88761, 71755, 56483, 46273, 36291, 29154, 23254, 18705, 14949, 11916, 9548, 7620, 6100, 4904,
    3906, 3121, 2501, 1991, 1586, 1277, 1024, 820, 655, 526, 423, 335, 272, 215, 172, 137, 110, 87,
    70, 56, 45, 36, 29, 23, 18, 15,
];

/// SCHED_IDLE tasks get this weight whatever their nice.
pub const IDLE_WEIGHT: u32 = 3;

/// The load weight of a fair task at `nice` (clamped to -20..19, as the kernel does).
pub fn weight_of_nice(nice: i32) -> u32 {
    NICE_TO_WEIGHT[(nice.clamp(-20, 19) + 20) as usize]
}

/// Ideal shares (fractions of one CPU) for tasks of the given weights on `cpus` CPUs.
pub fn water_fill(weights: &[f64], cpus: usize) -> Vec<f64> {
    let mut share = vec![0.0; weights.len()];
    let mut capped = vec![false; weights.len()];
    let mut capacity = cpus as f64;
    loop {
        let total: f64 = weights
            .iter()
            .zip(&capped)
            .filter(|(_, c)| !**c)
            .map(|(w, _)| w)
            .sum();
        if total <= 0.0 || capacity <= 0.0 {
            break;
        }
        let mut newly_capped = false;
        for i in 0..weights.len() {
            if !capped[i] {
                share[i] = capacity * weights[i] / total;
            }
        }
        for i in 0..weights.len() {
            if !capped[i] && share[i] > 1.0 {
                share[i] = 1.0;
                capped[i] = true;
                capacity -= 1.0;
                newly_capped = true;
            }
        }
        if !newly_capped {
            break;
        }
    }
    share
}

/// The fraction of CPU time that went to the wrong task: half the summed absolute
/// difference (every misplaced unit shows up once as excess and once as deficit),
/// over the total ideal share.
pub fn fairness_error(measured: &[f64], ideal: &[f64]) -> f64 {
    let total: f64 = ideal.iter().sum();
    if total <= 0.0 {
        return 0.0;
    }
    let diff: f64 = measured.iter().zip(ideal).map(|(m, i)| (m - i).abs()).sum();
    diff / (2.0 * total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_the_kernel_table() {
        assert_eq!(weight_of_nice(0), 1024);
        assert_eq!(weight_of_nice(-20), 88761);
        assert_eq!(weight_of_nice(19), 15);
        assert_eq!(weight_of_nice(20), 15, "nice 20 is clamped to 19");
    }

    #[test]
    fn wide_ladder_on_two_cpus_matches_the_experiment_notes() {
        // -20..20 step 4, as in EXPERIMENTS.md: ideal -20 -> 1.0, -16 -> 0.589, -12 -> 0.243.
        let weights: Vec<f64> = (-20..=20)
            .step_by(4)
            .map(|n| weight_of_nice(n) as f64)
            .collect();
        let ideal = water_fill(&weights, 2);
        assert!((ideal[0] - 1.0).abs() < 1e-9);
        assert!((ideal[1] - 0.589).abs() < 0.001, "{}", ideal[1]);
        assert!((ideal[2] - 0.243).abs() < 0.001, "{}", ideal[2]);
        assert!((ideal[3] - 0.099).abs() < 0.001, "{}", ideal[3]);
        assert!((ideal.iter().sum::<f64>() - 2.0).abs() < 1e-9);
    }

    #[test]
    fn fewer_tasks_than_cpus_each_get_one_cpu() {
        assert_eq!(water_fill(&[1024.0, 15.0], 4), vec![1.0, 1.0]);
        assert!(water_fill(&[], 2).is_empty());
    }

    #[test]
    fn fairness_error_is_the_misplaced_fraction() {
        assert_eq!(fairness_error(&[0.5, 0.5], &[0.5, 0.5]), 0.0);
        assert!((fairness_error(&[0.6, 0.4], &[0.5, 0.5]) - 0.1).abs() < 1e-9);
    }
}
