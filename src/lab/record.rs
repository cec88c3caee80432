//! Recordings: every sample and every knob change of a run or a TUI session, written as
//! versioned JSON lines, and read back for `schedlab replay`.
//!
//! Format (version 1), one JSON object per line:
//! - first line: `{"schedlab_recording": 1, "created_unix_s": N, "schedlab": "0.1.0"}`
//! - `{"kind": "started", "t_ns": N, "info": Started}`: a workload started (preset, tasks,
//!   kernel, CPUs); a recording may hold several (restarts, preset switches);
//! - `{"kind": "batch", "t_ns": N, "batch": Batch}`: one sampling round, raw counters
//!   (latency histograms sparse: `[bucket, count]` pairs);
//! - `{"kind": "knob", "t_ns": N, "setting": "writer.policy=batch", "ok": true, "result": "..."}`;
//! - `{"kind": "system_knobs", "t_ns": N, "knobs": [KnobInfo]}`.
//!
//! `t_ns` is CLOCK_MONOTONIC. Readers skip kinds they do not know, so later versions can
//! add kinds without breaking older replays; a changed meaning bumps the version.

use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use crate::clock::monotonic_ns;
use crate::error::KnobError;
use crate::knob::sys::KnobInfo;
use crate::lab::describe::Started;
use crate::sampler::Batch;

pub const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Header {
    schedlab_recording: u32,
    created_unix_s: u64,
    schedlab: String,
}

/// One line after the header.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Record {
    Started {
        t_ns: u64,
        info: Box<Started>,
    },
    Batch {
        t_ns: u64,
        batch: Box<Batch>,
    },
    Knob {
        t_ns: u64,
        setting: String,
        ok: bool,
        result: String,
    },
    SystemKnobs {
        t_ns: u64,
        knobs: Vec<KnobInfo>,
    },
}

impl Record {
    pub fn t_ns(&self) -> u64 {
        match self {
            Record::Started { t_ns, .. }
            | Record::Batch { t_ns, .. }
            | Record::Knob { t_ns, .. }
            | Record::SystemKnobs { t_ns, .. } => *t_ns,
        }
    }
}

/// A recording that could not start (the file exists, a bad directory).
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("{0}")]
pub struct RecordError(pub String);

/// Receives what happens during a session.
pub trait Recorder: Send {
    /// What the experiment is, stamped `t_ns`: before every round the recording will
    /// hold (a replay sorts by time and starts at this record).
    fn started(&mut self, t_ns: u64, s: &Started);
    fn batch(&mut self, b: &Batch);
    fn knob(&mut self, setting: &str, result: &Result<String, KnobError>);
    fn system_knobs(&mut self, knobs: &[KnobInfo]);
}

/// Writes a recording file; flushes at least every second and when dropped.
pub struct FileRecorder {
    out: BufWriter<File>,
    last_flush: Instant,
    failed: bool,
}

impl FileRecorder {
    pub fn create(path: &Path) -> Result<FileRecorder> {
        // Exclusive, and never through a symlink: a file planted where a recording will go
        // (the workbench names them by the time) is not overwritten.
        let file = crate::state::create_new(path).map_err(|e| {
            if e.kind() == std::io::ErrorKind::AlreadyExists || e.raw_os_error() == Some(libc::ELOOP) {
                anyhow::anyhow!(
                    "recording {} already exists (schedlab never writes over a file or through a symlink there): choose another name",
                    path.display()
                )
            } else {
                anyhow::anyhow!("creating recording {}: {e}", path.display())
            }
        })?;
        let mut out = BufWriter::new(file);
        let header = Header {
            schedlab_recording: VERSION,
            created_unix_s: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs()),
            schedlab: env!("CARGO_PKG_VERSION").into(),
        };
        writeln!(out, "{}", serde_json::to_string(&header)?)?;
        Ok(FileRecorder {
            out,
            last_flush: Instant::now(),
            failed: false,
        })
    }

    fn write(&mut self, r: &Record) {
        if self.failed {
            return;
        }
        let ok = serde_json::to_string(r)
            .ok()
            .is_some_and(|line| writeln!(self.out, "{line}").is_ok());
        if !ok {
            // A full disk must not take the session down; the recording just ends.
            self.failed = true;
            return;
        }
        if self.last_flush.elapsed() > Duration::from_secs(1) {
            let _ = self.out.flush();
            self.last_flush = Instant::now();
        }
    }
}

impl Recorder for FileRecorder {
    fn started(&mut self, t_ns: u64, s: &Started) {
        self.write(&Record::Started {
            t_ns,
            info: Box::new(s.clone()),
        });
    }
    fn batch(&mut self, b: &Batch) {
        self.write(&Record::Batch {
            t_ns: b.t_ns,
            batch: Box::new(b.clone()),
        });
    }
    fn knob(&mut self, setting: &str, result: &Result<String, KnobError>) {
        let (ok, result) = match result {
            Ok(v) => (true, v.clone()),
            Err(e) => (false, e.to_string()),
        };
        self.write(&Record::Knob {
            t_ns: monotonic_ns(),
            setting: setting.into(),
            ok,
            result,
        });
    }
    fn system_knobs(&mut self, knobs: &[KnobInfo]) {
        self.write(&Record::SystemKnobs {
            t_ns: monotonic_ns(),
            knobs: knobs.to_vec(),
        });
    }
}

impl Drop for FileRecorder {
    fn drop(&mut self) {
        let _ = self.out.flush();
    }
}

/// The longest line a recording may have. A batch of hundreds of tasks with their
/// histograms is well under a MiB; without a bound, a file whose size on disk says
/// nothing (/proc/self/pagemap: 0 bytes, then zeros for gigabytes) fills memory with
/// one line.
const MAX_LINE_BYTES: u64 = 64 << 20;

/// Read a recording: every record in time order. Unknown kinds are skipped; a torn
/// last line (a recording cut short) is ignored.
pub fn read(path: &Path) -> Result<Vec<Record>> {
    let name = format!("recording {}", path.display());
    let file = crate::input::open_bounded(path, crate::input::MAX_RECORDING_BYTES, &name)
        .with_context(|| format!("cannot replay {}", path.display()))?;
    let mut reader = BufReader::new(file);
    let first = next_line(&mut reader, &name)?.unwrap_or_default();
    let header: Header = serde_json::from_str(&first).map_err(|_| {
        anyhow::anyhow!(
            "{} is not a schedlab recording (no header line)",
            path.display()
        )
    })?;
    if header.schedlab_recording != VERSION {
        bail!(
            "{} is a version {} recording; this schedlab reads version {VERSION}",
            path.display(),
            header.schedlab_recording
        );
    }
    let mut out = Vec::new();
    while let Some(line) = next_line(&mut reader, &name)? {
        if let Ok(r) = serde_json::from_str::<Record>(&line) {
            out.push(r);
        }
    }
    if !out.iter().any(|r| matches!(r, Record::Started { .. })) {
        bail!("{} has no started workload to replay", path.display());
    }
    out.sort_by_key(Record::t_ns);
    Ok(out)
}

/// The next line of `reader` without its line break, None at the end; a line longer
/// than [`MAX_LINE_BYTES`] is an error. Bytes that are not UTF-8 (a line torn in the
/// middle of a character) make a line that parses as no record.
fn next_line<R: BufRead>(reader: &mut R, name: &str) -> Result<Option<String>> {
    let mut buf = Vec::new();
    let n = std::io::Read::take(reader, MAX_LINE_BYTES + 1)
        .read_until(b'\n', &mut buf)
        .with_context(|| format!("reading {name}"))?;
    if n == 0 {
        return Ok(None);
    }
    if buf.len() as u64 > MAX_LINE_BYTES {
        bail!("{name} has a line of more than {MAX_LINE_BYTES} bytes; allowed at most {MAX_LINE_BYTES} per line");
    }
    if buf.last() == Some(&b'\n') {
        buf.pop();
    }
    Ok(Some(String::from_utf8_lossy(&buf).into_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::KnobError;
    use crate::lab::fixtures::{batch, knobs, started};

    #[test]
    fn a_recording_round_trips() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.jsonl");
        let mut b = batch(3);
        b.tasks[0].latency = crate::histogram::Histogram::from_values([1500, 1600, 90_000]);
        {
            let mut rec = FileRecorder::create(&path).expect("create");
            rec.started(monotonic_ns(), &started());
            rec.system_knobs(&knobs());
            rec.batch(&b);
            rec.knob("fair.policy=batch", &Ok("applied to fair".into()));
            rec.knob("fair.nice=99", &Err(KnobError::invalid("allowed -20..19")));
        }
        let records = read(&path).expect("read");
        assert_eq!(records.len(), 5);
        let got_batch = records.iter().find_map(|r| match r {
            Record::Batch { batch, .. } => Some(batch.clone()),
            _ => None,
        });
        assert_eq!(
            got_batch.as_deref(),
            Some(&b),
            "batches come back exactly, histograms too"
        );
        assert!(records.iter().any(
            |r| matches!(r, Record::Started { info, .. } if info.preset.name == "rt-throttle")
        ));
        assert!(records.iter().any(
            |r| matches!(r, Record::Knob { ok: false, result, .. } if result.contains("-20..19"))
        ));
        let text = std::fs::read_to_string(&path).expect("text");
        assert!(text.starts_with("{\"schedlab_recording\":1"));
        assert!(
            text.len() < 20_000,
            "histograms are stored sparsely: {} bytes",
            text.len()
        );
    }

    #[test]
    fn readers_skip_unknown_kinds_and_torn_lines_and_refuse_other_versions() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("r.jsonl");
        let started = serde_json::to_string(&Record::Started {
            t_ns: 1,
            info: Box::new(started()),
        })
        .expect("json");
        std::fs::write(&path, format!("{{\"schedlab_recording\":1,\"created_unix_s\":0,\"schedlab\":\"x\"}}\n{started}\n{{\"kind\":\"future\",\"t_ns\":2}}\n{{\"kind\":\"batch\",\"t_")).expect("write");
        assert_eq!(read(&path).expect("read").len(), 1);
        std::fs::write(
            &path,
            "{\"schedlab_recording\":2,\"created_unix_s\":0,\"schedlab\":\"x\"}\n",
        )
        .expect("write");
        assert!(read(&path).unwrap_err().to_string().contains("version 2"));
        std::fs::write(&path, "hello\n").expect("write");
        assert!(read(&path)
            .unwrap_err()
            .to_string()
            .contains("not a schedlab recording"));
    }
}
