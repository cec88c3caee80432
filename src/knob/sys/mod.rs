//! System-wide knobs: the RT throttling sysctls (with the root-cgroup ordering that RT
//! group scheduling needs), RR timeslice, autogroup, and the debugfs scheduler tunables
//! and features. Every write is journaled first.

mod catalogue;
pub mod pmqos;
mod probe;
mod set;
mod value;

use std::path::{Path, PathBuf};

pub use catalogue::{
    get, list, read_features, why_not_writable, KnobInfo, SysKnob, NAMES, TUNABLES,
};
pub use probe::{mount_debugfs, Probe};
pub use set::{precheck, set, unthrottled_with_rt, SetContext, UNTHROTTLED_WITH_RT};
pub use value::{SysSetting, SysValue};

use crate::error::KnobError;
use crate::knob::journal::{Journal, Restored};

/// System-wide knob state for one schedlab process: what the machine allows, and the
/// journal that restores every change (also when dropped).
pub struct SystemKnobs {
    pub journal: Journal,
    pub probe: Probe,
    pub allow_unthrottled_rt: bool,
    /// Changes to tasks schedlab did not start stay after it exits (`--keep`): they are
    /// not journaled.
    pub keep_foreign: bool,
    /// The held `sys.cpu_dma_latency` request: dropped by `restore` and when dropped.
    pub pm_qos: pmqos::Hold,
}

impl SystemKnobs {
    pub fn new(journal_path: PathBuf) -> SystemKnobs {
        SystemKnobs {
            journal: Journal::new(journal_path),
            probe: Probe::detect(),
            allow_unthrottled_rt: false,
            keep_foreign: false,
            pm_qos: pmqos::Hold::default(),
        }
    }

    /// Mount debugfs for this run (undone at exit) and look at the machine again.
    pub fn mount_debugfs(&mut self) -> Result<(), KnobError> {
        mount_debugfs(&mut self.journal)?;
        self.probe = Probe::detect();
        Ok(())
    }

    /// Set a system knob; `rt_running` says whether RT spinners are alive.
    pub fn set(&mut self, setting: &SysSetting, rt_running: bool) -> Result<String, KnobError> {
        let mut ctx = SetContext {
            journal: &mut self.journal,
            probe: &self.probe,
            rt_tasks_running: rt_running,
            allow_unthrottled_rt: self.allow_unthrottled_rt,
            pm_qos: &mut self.pm_qos,
        };
        set(setting, &mut ctx)
    }

    pub fn restore(&mut self) -> Vec<Restored> {
        // The PM QoS request has no old value to put back: closing it is the undo.
        self.pm_qos.release();
        self.journal.restore()
    }

    pub fn journal_path(&self) -> &Path {
        self.journal.path()
    }
}

#[cfg(test)]
mod tests {
    use super::catalogue::current_choice;
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_list_the_rest() {
        for name in [
            "rt_runtime_us",
            "rt_period_us",
            "rr_timeslice_ms",
            "autogroup",
            "feature.WA_IDLE",
            "base_slice_ns",
            "migration_cost_ns",
            "nr_migrate",
            "preempt",
            "fair_server.cpu1.runtime",
            "sched_ext",
            "cpu_dma_latency",
        ] {
            let k = SysKnob::parse(name).expect(name);
            assert_eq!(k.name(), format!("sys.{name}"));
        }
        let err = SysKnob::parse("turbo").unwrap_err().0;
        assert!(err.contains("rt_runtime_us, rt_period_us"), "{err}");
        assert!(SysKnob::parse("feature.wa idle")
            .unwrap_err()
            .0
            .contains("upper-case"));
        assert!(SysKnob::parse("fair_server.cpuX.runtime").is_err());
        assert!(err.contains("cpu_dma_latency"), "{err}");
        // A held request, not a file written: no journal, and a note that says so.
        assert!(SysKnob::CpuDmaLatency
            .note()
            .is_some_and(|n| n.starts_with("not journaled")));
        assert_eq!(SysKnob::RtRuntime.note(), None);
    }

    #[test]
    fn preempt_choice_is_the_one_in_parens() {
        assert_eq!(
            current_choice("none (voluntary) full lazy\n"),
            Some("voluntary".into())
        );
        assert_eq!(current_choice("none voluntary"), None);
    }

    /// What Probe::detect finds as root on a 6.18 machine where debugfs is not mounted.
    fn unmounted() -> Probe {
        Probe {
            root: true,
            kernel: (6, 18),
            debugfs_mounted: false,
            sched_dir: None,
            features_path: None,
            debugfs_write: Probe::probe_debugfs_write(true, false, None),
            rt_group_root: None,
            uclamp: false,
        }
    }

    #[test]
    fn debugfs_knobs_say_how_to_mount_when_unmounted() {
        let probe = unmounted();
        let mount = "mount -t debugfs none /sys/kernel/debug";
        let why =
            why_not_writable(&SysKnob::Tunable("base_slice_ns"), &probe).expect("not writable");
        assert!(why.starts_with("debugfs is not mounted"), "{why}");
        assert!(
            why.contains(mount) && why.contains("--mount-debugfs"),
            "{why}"
        );
        let feature = get(&SysKnob::Feature("WA_IDLE".into()), &probe).unwrap_err();
        assert!(feature.to_string().contains(mount), "{feature}");
        // A sysctl does not depend on debugfs: writable whenever its file is there.
        let sysctl = Path::new("/proc/sys/kernel/sched_rt_runtime_us").exists();
        assert_eq!(
            why_not_writable(&SysKnob::RtRuntime, &probe).is_none(),
            sysctl
        );
        let user = Probe {
            root: false,
            ..probe.clone()
        };
        assert_eq!(
            why_not_writable(&SysKnob::RtRuntime, &user).as_deref(),
            Some("not root")
        );
        // The PM QoS device is not debugfs: root and the device are all it needs.
        assert_eq!(
            why_not_writable(&SysKnob::CpuDmaLatency, &user).as_deref(),
            Some("not root")
        );
        assert_eq!(
            why_not_writable(&SysKnob::CpuDmaLatency, &probe).is_none(),
            Path::new("/dev/cpu_dma_latency").exists()
        );
    }

    #[test]
    fn sched_ext_is_listed_with_its_value_or_why_not() {
        let probe = unmounted();
        let row = list(&probe)
            .into_iter()
            .find(|k| k.name == "sys.sched_ext")
            .expect("a sys.sched_ext row");
        let scx = crate::knob::scx::detect(Path::new("/"));
        assert_eq!(row.path.as_deref(), Some("/sys/kernel/sched_ext/state"));
        match scx.unavailable() {
            Some(why) => {
                assert_eq!((row.value, row.writable), (None, false));
                assert_eq!(row.why_not, Some(why));
            }
            None => assert_eq!(row.value, scx.value()),
        }
        let not_root = Probe {
            root: false,
            ..probe
        };
        assert_eq!(
            why_not_writable(&SysKnob::SchedExt, &not_root).as_deref(),
            Some("not root")
        );
    }

    #[test]
    fn the_debugfs_write_probe_says_which_step_failed() {
        let refused = |m: &str| Err(KnobError::Refused(m.to_string()));
        let dir = tempfile::tempdir().expect("tempdir");
        let writable = dir.path().join("features");
        std::fs::write(&writable, "WA_IDLE\n").expect("write");
        assert_eq!(
            Probe::probe_debugfs_write(false, true, Some(&writable)),
            refused("not root")
        );
        assert_eq!(
            Probe::probe_debugfs_write(true, true, None),
            refused("this kernel has no scheduler debugfs files")
        );
        let missing = dir.path().join("none");
        let Err(KnobError::Refused(m)) = Probe::probe_debugfs_write(true, true, Some(&missing))
        else {
            panic!("a missing features file is refused")
        };
        let cannot = format!("cannot open {}: ", missing.display());
        assert!(m.starts_with(&cannot) && m.contains("No such file"), "{m}");
        assert_eq!(
            Probe::probe_debugfs_write(true, true, Some(&writable)),
            Ok(())
        );
    }

    #[test]
    fn probe_reasons_follow_what_the_kernel_has() {
        let probe = unmounted();
        assert_eq!(
            probe.uclamp_reason().as_deref(),
            Some("CONFIG_UCLAMP_TASK is off in this kernel")
        );
        let uclamp = Probe {
            uclamp: true,
            ..probe.clone()
        };
        assert_eq!(uclamp.uclamp_reason(), None);
        // Custom slices (sched_attr.sched_runtime for fair tasks) came with 6.12.
        assert_eq!(probe.slice_reason(), None);
        let old = Probe {
            kernel: (6, 11),
            ..probe
        };
        assert_eq!(
            old.slice_reason().as_deref(),
            Some("custom slices need Linux 6.12+ (this is 6.11)")
        );
    }
}
