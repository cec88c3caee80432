//! Turns the kernel's refusal of a knob write into words a user can act on.

use nix::errno::Errno;

/// What kind of write was refused: the same errno means different things per knob.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteKind {
    /// sched_setattr / sched_setscheduler on a task.
    Policy { realtime: bool, deadline: bool },
    /// setpriority on a task.
    Nice { lowering: bool },
    /// sched_setaffinity on a task.
    Affinity,
    /// A file under /proc/sys, /sys/fs/cgroup or debugfs.
    File,
    /// sched_setattr with utilization clamps.
    Uclamp,
}

/// Why the kernel said `errno` to this kind of write, in one sentence.
pub fn explain(errno: Errno, kind: WriteKind) -> String {
    let root = nix::unistd::geteuid().is_root();
    if (errno, kind) == (Errno::EOPNOTSUPP, WriteKind::Uclamp) {
        // libc calls EOPNOTSUPP "Operation not supported on transport endpoint": no help.
        return "uclamp is not supported by this kernel (CONFIG_UCLAMP_TASK off)".into();
    }
    let text = match (errno, kind) {
        (Errno::ESRCH, _) => "the task has exited",
        (Errno::EPERM, WriteKind::Policy { deadline: true, .. }) if root => {
            "SCHED_DEADLINE needs the task allowed on every CPU of its root domain (set cpus=all first)"
        }
        (Errno::EPERM, WriteKind::Policy { realtime: true, .. }) if !root => {
            "real-time and deadline policies need root or CAP_SYS_NICE (RLIMIT_RTPRIO is 0 for this user)"
        }
        (Errno::EPERM, WriteKind::Policy { .. }) if !root => {
            "leaving SCHED_IDLE or lowering nice needs root or CAP_SYS_NICE"
        }
        (Errno::EPERM, WriteKind::Nice { .. }) if !root => {
            "a nice value below the current one needs root or CAP_SYS_NICE (RLIMIT_NICE)"
        }
        (Errno::EPERM, WriteKind::File) if root => {
            "the kernel refused the write (kernel lockdown blocks debugfs writes; read-only here)"
        }
        (Errno::EPERM | Errno::EACCES, _) if !root => "this needs root",
        (Errno::EPERM, _) => "the kernel refused it for this task",
        (Errno::EBUSY, WriteKind::Policy { .. }) => {
            "deadline admission control refused: the CPUs' deadline bandwidth is used up (lower runtime/period)"
        }
        (Errno::EBUSY, _) => "the resource is busy (RT or deadline tasks hold bandwidth that this would take away)",
        (Errno::EINVAL, WriteKind::Policy { deadline: true, .. }) => {
            "invalid deadline parameters: need 1024 ns <= runtime <= deadline <= period, and the period within kernel.sched_deadline_period_min_us..max_us (100 us..4.194304 s by default)"
        }
        (Errno::EINVAL, WriteKind::Policy { .. }) => "invalid policy or priority for this kernel (FIFO/RR take 1..99, others 0)",
        (Errno::EINVAL, WriteKind::Affinity) => {
            "no allowed CPU is online, or the set leaves the task's cpuset"
        }
        (Errno::EINVAL, _) => "value out of range, or written in the wrong order (see the knob's allowed values)",
        (Errno::EOPNOTSUPP, _) => "this kernel was built without support for it",
        (Errno::ENOENT, _) => "this kernel has no such file",
        _ => "unexpected error from the kernel",
    };
    format!("{errno:?} ({}): {text}", errno.desc())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_names_the_errno_and_a_reason() {
        let kinds = [
            WriteKind::Policy {
                realtime: true,
                deadline: false,
            },
            WriteKind::Policy {
                realtime: false,
                deadline: true,
            },
            WriteKind::Nice { lowering: true },
            WriteKind::Affinity,
            WriteKind::File,
        ];
        for errno in [
            Errno::EPERM,
            Errno::EINVAL,
            Errno::EBUSY,
            Errno::ESRCH,
            Errno::EOPNOTSUPP,
        ] {
            for kind in kinds {
                let text = explain(errno, kind);
                assert!(text.starts_with(&format!("{errno:?} (")), "{text}");
                assert!(text.contains(": "), "{text}");
                assert!(!text.contains('\n'));
            }
        }
        assert!(explain(Errno::EBUSY, kinds[1]).contains("admission control"));
        assert!(explain(Errno::ESRCH, WriteKind::Affinity).contains("exited"));
    }
}
