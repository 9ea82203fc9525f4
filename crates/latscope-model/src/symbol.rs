//! Kernel symbol strings as traces print them (`console_unlock+0xc0/0x510`, trace-cmd's `hrtimer_wakeup/0x0`):
//! bare name and short form.

/// `console_unlock+0xc0/0x510` → `console_unlock`; `[<c0123>] foo+0x1/0x2` → `foo`; plain names unchanged.
pub fn bare(sym: &str) -> &str {
    let s = short(sym);
    s.split('+').next().unwrap_or(s).trim()
}

/// `console_unlock+0xc0/0x510` → `console_unlock+0xc0` (the size after `/` dropped).
pub fn short(sym: &str) -> &str {
    let s = sym.trim();
    let s = s.rsplit(' ').next().unwrap_or(s);
    s.split('/').next().unwrap_or(s)
}

/// A function name from a function-graph or function-trace line, without annotations someone added by
/// hand (`+---->ktime_get` → `ktime_get`) or a trailing `()`.
pub fn function_name(name: &str) -> &str {
    let last = name.split_whitespace().last().unwrap_or(name);
    let start = last.find(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.').unwrap_or(0);
    last[start..].trim_end_matches("()").trim_end_matches(';')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        assert_eq!(bare("console_unlock+0xc0/0x510"), "console_unlock");
        assert_eq!(short("console_unlock+0xc0/0x510"), "console_unlock+0xc0");
        assert_eq!(bare("vprintk_emit"), "vprintk_emit");
        assert_eq!(bare("hrtimer_wakeup/0x0"), "hrtimer_wakeup");
        assert_eq!(bare("hrtimer_wakeup+0x0/0x30"), "hrtimer_wakeup");
        assert_eq!(bare("0xffffffff81234567"), "0xffffffff81234567");
        assert_eq!(function_name("+---->ktime_get"), "ktime_get");
        assert_eq!(function_name("additional part      preempt_count_sub"), "preempt_count_sub");
        assert_eq!(function_name("lock_hrtimer_base.isra.0"), "lock_hrtimer_base.isra.0");
    }
}
