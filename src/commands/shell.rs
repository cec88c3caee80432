//! `schedlab completions SHELL` and `schedlab man`: both generated from the clap definitions.

use anyhow::Result;
use clap::CommandFactory as _;

use super::output::emit;
use crate::cli::Cli;

/// The completion script for `shell`, on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<()> {
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "schedlab", &mut out);
    emit(&String::from_utf8_lossy(&out))
}

/// The man page (roff), on stdout.
pub fn man() -> Result<()> {
    let mut out = Vec::new();
    clap_mangen::Man::new(Cli::command()).render(&mut out)?;
    emit(&String::from_utf8_lossy(&out))
}
