//! What every JSON document says about itself and the machine: versions, time, host, argv.

use std::path::Path;
use std::sync::OnceLock;
use std::time::SystemTime;

use serde::Serialize;

use crate::kconfig::value as config_value;

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
    /// /proc/cpuinfo's first `model name`.
    pub cpu_model: Option<String>,
    /// Whether /proc/cpuinfo's flags include `hypervisor`.
    pub hypervisor_flag: bool,
    /// /sys/class/dmi/id/sys_vendor and product_name (None where the machine has no DMI).
    pub sys_vendor: Option<String>,
    pub product_name: Option<String>,
    /// The model in use: debugfs's choice, the only one the build has, or
    /// "unknown (debugfs locked)" / "unknown (debugfs not mounted)".
    pub preempt_model: String,
    /// What the build allows, from CONFIG_PREEMPT*: "dynamic (default none)", "full", ...
    pub preempt_config: Option<String>,
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
        let config = kernel_config();
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let preempt_config = config.as_deref().and_then(preempt_config);
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
                tick_hz: config.as_deref().and_then(hz_of),
                user_hz: crate::system::clock_ticks_per_s(),
                preemption: std::fs::read_to_string("/sys/kernel/debug/sched/preempt")
                    .ok()
                    .and_then(|s| chosen_preemption(&s))
                    .or_else(|| preemption_from_uname(&version)),
                preempt_model: preempt_model(&version, preempt_config.as_deref()),
                preempt_config,
                kernel_version: version,
                cpu_model: cpuinfo_field(&cpuinfo, "model name"),
                hypervisor_flag: has_hypervisor_flag(&cpuinfo),
                sys_vendor: dmi("sys_vendor"),
                product_name: dmi("product_name"),
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

/// The kernel's tick rate (CONFIG_HZ), when its config is readable.
pub fn tick_hz() -> Option<u32> {
    kernel_config().as_deref().and_then(hz_of)
}

fn hz_of(config: &str) -> Option<u32> {
    config_value(config, "CONFIG_HZ")?.parse().ok()
}

fn dmi(f: &str) -> Option<String> {
    std::fs::read_to_string(format!("/sys/class/dmi/id/{f}"))
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The first `name : value` line's value of /proc/cpuinfo.
fn cpuinfo_field(cpuinfo: &str, name: &str) -> Option<String> {
    cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == name).then(|| v.trim().to_string())
    })
}

/// The preemption models the build allows, from its CONFIG_PREEMPT* lines.
fn preempt_config(config: &str) -> Option<String> {
    let set = |name: &str| config_value(config, name) == Some("y");
    let default = [
        ("CONFIG_PREEMPT_RT", "rt"),
        ("CONFIG_PREEMPT_LAZY", "lazy"),
        ("CONFIG_PREEMPT", "full"),
        ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
        ("CONFIG_PREEMPT_NONE", "none"),
    ]
    .iter()
    .find(|(name, _)| set(name))
    .map(|(_, model)| *model)?;
    Some(if set("CONFIG_PREEMPT_DYNAMIC") {
        format!("dynamic (default {default})")
    } else {
        default.to_string()
    })
}

/// The model in use: debugfs says which a dynamic kernel chose; a fixed build has one.
fn preempt_model(version: &str, config: Option<&str>) -> String {
    let debugfs = std::fs::read_to_string("/sys/kernel/debug/sched/preempt");
    preempt_model_of(debugfs, version, config)
}

fn preempt_model_of(
    debugfs: std::io::Result<String>,
    version: &str,
    config: Option<&str>,
) -> String {
    match debugfs {
        Ok(s) => chosen_preemption(&s).unwrap_or_else(|| "unknown (unreadable)".into()),
        Err(e) => {
            let dynamic = config.map_or(version.contains("PREEMPT_DYNAMIC"), |c| {
                c.starts_with("dynamic")
            });
            match config {
                Some(fixed) if !dynamic => fixed.to_string(),
                _ if e.raw_os_error() == Some(libc::ENOENT)
                    && !Path::new("/sys/kernel/debug/sched").exists() =>
                {
                    "unknown (debugfs not mounted)".into()
                }
                _ => "unknown (debugfs locked)".into(),
            }
        }
    }
}

fn virtualization() -> Option<String> {
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

/// The running kernel's build config.
fn kernel_config() -> Option<String> {
    crate::kconfig::read(Path::new("/")).map(|(text, _)| text)
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
    fn preempt_config_names_the_default_and_dynamic() {
        let dynamic =
            "CONFIG_PREEMPT_NONE=y\n# CONFIG_PREEMPT is not set\nCONFIG_PREEMPT_DYNAMIC=y\n";
        assert_eq!(
            preempt_config(dynamic).as_deref(),
            Some("dynamic (default none)")
        );
        assert_eq!(
            preempt_config("CONFIG_PREEMPT=y\nCONFIG_PREEMPT_COUNT=y\n").as_deref(),
            Some("full")
        );
        assert_eq!(preempt_config("CONFIG_HZ=250\n"), None);
        // A fixed build has one model, whatever debugfs says or not.
        let eperm = || Err(std::io::Error::from_raw_os_error(libc::EPERM));
        assert_eq!(
            preempt_model_of(eperm(), "#1 SMP", Some("voluntary")),
            "voluntary"
        );
        assert_eq!(
            preempt_model_of(
                eperm(),
                "#1 SMP PREEMPT_DYNAMIC",
                Some("dynamic (default none)")
            ),
            "unknown (debugfs locked)"
        );
        assert_eq!(
            preempt_model_of(Ok("none (voluntary) full lazy\n".into()), "#1", None),
            "voluntary"
        );
        assert_eq!(
            cpuinfo_field("processor\t: 0\nmodel name\t: AMD EPYC\n", "model name").as_deref(),
            Some("AMD EPYC")
        );
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
