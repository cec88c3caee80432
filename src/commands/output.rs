//! How commands print: JSON or the table, to stdout or a file; a closed pipe is fine.

use std::io::Write as _;

use anyhow::{Context, Result};

/// JSON to stdout (`-`) or a file (then the table on stdout too), else the table.
pub fn print_report<T: serde::Serialize>(
    json: Option<&str>,
    report: &T,
    table: String,
) -> Result<()> {
    match json {
        Some("-") => emit(&format!("{}\n", serde_json::to_string_pretty(report)?)),
        Some(path) => {
            std::fs::write(path, serde_json::to_string_pretty(report)?)
                .with_context(|| format!("writing {path}"))?;
            emit(&table)
        }
        None => emit(&table),
    }
}

/// Print to stdout; a closed pipe (`| head`) is not an error.
pub fn emit(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}
