//! The JSON documents' conventions: the header every document carries, its schema in
//! assets/schema, and units in the names of its numbers.
//!
//! The schemas use sixteen keywords of JSON Schema; `validate` checks exactly those and
//! refuses a schema that uses any other, so a schema cannot quietly outgrow its check.
//! (The jsonschema crate did this before at the cost of 33 crates and ~16 s of a fresh
//! build on two CPUs; see the README's build notes.)

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::{Map, Value};

/// What `validate` understands: annotations, then assertions.
const KEYWORDS: &[&str] = &[
    "$schema",
    "$id",
    "title",
    "description",
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "enum",
    "const",
    "minimum",
    "pattern",
    "minLength",
];

/// Where `doc` breaks `schema`, one line each (`path: what`); a keyword the validator
/// does not know is an error too.
pub fn validate(schema: &Value, doc: &Value) -> Vec<String> {
    let mut out = Vec::new();
    check(schema, doc, "", &mut out);
    out
}

fn check(schema: &Value, v: &Value, path: &str, out: &mut Vec<String>) {
    let s = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => return out.push(format!("{path}: nothing is allowed here")),
        Value::Object(s) => s,
        other => return out.push(format!("{path}: the schema is not an object: {other}")),
    };
    for k in s.keys().filter(|k| !KEYWORDS.contains(&k.as_str())) {
        out.push(format!("{path}: unsupported schema keyword {k}"));
    }
    if let Some(t) = s.get("type") {
        let allowed: Vec<&str> = match t {
            Value::String(one) => vec![one.as_str()],
            Value::Array(many) => many.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !allowed.iter().any(|t| is_type(v, t)) {
            out.push(format!("{path}: {v} is not of type {t}"));
        }
    }
    if let Some(Value::Array(options)) = s.get("enum") {
        if !options.contains(v) {
            out.push(format!("{path}: {v} is not one of {options:?}"));
        }
    }
    if let Some(c) = s.get("const") {
        if c != v {
            out.push(format!("{path}: {v} is not {c}"));
        }
    }
    if let (Some(min), Some(x)) = (s.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if x < min {
            out.push(format!("{path}: {x} is less than the minimum {min}"));
        }
    }
    if let Value::String(text) = v {
        check_string(s, text, path, out);
    }
    if let Value::Array(items) = v {
        check_array(s, items, path, out);
    }
    if let Value::Object(map) = v {
        check_object(s, map, path, out);
    }
}

fn is_type(v: &Value, t: &str) -> bool {
    match t {
        "null" => v.is_null(),
        "boolean" => v.is_boolean(),
        "string" => v.is_string(),
        "array" => v.is_array(),
        "object" => v.is_object(),
        "number" => v.is_number(),
        // JSON Schema's integer is a number without a fraction, 1.0 included.
        "integer" => v.is_i64() || v.is_u64() || v.as_f64().is_some_and(|x| x.fract() == 0.0),
        _ => false,
    }
}

fn check_string(s: &Map<String, Value>, text: &str, path: &str, out: &mut Vec<String>) {
    if let Some(min) = s.get("minLength").and_then(Value::as_u64) {
        if (text.chars().count() as u64) < min {
            out.push(format!("{path}: {text:?} is shorter than {min}"));
        }
    }
    if let Some(p) = s.get("pattern").and_then(Value::as_str) {
        match regex_lite::Regex::new(p) {
            Ok(re) if re.is_match(text) => {}
            Ok(_) => out.push(format!("{path}: {text:?} does not match {p}")),
            Err(e) => out.push(format!("{path}: the pattern {p} is not a regex: {e}")),
        }
    }
}

fn check_array(s: &Map<String, Value>, items: &[Value], path: &str, out: &mut Vec<String>) {
    let n = items.len() as u64;
    if s.get("minItems")
        .and_then(Value::as_u64)
        .is_some_and(|min| n < min)
    {
        out.push(format!("{path}: {n} items, fewer than minItems"));
    }
    if s.get("maxItems")
        .and_then(Value::as_u64)
        .is_some_and(|max| n > max)
    {
        out.push(format!("{path}: {n} items, more than maxItems"));
    }
    if let Some(item) = s.get("items") {
        for (i, v) in items.iter().enumerate() {
            check(item, v, &format!("{path}/{i}"), out);
        }
    }
}

fn check_object(
    s: &Map<String, Value>,
    map: &Map<String, Value>,
    path: &str,
    out: &mut Vec<String>,
) {
    for name in s
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        if let Some(name) = name.as_str() {
            if !map.contains_key(name) {
                out.push(format!("{path}: {name} is required"));
            }
        }
    }
    let properties = s.get("properties").and_then(Value::as_object);
    for (k, v) in map {
        let at = format!("{path}/{k}");
        match (
            properties.and_then(|p| p.get(k)),
            s.get("additionalProperties"),
        ) {
            (Some(p), _) => check(p, v, &at, out),
            (None, Some(extra)) => check(extra, v, &at, out),
            (None, None) => {}
        }
    }
}

/// Where the document `command` wrote breaks assets/schema/COMMAND.schema.json.
pub fn schema_errors(command: &str, doc: &Value) -> Vec<String> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("assets/schema/{command}.schema.json"));
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).expect("schema file"))
        .expect("schema is JSON");
    validate(&schema, doc)
}

/// The header every document carries, checked against what this machine says;
/// `started`: just before the command was launched.
pub fn assert_header(doc: &Value, command: &str, started: SystemTime) {
    assert_eq!(doc["schema_version"], 3);
    let version = doc["schedlab_version"].as_str().expect("schedlab_version");
    assert!(version.starts_with(env!("CARGO_PKG_VERSION")), "{version}");
    let start = humantime::parse_rfc3339(doc["start_time"].as_str().expect("start_time"))
        .expect("start_time is RFC 3339");
    // Whole seconds: the command started in the second this test launched it or later.
    let started_s = started
        - Duration::from_nanos(u64::from(
            started
                .duration_since(SystemTime::UNIX_EPOCH)
                .expect("clock")
                .subsec_nanos(),
        ));
    assert!(
        start >= started_s && start <= SystemTime::now(),
        "start_time {start:?} outside the command's life"
    );
    let uts = nix::sys::utsname::uname().expect("uname");
    assert_eq!(doc["host"], uts.nodename().to_string_lossy().as_ref());
    assert_eq!(doc["kernel"], uts.release().to_string_lossy().as_ref());
    assert_eq!(doc["argv"][1], command);
    let online = schedlab::system::online_cpus().count();
    assert_eq!(doc["machine"]["cpus"].as_u64(), Some(online as u64));
    assert_eq!(
        doc["machine"]["kernel_version"],
        uts.version().to_string_lossy().as_ref()
    );
}

/// The document `command` wrote (launched at `started`) has the header, follows its
/// schema, and every number's name says its unit.
pub fn assert_conventions(command: &str, doc: &Value, started: SystemTime) {
    assert_header(doc, command, started);
    let errors = schema_errors(command, doc);
    assert!(errors.is_empty(), "{command}: {}", errors.join("\n"));
    let unitless = unitless_numbers(doc);
    assert!(
        unitless.is_empty(),
        "{command}: numbers whose name says no unit: {}",
        unitless.join(", ")
    );
}

/// Name endings that say a number's unit: times, rates, sizes, frequencies, CPUs (CPU
/// seconds per second), and fractions (0..1; `_error` is a fraction of CPU time in every
/// document), or a time per thing (`tracer_ns_per_event`, `us_per_op`).
const UNIT_SUFFIXES: &[&str] = &[
    "_ns",
    "_us",
    "_ms",
    "_s",
    "_per_s",
    "_bytes",
    "_hz",
    "_cpus",
    "_share",
    "_fraction",
    "_ratio",
    "_error",
];

/// Numbers with no unit because they are counts, identifiers or ratios; each is checked
/// by name wherever it occurs.
const UNITLESS: &[&str] = &[
    // Counts.
    "count",
    "cpus",
    "jobs",
    "samples",
    "rounds",
    "partial_runs",
    "foreign_load_runs",
    "progress_total",
    "latency_dropped",
    "events",
    "lost",
    "undecodable",
    "switches_in",
    "wakeups",
    "wakeups_unseen",
    "preempted",
    "blocked",
    "migrations",
    "procfs_switches",
    "procfs_voluntary",
    "waking_cross_cpu_only",
    "idle_switches_filled",
    "idle_switches_inferred",
    "loops",
    "overruns",
    "slices",
    "tasks",
    "writable",
    "read_only",
    // check diff's findings by verdict.
    "regressed",
    "better",
    "same",
    "not_compared",
    // Identifiers and levels: which CPU, task, round; a nice value, an RT priority; the
    // document's own version.
    "cpu",
    "last_cpu",
    "worst_cpu",
    "pid",
    "tid",
    "nice",
    "rt_priority",
    "priority",
    "outlier_rounds",
    "schema_version",
    // Ratios: B/A, trace/procfs, cross-CPU/same-CPU switch cost.
    "ratios",
    "ratio_median",
    "switches_vs_procfs",
    "ratio_to_same_cpu",
    // A fraction of a CPU (the singular of `_share`).
    "share",
    // A sweep row's knob value: in the knob's own unit, which its name says
    // (sys.rt_runtime_us).
    "value",
];

/// Every number in `doc` (by path) whose name carries no unit and is not a known count,
/// identifier or ratio. A number beside a `unit` string (a headline's or finding's
/// `value`) is in that unit, and so are the `a` and `b` sides of a compared metric.
pub fn unitless_numbers(doc: &Value) -> Vec<String> {
    fn named_with_unit(name: &str) -> bool {
        UNIT_SUFFIXES.iter().any(|s| name.ends_with(s))
            || ["_ns_per_", "_us_per_"].iter().any(|s| name.contains(s))
            || name.starts_with("us_per_")
            || UNITLESS.contains(&name)
    }
    fn walk(v: &Value, name: &str, path: &str, has_unit: bool, out: &mut Vec<String>) {
        match v {
            Value::Number(_) if !has_unit && !named_with_unit(name) => out.push(path.into()),
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    walk(item, name, &format!("{path}[{i}]"), has_unit, out);
                }
            }
            Value::Object(map) => {
                let unit = has_unit || map.get("unit").is_some_and(Value::is_string);
                for (k, item) in map {
                    // The unit covers its own object's numbers (and lists of them) and
                    // the compared sides; a nested object (a finding's details) names its
                    // own.
                    let plain = match item {
                        Value::Array(a) => a.iter().all(Value::is_number),
                        other => other.is_number(),
                    };
                    let inherits = unit && (plain || k == "a" || k == "b");
                    walk(item, k, &format!("{path}.{k}"), inherits, out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(doc, "", "", false, &mut out);
    out
}
