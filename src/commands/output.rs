//! How commands print: JSON or the table, to stdout or a file; a closed pipe is fine.

use std::io::Write as _;

use anyhow::{Context, Result};

use crate::safe_text;

/// JSON to stdout (`-`) or a file (then the table on stdout too), else the table.
pub fn print_report<T: serde::Serialize>(
    json: Option<&str>,
    report: &T,
    table: String,
) -> Result<()> {
    match json {
        Some("-") => emit(&format!("{}\n", json_text(report)?)),
        Some(path) => {
            write_json(path, report)?;
            emit(&table)
        }
        None => emit(&table),
    }
}

/// The report as a JSON document: its fields and the header (`report::meta`), with
/// every control character in its strings escaped (it may be printed on a terminal).
pub fn json_text<T: serde::Serialize>(report: &T) -> Result<String> {
    let text = serde_json::to_string_pretty(&crate::report::meta::stamp(report)?)?;
    Ok(safe_text::json(&text).into_owned())
}

/// The report's JSON document into the file at `path`.
pub fn write_json<T: serde::Serialize>(path: &str, report: &T) -> Result<()> {
    crate::outfile::write(path.as_ref(), json_text(report)?.as_bytes())
        .with_context(|| format!("writing {path}"))
}

/// Print to stdout; a closed pipe (`| head`) is not an error. Names and notes in the
/// text may come from anybody's file: nothing in it reaches the terminal as a control.
pub fn emit(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(safe_text::block(text).as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}
