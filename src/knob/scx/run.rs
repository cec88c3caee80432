//! Running a user-named scx scheduler for a run: start it (journaled as a process),
//! wait until the kernel says it is enabled, and stop it again.

use std::io::BufRead;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::detect::{detect, State};
use crate::error::KnobError;
use crate::knob::child::{default_sigint, Child};
use crate::knob::journal::{Entry, Journal};

/// How long a scheduler gets to end on SIGINT (it unloads its BPF scheduler) before
/// it is killed.
const GRACE: Duration = Duration::from_secs(5);

/// Whether the ops name the kernel reports belongs to `program`: scx_rusty registers
/// "rusty", scx_simple "simple"; a renamed copy (`my_scx_rusty`) still holds the name.
pub fn names_match(program: &Path, ops: &str) -> bool {
    let Some(stem) = program
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
    else {
        return false;
    };
    let short = stem.strip_prefix("scx_").unwrap_or(&stem);
    !ops.is_empty() && (ops == stem || short.contains(ops))
}

/// The schedulers this journal started that still run.
fn ours(journal: &Journal) -> Vec<Child> {
    journal
        .entries()
        .iter()
        .filter_map(|e| match e {
            Entry::Process(c) if c.alive() => Some(c.clone()),
            _ => None,
        })
        .collect()
}

fn stop_ours(journal: &Journal) -> Result<(), KnobError> {
    for child in ours(journal) {
        child
            .stop(GRACE)
            .map_err(|e| KnobError::Refused(e.to_string()))?;
    }
    Ok(())
}

/// Switch sched_ext under `root` to `program` (None: off), waiting at most `wait` for
/// the kernel to report it. Returns the knob's value read back.
pub fn switch(
    journal: &mut Journal,
    program: Option<&Path>,
    root: &Path,
    wait: Duration,
) -> Result<String, KnobError> {
    let scx = detect(root);
    if let Some(why) = scx.unavailable() {
        return Err(KnobError::Refused(format!("sys.sched_ext: {why}")));
    }
    let mine = !ours(journal).is_empty();
    if let (Some(ops), false) = (scx.running(), mine) {
        return Err(KnobError::Refused(format!(
            "sys.sched_ext: another sched_ext scheduler (\"{ops}\") is already running and schedlab did not start it: stop it first"
        )));
    }
    stop_ours(journal)?;
    let Some(program) = program else {
        return Ok(detect(root).value().unwrap_or_else(|| "off".into()));
    };
    start(journal, program, root, wait)
}

/// Spawn `program`, journal it at once, and wait until sched_ext runs it.
fn start(
    journal: &mut Journal,
    program: &Path,
    root: &Path,
    wait: Duration,
) -> Result<String, KnobError> {
    let name = program.display().to_string();
    let mut cmd = Command::new(program);
    default_sigint(&mut cmd)
        .stdin(Stdio::null())
        // Schedulers print statistics every second: nobody reads them here.
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // Its own process group: a Ctrl-C in the terminal is schedlab's to handle.
    std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
    let mut spawned = cmd
        .spawn()
        .map_err(|e| KnobError::Refused(format!("sys.sched_ext={name}: cannot start it: {e}")))?;
    let pid = spawned.id() as i32;
    let stderr = drain_stderr(spawned.stderr.take());
    let child = Child::of(pid)
        .ok_or_else(|| KnobError::Refused(format!("sys.sched_ext={name}: it exited at once")))?;
    if let Err(e) = journal.record_process(child.clone()) {
        // Unjournaled, it would outlive a crash of ours.
        let _ = child.stop(GRACE);
        return Err(KnobError::from_journal(e).context("sys.sched_ext"));
    }
    let last = |fallback: &str| {
        let line = stderr.last.lock().map(|l| l.clone()).unwrap_or_default();
        if line.is_empty() {
            fallback.to_string()
        } else {
            format!("its last words: {line}")
        }
    };
    let start = Instant::now();
    loop {
        if let Ok(Some(status)) = spawned.try_wait() {
            // The reader may still hold the pipe's last line: wait for its end of file
            // (bounded: a grandchild may keep the pipe open).
            let _ = stderr.done.recv_timeout(Duration::from_secs(1));
            return Err(KnobError::Refused(format!(
                "sys.sched_ext={name}: it exited ({status}) before sched_ext was enabled; {}",
                last("it wrote nothing on stderr")
            )));
        }
        let scx = detect(root);
        match (scx.state, scx.ops.as_deref()) {
            (Some(State::Enabled), Some(ops)) if names_match(program, ops) => {
                return Ok(ops.to_string())
            }
            (Some(State::Enabled), Some(ops)) => {
                let _ = child.stop(GRACE);
                return Err(KnobError::Refused(format!(
                    "sys.sched_ext={name}: sched_ext runs \"{ops}\", not this program's scheduler (another one was loaded meanwhile); stopped it"
                )));
            }
            _ => {}
        }
        if start.elapsed() > wait {
            let _ = child.stop(GRACE);
            return Err(KnobError::Refused(format!(
                "sys.sched_ext={name}: sched_ext was not enabled within {:.1} s (state {}); stopped it; {}",
                wait.as_secs_f64(),
                scx.state.map_or("unknown", State::word),
                last("it wrote nothing on stderr")
            )));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The scheduler's stderr as a thread reads it: the last non-empty line, and a signal
/// when the pipe closed.
struct Stderr {
    last: Arc<Mutex<String>>,
    done: std::sync::mpsc::Receiver<()>,
}

/// Read the child's stderr until it closes (the pipe must be drained while it runs),
/// keeping the last non-empty line: a scheduler that fails says why there (libbpf, the
/// verifier).
fn drain_stderr(stderr: Option<std::process::ChildStderr>) -> Stderr {
    let last = Arc::new(Mutex::new(String::new()));
    let (tx, done) = std::sync::mpsc::channel();
    if let Some(stderr) = stderr {
        let keep = Arc::clone(&last);
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stderr).lines() {
                let Ok(line) = line else { break };
                let line = line.trim();
                if !line.is_empty() {
                    if let Ok(mut l) = keep.lock() {
                        *l = line.chars().take(300).collect();
                    }
                }
            }
            let _ = tx.send(());
        });
    }
    Stderr { last, done }
}
