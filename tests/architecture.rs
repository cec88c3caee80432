//! The crate's module structure: no import cycles between the top-level modules.
//!
//! A top-level module is an entry of src/lib.rs (`app`, `ui`, `lab`, ...). Module A
//! imports B when code in a file of A names a path `crate::B...` (in a `use`, grouped
//! `use crate::{B, ...}` included, or inline). The scan is textual, not a parse:
//! - comments (doc comments included: an intra-doc link is not a dependency), string
//!   and char literals are blanked first;
//! - test code is exempt: an item under `#[cfg(test)]` (attribute written exactly so),
//!   and every file of a module declared under it (`#[cfg(test)] mod tests;`) with its
//!   submodules. Tests may reach across the layers (app's tests draw the screen with
//!   `crate::ui`); the shipped code may not;
//! - files are found by walking `mod NAME;` declarations from src/lib.rs, so a file
//!   no module declares is not counted, and a `super::super::` path climbing to the
//!   crate root is not seen (the crate has none outside tests).
//!
//! Run it alone with `cargo test --test integration architecture::`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// Where an import was seen: the file, its line and the path as written.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Seen {
    file: String,
    line: usize,
    path: String,
}

/// Importer -> imported -> the first place the import was seen.
type Graph = BTreeMap<String, BTreeMap<String, Seen>>;

/// `text` with comments, string literals and char literals turned into spaces (line
/// breaks kept, so line numbers still hold).
fn blank_non_code(text: &str) -> String {
    let s: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        let next = s.get(i + 1).copied();
        i = if c == '/' && next == Some('/') {
            blank_line_comment(&s, i, &mut out)
        } else if c == '/' && next == Some('*') {
            blank_block_comment(&s, i, &mut out)
        } else if c == 'r'
            && (next == Some('"') || next == Some('#'))
            && !s[..i]
                .last()
                .is_some_and(|p| p.is_alphanumeric() || *p == '_')
        {
            blank_raw_string(&s, i, &mut out)
        } else if c == '"' {
            blank_string(&s, i, &mut out)
        } else if c == '\'' {
            blank_char_literal(&s, i, &mut out)
        } else {
            out.push(c);
            i + 1
        };
    }
    out
}

/// A blank for `c`: a space, but a line break stays one.
fn keep_lines(c: char) -> char {
    if c == '\n' {
        '\n'
    } else {
        ' '
    }
}

/// Blanks the `//` comment at `s[i]` up to its line break: where the scan goes on.
fn blank_line_comment(s: &[char], mut i: usize, out: &mut String) -> usize {
    while i < s.len() && s[i] != '\n' {
        out.push(' ');
        i += 1;
    }
    i
}

/// Blanks the `/* */` comment at `s[i]`: where the scan goes on.
fn blank_block_comment(s: &[char], mut i: usize, out: &mut String) -> usize {
    // Block comments nest in Rust.
    let mut depth = 0;
    while i < s.len() {
        if s[i] == '/' && s.get(i + 1) == Some(&'*') {
            depth += 1;
            out.push_str("  ");
            i += 2;
        } else if s[i] == '*' && s.get(i + 1) == Some(&'/') {
            depth -= 1;
            out.push_str("  ");
            i += 2;
            if depth == 0 {
                break;
            }
        } else {
            out.push(keep_lines(s[i]));
            i += 1;
        }
    }
    i
}

/// Blanks the raw string at `s[i]` (an `r` that is no raw string stays): where the scan
/// goes on.
fn blank_raw_string(s: &[char], i: usize, out: &mut String) -> usize {
    // A raw string: r"..." or r#"..."#, ended by a quote and as many hashes.
    let mut j = i + 1;
    while s.get(j) == Some(&'#') {
        j += 1;
    }
    if s.get(j) != Some(&'"') {
        out.push(s[i]);
        return i + 1;
    }
    let hashes = j - i - 1;
    let mut k = j + 1;
    while k < s.len() && !(s[k] == '"' && (1..=hashes).all(|h| s.get(k + h) == Some(&'#'))) {
        k += 1;
    }
    let end = (k + 1 + hashes).min(s.len());
    out.extend(s[i..end].iter().map(|&c| keep_lines(c)));
    end
}

/// Blanks the string literal at `s[i]`: where the scan goes on.
fn blank_string(s: &[char], mut i: usize, out: &mut String) -> usize {
    out.push(' ');
    i += 1;
    while i < s.len() && s[i] != '"' {
        if s[i] == '\\' {
            out.push(' ');
            i += 1;
        }
        if i < s.len() {
            out.push(keep_lines(s[i]));
            i += 1;
        }
    }
    out.push(' ');
    i + 1
}

/// Blanks the char literal at `s[i]` ('x', '\n', '\u{..}'); a lifetime ('a) stays:
/// where the scan goes on.
fn blank_char_literal(s: &[char], i: usize, out: &mut String) -> usize {
    let next = s.get(i + 1).copied();
    let end = if next == Some('\\') {
        s.get(i + 3..)
            .and_then(|t| t.iter().position(|&c| c == '\''))
            .map(|p| i + 3 + p)
    } else if s.get(i + 2) == Some(&'\'') {
        Some(i + 2)
    } else {
        None
    };
    match end {
        Some(e) => {
            out.push_str(&" ".repeat(e + 1 - i));
            e + 1
        }
        None => {
            out.push(s[i]);
            i + 1
        }
    }
}

/// `code` (already blanked) with every `#[cfg(test)]` item turned into spaces, and the
/// names of the modules declared test-only (`#[cfg(test)] mod NAME;`).
fn blank_test_items(code: &str) -> (String, Vec<String>) {
    const ATTR: &str = "#[cfg(test)]";
    let mut out: Vec<char> = code.chars().collect();
    let chars = out.clone();
    let mut test_mods = Vec::new();
    let mut from = 0;
    while let Some(found) = find_chars(&chars, ATTR, from) {
        // The item runs to its first `;` or to the brace closing its first `{`.
        let mut i = found + ATTR.chars().count();
        let mut depth = 0usize;
        let mut end = chars.len();
        while i < chars.len() {
            match chars[i] {
                '{' => depth += 1,
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = i + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = i + 1;
                    break;
                }
                _ => {}
            }
            i += 1;
        }
        let item: String = chars[found..end].iter().collect();
        let words: Vec<&str> = item
            .trim_start_matches(ATTR)
            .trim_end_matches(';')
            .split_whitespace()
            .collect();
        if item.ends_with(';') {
            if let [.., "mod", name] = words.as_slice() {
                test_mods.push(name.to_string());
            }
        }
        for c in &mut out[found..end] {
            if *c != '\n' {
                *c = ' ';
            }
        }
        from = end;
    }
    (out.into_iter().collect(), test_mods)
}

fn find_chars(hay: &[char], needle: &str, from: usize) -> Option<usize> {
    let needle: Vec<char> = needle.chars().collect();
    (from..hay.len().saturating_sub(needle.len() - 1)).find(|&i| hay[i..].starts_with(&needle))
}

/// The `mod NAME;` declarations left in `code`.
fn declared_mods(code: &str) -> Vec<String> {
    let words: Vec<&str> = code
        .split(|c: char| c.is_whitespace() || c == ';')
        .filter(|w| !w.is_empty())
        .collect();
    let mut mods = Vec::new();
    for (i, w) in words.iter().enumerate() {
        if *w == "mod" {
            if let Some(name) = words.get(i + 1) {
                let name_end = i + 2;
                // `mod name {` is inline; only `mod name;` names a file.
                let inline = words.get(name_end) == Some(&"{") || name.ends_with('{');
                let semicolon = code.contains(&format!("mod {name};"));
                if !inline && semicolon {
                    mods.push(name.to_string());
                }
            }
        }
    }
    mods.sort();
    mods.dedup();
    mods
}

/// The file of module `name` declared in `parent`.
fn module_file(parent: &Path, name: &str) -> Option<PathBuf> {
    let stem = parent.file_stem()?.to_str()?;
    let dir = parent.parent()?;
    let dir = if matches!(stem, "lib" | "main" | "mod") {
        dir.to_path_buf()
    } else {
        dir.join(stem)
    };
    [
        dir.join(format!("{name}.rs")),
        dir.join(name).join("mod.rs"),
    ]
    .into_iter()
    .find(|p| p.is_file())
}

/// The `crate::NAME...` paths in `code`, with their line (1-based): grouped imports
/// (`crate::{a::x, b}`) give one path per top-level name.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            let before = rest[..at].chars().last();
            let tail = &rest[at + "crate::".len()..];
            rest = tail;
            // `$crate::` counts; `my_crate::` does not.
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                continue;
            }
            if let Some(group) = tail.strip_prefix('{') {
                let mut depth = 0;
                let mut item = String::new();
                for c in group.chars() {
                    match c {
                        '{' => depth += 1,
                        '}' if depth == 0 => break,
                        '}' => depth -= 1,
                        ',' if depth == 0 => {
                            found.push((n + 1, format!("crate::{}", item.trim())));
                            item.clear();
                            continue;
                        }
                        _ => {}
                    }
                    item.push(c);
                }
                if !item.trim().is_empty() {
                    found.push((n + 1, format!("crate::{}", item.trim())));
                }
                continue;
            }
            let path: String = tail
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':')
                .collect();
            found.push((n + 1, format!("crate::{}", path.trim_end_matches(':'))));
        }
    }
    found
}

/// The first name of a `crate::` path.
fn top_name(path: &str) -> &str {
    let rest = path.trim_start_matches("crate::");
    let end = rest
        .find(|c: char| !(c.is_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    &rest[..end]
}

/// Add the imports of `code` (a file of top-level module `module`) to `graph`.
fn add_imports(graph: &mut Graph, tops: &BTreeSet<String>, module: &str, file: &str, code: &str) {
    for (line, path) in crate_paths(code) {
        let target = top_name(&path);
        if target == module || !tops.contains(target) {
            continue;
        }
        graph
            .entry(module.to_string())
            .or_default()
            .entry(target.to_string())
            .or_insert(Seen {
                file: file.to_string(),
                line,
                path,
            });
    }
}

/// The import graph of the crate rooted at `src/lib.rs`, test code left out.
fn crate_graph(src: &Path) -> Graph {
    let lib = src.join("lib.rs");
    let text = std::fs::read_to_string(&lib).expect("src/lib.rs");
    let (root, _) = blank_test_items(&blank_non_code(&text));
    let tops: BTreeSet<String> = declared_mods(&root).into_iter().collect();
    let mut graph = Graph::new();
    // (file, its top-level module): test-only files never enter the queue.
    let mut queue: VecDeque<(PathBuf, String)> = tops
        .iter()
        .map(|m| {
            (
                module_file(&lib, m).expect("a top-level module's file"),
                m.clone(),
            )
        })
        .collect();
    while let Some((file, module)) = queue.pop_front() {
        let text = std::fs::read_to_string(&file).expect("a module's file");
        let (code, test_mods) = blank_test_items(&blank_non_code(&text));
        let shown = file
            .strip_prefix(src.parent().unwrap_or(src))
            .unwrap_or(&file)
            .display()
            .to_string();
        add_imports(&mut graph, &tops, &module, &shown, &code);
        for child in declared_mods(&code) {
            if test_mods.contains(&child) {
                continue;
            }
            if let Some(f) = module_file(&file, &child) {
                queue.push_back((f, module.clone()));
            }
        }
    }
    graph
}

/// Every cycle of `graph`, each once: the shortest one through each module in a cycle,
/// starting at its smallest name.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    let mut found = BTreeSet::new();
    for start in graph.keys() {
        // Breadth first from `start`: the first path back to it is a shortest cycle.
        let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
        let mut queue = VecDeque::from([start.as_str()]);
        let mut last = None;
        'search: while let Some(at) = queue.pop_front() {
            for next in graph.get(at).into_iter().flat_map(|m| m.keys()) {
                if next == start {
                    last = Some(at);
                    break 'search;
                }
                if !came_from.contains_key(next.as_str()) {
                    came_from.insert(next, at);
                    queue.push_back(next);
                }
            }
        }
        let Some(mut at) = last else { continue };
        let mut cycle = vec![at.to_string()];
        while at != start {
            at = came_from[at];
            cycle.push(at.to_string());
        }
        cycle.reverse();
        let smallest = cycle
            .iter()
            .enumerate()
            .min_by_key(|(_, m)| m.as_str())
            .map_or(0, |(i, _)| i);
        cycle.rotate_left(smallest);
        found.insert(cycle);
    }
    found.into_iter().collect()
}

/// `a -> b -> a via src/a/x.rs:3: crate::b::f; src/b/y.rs:9: crate::a::T`.
fn describe(graph: &Graph, cycle: &[String]) -> String {
    let mut names = cycle.to_vec();
    names.push(cycle[0].clone());
    let evidence: Vec<String> = names
        .windows(2)
        .map(|w| {
            let seen = &graph[&w[0]][&w[1]];
            format!("{}:{}: {}", seen.file, seen.line, seen.path)
        })
        .collect();
    format!("{} via {}", names.join(" -> "), evidence.join("; "))
}

#[test]
fn no_import_cycles_between_top_level_modules() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = crate_graph(&src);
    assert!(
        graph.contains_key("tui") && graph["tui"].contains_key("app"),
        "the scan sees the imports (tui uses app): {graph:?}"
    );
    let found: Vec<String> = cycles(&graph).iter().map(|c| describe(&graph, c)).collect();
    assert!(
        found.is_empty(),
        "import cycles between top-level modules (move what both need to the lower one):\n{}",
        found.join("\n")
    );
}

fn graph_of(edges: &[(&str, &str)]) -> Graph {
    let mut graph = Graph::new();
    for (line, (a, b)) in edges.iter().enumerate() {
        graph.entry(a.to_string()).or_default().insert(
            b.to_string(),
            Seen {
                file: format!("src/{a}.rs"),
                line: line + 1,
                path: format!("crate::{b}::x"),
            },
        );
    }
    graph
}

#[test]
fn the_cycle_finder_names_each_cycle_once_with_where_it_was_seen() {
    let acyclic = graph_of(&[("tui", "app"), ("tui", "ui"), ("ui", "app"), ("app", "lab")]);
    assert!(cycles(&acyclic).is_empty());
    let planted = graph_of(&[
        ("tui", "app"),
        ("ui", "app"),
        ("app", "ui"),
        ("lab", "report"),
        ("report", "check"),
        ("check", "lab"),
        ("report", "plot"),
    ]);
    let found = cycles(&planted);
    assert_eq!(
        found,
        [vec!["app", "ui"], vec!["check", "lab", "report"]],
        "{found:?}"
    );
    assert_eq!(
        describe(&planted, &found[0]),
        "app -> ui -> app via src/app.rs:3: crate::ui::x; src/ui.rs:2: crate::app::x"
    );
}

#[test]
fn the_scan_skips_comments_strings_and_test_code_and_reads_grouped_imports() {
    let text = r##"
use crate::{lab::Store, report};
// crate::ui in a comment
/// [`crate::ui::hit`] in a doc comment
const S: &str = "crate::ui";
const R: &str = r#"crate::ui "quoted""#;
fn f<'a>(x: &'a str) -> char { let _ = crate::knob::set(x); '{' }
#[cfg(test)]
mod tests {
    use crate::ui::tests::draw;
    fn g() { let _ = '}'; }
}
#[cfg(test)]
mod fixtures;
mod live;
fn h() -> crate::sampler::Batch { todo!() }
"##;
    let (code, test_mods) = blank_test_items(&blank_non_code(text));
    assert_eq!(test_mods, ["fixtures"]);
    assert_eq!(declared_mods(&code), ["live"]);
    let tops: BTreeSet<String> = ["app", "lab", "report", "ui", "knob", "sampler"]
        .map(String::from)
        .into();
    let mut graph = Graph::new();
    add_imports(&mut graph, &tops, "app", "src/app/mod.rs", &code);
    let imported: Vec<(&str, usize, &str)> = graph["app"]
        .iter()
        .map(|(m, s)| (m.as_str(), s.line, s.path.as_str()))
        .collect();
    assert_eq!(
        imported,
        [
            ("knob", 7, "crate::knob::set"),
            ("lab", 2, "crate::lab::Store"),
            ("report", 2, "crate::report"),
            ("sampler", 16, "crate::sampler::Batch"),
        ]
    );
}

/// `code` (of the module at `path`, e.g. `["commands", "prepare"]`; `is_mod_rs` when its
/// file is a mod.rs or lib.rs, whose `super` is one level higher) with `super::` and
/// `self::` paths written as `crate::` paths.
fn absolute_paths(code: &str, path: &[String]) -> String {
    let mut out = String::with_capacity(code.len());
    let mut rest = code;
    while let Some(at) = rest.find('s') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let before = out.chars().last();
        let word_start = !before.is_some_and(|c| c.is_alphanumeric() || c == '_');
        let mut up = 0;
        let mut tail = rest;
        if word_start {
            while let Some(t) = tail.strip_prefix("super::") {
                up += 1;
                tail = t;
            }
        }
        if up > 0 && up <= path.len() {
            let base = &path[..path.len() - up];
            out.push_str("crate::");
            for p in base {
                out.push_str(p);
                out.push_str("::");
            }
            rest = tail;
        } else if word_start && rest.starts_with("self::") {
            out.push_str("crate::");
            for p in path {
                out.push_str(p);
                out.push_str("::");
            }
            rest = &rest["self::".len()..];
        } else {
            out.push('s');
            rest = &rest[1..];
        }
    }
    out.push_str(rest);
    out
}

/// The import graph between the crate's files (modules by their path, `a::b`), test
/// code left out; an import of a module's ancestor or descendant is not an edge (a
/// parent declares and re-exports its children, children use what it holds).
fn file_graph(src: &Path) -> Graph {
    let lib = src.join("lib.rs");
    let mut graph = Graph::new();
    let mut modules: Vec<(PathBuf, Vec<String>)> = Vec::new();
    let mut queue: VecDeque<(PathBuf, Vec<String>)> = VecDeque::from([(lib.clone(), Vec::new())]);
    while let Some((file, path)) = queue.pop_front() {
        let text = std::fs::read_to_string(&file).expect("a module's file");
        let (code, test_mods) = blank_test_items(&blank_non_code(&text));
        for child in declared_mods(&code) {
            if test_mods.contains(&child) {
                continue;
            }
            if let Some(f) = module_file(&file, &child) {
                let mut p = path.clone();
                p.push(child);
                queue.push_back((f, p));
            }
        }
        modules.push((file, path));
    }
    let known: BTreeSet<String> = modules.iter().map(|(_, p)| p.join("::")).collect();
    for (file, path) in &modules {
        if path.is_empty() {
            continue;
        }
        let text = std::fs::read_to_string(file).expect("a module's file");
        let (code, _) = blank_test_items(&blank_non_code(&text));
        let me = path.join("::");
        let shown = file
            .strip_prefix(src.parent().unwrap_or(src))
            .unwrap_or(file)
            .display()
            .to_string();
        for (line, import) in crate_paths(&absolute_paths(&code, path)) {
            // The longest known module the path names.
            let names: Vec<&str> = import.trim_start_matches("crate::").split("::").collect();
            let target = (1..=names.len())
                .rev()
                .map(|n| names[..n].join("::"))
                .find(|m| known.contains(m));
            let Some(target) = target else { continue };
            let related = target == me
                || target.starts_with(&format!("{me}::"))
                || me.starts_with(&format!("{target}::"));
            if related {
                continue;
            }
            graph
                .entry(me.clone())
                .or_default()
                .entry(target)
                .or_insert(Seen {
                    file: shown.clone(),
                    line,
                    path: import,
                });
        }
    }
    graph
}

#[test]
fn no_two_files_import_each_other_in_a_loop() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = file_graph(&src);
    assert!(
        graph
            .get("commands::prepare")
            .is_some_and(|m| m.contains_key("commands::target")),
        "the scan sees sibling imports through super:: (prepare uses target): {:?}",
        graph.get("commands::prepare")
    );
    let found: Vec<String> = cycles(&graph).iter().map(|c| describe(&graph, c)).collect();
    assert!(
        found.is_empty(),
        "import cycles between files (move what both need to one of them, or below both):\n{}",
        found.join("\n")
    );
}

#[test]
fn super_and_self_paths_are_read_as_crate_paths() {
    let path = vec!["ui".to_string(), "graphs".to_string(), "chart".to_string()];
    assert_eq!(
        absolute_paths("use super::series::{window, Series};", &path),
        "use crate::ui::graphs::series::{window, Series};"
    );
    assert_eq!(
        absolute_paths("use super::super::theme; self::x::y; is_super::z", &path),
        "use crate::ui::theme; crate::ui::graphs::chart::x::y; is_super::z"
    );
}
