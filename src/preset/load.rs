//! Finding presets: the built-ins embedded from `presets/`, the user's own directory,
//! and files named by path.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::Preset;

/// The preset `schedlab` and `schedlab run` use when none is named.
pub const DEFAULT_PRESET: &str = "pipe-wakeup";

/// The built-in presets, embedded in the binary.
pub const BUILTIN: &[(&str, &str)] = &[
    (
        "pipe-wakeup",
        include_str!("../../presets/pipe-wakeup.toml"),
    ),
    (
        "pipe-affinity",
        include_str!("../../presets/pipe-affinity.toml"),
    ),
    (
        "yield-latency",
        include_str!("../../presets/yield-latency.toml"),
    ),
    (
        "rt-throttle",
        include_str!("../../presets/rt-throttle.toml"),
    ),
    (
        "nice-ladder",
        include_str!("../../presets/nice-ladder.toml"),
    ),
    (
        "parallel-build",
        include_str!("../../presets/parallel-build.toml"),
    ),
    (
        "cgroup-fairness",
        include_str!("../../presets/cgroup-fairness.toml"),
    ),
    (
        "eevdf-slice",
        include_str!("../../presets/eevdf-slice.toml"),
    ),
    (
        "deadline-cbs",
        include_str!("../../presets/deadline-cbs.toml"),
    ),
    (
        "load-balance",
        include_str!("../../presets/load-balance.toml"),
    ),
    (
        "priority-inversion",
        include_str!("../../presets/priority-inversion.toml"),
    ),
    (
        "cpu-bandwidth",
        include_str!("../../presets/cpu-bandwidth.toml"),
    ),
];

/// `$XDG_CONFIG_HOME/schedlab/presets`, or `~/.config/schedlab/presets`.
pub fn user_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))?;
    Some(base.join("schedlab").join("presets"))
}

fn load_file(path: &Path) -> Result<Preset> {
    let text = crate::input::read_bounded(path, crate::input::MAX_CONFIG_BYTES, "the preset file")
        .with_context(|| format!("cannot read preset file {}", path.display()))?;
    Preset::parse(&text, &path.display().to_string())
}

/// A preset by name (user dir first, then built-in) or by path to a TOML file.
pub fn load(name_or_path: &str) -> Result<Preset> {
    load_in(name_or_path, user_dir().as_deref())
}

/// [`load`] with an explicit user preset directory.
pub fn load_in(name_or_path: &str, user_dir: Option<&Path>) -> Result<Preset> {
    let as_path = Path::new(name_or_path);
    if name_or_path.contains('/') || name_or_path.ends_with(".toml") {
        return load_file(as_path);
    }
    if let Some(dir) = user_dir {
        let p = dir.join(format!("{name_or_path}.toml"));
        if p.is_file() {
            return load_file(&p);
        }
    }
    if let Some((_, text)) = BUILTIN.iter().find(|(n, _)| *n == name_or_path) {
        return Preset::parse(text, "built-in");
    }
    let names: Vec<String> = list_in(user_dir)
        .into_iter()
        .filter_map(|r| r.ok())
        .map(|p| p.name)
        .collect();
    bail!(
        "unknown preset \"{name_or_path}\": available are {} (or give a path to a .toml file)",
        names.join(", ")
    )
}

/// Every preset: built-ins, replaced or joined by the user's own. A broken user file
/// shows up as an error entry instead of hiding the rest.
pub fn list() -> Vec<Result<Preset>> {
    list_in(user_dir().as_deref())
}

/// [`list`] with an explicit user preset directory.
pub fn list_in(user_dir: Option<&Path>) -> Vec<Result<Preset>> {
    let builtins = BUILTIN
        .iter()
        .map(|(_, text)| Preset::parse(text, "built-in"))
        .collect();
    crate::input::with_user_files(builtins, user_dir, load_file, |p: &Preset| &p.name)
}

#[cfg(test)]
mod tests {
    use super::super::fixtures::two_cpus;
    use super::*;

    #[test]
    fn every_builtin_parses_and_expands() {
        for (name, text) in BUILTIN {
            let p = Preset::parse(text, "built-in").expect(name);
            assert_eq!(p.name, *name);
            assert!(!p.note.is_empty() && !p.summary.is_empty());
            let tasks = p.tasks(&two_cpus()).expect(name);
            assert!(!tasks.is_empty());
            for v in &p.variants {
                let mut copy = p.clone();
                copy.apply_all(&v.set).expect("variant applies");
            }
        }
    }

    /// rt-throttle's note says which RT mechanism this kernel has, in place of the
    /// placeholder the file holds.
    #[test]
    fn the_rt_throttle_note_names_this_kernels_rt_mechanism() {
        let raw = BUILTIN
            .iter()
            .find(|(n, _)| *n == "rt-throttle")
            .map(|(_, t)| *t)
            .expect("built-in");
        assert!(raw.contains(crate::facts::RT_BANDWIDTH_HERE));
        let p = Preset::parse(raw, "built-in").expect("parses");
        assert!(!p.note.contains('{'), "{}", p.note);
        assert!(p
            .note
            .contains(crate::facts::RtBandwidth::running().sentence()));
    }

    #[test]
    fn user_presets_load_by_path_and_from_the_config_dir() {
        let dir = tempfile::tempdir().expect("tempdir");
        let presets = dir.path().join("schedlab").join("presets");
        std::fs::create_dir_all(&presets).expect("mkdir");
        let text = "name='mine'\nsummary='s'\nnote='n'\n[metric]\nheadline='throughput'\ntask='a'\n[[task]]\nname='a'\nworker='spin'\n";
        let file = presets.join("mine.toml");
        std::fs::write(&file, text).expect("write");
        let by_path = load(file.to_str().expect("utf8")).expect("by path");
        assert_eq!(by_path.name, "mine");
        let by_name = load_in("mine", Some(&presets)).expect("from the config dir");
        assert_eq!(by_name.source, file.display().to_string());
        // A user file named like a built-in replaces it.
        let own = text.replace("'mine'", "'pipe-wakeup'");
        std::fs::write(presets.join("pipe-wakeup.toml"), own).expect("write");
        let listed = list_in(Some(&presets));
        let pw: Vec<_> = listed
            .iter()
            .flatten()
            .filter(|p| p.name == "pipe-wakeup")
            .collect();
        assert_eq!(pw.len(), 1);
        assert_ne!(pw[0].source, "built-in");
        std::fs::write(presets.join("broken.toml"), "name=").expect("write");
        assert!(list_in(Some(&presets)).iter().any(|r| r.is_err()));
        assert!(load("/nonexistent/x.toml")
            .unwrap_err()
            .to_string()
            .contains("cannot read preset file"));
        let err = load("no-such-preset").unwrap_err().to_string();
        assert!(
            err.contains("pipe-wakeup") && err.contains("nice-ladder"),
            "{err}"
        );
    }
}
