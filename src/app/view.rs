//! Which tasks the table shows and in what order: a name filter and a sort column. The
//! selection stays a task (an index into the live tasks), whatever the order.

use std::cmp::Ordering;
use std::collections::HashMap;

use super::App;
use crate::columns::Column;
use crate::preset::Headline;

/// The table's order: by `column`, the other way round when `reverse`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sort {
    pub column: Column,
    pub reverse: bool,
}

impl Sort {
    /// Whether the biggest value is on top.
    pub fn descending(self) -> bool {
        self.column.descending() != self.reverse
    }
}

/// Where a row of the table sits in its process's tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Branch {
    /// A process's row (its main thread), or a task whose process has no row.
    Process,
    /// A thread under its process's row; `last` when no other of its threads follows.
    Thread { last: bool },
}

impl Branch {
    /// What the TASK column puts before the name: the tree's glyphs.
    pub fn glyph(self) -> &'static str {
        match self {
            Branch::Process => "",
            Branch::Thread { last: false } => "├─ ",
            Branch::Thread { last: true } => "└─ ",
        }
    }
}

/// What a task is sorted by in one column; tasks without a value go last either way.
#[derive(Clone, Debug, PartialEq)]
enum Key {
    Num(f64),
    Text(String),
    Missing,
}

/// `busy-2` before `busy-10`: runs of digits compare as numbers.
fn natural(a: &str, b: &str) -> Ordering {
    let (mut a, mut b) = (a.chars().peekable(), b.chars().peekable());
    loop {
        match (a.peek().copied(), b.peek().copied()) {
            (None, None) => return Ordering::Equal,
            (None, Some(_)) => return Ordering::Less,
            (Some(_), None) => return Ordering::Greater,
            (Some(x), Some(y)) if x.is_ascii_digit() && y.is_ascii_digit() => {
                let number = |it: &mut std::iter::Peekable<std::str::Chars>| {
                    let mut n: u64 = 0;
                    while let Some(d) = it.peek().and_then(|c| c.to_digit(10)) {
                        n = n.saturating_mul(10).saturating_add(d as u64);
                        it.next();
                    }
                    n
                };
                let (m, n) = (number(&mut a), number(&mut b));
                if m != n {
                    return m.cmp(&n);
                }
            }
            (Some(x), Some(y)) => {
                if x != y {
                    return x.cmp(&y);
                }
                a.next();
                b.next();
            }
        }
    }
}

fn compare(a: &Key, b: &Key, descending: bool) -> Ordering {
    let ord = match (a, b) {
        (Key::Missing, Key::Missing) => return Ordering::Equal,
        (Key::Missing, _) => return Ordering::Greater,
        (_, Key::Missing) => return Ordering::Less,
        (Key::Num(x), Key::Num(y)) => x.total_cmp(y),
        (Key::Text(x), Key::Text(y)) => natural(x, y),
        (Key::Num(_), Key::Text(_)) => Ordering::Less,
        (Key::Text(_), Key::Num(_)) => Ordering::Greater,
    };
    if descending {
        ord.reverse()
    } else {
        ord
    }
}

impl App {
    /// The table's columns for this preset, in table order.
    pub fn columns(&self) -> Vec<Column> {
        let fairness = self
            .preset
            .as_ref()
            .is_some_and(|p| p.headline == Headline::Fairness);
        Column::ALL
            .into_iter()
            .filter(|c| *c != Column::Ideal || fairness)
            .collect()
    }

    /// Whether task `i`'s own name contains the (lowercased) filter.
    fn name_matches(&self, i: usize, filter: &str) -> bool {
        self.live
            .tasks
            .get(i)
            .is_some_and(|t| filter.is_empty() || t.name.to_lowercase().contains(filter))
    }

    /// Whether task `i` is in the table: its name passes the filter (any case), or it
    /// is the row of a process one of whose threads does (a thread is never shown
    /// without it).
    pub fn passes_filter(&self, i: usize) -> bool {
        let filter = self.ui.filter.to_lowercase();
        if self.name_matches(i, &filter) {
            return true;
        }
        let Some(t) = self.live.tasks.get(i).filter(|t| t.tid == t.pid) else {
            return false;
        };
        self.live
            .tasks
            .iter()
            .enumerate()
            .any(|(k, o)| o.pid == t.pid && o.tid != o.pid && self.name_matches(k, &filter))
    }

    /// Whether each task is in the table (one pass, for the graphs' every frame).
    pub fn in_table(&self) -> Vec<bool> {
        let mut shown = vec![false; self.live.tasks.len()];
        for (i, _) in self.task_tree() {
            shown[i] = true;
        }
        shown
    }

    /// For each task, the row it is listed under: its process's main thread (tid ==
    /// pid), when that is a task of the experiment too and it is not that thread.
    fn tree_parents(&self) -> Vec<Option<usize>> {
        let tasks = &self.live.tasks;
        let mut heads: HashMap<i32, usize> = HashMap::new();
        for (i, t) in tasks.iter().enumerate() {
            if t.tid == t.pid {
                heads.entry(t.pid).or_insert(i);
            }
        }
        tasks
            .iter()
            .enumerate()
            .map(|(i, t)| heads.get(&t.pid).copied().filter(|&h| h != i))
            .collect()
    }

    /// The tasks the table shows, in its order, as a tree like htop's: each process's
    /// row, then its threads under it. The filter keeps a thread's process row; a sort
    /// orders the threads within their process, and the processes by their own row (by
    /// a rate: by their first row in that order). Ties and no sort: the preset's order.
    pub fn task_tree(&self) -> Vec<(usize, Branch)> {
        let filter = self.ui.filter.to_lowercase();
        let parents = self.tree_parents();
        let mut roots: Vec<usize> = Vec::new();
        let mut threads: HashMap<usize, Vec<usize>> = HashMap::new();
        for (i, parent) in parents.iter().enumerate() {
            match parent {
                Some(p) => {
                    if self.name_matches(i, &filter) {
                        threads.entry(*p).or_default().push(i);
                    }
                }
                None => roots.push(i),
            }
        }
        roots.retain(|r| self.name_matches(*r, &filter) || threads.contains_key(r));
        if let Some(sort) = self.ui.sort {
            let keys: HashMap<usize, Key> = roots
                .iter()
                .chain(threads.values().flatten())
                .map(|&i| (i, self.sort_key(sort.column, i)))
                .collect();
            let order = |a: &usize, b: &usize| {
                compare(&keys[a], &keys[b], sort.descending()).then(a.cmp(b))
            };
            for kids in threads.values_mut() {
                kids.sort_by(order);
            }
            // By a rate, a process goes where its busiest row would (a busy worker
            // thread lifts its idle main thread); by a name, an id or a setting, by its
            // own row.
            let by_rows = sort.column.descending();
            let first = |r: &usize| {
                threads
                    .get(r)
                    .and_then(|kids| kids.first())
                    .filter(|k| by_rows && order(k, r) == Ordering::Less)
                    .copied()
                    .unwrap_or(*r)
            };
            roots.sort_by(|a, b| order(&first(a), &first(b)).then(a.cmp(b)));
        }
        let mut out = Vec::with_capacity(parents.len());
        for r in roots {
            out.push((r, Branch::Process));
            let kids = threads.remove(&r).unwrap_or_default();
            let n = kids.len();
            out.extend(
                kids.into_iter()
                    .enumerate()
                    .map(|(k, i)| (i, Branch::Thread { last: k + 1 == n })),
            );
        }
        out
    }

    /// The tasks the table shows, in its order ([`App::task_tree`] without the tree).
    pub fn task_view(&self) -> Vec<usize> {
        self.task_tree().into_iter().map(|(i, _)| i).collect()
    }

    fn sort_key(&self, column: Column, i: usize) -> Key {
        let Some(t) = self.live.tasks.get(i) else {
            return Key::Missing;
        };
        let s = self.live.store.latest.get(i);
        let r = self
            .live
            .store
            .tasks
            .get(i)
            .and_then(|series| series.points.back());
        let num = |v: Option<f64>| v.map_or(Key::Missing, Key::Num);
        match column {
            Column::Task => Key::Text(t.name.clone()),
            Column::PidTid => Key::Num(t.pid as f64 * 1e7 + t.tid as f64),
            Column::Policy => s.and_then(|s| s.policy()).map_or(Key::Missing, |p| {
                Key::Text(crate::policy::policy_name(p).to_string())
            }),
            Column::Nice => num(s.and_then(|s| s.nice()).map(f64::from)),
            Column::Cpus => s
                .and_then(|s| s.cpus_allowed)
                .map_or(Key::Missing, |c| Key::Text(c.to_list())),
            Column::Now => num(r.and_then(|r| r.cpu).map(f64::from)),
            Column::Cpu => num(r.map(|r| r.cpu_share)),
            Column::Ideal => num(self.live.ideal.get(i).copied().flatten()),
            Column::Wait => num(r.and_then(|r| r.wait_share)),
            Column::Switches => num(r.map(|r| r.voluntary_per_s + r.involuntary_per_s)),
            Column::Migrations => num(r.and_then(|r| r.migrations_per_s)),
            Column::Progress => num(r.map(|r| r.progress_per_s)),
        }
    }

    /// Where the selected task is in the table's order.
    pub fn selected_row(&self, view: &[usize]) -> Option<usize> {
        view.iter().position(|&i| i == self.ui.selected_task)
    }

    /// The next sort column (none after the last); a new column starts in its natural
    /// direction.
    pub(super) fn next_sort(&mut self) {
        let columns = self.columns();
        let next = match self.ui.sort {
            None => columns.first().copied(),
            Some(s) => columns
                .iter()
                .position(|c| *c == s.column)
                .and_then(|p| columns.get(p + 1))
                .copied(),
        };
        self.ui.sort = next.map(|column| Sort {
            column,
            reverse: false,
        });
        self.say_sort();
    }

    /// Sort by `column`, or turn the order round when it already is.
    pub(super) fn sort_by(&mut self, column: Column) {
        self.ui.sort = Some(match self.ui.sort {
            Some(s) if s.column == column => Sort {
                column,
                reverse: !s.reverse,
            },
            _ => Sort {
                column,
                reverse: false,
            },
        });
        self.say_sort();
    }

    pub(super) fn reverse_sort(&mut self) {
        match &mut self.ui.sort {
            Some(s) => {
                s.reverse = !s.reverse;
                self.say_sort();
            }
            None => {
                let key = self.key_label(super::Command::Sort);
                self.complain(format!(
                    "the table is in the preset's order: {key} picks a column to sort by"
                ));
            }
        }
    }

    fn say_sort(&mut self) {
        match self.ui.sort {
            Some(s) => {
                let dir = if s.descending() {
                    "biggest first"
                } else {
                    "smallest first"
                };
                self.say(format!("tasks sorted by {} ({dir})", s.column.header()));
            }
            None => self.say("tasks in the preset's order"),
        }
    }

    /// After the filter changed: keep the selection on a task the table shows.
    pub(super) fn keep_selection_visible(&mut self) {
        if !self.passes_filter(self.ui.selected_task) {
            if let Some(&first) = self.task_view().first() {
                self.ui.selected_task = first;
            }
        }
    }

    /// Up/down in the table's order, wrapping at both ends.
    pub(super) fn move_task(&mut self, down: bool) {
        let view = self.task_view();
        let len = view.len();
        if len == 0 {
            return;
        }
        let next = match self.selected_row(&view) {
            None => 0,
            Some(p) if down => (p + 1) % len,
            Some(p) => (p + len - 1) % len,
        };
        self.ui.selected_task = view[next];
    }
}

#[cfg(test)]
mod tests {
    use super::natural;
    use std::cmp::Ordering;

    #[test]
    fn digits_compare_as_numbers() {
        assert_eq!(natural("busy-2", "busy-10"), Ordering::Less);
        assert_eq!(natural("busy-10", "busy-10"), Ordering::Equal);
        assert_eq!(natural("fair", "fifo"), Ordering::Less);
        assert_eq!(natural("hog", "hog-0"), Ordering::Less);
    }
}
