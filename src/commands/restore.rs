//! `schedlab restore`: put back what a schedlab that died left changed (or discard it).

use std::fmt::Write as _;

use anyhow::Result;

use super::output::emit;
use crate::knob::journal;
use crate::workload::contain;

pub fn restore(discard: bool) -> Result<()> {
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
            let failed = restored.iter().filter(|r| !r.ok()).count();
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
