//! The real binary in tmux, driven like a person would: keys in, screen and /proc out.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::tmux::Tmux;
use common::PATIENCE;

/// The experiment's clock as the header shows it (`t=14.8s`), in seconds.
fn shown_clock(screen: &str) -> Option<f64> {
    let rest = &screen[screen.find(" t=")? + 3..];
    let end = rest.find('s')?;
    rest[..end].parse().ok()
}

impl Tmux {
    /// Wait until the header's clock reads at least `t` seconds: samples up to then
    /// have been drawn.
    fn wait_for_clock(&self, t: f64) {
        let shown = common::wait_until(PATIENCE, || {
            shown_clock(&self.screen()).is_some_and(|c| c >= t)
        });
        assert!(shown, "the clock never reached {t} s:\n{}", self.screen());
    }

    fn clock(&self) -> f64 {
        shown_clock(&self.screen()).unwrap_or(0.0)
    }

    /// The longest time between two new clocks on the screen, over `n` new clocks.
    fn frame_gap(&self, n: usize) -> Duration {
        let mut last = (self.clock(), Instant::now());
        let mut gap = Duration::ZERO;
        let mut seen = 0;
        let watched = common::wait_until(PATIENCE, || {
            let c = self.clock();
            if c != last.0 {
                gap = gap.max(last.1.elapsed());
                last = (c, Instant::now());
                seen += 1;
            }
            seen > n
        });
        assert!(watched, "the clock stopped:\n{}", self.screen());
        gap
    }
}

/// How many tasks were runnable (/proc/stat procs_running), sampled every 20 ms on a
/// thread until `finish`: (mean, max).
struct FairLoad {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    handle: std::thread::JoinHandle<Vec<u32>>,
}

impl FairLoad {
    fn start() -> FairLoad {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::spawn(move || {
            let mut seen = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(60);
            while !flag.load(std::sync::atomic::Ordering::Relaxed) && Instant::now() < deadline {
                let stat = std::fs::read_to_string("/proc/stat").unwrap_or_default();
                if let Some(n) = stat
                    .lines()
                    .find_map(|l| l.strip_prefix("procs_running "))
                    .and_then(|v| v.trim().parse().ok())
                {
                    seen.push(n);
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            seen
        });
        FairLoad { stop, handle }
    }

    fn finish(self) -> (f64, u32) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let seen = self.handle.join().unwrap_or_default();
        let mean = seen.iter().map(|&n| f64::from(n)).sum::<f64>() / seen.len().max(1) as f64;
        (mean, seen.iter().copied().max().unwrap_or(0))
    }
}

/// sched_rt_runtime_us and sched_rt_period_us; panics when RT throttling is off (-1).
fn rt_bandwidth() -> (u64, u64) {
    let read = |name: &str| -> i64 {
        std::fs::read_to_string(format!("/proc/sys/kernel/{name}"))
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .unwrap_or_else(|| panic!("/proc/sys/kernel/{name} is not a number"))
    };
    let (runtime, period) = (read("sched_rt_runtime_us"), read("sched_rt_period_us"));
    assert!(
        runtime >= 0 && period > 0,
        "RT throttling is off ({runtime}/{period}): no FIFO spinner on every CPU without it"
    );
    (runtime as u64, period as u64)
}

/// The words of a task table row, without the tree's glyphs before a thread's name.
fn row_words(line: &str) -> Vec<&str> {
    line.split_whitespace()
        .skip_while(|w| w.starts_with(['├', '└']))
        .collect()
}

/// (pid, tid) of a task from its row in the task table.
fn ids(screen: &str, task: &str) -> Option<(i32, i32)> {
    let line = screen
        .lines()
        .find(|l| row_words(l).first() == Some(&task))?;
    let (pid, tid) = row_words(line).get(1)?.split_once('/')?;
    Some((pid.parse().ok()?, tid.parse().ok()?))
}

fn policy_of(pid: i32, tid: i32) -> Option<String> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/sched")).ok()?;
    text.lines()
        .find(|l| l.starts_with("policy"))
        .and_then(|l| l.split(':').nth(1))
        .map(|v| v.trim().to_string())
}

#[test]
fn changing_a_policy_from_the_keyboard_reaches_the_kernel_and_quit_cleans_up() {
    let _guard = common::serial();
    let rt_runtime = || {
        std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us")
            .unwrap_or_default()
            .trim()
            .to_string()
    };
    let rt_before = rt_runtime();
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(t) = Tmux::start(&["tui", "rt-throttle"], &dir.path().join("j")) else {
        return;
    };
    t.shows("rt-throttle running");
    t.shows("fifo/1");
    let (pid, tid) = ids(&t.screen(), "fair").expect("fair row");
    assert_eq!(policy_of(pid, tid).as_deref(), Some("0"));
    // Select the fair thread, open the policy picker, choose batch.
    t.keys(&["Down", "p", "Down", "Enter"]);
    t.shows("fair.policy=batch: applied");
    assert_eq!(
        policy_of(pid, tid).as_deref(),
        Some("3"),
        "the kernel has it"
    );
    // The table shows what the kernel reports, from the next sample on.
    let row_shows_batch = common::wait_until(PATIENCE, || {
        t.screen()
            .lines()
            .any(|l| row_words(l).first() == Some(&"fair") && l.contains("batch"))
    });
    assert!(row_shows_batch, "{}", t.screen());
    assert!(
        t.screen().contains("fair.policy -> batch"),
        "the change is marked on the graphs"
    );
    // A refusal is explained, not hidden.
    t.keys(&[":"]);
    t.keys(&["fair.nice=99", "Enter"]);
    t.shows("allowed -20..19");
    t.quit();
    assert!(
        common::wait_until(PATIENCE, || !common::alive(pid)),
        "workers gone"
    );
    assert_eq!(rt_runtime(), rt_before, "the RT budget as it was");
}

#[test]
fn stays_responsive_with_fifo_spinners_on_every_cpu() {
    let _guard = common::serial();
    if !common::require("root (SCHED_FIFO spinners)", common::is_root()) {
        return;
    }
    // tmux and this test's own polling must not be starved either, or the measurement is
    // theirs: run this thread (and the tmux processes it starts) at FIFO 99 too.
    struct Demote;
    impl Drop for Demote {
        fn drop(&mut self) {
            let me = nix::unistd::gettid().as_raw();
            let _ = schedlab::knob::task::set_policy(
                me,
                &schedlab::knob::task::SchedSettings::default(),
            );
        }
    }
    // The bounds below come from RT throttling; without it the spinners would hold the
    // CPUs for good.
    let (runtime_us, period_us) = rt_bandwidth();
    schedlab::knob::task::set_own_realtime(99, false).expect("FIFO 99 for the test thread");
    let _demote = Demote;
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("trace");
    let Some(t) = start_fifo_spinners_on_every_cpu(dir.path(), &trace) else {
        return;
    };
    t.shows("nice-ladder running");
    assert!(
        t.wait_for("fifo/1", PATIENCE).is_some(),
        "samples arrive: {}",
        t.screen()
    );
    let (visible, runnable_mean, runnable_max) = toggle_the_note_twice(&t);
    let own = traced_key_to_draw_us(&trace);
    eprintln!(
        "under FIFO spinners on every CPU (RT {runtime_us}/{period_us} us): schedlab key->draw {own:?} us; key sent -> visible in tmux {visible:?}; runnable tasks {runnable_mean:.1} mean, {runnable_max} max"
    );
    assert_key_to_draw_within_the_throttled_window(&own, runtime_us, period_us);
    assert_keys_show_within_two_pty_crossings(&visible, runnable_max, runtime_us, period_us);
    // The screen says why the terminal itself may lag, once two /proc/stat rounds
    // (100 ms apart) show the CPUs held: the keys above may all be done before that.
    t.shows("RT HOLDS ALL CPUS");
    t.quit();
}

/// The workbench on nice-ladder with a nice-0 FIFO spinner per online CPU, tracing its
/// own key-to-draw times to `trace`.
fn start_fifo_spinners_on_every_cpu(
    dir: &std::path::Path,
    trace: &std::path::Path,
) -> Option<Tmux> {
    let cpus = schedlab::system::online_cpus().count().to_string();
    let count = format!("busy.count={cpus}");
    let args = [
        "tui",
        "nice-ladder",
        "--set",
        "busy.nice=0",
        "--set",
        count.as_str(),
        "--set",
        "busy.policy=fifo",
    ];
    let env = format!("SCHEDLAB_TRACE={}", trace.display());
    Tmux::start_with(&args, &dir.join("j"), &env)
}

/// Toggle the teaching note and back, twice; each key must show while the spinners run.
/// (key sent -> visible in tmux for each key, runnable tasks meanwhile: mean, max).
fn toggle_the_note_twice(t: &Tmux) -> (Vec<Duration>, f64, u32) {
    let mut visible = Vec::new();
    let fair = FairLoad::start();
    for (key, text) in [
        ("n", "What the kernel does"),
        ("n", "CPU share %"),
        ("n", "What the kernel does"),
        ("n", "CPU share %"),
    ] {
        let took = t
            .press_until(key, text, PATIENCE)
            .unwrap_or_else(|| panic!("no effect of {key} within {PATIENCE:?}: {}", t.screen()));
        visible.push(took);
    }
    let (runnable_mean, runnable_max) = fair.finish();
    (visible, runnable_mean, runnable_max)
}

/// schedlab's own part (key arrives -> screen drawn) is traced; the rest is the
/// kernel's pty path, whose workers the spinners starve.
fn traced_key_to_draw_us(trace: &std::path::Path) -> Vec<u64> {
    let traced = std::fs::read_to_string(trace).unwrap_or_default();
    let own: Vec<u64> = traced
        .lines()
        .filter_map(|l| l.strip_prefix("key_to_draw_us ")?.parse().ok())
        .collect();
    assert!(own.len() >= 4, "every key was handled and drawn: {traced}");
    own
}

/// Everything RT here is in the root RT group (spinners, schedlab's FIFO 99 UI and
/// input threads, this thread and the tmux it started), so on each CPU all of it is
/// throttled together for the last period - runtime (50 ms) of every period. A key
/// schedlab reads waits at most that throttled window for its FIFO 99 input thread,
/// then the frame is drawn at once (a key redraws immediately, not at the 100 ms tick;
/// measured 0.4-2.2 ms). The 50 ms on top is drawing under other load.
fn assert_key_to_draw_within_the_throttled_window(own: &[u64], runtime_us: u64, period_us: u64) {
    let window = Duration::from_micros(period_us.saturating_sub(runtime_us));
    let own_bound = window + Duration::from_millis(50);
    assert!(
        own.iter().all(|&us| Duration::from_micros(us) <= own_bound),
        "key to drawn screen took {own:?} us; the bound is the RT-throttled window {window:?} + 50 ms"
    );
}

/// Key sent -> visible crosses the pty twice (tmux -> schedlab, schedlab -> tmux), and
/// each crossing is a flush_to_ldisc work item on a fair-class kworker, which runs
/// only in a fair window: RT throttling (or the 6.12+ fair server) gives fair tasks
/// `window` (50 ms) of every period, so a crossing waits at most one period for a
/// window. Every other runnable fair task (all of them are starved meanwhile, so they
/// pile up: procs_running less the spinners) may be picked first in that window and,
/// with PREEMPT_NONE, keep the CPU until a tick notices its slice is over: a tick
/// each (4 ms at HZ=250). They may all sit on the kworker's CPU (the kworker is
/// bound to its CPU, and the balancer is throttled like every fair task), and when
/// they fill the window the crossing waits another period per window they fill. The
/// RT ends (tmux, schedlab) add at most a throttled window each; 250 ms covers this
/// test's 20 ms polling and starting `tmux capture-pane`.
fn assert_keys_show_within_two_pty_crossings(
    visible: &[Duration],
    runnable_max: u32,
    runtime_us: u64,
    period_us: u64,
) {
    const TICK: Duration = Duration::from_millis(4);
    let window = Duration::from_micros(period_us.saturating_sub(runtime_us));
    let period = Duration::from_micros(period_us);
    let spinners = schedlab::system::online_cpus().count() as u32;
    let ahead = runnable_max.saturating_sub(spinners);
    let windows_per_crossing = 1
        + (TICK * ahead)
            .as_micros()
            .div_ceil(window.as_micros().max(1));
    let visible_bound =
        period * 2 * windows_per_crossing as u32 + window * 2 + Duration::from_millis(250);
    eprintln!("key sent -> visible bound {visible_bound:?}: 2 crossings x {windows_per_crossing} window(s) of {period:?}, {ahead} fair tasks ahead");
    for took in visible {
        assert!(
            *took <= visible_bound,
            "a key took {took:?} to show (all: {visible:?}); two pty crossings of {windows_per_crossing} RT period(s) {period:?} each ({ahead} runnable fair tasks at most), plus two throttled windows, bound it at {visible_bound:?}"
        );
    }
}

#[test]
fn recording_from_the_workbench_and_replaying_it() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(t) = Tmux::start(&["tui", "rt-throttle"], &dir.path().join("j")) else {
        return;
    };
    t.shows("fifo/1");
    t.keys(&["r"]);
    t.shows("recording to");
    t.keys(&["Down", "+"]);
    t.shows("fair.nice=-19: applied");
    // Samples after the change go into the recording too.
    t.wait_for_clock(t.clock() + 0.6);
    t.keys(&["r"]);
    t.shows("recording saved");
    t.quit();
    drop(t);
    let file = std::fs::read_dir(dir.path())
        .expect("dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|x| x == "jsonl"))
        .expect("a recording in the working directory");
    let records = schedlab::lab::record::read(&file).expect("readable recording");
    assert!(records.iter().any(|r| matches!(r, schedlab::lab::record::Record::Knob { setting, ok: true, .. } if setting == "fair.nice=-19")));
    assert!(
        records
            .iter()
            .filter(|r| matches!(r, schedlab::lab::record::Record::Batch { .. }))
            .count()
            >= 3
    );

    let Some(t) = Tmux::start(
        &["replay", file.to_str().expect("utf8")],
        &dir.path().join("j2"),
    ) else {
        return;
    };
    t.shows("REPLAY");
    assert!(
        t.wait_for("fair.nice -> -19", PATIENCE).is_some(),
        "the knob change is replayed: {}",
        t.screen()
    );
    t.keys(&["p"]);
    t.shows("read-only");
    t.quit();
}

#[test]
fn tracing_from_the_workbench_writes_a_perfetto_timeline_and_cleans_up() {
    let _guard = common::serial();
    if !common::require("root (scheduler tracing)", common::is_root()) {
        return;
    }
    let mounted_before = common::tracefs_mounted();
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(t) = Tmux::start(&["tui", "pipe-wakeup"], &dir.path().join("j")) else {
        return;
    };
    t.shows("pipe-wakeup running");
    let (pid, _) = ids(&t.screen(), "writer").expect("writer row");
    let writer_tid = assert_tracing_starts(&t, mounted_before);
    // A knob change inside the trace's window: an instant in the timeline.
    t.keys(&[":"]);
    t.keys(&["writer.nice=2", "Enter"]);
    t.shows("writer.nice=2: applied");
    let done = export_while_watching_the_screen(&t, writer_tid);
    assert_timeline_file(dir.path(), &done);
    // Exporting stops the trace for the file and starts it again.
    assert_header_says_trace(&t);
    // q during a second export quits at once; the half-written file is removed. Two
    // more seconds of events first, so there is something to write.
    t.wait_for_clock(t.clock() + 2.0);
    t.keys(&["x"]);
    t.quit();
    assert!(
        !part_written_file_in(dir.path()),
        "no part-written file left at quit"
    );
    assert!(
        common::wait_until(PATIENCE, || !common::alive(pid)),
        "workers gone"
    );
    if !mounted_before {
        assert!(!common::tracefs_mounted(), "tracefs left mounted");
    }
}

/// `t` starts the trace: the header says so, tracefs is mounted for it, and the trace's
/// own graph and preemptors line fill in. The writer's tid.
fn assert_tracing_starts(t: &Tmux, mounted_before: bool) -> i32 {
    t.keys(&["t"]);
    t.shows("tracing on");
    assert_header_says_trace(t);
    if !mounted_before {
        assert!(
            common::tracefs_mounted(),
            "the trace mounted tracefs for the run"
        );
    }
    // The trace's own graph and the preemptors line fill in from its intervals.
    t.shows("wakeup latency (trace)");
    assert!(t.screen().contains("preempted by:"), "{}", t.screen());
    let (_, writer_tid) = ids(&t.screen(), "writer").expect("writer row");
    writer_tid
}

/// The header's first line shows TRACE while tracing.
fn assert_header_says_trace(t: &Tmux) {
    assert!(t
        .screen()
        .lines()
        .next()
        .is_some_and(|l| l.contains("TRACE")));
}

/// Whether a part-written file is in `dir`.
fn part_written_file_in(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir)
        .expect("dir")
        .flatten()
        .any(|e| e.path().extension().is_some_and(|x| x == "part"))
}

/// Export with x and a knob change typed at once, watching the screen go on while the
/// timeline is written: the screen once the timeline is written.
fn export_while_watching_the_screen(t: &Tmux, writer_tid: i32) -> String {
    // Seconds of pipe-wakeup (~200k events/s): an export that takes a while in a debug
    // build (over a second for 600k events here).
    t.wait_for_clock(t.clock() + 3.0);
    // How often this screen draws a new clock when nothing else happens (the pace slows
    // to 4 frames a second where a frame is dear, as in a debug build).
    let frame_gap = t.frame_gap(4);
    // What schedlab's own threads did meanwhile: a frozen screen says why.
    let mut threads = ThreadWatch::of(&t.pane_processes());
    let asked = std::time::Instant::now();
    // A knob change typed with x, answered while the worker writes.
    t.keys_at_once(&["x", ":", "writer.nice=5", "Enter"]);
    let typed = asked.elapsed();
    // The workbench keeps drawing while the worker writes: the header's clock moves on
    // (the status line may show the knob change instead of the progress meanwhile).
    let mut looks: Vec<Look> = Vec::new();
    let mut done = None;
    common::wait_until(PATIENCE, || {
        let from = std::time::Instant::now();
        let s = t.screen();
        let look = Look {
            from,
            to: std::time::Instant::now(),
            clock: shown_clock(&s),
            nice_5: nice_of(writer_tid) == Some(5),
        };
        looks.push(look);
        threads.look();
        if s.contains("timeline written:") {
            done = Some(s);
            return true;
        }
        false
    });
    let done = done.unwrap_or_else(|| panic!("no timeline written: {}", t.screen()));
    let clocks: std::collections::BTreeSet<String> = looks
        .iter()
        .filter_map(|l| l.clock.map(|c| c.to_string()))
        .collect();
    eprintln!(
        "timeline written {:.1} s after x (typed in {:.2} s, the first look {:.2} s after x), \
         with a new clock every {:.2} s before it: the screen read {} times, at most {:.2} s \
         apart, the clock at {} moments",
        asked.elapsed().as_secs_f64(),
        typed.as_secs_f64(),
        looks
            .first()
            .map_or(0.0, |l| l.from.duration_since(asked).as_secs_f64()),
        frame_gap.as_secs_f64(),
        looks.len(),
        looks
            .windows(2)
            .map(|w| w[1].from - w[0].from)
            .max()
            .unwrap_or_default()
            .as_secs_f64(),
        clocks.len(),
    );
    eprintln!("schedlab's threads meanwhile: {}", threads.summary());
    // Judged by what the screen showed, not by how often this test got to look: two
    // looks more than three frames apart show different clocks. (A test that was itself
    // held up, by the CPU or by tmux, looks less often; CI once saw one clock in 1.3 s.)
    // The last look is the finished screen: a sampler that stood still shows there too.
    let apart = frame_gap * 3;
    let spans: Vec<(&Look, &Look)> = looks
        .iter()
        .enumerate()
        .flat_map(|(i, a)| looks[i + 1..].iter().map(move |b| (a, b)))
        .filter(|(a, b)| b.from.saturating_duration_since(a.to) > apart)
        .filter(|(a, b)| a.clock.is_some() && b.clock.is_some())
        .collect();
    let still = spans
        .iter()
        .filter(|(a, b)| a.clock == b.clock)
        .max_by_key(|(a, b)| b.from.saturating_duration_since(a.to));
    if let Some((a, b)) = still {
        panic!(
            "the screen stood still while the timeline was written: the clock at {} s on \
             looks {:.2} s apart (a new clock every {:.2} s before x)",
            a.clock.unwrap_or_default(),
            b.from.saturating_duration_since(a.to).as_secs_f64(),
            frame_gap.as_secs_f64()
        );
    }
    if spans.is_empty() {
        // A fast machine writes before the keys above are typed (the worker's
        // asynchrony is tested on its own in src/tui/export.rs).
        eprintln!("the write was over too soon to watch the screen through it");
    } else {
        // The knob change typed with x: applied while the worker wrote.
        assert!(
            looks[..looks.len() - 1].iter().any(|l| l.nice_5),
            "a knob change is applied while the timeline is written"
        );
    }
    assert!(
        common::wait_until(PATIENCE, || nice_of(writer_tid) == Some(5)),
        "the knob change sent with x is applied"
    );
    done
}

/// One look at the screen while the timeline is written: when the capture began and
/// ended (the screen is as it was somewhere between), the header's clock, and whether
/// the knob change typed with x had reached the writer.
struct Look {
    from: std::time::Instant,
    to: std::time::Instant,
    clock: Option<f64>,
    nice_5: bool,
}

/// schedlab's own threads while the test watches: how long each waited for a CPU
/// (schedstat's run delay) and where each was seen sleeping, so that a screen that stood
/// still names the thread that did and where it waited.
struct ThreadWatch {
    pid: Option<i32>,
    /// tid -> (name, run delay in ns when the watch began).
    delay_at_start: std::collections::BTreeMap<i32, (String, u64)>,
    /// "name: state wchan" -> times seen.
    seen: std::collections::BTreeMap<String, usize>,
}

impl ThreadWatch {
    /// Watch the process called schedlab among `processes` (the pane's).
    fn of(processes: &[i32]) -> ThreadWatch {
        let pid = processes.iter().copied().find(|&p| {
            std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "schedlab")
        });
        let mut w = ThreadWatch {
            pid,
            delay_at_start: Default::default(),
            seen: Default::default(),
        };
        for task in w.threads() {
            if let (Ok(stat), Ok(sched)) = (task.stat(), task.schedstat()) {
                w.delay_at_start
                    .insert(task.tid, (stat.comm, sched.run_delay));
            }
        }
        w
    }

    /// schedlab's threads now (none once it has gone).
    fn threads(&self) -> Vec<procfs::process::Task> {
        self.pid
            .and_then(|pid| procfs::process::Process::new(pid).ok())
            .and_then(|p| p.tasks().ok())
            .map(|tasks| tasks.flatten().collect())
            .unwrap_or_default()
    }

    /// Note where each thread is (running, or the kernel function it sleeps in).
    fn look(&mut self) {
        for task in self.threads() {
            let Ok(stat) = task.stat() else { continue };
            // procfs reads a process's wchan only, not a thread's.
            let wchan =
                std::fs::read_to_string(format!("/proc/{}/task/{}/wchan", task.pid, task.tid))
                    .unwrap_or_default();
            let key = format!("{}: {} {wchan}", stat.comm, stat.state);
            *self.seen.entry(key).or_default() += 1;
        }
    }

    /// Each thread's wait for a CPU since the watch began, then the states seen.
    fn summary(&self) -> String {
        if self.pid.is_none() {
            return "schedlab's process not found".into();
        }
        let now: std::collections::BTreeMap<i32, u64> = self
            .threads()
            .iter()
            .filter_map(|t| Some((t.tid, t.schedstat().ok()?.run_delay)))
            .collect();
        let waits: Vec<String> = self
            .delay_at_start
            .iter()
            .map(|(tid, (name, at_start))| {
                let waited = now.get(tid).map_or(0, |n| n.saturating_sub(*at_start));
                format!("{name} {} ms", waited / 1_000_000)
            })
            .collect();
        let seen: Vec<String> = self.seen.iter().map(|(k, n)| format!("{k} x{n}")).collect();
        format!(
            "waited for a CPU: {}; seen: {}",
            waits.join(", "),
            seen.join(", ")
        )
    }
}

/// The timeline in the working directory is a Perfetto trace with the counts the status
/// line (`done`) gave, both tasks, CPU tracks, the run's track and the knob change; no
/// part-written file is left.
fn assert_timeline_file(dir: &std::path::Path, done: &str) {
    let file = std::fs::read_dir(dir)
        .expect("dir")
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("schedlab-trace-") && n.ends_with(".pftrace"))
        })
        .expect("a timeline in the working directory");
    let c = schedlab::report::perfetto::read::read(&std::fs::read(&file).expect("read it"))
        .expect("a Perfetto trace");
    // The status line's counts are the file's.
    let said = done.split_whitespace().collect::<Vec<_>>().join(" ");
    let count_before = |what: &str| -> u64 {
        let at = said.find(what).unwrap_or_else(|| panic!("{what}: {said}"));
        let n = said[..at].trim_end().rsplit(' ').next().unwrap_or("");
        n.replace(',', "")
            .parse()
            .unwrap_or_else(|_| panic!("{what}: {said}"))
    };
    assert_eq!(count_before(" switches,"), c.switches, "{said}");
    assert_eq!(count_before(" wake-ups"), c.wakeups, "{said}");
    assert!(c.switches > 10_000 && c.wakeups > 10_000, "{c:?}");
    let tasks: Vec<&str> = c.threads.values().map(String::as_str).collect();
    assert!(
        tasks.contains(&"writer") && tasks.contains(&"reader"),
        "{tasks:?}"
    );
    assert!(!c.cpus.is_empty(), "CPU tracks");
    assert!(
        c.tracks
            .iter()
            .any(|n| n.starts_with("schedlab pipe-wakeup: last ")),
        "{:?}",
        c.tracks
    );
    assert!(
        c.instants.iter().any(|n| n.starts_with("writer.nice=2")),
        "the knob change: {:?}",
        c.instants
    );
    assert!(!part_written_file_in(dir), "no part-written file left");
}

#[test]
fn a_key_rebound_in_keys_toml_changes_the_policy_and_its_old_key_does_not() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    // Where schedlab looks (README, KeyMap::config_path): $XDG_CONFIG_HOME/schedlab/keys.toml.
    let config = dir.path().join("config");
    std::fs::create_dir_all(config.join("schedlab")).expect("config dir");
    std::fs::write(
        config.join("schedlab").join("keys.toml"),
        "[keys]\npolicy = \"F2\"\n",
    )
    .expect("write keys.toml");
    let env = format!("XDG_CONFIG_HOME={}", config.display());
    let Some(t) = Tmux::start_with(&["tui", "pipe-wakeup"], &dir.path().join("j"), &env) else {
        return;
    };
    t.shows("pipe-wakeup running");
    let screen = t.screen();
    let first = screen
        .lines()
        .skip_while(|l| !l.starts_with("TASK"))
        .nth(1)
        .and_then(|l| l.split_whitespace().next())
        .map(str::to_string)
        .expect("a first row under the table header");
    let (pid, tid) = ids(&screen, &first).expect("ids of the first row");
    assert_eq!(policy_of(pid, tid).as_deref(), Some("0"), "starts OTHER");
    let picker = format!("{first}: policy");
    // The old key `p`: keys are handled in order, so once the `n` after it has shown its
    // note, `p` was handled too, and it must not have opened the picker.
    t.keys(&["p", "n"]);
    assert!(
        t.wait_for("What the kernel does", PATIENCE).is_some(),
        "the key after p was handled normally: {}",
        t.screen()
    );
    assert!(
        !t.screen().contains(&picker),
        "p still opens the policy picker although keys.toml rebound policy to F2: {}",
        t.screen()
    );
    t.keys(&["n"]);
    t.shows("CPU share %");
    assert_eq!(
        policy_of(pid, tid).as_deref(),
        Some("0"),
        "p changed nothing"
    );
    // The new key: the picker opens on the current policy; one down is batch.
    t.keys(&["F2"]);
    assert!(
        t.wait_for(&picker, PATIENCE).is_some(),
        "F2 opens the policy picker: {}",
        t.screen()
    );
    t.keys(&["Down", "Enter"]);
    let applied = format!("{first}.policy=batch: applied");
    t.shows(&applied);
    assert_eq!(
        policy_of(pid, tid).as_deref(),
        Some("3"),
        "the kernel has SCHED_BATCH for {first}"
    );
    // SAFETY: sched_getscheduler only reads the policy of a thread id.
    let policy = unsafe { libc::sched_getscheduler(tid) };
    assert_eq!(policy, libc::SCHED_BATCH, "sched_getscheduler({tid})");
    t.quit();
}

/// The colour parameters (foreground 30-37, 90-97, 38;...; background 40-47, 100-107,
/// 48;...) of the SGR sequences in `text`, as found.
fn colour_sgrs(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("\u{1b}[") {
        rest = &rest[at + 2..];
        let end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == ';' || c == ':'))
            .unwrap_or(rest.len());
        let (params, after) = rest.split_at(end);
        rest = after;
        if !after.starts_with('m') {
            continue;
        }
        let mut it = params.split(';');
        while let Some(p) = it.next() {
            let n: u32 = p
                .split(':')
                .next()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            match n {
                30..=37 | 40..=47 | 90..=97 | 100..=107 => found.push(format!("{n}")),
                38 | 48 => {
                    // 38;5;N or 38;2;R;G;B: skip the colour's own numbers.
                    let skip = match it.next() {
                        Some("5") => 1,
                        Some("2") => 3,
                        _ => 0,
                    };
                    for _ in 0..skip {
                        it.next();
                    }
                    found.push(format!("{n};..."));
                }
                _ => {}
            }
        }
    }
    found
}

#[test]
fn colour_sgr_detection_reads_the_forms_tmux_writes() {
    assert_eq!(
        colour_sgrs("\u{1b}[1;36mx\u{1b}[0m \u{1b}[38;5;33my\u{1b}[7m\u{1b}[100mz"),
        ["36", "38;...", "100"]
    );
    // Bold, reverse, reset and a 256-colour index that looks like a colour code are not
    // colours of their own.
    assert!(colour_sgrs("\u{1b}[1m\u{1b}[7;1m\u{1b}[0m\u{1b}[H").is_empty());
    assert_eq!(colour_sgrs("\u{1b}[38;5;31m"), ["38;..."]);
}

#[test]
fn no_color_in_the_environment_turns_every_colour_off() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut colours = Vec::new();
    // NO_COLOR= (empty) means colours on (no-color.org: only a non-empty value counts),
    // whatever the test's own environment has.
    for (n, env) in ["NO_COLOR=", "NO_COLOR=1"].into_iter().enumerate() {
        let Some(t) = Tmux::start_with(
            &["tui", "pipe-wakeup"],
            &dir.path().join(format!("j{n}")),
            env,
        ) else {
            return;
        };
        // The graphs draw once samples arrive: wait for a second one to be shown.
        t.shows("pipe-wakeup running");
        // A second of samples drawn: the graphs have lines by then.
        t.wait_for_clock(t.clock() + 1.0);
        let screen = t.screen_with_escapes();
        assert!(
            screen.contains("\u{1b}["),
            "capture-pane -e gives attributes (bold at least): {screen:?}"
        );
        colours.push((env, colour_sgrs(&screen)));
        t.quit();
    }
    eprintln!(
        "colour SGR codes: {:?}",
        colours
            .iter()
            .map(|(e, c)| (e, c.len(), c.iter().take(5).collect::<Vec<_>>()))
            .collect::<Vec<_>>()
    );
    assert!(
        !colours[0].1.is_empty(),
        "with colours on the screen has colour codes"
    );
    assert!(
        colours[1].1.is_empty(),
        "NO_COLOR=1 yet colour codes: {:?}",
        colours[1].1
    );
}

/// nice of a task, field 19 of /proc/PID/stat.
fn nice_of(pid: i32) -> Option<i64> {
    common::stat_field(pid, 19)
}

#[test]
fn the_picker_attaches_a_running_process_whose_nice_is_put_back_at_quit() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let mut sleeper = Command::new("sleep").arg("60").spawn().expect("sleep");
    let pid = sleeper.id() as i32;
    let Some(t) = Tmux::start(&["tui", "pipe-wakeup"], &dir.path().join("j")) else {
        let _ = sleeper.kill();
        let _ = sleeper.wait();
        return;
    };
    let ran = t.wait_for("pipe-wakeup running", PATIENCE);
    assert!(ran.is_some(), "{}", t.screen());
    // a opens the tree; / then the pid filters it down to the sleeper; Enter ends the
    // filter, Enter attaches.
    t.keys(&["a"]);
    t.shows("attach to a process");
    t.keys(&["/"]);
    for d in pid.to_string().chars() {
        t.keys(&[&d.to_string()]);
    }
    t.keys(&["Enter", "Enter"]);
    let joined = t.wait_for("joined: sleep", PATIENCE);
    let screen = t.screen();
    assert!(joined.is_some(), "{screen}");
    assert_eq!(ids(&screen, "sleep"), Some((pid, pid)), "{screen}");
    // The third row: down twice, then nice+ (+) once. The sleeper starts at the test's
    // own nice (`nice -n 10 cargo test` makes it 10).
    let found = nice_of(pid).expect("the sleeper's nice");
    t.keys(&["j", "j", "+"]);
    let applied = common::wait_until(PATIENCE, || nice_of(pid) == Some(found + 1));
    let screen = t.screen();
    // A restart keeps it: the same process (pid and start time) is attached again.
    t.keys(&["R"]);
    let again = t.wait_for(&format!("attached again: sleep (pid {pid})"), PATIENCE);
    let restarted = t.screen();
    t.quit();
    let after = nice_of(pid);
    let _ = sleeper.kill();
    let _ = sleeper.wait();
    assert!(
        applied,
        "nice {} never reached pid {pid}: {screen}",
        found + 1
    );
    assert!(again.is_some(), "{restarted}");
    assert_eq!(ids(&restarted, "sleep"), Some((pid, pid)), "{restarted}");
    assert_eq!(after, Some(found), "put back at quit");
}

/// The 0-based cell where `text` starts on `screen`.
fn cell_of(screen: &str, text: &str) -> Option<(usize, usize)> {
    screen
        .lines()
        .enumerate()
        .find_map(|(y, line)| line.find(text).map(|at| (line[..at].chars().count(), y)))
}

#[test]
fn the_mouse_presses_a_footer_hint_and_scrolls_and_closes_the_help() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let Some(t) = Tmux::start(&["tui", "pipe-wakeup"], &dir.path().join("j")) else {
        return;
    };
    t.shows("pipe-wakeup running");
    // The App answers clicks by the geometry of the frame last drawn: a wrong hand-over
    // from the TUI loop leaves these clicks on nothing.
    let screen = t.screen();
    let lines: Vec<&str> = screen.lines().collect();
    let footer = lines
        .iter()
        .rposition(|l| l.contains("quit"))
        .expect("the footer");
    let line = lines[footer];
    let at = line.rfind(" help").expect("the help hint") + 1;
    t.mouse(0, line[..at].chars().count(), footer);
    assert!(
        t.wait_for("help: keys 1-", PATIENCE).is_some(),
        "a click on the help hint opens the help: {}",
        t.screen()
    );
    let (x, y) = cell_of(&t.screen(), "help: keys").expect("the help's title");
    t.mouse(65, x, y + 3);
    assert!(
        t.wait_for("help: keys 4-", PATIENCE).is_some(),
        "the wheel scrolls the help by 3 lines: {}",
        t.screen()
    );
    t.mouse(0, x, y + 3);
    assert!(
        common::wait_until(PATIENCE, || !t.screen().contains("help: keys")),
        "a click closes the help: {}",
        t.screen()
    );
    t.quit();
}
