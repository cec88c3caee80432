//! The README and the docs book (docs/, mdBook layout): every relative link resolves,
//! every `schedlab ...` command line in their code blocks parses, and SUMMARY.md lists
//! every page.

use std::path::Path;

use clap::{CommandFactory, Parser};
use schedlab::cli::Cli;

use crate::common::docs::{
    anchors, command_lines, links, markdown_files, root, shell_words, substitute, Words,
};

/// Why a documented command line would not be accepted, if it would not. A command
/// parses as clap parses it (placeholders substituted); a synopsis names subcommands
/// that exist and only flags they take.
fn refusal(line: &str) -> Option<String> {
    let Words { words, synopsis } = shell_words(line);
    if synopsis {
        let mut command = Cli::command();
        command.build();
        let mut rest = words.iter();
        for word in rest.by_ref() {
            match command.find_subcommand(word) {
                Some(sub) => command = sub.clone(),
                None => break,
            }
        }
        let mut unknown = Vec::new();
        for word in &words {
            let mut at = 0;
            while let Some(found) = word[at..].find("--") {
                let start = at + found + 2;
                let name: String = word[start..]
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
                    .collect();
                at = start + name.len();
                let known = name.is_empty()
                    || command.get_arguments().any(|a| {
                        a.get_long_and_visible_aliases()
                            .is_some_and(|l| l.contains(&name.as_str()))
                    });
                if !known {
                    unknown.push(format!("--{name}"));
                }
            }
        }
        return (!unknown.is_empty()).then(|| {
            format!(
                "`schedlab {}` takes no {}",
                command.get_name(),
                unknown.join(", ")
            )
        });
    }
    let args = std::iter::once("schedlab".to_string()).chain(substitute(&words));
    match Cli::try_parse_from(args) {
        Ok(_) => None,
        Err(e)
            if matches!(
                e.kind(),
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion
            ) =>
        {
            None
        }
        Err(e) => Some(e.to_string().lines().next().unwrap_or_default().to_string()),
    }
}

#[test]
fn every_documented_command_line_parses() {
    let mut checked = 0;
    let mut wrong = Vec::new();
    for path in markdown_files() {
        let text = std::fs::read_to_string(&path).expect("readable");
        for (line, command) in command_lines(&text) {
            checked += 1;
            if let Some(why) = refusal(&command) {
                wrong.push(format!("{}:{line}: {command}\n    {why}", path.display()));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // The README and the book show dozens; finding few means the reader broke.
    assert!(checked >= 40, "only {checked} command lines found");
}

/// The checker itself refuses what is wrong: an unknown flag, a flag of another
/// subcommand (in a command and in a synopsis), an unknown subcommand.
#[test]
fn the_command_check_refuses_wrong_lines() {
    for bad in [
        "schedlab run pipe-wakeup --no-such-flag",
        "schedlab presets --duration 3s",
        "schedlab frobnicate",
        "schedlab tui PRESET [--no-such-flag]",
        "schedlab check [--quick] [--keep]",
    ] {
        assert!(refusal(bad).is_some(), "{bad} was accepted");
    }
    for good in [
        "schedlab",
        "schedlab run PRESET --duration 3s --set writer.nice=1",
        "schedlab check diff BASELINE.json [CURRENT.json] [--quick] [--json FILE|-]",
    ] {
        assert_eq!(refusal(good), None, "{good}");
    }
    // Console transcripts, indented blocks, continuations; screens are not commands.
    let text = "```\n$ schedlab run x \\\n  --duration 2s\nschedlab output line\n```\n\n    schedlab knobs | grep x   # c\n\n```\n schedlab  screen\n```\n";
    let found: Vec<String> = command_lines(text).into_iter().map(|(_, c)| c).collect();
    assert_eq!(
        found,
        [
            "schedlab run x --duration 2s",
            "schedlab knobs | grep x   # c"
        ]
    );
    assert_eq!(shell_words(&found[1]).words, ["knobs"]);
    assert!(!shell_words(&found[1]).synopsis);
    // Quoted alternatives are a value; unquoted ones a synopsis that goes on across `|`.
    let quoted = shell_words("schedlab tui --name '^(a|b c)$'");
    assert_eq!(quoted.words, ["tui", "--name", "^(a|b c)$"]);
    assert!(!quoted.synopsis);
    let wrapped = shell_words("schedlab run [PRESET | --pid PID,... | -- COMMAND...] [--keep]");
    assert!(wrapped.synopsis);
    assert_eq!(wrapped.words.last().map(String::as_str), Some("[--keep]"));
}

#[test]
fn every_relative_link_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for path in markdown_files() {
        let text = std::fs::read_to_string(&path).expect("readable");
        let dir = path.parent().unwrap_or(Path::new("."));
        for (line, target) in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (file, anchor) = target.split_once('#').unwrap_or((&target, ""));
            let resolved = if file.is_empty() {
                path.clone()
            } else {
                dir.join(file)
            };
            if !resolved.exists() {
                broken.push(format!(
                    "{}:{line}: {target} (no such file)",
                    path.display()
                ));
            } else if !anchor.is_empty() && resolved.extension().is_some_and(|e| e == "md") {
                let heads = anchors(&std::fs::read_to_string(&resolved).unwrap_or_default());
                if !heads.iter().any(|h| h == anchor) {
                    broken.push(format!(
                        "{}:{line}: {target} (no such heading)",
                        path.display()
                    ));
                }
            }
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
    assert!(checked >= 30, "only {checked} relative links found");
}

/// mdBook renders only what SUMMARY.md lists: a page missing there is missing from the
/// book.
#[test]
fn the_book_summary_lists_every_page() {
    let src = root().join("docs/src");
    assert!(root().join("docs/book.toml").is_file());
    let summary = std::fs::read_to_string(src.join("SUMMARY.md")).expect("docs/src/SUMMARY.md");
    let listed: Vec<String> = links(&summary).into_iter().map(|(_, t)| t).collect();
    let missing: Vec<String> = markdown_files()
        .into_iter()
        .filter_map(|p| {
            p.strip_prefix(&src)
                .ok()
                .map(|p| p.to_string_lossy().into_owned())
        })
        .filter(|p| p != "SUMMARY.md" && !listed.contains(p))
        .collect();
    assert!(
        missing.is_empty(),
        "not in docs/src/SUMMARY.md: {missing:?}"
    );
}

/// The README is a front page: what schedlab is, a screen, privileges, first commands
/// and links into the book.
#[test]
fn the_readme_is_a_short_front_page() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let lines = readme.lines().count();
    assert!(lines <= 200, "README.md has {lines} lines (at most 200)");
    for must in ["cargo run --release", "cargo test", "docs/src/SUMMARY.md"] {
        assert!(readme.contains(must), "README.md lacks {must}");
    }
}
