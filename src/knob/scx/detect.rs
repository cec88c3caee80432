//! Whether this kernel has sched_ext and which BPF scheduler runs now, read from the
//! kernel config and /sys/kernel/sched_ext below a root directory (fixtures in tests).

use std::path::{Path, PathBuf};

use crate::kconfig::{self, Setting};

/// /sys/kernel/sched_ext/state: the kernel's `scx_enable_state_str`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Enabling,
    Enabled,
    Disabling,
    Disabled,
}

impl State {
    fn parse(text: &str) -> Option<State> {
        Some(match text.trim() {
            "enabling" => State::Enabling,
            "enabled" => State::Enabled,
            "disabling" => State::Disabling,
            "disabled" => State::Disabled,
            _ => return None,
        })
    }

    pub fn word(self) -> &'static str {
        match self {
            State::Enabling => "enabling",
            State::Enabled => "enabled",
            State::Disabling => "disabling",
            State::Disabled => "disabled",
        }
    }
}

/// What the machine under a root says about sched_ext.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scx {
    /// CONFIG_SCHED_CLASS_EXT, when the config could be read.
    pub config: Option<Setting>,
    /// /sys/kernel/sched_ext below the root, when it exists.
    pub sysfs: Option<PathBuf>,
    pub state: Option<State>,
    /// The running BPF scheduler's name (root/ops), while one is loaded.
    pub ops: Option<String>,
    /// How many times a BPF scheduler was loaded since boot.
    pub enable_seq: Option<u64>,
    /// Whether every fair task is switched to sched_ext (not only SCHED_EXT ones).
    pub switch_all: Option<bool>,
    /// Kernel major.minor, for the fair class's name.
    pub kernel: (u32, u32),
}

fn read(path: &Path) -> Option<String> {
    std::fs::read_to_string(path)
        .ok()
        .map(|s| s.trim().to_string())
}

fn version(release: &str) -> (u32, u32) {
    let mut parts = release
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|p| p.parse().ok());
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

fn fair_by_version(kernel: (u32, u32)) -> String {
    match kernel {
        (0, 0) => String::new(),
        k if k >= (6, 6) => "EEVDF".into(),
        _ => "CFS".into(),
    }
}

/// The fair class of a kernel release ("6.18.0" -> EEVDF, from 6.6; CFS before it);
/// empty when the release says no version.
pub fn fair_class(release: &str) -> String {
    fair_by_version(version(release))
}

/// What `root` ("/" for this machine) says about sched_ext.
pub fn detect(root: &Path) -> Scx {
    let config =
        kconfig::read(root).map(|(text, _)| kconfig::setting(&text, "CONFIG_SCHED_CLASS_EXT"));
    let dir = root.join("sys/kernel/sched_ext");
    let sysfs = dir.is_dir().then_some(dir);
    let file = |name: &str| sysfs.as_ref().and_then(|d| read(&d.join(name)));
    let release = read(&root.join("proc/sys/kernel/osrelease")).unwrap_or_default();
    Scx {
        config,
        state: file("state").as_deref().and_then(State::parse),
        ops: file("root/ops").filter(|s| !s.is_empty()),
        enable_seq: file("enable_seq").and_then(|s| s.parse().ok()),
        switch_all: file("switch_all").map(|s| s == "1"),
        sysfs,
        kernel: version(&release),
    }
}

impl Scx {
    /// Why sched_ext cannot be used on this kernel, if it cannot.
    pub fn unavailable(&self) -> Option<String> {
        if self.sysfs.is_some() {
            return None;
        }
        Some(match self.config {
            Some(Setting::Off) => "this kernel is built without CONFIG_SCHED_CLASS_EXT".into(),
            Some(_) => {
                "CONFIG_SCHED_CLASS_EXT is set but /sys/kernel/sched_ext is missing (is sysfs mounted?)"
                    .into()
            }
            None => "this kernel has no /sys/kernel/sched_ext (no sched_ext: CONFIG_SCHED_CLASS_EXT off or a kernel before 6.12)".into(),
        })
    }

    /// The BPF scheduler that runs now, by its ops name ("rusty"), when one is loaded
    /// or on its way in or out.
    pub fn running(&self) -> Option<String> {
        match self.state {
            Some(State::Disabled) | None => None,
            Some(_) => Some(self.ops.clone().unwrap_or_else(|| "?".into())),
        }
    }

    /// The knob's value: `off`, or the running scheduler's name (with the state while it
    /// is switching).
    pub fn value(&self) -> Option<String> {
        self.sysfs.as_ref()?;
        Some(match (self.state, self.running()) {
            (Some(State::Enabled), Some(ops)) => ops,
            (Some(state), Some(ops)) => format!("{ops} ({})", state.word()),
            _ => "off".into(),
        })
    }

    /// The class fair tasks run in now, for the workbench's header: "sched_ext: rusty"
    /// while a BPF scheduler runs, else the fair class of this kernel (EEVDF from 6.6).
    pub fn class(&self) -> String {
        match (self.state, &self.ops) {
            (Some(State::Enabled), Some(ops)) => format!("sched_ext: {ops}"),
            _ => fair_by_version(self.kernel),
        }
    }

    /// One line for `check`: what sched_ext is here.
    pub fn summary(&self) -> String {
        if let Some(why) = self.unavailable() {
            return format!("sched_ext: unavailable ({why})");
        }
        let seq = self
            .enable_seq
            .map(|n| format!(", {n} BPF schedulers loaded since boot"))
            .unwrap_or_default();
        match (self.state, self.running()) {
            (Some(state), Some(ops)) => {
                let all = match self.switch_all {
                    Some(true) => ", all fair tasks switched",
                    Some(false) => ", SCHED_EXT tasks only",
                    None => "",
                };
                format!("sched_ext: {} {ops}{all}{seq}", state.word())
            }
            _ => format!("sched_ext: available, no BPF scheduler loaded{seq}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("assets/fixtures/sched_ext")
            .join(name)
    }

    #[test]
    fn a_kernel_running_scx_rusty() {
        let scx = detect(&fixture("rusty"));
        assert_eq!(scx.config, Some(Setting::Yes));
        assert_eq!(scx.state, Some(State::Enabled));
        assert_eq!(scx.ops.as_deref(), Some("rusty"));
        assert_eq!((scx.enable_seq, scx.switch_all), (Some(3), Some(true)));
        assert_eq!(scx.unavailable(), None);
        assert_eq!(scx.value().as_deref(), Some("rusty"));
        assert_eq!(scx.class(), "sched_ext: rusty");
        assert_eq!(
            scx.summary(),
            "sched_ext: enabled rusty, all fair tasks switched, 3 BPF schedulers loaded since boot"
        );
    }

    #[test]
    fn a_kernel_built_without_sched_ext() {
        let scx = detect(&fixture("without"));
        assert_eq!(scx.config, Some(Setting::Off));
        assert_eq!(
            (scx.sysfs.as_ref(), scx.state, scx.ops.as_ref()),
            (None, None, None)
        );
        assert_eq!(
            scx.unavailable().as_deref(),
            Some("this kernel is built without CONFIG_SCHED_CLASS_EXT")
        );
        assert_eq!(scx.value(), None);
        assert_eq!(scx.class(), "EEVDF");
        assert!(scx
            .summary()
            .starts_with("sched_ext: unavailable (this kernel is built"));
    }

    #[test]
    fn states_between_schedulers_and_older_kernels() {
        let dir = tempfile::tempdir().expect("tempdir");
        let sysfs = dir.path().join("sys/kernel/sched_ext");
        std::fs::create_dir_all(&sysfs).expect("mkdir");
        std::fs::write(sysfs.join("state"), "disabled\n").expect("state");
        let proc = dir.path().join("proc/sys/kernel");
        std::fs::create_dir_all(&proc).expect("mkdir");
        std::fs::write(proc.join("osrelease"), "6.1.0-old\n").expect("release");
        let scx = detect(dir.path());
        // No config file at all: the sysfs directory alone says sched_ext is there.
        assert_eq!((scx.config, scx.unavailable()), (None, None));
        assert_eq!(scx.value().as_deref(), Some("off"));
        assert_eq!(scx.class(), "CFS");
        assert_eq!(
            scx.summary(),
            "sched_ext: available, no BPF scheduler loaded"
        );
        std::fs::write(sysfs.join("state"), "enabling\n").expect("state");
        std::fs::create_dir(sysfs.join("root")).expect("mkdir");
        std::fs::write(sysfs.join("root/ops"), "simple\n").expect("ops");
        let scx = detect(dir.path());
        assert_eq!(scx.value().as_deref(), Some("simple (enabling)"));
        assert_eq!(scx.running().as_deref(), Some("simple"));
        std::fs::write(sysfs.join("state"), "nonsense\n").expect("state");
        assert_eq!(detect(dir.path()).state, None);
        assert_eq!(fair_class("6.5.13"), "CFS");
        assert_eq!(fair_class("6.6.0-rc1"), "EEVDF");
        assert_eq!(fair_class("unknown"), "");
        std::fs::remove_dir_all(&sysfs).expect("rm");
        assert!(detect(dir.path())
            .unavailable()
            .is_some_and(|w| w.contains("no /sys/kernel/sched_ext")));
    }
}
