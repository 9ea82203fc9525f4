//! The common fields of every raw record (`common_flags`, `common_preempt_count`, …) ➜ [`Flags`].
//!
//! `trace_flags` bit layout (kernel `enum trace_flag_type`, `include/linux/trace_events.h`) by generation:
//!
//! | bit  | 2.6.x – 5.16      | 5.17+ (mainline) | 6.12+             | RT patch 4.x – 5.12 | RT patch 5.17 – 6.6-rc6-rt9 |
//! |------|-------------------|------------------|-------------------|---------------------|-----------------------------|
//! | 0x01 | IRQS_OFF          | IRQS_OFF         | IRQS_OFF          | IRQS_OFF            | IRQS_OFF                    |
//! | 0x02 | IRQS_NOSUPPORT    | (unused)         | NEED_RESCHED_LAZY | IRQS_NOSUPPORT      | IRQS_NOSUPPORT              |
//! | 0x04 | NEED_RESCHED      | NEED_RESCHED     | NEED_RESCHED      | NEED_RESCHED        | NEED_RESCHED                |
//! | 0x08 | HARDIRQ           | HARDIRQ          | HARDIRQ           | HARDIRQ             | HARDIRQ                     |
//! | 0x10 | SOFTIRQ           | SOFTIRQ          | SOFTIRQ           | SOFTIRQ             | SOFTIRQ                     |
//! | 0x20 | PREEMPT_RESCHED   | PREEMPT_RESCHED  | PREEMPT_RESCHED   | PREEMPT_RESCHED     | NEED_RESCHED_LAZY           |
//! | 0x40 | NMI (4.x+)        | NMI              | NMI               | NMI                 | NMI                         |
//! | 0x80 | —                 | BH_OFF           | BH_OFF            | NEED_RESCHED_LAZY   | BH_OFF                      |
//!
//! When mainline took BH_OFF (0x80, 5.17), the RT patch's lazy preemption moved its NEED_RESCHED_LAZY to
//! 0x20 under `CONFIG_PREEMPT_LAZY` (PREEMPT_RESCHED then is never set); the RT tree replaced lazy
//! preemption with PREEMPT_AUTO in 6.6-rc6-rt10 and mainline's own lazy bit (0x02, 6.12) followed. Checked
//! against the kernel's own text on Debian's 6.1.0-56-rt-amd64 (`d.Lh` is 0x29, `D..h` is 0x89): the
//! guest test `rt_flags_dat_agrees_with_the_kernel_text` and `fixtures/dat/debian-6.1-rt-*`.
//!
//! Which RT generation a file comes from is read from its formats: RT patch kernels add
//! `common_preempt_lazy_count`, and before 5.13 also `common_migrate_disable` (later the migrate-disable
//! depth is the high nibble of `common_preempt_count`). A lazy count without a migrate field is taken as
//! the 5.17+ layout; RT 5.13 – 5.16 kernels, which have the same fields, are not told apart.
//!
//! `common_preempt_count`: since 5.13 the low nibble is the preempt depth and the high nibble the
//! migrate-disable depth; before, the byte was the preempt depth (which rarely exceeds 15, so the nibble
//! split is applied always). The RT patch's extra count fields are used when present.

use latscope_model::Flags;

/// Which generation's meaning bits 0x02 and 0x80 have.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FlagLayout {
    /// Mainline: 0x02 is NEED_RESCHED_LAZY (6.12+; earlier kernels set it only on architectures without
    /// irqflags support, which no modern architecture is), 0x80 is BH_OFF.
    Mainline,
    /// A PREEMPT_RT patch kernel before 5.13 (the format has `common_preempt_lazy_count` and
    /// `common_migrate_disable`): 0x80 is NEED_RESCHED_LAZY, 0x02 is IRQS_NOSUPPORT.
    RtPatch,
    /// A PREEMPT_RT patch kernel with lazy preemption after mainline took BH_OFF (5.17 – 6.6-rc6-rt9;
    /// `common_preempt_lazy_count` without `common_migrate_disable`): 0x20 is NEED_RESCHED_LAZY, 0x80 is
    /// BH_OFF, 0x02 is IRQS_NOSUPPORT.
    RtLazyBh,
}

impl FlagLayout {
    /// The layout of a format with (or without) the RT patch's `common_preempt_lazy_count` and
    /// `common_migrate_disable` fields.
    pub fn of_common_fields(has_lazy_count: bool, has_migrate_disable: bool) -> FlagLayout {
        match (has_lazy_count, has_migrate_disable) {
            (false, _) => FlagLayout::Mainline,
            (true, true) => FlagLayout::RtPatch,
            (true, false) => FlagLayout::RtLazyBh,
        }
    }
}

/// Decode `common_flags` and `common_preempt_count` (and the RT patch's extra counts when present).
pub fn decode_flags(layout: FlagLayout, flags: u8, preempt: u8, lazy: Option<u8>, migrate: Option<u8>) -> Flags {
    let bits = match layout {
        FlagLayout::Mainline => MAINLINE_BITS[usize::from(flags)],
        FlagLayout::RtPatch => RT_PATCH_BITS[usize::from(flags)],
        FlagLayout::RtLazyBh => RT_LAZY_BH_BITS[usize::from(flags)],
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
const RT_LAZY_BH_BITS: [u16; 256] = flag_table(FlagLayout::RtLazyBh);

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
    let map: [(u8, u16); 5] = [
        (0x01, Flags::IRQS_OFF),
        (0x04, Flags::NEED_RESCHED),
        (0x08, Flags::HARDIRQ),
        (0x10, Flags::SOFTIRQ),
        (0x40, Flags::NMI),
    ];
    let mut i = 0;
    while i < map.len() {
        if flags & map[i].0 != 0 {
            bits |= map[i].1;
        }
        i += 1;
    }
    // What 0x02, 0x20 and 0x80 mean in this layout.
    let (b02, b20, b80) = match layout {
        FlagLayout::Mainline => (Flags::NEED_RESCHED_LAZY, Flags::PREEMPT_RESCHED, Flags::BH_OFF),
        FlagLayout::RtPatch => (Flags::IRQS_NOSUPPORT, Flags::PREEMPT_RESCHED, Flags::NEED_RESCHED_LAZY),
        FlagLayout::RtLazyBh => (Flags::IRQS_NOSUPPORT, Flags::NEED_RESCHED_LAZY, Flags::BH_OFF),
    };
    let varying = [(0x02u8, b02), (0x20, b20), (0x80, b80)];
    let mut j = 0;
    while j < varying.len() {
        if flags & varying[j].0 != 0 {
            bits |= varying[j].1;
        }
        j += 1;
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

    #[test]
    fn rt_lazy_bh_bits_are_what_6_1_rt_prints() {
        // Debian 6.1.0-56-rt-amd64's own text for these bytes: `d.Lh` (0x29), `D..h` (0x89), `dnLh` (0x2d).
        let f = decode_flags(FlagLayout::RtLazyBh, 0x29, 1, Some(0), None);
        assert_eq!(f.bits, Flags::with(Flags::IRQS_OFF | Flags::NEED_RESCHED_LAZY | Flags::HARDIRQ).bits);
        let f = decode_flags(FlagLayout::RtLazyBh, 0x89, 0x24, Some(1), None);
        assert_eq!(f.bits, Flags::with(Flags::IRQS_OFF | Flags::BH_OFF | Flags::HARDIRQ).bits);
        let f = decode_flags(FlagLayout::RtLazyBh, 0x2d, 1, Some(0), None);
        assert!(f.has(Flags::NEED_RESCHED | Flags::NEED_RESCHED_LAZY) && !f.has(Flags::PREEMPT_RESCHED));
    }

    #[test]
    fn layout_from_the_common_fields() {
        assert_eq!(FlagLayout::of_common_fields(false, false), FlagLayout::Mainline);
        assert_eq!(FlagLayout::of_common_fields(true, true), FlagLayout::RtPatch);
        assert_eq!(FlagLayout::of_common_fields(true, false), FlagLayout::RtLazyBh);
    }
}
