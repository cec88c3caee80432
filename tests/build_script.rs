//! build.rs watches only files that exist, so a second build is fresh in any checkout:
//! cargo takes a watched path that is missing for a change on every build.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The compiled build script of this crate (the newest, beside this test binary).
fn build_script() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps");
    std::fs::read_dir(profile.join("build"))
        .expect("target/<profile>/build")
        .flatten()
        .filter(|d| d.file_name().to_string_lossy().starts_with("schedlab-"))
        .map(|d| d.path().join("build-script-build"))
        .filter(|p| p.exists())
        .max_by_key(|p| p.metadata().and_then(|m| m.modified()).ok())
        .expect("a compiled build-script-build")
}

/// The paths the build script asks cargo to watch, run in `dir`.
fn watched_in(dir: &Path) -> Vec<String> {
    let out = Command::new(build_script())
        .current_dir(dir)
        .env("CARGO_PKG_VERSION", "0.0.0")
        .output()
        .expect("run the build script");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.strip_prefix("cargo:rerun-if-changed="))
        .map(str::to_string)
        .collect()
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// Every watched path (but build.rs, the crate's own) exists, and one of them is `expect` (what a new commit changes).
fn assert_watches(dir: &Path, expect: &str, case: &str) {
    let watched = watched_in(dir);
    let missing: Vec<&String> = watched
        .iter()
        .filter(|p| *p != "build.rs" && !dir.join(p).exists())
        .collect();
    assert!(missing.is_empty(), "{case}: watches missing {missing:?}");
    assert!(
        watched.iter().any(|p| p.ends_with(expect)),
        "{case}: {expect} not in {watched:?}"
    );
}

#[test]
fn the_build_script_watches_only_what_exists_and_what_a_commit_moves() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    // Outside a checkout: nothing but build.rs.
    assert_eq!(watched_in(d), vec!["build.rs".to_string()]);
    // A repository that never packed its refs: no packed-refs file at all.
    git(d, &["init", "-q"]);
    assert_watches(d, ".git/refs/heads", "unborn branch");
    std::fs::write(d.join("f"), "x").expect("write");
    git(d, &["add", "f"]);
    git(d, &["commit", "-q", "-m", "one"]);
    assert!(!d.join(".git/packed-refs").exists());
    assert_watches(d, ".git/refs/heads/main", "loose refs only");
    // Packed: the loose ref is gone, packed-refs holds it.
    git(d, &["pack-refs", "--all"]);
    assert!(!d.join(".git/refs/heads/main").exists());
    assert_watches(d, ".git/packed-refs", "packed refs");
    // Detached: HEAD itself holds the commit.
    git(d, &["checkout", "-q", "--detach"]);
    assert_watches(d, ".git/HEAD", "detached HEAD");
}
