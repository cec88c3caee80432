//! Text that came from a file or the command line, made safe to print on a terminal:
//! control characters escaped, and echoed input cut to a readable length.
//!
//! A preset, lesson or check report is anybody's file: an ESC or OSC sequence in a name
//! would otherwise move the cursor, retitle the window or hide what follows when an
//! error message or a listing quotes it, and a megabyte-long name would be a megabyte
//! of stderr. The workbench (ratatui) strips control characters itself; everything
//! printed by other means goes through here.

use std::borrow::Cow;
use std::fmt::Write as _;

/// How many characters of one piece of input a message quotes at most.
pub const ECHO_MAX_CHARS: usize = 200;

/// How long one line of an error message may be before its middle is left out: long
/// enough for any message schedlab composes, short of what a quoted file could make it.
pub const LINE_MAX_CHARS: usize = 1000;

/// A character a terminal could act on rather than show: C0 and C1 controls, DEL, and
/// the bidirectional overrides and isolates that reorder what is displayed.
fn acts_on_terminal(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// `s` with every character a terminal acts on written as a `\u{..}` escape, except the
/// ones in `keep` (line breaks in a multi-line text).
fn escaped<'a>(s: &'a str, keep: &[char]) -> Cow<'a, str> {
    if !s.chars().any(|c| acts_on_terminal(c) && !keep.contains(&c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if acts_on_terminal(c) && !keep.contains(&c) {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// One piece of input as a message quotes it: on one line, nothing a terminal acts on,
/// and at most [`ECHO_MAX_CHARS`] characters (then how many more there were).
pub fn echo(s: &str) -> String {
    let count = s.chars().count();
    if count <= ECHO_MAX_CHARS {
        return escaped(s, &[]).into_owned();
    }
    let head: String = s.chars().take(ECHO_MAX_CHARS).collect();
    format!("{}... ({} characters in all)", escaped(&head, &[]), count)
}

/// A text of several lines from a file (a note, a listing): line breaks and tabs kept,
/// every other character a terminal acts on escaped.
pub fn block(s: &str) -> Cow<'_, str> {
    escaped(s, &['\n', '\t'])
}

/// An error or warning as printed on stderr: [`block`], and a line longer than
/// [`LINE_MAX_CHARS`] keeps its start and its end (what was wrong and what is allowed)
/// with the middle left out.
pub fn message(s: &str) -> String {
    let safe = block(s);
    let mut out = String::with_capacity(safe.len().min(4 * LINE_MAX_CHARS));
    for (i, line) in safe.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let count = line.chars().count();
        if count <= LINE_MAX_CHARS {
            out.push_str(line);
            continue;
        }
        let (head, tail) = (LINE_MAX_CHARS / 2, LINE_MAX_CHARS / 4);
        out.extend(line.chars().take(head));
        let _ = write!(out, " ...[{} characters left out]... ", count - head - tail);
        out.extend(line.chars().skip(count - tail));
    }
    out
}

/// JSON text with the characters serde_json leaves raw in strings (DEL, C1 controls,
/// bidirectional overrides) written as `\u` escapes: the same document, safe to print.
/// Outside strings JSON has none of them, so every one is inside a string.
pub fn json(s: &str) -> Cow<'_, str> {
    if !s.chars().any(acts_on_terminal) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if acts_on_terminal(c) && !matches!(c, '\n' | '\t' | '\r') {
            let _ = write!(out, "\\u{:04x}", c as u32);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_a_terminal_acts_on_and_keeps_the_rest() {
        assert_eq!(echo("writer"), "writer");
        assert_eq!(echo("x\u{1b}]0;t\u{7}y"), "x\\u{1b}]0;t\\u{7}y");
        assert_eq!(echo("a\nb\u{9b}c\u{202e}d"), "a\\u{a}b\\u{9b}c\\u{202e}d");
        assert_eq!(block("a\n\tb\u{1b}[2J"), "a\n\tb\\u{1b}[2J");
        assert_eq!(echo("größe"), "größe");
    }

    #[test]
    fn echoed_input_and_message_lines_are_capped() {
        let long = "a".repeat(1_000_000);
        let e = echo(&long);
        assert!(e.len() < 300, "{}", e.len());
        assert!(e.ends_with("(1000000 characters in all)"), "{e}");
        let m = message(&format!(
            "unknown task \"{long}\": tasks are writer, reader\nnext"
        ));
        assert!(m.len() < 1100, "{}", m.len());
        assert!(m.starts_with("unknown task \"aaa"), "{m}");
        assert!(m.ends_with("tasks are writer, reader\nnext"), "{m}");
        assert_eq!(message("short\nlines"), "short\nlines");
    }

    #[test]
    fn json_stays_the_same_document() {
        let text = serde_json::to_string(&"a\u{1b}b\u{9b}c\u{7f}d\u{202e}").expect("json");
        let safe = json(&text);
        assert!(!safe.chars().any(acts_on_terminal), "{safe}");
        let back: String = serde_json::from_str(&safe).expect("still JSON");
        assert_eq!(back, "a\u{1b}b\u{9b}c\u{7f}d\u{202e}");
    }
}
