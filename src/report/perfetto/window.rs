//! What a kept window really holds: the seconds between its first and last events, not
//! the seconds asked for, which a busy experiment's event cap cuts short.

use std::fmt;
use std::time::Duration;

use crate::trace::SchedEvent;

/// The span and size of a trace's kept window, against what was asked.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct KeptWindow {
    /// From the first kept event to the last.
    pub span_ns: u64,
    pub events: usize,
    /// The window asked for.
    pub asked: Duration,
    /// The event cap, when the window was cut short by it.
    pub capped_at: Option<usize>,
}

impl KeptWindow {
    /// The window of `events` (oldest first), kept with at most `cap` events.
    pub fn of(events: &[SchedEvent], asked: Duration, cap: usize) -> Self {
        let span_ns = match (events.first(), events.last()) {
            (Some(a), Some(b)) => b.t_ns.saturating_sub(a.t_ns),
            _ => 0,
        };
        KeptWindow {
            span_ns,
            events: events.len(),
            asked,
            // The tracer drops the oldest once it holds `cap`, so a full window was cut.
            capped_at: (events.len() >= cap).then_some(cap),
        }
    }
}

/// `last 4.8 s (1,048,576 events; 30 s asked, capped at 1,048,576 events)`.
impl fmt::Display for KeptWindow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "last {:.1} s ({} events",
            self.span_ns as f64 / 1e9,
            grouped(self.events as u64)
        )?;
        if let Some(cap) = self.capped_at {
            write!(
                f,
                "; {} s asked, capped at {} events",
                self.asked.as_secs_f64(),
                grouped(cap as u64)
            )?;
        }
        f.write_str(")")
    }
}

/// `1048576` as `1,048,576`.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::EventKind;

    fn ev(t_ns: u64) -> SchedEvent {
        SchedEvent {
            t_ns,
            cpu: 0,
            kind: EventKind::SwitchedIn { pid: 1 },
        }
    }

    #[test]
    fn a_window_says_what_it_holds_and_why_it_is_short() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1_048_576), "1,048,576");
        let asked = Duration::from_secs(30);
        let events: Vec<_> = (0..4)
            .map(|i| ev(1_000_000_000 + i * 1_600_000_000))
            .collect();
        let w = KeptWindow::of(&events, asked, 4);
        assert_eq!(
            w.to_string(),
            "last 4.8 s (4 events; 30 s asked, capped at 4 events)"
        );
        let w = KeptWindow::of(&events, asked, 5);
        assert_eq!(w.to_string(), "last 4.8 s (4 events)");
        assert_eq!(
            KeptWindow::of(&[], asked, 5).to_string(),
            "last 0.0 s (0 events)"
        );
    }
}
