//! Editing a one-line text box with the usual keys (readline's): the boxes come pre-filled,
//! so clearing, deleting a word and moving inside the text matter.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

/// Characters that end a word for Ctrl-W: a setting's parts (`writer.nice=5`) are words.
const WORD_ENDS: [char; 6] = [' ', '.', '=', ',', ':', '/'];

/// Edit `text` for `key` at `cursor` (a byte offset on a character boundary), keeping it
/// at most `max` characters. False for a key that is not an editing key.
pub fn edit(text: &mut String, cursor: &mut usize, key: &KeyEvent, max: usize) -> bool {
    *cursor = (*cursor).min(text.len());
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let before = |t: &str, at: usize| {
        t[..at]
            .chars()
            .next_back()
            .map_or(at, |c| at - c.len_utf8())
    };
    let after = |t: &str, at: usize| t[at..].chars().next().map_or(at, |c| at + c.len_utf8());
    match key.code {
        KeyCode::Char('u') if ctrl => {
            text.replace_range(..*cursor, "");
            *cursor = 0;
        }
        KeyCode::Char('k') if ctrl => text.truncate(*cursor),
        KeyCode::Char('w') if ctrl => {
            let start = word_start(&text[..*cursor]);
            text.replace_range(start..*cursor, "");
            *cursor = start;
        }
        KeyCode::Char('a') if ctrl => *cursor = 0,
        KeyCode::Home => *cursor = 0,
        KeyCode::Char('e') if ctrl => *cursor = text.len(),
        KeyCode::End => *cursor = text.len(),
        KeyCode::Char('b') if ctrl => *cursor = before(text, *cursor),
        KeyCode::Left => *cursor = before(text, *cursor),
        KeyCode::Char('f') if ctrl => *cursor = after(text, *cursor),
        KeyCode::Right => *cursor = after(text, *cursor),
        KeyCode::Backspace => {
            let start = before(text, *cursor);
            text.replace_range(start..*cursor, "");
            *cursor = start;
        }
        KeyCode::Delete => {
            let end = after(text, *cursor);
            text.replace_range(*cursor..end, "");
        }
        // Another control key is no text (Ctrl-U typed a `u`).
        KeyCode::Char(_) if ctrl || key.modifiers.contains(KeyModifiers::ALT) => return false,
        KeyCode::Char(c) => {
            if text.chars().count() < max {
                text.insert(*cursor, c);
                *cursor += c.len_utf8();
            }
        }
        _ => return false,
    }
    true
}

/// Where the word before the end of `head` starts: trailing word ends are skipped, then
/// back to the character after the previous one.
fn word_start(head: &str) -> usize {
    let trimmed = head.trim_end_matches(WORD_ENDS);
    trimmed.rfind(WORD_ENDS).map_or(0, |i| {
        i + trimmed[i..].chars().next().map_or(1, char::len_utf8)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ctrl(c: char) -> KeyEvent {
        KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
    }

    fn plain(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    /// `text` after `keys`, with `|` where the cursor is.
    fn typed(text: &str, keys: &[KeyEvent]) -> String {
        let mut t = text.to_string();
        let mut cursor = t.len();
        for k in keys {
            edit(&mut t, &mut cursor, k, 200);
        }
        t.insert(cursor, '|');
        t
    }

    #[test]
    fn the_usual_line_editing_keys_edit_a_pre_filled_box() {
        use KeyCode::{Backspace, Char, Delete, End, Home, Left, Right};
        assert_eq!(typed("3ms", &[ctrl('u')]), "|");
        assert_eq!(typed("3ms", &[ctrl('u'), plain(Char('5'))]), "5|");
        assert_eq!(typed("writer.nice=5", &[ctrl('w')]), "writer.nice=|");
        assert_eq!(typed("writer.nice=", &[ctrl('w')]), "writer.|");
        assert_eq!(typed("a b  ", &[ctrl('w')]), "a |");
        assert_eq!(typed("3ms", &[ctrl('a')]), "|3ms");
        assert_eq!(typed("3ms", &[plain(Home), plain(Char('1'))]), "1|3ms");
        assert_eq!(typed("3ms", &[ctrl('a'), ctrl('e')]), "3ms|");
        assert_eq!(typed("3ms", &[plain(Home), plain(End)]), "3ms|");
        assert_eq!(typed("3ms", &[plain(Left), plain(Left)]), "3|ms");
        assert_eq!(typed("3ms", &[plain(Left), plain(Right)]), "3ms|");
        assert_eq!(typed("3ms", &[plain(Right)]), "3ms|", "not past the end");
        assert_eq!(typed("3ms", &[plain(Home), plain(Left)]), "|3ms");
        assert_eq!(typed("3ms", &[plain(Home), plain(Delete)]), "|ms");
        assert_eq!(typed("3ms", &[plain(End), plain(Delete)]), "3ms|");
        assert_eq!(typed("3ms", &[plain(Left), plain(Backspace)]), "3|s");
        assert_eq!(typed("3ms", &[plain(Home), plain(Backspace)]), "|3ms");
        assert_eq!(typed("3ms", &[ctrl('a'), ctrl('k')]), "|");
        assert_eq!(typed("0-1", &[plain(Left), ctrl('u')]), "|1");
        // Multi-byte characters move and delete whole.
        assert_eq!(typed("aé", &[plain(Left), plain(Delete)]), "a|");
        assert_eq!(typed("éa", &[plain(Left), plain(Backspace)]), "|a");
        // Another control key is not text, and the box keeps its limit.
        let mut t = String::from("x");
        let mut c = 1;
        assert!(!edit(&mut t, &mut c, &ctrl('z'), 200));
        assert_eq!(t, "x");
        assert!(edit(&mut t, &mut c, &plain(Char('y')), 1));
        assert_eq!(t, "x");
    }
}
