//! Replaying a recording: feeds recorded records to the App at their recorded pace, with
//! play/pause, step and seek. Seeking back rebuilds the state from the last start.

use std::time::{Duration, Instant};

use crate::app::Action;
use crate::error::KnobError;
use crate::lab::record::Record;

pub struct Player {
    records: Vec<Record>,
    /// Next record to feed.
    pos: usize,
    playing: bool,
    speed: f64,
    /// Recorded time at `since`.
    at_ns: u64,
    since: Instant,
}

fn to_action(r: &Record) -> Action {
    match r {
        Record::Started { info, .. } => Action::Started(info.clone()),
        Record::Batch { batch, .. } => Action::Batch(batch.clone()),
        Record::Knob {
            setting,
            ok,
            result,
            ..
        } => Action::KnobResult {
            setting: setting.clone(),
            result: if *ok {
                Ok(result.clone())
            } else {
                // A recording keeps the message, not the kind of refusal.
                Err(KnobError::Refused(result.clone()))
            },
        },
        Record::SystemKnobs { knobs, .. } => Action::SystemKnobs(knobs.clone()),
    }
}

impl Player {
    pub fn new(records: Vec<Record>, speed: f64) -> Player {
        let at_ns = records.first().map_or(0, Record::t_ns);
        Player {
            records,
            pos: 0,
            playing: true,
            speed: speed.clamp(0.05, 100.0),
            at_ns,
            since: Instant::now(),
        }
    }

    /// Recorded time now.
    fn now_ns(&self) -> u64 {
        if self.playing {
            self.at_ns + (self.since.elapsed().as_nanos() as f64 * self.speed) as u64
        } else {
            self.at_ns
        }
    }

    pub fn finished(&self) -> bool {
        self.pos >= self.records.len()
    }

    /// How long until the next record is due (None when paused or at the end).
    pub fn next_due_in(&self) -> Option<Duration> {
        if !self.playing {
            return None;
        }
        let next = self.records.get(self.pos)?.t_ns();
        let wait = next.saturating_sub(self.now_ns()) as f64 / self.speed;
        Some(Duration::from_nanos(wait as u64))
    }

    /// Every record due by now.
    pub fn due(&mut self) -> Vec<Action> {
        let now = self.now_ns();
        let mut out = Vec::new();
        while let Some(r) = self.records.get(self.pos).filter(|r| r.t_ns() <= now) {
            out.push(to_action(r));
            self.pos += 1;
        }
        out
    }

    pub fn pause(&mut self, paused: bool) {
        self.at_ns = self.now_ns();
        self.since = Instant::now();
        self.playing = !paused;
    }

    /// Go to recorded time `t_ns`: everything from the last start before it, fed at once.
    fn goto(&mut self, t_ns: u64) -> Vec<Action> {
        let end = self
            .records
            .iter()
            .position(|r| r.t_ns() > t_ns)
            .unwrap_or(self.records.len());
        let start = self.records[..end]
            .iter()
            .rposition(|r| matches!(r, Record::Started { .. }))
            .unwrap_or(0);
        let forward = start < self.pos && end >= self.pos;
        let from = if forward { self.pos } else { start };
        // System knob lists before the start still describe the machine.
        let mut out: Vec<Action> = Vec::new();
        if !forward {
            if let Some(k) = self.records[..start]
                .iter()
                .rev()
                .find(|r| matches!(r, Record::SystemKnobs { .. }))
            {
                out.push(to_action(k));
            }
        }
        out.extend(self.records[from..end].iter().map(to_action));
        self.pos = end;
        self.at_ns = t_ns;
        self.since = Instant::now();
        out
    }

    /// Move by `seconds` of recorded time.
    pub fn seek(&mut self, seconds: f64) -> Vec<Action> {
        let now = self.now_ns() as i128;
        let first = self.records.first().map_or(0, Record::t_ns) as i128;
        let last = self.records.last().map_or(0, Record::t_ns) as i128;
        let target = (now + (seconds * 1e9) as i128).clamp(first, last);
        self.goto(target as u64)
    }

    /// Move by `n` samples (batches).
    pub fn step(&mut self, n: i32) -> Vec<Action> {
        let batches: Vec<u64> = self
            .records
            .iter()
            .filter(|r| matches!(r, Record::Batch { .. }))
            .map(Record::t_ns)
            .collect();
        let now = self.now_ns();
        let current = batches.iter().rposition(|t| *t <= now);
        let target = match (current, n >= 0) {
            (None, true) => batches.first().copied(),
            (None, false) => None,
            (Some(i), _) => batches
                .get((i as i64 + n as i64).clamp(0, batches.len() as i64 - 1) as usize)
                .copied(),
        };
        match target {
            Some(t) => self.goto(t),
            None => Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::fixtures::{batch, started};

    fn recording() -> Vec<Record> {
        let mut r = vec![Record::Started {
            t_ns: 1_000_000_000,
            info: Box::new(started()),
        }];
        for t in 0..10 {
            let b = batch(t);
            r.push(Record::Batch {
                t_ns: b.t_ns,
                batch: Box::new(b),
            });
        }
        r.push(Record::Knob {
            t_ns: 5_500_000_000,
            setting: "fair.policy=batch".into(),
            ok: true,
            result: "ok".into(),
        });
        r.sort_by_key(Record::t_ns);
        r
    }

    fn batches(actions: &[Action]) -> usize {
        actions
            .iter()
            .filter(|a| matches!(a, Action::Batch(_)))
            .count()
    }

    #[test]
    fn paused_player_steps_and_seeks() {
        let mut p = Player::new(recording(), 1.0);
        p.pause(true);
        let first = p.due();
        assert_eq!(
            first.len(),
            2,
            "the start and the first sample are due at once"
        );
        assert!(p.next_due_in().is_none(), "paused");
        assert_eq!(batches(&p.step(1)), 1);
        assert_eq!(batches(&p.step(1)), 1);
        // Back one sample: rebuilt from the start, two samples in.
        let back = p.step(-1);
        assert!(matches!(back[0], Action::Started(_)));
        assert_eq!(batches(&back), 2);
        let fwd = p.seek(10.0);
        assert_eq!(batches(&fwd), 8, "to the end");
        assert!(fwd.iter().any(|a| matches!(a, Action::KnobResult { .. })));
        assert!(p.finished());
        let back = p.seek(-100.0);
        assert_eq!(batches(&back), 1, "clamped to the beginning");
    }

    #[test]
    fn playing_feeds_records_at_their_pace() {
        let mut p = Player::new(recording(), 100.0);
        let start = Instant::now();
        let mut fed = 0;
        while !p.finished() && start.elapsed() < Duration::from_secs(2) {
            std::thread::sleep(
                p.next_due_in()
                    .unwrap_or_default()
                    .min(Duration::from_millis(50)),
            );
            fed += p.due().len();
        }
        assert_eq!(fed, 12);
    }
}
