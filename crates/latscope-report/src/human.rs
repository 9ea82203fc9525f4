//! Durations as the explanations word them: `950 ns`, `12.4 us`, `10.966 ms`, `1.5 s` (three decimals,
//! trailing zeros dropped), where [`latscope_model::Nanos`]'s own display keeps three significant digits.

use latscope_model::Nanos;

/// A duration for a sentence.
pub fn human(d: Nanos) -> String {
    let n = d.0;
    if n < 1_000 {
        format!("{n} ns")
    } else if n < 1_000_000 {
        format!("{} us", trim3(n as f64 / 1e3))
    } else if n < 1_000_000_000 {
        format!("{} ms", trim3(n as f64 / 1e6))
    } else {
        format!("{} s", trim3(n as f64 / 1e9))
    }
}

/// `1 gap`, `2 gaps`: a count with its noun in the right number.
pub fn counted(n: u64, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

fn trim3(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn human_durations() {
        assert_eq!(human(Nanos(10_966_000)), "10.966 ms");
        assert_eq!(human(Nanos(9_656_000)), "9.656 ms");
        assert_eq!(human(Nanos(7_505)), "7.505 us");
        assert_eq!(human(Nanos(950)), "950 ns");
        assert_eq!(human(Nanos(50_000_000)), "50 ms");
    }

    #[test]
    fn counts_agree_with_their_nouns() {
        assert_eq!(counted(1, "gap", "gaps"), "1 gap");
        assert_eq!(counted(0, "gap", "gaps"), "0 gaps");
        assert_eq!(counted(2, "time", "times"), "2 times");
    }
}
