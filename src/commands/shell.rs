//! `schedlab completions SHELL` and `schedlab man`: both generated from the clap definitions.

use std::path::Path;

use anyhow::{Context, Result};
use clap::builder::{PossibleValue, PossibleValuesParser};
use clap::{Command, CommandFactory as _};

use super::output::emit;
use super::usage;
use crate::cli::Cli;

/// The completion script for `shell`, on stdout.
pub fn completions(shell: clap_complete::Shell) -> Result<()> {
    let mut cmd = completion_command();
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cmd, "schedlab", &mut out);
    let mut script = String::from_utf8_lossy(&out).into_owned();
    if shell == clap_complete::Shell::Fish {
        script.push_str(&fish_names());
    }
    emit(&script)
}

/// The commands as completions offer them: without the internal ones (`__worker`...),
/// and with the built-in preset and lesson names as the values of the arguments that
/// take one. Only the completions' copy lists the names: the command line still takes a
/// user preset or a path there (bash falls back to file names when no name matches).
pub fn completion_command() -> Command {
    let full = Cli::command();
    let visible: Vec<Command> = full
        .get_subcommands()
        .filter(|s| !s.is_hide_set())
        .cloned()
        .collect();
    // clap cannot remove a subcommand: the root is built again around the visible ones.
    let root = Command::new("schedlab")
        .version(env!("SCHEDLAB_VERSION"))
        .about(full.get_about().cloned().unwrap_or_default())
        .subcommands(visible);
    named_args()
        .into_iter()
        .fold(root, |root, (sub, arg, values)| {
            root.mut_subcommand(sub, |s| {
                s.mut_arg(arg, |a| a.value_parser(PossibleValuesParser::new(values)))
            })
        })
}

/// The subcommands' arguments that take a preset or lesson name, and the built-in names
/// (each with the line that describes it).
fn named_args() -> Vec<(&'static str, &'static str, Vec<PossibleValue>)> {
    let presets = names(crate::preset::BUILTIN, |name| {
        crate::preset::load_in(name, None).ok().map(|p| p.summary)
    });
    let lessons = names(crate::lesson::BUILTIN, |name| {
        crate::lesson::load_in(name, None).ok().map(|l| l.title)
    });
    let mut args: Vec<_> = ["tui", "run", "sweep", "compare"]
        .into_iter()
        .map(|sub| (sub, "preset", presets.clone()))
        .collect();
    args.push(("presets", "name", presets));
    args.push(("lesson", "name", lessons));
    args
}

fn names(
    builtin: &[(&'static str, &str)],
    describe: impl Fn(&str) -> Option<String>,
) -> Vec<PossibleValue> {
    builtin
        .iter()
        .map(|(name, _)| PossibleValue::new(*name).help(describe(name).unwrap_or_default()))
        .collect()
}

/// clap's fish script completes no positional arguments: the names are added here, file
/// names still complete beside them.
fn fish_names() -> String {
    let quote = |s: &str| format!("'{}'", s.replace('\\', "\\\\").replace('\'', "\\'"));
    let mut out = String::from("# Built-in preset and lesson names\n");
    for (sub, _, values) in named_args() {
        for v in values {
            out.push_str(&format!(
                "complete -c schedlab -n \"__fish_schedlab_using_subcommand {sub}\" -a {} -d {}\n",
                quote(v.get_name()),
                quote(&v.get_help().map(ToString::to_string).unwrap_or_default())
            ));
        }
    }
    out
}

/// The man page (roff) on stdout: schedlab's own, or the page of the subcommand
/// `words` names (`run`, `check diff`); with `dir`, every page into that directory.
pub fn man(words: &[String], dir: Option<&Path>) -> Result<()> {
    let mut root = Cli::command().disable_help_subcommand(true);
    root.build();
    if let Some(dir) = dir {
        let mut written = Vec::new();
        write_pages(&root, dir, &mut written)?;
        return emit(&format!(
            "wrote {} man pages to {}: {}\n",
            written.len(),
            dir.display(),
            written.join(" ")
        ));
    }
    let mut page = &root;
    for (depth, word) in words.iter().enumerate() {
        let visible: Vec<&Command> = page
            .get_subcommands()
            .filter(|s| !s.is_hide_set())
            .collect();
        page = visible
            .iter()
            .find(|s| s.get_name() == word)
            .copied()
            .ok_or_else(|| {
                let names: Vec<&str> = visible.iter().map(|s| s.get_name()).collect();
                let whose = if depth == 0 {
                    "schedlab".to_string()
                } else {
                    format!("schedlab {}", words[..depth].join(" "))
                };
                usage(if names.is_empty() {
                    format!(
                        "{whose} has no subcommands: `schedlab man {}` is its page",
                        words[..depth].join(" ")
                    )
                } else {
                    format!(
                        "no man page for \"{word}\": {whose}'s subcommands are {}",
                        names.join(", ")
                    )
                })
            })?;
    }
    let mut out = Vec::new();
    page_of(page).render(&mut out)?;
    emit(&String::from_utf8_lossy(&out))
}

/// One page: named like its file (schedlab-check-diff), from schedlab's version.
fn page_of(cmd: &Command) -> clap_mangen::Man {
    clap_mangen::Man::new(cmd.clone()).source(format!("schedlab {}", env!("SCHEDLAB_VERSION")))
}

/// `cmd`'s page and its visible subcommands' into `dir`, their file names into `written`.
fn write_pages(cmd: &Command, dir: &Path, written: &mut Vec<String>) -> Result<()> {
    let man = page_of(cmd);
    let path = man
        .generate_to(dir)
        .with_context(|| format!("writing {}", dir.join(man.get_filename()).display()))?;
    written.push(
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default(),
    );
    for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
        write_pages(sub, dir, written)?;
    }
    Ok(())
}
