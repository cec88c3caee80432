//! The running kernel's build config (/proc/config.gz, else /boot/config-RELEASE), read
//! below a root directory so tests can point it at a fixture tree.

use std::io::Read;
use std::path::Path;
use std::sync::OnceLock;

/// Bigger than any real config (a distribution kernel's is ~300 KiB): a bound on what a
/// forged or corrupt file can make us inflate.
const MAX_CONFIG: u64 = 16 << 20;

/// How one option is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Setting {
    /// `=y`
    Yes,
    /// `=m`
    Module,
    /// `# CONFIG_X is not set`, or absent from a config that was read.
    Off,
    /// Any other value (a number, a string).
    Value,
}

/// The build config of the kernel running under `root` ("/" for this machine): its
/// text, and where it came from. None when neither file can be read. This machine's is
/// read once: a running kernel's config does not change, and the knob list asks for it
/// after every system knob change (inflating config.gz each time cost milliseconds).
pub fn read(root: &Path) -> Option<(String, String)> {
    if root == Path::new("/") {
        static RUNNING: OnceLock<Option<(String, String)>> = OnceLock::new();
        return RUNNING.get_or_init(|| read_below(root)).clone();
    }
    read_below(root)
}

fn read_below(root: &Path) -> Option<(String, String)> {
    let gz = root.join("proc/config.gz");
    if let Ok(f) = std::fs::File::open(&gz) {
        let mut text = String::new();
        let mut inflated = flate2::read::GzDecoder::new(f).take(MAX_CONFIG);
        if inflated.read_to_string(&mut text).is_ok() && !text.is_empty() {
            return Some((text, gz.display().to_string()));
        }
    }
    let release = std::fs::read_to_string(root.join("proc/sys/kernel/osrelease")).ok()?;
    let boot = root.join(format!("boot/config-{}", release.trim()));
    let text = std::fs::read_to_string(&boot).ok()?;
    Some((text, boot.display().to_string()))
}

/// How `name` (with its `CONFIG_` prefix) is set in `config`.
pub fn setting(config: &str, name: &str) -> Setting {
    let not_set = format!("# {name} is not set");
    for line in config.lines() {
        if line.trim_end() == not_set {
            return Setting::Off;
        }
        if let Some(value) = line.strip_prefix(name).and_then(|r| r.strip_prefix('=')) {
            return match value.trim() {
                "y" => Setting::Yes,
                "m" => Setting::Module,
                "n" => Setting::Off,
                _ => Setting::Value,
            };
        }
    }
    Setting::Off
}

/// The value `name` (with its `CONFIG_` prefix) is set to, as written (`y`, `250`...).
pub fn value<'a>(config: &'a str, name: &str) -> Option<&'a str> {
    config
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_are_told_apart_by_their_whole_name() {
        let config = "CONFIG_SCHED_CLASS_EXT=y\n# CONFIG_UCLAMP_TASK is not set\n\
                      CONFIG_HZ=250\nCONFIG_BPF_JIT=m\nCONFIG_HZ_250=y\n";
        assert_eq!(setting(config, "CONFIG_SCHED_CLASS_EXT"), Setting::Yes);
        assert_eq!(setting(config, "CONFIG_UCLAMP_TASK"), Setting::Off);
        assert_eq!(setting(config, "CONFIG_HZ"), Setting::Value);
        assert_eq!(setting(config, "CONFIG_BPF_JIT"), Setting::Module);
        // A prefix of another option is not that option.
        assert_eq!(setting(config, "CONFIG_SCHED_CLASS"), Setting::Off);
        assert_eq!(setting("", "CONFIG_HZ"), Setting::Off);
    }

    #[test]
    fn reads_the_gzip_file_first_then_boot_by_release() {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/fixtures/sched_ext");
        let (without, from) = read(&fixtures.join("without")).expect("config.gz");
        assert!(from.ends_with("proc/config.gz"), "{from}");
        assert_eq!(setting(&without, "CONFIG_SCHED_CLASS_EXT"), Setting::Off);
        assert_eq!(setting(&without, "CONFIG_BPF_SYSCALL"), Setting::Yes);
        let (with, from) = read(&fixtures.join("rusty")).expect("boot config");
        assert!(from.ends_with("boot/config-6.12.0-scx"), "{from}");
        assert_eq!(setting(&with, "CONFIG_SCHED_CLASS_EXT"), Setting::Yes);
        let empty = tempfile::tempdir().expect("tempdir");
        assert_eq!(read(empty.path()), None);
    }
}
