//! The last lines of a log file, read from its end: a command may have written
//! megabytes to it, and only its last words say why it failed.

use std::io::{Read, Seek, SeekFrom};
use std::path::Path;

/// How much of the file's end is read.
const TAIL_BYTES: u64 = 4096;

/// Up to `lines` last non-empty lines of `path` (from its last 4 KiB), control
/// characters escaped so a terminal shows them rather than obeys them. Empty when
/// the file is missing or empty.
pub fn last_lines(path: &Path, lines: usize) -> Vec<String> {
    let Ok(mut f) = std::fs::File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let start = len.saturating_sub(TAIL_BYTES);
    let mut buf = Vec::new();
    if f.seek(SeekFrom::Start(start)).is_err() || f.take(TAIL_BYTES).read_to_end(&mut buf).is_err()
    {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&buf);
    let mut all: Vec<&str> = text.lines().collect();
    // A read that starts mid-file starts mid-line: that fragment is not shown.
    if start > 0 && !all.is_empty() {
        all.remove(0);
    }
    let mut out: Vec<String> = all
        .into_iter()
        .rev()
        .filter(|l| !l.trim().is_empty())
        .take(lines)
        .map(escape_controls)
        .collect();
    out.reverse();
    out
}

/// `line` with every control character but a tab written as an escape (`\u{1b}`).
fn escape_controls(line: &str) -> String {
    line.chars()
        .map(|c| {
            if c.is_control() && c != '\t' {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_lines_come_from_the_end_of_a_long_file_with_controls_escaped() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("stderr.log");
        let mut text: String = (0..10_000).map(|i| format!("line {i}\n")).collect();
        text.push_str("\n\x1b[31mred\x1b[0m: failed\n\n");
        std::fs::write(&path, text).expect("write");
        assert_eq!(
            last_lines(&path, 3),
            ["line 9998", "line 9999", "\\u{1b}[31mred\\u{1b}[0m: failed"]
        );
        assert!(last_lines(&dir.path().join("none"), 3).is_empty());
    }
}
