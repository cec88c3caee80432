//! Reading the README and the docs book: their pages, relative links and the
//! `schedlab ...` command lines of their code blocks.

use std::path::{Path, PathBuf};

/// The checkout's root.
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every page under docs/src (recursively), sorted.
pub fn markdown_files() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md") {
                out.push(path);
            }
        }
    }
    let mut pages = Vec::new();
    walk(&root().join("docs/src"), &mut pages);
    pages.sort();
    let mut files = vec![root().join("README.md")];
    files.extend(pages);
    files
}

/// README.md and every docs page, one text (for checks that a figure is quoted somewhere
/// a reader finds it).
pub fn all_text() -> String {
    markdown_files()
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
}

/// A fence line's marker (``` or ~~~) and its indentation, when `line` is one.
fn fence(line: &str) -> Option<usize> {
    let trimmed = line.trim_start();
    (trimmed.starts_with("```") || trimmed.starts_with("~~~")).then(|| line.len() - trimmed.len())
}

/// `text` with fenced code blocks and inline code spans blanked (newlines kept, so line
/// numbers still count): what is left is prose, where a `[..](..)` is a link.
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut in_fence = false;
    for line in text.lines() {
        if fence(line).is_some() {
            in_fence = !in_fence;
            out.push('\n');
            continue;
        }
        if !in_fence {
            out.push_str(line);
        }
        out.push('\n');
    }
    // Inline code spans (which may cross a line break) hold no links.
    let mut result = String::new();
    let mut in_code = false;
    for c in out.chars() {
        if c == '`' {
            in_code = !in_code;
        } else if !in_code || c == '\n' {
            result.push(c);
        }
    }
    result
}

/// Every link or image target in the prose of `text` with its 1-based line: the part in
/// `(...)` after `[...]`.
pub fn links(text: &str) -> Vec<(usize, String)> {
    let prose = prose(text);
    let bytes = prose.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while let Some(at) = prose[i..].find("](") {
        let start = i + at + 2;
        let end = prose[start..]
            .find(|c: char| c == ')' || c.is_whitespace())
            .map_or(prose.len(), |e| start + e);
        let line = 1 + bytes[..start].iter().filter(|&&b| b == b'\n').count();
        found.push((line, prose[start..end].to_string()));
        i = end;
    }
    found
}

/// The anchor GitHub and mdBook give a heading: lower case, punctuation dropped, spaces
/// as dashes.
pub fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of `text`'s headings (outside code blocks).
pub fn anchors(text: &str) -> Vec<String> {
    let mut in_fence = false;
    let mut out = Vec::new();
    for line in text.lines() {
        if fence(line).is_some() {
            in_fence = !in_fence;
        } else if !in_fence && line.starts_with('#') {
            out.push(slug(line.trim_start_matches('#')));
        }
    }
    out
}

/// The `schedlab ...` command lines in the code blocks of `text`, with their 1-based
/// line: in a console block (one with `$ ` prompts) the lines after `$ schedlab`, in
/// any other fenced or indented block the lines that start with `schedlab`. A line
/// ending in `\`, or followed by one that starts with `[` (a synopsis wrapped), goes on
/// in the next. Screens and outputs that merely begin with the name are prose to this.
pub fn command_lines(text: &str) -> Vec<(usize, String)> {
    let lines: Vec<&str> = text.lines().collect();
    // Which lines are code, with the indentation their block strips and whether the
    // block is a console transcript.
    let mut code: Vec<Option<(usize, bool)>> = vec![None; lines.len()];
    let mut i = 0;
    while i < lines.len() {
        if let Some(indent) = fence(lines[i]) {
            let start = i + 1;
            let mut end = start;
            while end < lines.len() && fence(lines[end]).is_none() {
                end += 1;
            }
            let console = lines[start..end]
                .iter()
                .any(|l| l.trim_start().starts_with("$ "));
            for slot in &mut code[start..end] {
                *slot = Some((indent, console));
            }
            i = end + 1;
            continue;
        }
        let indented = lines[i].starts_with("    ") && !lines[i].trim().is_empty();
        let after_blank_or_code = i == 0 || lines[i - 1].trim().is_empty() || code[i - 1].is_some();
        if indented && after_blank_or_code {
            let console = lines[i].trim_start().starts_with("$ ");
            code[i] = Some((lines[i].len() - lines[i].trim_start().len(), console));
        }
        i += 1;
    }
    let mut found = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some((indent, console)) = code[i] else {
            i += 1;
            continue;
        };
        let line = lines[i].get(indent..).unwrap_or_default();
        let command = if console {
            line.trim_start().strip_prefix("$ ")
        } else {
            Some(line)
        };
        let Some(command) = command.filter(|c| *c == "schedlab" || c.starts_with("schedlab "))
        else {
            i += 1;
            continue;
        };
        let number = i + 1;
        let mut full = command.trim_end().to_string();
        while i + 1 < lines.len() && code[i + 1].is_some() {
            let next = lines[i + 1].trim();
            if let Some(head) = full.strip_suffix('\\') {
                full = format!("{} {next}", head.trim_end());
            } else if next.starts_with('[') {
                full = format!("{full} {next}");
            } else {
                break;
            }
            i += 1;
        }
        found.push((number, full));
        i += 1;
    }
    found
}

/// A documented command line as words: what a shell would run, or a synopsis.
#[derive(Debug, PartialEq)]
pub struct Words {
    /// The words after `schedlab`.
    pub words: Vec<String>,
    /// Optional parts, alternatives or repetition (`[..]`, `a|b`, `...`) outside quotes:
    /// a synopsis, whose words go on across `|`.
    pub synopsis: bool,
}

/// A word that ends what a shell runs as schedlab: a pipe, a list or a redirection.
fn ends_command(word: &str) -> bool {
    ["|", "||", "&", "&&", ";"].contains(&word) || word.starts_with('>') || word.starts_with("2>")
}

/// What a documented command line says: its words as a shell splits them, up to a
/// comment (`#`) or a run of three spaces (a synopsis's description), and for a command
/// up to a pipe or a redirection.
pub fn shell_words(line: &str) -> Words {
    let mut words: Vec<(String, bool)> = Vec::new();
    let mut word = String::new();
    let mut marked = false;
    let mut in_word = false;
    let mut quote: Option<char> = None;
    let mut spaces = 0;
    for c in line.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => word.push(c),
            None if c == '\'' || c == '"' => {
                quote = Some(c);
                in_word = true;
            }
            None if c == ' ' || c == '\t' => {
                spaces += 1;
                if spaces >= 3 {
                    break;
                }
                if in_word {
                    words.push((std::mem::take(&mut word), marked));
                    in_word = false;
                    marked = false;
                }
                continue;
            }
            None if c == '#' && !in_word => break,
            None => {
                marked |= c == '[' || c == ']' || c == '|' || (c == '.' && word.ends_with(".."));
                word.push(c);
                in_word = true;
            }
        }
        spaces = 0;
    }
    if in_word {
        words.push((word, marked));
    }
    let end = words
        .iter()
        .position(|(w, _)| ends_command(w))
        .unwrap_or(words.len());
    let synopsis = words[..end].iter().any(|(_, marked)| *marked);
    if !synopsis {
        words.truncate(end);
    }
    Words {
        words: words.into_iter().skip(1).map(|(w, _)| w).collect(),
        synopsis,
    }
}

/// The documents' placeholders and what a command line gets in their place to parse.
pub const PLACEHOLDERS: &[(&str, &str)] = &[
    ("PRESET", "pipe-wakeup"),
    ("NAME", "pipe-wakeup"),
    ("FILE", "file"),
    ("DIR", "dir"),
    ("PID", "1"),
    ("$P", "1"),
    ("REGEX", "x"),
    ("SETTINGS", "writer.nice=1"),
    ("BASELINE.json", "a.json"),
    ("CURRENT.json", "b.json"),
    ("COMMAND", "true"),
    ("ARGS", "x"),
    ("DURATION", "1s"),
];

/// `words` with each placeholder replaced (whole words only).
pub fn substitute(words: &[String]) -> Vec<String> {
    words
        .iter()
        .map(|w| {
            PLACEHOLDERS
                .iter()
                .find(|(p, _)| p == w)
                .map_or_else(|| w.clone(), |(_, v)| v.to_string())
        })
        .collect()
}
