//! The RT mechanism on fixture kernels, the docs table, and the key numbers in every text.

use std::path::Path;

use super::*;

const WITH_GROUPS: &str =
    "CONFIG_RT_GROUP_SCHED=y\n# CONFIG_RT_GROUP_SCHED_DEFAULT_DISABLED is not set\n";
const DEFAULT_OFF: &str = "CONFIG_RT_GROUP_SCHED=y\nCONFIG_RT_GROUP_SCHED_DEFAULT_DISABLED=y\n";
const WITHOUT: &str = "# CONFIG_RT_GROUP_SCHED is not set\n";

#[test]
fn the_rt_mechanism_follows_version_config_and_boot_parameter() {
    use RtBandwidth::*;
    // Before 6.12 the sysctl throttles on every kernel, with or without RT groups.
    assert_eq!(RtBandwidth::of((6, 11), Some(WITHOUT), ""), Throttling);
    assert_eq!(RtBandwidth::of((5, 10), None, ""), Throttling);
    // 6.12+: only RT group scheduling throttles.
    assert_eq!(RtBandwidth::of((6, 12), Some(WITHOUT), ""), FairServerOnly);
    assert_eq!(
        RtBandwidth::of((6, 18), Some(WITH_GROUPS), "quiet"),
        ThrottlingAndFairServer
    );
    assert_eq!(RtBandwidth::of((6, 18), None, ""), FairServerOnly);
    // 6.16+: disabled at boot, by the build default or the command line.
    assert_eq!(
        RtBandwidth::of((6, 16), Some(DEFAULT_OFF), ""),
        FairServerOnly
    );
    assert_eq!(
        RtBandwidth::of((6, 16), Some(DEFAULT_OFF), "ro rt_group_sched=1"),
        ThrottlingAndFairServer
    );
    assert_eq!(
        RtBandwidth::of((6, 16), Some(WITH_GROUPS), "rt_group_sched=0 quiet"),
        FairServerOnly
    );
    // The last one counts; what follows "--" is init's, not the kernel's.
    assert_eq!(
        RtBandwidth::of(
            (6, 16),
            Some(WITH_GROUPS),
            "rt_group_sched=0 rt_group_sched=1"
        ),
        ThrottlingAndFairServer
    );
    assert_eq!(
        RtBandwidth::of((6, 16), Some(WITH_GROUPS), "quiet -- rt_group_sched=0"),
        ThrottlingAndFairServer
    );
}

#[test]
fn detects_the_mechanism_of_fixture_kernels() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("assets/fixtures/rt_bandwidth");
    let distro = RtBandwidth::detect(&fixtures.join("distro-6.12"));
    assert_eq!(distro, RtBandwidth::FairServerOnly);
    assert!(!distro.throttles() && distro.has_fair_server());
    let group = RtBandwidth::detect(&fixtures.join("group-6.18"));
    assert_eq!(group, RtBandwidth::ThrottlingAndFairServer);
    assert!(group.throttles() && group.has_fair_server());
    assert!(!RtBandwidth::Throttling.has_fair_server());
}

#[test]
fn each_mechanism_names_what_acts_and_the_placeholder_is_filled() {
    let fair = RtBandwidth::FairServerOnly;
    assert!(fair.sentence().contains("throttles no RT task"));
    assert!(!fair.causes().contains("RT_RUNTIME_SHARE"));
    assert!(RtBandwidth::Throttling
        .causes()
        .contains("RT_RUNTIME_SHARE"));
    let text = format!("before. {RT_BANDWIDTH_HERE} after.");
    assert_eq!(
        expand(&text, fair),
        format!("before. {} after.", fair.sentence())
    );
    assert_eq!(version("6.18.44-fc-v1272\n"), (6, 18));
    assert_eq!(version("2.6.32"), (2, 6));
}

#[test]
fn the_docs_table_is_the_facts_table() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/src/kernel-facts.md");
    let docs = std::fs::read_to_string(&path).unwrap_or_default();
    if std::env::var_os("SCHEDLAB_WRITE_DOCS").is_some() {
        std::fs::write(&path, markdown()).expect("write the docs table");
        return;
    }
    assert!(
        docs == markdown(),
        "{} differs from src/facts.rs: run the test with SCHEDLAB_WRITE_DOCS=1 to rewrite it",
        path.display()
    );
    for f in FACTS {
        assert!(!f.claim.is_empty() && !f.holds.is_empty() && !f.source.is_empty());
    }
}

/// The lines of `text` that contain `needle`.
fn lines_with<'a>(text: &'a str, needle: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.contains(needle)).collect()
}

/// README.md and the docs book's hand-written pages (docs/src/**/*.md but the kernel
/// facts page, which is rendered from this module and would quote it whatever the
/// texts say), one text.
fn readme_and_docs() -> String {
    fn walk(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("docs/src").flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "md")
                && !path.ends_with("kernel-facts.md")
            {
                out.push(path);
            }
        }
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = vec![root.join("README.md")];
    walk(&root.join("docs/src"), &mut files);
    assert!(files.len() > 10, "{files:?}");
    files
        .iter()
        .map(|p| std::fs::read_to_string(p).expect("readable"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The key numbers are quoted as `numbers` has them: the pipe-wakeup note, its lesson,
/// `check`'s healthy text and the docs' measurement (README or the book) quote the same
/// BATCH gain; the nice-ladder figures are the check's threshold, the lesson's bound and
/// the docs' measurement, each from one place.
#[test]
fn the_texts_quote_the_key_numbers_as_facts_has_them() {
    use crate::check::verdict;
    let gain = numbers::BATCH_GAIN;
    let note = include_str!("../../presets/pipe-wakeup.toml");
    let lesson = include_str!("../../presets/lessons/pipe-wakeup.toml");
    let docs = readme_and_docs();
    assert_eq!(
        lines_with(note, &format!("goes up {gain}")).len(),
        1,
        "{gain}"
    );
    assert_eq!(lines_with(lesson, &format!("goes up {gain}")).len(), 1);
    assert!(verdict::batch_healthy().contains(gain));
    let measured = lines_with(&docs, "(writer and reader BATCH)");
    assert!(
        !measured.is_empty() && measured.iter().all(|l| l.contains(&format!(": {gain}."))),
        "{measured:?}"
    );
    // Any other "about N.Nx" for the gain in the note or lesson would disagree.
    for text in [note, lesson] {
        assert!(
            !text.contains("about 2.") && !text.contains("~2."),
            "{text}"
        );
    }

    assert_eq!(verdict::FAIRNESS_OK, numbers::LADDER_ERROR_HEALTHY);
    assert!(verdict::fairness_healthy().contains(numbers::LADDER_ERROR_CHECK_RUN));
    let docs_check = lines_with(&docs, "ok       nice-ladder fairness error ");
    assert!(
        !docs_check.is_empty()
            && docs_check
                .iter()
                .all(|l| l.contains(&verdict::fairness_healthy())),
        "{docs_check:?}"
    );
    let ladder = format!("fairness error {}", numbers::LADDER_ERROR_MEASURED);
    assert_eq!(lines_with(&docs, &ladder).len(), 1, "{ladder}");
    let ladder_lesson = crate::lesson::load_in("nice-ladder", None).expect("built-in");
    let check = ladder_lesson.steps[0]
        .check
        .as_ref()
        .expect("step 1 checks");
    assert_eq!(
        check.bound,
        crate::lesson::Bound::Absolute {
            min: None,
            max: Some(numbers::LADDER_ERROR_LESSON)
        }
    );
    let bound = format!("{:.0} %", numbers::LADDER_ERROR_LESSON * 100.0);
    assert!(check.says.contains(&bound), "{}", check.says);

    // The RT figures: the fair server's default and the floor it puts under the sysctl.
    let rt_note = include_str!("../../presets/rt-throttle.toml");
    assert!(rt_note.contains(numbers::FAIR_SERVER_DEFAULT));
    assert!(docs.contains(&format!(
        "{} of 1000000 by default",
        numbers::RT_RUNTIME_FLOOR
    )));
}
