//! Lesson files (every built-in, every error) and the check on hand-made live data.

use std::time::Duration;

use super::check::{evaluate, known_reasons, Verdict, Window};
use super::*;
use crate::facts::RtBandwidth;
use crate::lab::fixtures::started;
use crate::lab::live::Live;
use crate::lab::store::TaskRates;

fn parse(text: &str) -> anyhow::Result<Lesson> {
    load::parse_with(text, "test", crate::preset::load)
}

const HEAD: &str = "name = 'l'\ntitle = 't'\npreset = 'pipe-wakeup'\n";

fn one_step(step: &str) -> String {
    format!("{HEAD}[[step]]\ncaption = 'c'\nlook = 'graph:headline'\nduration = '4s'\n{step}")
}

fn error_of(text: &str) -> String {
    let e = format!("{:#}", parse(text).expect_err("refused"));
    assert!(!e.contains('\n'), "one line: {e}");
    e
}

#[test]
fn every_builtin_lesson_parses_and_names_its_preset() {
    let presets: Vec<&str> = crate::preset::BUILTIN.iter().map(|(n, _)| *n).collect();
    assert_eq!(BUILTIN.len(), presets.len(), "one lesson per preset");
    for (name, text) in BUILTIN {
        let l = parse(text).unwrap_or_else(|e| panic!("{name}: {e:#}"));
        assert_eq!(l.name, *name);
        assert_eq!(l.preset, *name);
        assert!(
            l.steps.iter().any(|s| s.check.is_some()),
            "{name} checks something"
        );
    }
}

/// rt-throttle is played as the kernel has it: the sysctl holds the spinner to 60 %
/// only where it throttles; where only the fair server acts the lesson teaches that the
/// sysctl does nothing to the spinner, and says so in its check.
#[test]
fn rt_throttle_is_played_as_this_kind_of_kernel_has_it() {
    let text = |rt| load::builtin_text("rt-throttle", rt).expect("built-in");
    let throttling = parse(text(RtBandwidth::ThrottlingAndFairServer)).expect("parses");
    assert_eq!(
        text(RtBandwidth::Throttling),
        text(RtBandwidth::ThrottlingAndFairServer)
    );
    let fair = parse(text(RtBandwidth::FairServerOnly)).expect("parses");
    assert_eq!(
        (throttling.name.as_str(), fair.name.as_str()),
        ("rt-throttle", "rt-throttle")
    );
    let says = |l: &Lesson| -> Vec<String> {
        l.steps
            .iter()
            .filter_map(|s| s.check.as_ref().map(|c| c.says.clone()))
            .collect()
    };
    assert!(says(&throttling).iter().any(|s| s.contains("held to 60 %")));
    assert!(says(&fair).iter().all(|s| !s.contains("60 %")));
    assert!(fair.steps[0].caption.contains("fair server"));
    assert!(fair.steps[1]
        .caption
        .contains("only limits SCHED_DEADLINE admission"));
    assert_eq!(
        load::builtin_text("pipe-wakeup", RtBandwidth::FairServerOnly),
        BUILTIN
            .iter()
            .find(|(n, _)| *n == "pipe-wakeup")
            .map(|(_, t)| *t)
    );
}

#[test]
fn undo_puts_back_what_the_preset_and_earlier_steps_set() {
    let l = parse(
        &(one_step("set = ['reader.policy=batch']\n")
            + "[[step]]\ncaption = 'd'\nlook = 'column:cpu'\nduration = 'key'\nset = ['reader.policy=idle', 'writer.cpus=all', 'sys.rt_runtime_us=600000']\n"),
    )
    .expect("parses");
    let undo =
        |i: usize| -> Vec<String> { l.steps[i].undo.iter().map(|s| s.to_string()).collect() };
    assert_eq!(undo(0), ["reader.policy=other"]);
    // System knobs are put back from the machine's values, which the workbench knows.
    assert_eq!(undo(1), ["reader.policy=batch", "writer.cpus=0"]);
    assert_eq!(l.steps[1].pace, Pace::Key);
    assert_eq!(l.steps[1].look, Look::Column(Column::Cpu));
}

#[test]
fn bad_lessons_are_refused_in_one_line_naming_what_is_allowed() {
    let cases: Vec<(String, &str)> = vec![
        (format!("{HEAD}colour = 'red'\n"), "unknown field `colour`"),
        (one_step("sett = []\n"), "unknown field `sett`"),
        (
            HEAD.replace("pipe-wakeup", "no-such") + "[[step]]\ncaption='c'\nlook='graph:headline'\nduration='1s'\n",
            "unknown preset \"no-such\"",
        ),
        (HEAD.to_string(), "has 0 [[step]]s: allowed 1..20"),
        (HEAD.replace("name = 'l'", "name = 'a b'"), "name \"a b\" is not allowed"),
        (HEAD.replace("title = 't'", "title = ' '") + "[[step]]\ncaption='c'\nlook='graph:headline'\nduration='1s'\n", "title is empty"),
        (one_step("").replace("caption = 'c'", "caption = '  '"), "step 1: caption is empty"),
        (one_step("").replace("caption = 'c'", &format!("caption = '{}'", "x".repeat(400))), "allowed at most 320"),
        (one_step("").replace("'4s'", "'soon'"), "duration \"soon\""),
        (one_step("").replace("'4s'", "'20m'"), "allowed 1s..10m, or \"key\""),
        (one_step("").replace("graph:headline", "graph:pie"), "look \"graph:pie\" is unknown: allowed are graph:cpu-share"),
        // The table has a TASK column; a lesson cannot point at it (nothing to see there).
        (one_step("").replace("graph:headline", "column:task"), "look \"column:task\" is unknown: allowed are graph:cpu-share"),
        (one_step("set = ['reader.policy=fast']\n"), "unknown policy"),
        (one_step("set = ['nobody.nice=3']\n"), "unknown task \"nobody\""),
        (one_step("set = ['reader.poll_stdin=on']\n"), "cannot be changed live"),
        (one_step("set = ['sys.no_such=1']\n"), "no_such"),
        (one_step("set = ['writer']\n"), "expected TASK.KNOB=VALUE"),
        (one_step("if_not = ['']\n"), "if_not has an empty reason"),
        (one_step("set = ['reader.policy=batch']\nquestion = ' '\n"), "step 1: question is empty"),
        (one_step(&format!("set = ['reader.policy=batch']\nquestion = '{}'\n", "x".repeat(400))), "question is 400 characters: allowed at most 320"),
        (one_step("question = 'what now?'\n"), "the step has no set"),
        (one_step("[step.check]\nmetric = 'speed'\nat_least = 1\nsays = 's'\n"), "check metric \"speed\" is unknown: allowed are cpu, portion"),
        (one_step("[step.check]\nmetric = 'cpu'\ntask = 'nobody'\nat_least = 1\nsays = 's'\n"), "check task \"nobody\" is unknown: tasks of pipe-wakeup are writer, reader"),
        (one_step("[step.check]\nmetric = 'headline'\ntask = 'writer'\nat_least = 1\nsays = 's'\n"), "takes no task"),
        (one_step("[step.check]\nmetric = 'cpu'\nsays = 's'\n"), "check needs at_least and/or at_most"),
        (one_step("[step.check]\nmetric = 'cpu'\nat_least = 1\nratio_at_most = 2\nthan_step = 1\nsays = 's'\n"), "not both kinds"),
        (one_step("[step.check]\nmetric = 'cpu'\nratio_at_least = 2\nsays = 's'\n"), "need than_step"),
        (one_step("[step.check]\nmetric = 'cpu'\nratio_at_least = 2\nthan_step = 1\nsays = 's'\n"), "than_step 1: allowed an earlier step, 1..0"),
        (one_step("[step.check]\nmetric = 'cpu'\nat_least = 0.5\nat_most = 0.2\nsays = 's'\n"), "lower bound is above the upper bound"),
        (one_step("[step.check]\nmetric = 'cpu'\nat_least = -1\nsays = 's'\n"), "at_least must be a number 0 or above"),
        (one_step("[step.check]\nmetric = 'cpu'\nat_least = 0.1\nsettle = '3s'\nsays = 's'\n"), "allowed up to half"),
        (one_step("[step.check]\nmetric = 'cpu'\nat_least = 0.1\nsettle = 'x'\nsays = 's'\n"), "check settle \"x\""),
        (one_step("[step.check]\nmetric = 'cpu'\nat_least = 0.1\nsays = ''\n"), "check says nothing"),
    ];
    for (text, want) in cases {
        let e = error_of(&text);
        assert!(e.contains(want), "{want:?} not in {e:?}");
        assert!(e.starts_with("lesson test: "), "{e}");
    }
    let e = format!("{:#}", load_in("nope", None).expect_err("unknown"));
    assert!(
        e.contains("unknown lesson \"nope\": available are pipe-wakeup"),
        "{e}"
    );
}

#[test]
fn a_step_may_ask_a_question_before_its_changes() {
    let l = parse(&one_step(
        "set = ['reader.policy=batch']\nquestion = '''\n  What will the writer's\n  switches do?'''\n",
    ))
    .expect("parses");
    assert_eq!(
        l.steps[0].question.as_deref(),
        Some("What will the writer's switches do?"),
        "one line, like the caption"
    );
    assert_eq!(
        parse(&one_step("")).expect("parses").steps[0].question,
        None
    );
    // The built-ins ask where predicting teaches.
    let asked = |name: &str| {
        load_in(name, None)
            .expect("built-in")
            .steps
            .iter()
            .filter(|s| s.question.is_some())
            .count()
    };
    assert!(asked("pipe-wakeup") >= 1 && asked("nice-ladder") >= 1);
}

/// The headless document carries each step's question (it plays straight through).
#[test]
fn the_headless_document_carries_each_steps_question() {
    let text = "name = 'l'\ntitle = 't'\npreset = 'rt-throttle'\n\
        [[step]]\ncaption = 'a'\nlook = 'graph:headline'\nduration = '1s'\n\
        [[step]]\ncaption = 'b'\nquestion = 'will fair get more?'\nset = ['fifo.policy=other']\n\
        look = 'graph:headline'\nduration = '1s'\n";
    let lesson = parse(text).expect("parses");
    let live = live_with(&[(0.1, 100.0); 20]);
    let run = crate::plot::tests::fixtures::run_report(2, "bytes");
    let windows = [w(0.0, 1.0), w(1.0, 2.0)];
    let doc = crate::report::lesson::lesson_report(
        &lesson,
        &run,
        &live,
        &windows,
        &[None, None],
        vec![Vec::new(), Vec::new()],
    );
    let json = serde_json::to_value(&doc).expect("serialises");
    assert_eq!(json["steps"][0]["question"], serde_json::Value::Null);
    assert_eq!(json["steps"][1]["question"], "will fair get more?");
}

#[test]
fn user_lessons_load_from_their_directory_and_replace_built_ins() {
    let dir = tempfile::tempdir().expect("tempdir");
    let text = one_step("").replace("name = 'l'", "name = 'pipe-wakeup'");
    std::fs::write(dir.path().join("pipe-wakeup.toml"), &text).expect("write");
    std::fs::write(dir.path().join("broken.toml"), "name =").expect("write");
    let l = load_in("pipe-wakeup", Some(dir.path())).expect("user lesson");
    assert!(l.source.ends_with("pipe-wakeup.toml"), "{}", l.source);
    let listed = list_in(Some(dir.path()));
    assert_eq!(
        listed
            .iter()
            .flatten()
            .filter(|l| l.name == "pipe-wakeup")
            .count(),
        1
    );
    assert!(
        listed.iter().any(|r| r.is_err()),
        "the broken file is listed as an error"
    );
}

/// A live model of rt-throttle (fifo, fair) with `fair`'s CPU share and progress given
/// per 0.1 s sample, fifo taking the rest of the CPU.
fn live_with(fair: &[(f64, f64)]) -> Live {
    let mut live = Live::new(&started(), 1000, Duration::ZERO);
    for (k, (share, progress)) in fair.iter().enumerate() {
        let t_s = (k + 1) as f64 * 0.1;
        let point = |cpu_share: f64, progress_per_s: f64| TaskRates {
            t_s,
            cpu_share,
            progress_per_s,
            involuntary_per_s: progress_per_s / 10.0,
            ..TaskRates::default()
        };
        live.store.tasks[0]
            .points
            .push_back(point(1.0 - share, 0.0));
        live.store.tasks[1]
            .points
            .push_back(point(*share, *progress));
        live.throughput.push_back((t_s, *progress));
    }
    live
}

fn check(metric: Metric, task: Option<&str>, bound: Bound) -> Check {
    Check {
        metric,
        task: task.map(str::to_string),
        bound,
        settle: Duration::from_millis(200),
        says: "it moved".into(),
    }
}

fn w(from_s: f64, to_s: f64) -> Window {
    Window { from_s, to_s }
}

#[test]
fn a_ratio_check_passes_fails_and_waits_for_data() {
    // 1 s at 10 % and 100/s, then 1 s at 40 % and 300/s.
    let samples: Vec<(f64, f64)> = (0..20)
        .map(|k| if k < 10 { (0.1, 100.0) } else { (0.4, 300.0) })
        .collect();
    let live = live_with(&samples);
    let doubled = check(
        Metric::Progress,
        Some("fair"),
        Bound::Ratio {
            step: 0,
            min: Some(2.0),
            max: None,
        },
    );
    let o = evaluate(
        &live,
        Headline::Share,
        &doubled,
        w(1.0, 2.0),
        Some(w(0.0, 1.0)),
    );
    assert_eq!(o.verdict, Verdict::Pass, "{}", o.text);
    assert!((o.ratio.expect("ratio") - 3.0).abs() < 1e-9, "{o:?}");
    assert!(
        o.text
            .starts_with("yes: it moved (300.0/s vs 100.0/s: 3.00x"),
        "{}",
        o.text
    );
    let tripled = check(
        Metric::Progress,
        Some("fair"),
        Bound::Ratio {
            step: 0,
            min: Some(3.5),
            max: None,
        },
    );
    let o = evaluate(
        &live,
        Headline::Share,
        &tripled,
        w(1.0, 2.0),
        Some(w(0.0, 1.0)),
    );
    assert_eq!(o.verdict, Verdict::Fail, "{}", o.text);
    assert!(o.text.starts_with("NO: "), "{}", o.text);
    // A window with one sample after its settle time judges nothing; nor does a missing
    // reference window.
    let o = evaluate(
        &live,
        Headline::Share,
        &doubled,
        w(1.0, 1.25),
        Some(w(0.0, 1.0)),
    );
    assert_eq!(o.verdict, Verdict::NoData, "{}", o.text);
    let o = evaluate(&live, Headline::Share, &doubled, w(1.0, 2.0), None);
    assert_eq!(o.verdict, Verdict::NoData, "{}", o.text);
}

#[test]
fn absolute_checks_read_tasks_groups_portions_and_the_headline() {
    let live = live_with(&[(0.3, 50.0); 10]);
    let between = |lo, hi| Bound::Absolute {
        min: Some(lo),
        max: Some(hi),
    };
    let all = w(0.0, 1.0);
    let eval = |c: &Check| evaluate(&live, Headline::Share, c, all, None);
    // The headline of a share preset is its group's CPU share.
    assert_eq!(
        eval(&check(Metric::Headline, None, between(0.29, 0.31))).verdict,
        Verdict::Pass
    );
    assert_eq!(
        eval(&check(Metric::Cpu, Some("fifo"), between(0.69, 0.71))).verdict,
        Verdict::Pass
    );
    assert_eq!(
        eval(&check(Metric::Portion, Some("fair"), between(0.29, 0.31))).verdict,
        Verdict::Pass
    );
    assert_eq!(
        eval(&check(Metric::Involuntary, Some("fair"), between(4.9, 5.1))).verdict,
        Verdict::Pass
    );
    assert_eq!(
        eval(&check(Metric::Cpu, Some("fifo"), between(0.0, 0.5))).verdict,
        Verdict::Fail
    );
    // The throughput headline reads the summed series.
    let o = evaluate(
        &live,
        Headline::Throughput,
        &check(Metric::Headline, None, between(49.0, 51.0)),
        all,
        None,
    );
    assert_eq!(o.verdict, Verdict::Pass, "{}", o.text);
}

#[test]
fn known_reasons_name_refusals_foreign_load_and_a_single_cpu() {
    let mut live = live_with(&[(0.3, 50.0); 10]);
    assert!(known_reasons(&live, w(0.0, 1.0), &[], 2, Metric::Cpu).is_empty());
    for k in 1..=10 {
        live.store.foreign.push_back((k as f64 * 0.1, 0.5));
    }
    let refused = ["sys.x=1: EPERM".to_string()];
    let r = known_reasons(&live, w(0.0, 1.0), &refused, 1, Metric::Cpu);
    assert_eq!(r.len(), 3, "{r:?}");
    assert!(r[0].contains("refused") && r[0].contains("EPERM"), "{r:?}");
    assert!(r[1].contains("other programs took 0.50 CPU"), "{r:?}");
    assert!(r[2].contains("1 CPU"), "{r:?}");
    // Other programs and a single CPU take from every task of the experiment alike: a
    // portion check's failure is not theirs. A refused change still excuses it.
    let r = known_reasons(&live, w(0.0, 1.0), &refused, 1, Metric::Portion);
    assert_eq!(r.len(), 1, "{r:?}");
    assert!(r[0].contains("EPERM"), "{r:?}");
    assert!(known_reasons(&live, w(0.0, 1.0), &[], 1, Metric::Portion).is_empty());
}

#[test]
fn step_times_scale_by_pace_or_are_fixed() {
    let l = parse(&(one_step("") + "[[step]]\ncaption='d'\nlook='column:cpu'\nduration='key'\n"))
        .expect("parses");
    let hold = Duration::from_secs(6);
    assert_eq!(
        l.step_times(hold, 0.5, None),
        [Duration::from_secs(2), Duration::from_secs(3)]
    );
    let fixed = Some(Duration::from_secs(1));
    assert_eq!(l.step_times(hold, 0.5, fixed), [Duration::from_secs(1); 2]);
}

#[test]
fn every_checked_built_in_step_says_why_it_may_not_show_here() {
    for (name, text) in BUILTIN {
        let l = parse(text).expect(name);
        for (i, s) in l.steps.iter().enumerate() {
            assert!(
                s.check.is_none() || !s.if_not.is_empty(),
                "{name} step {}: a check without an if_not reason",
                i + 1
            );
        }
    }
}
