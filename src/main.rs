//! schedlab's entry point: parse the command line and dispatch to a command.

use std::fmt::Write as _;
use std::io::Write as _;
use std::process::ExitCode;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::Parser;

use schedlab::cli::{Cli, Cmd, RunArgs};
use schedlab::preset::{self, Preset};
use schedlab::report::render_table;
use schedlab::run::{run, RunOptions};
use schedlab::setting::{parse_duration, Setting};
use schedlab::workload::{spawn::remove_stale_run_dirs, workers};

/// Bad input: the user can fix it (exit code 2).
#[derive(Debug)]
struct Usage(String);

impl std::fmt::Display for Usage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for Usage {}

fn usage(msg: impl Into<String>) -> anyhow::Error {
    anyhow::Error::new(Usage(msg.into()))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        None => cmd_run(RunArgs {
            preset: preset::DEFAULT_PRESET.into(),
            duration: "10s".into(),
            interval: "100ms".into(),
            set: Vec::new(),
            variant: None,
            json: None,
            csv: None,
        }),
        Some(Cmd::Presets { name }) => cmd_presets(name.as_deref()),
        Some(Cmd::Run(args)) => cmd_run(args),
        Some(Cmd::Worker { shm, threads }) => serde_json::from_str(&threads)
            .context("bad --threads")
            .and_then(|t: Vec<workers::ThreadSpec>| workers::worker_main(&shm, &t)),
        Some(Cmd::Exec { shm, slot, argv }) => workers::exec_main(&shm, slot, &argv),
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
        Err(e) if e.is::<Usage>() => {
            eprintln!("schedlab: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("schedlab: {e:#}");
            ExitCode::FAILURE
        }
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
            let _ = writeln!(out, "\nYour own presets go in {}", dir.display());
        }
        return emit(&out);
    };
    let p = load_preset(name)?;
    let _ = writeln!(out, "{} - {}\n(source: {})\n", p.name, p.summary, p.source);
    let _ = writeln!(out, "Tasks:");
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
        let _ = writeln!(
            out,
            "  {}{count}: {} {}",
            g.name,
            g.program.describe(),
            links.join(" ")
        );
    }
    let _ = writeln!(out, "\nKnobs (--set TASK.KNOB=VALUE):");
    let focus: Vec<&str> = p.focus.iter().map(String::as_str).collect();
    for (k, v) in p.knob_table() {
        let star = if focus.contains(&k.as_str()) {
            "*"
        } else {
            " "
        };
        let _ = writeln!(out, "  {star} {k} = {v}");
    }
    let sys: Vec<&str> = focus
        .iter()
        .copied()
        .filter(|f| f.starts_with("sys."))
        .collect();
    if !sys.is_empty() {
        let _ = writeln!(out, "  * system knobs that matter here: {}", sys.join(", "));
    }
    let _ = writeln!(out, "  (* = the knobs this experiment is about)");
    let _ = writeln!(
        out,
        "\nHeadline metric: {:?} of {}",
        p.headline, p.metric_task
    );
    if !p.variants.is_empty() {
        let _ = writeln!(out, "\nVariants (--variant NAME):");
        for v in &p.variants {
            let sets: Vec<String> = v.set.iter().map(Setting::to_string).collect();
            let _ = writeln!(out, "  {:<10} {} [{}]", v.name, v.summary, sets.join(" "));
        }
    }
    let _ = writeln!(out, "\n{}", p.note);
    emit(&out)
}

fn cmd_run(args: RunArgs) -> Result<()> {
    let mut p = load_preset(&args.preset)?;
    let duration = parse_duration(&args.duration).map_err(|e| usage(format!("--duration: {e}")))?;
    let interval = parse_duration(&args.interval).map_err(|e| usage(format!("--interval: {e}")))?;
    if interval.as_millis() < 10 || interval.as_secs() > 60 {
        return Err(usage(format!(
            "--interval {}: allowed 10ms..60s",
            args.interval
        )));
    }
    let mut overrides = Vec::new();
    let mut settings = Vec::new();
    if let Some(v) = &args.variant {
        let variant = p.variant(v).map_err(usage)?;
        settings.extend(variant.set.iter().cloned());
        overrides.push(format!("--variant {v}"));
    }
    for s in &args.set {
        settings.push(s.parse::<Setting>().map_err(usage)?);
        overrides.push(format!("--set {s}"));
    }
    p.apply_all(&settings).map_err(usage)?;
    p.tasks(&schedlab::system::online_cpus()).map_err(usage)?;

    remove_stale_run_dirs();
    let exe = std::env::current_exe().context("finding the schedlab binary")?;
    let stop = Arc::new(AtomicBool::new(false));
    for sig in [
        signal_hook::consts::SIGINT,
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGHUP,
    ] {
        signal_hook::flag::register(sig, Arc::clone(&stop))
            .context("installing signal handlers")?;
    }
    let mut opts = RunOptions::new(exe);
    opts.duration = duration;
    opts.interval = interval;
    opts.csv = args.csv.clone();
    opts.stop = stop;
    opts.overrides = overrides;
    let report = run(&p, &opts)?;
    match args.json.as_deref() {
        Some("-") => emit(&format!("{}\n", serde_json::to_string_pretty(&report)?)),
        Some(path) => {
            std::fs::write(path, serde_json::to_string_pretty(&report)?)
                .with_context(|| format!("writing {path}"))?;
            emit(&render_table(&report))
        }
        None => emit(&render_table(&report)),
    }
}
