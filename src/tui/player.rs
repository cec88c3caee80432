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

/// How long `recorded_ns` of a recording take to play at `speed`.
fn wall_time(recorded_ns: u64, speed: f64) -> Duration {
    Duration::from_nanos((recorded_ns as f64 / speed) as u64)
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
        self.recorded_at(Instant::now())
    }

    /// Recorded time at the instant `now`: the playing clock runs `speed` times as
    /// fast as the wall clock from `since`.
    fn recorded_at(&self, now: Instant) -> u64 {
        if self.playing {
            let wall = now.saturating_duration_since(self.since).as_nanos() as f64;
            self.at_ns + (wall * self.speed) as u64
        } else {
            self.at_ns
        }
    }

    pub fn finished(&self) -> bool {
        self.pos >= self.records.len()
    }

    /// How long until the next record is due (None when paused or at the end).
    pub fn next_due_in(&self) -> Option<Duration> {
        self.next_due_at(Instant::now())
    }

    fn next_due_at(&self, now: Instant) -> Option<Duration> {
        if !self.playing {
            return None;
        }
        let next = self.records.get(self.pos)?.t_ns();
        Some(wall_time(
            next.saturating_sub(self.recorded_at(now)),
            self.speed,
        ))
    }

    /// Every record due by now.
    pub fn due(&mut self) -> Vec<Action> {
        self.due_at(Instant::now())
    }

    fn due_at(&mut self, now: Instant) -> Vec<Action> {
        let now = self.recorded_at(now);
        let mut out = Vec::new();
        while let Some(r) = self.records.get(self.pos).filter(|r| r.t_ns() <= now) {
            out.push(to_action(r));
            self.pos += 1;
        }
        out
    }

    pub fn pause(&mut self, paused: bool) {
        self.pause_at(paused, Instant::now());
    }

    fn pause_at(&mut self, paused: bool, now: Instant) {
        self.at_ns = self.recorded_at(now);
        self.since = now;
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

    /// What the actions are, in order: "start", "batch 3" (by recorded second), "knob".
    fn kinds(actions: &[Action]) -> Vec<String> {
        actions
            .iter()
            .map(|a| match a {
                Action::Started(_) => "start".to_string(),
                Action::Batch(b) => format!("batch {}", b.t_ns / 1_000_000_000 - 1),
                Action::KnobResult { .. } => "knob".to_string(),
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn recorded_time_plays_at_speed() {
        let secs = |s: u64| s * 1_000_000_000;
        // At --speed 2, records 0, 1 and 2 s into a recording are due 0, 0.5 and 1 s in.
        let due: Vec<Duration> = [0, 1, 2].iter().map(|&t| wall_time(secs(t), 2.0)).collect();
        assert_eq!(due, [0, 500, 1000].map(Duration::from_millis).to_vec());
        assert_eq!(wall_time(secs(1), 0.5), Duration::from_secs(2));
        assert_eq!(wall_time(secs(3), 1.0), Duration::from_secs(3));
    }

    #[test]
    fn playing_feeds_each_record_when_its_time_comes_at_the_speed_asked() {
        // Records (recorded seconds from the first): the start and batch 0 at 0, batch
        // t at t, the knob change at 4.5. At speed 2 each is due at half its time. The
        // times used are exact in binary, so no rounding moves a record across one.
        let mut p = Player::new(recording(), 2.0);
        let t0 = p.since;
        let at = |s: f64| t0 + Duration::from_secs_f64(s);
        assert_eq!(kinds(&p.due_at(t0)), ["start", "batch 0"]);
        assert_eq!(p.next_due_at(t0), Some(Duration::from_millis(500)));
        assert!(p.due_at(at(0.499)).is_empty(), "batch 1 is due at 0.5 s");
        assert_eq!(kinds(&p.due_at(at(0.5))), ["batch 1"]);
        assert_eq!(p.next_due_at(at(0.5)), Some(Duration::from_millis(500)));
        assert_eq!(p.next_due_at(at(0.75)), Some(Duration::from_millis(250)));
        assert_eq!(kinds(&p.due_at(at(1.0))), ["batch 2"]);
        // Late: everything due by then at once, in recorded order (knob at 2.25 s).
        assert_eq!(kinds(&p.due_at(at(2.25))), ["batch 3", "batch 4", "knob"]);
        // Paused at 2.75 s (recorded 6.5 s): the recorded clock stops.
        p.pause_at(true, at(2.75));
        assert_eq!(kinds(&p.due_at(at(2.75))), ["batch 5"]);
        assert!(p.due_at(at(100.0)).is_empty(), "paused");
        assert_eq!(p.next_due_at(at(100.0)), None);
        // Resumed at 100 s: batch 6 (recorded 7 s) is 0.5 recorded s = 0.25 s away.
        p.pause_at(false, at(100.0));
        assert_eq!(p.next_due_at(at(100.0)), Some(Duration::from_millis(250)));
        assert!(p.due_at(at(100.24)).is_empty());
        assert_eq!(kinds(&p.due_at(at(100.25))), ["batch 6"]);
        assert_eq!(
            kinds(&p.due_at(at(102.0))),
            ["batch 7", "batch 8", "batch 9"]
        );
        assert!(p.finished());
        assert_eq!(p.next_due_at(at(102.0)), None, "at the end");
    }

    #[test]
    fn speed_is_kept_between_a_twentieth_and_a_hundredfold() {
        let first_gap = |speed: f64| {
            let mut p = Player::new(recording(), speed);
            let t0 = p.since;
            p.due_at(t0);
            p.next_due_at(t0)
        };
        // Batch 1 is 1 recorded second after the start.
        assert_eq!(first_gap(100.0), Some(Duration::from_millis(10)));
        assert_eq!(first_gap(1000.0), first_gap(100.0));
        assert_eq!(first_gap(1.0), Some(Duration::from_secs(1)));
        assert_eq!(first_gap(0.0), first_gap(0.05));
        assert!(
            first_gap(0.05) > Some(Duration::from_secs(19)),
            "about 20 s"
        );
    }
}
