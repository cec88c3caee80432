//! schedlab's entry point: parse the command line, run the command (see `commands`), and
//! turn an error into one line and an exit code.

use std::process::ExitCode;

use clap::Parser;

use schedlab::cli::{Cli, Cmd};
use schedlab::commands::{self, exit};

fn main() -> ExitCode {
    let cli = Cli::parse();
    if commands::is_controller(&cli) {
        commands::install_panic_hook();
        if !matches!(cli.command, Some(Cmd::Restore { .. })) {
            commands::clean_up_after_the_dead();
        }
    }
    match commands::dispatch(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let code = commands::exit_code(&e);
            // Bad input is one line already; other errors show their causes.
            if code == exit::USAGE {
                eprintln!("schedlab: {e}");
            } else {
                eprintln!("schedlab: {e:#}");
            }
            ExitCode::from(code)
        }
    }
}
