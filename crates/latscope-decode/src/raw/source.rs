//! [`RecordSource`]: a raw record as a [`FieldSource`] for the shared typed-event builder, resolving
//! addresses through kallsyms and `bprint` formats through printk_formats.

use super::bprint::format_bprint;
use super::decoder::RawDecoder;
use super::format::FieldKind;
use super::record::RawRecord;
use super::syscall_plan::syscall_words;
use crate::typed::FieldSource;
use latscope_model::{Field, SyscallArgs, TaskName, Text};
use std::sync::Arc;

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
                let elem = if f.is_long { self.dec.page_layout().commit_size } else { 4 };
                Some(hex_list(bytes, elem, self.rec.big_endian))
            }
            _ => {
                let s = self.rec.str_of(f)?;
                let s = if &**self.rec.format.name() == "print" { s.trim_end_matches('\n') } else { s };
                Some(self.dec.intern(s))
            }
        }
    }

    fn task_name(&self, name: &str) -> Option<TaskName> {
        let f = self.field(name)?;
        match f.kind {
            FieldKind::Int => None,
            _ => Some(TaskName::from_c_bytes(self.rec.bytes_of(f)?)),
        }
    }

    fn fields(&self) -> Vec<Field> {
        self.rec.payload_fields_with(&|s| self.dec.intern(s))
    }

    fn intern(&self, s: &str) -> Text {
        self.dec.intern(s)
    }

    fn stack_frames(&self) -> Option<Arc<[Text]>> {
        // `int size; unsigned long caller[]`: the format declares 8 callers, the record holds `size` of them
        // (a stack trigger records the whole stack), the record's length bounds it either way.
        let size = usize::try_from(self.int("size")?).ok()?;
        let f = self.field("caller")?;
        let word = self.dec.page_layout().commit_size.max(1);
        let bytes = self.rec.data.get(f.offset as usize..)?;
        let be = self.rec.big_endian;
        let end_marker = if word == 4 { u64::from(u32::MAX) } else { u64::MAX };
        let addrs: Vec<u64> = (0..size.min(bytes.len() / word))
            .filter_map(|i| super::page::read_uint(bytes, i * word, word, be))
            .take_while(|a| *a != end_marker)
            .filter(|a| *a != 0)
            .collect();
        Some(self.dec.stack_names(&addrs))
    }

    fn syscall_args(&self, name: &str) -> Option<SyscallArgs> {
        let f = self.field(name)?;
        let bytes = self.rec.bytes_of(f)?;
        let elem = if f.is_long { self.dec.page_layout().commit_size } else { 4 };
        let be = self.rec.big_endian;
        match f.kind {
            FieldKind::Array { count: 6 } => match syscall_words(bytes, elem, be) {
                Some(words) => Some(SyscallArgs::Words(words)),
                None => self.text(name).map(SyscallArgs::Text),
            },
            _ => self.text(name).map(SyscallArgs::Text),
        }
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

/// The elements of an integer array as `0x0, 0x7ffc…`, built on the stack (hot: every syscall entry).
fn hex_list(bytes: &[u8], elem: usize, be: bool) -> Text {
    const MAX_ITEM: usize = ", 0x".len() + 16;
    let count = bytes.len() / elem.max(1);
    let mut stack = [0u8; 12 * MAX_ITEM];
    let mut heap = Vec::new();
    let out: &mut [u8] = if count * MAX_ITEM <= stack.len() {
        &mut stack
    } else {
        heap.resize(count * MAX_ITEM, 0);
        &mut heap
    };
    let mut n = 0;
    for i in 0..count {
        if let Some(v) = super::page::read_uint(bytes, i * elem, elem, be) {
            if n > 0 {
                out[n..n + 2].copy_from_slice(b", ");
                n += 2;
            }
            n += write_hex(&mut out[n..], v);
        }
    }
    Text::from(std::str::from_utf8(&out[..n]).unwrap_or_default())
}

/// Write `0x…` lower-case hex of `v` at the start of `out` (at least 18 bytes); returns the length.
fn write_hex(out: &mut [u8], v: u64) -> usize {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let nibbles = ((64 - v.leading_zeros()).max(1)).div_ceil(4) as usize;
    out[..2].copy_from_slice(b"0x");
    let digits = &mut out[2..2 + nibbles];
    let mut v = v;
    for d in digits.iter_mut().rev() {
        *d = DIGITS[(v & 0xf) as usize];
        v >>= 4;
    }
    2 + nibbles
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex() {
        for v in [0u64, 1, 0xf, 0x10, 0xdead_beef, u64::MAX] {
            let mut b = [0u8; 18];
            let n = super::write_hex(&mut b, v);
            assert_eq!(std::str::from_utf8(&b[..n]).expect("ascii"), format!("0x{v:x}"));
        }
        let bytes: Vec<u8> = [0u64, 0x7ffc, u64::MAX].iter().flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(&*super::hex_list(&bytes, 8, false), "0x0, 0x7ffc, 0xffffffffffffffff");
        let many: Vec<u8> = (0..40u32).flat_map(|v| v.to_le_bytes()).collect();
        assert_eq!(super::hex_list(&many, 4, false).split(", ").count(), 40);
        assert_eq!(&*super::hex_list(&[], 8, false), "");
    }
}
