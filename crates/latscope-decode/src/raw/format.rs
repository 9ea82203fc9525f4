//! tracefs event format files (`events/SYSTEM/NAME/format`): id, field layout, print fmt.

use latscope_model::Text;
use std::sync::Arc;

/// How a field's bytes are laid out in a record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    /// A scalar integer of `size` bytes (1, 2, 4 or 8).
    Int,
    /// A fixed `char name[N]` string (NUL-padded).
    FixedStr,
    /// `__data_loc`: a u32 holding `len << 16 | offset` (offset from the record start).
    DataLoc,
    /// `__rel_loc`: like `DataLoc`, offset relative to the end of this field.
    RelLoc,
    /// A fixed array of `count` elements (`u32 buf[]`, `unsigned long caller[8]`).
    Array {
        /// Elements in the array (0 for a flexible array).
        count: u32,
    },
}

/// One field of an event record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldDef {
    /// Field name (`prev_pid`).
    pub name: Text,
    /// C type as written (`pid_t`, `char[16]`, `__data_loc char[]`).
    pub ctype: String,
    /// Byte offset in the record.
    pub offset: u32,
    /// Byte size in the record.
    pub size: u32,
    /// Signed integer.
    pub signed: bool,
    /// Layout.
    pub kind: FieldKind,
    /// The C type names a `long` (array elements of the kernel's word size).
    pub is_long: bool,
}

/// A parsed event format.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventFormat {
    /// Event system (`sched`); `ftrace` for the ftrace-internal events.
    pub system: Text,
    /// Event name (`sched_switch`).
    pub name: Text,
    /// The `ID:` the ring buffer stores in `common_type`.
    pub id: u16,
    /// All fields, common ones first, in file order.
    pub fields: Vec<FieldDef>,
    /// The `print fmt:` line, kept as text.
    pub print_fmt: String,
}

impl EventFormat {
    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&FieldDef> {
        self.fields.iter().find(|f| &*f.name == name)
    }
}

/// Parse one format file. `system` is the directory the file came from (the file itself only names the event).
/// Errors say which line is wrong and why.
pub(crate) fn parse_format(system: &str, text: &str) -> Result<EventFormat, String> {
    let mut name = None;
    let mut id = None;
    let mut fields = Vec::new();
    let mut print_fmt = String::new();
    for (n, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if let Some(v) = line.strip_prefix("name:") {
            name = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("ID:") {
            let v = v.trim();
            id = Some(v.parse::<u16>().map_err(|_| format!("line {}: bad ID `{v}`", n + 1))?);
        } else if line.starts_with("field:") || line.starts_with("field special:") {
            fields.push(parse_field(line).map_err(|e| format!("line {}: {e}", n + 1))?);
        } else if let Some(v) = line.strip_prefix("print fmt:") {
            print_fmt = v.trim().to_string();
        }
    }
    let name = name.ok_or("no `name:` line")?;
    let id = id.ok_or_else(|| format!("event {name}: no `ID:` line"))?;
    Ok(EventFormat { system: Arc::from(system), name: Arc::from(name.as_str()), id, fields, print_fmt })
}

/// Parse one `field:TYPE NAME; offset:N; size:N; signed:N;` line.
fn parse_field(line: &str) -> Result<FieldDef, String> {
    let mut decl = None;
    let (mut offset, mut size, mut signed) = (None, None, None);
    for part in line.split(';') {
        let part = part.trim();
        if let Some(v) = part.strip_prefix("field special:").or_else(|| part.strip_prefix("field:")) {
            decl = Some(v.trim());
        } else if let Some(v) = part.strip_prefix("offset:") {
            offset = v.trim().parse::<u32>().ok();
        } else if let Some(v) = part.strip_prefix("size:") {
            size = v.trim().parse::<u32>().ok();
        } else if let Some(v) = part.strip_prefix("signed:") {
            signed = Some(v.trim() == "1");
        }
    }
    let decl = decl.ok_or("no field declaration")?;
    let offset = offset.ok_or("field without a valid `offset:`")?;
    let size = size.ok_or("field without a valid `size:`")?;
    // `unsigned char prev_comm[16]`, `__data_loc char[] name`, `unsigned long caller[8]`.
    let (ctype_part, name_part) = match decl.rfind(|c: char| c.is_whitespace()) {
        Some(i) => (decl[..i].trim(), decl[i + 1..].trim()),
        None => ("", decl),
    };
    let (name, count) = match name_part.find('[') {
        Some(i) => {
            let inner = name_part[i + 1..].trim_end_matches(']');
            (&name_part[..i], Some(inner.parse::<u32>().unwrap_or(0)))
        }
        None => (name_part, None),
    };
    if name.is_empty() {
        return Err(format!("field `{decl}` has no name"));
    }
    let is_char = ctype_part.ends_with("char") || ctype_part.ends_with("char[]");
    let kind = if ctype_part.starts_with("__data_loc") {
        FieldKind::DataLoc
    } else if ctype_part.starts_with("__rel_loc") {
        FieldKind::RelLoc
    } else if let Some(count) = count {
        if is_char {
            FieldKind::FixedStr
        } else {
            FieldKind::Array { count }
        }
    } else if size == 0 {
        // `u32 buf; size:0` (older kernels' spelling of a flexible array).
        FieldKind::Array { count: 0 }
    } else {
        FieldKind::Int
    };
    let ctype = match count {
        Some(c) => format!("{ctype_part}[{c}]"),
        None => ctype_part.to_string(),
    };
    // Old kernels have no `signed:`; guess from the type.
    let signed = signed.unwrap_or_else(|| !ctype_part.contains("unsigned") && !ctype_part.starts_with('u'));
    let is_long = ctype.contains("long");
    Ok(FieldDef { name: Arc::from(name), ctype, offset, size, signed, kind, is_long })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SWITCH: &str = "name: sched_switch\nID: 316\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:char prev_comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t prev_pid;\toffset:24;\tsize:4;\tsigned:1;\n\
\tfield:__data_loc char[] name;\toffset:28;\tsize:4;\tsigned:0;\n\
\tfield:unsigned long caller[8];\toffset:32;\tsize:64;\tsigned:0;\n\n\
print fmt: \"prev_comm=%s\", REC->prev_comm\n";

    #[test]
    fn parses_fields_and_kinds() {
        let f = parse_format("sched", SWITCH).expect("parses");
        assert_eq!((f.id, &*f.name, &*f.system), (316, "sched_switch", "sched"));
        assert_eq!(f.fields.len(), 8);
        let comm = f.field("prev_comm").expect("prev_comm");
        assert_eq!((comm.offset, comm.size, comm.kind), (8, 16, FieldKind::FixedStr));
        let pid = f.field("prev_pid").expect("prev_pid");
        assert!(pid.signed);
        assert_eq!(pid.kind, FieldKind::Int);
        assert_eq!(f.field("name").map(|f| f.kind), Some(FieldKind::DataLoc));
        assert_eq!(f.field("caller").map(|f| f.kind), Some(FieldKind::Array { count: 8 }));
        assert!(f.print_fmt.starts_with("\"prev_comm"));
    }

    #[test]
    fn errors_name_the_line() {
        let e = parse_format("x", "name: a\nID: zz\n").expect_err("bad id");
        assert!(e.contains("line 2"), "{e}");
        assert!(parse_format("x", "ID: 3\n").is_err());
    }
}
