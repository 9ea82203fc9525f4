//! [`TimeMap`]: how a recording's raw ring-buffer timestamps become the times `trace-cmd report` prints
//! (a guest's shift onto the host's clock, a TSC-to-nanoseconds conversion, then a fixed offset), as a
//! `.dat`'s options ask.

use std::sync::Arc;

use super::time_shift::TimeShift;

/// A timestamp conversion: a guest trace's timestamps moved onto the host's clock first (the `TIME_SHIFT`
/// option of `trace-cmd record -A`, as [`TimeShift`] applies it), then `raw × mult >> shift` when the file was recorded in TSC cycles (the `TSC2NSEC`
/// option of `trace-cmd record --tsc2nsec`), then plus `offset_ns` (the `DATE` and `OFFSET` options of
/// `--date` and `--ts-offset`). The default changes nothing.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TimeMap {
    /// A guest trace's host time-sync samples (the TIME_SHIFT option), applied first, per guest CPU.
    pub shift: Option<Arc<TimeShift>>,
    /// TSC cycles to nanoseconds: (mult, shift).
    pub tsc2nsec: Option<(u32, u32)>,
    /// Added to every timestamp (after the conversion), in nanoseconds.
    pub offset_ns: i64,
}

impl TimeMap {
    /// The time of raw timestamp `ts`, recorded on `cpu`.
    #[inline]
    pub fn apply(&self, ts: u64, cpu: usize) -> u64 {
        let ts = match &self.shift {
            Some(shift) => shift.apply(ts, cpu),
            None => ts,
        };
        let ts = match self.tsc2nsec {
            Some((mult, shift)) => (u128::from(ts) * u128::from(mult)).checked_shr(shift).unwrap_or(0) as u64,
            None => ts,
        };
        ts.wrapping_add(self.offset_ns as u64)
    }
}

/// An integer as C's `strtoll(text, NULL, 0)` reads it: blanks, a sign, then `0x` hex, `0` octal or
/// decimal digits, up to the first other character. `None` when there are no digits (or too many).
pub fn parse_c_integer(text: &str) -> Option<i64> {
    let t = text.trim_start();
    let (negative, t) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let (radix, digits) = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (16, h)
    } else if t.len() > 1 && t.starts_with('0') {
        (8, &t[1..])
    } else {
        (10, t)
    };
    let end = digits.find(|c: char| !c.is_digit(radix)).unwrap_or(digits.len());
    let magnitude = i64::from_str_radix(&digits[..end], radix).ok()?;
    Some(if negative { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offsets_and_tsc_conversion() {
        assert_eq!(TimeMap::default().apply(123, 0), 123, "the default changes nothing");
        let back = TimeMap { tsc2nsec: None, offset_ns: -100, ..TimeMap::default() };
        assert_eq!(back.apply(1_000, 0), 900);
        // A 3 GHz TSC: mult/2^shift = 1/3.
        let tsc = TimeMap { tsc2nsec: Some((1 << 30, 30 + 2)), offset_ns: 5, ..TimeMap::default() };
        assert_eq!(tsc.apply(4_000, 0), 1_005);
        assert_eq!(
            TimeMap { tsc2nsec: Some((3, 200)), ..TimeMap::default() }.apply(u64::MAX, 0),
            0,
            "no panic on a huge shift"
        );
    }

    #[test]
    fn c_integers() {
        assert_eq!(parse_c_integer("0x1f"), Some(31));
        assert_eq!(parse_c_integer("  -0X10zz"), Some(-16));
        assert_eq!(parse_c_integer("017"), Some(15));
        assert_eq!(parse_c_integer("0"), Some(0));
        assert_eq!(parse_c_integer("+42\0"), Some(42));
        assert_eq!(parse_c_integer("1700000000123456"), Some(1_700_000_000_123_456));
        assert_eq!(parse_c_integer(""), None);
        assert_eq!(parse_c_integer("0x"), None);
        assert_eq!(parse_c_integer("date"), None);
    }
}
