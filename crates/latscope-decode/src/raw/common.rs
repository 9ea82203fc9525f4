//! The common fields of every raw record (`common_flags`, `common_preempt_count`, …) ➜ [`Flags`].
//!
//! `trace_flags` bit layout (kernel `trace.h`, `enum trace_flag_type`) by generation:
//!
//! | bit  | 2.6.x – 5.x       | 5.17+ (mainline) | 6.12+           | PREEMPT_RT patch (4.x–6.x) |
//! |------|-------------------|------------------|-----------------|-----------------------------|
//! | 0x01 | IRQS_OFF          | IRQS_OFF         | IRQS_OFF        | IRQS_OFF                    |
//! | 0x02 | IRQS_NOSUPPORT    | (unused)         | NEED_RESCHED_LAZY | IRQS_NOSUPPORT            |
//! | 0x04 | NEED_RESCHED      | NEED_RESCHED     | NEED_RESCHED    | NEED_RESCHED                |
//! | 0x08 | HARDIRQ           | HARDIRQ          | HARDIRQ         | HARDIRQ                     |
//! | 0x10 | SOFTIRQ           | SOFTIRQ          | SOFTIRQ         | SOFTIRQ                     |
//! | 0x20 | PREEMPT_RESCHED   | PREEMPT_RESCHED  | PREEMPT_RESCHED | PREEMPT_RESCHED             |
//! | 0x40 | NMI (4.x+)        | NMI              | NMI             | NMI                         |
//! | 0x80 | —                 | BH_OFF           | BH_OFF          | NEED_RESCHED_LAZY           |
//!
//! `common_preempt_count`: since 5.13 the low nibble is the preempt depth and the high nibble the
//! migrate-disable depth; before, the byte was the preempt depth (which rarely exceeds 15, so the nibble
//! split is applied always). PREEMPT_RT patch kernels add `common_preempt_lazy_count` and (before 5.13)
//! `common_migrate_disable` fields, which are used when present.

use latscope_model::Flags;

/// Which generation's meaning bits 0x02 and 0x80 have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagLayout {
    /// Mainline: 0x02 is NEED_RESCHED_LAZY (6.12+; earlier kernels set it only on architectures without
    /// irqflags support, which no modern architecture is), 0x80 is BH_OFF.
    Mainline,
    /// A PREEMPT_RT patch kernel (the format has `common_preempt_lazy_count`): 0x80 is NEED_RESCHED_LAZY,
    /// 0x02 is IRQS_NOSUPPORT.
    RtPatch,
}

/// Decode `common_flags` and `common_preempt_count` (and the RT patch's extra counts when present).
pub fn decode_flags(layout: FlagLayout, flags: u8, preempt: u8, lazy: Option<u8>, migrate: Option<u8>) -> Flags {
    let bits = match layout {
        FlagLayout::Mainline => MAINLINE_BITS[usize::from(flags)],
        FlagLayout::RtPatch => RT_PATCH_BITS[usize::from(flags)],
    };
    let (depth, mig) = match migrate {
        Some(m) => (preempt, m),
        None => (preempt & 0x0f, preempt >> 4),
    };
    Flags { bits, preempt_depth: Some(depth), migrate_disable: Some(mig), preempt_lazy_depth: lazy }
}

/// [`Flags`] bits of every `common_flags` byte, per layout (looked up once per record).
const MAINLINE_BITS: [u16; 256] = flag_table(FlagLayout::Mainline);
const RT_PATCH_BITS: [u16; 256] = flag_table(FlagLayout::RtPatch);

const fn flag_table(layout: FlagLayout) -> [u16; 256] {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = flag_bits(layout, i as u8);
        i += 1;
    }
    t
}

const fn flag_bits(layout: FlagLayout, flags: u8) -> u16 {
    let mut bits = Flags::KNOWN;
    let map: [(u8, u16); 6] = [
        (0x01, Flags::IRQS_OFF),
        (0x04, Flags::NEED_RESCHED),
        (0x08, Flags::HARDIRQ),
        (0x10, Flags::SOFTIRQ),
        (0x20, Flags::PREEMPT_RESCHED),
        (0x40, Flags::NMI),
    ];
    let mut i = 0;
    while i < map.len() {
        if flags & map[i].0 != 0 {
            bits |= map[i].1;
        }
        i += 1;
    }
    match layout {
        FlagLayout::Mainline => {
            if flags & 0x02 != 0 {
                bits |= Flags::NEED_RESCHED_LAZY;
            }
            if flags & 0x80 != 0 {
                bits |= Flags::BH_OFF;
            }
        }
        FlagLayout::RtPatch => {
            if flags & 0x02 != 0 {
                bits |= Flags::IRQS_NOSUPPORT;
            }
            if flags & 0x80 != 0 {
                bits |= Flags::NEED_RESCHED_LAZY;
            }
        }
    }
    bits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mainline_bits() {
        let f = decode_flags(FlagLayout::Mainline, 0x01 | 0x08 | 0x80 | 0x02, 0x21, None, None);
        assert!(f.irqs_off() && f.in_hardirq() && f.has(Flags::BH_OFF) && f.has(Flags::NEED_RESCHED_LAZY));
        assert!(!f.in_softirq() && !f.in_nmi());
        assert_eq!((f.preempt_depth, f.migrate_disable), (Some(1), Some(2)));
    }

    #[test]
    fn rt_patch_bits() {
        let f = decode_flags(FlagLayout::RtPatch, 0x80 | 0x40 | 0x04 | 0x10, 3, Some(1), Some(1));
        assert!(f.in_nmi() && f.in_softirq() && f.has(Flags::NEED_RESCHED) && f.has(Flags::NEED_RESCHED_LAZY));
        assert!(!f.has(Flags::BH_OFF));
        assert_eq!((f.preempt_depth, f.migrate_disable, f.preempt_lazy_depth), (Some(3), Some(1), Some(1)));
    }
}
