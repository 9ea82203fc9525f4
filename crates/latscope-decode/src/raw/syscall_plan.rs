//! [`SyscallPlan`]: `raw_syscalls` records turned into typed events without looking fields up by name.
//!
//! A syscall-heavy trace is mostly `sys_enter`/`sys_exit` (87 % of the events of the benchmark file), so
//! their two or three fields are located once per format. The result is the one
//! [`typed::build`](crate::typed::build) gives for the same record (a test holds the two together); a
//! record the plan cannot read (cut short) goes through `typed::build` like any other.

use super::format::{EventFormat, FieldDef, FieldKind};
use super::page::read_uint;
use super::record::read_int;
use latscope_model::{EventKind, SyscallArgs};

/// An integer field: (offset, size, signed).
type IntAt = (usize, usize, bool);

/// Where a `raw_syscalls` format keeps its fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyscallPlan {
    /// `sys_enter`: `long id`, `unsigned long args[6]` (offset, element size).
    Enter {
        /// The syscall number.
        id: IntAt,
        /// The six arguments: offset and element size.
        args: (usize, usize),
    },
    /// `sys_exit`: `long id`, `long ret`.
    Exit {
        /// The syscall number.
        id: IntAt,
        /// The return value.
        ret: IntAt,
    },
}

impl SyscallPlan {
    /// The plan for `format` when it is `raw_syscalls:sys_enter` or `sys_exit` with the usual fields;
    /// `long_size` is the recording kernel's word size (elements of `unsigned long args[6]`).
    pub fn of(format: &EventFormat, long_size: usize) -> Option<SyscallPlan> {
        if &*format.system != "raw_syscalls" {
            return None;
        }
        let int = |name: &str| {
            let f = format.field(name).filter(|f| f.kind == FieldKind::Int && (1..=8).contains(&f.size))?;
            Some((f.offset as usize, f.size as usize, f.signed))
        };
        match &*format.name {
            "sys_enter" => {
                let args: &FieldDef = format.field("args")?;
                let elem = if args.is_long { long_size } else { 4 };
                let whole = args.kind == (FieldKind::Array { count: 6 }) && args.size as usize == 6 * elem;
                (whole && matches!(elem, 4 | 8))
                    .then_some(SyscallPlan::Enter { id: int("id")?, args: (args.offset as usize, elem) })
            }
            "sys_exit" => Some(SyscallPlan::Exit { id: int("id")?, ret: int("ret")? }),
            _ => None,
        }
    }

    /// The typed event of one record; `None` when the record is too short for the plan.
    #[inline(always)]
    pub fn build(&self, data: &[u8], big_endian: bool) -> Option<EventKind> {
        let int = |(offset, size, signed): IntAt| read_int(data, offset, size, signed, big_endian);
        let nr = |id| int(id).and_then(|v| i32::try_from(v).ok());
        Some(match *self {
            SyscallPlan::Enter { id, args: (offset, elem) } => {
                let words = syscall_words(data.get(offset..offset.checked_add(6 * elem)?)?, elem, big_endian)?;
                EventKind::SysEnter { nr: nr(id), name: None, args: SyscallArgs::Words(words) }
            }
            SyscallPlan::Exit { id, ret } => EventKind::SysExit { nr: nr(id), name: None, ret: int(ret)? },
        })
    }
}

/// `unsigned long args[6]`'s words from its `6 * elem` bytes; `None` when they are not that many.
#[inline]
pub fn syscall_words(bytes: &[u8], elem: usize, big_endian: bool) -> Option<[u64; 6]> {
    if elem == 0 || bytes.len() != 6 * elem {
        return None;
    }
    let mut words = [0u64; 6];
    if elem == 8 && !big_endian {
        // The usual case (64-bit little-endian kernels), without a match per word.
        for (w, b) in words.iter_mut().zip(bytes.chunks_exact(8)) {
            *w = u64::from_le_bytes(b.try_into().ok()?);
        }
        return Some(words);
    }
    for (w, b) in words.iter_mut().zip(bytes.chunks_exact(elem)) {
        *w = match (b.len(), big_endian) {
            (8, false) => u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            (8, true) => u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            _ => read_uint(b, 0, b.len(), big_endian)?,
        };
    }
    Some(words)
}
