//! Puts the git revision into `--version` when built from a git checkout.

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
    // A new commit moves HEAD or the branch it names; a worktree keeps both elsewhere.
    for what in ["HEAD", "refs"] {
        if let Some(p) = git(&["rev-parse", "--git-path", what]) {
            println!("cargo:rerun-if-changed={p}");
        }
    }
    if let Some(common) = git(&["rev-parse", "--git-common-dir"]) {
        println!("cargo:rerun-if-changed={common}/refs/heads");
        println!("cargo:rerun-if-changed={common}/packed-refs");
    }
    println!("cargo:rerun-if-changed=build.rs");
}
