//! The kernel facts schedlab's notes, lessons, `check` and docs rely on, each with its
//! source and the versions it holds for; which RT bandwidth mechanism the running kernel
//! has; and the measured key numbers every text must agree on.

use std::path::Path;
use std::sync::OnceLock;

use crate::kconfig::{self, Setting};

/// One statement about the kernel, where it can be checked, and for which versions.
#[derive(Clone, Copy, Debug)]
pub struct Fact {
    pub id: &'static str,
    pub claim: &'static str,
    pub holds: &'static str,
    pub source: &'static str,
}

/// Every kernel fact the texts rely on (docs/src/kernel-facts.md is rendered from it).
pub const FACTS: &[Fact] = &[
    Fact {
        id: "rt-throttling",
        claim: "RT tasks of a CPU may run sched_rt_runtime_us of every sched_rt_period_us (default 950000 of 1000000); then they are throttled and fair tasks run for the rest of the period.",
        holds: "2.6.25-6.11 on every kernel; 6.12+ only with CONFIG_RT_GROUP_SCHED, and on 6.16+ not when RT group scheduling is disabled at boot (rt_group_sched=0, or CONFIG_RT_GROUP_SCHED_DEFAULT_DISABLED without rt_group_sched=1)",
        source: "5f6bd380c7bd \"sched/rt: Remove default bandwidth control\" (6.12): update_curr_rt() accounts RT runtime only under CONFIG_RT_GROUP_SCHED; kernel/sched/core.c setup_rt_group_sched(); Documentation/scheduler/sched-rt-group.rst",
    },
    Fact {
        id: "fair-server",
        claim: "The fair server, a SCHED_DEADLINE server (dl_server) per CPU, runs fair tasks for 50 ms of every 1 s when RT tasks keep them off the CPU; it is deferred, so it acts only after the fair tasks have waited. Without RT group scheduling it alone leaves a fair task about 5 % beside a FIFO spinner, whatever sched_rt_runtime_us says.",
        holds: "6.12+; runtime and period per CPU in debugfs sched/fair_server/cpuN/",
        source: "a110a81c52a9 \"sched/deadline: Deferrable dl server\", d741f297bcea \"sched/fair: Fair server interface\", 5f6bd380c7bd (which set its runtime from 0 to 50 ms; all 6.12); kernel/sched/deadline.c: 50 * NSEC_PER_MSEC of 1000 * NSEC_PER_MSEC in dl_server_start() on 6.12, sched_init_dl_servers() on later kernels",
    },
    Fact {
        id: "rt-runtime-floor",
        claim: "sched_rt_runtime_us is also the SCHED_DEADLINE admission limit: a value whose share of the period is below the bandwidth SCHED_DEADLINE tasks and the fair servers already hold on a CPU (the fair servers: 50000 of 1000000 by default) is refused with EBUSY. With RT group scheduling a value below the root cgroup's cpu.rt_runtime_us is refused with EINVAL, and 0 with EBUSY while the root group has RT tasks.",
        holds: "the fair-server floor 6.12+ (SCHED_DEADLINE tasks' since 3.14); the RT group rules wherever RT group scheduling is on",
        source: "kernel/sched/deadline.c sched_dl_global_validate() (new_bw * cpus < total_bw: -EBUSY; dl_server_apply_params() adds the fair servers to total_bw); kernel/sched/rt.c sched_rt_global_validate(), tg_rt_schedulable()",
    },
    Fact {
        id: "rt-runtime-share",
        claim: "An RT run queue that used up its runtime borrows unused runtime from the other CPUs (do_balance_runtime()), so one CPU's RT tasks can exceed runtime/period.",
        holds: "unconditional 2.6.26-3.1; the RT_RUNTIME_SHARE feature from 3.2, on by default until 5.9, off since 5.10; on 6.12+ only with RT group scheduling",
        source: "kernel/sched/rt.c balance_runtime(); kernel/sched/features.h RT_RUNTIME_SHARE; \"sched/rt: Disable RT_RUNTIME_SHARE by default\" (5.10)",
    },
    Fact {
        id: "eevdf-placement",
        claim: "EEVDF replaced CFS: a waking task gets no sleeper credit (GENTLE_FAIR_SLEEPERS is gone); it keeps the lag it had when it slept (PLACE_LAG), and a new task starts at the average vruntime with a virtual deadline half a slice away (PLACE_DEADLINE_INITIAL).",
        holds: "6.6+ (CFS sleeper credit 2.6.23-6.5)",
        source: "147f3efaa241 \"sched/fair: Implement an EEVDF-like scheduling policy\", 86bfbb7ce4f6 \"sched/fair: Add lag based placement\" (6.6); kernel/sched/fair.c place_entity()",
    },
    Fact {
        id: "delayed-dequeue",
        claim: "A fair task that blocks while its lag is negative stays queued (delayed) until it becomes eligible, so it cannot shed the lag by sleeping.",
        holds: "6.12+ (DELAY_DEQUEUE)",
        source: "152e11f6df29 \"sched/fair: Implement delayed dequeue\" (6.12)",
    },
    Fact {
        id: "eevdf-slice",
        claim: "A fair task's slice is base_slice_ns x (1 + log2(min(CPUs, 8))): 0.75 ms x (1 + log2 CPUs) on 6.6-6.14, 0.7 ms x (1 + log2 CPUs) since (1.4 ms on 2 CPUs). A running task whose slice is not used up is only preempted by a woken task that is eligible with an earlier deadline.",
        holds: "6.6+; the 0.7 ms base 6.15+ (and later 6.12 stable releases)",
        source: "2ae891b82695 \"sched: Reduce the default slice to avoid tasks getting an extra tick\" (6.15); kernel/sched/fair.c get_update_sysctl_factor(), check_preempt_wakeup_fair()",
    },
    Fact {
        id: "batch-no-wakeup-preemption",
        claim: "A woken SCHED_BATCH or SCHED_IDLE task never preempts the running task: the wakeup preemption check returns unless the wakee is SCHED_NORMAL, so the waker runs on until it blocks or its slice ends.",
        holds: "CFS (2.6.23+) and EEVDF (6.6+); measured on 2.6.32 (2010) and 6.18",
        source: "kernel/sched/fair.c check_preempt_wakeup_fair() (check_preempt_wakeup() before 6.7)",
    },
    Fact {
        id: "select-idle-sibling",
        claim: "A woken task is put on an idle CPU that shares the last-level cache with the chosen target (the waker's CPU when wake-affine picks it, else the wakee's previous CPU): the target if idle, then the previous CPU, then a scan of the cache domain (select_idle_sibling()). A busy waker's CPU is therefore left to the waker when another CPU of its cache is idle.",
        holds: "current on 6.x (checked on 6.18); the SYNC_WAKEUPS feature of 2009 existed up to 2.6.34",
        source: "kernel/sched/fair.c select_task_rq_fair(), wake_affine(), select_idle_sibling()",
    },
    Fact {
        id: "cgroup-idle-weight",
        claim: "A cgroup with cpu.idle = 1 is scheduled with weight 3 (WEIGHT_IDLEPRIO) against its siblings, about 0.3 % against a sibling at cpu.weight 100 (internal weight 1024); it is not limited to time the other group leaves unused.",
        holds: "5.15+",
        source: "304000390f88 \"sched: Cgroup SCHED_IDLE support\" (5.15); kernel/sched/fair.c sched_group_set_idle()",
    },
    Fact {
        id: "pick-cost",
        claim: "The RT class picks from a bitmap of 100 priority lists (sched_find_first_bit()): the cost does not grow with the number of queued tasks. The EEVDF pick walks an augmented red-black tree: O(log n).",
        holds: "the RT bitmap since 2.6.0 (the O(1) scheduler, 2.6.0-2.6.22, used it for every class); EEVDF 6.6+",
        source: "kernel/sched/rt.c pick_next_rt_entity(); kernel/sched/fair.c pick_eevdf()",
    },
    Fact {
        id: "eevdf-custom-slice",
        claim: "A fair task may ask for its own slice with sched_setattr (sched_attr.sched_runtime, clamped to 0.1..100 ms; 0 is the default). A woken task whose slice is shorter than the running task's may preempt it before that task's slice is used up (PREEMPT_SHORT).",
        holds: "6.12+ (older kernels ignore sched_runtime for fair tasks)",
        source: "\"sched/eevdf: Use sched_attr::sched_runtime to set request/slice suggestion\", \"sched/eevdf: Allow shorter slices to wakeup-preempt\" (both 6.12); kernel/sched/syscalls.c __setscheduler_params(); kernel/sched/fair.c do_preempt_short()",
    },
    Fact {
        id: "eevdf-lag",
        claim: "A fair task's lag (V minus its vruntime, what the fair schedule owes it) is kept when it sleeps and restores its place when it wakes (PLACE_LAG); it is clamped to the larger of twice the task's slice and a tick, so a task with a long slice may be owed more.",
        holds: "6.6+",
        source: "86bfbb7ce4f6 \"sched/fair: Add lag based placement\" (6.6); kernel/sched/fair.c update_entity_lag(), place_entity()",
    },
    Fact {
        id: "deadline-cbs",
        claim: "A SCHED_DEADLINE task may run `runtime` of every `period` before its deadline, ahead of every RT and fair task; when it has used its runtime it is throttled until the next period replenishes it (constant bandwidth server), so a task whose work exceeds its runtime gets runtime/period of a CPU.",
        holds: "3.14+",
        source: "kernel/sched/deadline.c update_curr_dl() (dl_runtime_exceeded(), start_dl_timer()); Documentation/scheduler/sched-deadline.rst",
    },
    Fact {
        id: "deadline-admission",
        claim: "sched_setattr() refuses a new or changed SCHED_DEADLINE task with EBUSY when the deadline bandwidth of its root domain (every task's runtime/period, and since 6.12 the fair servers' 50 ms of every 1 s per CPU) would exceed sched_rt_runtime_us/sched_rt_period_us times the CPUs' capacity. A SCHED_DEADLINE task cannot be pinned to fewer CPUs than its root domain (EBUSY).",
        holds: "3.14+; the fair servers counted 6.12+",
        source: "kernel/sched/deadline.c sched_dl_overflow(), __dl_overflow(), dl_server_apply_params(); kernel/sched/syscalls.c __sched_setaffinity() (dl_task and !cpumask_subset(rd->span))",
    },
    Fact {
        id: "load-balance",
        claim: "Each CPU periodically balances its scheduling domains (and again when it goes idle): it finds the busiest group and run queue and pulls tasks until the load is even; a task whose affinity does not allow the destination CPU is not moved.",
        holds: "scheduling domains 2.6.7+; sched_balance_rq() is load_balance() before 6.10",
        source: "kernel/sched/fair.c sched_balance_rq(), sched_balance_find_src_group(), can_migrate_task(); Documentation/scheduler/sched-domains.rst",
    },
    Fact {
        id: "nice-weights",
        claim: "Each nice level weighs about 1.25 times the next: nice -20 is 88761, nice 0 1024, nice 19 15; SCHED_IDLE tasks weigh 3.",
        holds: "2.6.23+",
        source: "kernel/sched/core.c sched_prio_to_weight[]; WEIGHT_IDLEPRIO in kernel/sched/sched.h",
    },
    Fact {
        id: "pi-futex",
        claim: "A PI futex (what a PTHREAD_PRIO_INHERIT mutex uses) holds its owner's TID; a waiter blocking on it in FUTEX_LOCK_PI queues on an rt_mutex, which runs the owner at the highest waiter's priority until it unlocks (FUTEX_UNLOCK_PI hands the lock to that waiter). A plain futex waiter (FUTEX_WAIT) lends the owner nothing.",
        holds: "2.6.18+ (CONFIG_FUTEX_PI, built wherever futexes and RT mutexes are)",
        source: "kernel/futex/pi.c futex_lock_pi(), futex_unlock_pi() (kernel/futex.c before 5.16); kernel/locking/rtmutex.c rt_mutex_adjust_prio(); Documentation/locking/pi-futex.rst, rt-mutex-design.rst",
    },
    Fact {
        id: "cfs-bandwidth",
        claim: "CFS bandwidth control gives a cgroup `quota` of CPU time per `period` (cpu.max on v2; cpu.cfs_quota_us and cpu.cfs_period_us on v1), shared by all its tasks on all CPUs; once it is spent the group's run queues are throttled (none of its tasks runs, a woken one waits too) until the period timer refills it. cpu.stat counts nr_periods, nr_throttled and the time throttled: throttled_usec on v2, throttled_time in ns on v1.",
        holds: "3.2+ (cgroup v1); cpu.max on cgroup v2 4.15+; period 1 ms..1 s",
        source: "kernel/sched/fair.c throttle_cfs_rq(), sched_cfs_period_timer(), do_sched_cfs_period_timer(); kernel/sched/core.c cpu_max_write(), cpu_cfs_stat_show(); Documentation/scheduler/sched-bwc.rst",
    },
];

/// The measured key numbers the notes, lessons, README and `check` quote: one place, so
/// they cannot disagree (a test holds every text to these).
pub mod numbers {
    /// pipe-wakeup, writer and reader pinned to CPU 0: BATCH over OTHER bytes/s on the
    /// 6.18 development VM.
    pub const BATCH_GAIN: &str = "2.3-2.5x";
    /// The healthy nice-ladder fairness error `check` judges by (its run of the ladder).
    pub const LADDER_ERROR_HEALTHY: f64 = 0.03;
    /// What `check`'s own run of the ladder showed on the development VM.
    pub const LADDER_ERROR_CHECK_RUN: &str = "~2 % over 6 s";
    /// What one measurement of the ladder over 4 s, unpinned on 2 CPUs, showed here.
    pub const LADDER_ERROR_MEASURED: &str = "3.6-13 % over 4 s";
    /// The most a lesson step of a few seconds lets the ladder's error be.
    pub const LADDER_ERROR_LESSON: f64 = 0.2;
    /// The fair thread's share beside a FIFO spinner at the default RT settings.
    pub const FIFO_DEFAULT_FAIR_SHARE: &str = "5 %";
    /// The fair servers' default reservation per CPU, and the RT runtime it is the floor of.
    pub const FAIR_SERVER_DEFAULT: &str = "50 ms of every 1 s";
    pub const RT_RUNTIME_FLOOR: &str = "50000";
}

/// What keeps a fair task running beside an RT spinner on this kernel.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RtBandwidth {
    /// Before 6.12: RT throttling by sched_rt_runtime_us, no fair server.
    Throttling,
    /// 6.12+ with RT group scheduling on: RT throttling and the fair server.
    ThrottlingAndFairServer,
    /// 6.12+ without RT group scheduling (not built, or disabled at boot): the fair
    /// server alone; sched_rt_runtime_us throttles nothing.
    FairServerOnly,
}

impl RtBandwidth {
    /// From the kernel version, its build config (None when unreadable: assumed as most
    /// distribution kernels are built, without RT group scheduling) and its command line.
    pub fn of(kernel: (u32, u32), config: Option<&str>, cmdline: &str) -> RtBandwidth {
        if kernel < (6, 12) {
            return RtBandwidth::Throttling;
        }
        let Some(config) = config else {
            return RtBandwidth::FairServerOnly;
        };
        if kconfig::setting(config, "CONFIG_RT_GROUP_SCHED") != Setting::Yes {
            return RtBandwidth::FairServerOnly;
        }
        // 6.16+: rt_group_sched=0|1 overrides the build default (the last one counts).
        let by_cmdline = cmdline
            .split_whitespace()
            .take_while(|w| *w != "--")
            .filter_map(|w| w.strip_prefix("rt_group_sched="))
            .last()
            .and_then(|v| match v {
                "0" => Some(false),
                "1" => Some(true),
                _ => None,
            });
        let default_on =
            kconfig::setting(config, "CONFIG_RT_GROUP_SCHED_DEFAULT_DISABLED") != Setting::Yes;
        if by_cmdline.unwrap_or(default_on) {
            RtBandwidth::ThrottlingAndFairServer
        } else {
            RtBandwidth::FairServerOnly
        }
    }

    /// The mechanism of the kernel whose /proc (and /boot) are under `root`.
    pub fn detect(root: &Path) -> RtBandwidth {
        let release = std::fs::read_to_string(root.join("proc/sys/kernel/osrelease"))
            .unwrap_or_else(|_| crate::system::kernel_release());
        let config = kconfig::read(root).map(|(text, _)| text);
        let cmdline = std::fs::read_to_string(root.join("proc/cmdline")).unwrap_or_default();
        RtBandwidth::of(version(&release), config.as_deref(), &cmdline)
    }

    /// This machine's, found once.
    pub fn running() -> RtBandwidth {
        static RUNNING: OnceLock<RtBandwidth> = OnceLock::new();
        *RUNNING.get_or_init(|| RtBandwidth::detect(Path::new("/")))
    }

    /// Whether sched_rt_runtime_us throttles RT tasks here.
    pub fn throttles(self) -> bool {
        self != RtBandwidth::FairServerOnly
    }

    /// Whether a fair server reserves time for fair tasks here.
    pub fn has_fair_server(self) -> bool {
        self != RtBandwidth::Throttling
    }

    /// A short name for JSON details.
    pub fn name(self) -> &'static str {
        match self {
            RtBandwidth::Throttling => "rt-throttling",
            RtBandwidth::ThrottlingAndFairServer => "rt-throttling+fair-server",
            RtBandwidth::FairServerOnly => "fair-server",
        }
    }

    /// What acts here, in a sentence for notes and help.
    pub fn sentence(self) -> &'static str {
        match self {
            RtBandwidth::Throttling => "This kernel (before 6.12) has RT throttling and no fair server: sched_rt_runtime_us of every sched_rt_period_us is all RT tasks may use per CPU.",
            RtBandwidth::ThrottlingAndFairServer => "This kernel has both: RT throttling (RT group scheduling is on) and the fair server (6.12+), so the fair thread gets the larger of 1 - runtime/period and the server's 5 %.",
            RtBandwidth::FairServerOnly => "This kernel (6.12+ without RT group scheduling, as most distribution kernels) throttles no RT task: the fair server alone leaves the fair thread its 50 ms of every 1 s, and sched_rt_runtime_us only limits SCHED_DEADLINE admission.",
        }
    }

    /// The causes a fair share that differs from the promise can have here.
    pub fn causes(self) -> &'static str {
        match self {
            RtBandwidth::Throttling => "RT group limits or RT_RUNTIME_SHARE",
            RtBandwidth::ThrottlingAndFairServer => {
                "RT group limits, RT_RUNTIME_SHARE or the fair server's settings"
            }
            RtBandwidth::FairServerOnly => {
                "the fair server's settings (debugfs sched/fair_server); sched_rt_runtime_us throttles nothing here"
            }
        }
    }
}

/// Major and minor of a release string ("6.18.44-fc" -> (6, 18)).
pub fn version(release: &str) -> (u32, u32) {
    let mut parts = release
        .trim()
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse().ok());
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

/// The placeholder a built-in text writes where this kernel's RT mechanism belongs.
pub const RT_BANDWIDTH_HERE: &str = "{kernel.rt_bandwidth}";

/// `text` with the kernel placeholders filled in for `rt` (others are left as written).
pub fn expand(text: &str, rt: RtBandwidth) -> String {
    text.replace(RT_BANDWIDTH_HERE, rt.sentence())
}

/// The facts table as the docs show it (docs/src/kernel-facts.md).
pub fn markdown() -> String {
    let cell = |s: &str| s.replace('|', "\\|");
    let mut out = String::from(
        "# Kernel facts\n\n\
         What schedlab's preset notes, lessons, `check` texts and README rely on about the\n\
         kernel, with the versions each holds for and where to check it. Generated from\n\
         `src/facts.rs` (a test keeps this file equal to it): change the table there.\n\n\
         | fact | what holds | versions | source |\n|---|---|---|---|\n",
    );
    for f in FACTS {
        out.push_str(&format!(
            "| {} | {} | {} | {} |\n",
            f.id,
            cell(f.claim),
            cell(f.holds),
            cell(f.source)
        ));
    }
    out.push_str("\n## Measured key numbers\n\nThe figures the texts quote, held to these by a test (`src/facts.rs`, `numbers`):\n\n| figure | value |\n|---|---|\n");
    for (name, value) in [
        (
            "pipe-wakeup BATCH/OTHER bytes/s, pinned to one CPU (6.18 VM)",
            numbers::BATCH_GAIN.to_string(),
        ),
        (
            "nice-ladder fairness error `check` calls healthy",
            format!("< {:.0} %", numbers::LADDER_ERROR_HEALTHY * 100.0),
        ),
        (
            "nice-ladder fairness error of `check`'s own run (dev VM)",
            numbers::LADDER_ERROR_CHECK_RUN.to_string(),
        ),
        (
            "nice-ladder fairness error measured (21 rungs, unpinned, 2 CPUs)",
            numbers::LADDER_ERROR_MEASURED.to_string(),
        ),
        (
            "nice-ladder fairness error a lesson step allows",
            format!("< {:.0} %", numbers::LADDER_ERROR_LESSON * 100.0),
        ),
        (
            "fair share beside a FIFO spinner at the defaults",
            numbers::FIFO_DEFAULT_FAIR_SHARE.to_string(),
        ),
        (
            "fair server reservation per CPU (6.12+)",
            numbers::FAIR_SERVER_DEFAULT.to_string(),
        ),
        (
            "lowest sched_rt_runtime_us with the default fair servers (6.12+)",
            numbers::RT_RUNTIME_FLOOR.to_string(),
        ),
    ] {
        out.push_str(&format!("| {name} | {value} |\n"));
    }
    out
}

#[cfg(test)]
mod tests;
