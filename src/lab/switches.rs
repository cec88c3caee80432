//! The experiment's context switches as /proc counts them, read when a scheduler trace
//! starts and again when it stops: the trace is checked against the kernel over its own
//! window, not the samples' (which start later and end earlier).

/// A task's switches since the trace started, from /proc/PID/task/TID/status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WindowCount {
    pub tid: i32,
    /// Voluntary plus involuntary.
    pub switches: u64,
    pub voluntary: u64,
}

/// The readings at the trace's start (or when a task joined the running trace).
#[derive(Debug, Default)]
pub struct ProcSwitches {
    base: Vec<(i32, i32, u64, u64)>,
}

impl ProcSwitches {
    /// Read `(pid, tid)`'s counters now; a task that cannot be read is left out.
    pub fn add(&mut self, pid: i32, tid: i32) {
        if let Some((v, i)) = read(pid, tid) {
            self.base.push((pid, tid, v, i));
        }
    }

    /// What each task counted since its reading; tasks gone since are left out (the
    /// report then falls back to the samples' window).
    pub fn since(&self) -> Vec<WindowCount> {
        self.base
            .iter()
            .filter_map(|&(pid, tid, v0, i0)| {
                let (v, i) = read(pid, tid)?;
                let voluntary = v.checked_sub(v0)?;
                Some(WindowCount {
                    tid,
                    switches: voluntary + i.checked_sub(i0)?,
                    voluntary,
                })
            })
            .collect()
    }
}

/// (voluntary, involuntary) context switches of one thread.
fn read(pid: i32, tid: i32) -> Option<(u64, u64)> {
    let status = procfs::process::Process::new(pid)
        .ok()?
        .task_from_tid(tid)
        .ok()?
        .status()
        .ok()?;
    Some((
        status.voluntary_ctxt_switches?,
        status.nonvoluntary_ctxt_switches?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_threads_own_switches_since_its_reading() {
        let pid = std::process::id() as i32;
        let tid = nix::unistd::gettid().as_raw();
        let mut p = ProcSwitches::default();
        p.add(pid, tid);
        p.add(pid, i32::MAX);
        // Ten sleeps: ten voluntary switches at least (and nothing else this thread does
        // blocks).
        for _ in 0..10 {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let c = p.since();
        assert_eq!(c.len(), 1, "the unreadable task is left out");
        assert_eq!(c[0].tid, tid);
        assert!((10..=12).contains(&c[0].voluntary), "{c:?}");
        assert!(c[0].switches >= c[0].voluntary);
    }
}
