//! Files a user hands schedlab (presets, lessons, key bindings, recordings), read with a
//! bound: a file larger than what it could sensibly be is refused before it is read.

use std::io::Read;
use std::path::Path;

/// The largest preset or key-binding file schedlab reads (the built-ins are ~3 KiB).
pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
/// The largest recording `replay` reads: hours of samples of dozens of tasks.
pub const MAX_RECORDING_BYTES: u64 = 1 << 30;

/// The built-ins, then each `*.toml` of the user's directory in name order, loaded: a
/// user file replaces the built-in of its name, and a broken one is an error entry
/// rather than hiding the rest (presets and lessons are found so).
pub fn with_user_files<T>(
    builtins: Vec<anyhow::Result<T>>,
    user_dir: Option<&Path>,
    load: impl Fn(&Path) -> anyhow::Result<T>,
    name: impl Fn(&T) -> &str,
) -> Vec<anyhow::Result<T>> {
    let mut out = builtins;
    let Some(Ok(entries)) = user_dir.map(std::fs::read_dir) else {
        return out;
    };
    let mut files: Vec<std::path::PathBuf> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    for f in files {
        let loaded = load(&f);
        if let Ok(new) = &loaded {
            out.retain(|o| o.as_ref().map_or(true, |b| name(b) != name(new)));
        }
        out.push(loaded);
    }
    out
}

/// Read `path` as text if it is at most `limit` bytes; `what` names it in the error.
pub fn read_bounded(path: &Path, limit: u64, what: &str) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    let len = file.metadata()?.len();
    if len > limit {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("{what} is {len} bytes; allowed at most {limit}"),
        ));
    }
    let mut text = String::new();
    // take(): a file that grows while it is read still stops at the bound.
    file.take(limit).read_to_string(&mut text)?;
    Ok(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_over_the_bound_is_refused_unread() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("big.toml");
        std::fs::write(&path, vec![b'a'; 2048]).expect("write");
        let err = read_bounded(&path, 1024, "preset big.toml").unwrap_err();
        assert_eq!(
            err.to_string(),
            "preset big.toml is 2048 bytes; allowed at most 1024"
        );
        assert_eq!(read_bounded(&path, 4096, "x").expect("fits").len(), 2048);
    }
}
