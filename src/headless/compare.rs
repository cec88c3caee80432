//! `schedlab compare`: run a preset with settings A and B in turns (A B A B ...) and compare the numbers.

use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::{anyhow, Result};

use crate::error::Invalid;
use crate::headless::run::{run, Failed, RunOptions};
use crate::knob::sys::SysKnob;
use crate::knob::sys::SystemKnobs;
use crate::knob::sys::{unthrottled_with_rt, UNTHROTTLED_WITH_RT};
use crate::lab::session::{split, split_typed, untyped};
use crate::preset::setting::{parse_list, Setting};
use crate::preset::Preset;
use crate::report::compare::{CompareReport, Compared, Round, Runs};
use crate::report::RunReport;

/// One side of a comparison: its label ("A") and the settings it runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct Side {
    pub label: String,
    pub settings: Vec<Setting>,
}

impl Side {
    /// A side from `--a`/`--b` text: settings in the `--set` syntax, comma-separated.
    pub fn parse(label: &str, list: &str) -> Result<Side, Invalid> {
        Ok(Side {
            label: label.to_string(),
            settings: parse_list(list)
                .map_err(|e| Invalid(format!("--{}: {e}", label.to_lowercase())))?,
        })
    }
}

/// The preset and run options of one side: task and cgroup settings change the preset,
/// system settings go after the `--set` ones so the side's value wins.
pub fn prepare_side(
    preset: &Preset,
    opts: &RunOptions,
    settings: &[Setting],
) -> Result<(Preset, RunOptions), Invalid> {
    let (task_sets, typed) = split_typed(settings)?;
    let mut p = preset.clone();
    p.apply_all(&task_sets)?;
    p.check_deadline_fields()?;
    crate::knob::cgroup::precheck(&p.cgroups)?;
    p.tasks(&crate::system::online_cpus())?;
    // The same checks as a run's `--set`s, before any run.
    let rt_tasks = p.rt_tasks();
    if typed
        .iter()
        .any(|(set, _)| unthrottled_with_rt(set, rt_tasks, opts.allow_unthrottled_rt))
    {
        return Err(Invalid::new(UNTHROTTLED_WITH_RT));
    }
    let system_sets = untyped(typed);
    let mut o = opts.clone();
    o.system_sets.extend(system_sets);
    // Every run would write the same file over the one before.
    o.csv = None;
    o.record = None;
    Ok((p, o))
}

/// A system knob set on one side only would keep that value in the other side's runs
/// (the journal restores it only at the end), so the other side gets the value the knob
/// has now, before any run.
fn complete_system_sets(
    a: &[Setting],
    b: &[Setting],
    sys: &SystemKnobs,
) -> Result<(Vec<Setting>, Vec<Setting>)> {
    let (_, sys_a) = split(a).map_err(|e| anyhow!("--a: {e}"))?;
    let (_, sys_b) = split(b).map_err(|e| anyhow!("--b: {e}"))?;
    let mut a = a.to_vec();
    let mut b = b.to_vec();
    fill_missing(&sys_a, &sys_b, &mut b, "--b", sys)?;
    fill_missing(&sys_b, &sys_a, &mut a, "--a", sys)?;
    Ok((a, b))
}

fn fill_missing(
    from: &[(SysKnob, Setting)],
    present: &[(SysKnob, Setting)],
    to: &mut Vec<Setting>,
    to_label: &str,
    sys: &SystemKnobs,
) -> Result<()> {
    for (knob, setting) in from {
        if present.iter().any(|(k, _)| k == knob) {
            continue;
        }
        let now = crate::knob::sys::get(knob, &sys.probe).map_err(|e| {
            anyhow!(
                "{setting} is set on one side only and its current value cannot be read ({e}); give {} on {to_label} too",
                knob.name()
            )
        })?;
        to.push(Setting {
            value: now,
            ..setting.clone()
        });
    }
    Ok(())
}

/// Run `preset` with settings `a`, then `b`, `rounds` times, so that drift of the machine
/// hits both sides alike. A run cut short by `opts.stop` is left out (it covers a shorter
/// time than its partner) and ends the comparison.
pub fn compare(
    preset: &Preset,
    a: &[Setting],
    b: &[Setting],
    rounds: usize,
    opts: &RunOptions,
    sys: &mut SystemKnobs,
) -> Result<CompareReport> {
    if rounds == 0 {
        anyhow::bail!("rounds 0: allowed at least 1");
    }
    let (a_full, b_full) = complete_system_sets(a, b, sys)?;
    let sides = [
        prepare_side(preset, opts, &a_full).map_err(|e| anyhow!("--a: {e}"))?,
        prepare_side(preset, opts, &b_full).map_err(|e| anyhow!("--b: {e}"))?,
    ];
    let runs = run_rounds(&sides, rounds, &opts.stop, sys)?;
    let compared = Compared {
        preset: &preset.name,
        a: &a_full,
        b: &b_full,
        duration_s: opts.duration.as_secs_f64(),
    };
    Ok(runs.into_report(&compared, || {
        (
            crate::system::kernel_release(),
            crate::system::online_cpus().count(),
        )
    }))
}

/// A B, A B, ... until `rounds` rounds are done or a run is stopped; the round a stop
/// falls in is kept with the runs it completed.
fn run_rounds(
    sides: &[(Preset, RunOptions); 2],
    rounds: usize,
    stop: &AtomicBool,
    sys: &mut SystemKnobs,
) -> Result<Runs> {
    let mut runs = Runs::default();
    let progress = crate::report::progress::steps("compare", 2 * rounds as u64, true);
    for n in 0..rounds {
        let mut round: Round = [None, None];
        for (slot, ((p, o), side)) in round.iter_mut().zip(sides.iter().zip(["A", "B"])) {
            progress.set_message(format!("round {} {side}", n + 1));
            let result = run_unless_stopped(p, o, stop, sys);
            progress.inc(1);
            match result? {
                // Its numbers measure nothing: no ratio is made of them.
                Some(r) if !r.failed.is_empty() => {
                    return Err(anyhow::Error::new(Failed(format!(
                        "round {} {side} failed, and a failed run is not compared:{}",
                        n + 1,
                        r.failure_text().unwrap_or_default()
                    ))));
                }
                Some(r) => *slot = Some(runs.record(&r)),
                None => runs.interrupted = true,
            }
            if runs.interrupted {
                break;
            }
        }
        runs.rounds.push(round);
        if runs.interrupted {
            break;
        }
    }
    Ok(runs)
}

/// One run, or `None` if the user stopped the comparison before or during it.
fn run_unless_stopped(
    p: &Preset,
    o: &RunOptions,
    stop: &AtomicBool,
    sys: &mut SystemKnobs,
) -> Result<Option<RunReport>> {
    if stop.load(Ordering::Relaxed) {
        return Ok(None);
    }
    let r = run(p, o, sys)?;
    Ok(Some(r).filter(|r| !r.interrupted))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sides_parse_comma_lists() {
        let s = Side::parse("A", "writer.policy=batch,reader.cpus=0,1").unwrap();
        assert_eq!(s.settings.len(), 2);
        assert_eq!(s.settings[1].value, "0,1");
        let e = Side::parse("B", "writer=batch").unwrap_err().0;
        assert!(e.starts_with("--b: bad setting"), "{e}");
    }
}
