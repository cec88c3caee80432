//! schedlab's entry point: parse the command line and dispatch to a command.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Parser;

use schedlab::app::keys::KeyMap;
use schedlab::cli::{
    CheckArgs, Cli, Cmd, CompareArgs, HeadlessArgs, RunArgs, SettingsArgs, SweepArgs, SystemArgs,
};
use schedlab::headless::run::{run, RunOptions};
use schedlab::knob::sys::SystemKnobs;
use schedlab::knob::{journal, sys};
use schedlab::lab::session::split;
use schedlab::preset::setting::{parse_at, parse_duration, parse_sweep, Setting};
use schedlab::preset::{self, Preset};
use schedlab::report::render_table;
use schedlab::workload::{contain, workers, CannotRun};

/// Bad input: the user can fix it (exit code 2).
#[derive(Debug)]
struct Usage(String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Usage {}

fn usage(msg: impl std::fmt::Display) -> anyhow::Error {
    anyhow::Error::new(Usage(msg.to_string()))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Workers are schedlab too; only the controller owns the journal.
    let controller = !matches!(
        cli.command,
        Some(Cmd::Worker { .. } | Cmd::Exec { .. } | Cmd::Job { .. })
    );
    if controller {
        install_panic_hook();
        if !matches!(cli.command, Some(Cmd::Restore { .. })) {
            clean_up_after_the_dead();
        }
    }
    let result = match cli.command {
        None => cmd_tui(
            preset::DEFAULT_PRESET,
            &SettingsArgs {
                interval: "100ms".into(),
                ..SettingsArgs::default()
            },
            &SystemArgs::default(),
        ),
        Some(Cmd::Tui {
            preset,
            settings,
            system,
        }) => cmd_tui(&preset, &settings, &system),
        Some(Cmd::Presets { name }) => cmd_presets(name.as_deref()),
        Some(Cmd::Run(args)) => cmd_run(args),
        Some(Cmd::Sweep(args)) => cmd_sweep(args),
        Some(Cmd::Compare(args)) => cmd_compare(args),
        Some(Cmd::Knobs {
            json,
            mount_debugfs,
        }) => cmd_knobs(json, mount_debugfs),
        Some(Cmd::Check(args)) => cmd_check(args),
        Some(Cmd::Restore { discard }) => cmd_restore(discard),
        Some(Cmd::Replay { file, speed }) => cmd_replay(&file, speed),
        Some(Cmd::Worker { shm, threads }) => serde_json::from_str(&threads)
            .context("bad --threads")
            .and_then(|t: Vec<workers::ThreadSpec>| workers::worker_main(&shm, &t)),
        Some(Cmd::Exec {
            shm,
            slot,
            stdin_pipe,
            stdout_pipe,
            poll_stdin,
            argv,
        }) => workers::exec_main(
            &shm,
            slot,
            &argv,
            workers::ExecPipes {
                stdin: stdin_pipe,
                stdout: stdout_pipe,
                poll_stdin,
            },
        ),
        Some(Cmd::Job {
            shm,
            slot,
            stage,
            ms,
            io_ms,
        }) => workers::job_main(&shm, slot, stage, ms, io_ms),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let code = exit_code(&e);
            if code == exit::USAGE {
                eprintln!("schedlab: {e}");
            } else {
                eprintln!("schedlab: {e:#}");
            }
            ExitCode::from(code)
        }
    }
}

/// Exit codes, by what went wrong.
mod exit {
    /// Something failed (the kernel refused a system knob the user asked for, I/O).
    pub const FAILURE: u8 = 1;
    /// Bad input: the user can fix the command line or the preset.
    pub const USAGE: u8 = 2;
    /// The run went on without a setting that defines the experiment (see --allow-partial).
    pub const PARTIAL: u8 = 3;
    /// Another schedlab holds the knob lock: try again when it is done.
    pub const LOCKED: u8 = 4;
}

fn exit_code(e: &anyhow::Error) -> u8 {
    if e.chain().any(|c| c.is::<Usage>() || c.is::<CannotRun>()) {
        exit::USAGE
    } else if e.chain().any(|c| c.is::<journal::LockHeld>()) {
        exit::LOCKED
    } else if e.chain().any(|c| c.is::<Partial>()) {
        exit::PARTIAL
    } else {
        exit::FAILURE
    }
}

/// The run finished, but without a setting that defines its experiment: the numbers
/// were printed, marked, and the exit code says so.
#[derive(Debug)]
struct Partial(String);

impl std::fmt::Display for Partial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Partial {}

/// On a panic, put every journaled knob back before anything else (the hook runs
/// before unwinding, and a panic may never unwind to the Journal's Drop).
fn install_panic_hook() {
    let path = journal::default_path().ok();
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        for r in path.iter().flat_map(|p| journal::restore_own(p)) {
            eprintln!("schedlab: {r}");
        }
        previous(info);
    }));
}

/// What a schedlab that died left behind: knobs (its journal) and processes (its
/// experiments' cgroups and process groups). Put back and killed now, and said.
fn clean_up_after_the_dead() {
    for line in contain::clean_stale() {
        eprintln!("schedlab: {line}");
    }
    let Ok(path) = journal::default_path() else {
        // An unusable state directory: the command that needs it says why.
        return;
    };
    match journal::restore_stale(&path) {
        Ok(Some((pid, restored))) => {
            eprintln!(
                "schedlab: an earlier schedlab (pid {pid}) left knobs changed; restoring them:"
            );
            for r in restored {
                eprintln!("schedlab:   {r}");
            }
        }
        Ok(None) => {}
        // Another schedlab is running: it restores its own knobs.
        Err(e) if e.chain().any(|c| c.is::<journal::LockHeld>()) => {}
        Err(e) if e.to_string().contains("is running and owns") => {}
        Err(e) => eprintln!("schedlab: {e:#}"),
    }
}

fn cmd_restore(discard: bool) -> Result<()> {
    let path = journal::default_path()?;
    let mut out = String::new();
    for line in contain::clean_stale() {
        writeln!(out, "{line}")?;
    }
    if discard {
        match journal::discard(&path)? {
            None => writeln!(out, "nothing to discard: no journal at {}", path.display())?,
            Some(held) => {
                writeln!(
                    out,
                    "removed the journal {} without restoring it; it held:",
                    path.display()
                )?;
                for h in held {
                    writeln!(out, "  {h}")?;
                }
            }
        }
        return emit(&out);
    }
    match journal::restore_stale(&path)? {
        None => {
            writeln!(out, "nothing to restore: no journal at {}", path.display())?;
            emit(&out)
        }
        Some((pid, restored)) => {
            writeln!(
                out,
                "restored what schedlab pid {pid} left changed ({}):",
                path.display()
            )?;
            let failed = restored.iter().filter(|r| r.result.is_err()).count();
            for r in &restored {
                writeln!(out, "  {r}")?;
            }
            emit(&out)?;
            if failed > 0 {
                anyhow::bail!(
                    "{failed} value(s) could not be restored; the journal stays at {} (`schedlab restore --discard` removes it without restoring)",
                    path.display()
                );
            }
            Ok(())
        }
    }
}

/// JSON to stdout (`-`) or a file (then the table on stdout too), else the table.
fn print_report<T: serde::Serialize>(json: Option<&str>, report: &T, table: String) -> Result<()> {
    match json {
        Some("-") => emit(&format!("{}\n", serde_json::to_string_pretty(report)?)),
        Some(path) => {
            std::fs::write(path, serde_json::to_string_pretty(report)?)
                .with_context(|| format!("writing {path}"))?;
            emit(&table)
        }
        None => emit(&table),
    }
}

/// Print to stdout; a closed pipe (`| head`) is not an error.
fn emit(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing to stdout"),
    }
}

fn load_preset(name: &str) -> Result<Preset> {
    preset::load(name).map_err(|e| usage(format!("{e:#}")))
}

fn cmd_presets(name: Option<&str>) -> Result<()> {
    let mut out = String::new();
    let Some(name) = name else {
        for p in preset::list() {
            match p {
                Ok(p) => writeln!(out, "{:<16} {}", p.name, p.summary)?,
                Err(e) => writeln!(out, "{:<16} {e:#}", "(broken)")?,
            }
        }
        if let Some(dir) = preset::user_dir() {
            writeln!(out, "\nYour own presets go in {}", dir.display())?;
        }
        return emit(&out);
    };
    let p = load_preset(name)?;
    writeln!(out, "{} - {}\n(source: {})\n", p.name, p.summary, p.source)?;
    writeln!(out, "Tasks:")?;
    for g in &p.groups {
        let count = if g.count == 1 {
            String::new()
        } else {
            format!(" x{}", g.count)
        };
        let mut links = Vec::new();
        if let Some(s) = &g.stdin {
            links.push(format!("stdin<-{s}"));
        }
        if let Some(s) = &g.stdout {
            links.push(format!("stdout->{s}"));
        }
        if let Some(s) = &g.process {
            links.push(format!("thread of process {s}"));
        }
        writeln!(
            out,
            "  {}{count}: {} {}",
            g.name,
            g.program.describe(),
            links.join(" ")
        )?;
    }
    writeln!(out, "\nKnobs (--set TASK.KNOB=VALUE):")?;
    let focus: Vec<&str> = p.focus.iter().map(String::as_str).collect();
    for (k, v) in p.knob_table() {
        let star = if focus.contains(&k.as_str()) {
            "*"
        } else {
            " "
        };
        writeln!(out, "  {star} {k} = {v}")?;
    }
    let sys: Vec<&str> = focus
        .iter()
        .copied()
        .filter(|f| f.starts_with("sys."))
        .collect();
    if !sys.is_empty() {
        writeln!(
            out,
            "  * system knobs that matter here: {} (see `schedlab knobs`)",
            sys.join(", ")
        )?;
    }
    writeln!(out, "  (* = the knobs this experiment is about)")?;
    writeln!(
        out,
        "\nHeadline metric: {:?} of {}",
        p.headline, p.metric_task
    )?;
    if !p.warmup.is_zero() {
        writeln!(
            out,
            "Summaries leave out the first {:.1} s of a run (--warmup; runs shorter than twice that keep it all)",
            p.warmup.as_secs_f64()
        )?;
    }
    if !p.variants.is_empty() {
        writeln!(out, "\nVariants (--variant NAME):")?;
        for v in &p.variants {
            let sets: Vec<String> = v.set.iter().map(Setting::to_string).collect();
            writeln!(out, "  {:<12} {} [{}]", v.name, v.summary, sets.join(" "))?;
        }
    }
    writeln!(out, "\n{}", p.note)?;
    emit(&out)
}

fn cmd_knobs(json: bool, mount_debugfs: bool) -> Result<()> {
    let mut system = SystemKnobs::new(journal::default_path()?);
    if mount_debugfs {
        system.mount_debugfs().map_err(anyhow::Error::msg)?;
    }
    let knobs = sys::list(&system.probe);
    let per_task = per_task_knobs(&system.probe);
    if json {
        let value = serde_json::json!({ "system": knobs, "task": per_task });
        return emit(&format!("{}\n", serde_json::to_string_pretty(&value)?));
    }
    let mut out = String::from("System knobs (--set sys.NAME=VALUE):\n");
    for k in &knobs {
        let value = k.value.clone().unwrap_or_else(|| "?".into());
        let state = match (&k.writable, &k.why_not) {
            (true, _) => "writable".to_string(),
            (false, Some(why)) => format!("read-only: {why}"),
            (false, None) => "read-only".to_string(),
        };
        writeln!(out, "  {:<32} {:<12} {state}", k.name, value)?;
        if k.writable {
            writeln!(out, "  {:<32} allowed: {}", "", k.allowed)?;
        }
    }
    if let Some((_, source)) = sys::read_features(&system.probe) {
        writeln!(out, "  (features: {source})")?;
    }
    writeln!(
        out,
        "\nPer-task knobs (--set TASK.KNOB=VALUE, or live in the TUI):"
    )?;
    for k in &per_task {
        let state = match &k.why_not {
            None => "available".to_string(),
            Some(why) => format!("unavailable: {why}"),
        };
        writeln!(out, "  {:<12} {:<58} {state}", k.name, k.allowed)?;
    }
    emit(&out)
}

/// Per-task knobs and whether this machine lets you use them.
fn per_task_knobs(probe: &sys::Probe) -> Vec<sys::KnobInfo> {
    let root = |why: &str| (!probe.root).then(|| why.to_string());
    let rows: [(&str, &str, Option<String>); 8] = [
        (
            "policy",
            "other, batch, idle, fifo, rr, deadline",
            root("fifo, rr and deadline need root or CAP_SYS_NICE"),
        ),
        (
            "priority",
            "1..99 (fifo, rr)",
            root("needs root or CAP_SYS_NICE"),
        ),
        (
            "nice",
            "-20..19",
            root("lowering nice needs root or CAP_SYS_NICE"),
        ),
        ("cpus", "a CPU list (0-1,3) or all", None),
        (
            "slice",
            "0.1ms..100ms or default (fair tasks)",
            probe.slice_reason(),
        ),
        (
            "runtime",
            "deadline runtime/deadline/period, e.g. 2ms",
            root("SCHED_DEADLINE needs root"),
        ),
        ("uclamp_min", "0..1024", probe.uclamp_reason()),
        ("uclamp_max", "0..1024", probe.uclamp_reason()),
    ];
    rows.into_iter()
        .map(|(name, allowed, why)| sys::KnobInfo {
            name: name.into(),
            value: None,
            allowed: allowed.into(),
            writable: why.is_none(),
            why_not: why,
            path: None,
            help: String::new(),
        })
        .collect()
}

/// Everything `run` and `sweep` share: the preset with its overrides, timing, signals.
struct Prepared {
    preset: Preset,
    opts: RunOptions,
    system: SystemKnobs,
}

fn prepare(preset: &str, duration: &str, headless: &HeadlessArgs) -> Result<Prepared> {
    let HeadlessArgs {
        warmup,
        settings,
        system: system_args,
        ..
    } = headless;
    let (variant, sets, interval) = (
        settings.variant.as_deref(),
        &settings.set,
        settings.interval.as_str(),
    );
    let mut p = load_preset(preset)?;
    let duration = parse_duration(duration).map_err(|e| usage(format!("--duration: {e}")))?;
    let interval_d = parse_duration(interval).map_err(|e| usage(format!("--interval: {e}")))?;
    let warmup = warmup
        .as_deref()
        .map(|w| {
            let d = parse_duration(w).map_err(|e| usage(format!("--warmup: {e}")))?;
            if d >= duration {
                return Err(usage(format!(
                    "--warmup {w}: allowed 0s up to (not including) --duration"
                )));
            }
            Ok(d)
        })
        .transpose()?;
    if interval_d < Duration::from_millis(10) || interval_d > Duration::from_secs(60) {
        return Err(usage(format!("--interval {interval}: allowed 10ms..60s")));
    }
    // A rate needs two samples an interval apart, and a summary at least two intervals.
    if duration < 2 * interval_d {
        return Err(usage(format!(
            "--duration {}: allowed at least two sampling intervals ({} at --interval {interval})",
            humantime::format_duration(duration),
            humantime::format_duration(2 * interval_d)
        )));
    }
    let mut overrides = Vec::new();
    let mut settings = Vec::new();
    if let Some(v) = variant {
        let variant = p.variant(v).map_err(usage)?;
        settings.extend(variant.set.iter().cloned());
        overrides.push(format!("--variant {v}"));
    }
    for s in sets {
        settings.push(s.parse::<Setting>().map_err(usage)?);
        overrides.push(format!("--set {s}"));
    }
    let (task_sets, system_sets) = split(&settings).map_err(usage)?;
    sys::precheck(
        system_sets.iter().map(|(k, s)| (k, s.value.as_str())),
        &sys::Probe::detect(),
    )
    .map_err(usage)?;
    p.apply_all(&task_sets).map_err(usage)?;
    p.tasks(&schedlab::system::online_cpus()).map_err(usage)?;

    let exe = std::env::current_exe().context("finding the schedlab binary")?;
    let stop = schedlab::system::stop_on_signals().context("installing signal handlers")?;
    let mut opts = RunOptions::new(exe);
    opts.duration = duration;
    opts.interval = interval_d;
    opts.warmup = warmup;
    opts.stop = stop;
    opts.overrides = overrides;
    opts.system_sets = system_sets;
    let mut system = SystemKnobs::new(journal::default_path()?);
    system.allow_unthrottled_rt = system_args.allow_unthrottled_rt;
    if system_args.mount_debugfs {
        system.mount_debugfs().map_err(anyhow::Error::msg)?;
    }
    Ok(Prepared {
        preset: p,
        opts,
        system,
    })
}

/// Restore the journal and say what could not be restored.
fn finish(mut system: SystemKnobs) -> Result<()> {
    let failed: Vec<String> = system
        .restore()
        .iter()
        .filter(|r| r.result.is_err())
        .map(|r| r.to_string())
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        anyhow::bail!(
            "{}; the journal stays at {} for `schedlab restore`",
            failed.join("; "),
            system.journal_path().display()
        )
    }
}

/// A bad `--plot` name is found before the run, not after it.
fn check_plot(path: Option<&std::path::Path>) -> Result<()> {
    match path {
        Some(p) => schedlab::plot::format_of(p)
            .map(|_| ())
            .map_err(|e| usage(format!("--plot: {e}"))),
        None => Ok(()),
    }
}

/// Check a setting that is applied later (`--at`, a sweep value) now, so bad input
/// fails before anything starts.
fn check_later(preset: &Preset, opts: &RunOptions, s: &Setting) -> Result<()> {
    if let schedlab::lab::session::Route::Sys(knob) =
        schedlab::lab::session::route(s).map_err(usage)?
    {
        let start = opts.system_sets.iter().map(|(k, s)| (k, s.value.as_str()));
        sys::precheck(
            start.chain([(&knob, s.value.as_str())]),
            &sys::Probe::detect(),
        )
        .map_err(usage)?;
    } else {
        preset
            .clone()
            .apply_all(std::slice::from_ref(s))
            .map_err(usage)?;
    }
    Ok(())
}

fn cmd_run(args: RunArgs) -> Result<()> {
    check_plot(args.plot.as_deref())?;
    let mut at = Vec::new();
    for a in &args.at {
        at.push(parse_at(a).map_err(usage)?);
    }
    let Prepared {
        preset,
        mut opts,
        mut system,
    } = prepare(&args.preset, &args.duration, &args.headless)?;
    for (_, s) in &at {
        check_later(&preset, &opts, s)?;
    }
    opts.at = at;
    opts.csv = args.csv.clone();
    opts.record = args.record.clone();
    let result = run(&preset, &opts, &mut system);
    let restored = finish(system);
    let report = result?;
    restored?;
    if args.json.as_deref() == Some("-") {
        // The table (with its warnings) is not printed: say on stderr what was refused.
        for w in &report.warnings {
            eprintln!("schedlab: warning: {w}");
        }
    }
    print_report(args.json.as_deref(), &report, render_table(&report))?;
    if let Some(path) = &args.plot {
        schedlab::plot::plot_run(&report, path)?;
    }
    partial_exit(
        &args.headless,
        report
            .partial
            .then(|| format!("{} setting(s) (see the warnings)", report.refused.len())),
    )
}

/// Exit code 3 after a result that is not the experiment (unless --allow-partial).
fn partial_exit(headless: &HeadlessArgs, refused: Option<String>) -> Result<()> {
    match refused {
        Some(what) if !headless.allow_partial => Err(anyhow::Error::new(Partial(format!(
            "the result is not the experiment: the kernel refused {what} (--allow-partial exits 0 anyway)"
        )))),
        _ => Ok(()),
    }
}

fn cmd_sweep(args: SweepArgs) -> Result<()> {
    check_plot(args.plot.as_deref())?;
    let (knob, values) = parse_sweep(&args.knob).map_err(usage)?;
    let Prepared {
        preset,
        opts,
        mut system,
    } = prepare(&args.preset, &args.duration, &args.headless)?;
    for v in &values {
        let s: Setting = format!("{knob}={v}").parse().map_err(usage)?;
        check_later(&preset, &opts, &s)?;
    }
    let result = schedlab::headless::sweep::sweep(&preset, &knob, &values, &opts, &mut system);
    let restored = finish(system);
    let report = result?;
    restored?;
    print_report(
        args.json.as_deref(),
        &report,
        schedlab::headless::sweep::render(&report),
    )?;
    if let Some(path) = &args.plot {
        schedlab::plot::plot_sweep(&report, path)?;
    }
    let partial = report.rows.iter().filter(|r| r.partial).count();
    partial_exit(
        &args.headless,
        (partial > 0).then(|| format!("settings in {partial} of the sweep's runs")),
    )
}

fn cmd_compare(args: CompareArgs) -> Result<()> {
    use schedlab::headless::compare::{self, Side};
    check_plot(args.plot.as_deref())?;
    if !(1..=100).contains(&args.rounds) {
        return Err(usage(format!("--rounds {}: allowed 1..100", args.rounds)));
    }
    let a = Side::parse("A", &args.a).map_err(usage)?;
    let b = Side::parse("B", &args.b).map_err(usage)?;
    let Prepared {
        preset,
        opts,
        mut system,
    } = prepare(&args.preset, &args.duration, &args.headless)?;
    for side in [&a, &b] {
        compare::prepare_side(&preset, &opts, &side.settings)
            .map_err(|e| usage(format!("--{}: {e}", side.label.to_lowercase())))?;
    }
    let result = compare::compare(
        &preset,
        &a.settings,
        &b.settings,
        args.rounds,
        &opts,
        &mut system,
    );
    let restored = finish(system);
    let report = result?;
    restored?;
    print_report(args.json.as_deref(), &report, compare::render(&report))?;
    if let Some(path) = &args.plot {
        schedlab::plot::plot_compare(&report, path)?;
    }
    partial_exit(
        &args.headless,
        (report.partial_runs > 0)
            .then(|| format!("settings in {} of the runs", report.partial_runs)),
    )
}

fn cmd_tui(preset: &str, settings: &SettingsArgs, system: &SystemArgs) -> Result<()> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return Err(usage(
            "the workbench needs a terminal; for a headless run use `schedlab run PRESET` (see --help)",
        ));
    }
    let keymap = KeyMap::load(KeyMap::config_path().as_deref()).map_err(usage)?;
    let Prepared {
        preset,
        opts,
        mut system,
    } = prepare(
        preset,
        // The workbench runs until quit; the duration only has to pass the checks.
        "24h",
        &HeadlessArgs {
            warmup: None,
            allow_partial: true,
            settings: settings.clone(),
            system: system.clone(),
        },
    )?;
    if !opts.system_sets.is_empty() {
        return Err(usage("system knobs (sys.*) are changed live in the workbench (tab, enter) or with `schedlab run --set`"));
    }
    let record_dir = std::env::current_dir().unwrap_or_else(|_| std::env::temp_dir());
    let tui_opts = schedlab::tui::TuiOptions {
        exe: opts.exe.clone(),
        interval: opts.interval,
        keymap,
        no_color: schedlab::tui::no_color_requested(),
        open_recorder: Box::new(|path| {
            schedlab::lab::record::FileRecorder::create(path)
                .map(|r| Box::new(r) as Box<dyn schedlab::lab::record::Recorder>)
                .map_err(|e| format!("{e:#}"))
        }),
        record_dir,
    };
    system.allow_unthrottled_rt = false;
    let restored = schedlab::tui::run(preset, system, tui_opts)?;
    let failed: Vec<&String> = restored
        .iter()
        .filter(|r| r.starts_with("could not"))
        .collect();
    if !failed.is_empty() {
        anyhow::bail!(
            "{}",
            failed
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        );
    }
    Ok(())
}

fn cmd_replay(file: &std::path::Path, speed: f64) -> Result<()> {
    use std::io::IsTerminal;
    if !(0.05..=100.0).contains(&speed) {
        return Err(usage(format!("--speed {speed}: allowed 0.05..100")));
    }
    let records = schedlab::lab::record::read(file).map_err(|e| usage(format!("{e:#}")))?;
    if !std::io::stdout().is_terminal() {
        return Err(usage("replay opens the workbench and needs a terminal"));
    }
    let keymap = KeyMap::load(KeyMap::config_path().as_deref()).map_err(usage)?;
    schedlab::tui::replay(records, speed, keymap, schedlab::tui::no_color_requested())
}

fn cmd_check(args: CheckArgs) -> Result<()> {
    let exe = std::env::current_exe().context("finding the schedlab binary")?;
    let mut opts = schedlab::check::CheckOptions::new(args.quick);
    opts.stop = schedlab::system::stop_on_signals().context("installing signal handlers")?;
    let mut system = SystemKnobs::new(journal::default_path()?);
    let result = schedlab::check::check(&exe, &opts, &mut system);
    let restored = finish(system);
    let report = result?;
    restored?;
    let text = schedlab::check::render_text(&report);
    print_report(args.json.as_deref(), &report, text)?;
    if let Some(dir) = &args.plot_dir {
        let written = schedlab::check::write_plots(&report, dir)?;
        let names: Vec<String> = written.iter().map(|p| p.display().to_string()).collect();
        eprintln!("schedlab: plots written: {}", names.join(", "));
    }
    Ok(())
}
