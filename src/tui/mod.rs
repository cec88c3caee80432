//! The live workbench: a tokio loop that turns terminal input and controller news into
//! [`Action`]s, carries out the App's [`Effect`]s by messaging the controller, and draws.

pub mod controller;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use crossterm::event::{
    DisableMouseCapture, EnableMouseCapture, Event as TermEvent, EventStream, KeyEventKind,
    MouseButton, MouseEventKind,
};
use futures_util::StreamExt;

use crate::app::keys::KeyMap;
use crate::app::{Action, App, Effect};
use crate::preset::Preset;
use crate::session::SystemKnobs;
use controller::{Event, OpenRecorder, Request};

/// How the TUI starts.
pub struct TuiOptions {
    pub exe: PathBuf,
    pub interval: Duration,
    pub keymap: KeyMap,
    pub no_color: bool,
    pub open_recorder: OpenRecorder,
    /// Where `r` records to: a new file per recording in this directory.
    pub record_dir: PathBuf,
}

/// NO_COLOR (https://no-color.org): any non-empty value turns colours off.
pub fn no_color_requested() -> bool {
    std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty())
}

fn to_action(e: Event) -> Option<Action> {
    Some(match e {
        Event::Started(s) => Action::Started(s),
        Event::Batch(b) => Action::Batch(b),
        Event::KnobResult { setting, result } => Action::KnobResult { setting, result },
        Event::SystemKnobs(k) => Action::SystemKnobs(k),
        Event::Recording(r) => Action::Recording(r),
        Event::Error(e) => Action::Error(e),
        Event::Stopped(_) => return None,
    })
}

/// Run the workbench on `preset` until the user quits. Every knob is restored and every
/// task gone when this returns, also after Ctrl-C, SIGTERM or SIGHUP.
pub fn run(preset: Preset, system: SystemKnobs, opts: TuiOptions) -> Result<Vec<String>> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .context("starting the event loop")?;
    rt.block_on(event_loop(preset, system, opts))
}

async fn event_loop(preset: Preset, system: SystemKnobs, opts: TuiOptions) -> Result<Vec<String>> {
    crate::system::request_elevation();
    crate::system::elevate_if_requested(false);
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing signal handlers")?;
    }
    let (ev_tx, mut ev_rx) = tokio::sync::mpsc::unbounded_channel();
    let (ctl, handle) = controller::spawn(
        preset,
        opts.exe.clone(),
        opts.interval,
        system,
        opts.open_recorder,
        ev_tx,
    )
    .context("starting the controller thread")?;
    let mut app = App::new(opts.keymap, opts.interval, opts.no_color);
    let presets = crate::preset::list()
        .into_iter()
        .flatten()
        .map(|p| (p.name, p.summary))
        .collect();
    app.update(Action::Presets(presets));

    let mut terminal = ratatui::try_init().context("opening the terminal")?;
    let _ = crossterm::execute!(std::io::stdout(), EnableMouseCapture);
    let size = terminal.size().unwrap_or_default();
    app.update(Action::Resize(size.width, size.height));
    let mut input = EventStream::new();
    let mut tick = tokio::time::interval(Duration::from_millis(100));
    let mut restored = Vec::new();
    let mut quitting: Option<Instant> = None;
    let mut dirty = true;
    // SCHEDLAB_TRACE=FILE: append how long each key took from arrival to a drawn screen.
    let mut trace = std::env::var_os("SCHEDLAB_TRACE").and_then(|p| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .ok()
    });
    let mut input_at: Option<Instant> = None;
    loop {
        if dirty {
            let _ = terminal.draw(|f| crate::ui::render(f, &app));
            dirty = false;
            if let (Some(t), Some(f)) = (input_at.take(), trace.as_mut()) {
                use std::io::Write as _;
                let _ = writeln!(f, "key_to_draw_us {}", t.elapsed().as_micros());
            }
        }
        let action = tokio::select! {
            ev = input.next() => match ev {
                Some(Ok(TermEvent::Key(k))) if k.kind != KeyEventKind::Release => Some(Action::Key(k)),
                Some(Ok(TermEvent::Mouse(m))) if m.kind == MouseEventKind::Down(MouseButton::Left) => {
                    let area = ratatui::layout::Rect::new(0, 0, app.ui.size.0, app.ui.size.1);
                    crate::ui::task_at(&crate::ui::layout(area, &app), &app, m.row).map(Action::ClickTask)
                }
                Some(Ok(TermEvent::Resize(w, h))) => Some(Action::Resize(w, h)),
                _ => None,
            },
            news = ev_rx.recv() => match news {
                Some(Event::Stopped(r)) => {
                    restored = r;
                    break;
                }
                Some(e) => to_action(e),
                None => break,
            },
            _ = tick.tick() => {
                dirty = true;
                None
            }
        };
        if stop.load(Ordering::Relaxed) && quitting.is_none() {
            app.quit = true;
            let _ = ctl.send(Request::Quit);
            quitting = Some(Instant::now());
        }
        if quitting.is_some_and(|t| t.elapsed() > Duration::from_secs(10)) {
            break;
        }
        let Some(action) = action else { continue };
        // Input redraws at once (a key shows its effect immediately); data waits for the tick.
        let is_input = matches!(
            action,
            Action::Key(_) | Action::ClickTask(_) | Action::Resize(..) | Action::KnobResult { .. }
        );
        if matches!(action, Action::Key(_)) {
            input_at = Some(Instant::now());
        }
        for effect in app.update(action) {
            let request = match effect {
                Effect::Apply(s) => Request::Apply(s),
                Effect::SetInterval(d) => Request::SetInterval(d),
                Effect::Pause(p) => Request::Pause(p),
                Effect::Restart(p) => Request::Restart(p),
                Effect::ToggleRecord => Request::Record(match app.recording {
                    Some(_) => None,
                    None => Some(
                        opts.record_dir
                            .join(format!("schedlab-{}.jsonl", chrono_stamp())),
                    ),
                }),
                Effect::Quit => {
                    quitting.get_or_insert_with(Instant::now);
                    Request::Quit
                }
            };
            let _ = ctl.send(request);
        }
        dirty |= is_input;
    }
    let _ = crossterm::execute!(std::io::stdout(), DisableMouseCapture);
    ratatui::restore();
    let _ = handle.join();
    Ok(restored)
}

/// Seconds since the epoch, for recording file names.
fn chrono_stamp() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
