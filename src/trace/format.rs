//! A pure parser of tracefs tracepoint `format` files: the tracepoint's name and id and,
//! for each field, its name, C type, offset, size and signedness. The decoder reads raw
//! samples only through these offsets, so a kernel that moves a field still decodes.

/// One field of a tracepoint's raw record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: String,
    /// The C type as the kernel prints it, without the name ("unsigned short",
    /// "char", "__data_loc char[]").
    pub ty: String,
    pub offset: usize,
    pub size: usize,
    pub signed: bool,
    /// `N` of a fixed array `name[N]` (a `char comm[16]`); None for scalars and for
    /// `__data_loc` strings, whose bytes live elsewhere in the record.
    pub array_len: Option<usize>,
}

/// A parsed format file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Format {
    pub name: String,
    pub id: u32,
    /// The common fields first (common_type, common_pid, ...), then the event's own.
    pub fields: Vec<Field>,
}

/// Why a format file could not be read; one line each.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FormatError {
    #[error("no `name:` line")]
    NoName,
    #[error("no `ID:` line")]
    NoId,
    #[error("bad ID {0:?}")]
    BadId(String),
    #[error("line {line}: cannot read the field {text:?}")]
    BadField { line: usize, text: String },
    #[error("no fields after `format:`")]
    NoFields,
}

impl Format {
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }
}

/// Parse the text of `events/<system>/<name>/format`.
pub fn parse(text: &str) -> Result<Format, FormatError> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let trimmed = line.trim();
        if let Some(rest) = trimmed.strip_prefix("name:") {
            name = Some(rest.trim().to_string());
        } else if let Some(rest) = trimmed.strip_prefix("ID:") {
            let rest = rest.trim();
            id = Some(
                rest.parse::<u32>()
                    .map_err(|_| FormatError::BadId(rest.to_string()))?,
            );
        } else if trimmed.starts_with("field") {
            fields.push(parse_field(trimmed).ok_or_else(|| FormatError::BadField {
                line: i + 1,
                text: trimmed.to_string(),
            })?);
        } else if trimmed.starts_with("print fmt:") {
            // The print format can hold anything (even text looking like a field).
            break;
        }
    }
    let name = name.ok_or(FormatError::NoName)?;
    let id = id.ok_or(FormatError::NoId)?;
    if fields.is_empty() {
        return Err(FormatError::NoFields);
    }
    Ok(Format { name, id, fields })
}

/// `field:char prev_comm[16]; offset:8; size:16; signed:0;` (older kernels also
/// print `field special:` and leave out `signed:`).
fn parse_field(line: &str) -> Option<Field> {
    let mut decl = None;
    let mut offset = None;
    let mut size = None;
    let mut signed = false;
    for part in line.split(';') {
        let part = part.trim();
        if part.is_empty() {
            continue;
        }
        let (key, value) = part.split_once(':')?;
        match key.trim() {
            "field" | "field special" => decl = Some(value.trim()),
            "offset" => offset = Some(value.trim().parse().ok()?),
            "size" => size = Some(value.trim().parse().ok()?),
            "signed" => signed = value.trim() == "1",
            // Unknown keys from a future kernel: not needed to find a field.
            _ => {}
        }
    }
    let decl = decl?;
    let split = decl.rfind(|c: char| c.is_whitespace())?;
    let (ty, last) = (decl[..split].trim(), decl[split..].trim());
    let (name, array_len) = match last.split_once('[') {
        Some((n, len)) => (n, len.strip_suffix(']')?.trim().parse().ok()),
        None => (last, None),
    };
    if name.is_empty() || ty.is_empty() {
        return None;
    }
    Some(Field {
        name: name.to_string(),
        ty: ty.to_string(),
        offset: offset?,
        size: size?,
        signed,
        array_len,
    })
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The fixture format files of Linux 6.18 (assets/fixtures/linux-6.18/tracefs).
    pub(crate) fn fixture(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("assets/fixtures/linux-6.18/tracefs")
            .join(format!("{name}.format"));
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    fn field(f: &Format, name: &str) -> (usize, usize, bool) {
        let x = f
            .field(name)
            .unwrap_or_else(|| panic!("{name} in {}", f.name));
        (x.offset, x.size, x.signed)
    }

    #[test]
    fn sched_switch_fixture() {
        let f = parse(&fixture("sched_switch")).unwrap();
        assert_eq!(f.name, "sched_switch");
        assert_eq!(f.id, 372);
        assert_eq!(f.fields.len(), 11);
        assert_eq!(field(&f, "common_type"), (0, 2, false));
        assert_eq!(field(&f, "common_pid"), (4, 4, true));
        assert_eq!(field(&f, "prev_comm"), (8, 16, false));
        assert_eq!(field(&f, "prev_pid"), (24, 4, true));
        assert_eq!(field(&f, "prev_state"), (32, 8, true));
        assert_eq!(field(&f, "next_comm"), (40, 16, false));
        assert_eq!(field(&f, "next_pid"), (56, 4, true));
        assert_eq!(field(&f, "next_prio"), (60, 4, true));
        let comm = f.field("next_comm").unwrap();
        assert_eq!((comm.ty.as_str(), comm.array_len), ("char", Some(16)));
        assert_eq!(f.field("prev_state").unwrap().ty, "long");
        assert_eq!(f.field("common_type").unwrap().ty, "unsigned short");
        assert!(f.field("prev").is_none());
    }

    #[test]
    fn wakeup_family_and_migrate_fixtures() {
        for (name, id) in [
            ("sched_waking", 375),
            ("sched_wakeup", 374),
            ("sched_wakeup_new", 373),
        ] {
            let f = parse(&fixture(name)).unwrap();
            assert_eq!((f.name.as_str(), f.id), (name, id));
            assert_eq!(field(&f, "pid"), (24, 4, true), "{name}");
            assert_eq!(field(&f, "target_cpu"), (32, 4, true), "{name}");
            assert_eq!(field(&f, "comm"), (8, 16, false), "{name}");
        }
        let m = parse(&fixture("sched_migrate_task")).unwrap();
        assert_eq!(m.id, 371);
        // 6.18 moved comm out of line: a 4-byte __data_loc, so pid moved to 12.
        let comm = m.field("comm").unwrap();
        assert_eq!(
            (comm.ty.as_str(), comm.size, comm.array_len),
            ("__data_loc char[]", 4, None)
        );
        assert_eq!(field(&m, "pid"), (12, 4, true));
        assert_eq!(field(&m, "orig_cpu"), (20, 4, true));
        assert_eq!(field(&m, "dest_cpu"), (24, 4, true));
    }

    #[test]
    fn older_forms_and_errors() {
        let old = "name: sched_wakeup\nID: 60\nformat:\n\tfield:unsigned short common_type;\toffset:0;\tsize:2;\n\tfield special:int pid;\toffset:4;\tsize:4;\tsigned:1;\n\tfield:int success;\toffset:8;\tsize:4;\tsigned:1;\tfuture:3;\n\nprint fmt: \"field:int bogus;\toffset:99;\"";
        let f = parse(old).unwrap();
        assert_eq!(f.fields.len(), 3, "nothing read from the print format");
        assert_eq!(field(&f, "common_type"), (0, 2, false));
        assert_eq!(field(&f, "pid"), (4, 4, true));
        assert_eq!(field(&f, "success"), (8, 4, true));

        assert_eq!(parse("ID: 3\nformat:\n"), Err(FormatError::NoName));
        assert_eq!(parse("name: x\nformat:\n"), Err(FormatError::NoId));
        assert_eq!(
            parse("name: x\nID: abc\n"),
            Err(FormatError::BadId("abc".into()))
        );
        assert_eq!(
            parse("name: x\nID: 1\nformat:\n"),
            Err(FormatError::NoFields)
        );
        let bad = "name: x\nID: 1\nformat:\n\tfield:int pid;\toffset:x;\tsize:4;\n";
        assert!(matches!(
            parse(bad),
            Err(FormatError::BadField { line: 4, .. })
        ));
        let no_name = "name: x\nID: 1\nformat:\n\tfield:int;\toffset:0;\tsize:4;\n";
        assert!(matches!(parse(no_name), Err(FormatError::BadField { .. })));
        let no_size = "name: x\nID: 1\nformat:\n\tfield:int pid;\toffset:0;\n";
        assert!(matches!(parse(no_size), Err(FormatError::BadField { .. })));
        for e in [FormatError::NoName, FormatError::BadId("1\n2".into())] {
            assert!(!e.to_string().contains('\n') || e.to_string().contains("\\n"));
        }
    }
}
