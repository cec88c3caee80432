//! Scheduler features (`/sys/kernel/debug/sched/features`): parsing the features file,
//! and decoding the bitmask in sched/debug when lockdown hides the features file.

/// Feature order of kernel/sched/features.h in Linux 6.12-6.18 (bit i = entry i). The
/// order changes between releases, so a decode is labelled with this range.
pub const ORDER_6_12: [&str; 27] = [
    "PLACE_LAG",
    "PLACE_DEADLINE_INITIAL",
    "PLACE_REL_DEADLINE",
    "RUN_TO_PARITY",
    "PREEMPT_SHORT",
    "NEXT_BUDDY",
    "CACHE_HOT_BUDDY",
    "DELAY_DEQUEUE",
    "DELAY_ZERO",
    "WAKEUP_PREEMPTION",
    "HRTICK",
    "HRTICK_DL",
    "DOUBLE_TICK",
    "NONTASK_CAPACITY",
    "TTWU_QUEUE",
    "SIS_UTIL",
    "WARN_DOUBLE_CLOCK",
    "RT_PUSH_IPI",
    "RT_RUNTIME_SHARE",
    "LB_MIN",
    "ATTACH_AGE_LOAD",
    "WA_IDLE",
    "WA_WEIGHT",
    "WA_BIAS",
    "UTIL_EST",
    "LATENCY_WARN",
    "HZ_BW",
];

/// Which kernels [`ORDER_6_12`] describes.
pub const ORDER_6_12_KERNELS: &str = "Linux 6.12-6.18";

/// Features that existed once, and what replaced them: the answer a user needs when a
/// preset or tutorial names one.
pub const REMOVED: &[(&str, &str)] = &[
    ("SYNC_WAKEUPS", "SYNC_WAKEUPS was removed in 2.6.35; the wake-affine features now are WA_IDLE, WA_WEIGHT, WA_BIAS"),
    ("AFFINE_WAKEUPS", "AFFINE_WAKEUPS was removed in 2.6.36; the wake-affine features now are WA_IDLE, WA_WEIGHT, WA_BIAS"),
    ("GENTLE_FAIR_SLEEPERS", "GENTLE_FAIR_SLEEPERS went with CFS in 6.6; EEVDF places waking tasks by lag (PLACE_LAG)"),
    ("START_DEBIT", "START_DEBIT went with CFS in 6.6; EEVDF uses PLACE_DEADLINE_INITIAL"),
    ("LAST_BUDDY", "LAST_BUDDY was removed in 6.6 with EEVDF"),
    ("SIS_PROP", "SIS_PROP was removed in 6.5; idle-CPU search is limited by SIS_UTIL"),
    ("UTIL_EST_FASTUP", "UTIL_EST_FASTUP was removed in 6.9"),
    ("LB_BIAS", "LB_BIAS was removed in 5.0"),
    ("NORMALIZED_SLEEPER", "NORMALIZED_SLEEPER was removed in 2.6.32"),
    ("WAKEUP_OVERLAP", "WAKEUP_OVERLAP was removed in 2.6.35"),
];

/// Parse the features file: `PLACE_LAG NO_NEXT_BUDDY ...` -> (name, on).
pub fn parse_features_file(text: &str) -> Vec<(String, bool)> {
    text.split_whitespace()
        .map(|w| match w.strip_prefix("NO_") {
            Some(name) => (name.to_string(), false),
            None => (w.to_string(), true),
        })
        .collect()
}

/// The `.sysctl_sched_features` bitmask from /sys/kernel/debug/sched/debug.
pub fn parse_debug_mask(debug: &str) -> Option<u64> {
    debug.lines().find_map(|l| {
        let (key, value) = l.split_once(':')?;
        (key.trim().trim_start_matches('.') == "sysctl_sched_features")
            .then(|| value.trim().parse().ok())?
    })
}

/// Decode a bitmask with a feature order; bits beyond the order come back as `BIT_N`.
pub fn decode(mask: u64, order: &[&str]) -> Vec<(String, bool)> {
    let width = (64 - mask.leading_zeros() as usize).max(order.len());
    (0..width)
        .map(|i| {
            let name = order
                .get(i)
                .map_or_else(|| format!("BIT_{i}"), |n| n.to_string());
            (name, mask >> i & 1 == 1)
        })
        .collect()
}

/// Why a feature name is not available: removed long ago, or simply unknown here.
pub fn missing_reason(name: &str, present: &[(String, bool)]) -> String {
    if let Some((_, why)) = REMOVED.iter().find(|(n, _)| *n == name) {
        return format!("feature does not exist on this kernel ({why})");
    }
    let names: Vec<&str> = present.iter().map(|(n, _)| n.as_str()).collect();
    format!(
        "feature {name} does not exist on this kernel; its features are {}",
        names.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn features_file_names_and_states() {
        let f = parse_features_file("PLACE_LAG NO_NEXT_BUDDY WA_IDLE \n");
        assert_eq!(
            f,
            vec![
                ("PLACE_LAG".into(), true),
                ("NEXT_BUDDY".into(), false),
                ("WA_IDLE".into(), true)
            ]
        );
    }

    #[test]
    fn decodes_this_machines_mask() {
        // .sysctl_sched_features on the development machine (6.18).
        let debug = "sysctl_sched\n  .sysctl_sched_base_slice                 : 1.400000\n  .sysctl_sched_features                   : 99674079\n";
        let mask = parse_debug_mask(debug).expect("mask");
        assert_eq!(mask, 99674079);
        let f = decode(mask, &ORDER_6_12);
        assert_eq!(f.len(), 27, "no bit beyond the table");
        let on = |n: &str| f.iter().find(|(name, _)| name == n).map(|(_, on)| *on);
        assert_eq!(on("PLACE_LAG"), Some(true));
        assert_eq!(on("NEXT_BUDDY"), Some(false));
        assert_eq!(on("WAKEUP_PREEMPTION"), Some(true));
        assert_eq!(
            on("RT_RUNTIME_SHARE"),
            Some(false),
            "off by default since 5.10"
        );
        assert_eq!(on("WA_IDLE"), Some(true));
        assert_eq!(on("LATENCY_WARN"), Some(false));
        assert_eq!(decode(1 << 30, &ORDER_6_12)[30].0, "BIT_30");
    }

    #[test]
    fn removed_features_explain_their_replacement() {
        let present = decode(99674079, &ORDER_6_12);
        let why = missing_reason("SYNC_WAKEUPS", &present);
        assert!(
            why.contains("removed in 2.6.35") && why.contains("WA_IDLE, WA_WEIGHT, WA_BIAS"),
            "{why}"
        );
        assert!(missing_reason("FOO", &present).contains("its features are PLACE_LAG"));
    }
}
