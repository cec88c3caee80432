//! The live workbench: a tokio loop that turns terminal input and controller news into
//! [`Action`]s, carries out the App's [`Effect`]s by messaging the controller, and draws.

pub mod controller;
mod export;
pub mod player;

use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossterm::event::{
    DisableMouseCapture, EnableMouseCapture, Event as TermEvent, EventStream, KeyEventKind,
    MouseButton, MouseEventKind,
};
use futures_util::StreamExt;

use crate::app::keys::KeyMap;
use crate::app::{Action, App, Effect};
use crate::knob::sys::SystemKnobs;
use crate::preset::Preset;
use crate::sampler::Interval;
use controller::OpenRecorder;

/// How the TUI starts.
pub struct TuiOptions {
    pub exe: PathBuf,
    pub interval: Duration,
    pub keymap: KeyMap,
    pub no_color: bool,
    pub open_recorder: OpenRecorder,
    /// Where `r` records to: a new file per recording in this directory.
    pub record_dir: PathBuf,
    /// Which sched_waking events `t`'s trace asks the kernel for.
    pub wakings: crate::trace::Wakings,
    /// What `L` offers.
    pub lessons: Vec<crate::lesson::Lesson>,
    /// The lesson to play from the start (`schedlab lesson NAME`).
    pub lesson: Option<crate::lesson::Lesson>,
}

/// NO_COLOR (https://no-color.org): any non-empty value turns colours off.
pub fn no_color_requested() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

/// Where the App's news comes from.
enum Source {
    Live {
        ctl: std::sync::mpsc::Sender<Effect>,
        events: tokio::sync::mpsc::UnboundedReceiver<Action>,
        handle: std::thread::JoinHandle<()>,
    },
    Replay(player::Player),
}

/// What woke the loop.
enum Wake {
    Input(Option<Action>),
    News(Option<Action>),
    Due,
    Tick,
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .context("starting the event loop")
}

/// Run the workbench on `preset` until the user quits. Every knob is restored and every
/// task gone when this returns, also after Ctrl-C, SIGTERM or SIGHUP.
pub fn run(preset: Preset, system: SystemKnobs, opts: TuiOptions) -> Result<Vec<String>> {
    runtime()?.block_on(async {
        crate::knob::task::request_elevation(crate::knob::task::Elevation::Realtime);
        crate::knob::task::elevate_if_requested(false);
        let (ev_tx, events) = tokio::sync::mpsc::unbounded_channel();
        // The one interval: the App steps it, every experiment's sampler follows it.
        let interval = Interval::new(opts.interval);
        let setup = controller::Setup {
            preset,
            exe: opts.exe.clone(),
            interval: interval.clone(),
            wakings: opts.wakings,
            sys: system,
            open_recorder: opts.open_recorder,
            record_dir: opts.record_dir.clone(),
        };
        let (ctl, handle) =
            controller::spawn(setup, ev_tx).context("starting the controller thread")?;
        let mut app = App::new(opts.keymap, interval, opts.no_color);
        let presets = crate::preset::list()
            .into_iter()
            .flatten()
            .map(|p| (p.name, p.summary))
            .collect();
        app.update(Action::Presets(presets));
        app.update(Action::Lessons(opts.lessons, opts.lesson));
        event_loop(
            app,
            Source::Live {
                ctl,
                events,
                handle,
            },
        )
        .await
    })
}

/// Open the workbench on a recording: same screens, knobs read-only.
pub fn replay(
    records: Vec<crate::lab::record::Record>,
    speed: f64,
    keymap: KeyMap,
    no_color: bool,
) -> Result<()> {
    runtime()?.block_on(async {
        let mut app = App::new(keymap, Duration::from_millis(100), no_color);
        app.replay = true;
        let player = player::Player::new(records, speed);
        event_loop(app, Source::Replay(player)).await.map(drop)
    })
}

async fn event_loop(mut app: App, mut source: Source) -> Result<Vec<String>> {
    let stop = crate::system::stop_on_signals().context("installing signal handlers")?;
    let mut terminal = ratatui::try_init().context("opening the terminal")?;
    let _ = crossterm::execute!(std::io::stdout(), EnableMouseCapture);
    let size = terminal.size().unwrap_or_default();
    app.update(Action::Resize(size.width, size.height));
    let mut input = EventStream::new();
    let mut pace = Pace::new();
    let mut restored = Vec::new();
    let mut quitting: Option<Instant> = None;
    let mut dirty = true;
    let mut trace = KeyTrace::from_env();
    loop {
        if dirty {
            let started = Instant::now();
            draw(&mut terminal, &mut app);
            pace.drawn(started.elapsed());
            dirty = false;
            trace.drawn();
        }
        let wake = tokio::select! {
            ev = input.next() => Wake::Input(input_action(ev)),
            news = next_news(&mut source) => news,
            _ = tokio::time::sleep_until(pace.next_tick()) => Wake::Tick,
        };
        let mut actions = Vec::new();
        match wake {
            Wake::Input(a) => actions.extend(a),
            Wake::News(Some(Action::Stopped(r))) => {
                restored = r;
                break;
            }
            Wake::News(Some(a)) => actions.push(a),
            Wake::News(None) => break,
            Wake::Due => {
                if let Source::Replay(p) = &mut source {
                    actions.extend(p.due());
                }
            }
            Wake::Tick => {
                pace.ticked();
                dirty = true;
            }
        }
        if stop.load(Ordering::Relaxed) && quitting.is_none() {
            app.quit = true;
            actions.clear();
            request(&source, Effect::Quit);
            quitting = Some(Instant::now());
        }
        if quitting.is_some_and(|t| t.elapsed() > Duration::from_secs(10))
            || (app.quit && matches!(source, Source::Replay(_)))
        {
            break;
        }
        for action in actions {
            let is_input = redraws_at_once(&action);
            if matches!(action, Action::Key(_)) {
                trace.key();
            }
            let effects = app.update(action);
            let mut runner = Runner {
                source: &mut source,
                quitting: &mut quitting,
            };
            runner.carry_out(&mut app, effects);
            dirty |= is_input;
        }
        if app.quit && matches!(source, Source::Replay(_)) {
            break;
        }
    }
    let _ = crossterm::execute!(std::io::stdout(), DisableMouseCapture);
    ratatui::restore();
    if let Source::Live { handle, .. } = source {
        let _ = handle.join();
    }
    Ok(restored)
}

/// Draw a frame and hand its geometry to the App: clicks and scrolls until the next
/// frame answer by what this one shows.
fn draw(terminal: &mut ratatui::DefaultTerminal, app: &mut App) {
    let mut drawn = None;
    let _ = terminal.draw(|f| drawn = Some(crate::ui::render(f, app)));
    if let Some(geometry) = drawn {
        app.drawn(geometry);
    }
}

/// How often new data is drawn: 10 times a second, less where a frame costs more than
/// [`Pace::BUDGET`] of a CPU at that rate (a 200x50 screen of 64 tasks' graphs takes
/// 1.5-2 ms a frame). Keys and their answers draw at once whatever the pace.
struct Pace {
    /// Drawing time per frame, smoothed.
    frame: Duration,
    last_tick: Instant,
}

impl Pace {
    /// The share of one CPU data redraws may take.
    const BUDGET: f64 = 0.01;
    const FASTEST: Duration = Duration::from_millis(100);
    const SLOWEST: Duration = Duration::from_millis(250);

    fn new() -> Pace {
        Pace {
            frame: Duration::ZERO,
            last_tick: Instant::now(),
        }
    }

    fn drawn(&mut self, took: Duration) {
        // A tenth of each new frame: a slow frame now and then (a page fault, a
        // preemption) does not slow the screen down.
        self.frame = (self.frame * 9 + took) / 10;
    }

    fn period(&self) -> Duration {
        self.frame
            .div_f64(Self::BUDGET)
            .clamp(Self::FASTEST, Self::SLOWEST)
    }

    fn next_tick(&self) -> tokio::time::Instant {
        tokio::time::Instant::from_std(self.last_tick + self.period())
    }

    fn ticked(&mut self) {
        self.last_tick = Instant::now();
    }
}

/// Input and the answers to keys redraw at once (a key shows its effect immediately);
/// data waits for the tick.
fn redraws_at_once(action: &Action) -> bool {
    matches!(
        action,
        Action::Key(_)
            | Action::Mouse(_)
            | Action::Resize(..)
            | Action::KnobResult { .. }
            | Action::Tracing(_)
            | Action::TraceExported(_)
    )
}

/// What a terminal event asks of the App: a key, a click or the wheel, a resize.
fn input_action(ev: Option<std::io::Result<TermEvent>>) -> Option<Action> {
    match ev {
        Some(Ok(TermEvent::Key(k))) if k.kind != KeyEventKind::Release => Some(Action::Key(k)),
        Some(Ok(TermEvent::Mouse(m)))
            if matches!(
                m.kind,
                MouseEventKind::Down(MouseButton::Left)
                    | MouseEventKind::ScrollUp
                    | MouseEventKind::ScrollDown
            ) =>
        {
            Some(Action::Mouse(m))
        }
        Some(Ok(TermEvent::Resize(w, h))) => Some(Action::Resize(w, h)),
        _ => None,
    }
}

/// `SCHEDLAB_TRACE=FILE`: append how long each key took from arrival to a drawn screen
/// (the end-to-end test's latency check).
struct KeyTrace {
    file: Option<std::fs::File>,
    key_at: Option<Instant>,
}

impl KeyTrace {
    fn from_env() -> KeyTrace {
        let file = std::env::var_os("SCHEDLAB_TRACE").and_then(|p| {
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .ok()
        });
        KeyTrace { file, key_at: None }
    }

    fn key(&mut self) {
        self.key_at = Some(Instant::now());
    }

    fn drawn(&mut self) {
        if let (Some(t), Some(f)) = (self.key_at.take(), self.file.as_mut()) {
            use std::io::Write as _;
            let _ = writeln!(f, "key_to_draw_us {}", t.elapsed().as_micros());
        }
    }
}

/// Carries out the App's effects: on the controller when live, on the player in a replay.
struct Runner<'a> {
    source: &'a mut Source,
    quitting: &'a mut Option<Instant>,
}

impl Runner<'_> {
    fn carry_out(&mut self, app: &mut App, effects: Vec<Effect>) {
        let mut effects: std::collections::VecDeque<Effect> = effects.into();
        while let Some(effect) = effects.pop_front() {
            match (&mut *self.source, effect) {
                (Source::Replay(p), Effect::Pause(paused)) => p.pause(paused),
                (Source::Replay(p), Effect::Step(n)) => feed(app, p.step(n), &mut effects),
                (Source::Replay(p), Effect::Seek(s)) => feed(app, p.seek(s), &mut effects),
                (Source::Replay(_), Effect::Quit) => app.quit = true,
                (Source::Replay(_), Effect::ListProcesses) => {
                    feed(
                        app,
                        vec![Action::Error("a replay cannot attach to processes".into())],
                        &mut effects,
                    );
                }
                // Reading /proc is the outside world's job, not the App's.
                (Source::Live { .. }, Effect::ListProcesses) => feed(
                    app,
                    vec![Action::Processes(crate::workload::attach::process_tree())],
                    &mut effects,
                ),
                (Source::Replay(_), _) => {}
                (Source::Live { ctl, .. }, effect) => {
                    if matches!(effect, Effect::Quit) {
                        self.quitting.get_or_insert_with(Instant::now);
                    }
                    let _ = ctl.send(effect);
                }
            }
        }
    }
}

/// The next news from the controller, or the next due record of a replay.
async fn next_news(source: &mut Source) -> Wake {
    match source {
        Source::Live { events, .. } => Wake::News(events.recv().await),
        Source::Replay(p) => match p.next_due_in() {
            Some(d) => {
                tokio::time::sleep(d).await;
                Wake::Due
            }
            None => std::future::pending().await,
        },
    }
}

fn request(source: &Source, r: Effect) {
    if let Source::Live { ctl, .. } = source {
        let _ = ctl.send(r);
    }
}

/// Feed replayed actions to the App (their effects join the queue).
fn feed(app: &mut App, actions: Vec<Action>, effects: &mut std::collections::VecDeque<Effect>) {
    for a in actions {
        effects.extend(app.update(a));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn data_redraws_slow_down_only_as_far_as_the_budget_needs() {
        let mut pace = Pace::new();
        assert_eq!(pace.period(), Pace::FASTEST, "nothing drawn yet");
        // 80x24 with 64 tasks draws in about 0.6 ms: 10 frames a second is 0.6 %.
        pace.frame = Duration::from_micros(600);
        assert_eq!(pace.period(), Pace::FASTEST);
        // 200x50 takes about 1.5 ms: 1 % of a CPU allows a frame every 150 ms.
        pace.frame = Duration::from_micros(1500);
        assert_eq!(pace.period(), Duration::from_millis(150));
        pace.frame = Duration::from_millis(20);
        assert_eq!(pace.period(), Pace::SLOWEST, "never slower than 4 a second");
        // One slow frame moves the average by a tenth of the difference.
        let mut pace = Pace::new();
        pace.frame = Duration::from_millis(1);
        pace.drawn(Duration::from_millis(11));
        assert_eq!(pace.frame, Duration::from_millis(2));
    }
}
