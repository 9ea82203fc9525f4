//! [`RecordSource`]: a raw record as a [`FieldSource`] for the shared typed-event builder, resolving
//! addresses through kallsyms and `bprint` formats through printk_formats.

use super::bprint::format_bprint;
use super::decoder::RawDecoder;
use super::format::FieldKind;
use super::record::RawRecord;
use crate::typed::FieldSource;
use latscope_model::{Field, Text};

/// One record plus the decoder's symbol tables.
pub struct RecordSource<'a> {
    /// The record.
    pub rec: RawRecord<'a>,
    /// The decoder (kallsyms, printk formats, interner).
    pub dec: &'a RawDecoder,
}

impl<'a> RecordSource<'a> {
    fn field(&self, name: &str) -> Option<&'a super::format::FieldDef> {
        self.dec.field(self.rec.format, name)
    }

    fn bprint_text(&self) -> Option<Text> {
        let fmt_addr = self.int("fmt")? as u64;
        let fmt = self.dec.printk_format(fmt_addr)?;
        let buf = self.rec.bytes_of(self.field("buf")?)?;
        let long = self.dec.page_layout().commit_size;
        let be = self.rec.big_endian;
        let text = format_bprint(fmt, buf, long, be, &|a| self.dec.symbolize(a).to_string());
        Some(Text::from(text.trim_end_matches('\n')))
    }
}

impl FieldSource for RecordSource<'_> {
    fn int(&self, name: &str) -> Option<i64> {
        self.rec.int_of(self.field(name)?)
    }

    fn text(&self, name: &str) -> Option<Text> {
        let f = self.field(name)?;
        match f.kind {
            FieldKind::Int if name == "str" => {
                // bputs: a pointer to a constant string in printk_formats.
                let s = self.dec.printk_format(self.rec.int_of(f)? as u64)?;
                Some(Text::from(s.trim_end_matches('\n')))
            }
            FieldKind::Int => None,
            FieldKind::Array { .. } if name == "buf" && &**self.rec.format.name() == "bprint" => self.bprint_text(),
            FieldKind::Array { .. } => {
                // `unsigned long args[6]` ➜ `0x0, 0x7ffc…` as ftrace prints arrays of longs.
                let bytes = self.rec.bytes_of(f)?;
                let elem = if f.ctype.contains("long") { self.dec.page_layout().commit_size } else { 4 };
                let be = self.rec.big_endian;
                let mut out = String::with_capacity(bytes.len() * 3);
                for i in 0..bytes.len() / elem {
                    if let Some(v) = super::page::read_uint(bytes, i * elem, elem, be) {
                        if !out.is_empty() {
                            out.push_str(", ");
                        }
                        push_hex(&mut out, v);
                    }
                }
                Some(Text::from(out))
            }
            _ => {
                let s = self.rec.str_of(f)?;
                let s = if &**self.rec.format.name() == "print" { s.trim_end_matches('\n') } else { s };
                Some(self.dec.intern(s))
            }
        }
    }

    fn fields(&self) -> Vec<Field> {
        self.rec.payload_fields()
    }

    fn ptr(&self, name: &str) -> Option<u64> {
        self.int(name).map(|v| v as u64)
    }

    fn func(&self, name: &str) -> Option<Text> {
        let v = self.int(name)?;
        if name.ends_with("_offs") {
            // preemptirq: s32 offsets from _stext.
            let base = self.dec.stext()?;
            return Some(self.dec.symbolize(base.wrapping_add(v as u64)));
        }
        // `%ps` (function pointers: hrtimer/workqueue `function`, `handler`) prints the bare name;
        // `%pS` (`ip`, `caller`, `parent`) adds the offset.
        let with_offset = matches!(name, "caller" | "parent" | "caller_offs" | "parent_offs");
        Some(if with_offset { self.dec.symbolize(v as u64) } else { self.dec.symbol_name(v as u64) })
    }
}

/// Append `0x…` lower-case hex of `v` without the formatting machinery (hot for syscall arguments).
fn push_hex(out: &mut String, v: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    out.push_str("0x");
    let nibbles = ((64 - v.leading_zeros()).max(1)).div_ceil(4);
    for i in (0..nibbles).rev() {
        out.push(DIGITS[((v >> (i * 4)) & 0xf) as usize] as char);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex() {
        for v in [0u64, 1, 0xf, 0x10, 0xdead_beef, u64::MAX] {
            let mut s = String::new();
            super::push_hex(&mut s, v);
            assert_eq!(s, format!("0x{v:x}"));
        }
    }
}
