//! One file per subcommand; this one dispatches the command line to them, and says
//! what an error means for the exit code.

mod check;
mod compare;
mod knobs;
mod lesson;
mod output;
mod prepare;
mod presets;
mod restore;
mod run;
mod shell;
mod sweep;
mod target;
mod tui;

use anyhow::{Context, Result};

use crate::cli::{Cli, Cmd, SettingsArgs, SystemArgs};
use crate::error::{Invalid, Kind};
use crate::knob::journal;
use crate::safe_text::message;
use crate::workload::{contain, workers, CannotRun};

/// Bad input (exit code 2): `msg` names what was wrong and what is allowed.
pub(crate) fn usage(msg: impl std::fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Invalid(msg.to_string()))
}

/// Whether this command is schedlab itself, not a worker it started: only schedlab owns
/// the journal, restores after a panic and cleans up after the dead. Completions and the
/// man page touch nothing, so they do not clean up either (their stdout is a file).
pub fn is_controller(cli: &Cli) -> bool {
    !matches!(
        cli.command,
        Some(
            Cmd::Worker { .. }
                | Cmd::Exec { .. }
                | Cmd::Job { .. }
                | Cmd::Completions { .. }
                | Cmd::Man { .. }
        )
    )
}

/// Run the command line's command.
pub fn dispatch(cli: Cli) -> Result<()> {
    match cli.command {
        None => tui::tui(
            None,
            &crate::cli::TargetArgs::default(),
            &SettingsArgs {
                interval: "100ms".into(),
                ..SettingsArgs::default()
            },
            &SystemArgs::default(),
            crate::trace::Wakings::CrossCpu,
        ),
        Some(Cmd::Tui {
            preset,
            target,
            settings,
            system,
            trace_every_waking,
        }) => tui::tui(
            preset.as_deref(),
            &target,
            &settings,
            &system,
            if trace_every_waking {
                crate::trace::Wakings::All
            } else {
                crate::trace::Wakings::CrossCpu
            },
        ),
        Some(Cmd::Presets { name }) => presets::presets(name.as_deref()),
        Some(Cmd::Run(args)) => run::run_command(args),
        Some(Cmd::Sweep(args)) => sweep::sweep(args),
        Some(Cmd::Compare(args)) => compare::compare(args),
        Some(Cmd::Lesson(args)) => lesson::lesson(args),
        Some(Cmd::Knobs {
            json,
            mount_debugfs,
        }) => knobs::knobs(json.as_deref(), mount_debugfs),
        Some(Cmd::Check(args)) => check::check(args),
        Some(Cmd::Restore { discard }) => restore::restore(discard),
        Some(Cmd::Replay { file, speed }) => tui::replay(&file, speed),
        Some(Cmd::Completions { shell }) => shell::completions(shell),
        Some(Cmd::Man { command, dir }) => shell::man(&command, dir.as_deref()),
        Some(Cmd::Worker { shm, threads }) => serde_json::from_str(&threads)
            .context("bad --threads")
            .and_then(|t: Vec<workers::ThreadSpec>| workers::worker_main(&shm, &t)),
        Some(Cmd::Exec {
            shm,
            slot,
            stdin_pipe,
            stdout_pipe,
            poll_stdin,
            argv,
        }) => workers::exec_main(
            &shm,
            slot,
            &argv,
            workers::ExecPipes {
                stdin: stdin_pipe,
                stdout: stdout_pipe,
                poll_stdin,
            },
        ),
        Some(Cmd::Job {
            shm,
            slot,
            stage,
            ms,
            io_ms,
        }) => workers::job_main(&shm, slot, stage, ms, io_ms),
    }
}

/// Exit codes, by what went wrong.
pub mod exit {
    /// Something failed (the kernel refused a system knob the user asked for, I/O).
    pub const FAILURE: u8 = 1;
    /// Bad input: the user can fix the command line or the preset.
    pub const USAGE: u8 = 2;
    /// The run went on without a setting that defines the experiment (see --allow-partial).
    pub const PARTIAL: u8 = 3;
    /// Another schedlab holds the knob lock: try again when it is done.
    pub const LOCKED: u8 = 4;
    /// Ended by SIGINT (Ctrl-C): 128 + the signal's number, as shells report it.
    pub const SIGINT: u8 = 128 + libc::SIGINT as u8;

    /// The code for a command ended early by `signal` (128 + its number).
    pub fn by_signal(signal: i32) -> u8 {
        u8::try_from(128 + signal).unwrap_or(FAILURE)
    }
}

/// The exit code for an error, by the first cause that says what kind it is.
pub fn exit_code(e: &anyhow::Error) -> u8 {
    if e.chain().any(|c| c.is::<CannotRun>()) {
        return exit::USAGE;
    }
    match crate::error::kind_of(e) {
        Some(Kind::Invalid) => exit::USAGE,
        Some(Kind::Locked) => exit::LOCKED,
        None if e.chain().any(|c| c.is::<Partial>()) => exit::PARTIAL,
        None => exit::FAILURE,
    }
}

/// The run finished, but without a setting that defines its experiment: the numbers
/// were printed, marked, and the exit code says so.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Partial(pub String);

/// On a panic, put every journaled knob back before anything else (the hook runs
/// before unwinding, and a panic may never unwind to the Journal's Drop).
pub fn install_panic_hook() {
    let path = journal::default_path().ok();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        for r in path.iter().flat_map(|p| journal::restore_own(p)) {
            eprintln!("schedlab: {}", message(&r.to_string()));
        }
        previous(info);
    }));
}

/// What a schedlab that died left behind: knobs (its journal) and processes (its
/// experiments' cgroups and process groups). Put back and killed now, and said.
pub fn clean_up_after_the_dead() {
    for line in contain::clean_stale() {
        eprintln!("schedlab: {}", message(&line));
    }
    let Ok(path) = journal::default_path() else {
        // An unusable state directory: the command that needs it says why.
        return;
    };
    match journal::restore_stale(&path) {
        Ok(Some((pid, restored))) => {
            eprintln!(
                "schedlab: an earlier schedlab (pid {pid}) left knobs changed; restoring them:"
            );
            for r in restored {
                eprintln!("schedlab:   {}", message(&r.to_string()));
            }
        }
        Ok(None) => {}
        // Another schedlab is running: it restores its own knobs.
        Err(e) if crate::error::kind_of(&e) == Some(Kind::Locked) => {}
        Err(e) if e.to_string().contains("is running and owns") => {}
        Err(e) => eprintln!("schedlab: {}", message(&format!("{e:#}"))),
    }
}
