//! Command-line types for every command and flag (clap).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand};

#[derive(Debug, Parser)]
#[command(
    name = "schedlab",
    version = env!("SCHEDLAB_VERSION"),
    about = "A workbench that makes the Linux CPU scheduler visible",
    long_about = "A workbench that makes the Linux CPU scheduler visible: run a classic scheduler \
experiment as real tasks, turn knobs, and watch CPU share, switches, wait and throughput.\n\n\
Without a command, opens the live workbench on the default preset (pipe-wakeup)."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Cmd>,
}

#[derive(Debug, Subcommand)]
pub enum Cmd {
    /// List presets, or show one (tasks, knobs, variants, teaching note).
    Presets {
        /// A preset name or a path to a preset TOML file.
        name: Option<String>,
    },
    /// Open the live workbench on a preset (the default without a command), on running
    /// processes (--pid, --name) or on a command it starts (-- COMMAND ARGS...).
    Tui {
        /// Preset name or path (default: pipe-wakeup, unless --pid/--name/-- COMMAND).
        preset: Option<String>,
        #[command(flatten)]
        target: TargetArgs,
        #[command(flatten)]
        settings: SettingsArgs,
        #[command(flatten)]
        system: SystemArgs,
        /// When tracing (`t`), have the kernel write every sched_waking, not only those
        /// of cross-CPU wake-ups (exact same-CPU latencies; costs a wake-up-heavy
        /// experiment up to a tenth of its speed on a VM).
        #[arg(long)]
        trace_every_waking: bool,
    },
    /// Run a preset headless for a while and print what happened.
    Run(RunArgs),
    /// Run a preset once per value of one knob and print a row per value.
    Sweep(SweepArgs),
    /// Run a preset with settings A and with settings B in turns (A B A B ...) and
    /// compare their numbers: min, median, max and the B/A ratio per round.
    Compare(CompareArgs),
    /// Play a scripted lesson over a live preset (captions, knob changes, checks); list
    /// the lessons without NAME.
    Lesson(LessonArgs),
    /// Every system knob: current value, allowed values, writable here or why not.
    Knobs {
        /// Print JSON instead of a table (`--json` or `--json -`), or write it to FILE.
        #[arg(long, value_name = "FILE|-", num_args = 0..=1, default_missing_value = "-")]
        json: Option<String>,
        /// Mount debugfs for this command (unmounted again at exit) to show features.
        #[arg(long)]
        mount_debugfs: bool,
    },
    /// Characterize this machine's scheduler: short experiments, one verdict each.
    Check(CheckArgs),
    /// Restore knobs left changed by a schedlab that died (SIGKILL, crash, power cut),
    /// and kill the processes its experiments left running.
    Restore {
        /// Remove the journal without restoring it (one that cannot be read or undone);
        /// prints what it held.
        #[arg(long)]
        discard: bool,
    },
    /// Open the workbench on a recording (`run --record`, or `r` in the workbench):
    /// play, pause, step and seek; knobs read-only.
    Replay {
        /// A recording written by `schedlab run --record FILE` or the workbench's `r`.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// Playback speed (1 = as recorded).
        #[arg(long, default_value_t = 1.0)]
        speed: f64,
    },
    /// Print a shell completion script to stdout, e.g.
    /// `schedlab completions bash > ~/.local/share/bash-completion/completions/schedlab`.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
    /// Print the man page (roff) to stdout, e.g. `schedlab man | man -l -`; with a
    /// subcommand, its own page with its flags (`schedlab man run`, `schedlab man check
    /// diff`); with --dir, every page as a file.
    Man {
        /// The subcommand whose page to print (default: schedlab's own, which lists them).
        #[arg(value_name = "SUBCOMMAND")]
        command: Vec<String>,
        /// Write every page (schedlab.1, schedlab-run.1, ...) into DIR instead, e.g.
        /// ~/.local/share/man/man1.
        #[arg(long, value_name = "DIR", conflicts_with = "command")]
        dir: Option<PathBuf>,
    },
    /// (internal) A worker process: runs worker threads for a run.
    #[command(name = "__worker", hide = true)]
    Worker {
        #[arg(long)]
        shm: PathBuf,
        /// JSON list of thread specs.
        #[arg(long)]
        threads: String,
    },
    /// (internal) Wait for the start gate, then exec a command.
    #[command(name = "__exec", hide = true)]
    Exec {
        #[arg(long)]
        shm: PathBuf,
        #[arg(long)]
        slot: usize,
        /// The task's stdin pipe waits on fd 3 (moved to 0 just before exec).
        #[arg(long)]
        stdin_pipe: bool,
        /// The task's stdout pipe waits on fd 4 (moved to 1 just before exec).
        #[arg(long)]
        stdout_pipe: bool,
        /// poll() stdin once before exec (the `polled` lesson: arms the pipe).
        #[arg(long)]
        poll_stdin: bool,
        #[arg(last = true, required = true)]
        argv: Vec<String>,
    },
    /// (internal) One job of a generated Makefile.
    #[command(name = "__job", hide = true)]
    Job {
        #[arg(long)]
        shm: PathBuf,
        #[arg(long)]
        slot: usize,
        #[arg(long)]
        stage: usize,
        #[arg(long)]
        ms: u64,
        #[arg(long = "io-ms")]
        io_ms: u64,
    },
}

/// `schedlab check`.
#[derive(Debug, Args, Clone)]
pub struct CheckArgs {
    /// The short suite: at most ~15 s instead of ~60 s.
    #[arg(long)]
    pub quick: bool,
    /// Write the findings as JSON to FILE, or to stdout with `-`.
    #[arg(long, value_name = "FILE|-")]
    pub json: Option<String>,
    /// Write PNG plots into DIR: wakeup latency histograms, switch cost, per-CPU speed.
    #[arg(long, value_name = "DIR")]
    pub plot_dir: Option<PathBuf>,
    #[command(subcommand)]
    pub command: Option<CheckCmd>,
}

/// `schedlab check SUBCOMMAND`.
#[derive(Debug, Subcommand, Clone)]
pub enum CheckCmd {
    /// Compare a check report with a baseline's (a known-good machine's): both values,
    /// the ratio and a verdict by the baseline's own spread per finding. Exit code 1
    /// when a finding regressed, 0 when none did, 2 for a file that is not a check report.
    Diff(CheckDiffArgs),
}

/// `schedlab check diff`.
#[derive(Debug, Args, Clone)]
pub struct CheckDiffArgs {
    /// A `schedlab check --json FILE` report of the known-good machine.
    #[arg(value_name = "BASELINE.json")]
    pub baseline: PathBuf,
    /// The report to judge (default: run the check now).
    #[arg(value_name = "CURRENT.json")]
    pub current: Option<PathBuf>,
    /// When the check runs now: the short suite.
    #[arg(long)]
    pub quick: bool,
    /// Write the diff as JSON to FILE, or to stdout with `-`.
    #[arg(long, value_name = "FILE|-")]
    pub json: Option<String>,
}

/// What the experiment is instead of a preset: processes already running, or a command.
#[derive(Debug, Args, Clone, Default)]
pub struct TargetArgs {
    /// Attach to running processes (their threads and the processes they fork) instead
    /// of starting a preset. Knob changes on them are put back at exit unless --keep.
    #[arg(long, value_delimiter = ',', value_name = "PID[,PID...]")]
    pub pid: Vec<i32>,
    /// Attach to every process whose name (as `ps -e -o comm` shows it) matches REGEX.
    #[arg(long, value_name = "REGEX")]
    pub name: Option<String>,
    /// Leave the knob changes made on attached processes in place after exit (they are
    /// not journaled).
    #[arg(long)]
    pub keep: bool,
    /// Count a command's progress by its output: its stdout goes into a pipe read by a
    /// probe task, whose lines or bytes per second are the throughput.
    #[arg(long, value_name = "stdout-lines|stdout-bytes")]
    pub progress: Option<String>,
    /// Run this command as the experiment (a one-task preset named after the program),
    /// e.g. `schedlab run -- make -j4`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

/// How the preset's tasks are set up and sampled; shared by every command that runs one.
#[derive(Debug, Args, Clone, Default)]
pub struct SettingsArgs {
    /// Sampling interval, e.g. 100ms.
    #[arg(long, default_value = "100ms")]
    pub interval: String,
    /// Change a task's setting before start: TASK.KNOB=VALUE (repeatable), e.g.
    /// writer.policy=batch, hog.nice=10, fifo.priority=50, reader.cpus=0-1, busy.nice=-20..20:4.
    #[arg(long = "set", value_name = "TASK.KNOB=VALUE")]
    pub set: Vec<String>,
    /// Apply one of the preset's named variants first (see `schedlab presets NAME`).
    #[arg(long)]
    pub variant: Option<String>,
}

/// What run, sweep and compare share besides their duration: the warm-up, the task
/// settings and the system flags.
#[derive(Debug, Args, Clone, Default)]
pub struct HeadlessArgs {
    /// Leave this much of the start out of the summaries (default: the preset's
    /// warm-up, e.g. rt-throttle's first RT period; 0s keeps everything).
    #[arg(long, value_name = "DURATION")]
    pub warmup: Option<String>,
    /// Exit 0 even when the kernel refused a setting that defines the experiment (the
    /// result is still marked NOT THE EXPERIMENT; without this flag the exit code is 3).
    #[arg(long)]
    pub allow_partial: bool,
    /// Trace the experiment's tasks with the kernel's sched tracepoints: wakeup-to-run
    /// latency, run-queue delay after preemption, who preempted them, why they switched
    /// out (needs root; tracefs is mounted for the run when missing and unmounted after).
    #[arg(long)]
    pub trace: bool,
    /// With --trace: have the kernel write every sched_waking, not only those of
    /// cross-CPU wake-ups. Same-CPU wake-up latencies then start at sched_waking
    /// (about 1 us earlier) instead of sched_wakeup; costs a wake-up-heavy experiment
    /// up to a tenth of its speed on a VM (docs/src/reference/tracing.md: "What tracing
    /// costs").
    #[arg(long)]
    pub trace_every_waking: bool,
    #[command(flatten)]
    pub target: TargetArgs,
    #[command(flatten)]
    pub settings: SettingsArgs,
    #[command(flatten)]
    pub system: SystemArgs,
}

/// Flags about system knobs, shared by every command that runs a preset.
#[derive(Debug, Args, Clone, Default)]
pub struct SystemArgs {
    /// Mount debugfs for this run (unmounted again at exit).
    #[arg(long)]
    pub mount_debugfs: bool,
    /// Allow sys.rt_runtime_us=-1 (no RT throttling) while RT spinners run. A FIFO
    /// spinner on every CPU can then freeze the machine until the run ends.
    #[arg(long)]
    pub allow_unthrottled_rt: bool,
}

#[derive(Debug, Args, Clone)]
pub struct SweepArgs {
    /// Preset name or path (or --pid/--name/-- COMMAND).
    pub preset: Option<String>,
    /// The knob and its values: KNOB=V1,V2,... or KNOB=FROM..TO:STEP, e.g.
    /// sys.rt_runtime_us=200000..700000:100000 or writer.policy=other,batch.
    #[arg(long, value_name = "KNOB=VALUES")]
    pub knob: String,
    /// How long each value runs.
    #[arg(long, default_value = "5s")]
    pub duration: String,
    #[command(flatten)]
    pub headless: HeadlessArgs,
    /// Write the sweep as JSON to FILE, or to stdout with `-`.
    #[arg(long, value_name = "FILE|-")]
    pub json: Option<String>,
    /// Plot CPU share per task and the headline over the knob's values (.png or .svg).
    #[arg(long, value_name = "FILE.png|svg")]
    pub plot: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub struct CompareArgs {
    /// Preset name or path (or --pid/--name/-- COMMAND).
    pub preset: Option<String>,
    /// Settings of side A, comma-separated TASK.KNOB=VALUE (the --set syntax), e.g.
    /// writer.policy=other.
    #[arg(long = "a", value_name = "SETTINGS")]
    pub a: String,
    /// Settings of side B, e.g. writer.policy=batch,reader.policy=batch.
    #[arg(long = "b", value_name = "SETTINGS")]
    pub b: String,
    /// How many A-then-B pairs to run.
    #[arg(long, default_value_t = 5)]
    pub rounds: usize,
    /// How long each run lasts.
    #[arg(long, default_value = "3s")]
    pub duration: String,
    /// Settings applied to both sides.
    #[command(flatten)]
    pub headless: HeadlessArgs,
    /// Write the comparison as JSON to FILE, or to stdout with `-`.
    #[arg(long, value_name = "FILE|-")]
    pub json: Option<String>,
    /// Plot A against B per metric (.png or .svg).
    #[arg(long, value_name = "FILE.png|svg")]
    pub plot: Option<PathBuf>,
}

#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// Preset name (see `schedlab presets`) or path to a preset TOML file (default:
    /// pipe-wakeup, unless --pid/--name/-- COMMAND).
    pub preset: Option<String>,
    /// How long to run, e.g. 10s, 1.5s, 500ms. A finite workload (make) may end sooner.
    #[arg(long, default_value = "10s")]
    pub duration: String,
    #[command(flatten)]
    pub headless: HeadlessArgs,
    /// Write the report as JSON to FILE, or to stdout with `-`.
    #[arg(long, value_name = "FILE|-")]
    pub json: Option<String>,
    /// Write the sampled time series as CSV (one row per task per sample) to FILE, or
    /// to stdout with `-` (the table is then not printed).
    #[arg(long, value_name = "FILE|-")]
    pub csv: Option<PathBuf>,
    /// Change a knob in the middle of the run: TIME:TASK.KNOB=VALUE (repeatable), e.g.
    /// 5s:writer.policy=batch or 2s:sys.rt_runtime_us=600000.
    #[arg(long = "at", value_name = "TIME:KNOB=VALUE")]
    pub at: Vec<String>,
    /// Record every sample and knob change to FILE (JSON lines; `schedlab replay FILE`).
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Plot CPU share, switches and throughput over time, knob changes marked (.png or .svg).
    #[arg(long, value_name = "FILE.png|svg")]
    pub plot: Option<PathBuf>,
    /// Write the traced switches and wakeups as a timeline for the Perfetto UI
    /// (ui.perfetto.dev, "Open trace file"): CPU tracks, a track per task, knob changes
    /// as instant events. Perfetto's protobuf format (FILE.pftrace), or the Chrome JSON
    /// trace format for a name ending in .json (about 5 times larger and slower). Implies
    /// --trace.
    #[arg(long, value_name = "FILE.pftrace|json")]
    pub trace_out: Option<PathBuf>,
}

/// `schedlab lesson`.
#[derive(Debug, Args, Clone)]
pub struct LessonArgs {
    /// A lesson name (see `schedlab lesson`) or a path to a lesson TOML file.
    pub name: Option<String>,
    /// Play it without a terminal and print a pass/fail line per step (exit code 1 when a
    /// check failed).
    #[arg(long)]
    pub headless: bool,
    /// With --headless: write the result as JSON to FILE, or to stdout with `-`.
    #[arg(long, value_name = "FILE|-")]
    pub json: Option<String>,
    /// With --headless: scale every step's time (0.5 plays twice as fast).
    #[arg(long, default_value_t = 1.0)]
    pub pace: f64,
    /// With --headless: every step lasts this long (overrides --pace), e.g. 2s.
    #[arg(long, value_name = "DURATION")]
    pub step_time: Option<String>,
    /// With --headless: plot the whole session, steps marked (.png or .svg).
    #[arg(long, value_name = "FILE.png|svg")]
    pub plot: Option<PathBuf>,
    /// Sampling interval, e.g. 100ms.
    #[arg(long, default_value = "100ms")]
    pub interval: String,
    #[command(flatten)]
    pub system: SystemArgs,
}
