//! Time as integer nanoseconds, and parsing of human durations such as `1333us` or `2m`.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A point in time or a duration in nanoseconds. Converted to other units only when rendered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Nanos(pub u64);

impl Nanos {
    /// Zero nanoseconds.
    pub const ZERO: Nanos = Nanos(0);

    /// From microseconds.
    pub const fn from_us(us: u64) -> Nanos {
        Nanos(us * 1_000)
    }

    /// From milliseconds.
    pub const fn from_ms(ms: u64) -> Nanos {
        Nanos(ms * 1_000_000)
    }

    /// From seconds.
    pub const fn from_secs(s: u64) -> Nanos {
        Nanos(s * 1_000_000_000)
    }

    /// The value in (fractional) microseconds, for rendering.
    pub fn as_us_f64(self) -> f64 {
        self.0 as f64 / 1e3
    }

    /// `self - earlier`, or zero when `earlier` is later.
    pub fn saturating_sub(self, earlier: Nanos) -> Nanos {
        Nanos(self.0.saturating_sub(earlier.0))
    }

    /// Signed difference `self - other` in nanoseconds.
    pub fn diff(self, other: Nanos) -> i64 {
        self.0 as i64 - other.0 as i64
    }
}

impl std::ops::Add for Nanos {
    type Output = Nanos;
    fn add(self, rhs: Nanos) -> Nanos {
        Nanos(self.0 + rhs.0)
    }
}

impl std::ops::Sub for Nanos {
    type Output = Nanos;
    /// Saturating: a negative duration becomes zero.
    fn sub(self, rhs: Nanos) -> Nanos {
        self.saturating_sub(rhs)
    }
}

impl fmt::Display for Nanos {
    /// Renders with the largest unit that keeps the number readable (`950ns`, `12.1us`, `3.25ms`, `1.5s`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.0;
        if n < 1_000 {
            write!(f, "{n}ns")
        } else if n < 1_000_000 {
            write!(f, "{}us", trim(n as f64 / 1e3))
        } else if n < 1_000_000_000 {
            write!(f, "{}ms", trim(n as f64 / 1e6))
        } else {
            write!(f, "{}s", trim(n as f64 / 1e9))
        }
    }
}

fn trim(v: f64) -> String {
    let s = if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Why a duration string was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum DurationError {
    /// The string was empty.
    #[error("empty duration; write a number with a unit, e.g. 1ms, 500us, 10s")]
    Empty,
    /// The number part did not parse.
    #[error("'{0}' is not a duration; write a number with a unit (ns, us, ms, s, m, h), e.g. 1333us")]
    Invalid(String),
    /// The unit is not one we know.
    #[error("'{0}' has an unknown unit; use ns, us, ms, s, m or h")]
    Unit(String),
    /// The value does not fit in 64-bit nanoseconds.
    #[error("'{0}' is too long a duration")]
    Overflow(String),
}

/// Parses `1ms`, `1333us`, `2.5s`, `10m`, `1h`, `250ns`. A bare number is refused: the unit is required,
/// because `-i 1000` means microseconds to cyclictest users and milliseconds to others.
pub fn parse_duration(s: &str) -> Result<Nanos, DurationError> {
    let t = s.trim();
    if t.is_empty() {
        return Err(DurationError::Empty);
    }
    let split =
        t.find(|c: char| !(c.is_ascii_digit() || c == '.')).ok_or_else(|| DurationError::Unit(t.to_string()))?;
    let (num, unit) = t.split_at(split);
    let scale: f64 = match unit.trim() {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "m" | "min" => 60e9,
        "h" => 3600e9,
        _ => return Err(DurationError::Unit(t.to_string())),
    };
    if num.is_empty() || num.matches('.').count() > 1 {
        return Err(DurationError::Invalid(t.to_string()));
    }
    // Integer path keeps exact values; fractional path goes through f64.
    if let Ok(i) = num.parse::<u64>() {
        return i.checked_mul(scale as u64).map(Nanos).ok_or_else(|| DurationError::Overflow(t.to_string()));
    }
    let v: f64 = num.parse().map_err(|_| DurationError::Invalid(t.to_string()))?;
    let ns = (v * scale).round();
    if !(0.0..1.8e19).contains(&ns) {
        return Err(DurationError::Overflow(t.to_string()));
    }
    Ok(Nanos(ns as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse_duration("1ms"), Ok(Nanos(1_000_000)));
        assert_eq!(parse_duration("1333us"), Ok(Nanos(1_333_000)));
        assert_eq!(parse_duration("250ns"), Ok(Nanos(250)));
        assert_eq!(parse_duration("2.5s"), Ok(Nanos(2_500_000_000)));
        assert_eq!(parse_duration("10m"), Ok(Nanos(600_000_000_000)));
        assert_eq!(parse_duration("1h"), Ok(Nanos(3_600_000_000_000)));
        assert_eq!(parse_duration(" 5s "), Ok(Nanos(5_000_000_000)));
    }

    #[test]
    fn rejects_bad_input() {
        assert_eq!(parse_duration(""), Err(DurationError::Empty));
        assert!(matches!(parse_duration("1000"), Err(DurationError::Unit(_))));
        assert!(matches!(parse_duration("ms"), Err(DurationError::Invalid(_))));
        assert!(matches!(parse_duration("1.2.3ms"), Err(DurationError::Invalid(_))));
        assert!(matches!(parse_duration("5 parsecs"), Err(DurationError::Unit(_))));
        assert!(matches!(parse_duration("99999999999h"), Err(DurationError::Overflow(_))));
    }

    #[test]
    fn displays_readably() {
        assert_eq!(Nanos(950).to_string(), "950ns");
        assert_eq!(Nanos(12_100).to_string(), "12.1us");
        assert_eq!(Nanos(3_250_000).to_string(), "3.25ms");
        assert_eq!(Nanos(1_500_000_000).to_string(), "1.5s");
        assert_eq!(Nanos(2_000).to_string(), "2us");
    }
}
