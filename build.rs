//! Puts the git revision into `--version` when built from a git checkout.

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    if !out.status.success() {
        return None;
    }
    let s = String::from_utf8(out.stdout).ok()?.trim().to_string();
    (!s.is_empty()).then_some(s)
}

fn main() {
    let pkg = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    // A tarball or `cargo install` from crates.io has no .git: the plain version then.
    let version = match git(&["rev-parse", "--short", "HEAD"]) {
        Some(rev) => format!("{pkg} ({rev})"),
        None => pkg,
    };
    println!("cargo:rustc-env=SCHEDLAB_VERSION={version}");
    // A new commit moves HEAD (detached) or the branch it names: that branch's loose
    // ref, or packed-refs while git keeps it packed (its first new commit then writes a
    // loose one under refs/heads). Only paths that exist are watched: cargo takes a
    // missing one for a change on every build (a repository that never packed its refs
    // has no packed-refs) and recompiles the crate each time; other branches' commits
    // (worktrees beside this one) are no reason to rebuild either.
    let mut watched = Vec::new();
    watched.extend(git(&["rev-parse", "--git-path", "HEAD"]));
    let common = git(&["rev-parse", "--git-common-dir"]);
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        let loose = git(&["rev-parse", "--git-path", &branch]);
        match loose.filter(|p| Path::new(p).exists()) {
            Some(p) => watched.push(p),
            None => watched.extend(common.iter().map(|c| format!("{c}/refs/heads"))),
        }
    }
    watched.extend(common.map(|c| format!("{c}/packed-refs")));
    for path in watched.iter().filter(|p| Path::new(p).exists()) {
        println!("cargo:rerun-if-changed={path}");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
