//! What every JSON document says about itself and the machine: versions, time, host, argv.

use std::io::Read as _;
use std::sync::OnceLock;
use std::time::SystemTime;

use serde::Serialize;

/// The shape of the JSON documents; raised when a field is renamed or removed.
pub const SCHEMA_VERSION: u32 = 3;

static START: OnceLock<SystemTime> = OnceLock::new();

/// Note when the command started (call first thing in main); `start_time` says it.
pub fn mark_start() {
    START.get_or_init(SystemTime::now);
}

/// The document's header, put beside its own fields.
#[derive(Clone, Debug, Serialize)]
pub struct Meta {
    pub schema_version: u32,
    pub schedlab_version: String,
    /// RFC 3339, UTC, when the command started.
    pub start_time: String,
    pub host: String,
    pub kernel: String,
    pub argv: Vec<String>,
    pub machine: Machine,
}

/// Facts about the machine that change what the numbers mean.
#[derive(Clone, Debug, Serialize)]
pub struct Machine {
    /// Online CPUs.
    pub cpus: usize,
    /// A hypervisor's name (DMI vendor), "yes" when only the CPU's hypervisor flag says
    /// so, None on bare metal.
    pub virtualization: Option<String>,
    /// The kernel's tick rate (CONFIG_HZ), when its config is readable.
    pub tick_hz: Option<u32>,
    /// The unit of /proc times (USER_HZ).
    pub user_hz: u64,
    /// "none", "voluntary", "full", "lazy" or "rt"; "dynamic" when the kernel can switch
    /// and debugfs does not say which is chosen; None when unknown.
    pub preemption: Option<String>,
    /// `uname -v`, which the preemption model is read from when debugfs is not.
    pub kernel_version: String,
}

impl Meta {
    pub fn now() -> Meta {
        let uts = nix::sys::utsname::uname().ok();
        let field = |f: fn(&nix::sys::utsname::UtsName) -> &std::ffi::OsStr| {
            uts.as_ref()
                .map(|u| f(u).to_string_lossy().into_owned())
                .unwrap_or_default()
        };
        let version = field(|u| u.version());
        Meta {
            schema_version: SCHEMA_VERSION,
            schedlab_version: env!("SCHEDLAB_VERSION").to_string(),
            start_time: humantime::format_rfc3339_seconds(*START.get_or_init(SystemTime::now))
                .to_string(),
            host: field(|u| u.nodename()),
            kernel: field(|u| u.release()),
            argv: std::env::args().collect(),
            machine: Machine {
                cpus: crate::system::online_cpus().count(),
                virtualization: virtualization(),
                tick_hz: kernel_config()
                    .as_deref()
                    .and_then(|c| config_value(c, "CONFIG_HZ"))
                    .and_then(|v| v.parse().ok()),
                user_hz: crate::system::clock_ticks_per_s(),
                preemption: std::fs::read_to_string("/sys/kernel/debug/sched/preempt")
                    .ok()
                    .and_then(|s| chosen_preemption(&s))
                    .or_else(|| preemption_from_uname(&version)),
                kernel_version: version,
            },
        }
    }
}

/// `doc`'s fields with the header's beside them (the header wins a clash: a report's
/// own `kernel` is the same release).
pub fn stamp<T: Serialize>(doc: &T) -> serde_json::Result<serde_json::Value> {
    let mut value = serde_json::to_value(doc)?;
    if let (serde_json::Value::Object(map), serde_json::Value::Object(meta)) =
        (&mut value, serde_json::to_value(Meta::now())?)
    {
        map.extend(meta);
    }
    Ok(value)
}

fn virtualization() -> Option<String> {
    let dmi = |f: &str| {
        std::fs::read_to_string(format!("/sys/class/dmi/id/{f}"))
            .ok()
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    let flagged = std::fs::read_to_string("/proc/cpuinfo")
        .map(|s| has_hypervisor_flag(&s))
        .unwrap_or(false);
    if !flagged {
        return None;
    }
    Some(dmi("sys_vendor").unwrap_or_else(|| "yes".into()))
}

/// Whether /proc/cpuinfo's flags include `hypervisor` (set by every x86 hypervisor).
fn has_hypervisor_flag(cpuinfo: &str) -> bool {
    cpuinfo
        .lines()
        .filter(|l| l.starts_with("flags"))
        .any(|l| l.split_whitespace().any(|f| f == "hypervisor"))
}

/// The kernel's build config, from /proc/config.gz or /boot/config-RELEASE.
fn kernel_config() -> Option<String> {
    if let Ok(f) = std::fs::File::open("/proc/config.gz") {
        let mut s = String::new();
        if flate2::read::GzDecoder::new(f)
            .read_to_string(&mut s)
            .is_ok()
        {
            return Some(s);
        }
    }
    std::fs::read_to_string(format!("/boot/config-{}", crate::system::kernel_release())).ok()
}

fn config_value<'a>(config: &'a str, name: &str) -> Option<&'a str> {
    config
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
}

/// The model in parentheses of debugfs's `none voluntary (full) lazy`.
fn chosen_preemption(s: &str) -> Option<String> {
    s.split_whitespace()
        .find_map(|w| w.strip_prefix('(')?.strip_suffix(')'))
        .map(str::to_string)
}

/// What `uname -v` says: PREEMPT_RT, PREEMPT_DYNAMIC (switchable), PREEMPT (full).
fn preemption_from_uname(version: &str) -> Option<String> {
    let words: Vec<&str> = version.split_whitespace().collect();
    let model = if words.contains(&"PREEMPT_RT") {
        "rt"
    } else if words.contains(&"PREEMPT_DYNAMIC") {
        "dynamic"
    } else if words.contains(&"PREEMPT") {
        "full"
    } else {
        return None;
    };
    Some(model.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preemption_is_read_from_debugfs_and_uname() {
        assert_eq!(
            chosen_preemption("none voluntary (full) lazy\n").as_deref(),
            Some("full")
        );
        assert_eq!(chosen_preemption("none voluntary full"), None);
        assert_eq!(
            preemption_from_uname("#1 SMP PREEMPT_DYNAMIC @0").as_deref(),
            Some("dynamic")
        );
        assert_eq!(
            preemption_from_uname("#1 SMP PREEMPT Tue").as_deref(),
            Some("full")
        );
        assert_eq!(preemption_from_uname("#1 SMP Tue"), None);
    }

    #[test]
    fn config_and_cpuinfo_fields_are_found() {
        let config = "# CONFIG_HZ_100 is not set\nCONFIG_HZ_1000=y\nCONFIG_HZ=1000\n";
        assert_eq!(config_value(config, "CONFIG_HZ"), Some("1000"));
        assert!(has_hypervisor_flag(
            "flags\t\t: fpu vme hypervisor lahf_lm\n"
        ));
        assert!(!has_hypervisor_flag(
            "flags\t\t: fpu vme\nmodel name: hypervisor\n"
        ));
    }
}
