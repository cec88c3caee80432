//! Tasks schedlab did not start (`--pid`, `--name`): their settings as found, which
//! the journal keeps before the first change, and putting them back at exit.

use nix::errno::Errno;
use serde::{Deserialize, Serialize};

use super::task::{read_back, SchedSettings, TaskKnobError};

/// What the journal needs to put one foreign task back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Found {
    pub pid: i32,
    pub tid: i32,
    /// The task's start time (clock ticks after boot, /proc/PID/stat field 22): a pid
    /// reused by another task after this one exited is never touched.
    pub start_time: u64,
    /// Its command name, for messages.
    pub comm: String,
    pub settings: SchedSettings,
}

/// A task's start time and comm from `/proc/PID/task/TID/stat`, None once it is gone.
pub fn identity(pid: i32, tid: i32) -> Option<(u64, String)> {
    let stat = procfs::process::Process::new(pid)
        .ok()?
        .task_from_tid(tid)
        .ok()?
        .stat()
        .ok()?;
    Some((stat.starttime, stat.comm))
}

/// The slice a task has when nobody set one: the kernel reports its default slice
/// through sched_getattr as if it were custom, so a slice equal to the default of one
/// of schedlab's own threads (which never set one) counts as the default.
fn default_slice() -> Option<u64> {
    read_back(0).ok().and_then(|s| s.slice_ns)
}

/// A task's settings as the kernel reports them, in the form schedlab sets them: the
/// default slice as "default" (None), utilization clamps left alone (None).
pub fn as_found(tid: i32) -> Result<SchedSettings, Errno> {
    let mut s = read_back(tid)?;
    if s.slice_ns.is_some() && s.slice_ns == default_slice() {
        s.slice_ns = None;
    }
    s.uclamp_min = None;
    s.uclamp_max = None;
    Ok(s)
}

/// What to journal before `next` is applied to a foreign task: its settings as found,
/// with the clamps too when `next` changes them.
pub fn before_change(pid: i32, tid: i32, next: &SchedSettings) -> Result<Found, Errno> {
    let (start_time, comm) = identity(pid, tid).ok_or(Errno::ESRCH)?;
    let mut settings = as_found(tid)?;
    if next.uclamp_min.is_some() || next.uclamp_max.is_some() {
        let raw = read_back(tid)?;
        settings.uclamp_min = raw.uclamp_min;
        settings.uclamp_max = raw.uclamp_max;
    }
    Ok(Found {
        pid,
        tid,
        start_time,
        comm,
        settings,
    })
}

/// How putting a foreign task back went.
#[derive(Debug, PartialEq)]
pub enum Put {
    Back,
    /// The task exited (or its pid now names another task): nothing to put back.
    Gone,
}

/// Put a foreign task back as it was found.
pub fn put_back(found: &Found) -> Result<Put, Vec<TaskKnobError>> {
    match identity(found.pid, found.tid) {
        Some((start, _)) if start == found.start_time => {}
        _ => return Ok(Put::Gone),
    }
    let errors = super::task::apply(&found.comm, found.tid, &found.settings);
    // A task that exits while it is being put back is as good as put back.
    if errors.is_empty() || identity(found.pid, found.tid).is_none() {
        Ok(Put::Back)
    } else {
        Err(errors)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_reads_comm_with_spaces_and_the_start_time() {
        let me = std::process::id() as i32;
        let (start, comm) = identity(me, me).expect("own stat");
        assert_eq!(
            comm,
            std::fs::read_to_string("/proc/self/comm")
                .expect("comm")
                .trim_end()
        );
        // Field 22 of our own stat, split the simple way (our comm has no spaces).
        let stat = std::fs::read_to_string("/proc/self/stat").expect("stat");
        let after = &stat[stat.rfind(')').expect(")") + 2..];
        let field22: u64 = after.split(' ').nth(19).expect("f22").parse().expect("n");
        assert_eq!(start, field22);
        assert!(identity(me, i32::MAX).is_none(), "no such thread");
    }

    #[test]
    fn a_task_that_was_never_changed_is_found_with_the_default_slice() {
        let me = std::process::id() as i32;
        let s = as_found(me).expect("own settings");
        assert_eq!(s.slice_ns, None, "our main thread has no custom slice");
        assert_eq!(s.uclamp_min, None);
    }

    #[test]
    fn a_reused_pid_is_not_put_back() {
        let me = std::process::id() as i32;
        let found = Found {
            pid: me,
            tid: me,
            start_time: 1, // not ours
            comm: "x".into(),
            settings: SchedSettings::default(),
        };
        assert_eq!(put_back(&found), Ok(Put::Gone));
    }
}
