//! The real binary in a tmux pane, driven like a person would: keys in, the screen out,
//! and on drop every process of the pane waited for (killed, and the test's journal
//! restored, if it outlives the bound).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::PATIENCE;

/// A tmux server with schedlab in its one pane, killed on drop.
pub struct Tmux {
    socket: String,
    journal: PathBuf,
}

impl Tmux {
    /// schedlab ARGS in a 110x32 pane; None (the test skips) without tmux.
    pub fn start(args: &[&str], journal: &Path) -> Option<Tmux> {
        Self::start_with(args, journal, "")
    }

    /// [`Tmux::start`] with `env` (`NAME=value ...`) before the command.
    pub fn start_with(args: &[&str], journal: &Path, env: &str) -> Option<Tmux> {
        Self::start_sized(args, journal, env, (110, 32))
    }

    /// [`Tmux::start_with`] in a pane of `size` (columns, rows).
    pub fn start_sized(args: &[&str], journal: &Path, env: &str, size: (u16, u16)) -> Option<Tmux> {
        if !super::require("tmux", Command::new("tmux").arg("-V").output().is_ok()) {
            return None;
        }
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let socket = format!("schedlab-test-{}-{n}", std::process::id());
        let cmd = format!(
            "{env} SCHEDLAB_JOURNAL={} {} {}; echo SCHEDLAB-EXITED-$?; sleep 30",
            journal.display(),
            super::exe().display(),
            args.join(" ")
        );
        // Recordings made with `r` land in the working directory: the test's temp dir.
        let cwd = journal
            .parent()
            .map_or_else(|| ".".to_string(), |d| d.display().to_string());
        let (columns, rows) = (size.0.to_string(), size.1.to_string());
        let ok = Command::new("tmux")
            .args([
                "-L",
                &socket,
                "new-session",
                "-d",
                "-c",
                &cwd,
                "-x",
                &columns,
                "-y",
                &rows,
                &cmd,
            ])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "tmux new-session");
        Some(Tmux {
            socket,
            journal: journal.to_path_buf(),
        })
    }

    pub fn keys(&self, keys: &[&str]) {
        for k in keys {
            let _ = Command::new("tmux")
                .args(["-L", &self.socket, "send-keys", "-t", "0", k])
                .status();
            std::thread::sleep(Duration::from_millis(150));
        }
    }

    /// Type `keys` in one go, as fast as a terminal delivers them.
    pub fn keys_at_once(&self, keys: &[&str]) {
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "0"])
            .args(keys)
            .status();
    }

    /// Press q and wait until schedlab has exited with status 0.
    pub fn quit(&self) {
        self.keys(&["q"]);
        let exited = self.wait_for("SCHEDLAB-EXITED-0", PATIENCE);
        assert!(exited.is_some(), "{}", self.screen());
    }

    pub fn screen(&self) -> String {
        self.capture(&[])
    }

    /// The screen with its attributes as escape sequences (`capture-pane -e`).
    pub fn screen_with_escapes(&self) -> String {
        self.capture(&["-e"])
    }

    pub fn capture(&self, extra: &[&str]) -> String {
        Command::new("tmux")
            .args(["-L", &self.socket, "capture-pane", "-p", "-t", "0"])
            .args(extra)
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).to_string())
            .unwrap_or_default()
    }

    /// Send one key and time it until `text` is on the screen (from before the key was
    /// sent, unlike `keys`, which sleeps after each key).
    pub fn press_until(&self, key: &str, text: &str, limit: Duration) -> Option<Duration> {
        let start = Instant::now();
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "0", key])
            .status();
        self.wait_for(text, limit).map(|_| start.elapsed())
    }

    /// A mouse event at the 0-based cell (x, y), as a terminal reports it in SGR mode
    /// (`button` 0 is the left button, 64 and 65 the wheel up and down).
    pub fn mouse(&self, button: u8, x: usize, y: usize) {
        let event = format!("\x1b[<{button};{};{}M", x + 1, y + 1);
        let hex: Vec<String> = event.bytes().map(|b| format!("{b:02x}")).collect();
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "send-keys", "-t", "0", "-H"])
            .args(&hex)
            .status();
        std::thread::sleep(Duration::from_millis(150));
    }

    /// The screen once `f` holds for it, within PATIENCE (a failed wait shows the screen).
    pub fn wait_until(&self, what: &str, f: impl Fn(&str) -> bool) -> String {
        let start = Instant::now();
        while start.elapsed() < PATIENCE {
            let s = self.screen();
            if f(&s) {
                return s;
            }
            std::thread::sleep(Duration::from_millis(30));
        }
        panic!("never saw {what}:\n{}", self.screen());
    }

    /// Wait until `text` is on the screen, within PATIENCE; a failed wait shows the
    /// screen.
    pub fn shows(&self, text: &str) {
        self.wait_until(text, |s| s.contains(text));
    }

    /// Polls the screen every 20 ms until `f` holds (at most `limit`): the moment it did.
    pub fn when(&self, limit: Duration, mut f: impl FnMut(&str) -> bool) -> Option<Instant> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if f(&self.screen()) {
                return Some(Instant::now());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    pub fn wait_for(&self, text: &str, limit: Duration) -> Option<Duration> {
        let start = Instant::now();
        while start.elapsed() < limit {
            if self.screen().contains(text) {
                return Some(start.elapsed());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Every process under the pane's shell: schedlab, its workers, the `sleep 30`.
    pub fn pane_processes(&self) -> Vec<i32> {
        let out = Command::new("tmux")
            .args([
                "-L",
                &self.socket,
                "display",
                "-p",
                "-t",
                "0",
                "#{pane_pid}",
            ])
            .output();
        let Some(shell) = out.ok().and_then(|o| {
            String::from_utf8_lossy(&o.stdout)
                .trim()
                .parse::<i32>()
                .ok()
        }) else {
            return Vec::new();
        };
        let mut all = vec![shell];
        let mut i = 0;
        while i < all.len() {
            all.extend(super::children(all[i]));
            i += 1;
        }
        all
    }
}

impl Drop for Tmux {
    /// Kill the server (the pane's schedlab gets SIGHUP, restores its knobs and
    /// unmounts what it mounted) and wait until every process of the pane is gone, so
    /// the next test starts on the machine as it was; SIGKILL and `schedlab restore`
    /// with this test's journal after 20 s.
    fn drop(&mut self) {
        let processes = self.pane_processes();
        let _ = Command::new("tmux")
            .args(["-L", &self.socket, "kill-server"])
            .status();
        let gone = || processes.iter().all(|&p| !super::alive(p));
        if !super::wait_until(Duration::from_secs(20), gone) {
            for &p in &processes {
                let _ = nix::sys::signal::kill(
                    nix::unistd::Pid::from_raw(p),
                    nix::sys::signal::Signal::SIGKILL,
                );
            }
            super::restore_journal(Some(&self.journal));
        }
    }
}
