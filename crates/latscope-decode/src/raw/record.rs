//! One raw record read through its event format; field offsets resolved once per format, not per record.

use super::common::{decode_flags, FlagLayout};
use super::format::{EventFormat, FieldDef, FieldKind};
use super::page::read_uint;
use super::syscall_plan::SyscallPlan;
use latscope_model::{Field, FieldValue, Flags, Pid, Text};
use std::sync::Arc;

/// The integer of `size` bytes at `offset` of `data`, sign-extended when `signed`; `None` when out of range.
pub(crate) fn read_int(data: &[u8], offset: usize, size: usize, signed: bool, big_endian: bool) -> Option<i64> {
    let v = read_uint(data, offset, size, big_endian)?;
    Some(if signed && size < 8 {
        let shift = 64 - 8 * size as u32;
        ((v << shift) as i64) >> shift
    } else {
        v as i64
    })
}

/// An event format prepared for fast decoding: the common fields located, the payload fields listed.
#[derive(Clone, Debug)]
pub struct CompiledFormat {
    /// The parsed format.
    pub format: EventFormat,
    common_flags: Option<FieldDef>,
    common_preempt: Option<FieldDef>,
    common_pid: Option<FieldDef>,
    common_lazy: Option<FieldDef>,
    common_migrate: Option<FieldDef>,
    flag_layout: FlagLayout,
    /// Offsets of `common_flags` (1 byte), `common_preempt_count` (1 byte) and `common_pid` (4 bytes) when
    /// they have those sizes (every kernel so far): read directly, once per record.
    common_fast: Option<(usize, usize, usize)>,
    /// For `raw_syscalls` events: their fields located once.
    pub syscall: Option<SyscallPlan>,
    /// Indices into `format.fields` of the non-`common_` fields.
    payload: Vec<usize>,
}

impl CompiledFormat {
    /// Locate the common fields and the payload once; `long_size` is the recording kernel's word size
    /// (the element size of `unsigned long` arrays).
    pub fn new(format: EventFormat, long_size: usize) -> CompiledFormat {
        let get = |n: &str| format.field(n).cloned();
        let common_lazy = get("common_preempt_lazy_count");
        let common_migrate = get("common_migrate_disable");
        let sized = |n: &str, size: u32| format.field(n).filter(|f| f.size == size).map(|f| f.offset as usize);
        let common_fast = match (sized("common_flags", 1), sized("common_preempt_count", 1), sized("common_pid", 4)) {
            (Some(f), Some(p), Some(pid)) => Some((f, p, pid)),
            _ => None,
        };
        CompiledFormat {
            syscall: SyscallPlan::of(&format, long_size),
            common_fast,
            common_flags: get("common_flags"),
            common_preempt: get("common_preempt_count"),
            common_pid: get("common_pid"),
            flag_layout: FlagLayout::of_common_fields(common_lazy.is_some(), common_migrate.is_some()),
            common_migrate,
            common_lazy,
            payload: (0..format.fields.len()).filter(|&i| !format.fields[i].name.starts_with("common_")).collect(),
            format,
        }
    }

    /// Event system.
    pub fn system(&self) -> &Text {
        &self.format.system
    }

    /// Event name.
    pub fn name(&self) -> &Text {
        &self.format.name
    }
}

/// One record's bytes seen through its [`CompiledFormat`].
#[derive(Clone, Copy, Debug)]
pub struct RawRecord<'a> {
    /// The record's format.
    pub format: &'a CompiledFormat,
    /// The record bytes (starting at `common_type`).
    pub data: &'a [u8],
    /// Big-endian input.
    pub big_endian: bool,
}

impl<'a> RawRecord<'a> {
    /// The integer value of field `f` (sign-extended when signed); `None` when out of range or not scalar.
    pub fn int_of(&self, f: &FieldDef) -> Option<i64> {
        if !matches!(f.kind, FieldKind::Int) && f.size > 8 {
            return None;
        }
        let size = f.size as usize;
        if !(1..=8).contains(&size) {
            return None;
        }
        read_int(self.data, f.offset as usize, size, f.signed, self.big_endian)
    }

    /// The text of a string field (`char[N]`, `__data_loc char[]`, `__rel_loc`), cut at the first NUL.
    pub fn str_of(&self, f: &FieldDef) -> Option<&'a str> {
        let bytes = self.bytes_of(f)?;
        let end = memchr::memchr(0, bytes).unwrap_or(bytes.len());
        std::str::from_utf8(&bytes[..end]).ok()
    }

    /// The raw bytes of a field (for dynamic fields, the bytes the location word points to).
    pub fn bytes_of(&self, f: &FieldDef) -> Option<&'a [u8]> {
        let off = f.offset as usize;
        match f.kind {
            FieldKind::DataLoc | FieldKind::RelLoc => {
                let loc = read_uint(self.data, off, 4, self.big_endian)?;
                let (start, len) = ((loc & 0xffff) as usize, (loc >> 16) as usize);
                let start = if f.kind == FieldKind::RelLoc { start + off + f.size as usize } else { start };
                self.data.get(start..start.checked_add(len)?)
            }
            // A flexible array (`u32 buf[]`, size 0) runs to the end of the record.
            FieldKind::Array { count: 0 } if f.size == 0 => self.data.get(off..),
            _ => self.data.get(off..off.checked_add(f.size as usize)?),
        }
    }

    /// Integer value of the field named `name`.
    #[cfg(test)]
    pub fn int(&self, name: &str) -> Option<i64> {
        self.int_of(self.format.format.field(name)?)
    }

    /// String value of the field named `name`.
    #[cfg(test)]
    pub fn str(&self, name: &str) -> Option<&'a str> {
        self.str_of(self.format.format.field(name)?)
    }

    /// `common_pid` (-1 when the format has none).
    pub fn pid(&self) -> Pid {
        if let Some((_, _, off)) = self.format.common_fast {
            return match self.data.get(off..off + 4) {
                Some(b) => {
                    let b = [b[0], b[1], b[2], b[3]];
                    if self.big_endian {
                        i32::from_be_bytes(b)
                    } else {
                        i32::from_le_bytes(b)
                    }
                }
                None => -1,
            };
        }
        self.format.common_pid.as_ref().and_then(|f| self.int_of(f)).map_or(-1, |v| v as Pid)
    }

    /// The context flags from the common fields.
    pub fn flags(&self) -> Flags {
        let c = self.format;
        let byte = |f: &Option<FieldDef>| f.as_ref().and_then(|f| self.int_of(f)).map(|v| v as u8);
        if let Some((fl, pc, _)) = c.common_fast {
            return match (self.data.get(fl), self.data.get(pc)) {
                (Some(&fl), Some(&pc)) => {
                    decode_flags(c.flag_layout, fl, pc, byte(&c.common_lazy), byte(&c.common_migrate))
                }
                _ => Flags::default(),
            };
        }
        match (byte(&c.common_flags), byte(&c.common_preempt)) {
            (Some(fl), Some(pc)) => decode_flags(c.flag_layout, fl, pc, byte(&c.common_lazy), byte(&c.common_migrate)),
            _ => Flags::default(),
        }
    }

    /// The value of field `f` as an [`EventKind::Other`](latscope_model::EventKind::Other) field value,
    /// strings made by `text` (an interner).
    fn value_with(&self, f: &FieldDef, text: &dyn Fn(&str) -> Text) -> FieldValue {
        match f.kind {
            FieldKind::Int => self.int_of(f).map_or_else(|| FieldValue::Str(text("?")), FieldValue::Int),
            FieldKind::FixedStr => FieldValue::Str(text(self.str_of(f).unwrap_or("?"))),
            FieldKind::DataLoc | FieldKind::RelLoc if f.ctype.contains("char") => {
                FieldValue::Str(text(self.str_of(f).unwrap_or("?")))
            }
            _ => {
                let bytes = self.bytes_of(f).unwrap_or(&[]);
                let mut s = String::with_capacity(bytes.len() * 2 + 2);
                s.push_str("0x");
                for b in bytes {
                    s.push_str(&format!("{b:02x}"));
                }
                FieldValue::Str(Arc::from(s))
            }
        }
    }

    /// All payload fields (the non-`common_` ones) with their values.
    #[cfg(test)]
    pub fn payload_fields(&self) -> Vec<Field> {
        self.payload_fields_with(&|s| Text::from(s))
    }

    /// [`payload_fields`](Self::payload_fields) with names and string values made by `text`: an interner
    /// of the decoding thread's own, so the events share no reference count with another thread's.
    pub fn payload_fields_with(&self, text: &dyn Fn(&str) -> Text) -> Vec<Field> {
        let fmt = &self.format.format;
        self.format
            .payload
            .iter()
            .map(|&i| Field { name: text(&fmt.fields[i].name), value: self.value_with(&fmt.fields[i], text) })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::format::parse_format;

    #[test]
    fn reads_ints_strings_and_flags() {
        let fmt = parse_format(
            "sched",
            "name: ev\nID: 5\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\tfield:char comm[4];\toffset:8;\tsize:4;\tsigned:0;\n\
\tfield:short delta;\toffset:12;\tsize:2;\tsigned:1;\n\
\tfield:__data_loc char[] name;\toffset:16;\tsize:4;\tsigned:0;\n",
        )
        .expect("format");
        let c = CompiledFormat::new(fmt, 8);
        let mut d = vec![5, 0, 0x09, 0x12, 7, 0, 0, 0, b'a', b'b', 0, 0, 0xfe, 0xff, 0, 0];
        d.extend_from_slice(&((3u32 << 16) | 20).to_le_bytes());
        d.extend_from_slice(b"hi\0\0");
        let r = RawRecord { format: &c, data: &d, big_endian: false };
        assert_eq!(r.pid(), 7);
        assert_eq!(r.str("comm"), Some("ab"));
        assert_eq!(r.int("delta"), Some(-2));
        assert_eq!(r.str("name"), Some("hi"));
        let f = r.flags();
        assert!(f.irqs_off() && f.in_hardirq());
        assert_eq!((f.preempt_depth, f.migrate_disable), (Some(2), Some(1)));
        assert_eq!(r.payload_fields().len(), 3);
        // Out-of-range locations give None, not a panic.
        let short = &d[..10];
        let r = RawRecord { format: &c, data: short, big_endian: false };
        assert_eq!((r.int("delta"), r.str("name")), (None, None));
    }
}
