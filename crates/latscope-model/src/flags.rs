//! The per-event context flags ftrace prints as `d.h1` … `dNLhZ1..`: irqs-off, need-resched, context, depths.

use serde::{Deserialize, Serialize};

/// Context flags of one event. Decoders fill what their format shows; `known` says whether the
/// format had a flags column at all (traces with `irq-info` off have none).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Flags {
    /// Bit set of the `Flags::*` constants.
    pub bits: u16,
    /// Preemption depth (`preempt_count` low byte) when shown.
    pub preempt_depth: Option<u8>,
    /// Migrate-disable depth (5.13+ sixth column) when shown.
    pub migrate_disable: Option<u8>,
    /// Lazy preemption depth (PREEMPT_RT kernels' extra column) when shown.
    pub preempt_lazy_depth: Option<u8>,
}

impl Flags {
    /// The format had a flags column.
    pub const KNOWN: u16 = 1 << 0;
    /// Interrupts were disabled (`d`, or `D` together with BH off).
    pub const IRQS_OFF: u16 = 1 << 1;
    /// Bottom halves were disabled (`b`, or `D`).
    pub const BH_OFF: u16 = 1 << 2;
    /// The architecture cannot report the irq state (`X`).
    pub const IRQS_NOSUPPORT: u16 = 1 << 3;
    /// TIF_NEED_RESCHED set (`N`, `n` when only the preempt-count bit, `B` both with lazy).
    pub const NEED_RESCHED: u16 = 1 << 4;
    /// TIF_NEED_RESCHED_LAZY set (`L`, `l`, `B`).
    pub const NEED_RESCHED_LAZY: u16 = 1 << 5;
    /// PREEMPT_NEED_RESCHED set (`p`, or combined in `N`).
    pub const PREEMPT_RESCHED: u16 = 1 << 6;
    /// In hard interrupt context (`h`, `H`).
    pub const HARDIRQ: u16 = 1 << 7;
    /// In softirq context (`s`, `H` hardirq inside softirq).
    pub const SOFTIRQ: u16 = 1 << 8;
    /// In NMI context (`z`, `Z` NMI inside hardirq).
    pub const NMI: u16 = 1 << 9;

    /// Flags with only the given bits set (plus `KNOWN`).
    pub fn with(bits: u16) -> Flags {
        Flags { bits: bits | Flags::KNOWN, ..Flags::default() }
    }

    /// Whether all of `bit` is set.
    pub fn has(self, bit: u16) -> bool {
        self.bits & bit == bit
    }

    /// Interrupts were disabled at this event.
    pub fn irqs_off(self) -> bool {
        self.has(Flags::IRQS_OFF)
    }

    /// The event happened in hard interrupt context.
    pub fn in_hardirq(self) -> bool {
        self.has(Flags::HARDIRQ)
    }

    /// The event happened in softirq context.
    pub fn in_softirq(self) -> bool {
        self.has(Flags::SOFTIRQ)
    }

    /// The event happened in NMI context.
    pub fn in_nmi(self) -> bool {
        self.has(Flags::NMI)
    }

    /// A reschedule was pending (any of the need-resched variants).
    pub fn need_resched(self) -> bool {
        self.bits & (Flags::NEED_RESCHED | Flags::NEED_RESCHED_LAZY | Flags::PREEMPT_RESCHED) != 0
    }
}
