//! Hostile input through the binary: durations too large to hold or without a unit, in
//! arguments and in preset and lesson files; input files that are devices or FIFOs;
//! output paths another user planted a symlink at; control characters and megabyte
//! names in what schedlab prints back.

use crate::common;
use crate::common::hostile::{mkfifo, schedlab_within, terminal_controls};

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

/// More seconds than a u64 holds.
const HUGE: &str = "99999999999999999999s";

/// Each case ends at once here; a case that blocks or runs away is killed at this bound.
const BOUND: Duration = Duration::from_secs(20);

/// A preset with one spinning task `w`, `metric` lines under [metric] and `task` lines
/// in its task.
fn preset(name: &str, metric: &str, task: &str) -> String {
    format!(
        "name = \"{name}\"\nsummary = \"s\"\nnote = \"n\"\n[metric]\nheadline = \"share\"\ntask = \"w\"\n{metric}\n[[task]]\nname = \"w\"\nworker = \"spin\"\n{task}\n"
    )
}

/// A lesson on pipe-wakeup with one step of `duration`.
fn lesson(title: &str, duration: &str) -> String {
    format!(
        "name = \"hostile\"\ntitle = \"{title}\"\npreset = \"pipe-wakeup\"\n[[step]]\ncaption = \"c\"\nlook = \"column:switches\"\nduration = \"{duration}\"\n"
    )
}

/// `text` written as `name` in `dir`; its path.
fn file(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write");
    path.to_str().expect("utf-8").to_string()
}

fn shown(out: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Refused at once as bad input: exit 2, one line on stderr saying `says`, nothing a
/// terminal acts on.
fn assert_refused(args: &[String], says: &str) {
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = schedlab_within(&argv, &[], BOUND)
        .unwrap_or_else(|| panic!("{args:?} still ran after {BOUND:?} (blocked or ran away)"));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {}", shown(&out));
    assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
    assert!(stderr.contains(says), "{args:?}: want {says:?} in {stderr}");
    assert_eq!(terminal_controls(&out.stderr), [], "{args:?}: {stderr}");
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

#[test]
fn huge_and_unitless_durations_are_refused_in_one_line_naming_the_range() {
    let _guard = common::serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let range = "allowed 0s..365d";
    let unit = "add a unit: 10s, 100ms";
    let warmup = file(
        d,
        "warmup.toml",
        &preset("w", &format!("warmup = \"{HUGE}\""), ""),
    );
    let runtime = file(
        d,
        "runtime.toml",
        &preset("r", "", &format!("runtime = \"{HUGE}\"")),
    );
    let slice = file(d, "slice.toml", &preset("s", "", "slice = \"3000000\""));
    let step = file(d, "step.toml", &lesson("t", HUGE));
    let bare_step = file(d, "bare-step.toml", &lesson("t", "5"));
    let at = format!("{HUGE}:writer.nice=1");
    let mut cases: Vec<(Vec<String>, &str)> = Vec::new();
    for flag in ["--duration", "--interval", "--warmup"] {
        cases.push((strings(&["run", "pipe-wakeup", flag, HUGE]), range));
    }
    for knob in ["runtime", "deadline", "slice"] {
        let set = format!("writer.{knob}={HUGE}");
        cases.push((strings(&["run", "pipe-wakeup", "--set", &set]), range));
    }
    cases.extend([
        (
            strings(&["run", "pipe-wakeup", "--at", "1e20s:writer.nice=1"]),
            range,
        ),
        (strings(&["run", "pipe-wakeup", "--at", &at]), range),
        (
            strings(&["lesson", "pipe-wakeup", "--headless", "--step-time", HUGE]),
            range,
        ),
        (
            strings(&[
                "sweep",
                "rt-throttle",
                "--knob",
                "fair.nice=0,5",
                "--duration",
                HUGE,
            ]),
            range,
        ),
        (
            strings(&[
                "compare",
                "pipe-wakeup",
                "--a",
                "writer.nice=0",
                "--b",
                "writer.nice=5",
                "--duration",
                HUGE,
            ]),
            range,
        ),
        (strings(&["run", &warmup]), range),
        (strings(&["presets", &warmup]), range),
        (strings(&["run", &runtime]), range),
        (strings(&["presets", &runtime]), range),
        (strings(&["lesson", &step, "--headless"]), range),
        // Bare numbers: 10 was 10 ns (then refused as too short), 3000000000 ran 3 s.
        (strings(&["run", "rt-throttle", "--duration", "10"]), unit),
        (
            strings(&["run", "rt-throttle", "--duration", "3000000000"]),
            unit,
        ),
        (strings(&["run", "rt-throttle", "--interval", "100"]), unit),
        (
            strings(&["run", "rt-throttle", "--set", "fair.slice=3000000"]),
            unit,
        ),
        (strings(&["presets", &slice]), unit),
        (strings(&["lesson", &bare_step, "--headless"]), unit),
    ]);
    for (args, says) in &cases {
        assert_refused(args, says);
    }
}

#[test]
fn devices_fifos_and_directories_are_refused_as_input_not_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    let fifo = d.join("fifo.toml");
    mkfifo(&fifo);
    let fifo = fifo.to_str().expect("utf-8");
    let dir_toml = d.join("dir.toml");
    std::fs::create_dir(&dir_toml).expect("mkdir");
    let dir_toml = dir_toml.to_str().expect("utf-8");
    // /dev/zero grew replay to 23.8 GB until the OOM killer came; a FIFO blocked forever.
    // /proc/self/pagemap is a regular file of 0 bytes on disk that reads as gigabytes of
    // zeros: only counting what is read stops it.
    let cases: [(&[&str], &str); 10] = [
        (
            &["replay", "/proc/self/pagemap"],
            "has a line of more than 67108864 bytes",
        ),
        (
            &["presets", "/proc/self/pagemap"],
            "is more than 1048576 bytes; allowed at most 1048576",
        ),
        (
            &["replay", "/dev/zero"],
            "is a device; allowed only a regular file",
        ),
        (&["replay", fifo], "is a FIFO; allowed only a regular file"),
        (
            &["presets", "/dev/zero"],
            "is a device; allowed only a regular file",
        ),
        (&["run", fifo], "is a FIFO; allowed only a regular file"),
        (
            &["presets", dir_toml],
            "is a directory; allowed only a regular file",
        ),
        (
            &["lesson", fifo, "--headless"],
            "is a FIFO; allowed only a regular file",
        ),
        (&["check", "diff", "/dev/zero", "/dev/zero"], "is a device"),
        (&["check", "diff", fifo, fifo], "is a FIFO"),
    ];
    for (args, says) in cases {
        assert_refused(&strings(args), says);
    }
}

#[test]
fn control_characters_and_megabyte_names_reach_no_terminal() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    // OSC (retitle the window), CSI (clear the screen), a C1 CSI and a bidi override.
    let esc = "x\\u001b]0;pwned\\u0007\\u001b[2J\\u009b31m\\u202e";
    let bad_name = file(d, "name.toml", &preset(esc, "", ""));
    let long = "a".repeat(1_000_000);
    let long_task = file(
        d,
        "long.toml",
        &preset("long", "", "").replace("task = \"w\"", &format!("task = \"{long}\"")),
    );
    assert_refused(&strings(&["presets", &bad_name]), "is not allowed");
    assert_refused(&strings(&["run", &bad_name]), "is not allowed");
    let out = schedlab_within(&["presets", &long_task], &[], BOUND).expect("ends");
    assert_eq!(out.status.code(), Some(2), "{}", shown(&out));
    assert!(
        out.stderr.len() < 2000,
        "a megabyte name was echoed: {} bytes on stderr",
        out.stderr.len()
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("left out"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Listings and notes from files: printed, with the controls escaped.
    let summary = file(
        d,
        "summary.toml",
        &preset("fine", "", "").replace("summary = \"s\"", &format!("summary = \"{esc}\"")),
    );
    let out = schedlab_within(&["presets", &summary], &[], BOUND).expect("ends");
    assert!(out.status.success(), "{}", shown(&out));
    assert_eq!(terminal_controls(&out.stdout), [], "{}", shown(&out));
    assert!(String::from_utf8_lossy(&out.stdout).contains("x\\u{1b}]0;pwned"));

    // A user lesson's title, in the lesson listing.
    let config = d.join("config");
    std::fs::create_dir_all(config.join("schedlab/lessons")).expect("mkdir");
    file(
        &config.join("schedlab/lessons"),
        "hostile.toml",
        &lesson(esc, "key"),
    );
    let out = schedlab_within(&["lesson"], &[("XDG_CONFIG_HOME", &config)], BOUND).expect("ends");
    assert!(out.status.success(), "{}", shown(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("hostile"),
        "{}",
        shown(&out)
    );
    assert_eq!(terminal_controls(&out.stdout), [], "{}", shown(&out));

    // check diff: the titles of a report are printed in its table and its verdict.
    let reference = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("assets/reference/firecracker-2cpu-linux-6.18.json");
    let mut doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&reference).expect("read")).expect("json");
    for f in doc["findings"].as_array_mut().expect("findings") {
        let title = f["title"].as_str().expect("title").to_string();
        f["title"] = format!("{title}\u{1b}]0;pwned\u{7}\u{9b}2J").into();
    }
    let forged = file(d, "forged.json", &doc.to_string());
    let out = schedlab_within(&["check", "diff", &forged, &forged], &[], BOUND).expect("ends");
    assert!(out.status.success(), "{}", shown(&out));
    assert!(
        String::from_utf8_lossy(&out.stdout).contains("pwned"),
        "{}",
        shown(&out)
    );
    assert_eq!(terminal_controls(&out.stdout), [], "{}", shown(&out));
    assert_eq!(terminal_controls(&out.stderr), [], "{}", shown(&out));
}

/// A world-writable, sticky directory like /tmp, owned by root.
fn sticky_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o1777)).expect("chmod");
    dir
}

#[test]
fn an_output_path_another_user_linked_in_a_shared_directory_is_not_written_through() {
    if !common::require(
        "root (to plant a link owned by another user)",
        common::is_root(),
    ) {
        return;
    }
    let _guard = common::serial();
    let shared = sticky_dir();
    let safe = tempfile::tempdir().expect("tempdir");
    let victim = safe.path().join("victim");
    std::fs::write(&victim, "root's data").expect("write");
    // user nobody's links: /tmp/out.json -> a file of root's.
    let link = |name: &str| -> PathBuf {
        let l = shared.path().join(name);
        std::os::unix::fs::symlink(&victim, &l).expect("symlink");
        std::os::unix::fs::lchown(&l, Some(65534), Some(65534)).expect("lchown");
        l
    };
    let lesson_file = file(safe.path(), "one-step.toml", &lesson("one step", "1s"));
    let cases: Vec<(Vec<String>, &str)> = vec![
        (
            strings(&["run", "pipe-wakeup", "--duration", "200ms", "--json"]),
            "out.json",
        ),
        (
            strings(&["run", "pipe-wakeup", "--duration", "200ms", "--csv"]),
            "out.csv",
        ),
        (
            strings(&["run", "pipe-wakeup", "--duration", "200ms", "--plot"]),
            "out.png",
        ),
        (
            strings(&[
                "sweep",
                "pipe-wakeup",
                "--knob",
                "writer.nice=0,5",
                "--duration",
                "200ms",
                "--json",
            ]),
            "sweep.json",
        ),
        (
            strings(&[
                "compare",
                "pipe-wakeup",
                "--a",
                "writer.nice=0",
                "--b",
                "writer.nice=5",
                "--rounds",
                "1",
                "--duration",
                "200ms",
                "--json",
            ]),
            "compare.json",
        ),
        (
            strings(&["lesson", &lesson_file, "--headless", "--json"]),
            "lesson.json",
        ),
        (
            strings(&["lesson", &lesson_file, "--headless", "--plot"]),
            "lesson.svg",
        ),
    ];
    for (mut args, name) in cases {
        let l = link(name);
        args.push(l.to_str().expect("utf-8").to_string());
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = schedlab_within(&argv, &[], common::PATIENCE).expect("ends");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?}: {}", shown(&out));
        assert!(
            stderr.contains("is a symlink of uid 65534 in the world-writable directory"),
            "{args:?}: {stderr}"
        );
        assert_eq!(
            std::fs::read_to_string(&victim).expect("read"),
            "root's data",
            "{args:?} wrote through the link"
        );
        assert!(
            std::fs::symlink_metadata(&l)
                .expect("lstat")
                .file_type()
                .is_symlink(),
            "{args:?}"
        );
    }
    let names: Vec<_> = std::fs::read_dir(shared.path())
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(
        names.len(),
        7,
        "nothing is left beside the links: {names:?}"
    );

    // A directory on the way (`--plot-dir /tmp/plots`, `--json /tmp/d/out.json`) linked
    // to a directory of root's: nothing is created there.
    let dir_link = shared.path().join("plots");
    std::os::unix::fs::symlink(safe.path(), &dir_link).expect("symlink");
    std::os::unix::fs::lchown(&dir_link, Some(65534), Some(65534)).expect("lchown");
    let json = dir_link.join("out.json");
    let json = json.to_str().expect("utf-8");
    let args = ["run", "pipe-wakeup", "--duration", "200ms", "--json", json];
    let out = schedlab_within(&args, &[], common::PATIENCE).expect("ends");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{}", shown(&out));
    assert!(
        stderr.contains("plots is a symlink of uid 65534"),
        "{stderr}"
    );
    assert!(!safe.path().join("out.json").exists());
}
