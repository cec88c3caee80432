//! Helpers shared by the crate's unit tests and the integration tests (tests/common
//! includes this file): a test that cannot run here fails unless skipping was asked
//! for, and the machine-wide lock that keeps real workloads from running side by side.
#![allow(dead_code)]

/// A test that cannot run: panics with `reason`, or, with `SCHEDLAB_ALLOW_SKIP=1`,
/// prints it and returns false so the test can skip. `SCHEDLAB_REQUIRE_ALL=1` (CI)
/// always panics: under CI no test passes without having run. True when `available`.
pub fn require(what: &str, available: bool) -> bool {
    if available {
        return true;
    }
    let set = |name: &str| std::env::var_os(name).is_some_and(|v| v == "1");
    let reason = format!("this test needs {what}");
    if set("SCHEDLAB_REQUIRE_ALL") {
        panic!("{reason}; SCHEDLAB_REQUIRE_ALL=1 (CI): every test must run, none may skip");
    }
    if set("SCHEDLAB_ALLOW_SKIP") {
        eprintln!("skipped: {reason} (SCHEDLAB_ALLOW_SKIP=1)");
        return false;
    }
    panic!(
        "{reason}; install it or run as root (.ci/run does), or set SCHEDLAB_ALLOW_SKIP=1 to skip it knowingly"
    );
}

/// A property of the host (kernel config, hardware, mounts) that a test cannot
/// exercise here: says so and returns, whatever `SCHEDLAB_REQUIRE_ALL` says, since no
/// install brings it. The caller proves what it can without it (how schedlab refuses,
/// fixtures) before it returns; [`require`] is for what an install brings (a tool, root).
pub fn host_lacks(what: &str) {
    eprintln!("not exercised on this host: it lacks {what}");
}

/// Held by a unit test that takes schedlab's knob lock or writes the machine's cgroups:
/// a machine-wide flock, also taken by every integration test that runs a workload
/// (`tests/common::serial`), so it never runs beside another test's schedlab, in this
/// `cargo test` or another checkout's.
pub struct MachineLock(std::fs::File);

impl Drop for MachineLock {
    /// Unlocked before the close: a child another thread is forking shares the open file
    /// until its exec, and would hold the lock that long.
    fn drop(&mut self) {
        // SAFETY: flock on a descriptor we own.
        unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&self.0), libc::LOCK_UN) };
    }
}

pub fn machine_lock() -> MachineLock {
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(std::env::temp_dir().join("schedlab-tests.lock"))
        .expect("the machine-wide test lock");
    // SAFETY: flock on a descriptor we own; blocks until the other test is done.
    let rc = unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&file), libc::LOCK_EX) };
    assert_eq!(rc, 0, "flock on the machine-wide test lock");
    MachineLock(file)
}
