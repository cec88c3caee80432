//! A process schedlab starts beside the workload (a sched_ext scheduler), named by pid
//! and start time so that stopping it - at exit, or by `schedlab restore` after a
//! SIGKILL - never signals a process that reused the pid.

use std::time::{Duration, Instant};

use nix::sys::signal::{kill, Signal};
use nix::sys::wait::{waitpid, WaitPidFlag};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};

/// After SIGKILL, how long a process may take to be gone before we say it would not go.
const KILL_WAIT: Duration = Duration::from_secs(2);

/// One process as it was when schedlab started it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Child {
    pub pid: i32,
    /// Clock ticks after boot (/proc/PID/stat field 22): unique with the pid.
    pub start_time: u64,
    /// Its command name, for messages.
    pub comm: String,
}

/// Let SIGINT end the command's process even when schedlab inherited it ignored (a
/// background job of a non-interactive shell does, and exec keeps an ignored signal
/// ignored): stopping it starts with SIGINT.
pub fn default_sigint(cmd: &mut std::process::Command) -> &mut std::process::Command {
    use std::os::unix::process::CommandExt;
    // SAFETY: between fork and exec only async-signal-safe calls: sigaction through nix.
    unsafe {
        cmd.pre_exec(|| {
            let dfl = nix::sys::signal::SigAction::new(
                nix::sys::signal::SigHandler::SigDfl,
                nix::sys::signal::SaFlags::empty(),
                nix::sys::signal::SigSet::empty(),
            );
            nix::sys::signal::sigaction(Signal::SIGINT, &dfl)
                .map(drop)
                .map_err(std::io::Error::from)
        })
    }
}

/// How stopping went.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stopped {
    /// It ended on SIGINT within the grace time.
    Interrupted,
    /// It had to be killed.
    Killed,
    /// It had already exited (or its pid names another process now).
    Gone,
}

/// Start time, comm and whether it is a zombie, for `pid`.
fn stat(pid: i32) -> Option<(u64, String, bool)> {
    let stat = procfs::process::Process::new(pid).ok()?.stat().ok()?;
    Some((stat.starttime, stat.comm, stat.state == 'Z'))
}

impl Child {
    /// The process `pid` as it is now; None when it is gone.
    pub fn of(pid: i32) -> Option<Child> {
        let (start_time, comm, _) = stat(pid)?;
        Some(Child {
            pid,
            start_time,
            comm,
        })
    }

    /// It still runs: the same pid with the same start time, and not a zombie.
    pub fn alive(&self) -> bool {
        // Reap it if it is ours and has exited (ECHILD when it is not our child).
        let _ = waitpid(Pid::from_raw(self.pid), Some(WaitPidFlag::WNOHANG));
        stat(self.pid).is_some_and(|(start, _, zombie)| start == self.start_time && !zombie)
    }

    fn signal(&self, sig: Signal) {
        if self.alive() {
            let _ = kill(Pid::from_raw(self.pid), sig);
        }
    }

    /// Wait until it is gone, at most `limit`.
    fn gone_within(&self, limit: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < limit {
            if !self.alive() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        !self.alive()
    }

    /// SIGINT (an scx scheduler unloads its BPF scheduler and exits on it), then SIGKILL
    /// after `grace`. An error says it outlived SIGKILL too.
    pub fn stop(&self, grace: Duration) -> Result<Stopped, Outlived> {
        if !self.alive() {
            return Ok(Stopped::Gone);
        }
        self.signal(Signal::SIGINT);
        if self.gone_within(grace) {
            return Ok(Stopped::Interrupted);
        }
        self.signal(Signal::SIGKILL);
        if self.gone_within(KILL_WAIT) {
            return Ok(Stopped::Killed);
        }
        Err(Outlived {
            comm: self.comm.clone(),
            pid: self.pid,
            secs: (grace + KILL_WAIT).as_secs(),
        })
    }
}

/// A started process that was still there after SIGINT and SIGKILL.
#[derive(Debug, PartialEq, thiserror::Error)]
#[error("{comm} (pid {pid}) still runs {secs} s after SIGKILL")]
pub struct Outlived {
    pub comm: String,
    pub pid: i32,
    pub secs: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    // Reaped by `Child::alive`'s waitpid, as schedlab's own children are.
    #[allow(clippy::zombie_processes)]
    fn spawn(script: &str) -> Child {
        let child = default_sigint(Command::new("sh").args(["-c", script]))
            .spawn()
            .expect("spawn sh");
        Child::of(child.id() as i32).expect("just started")
    }

    #[test]
    fn sigint_stops_a_process_that_ends_on_it() {
        let sleeper = spawn("exec sleep 30");
        assert!(sleeper.alive());
        assert_eq!(
            sleeper.stop(Duration::from_secs(20)),
            Ok(Stopped::Interrupted)
        );
        assert!(!sleeper.alive());
        assert_eq!(sleeper.stop(Duration::from_secs(1)), Ok(Stopped::Gone));
    }

    #[test]
    fn one_that_ignores_sigint_is_killed_after_the_grace_time() {
        // `trap '' INT` is inherited by the exec'd sleep: it ignores SIGINT.
        let stubborn = spawn("trap '' INT; exec sleep 30");
        // Until sh has run the trap, SIGINT would still end it.
        let start = Instant::now();
        while Child::of(stubborn.pid).is_some_and(|c| c.comm != "sleep") {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "sh never ran sleep"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(
            stubborn.stop(Duration::from_millis(200)),
            Ok(Stopped::Killed)
        );
        assert!(!stubborn.alive());
    }

    #[test]
    fn a_reused_pid_is_never_signalled() {
        let sleeper = spawn("exec sleep 30");
        let other = Child {
            start_time: sleeper.start_time + 1,
            ..sleeper.clone()
        };
        assert!(!other.alive());
        assert_eq!(other.stop(Duration::from_millis(100)), Ok(Stopped::Gone));
        assert!(sleeper.alive(), "the process with that pid was left alone");
        assert_eq!(
            sleeper.stop(Duration::from_secs(20)),
            Ok(Stopped::Interrupted)
        );
    }
}
