//! schedlab's entry point: parse the command line, run the command (see `commands`), and
//! turn an error into one line and an exit code.

use std::process::ExitCode;

use clap::Parser;

use schedlab::cli::{Cli, Cmd};
use schedlab::commands::{self, exit};
use schedlab::safe_text::message;

fn main() -> ExitCode {
    schedlab::report::meta::mark_start();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // Help and --version as clap prints them; an error quotes the arguments, so it
        // is printed plain, without anything a terminal acts on.
        Err(e) if !e.use_stderr() => e.exit(),
        Err(e) => {
            eprint!("{}", message(&e.render().to_string()));
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(exit::USAGE));
        }
    };
    if commands::is_controller(&cli) {
        commands::install_panic_hook();
        schedlab::workload::adopt_orphans();
        if !matches!(cli.command, Some(Cmd::Restore { .. })) {
            commands::clean_up_after_the_dead();
        }
    }
    let result = commands::dispatch(cli);
    // Ended by Ctrl-C (or SIGTERM/SIGHUP): the report was printed and the knobs put
    // back, but the shell and scripts should see that it did not run to the end.
    let by_signal = schedlab::system::ending_signal().map(exit::by_signal);
    match result {
        Ok(()) => by_signal.map_or(ExitCode::SUCCESS, ExitCode::from),
        Err(e) if by_signal.is_some() && commands::exit_code(&e) == exit::FAILURE => {
            eprintln!("schedlab: {}", message(&format!("{e:#}")));
            ExitCode::from(by_signal.unwrap_or(exit::FAILURE))
        }
        Err(e) => {
            let code = commands::exit_code(&e);
            // Bad input is one line already; other errors show their causes.
            let text = if code == exit::USAGE {
                format!("{e}")
            } else {
                format!("{e:#}")
            };
            // The message may quote a file or an argument: nothing a terminal acts on.
            eprintln!("schedlab: {}", message(&text));
            ExitCode::from(code)
        }
    }
}
