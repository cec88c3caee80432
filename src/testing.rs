//! Helpers for the crate's own unit tests: a test that cannot run here fails unless
//! skipping was asked for, as the integration tests' `common::skip_or_fail` does.

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
        "{reason}; run as root (.ci/run does), or set SCHEDLAB_ALLOW_SKIP=1 to skip it knowingly"
    );
}
