//! What a command runs: a preset, the processes `--pid`/`--name` attach to, or the
//! command after `--`; exactly one of them.

use anyhow::Result;

use super::usage;
use crate::cli::TargetArgs;
use crate::preset::adhoc::{self, Progress};
use crate::preset::{Preset, DEFAULT_PRESET};
use crate::workload::attach::{self, Selector};

/// The experiment's preset (made up for attach and command modes).
pub fn preset_for(preset: Option<&str>, target: &TargetArgs) -> Result<Preset> {
    let attach = !target.pid.is_empty() || target.name.is_some();
    let command = !target.command.is_empty();
    if [attach, command, preset.is_some()]
        .iter()
        .filter(|&&b| b)
        .count()
        > 1
    {
        return Err(usage(
            "give one experiment: a preset name, --pid/--name (attach), or -- COMMAND",
        ));
    }
    if target.progress.is_some() && !command {
        return Err(usage(
            "--progress counts a command's output: it needs -- COMMAND",
        ));
    }
    if target.keep && !attach {
        return Err(usage(
            "--keep applies to processes attached with --pid or --name",
        ));
    }
    if command {
        let progress = target
            .progress
            .as_deref()
            .map(str::parse::<Progress>)
            .transpose()
            .map_err(usage)?;
        return adhoc::command(&target.command, progress).map_err(usage);
    }
    if attach {
        let selector = Selector {
            pids: target.pid.clone(),
            name: target
                .name
                .as_deref()
                .map(Selector::parse_name)
                .transpose()
                .map_err(usage)?,
        };
        let found = attach::find(&selector).map_err(usage)?;
        // A thread that exits between the listing and this read is left out.
        let with_settings: Vec<_> = found
            .into_iter()
            .filter_map(|t| {
                let s = crate::knob::foreign::as_found(t.tid).ok()?;
                Some((t, s))
            })
            .collect();
        return adhoc::attached(&with_settings).map_err(usage);
    }
    load_preset(preset.unwrap_or(DEFAULT_PRESET))
}

/// A preset by name or path; what is wrong with it is a usage error (exit 2).
pub fn load_preset(name: &str) -> Result<Preset> {
    crate::preset::load(name).map_err(|e| usage(format!("{e:#}")))
}
