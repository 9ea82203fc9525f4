//! The ftrace flags column (`d.h1`, `dNh7.`, `dN.h512`, `1dn.h511`…) of every kernel generation ➜ [`Flags`].
//!
//! Column layouts by width (the CPU digit of latency output is stripped before):
//!
//! | width | columns                                                                     | kernels            |
//! |-------|-----------------------------------------------------------------------------|--------------------|
//! | 4     | irqs-off, need-resched, hardirq/softirq, preempt-depth                      | 2.6.3x – 5.12      |
//! | 5     | … + migrate-disable (or 2.6.3x `lock-depth`)                                 | 5.13+ (and 2.6.3x) |
//! | 6     | irqs-off, need-resched, need-resched-lazy, hardirq/softirq, preempt, migrate | early PREEMPT_RT   |
//! | 7     | irqs-off, need-resched, need-resched-lazy, hardirq/softirq, preempt-depth, preempt-lazy-depth, migrate-disable | PREEMPT_RT 4.x – 6.x |

use latscope_model::Flags;

/// What the fifth column of a 5-wide flags field means.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FifthColumn {
    /// `migrate-disable` (5.13+), the default.
    #[default]
    MigrateDisable,
    /// 2.6.3x `lock-depth` (the big kernel lock): not kept.
    LockDepth,
}

/// Whether `b` can appear in a flags field.
#[inline]
pub fn is_flag_byte(b: u8) -> bool {
    matches!(
        b,
        b'.' | b'd' | b'D' | b'b' | b'X' | b'N' | b'n' | b'p' | b'L' | b'l' | b'B' | b'h' | b's' | b'H' | b'z' | b'Z'
    ) || b.is_ascii_hexdigit()
}

/// Decode a flags field of 4 to 7 characters. `None` when it is not one.
pub fn parse_flags(s: &[u8], fifth: FifthColumn) -> Option<Flags> {
    if !(4..=7).contains(&s.len()) || !s.iter().all(|&b| is_flag_byte(b)) {
        return None;
    }
    let mut f = Flags { bits: Flags::KNOWN | irqs_col(s[0])?, ..Flags::default() };
    let (ctx, rest) = match s.len() {
        4 | 5 => {
            f.bits |= resched_col(s[1])?;
            (s[2], &s[3..])
        }
        _ => {
            f.bits |= resched_col(s[1])?;
            f.bits |= match s[2] {
                b'.' => 0,
                b'L' | b'l' => Flags::NEED_RESCHED_LAZY,
                b'B' | b'b' => Flags::NEED_RESCHED_LAZY | Flags::NEED_RESCHED,
                _ => return None,
            };
            (s[3], &s[4..])
        }
    };
    f.bits |= ctx_col(ctx)?;
    f.preempt_depth = Some(depth(rest[0])?);
    match (s.len(), fifth) {
        (5, FifthColumn::MigrateDisable) | (6, _) => f.migrate_disable = Some(depth(rest[1])?),
        (5, FifthColumn::LockDepth) => {
            depth(rest[1])?;
        }
        (7, _) => {
            f.preempt_lazy_depth = Some(depth(rest[1])?);
            f.migrate_disable = Some(depth(rest[2])?);
        }
        _ => {}
    }
    Some(f)
}

fn irqs_col(b: u8) -> Option<u16> {
    Some(match b {
        b'.' => 0,
        b'd' => Flags::IRQS_OFF,
        b'D' => Flags::IRQS_OFF | Flags::BH_OFF,
        b'b' => Flags::BH_OFF,
        b'X' => Flags::IRQS_NOSUPPORT,
        _ => return None,
    })
}

/// The kernel's need-resched letters (`trace_print_lat_fmt`).
fn resched_col(b: u8) -> Option<u16> {
    Some(match b {
        b'.' => 0,
        b'N' => Flags::NEED_RESCHED | Flags::PREEMPT_RESCHED,
        b'n' => Flags::NEED_RESCHED,
        b'p' => Flags::PREEMPT_RESCHED,
        b'L' => Flags::NEED_RESCHED_LAZY | Flags::PREEMPT_RESCHED,
        b'l' => Flags::NEED_RESCHED_LAZY,
        b'B' => Flags::NEED_RESCHED | Flags::NEED_RESCHED_LAZY | Flags::PREEMPT_RESCHED,
        b'b' => Flags::NEED_RESCHED | Flags::NEED_RESCHED_LAZY,
        _ => return None,
    })
}

fn ctx_col(b: u8) -> Option<u16> {
    Some(match b {
        b'.' => 0,
        b'h' => Flags::HARDIRQ,
        b's' => Flags::SOFTIRQ,
        b'H' => Flags::HARDIRQ | Flags::SOFTIRQ,
        b'z' => Flags::NMI,
        b'Z' => Flags::NMI | Flags::HARDIRQ,
        _ => return None,
    })
}

/// A depth digit: `.` is zero, else one hex digit (the kernel prints `%x`).
fn depth(b: u8) -> Option<u8> {
    match b {
        b'.' => Some(0),
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Flags {
        parse_flags(s.as_bytes(), FifthColumn::MigrateDisable).expect(s)
    }

    #[test]
    fn four_columns() {
        let f = p("d.h1");
        assert!(f.irqs_off() && f.in_hardirq() && !f.need_resched());
        assert_eq!((f.preempt_depth, f.migrate_disable), (Some(1), None));
        let f = p(".ns1");
        assert!(f.has(Flags::NEED_RESCHED) && !f.has(Flags::PREEMPT_RESCHED) && f.in_softirq());
        let f = p("dNh.");
        assert!(f.has(Flags::NEED_RESCHED | Flags::PREEMPT_RESCHED) && f.preempt_depth == Some(0));
        let f = p("X.H3");
        assert!(f.has(Flags::IRQS_NOSUPPORT) && f.in_hardirq() && f.in_softirq());
        assert!(p("D.z.").has(Flags::IRQS_OFF | Flags::BH_OFF | Flags::NMI));
        assert!(p("b.Z.").has(Flags::BH_OFF | Flags::NMI | Flags::HARDIRQ));
        assert!(p(".p..").has(Flags::PREEMPT_RESCHED));
    }

    #[test]
    fn five_six_seven_columns_and_hex_depths() {
        let f = p("d..2.");
        assert_eq!((f.preempt_depth, f.migrate_disable), (Some(2), Some(0)));
        let f = p("dNh7a");
        assert_eq!((f.preempt_depth, f.migrate_disable), (Some(7), Some(10)));
        let f = parse_flags(b".....", FifthColumn::LockDepth).expect("lock depth");
        assert_eq!(f.migrate_disable, None);
        let f = p("dN.h512");
        assert!(f.irqs_off() && f.in_hardirq() && f.has(Flags::NEED_RESCHED));
        assert_eq!((f.preempt_depth, f.preempt_lazy_depth, f.migrate_disable), (Some(5), Some(1), Some(2)));
        let f = p("dNLh1..");
        assert!(f.has(Flags::NEED_RESCHED_LAZY));
        let f = p("dn.h511");
        assert!(f.has(Flags::NEED_RESCHED) && !f.has(Flags::NEED_RESCHED_LAZY));
        let f = p("dLBhf..");
        assert!(f.has(Flags::NEED_RESCHED | Flags::NEED_RESCHED_LAZY) && f.preempt_depth == Some(15));
        let f = p(".Ll.1.");
        assert_eq!(f.migrate_disable, Some(0));
        assert!(p("...1").bits & Flags::KNOWN != 0);
    }

    #[test]
    fn rejects_non_flags() {
        for s in ["", "d.h", "abcdefgh", "d?h1", "1d..1", "d.q1", "....1..1"] {
            assert!(parse_flags(s.as_bytes(), FifthColumn::MigrateDisable).is_none(), "{s}");
        }
    }
}
