//! The prefix of one ftrace event line: task, pid, tgid, CPU, flags and timestamp, in the three layouts
//! the kernel and trace-cmd print, and the event body that follows.
//!
//! ```text
//!            bash-1998  [000] d.h1   138.733101: softirq_raise: vec=1 [action=TIMER]     (trace, trace_pipe)
//!  ndroid.systemui-13580 (13580) [001] ...1 683202.104223: tracing_mark_write: B|1|x    (record-tgid)
//!     yum-updatesd-3111  [003]  1701.957688: free_poll_entry <-poll_freewait          (irq-info off)
//!     qseecom--207       7d..1    0us*: console_trylock_spinning <-vprintk_emit       (latency format)
//!     sshd-4371    0.....  1401.282250: funcgraph_entry: ...                          (trace-cmd report -l)
//! ```

use super::flags::{parse_flags, FifthColumn};
use latscope_model::{Flags, Nanos};

/// The parsed prefix of an event line and the rest of it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Prefix<'a> {
    /// Task name as printed (may be `<...>`, `<idle>`, truncated).
    pub comm: &'a str,
    /// Pid.
    pub pid: i32,
    /// Thread-group id when the `(tgid)` column shows one.
    pub tgid: Option<i32>,
    /// CPU.
    pub cpu: u32,
    /// Context flags (unknown when the column is absent).
    pub flags: Flags,
    /// Timestamp (absolute, or relative in latency output); zero when [`Prefix::untimed`].
    pub ts: Nanos,
    /// The author replaced the timestamp with `...` (`cat-317  [001] ...: workqueue_queue_work: …`): the
    /// line has no time.
    pub untimed: bool,
    /// The latency output's delay marker (`+ ! # * @ $`), when not a space.
    pub delay: Option<u8>,
    /// Everything after the timestamp's `: `.
    pub body: &'a str,
}

/// Parse an event line in any layout. `None` when the line has no event prefix.
pub fn parse_prefix(line: &str, fifth: FifthColumn) -> Option<Prefix<'_>> {
    parse_bracket(line, fifth).or_else(|| parse_latency(line, fifth))
}

/// `comm-pid [(tgid)] [CPU] [flags] secs.frac: body`.
pub fn parse_bracket(line: &str, fifth: FifthColumn) -> Option<Prefix<'_>> {
    let b = line.as_bytes();
    // The CPU column: the first ` [digits]` (a comm may contain `[`, an `[action=…]` body never has digits only).
    let mut from = 0;
    let (open, close) = loop {
        let i = from + memchr::memchr(b'[', &b[from..])?;
        from = i + 1;
        if i > 0 && !b[i - 1].is_ascii_whitespace() {
            continue;
        }
        let mut j = i + 1;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > i + 1 && j < b.len() && b[j] == b']' {
            break (i, j);
        }
    };
    let cpu = parse_u32(&b[open + 1..close])?;
    // `    [008] d..2.: sched_switch: …`: a task column the author left out (no task, pid -1).
    let (comm, pid, tgid) =
        if line[..open].trim_ascii().is_empty() { ("", -1, None) } else { split_task(&line[..open])? };
    let mut p = close + 1;
    p = skip_ws(b, p);
    let tok_end = token_end(b, p);
    // The time token, or `...:` where the author left the time (and maybe the flags) out.
    let time = |tok: &[u8]| match tok.split_last() {
        Some((b':', t)) if is_elided(t) => Some(None),
        Some((b':', t)) => parse_secs(t).map(Some),
        _ => None,
    };
    let (flags, ts, ts_end) = match time(&b[p..tok_end]) {
        Some(ts) => (Flags::default(), ts, tok_end),
        // `d..2.:`: the flags, and no time at all.
        None if tok_end > p + 1 && b[tok_end - 1] == b':' => (parse_flags(&b[p..tok_end - 1], fifth)?, None, tok_end),
        None => {
            let f = parse_flags(&b[p..tok_end], fifth)?;
            let ts_start = skip_ws(b, tok_end);
            let ts_end = token_end(b, ts_start);
            if ts_end <= ts_start + 1 {
                return None;
            }
            (f, time(&b[ts_start..ts_end])?, ts_end)
        }
    };
    let body = line.get(skip_one_space(b, ts_end)..)?;
    let untimed = ts.is_none();
    Some(Prefix { comm, pid, tgid, cpu, flags, ts: ts.unwrap_or(Nanos::ZERO), untimed, delay: None, body })
}

/// Latency layout: `comm-pid CPUflags TIME[marker]: body` where TIME is `NNNus` (latency tracers,
/// `latency-format`) or `secs.frac` (`trace-cmd report -l`).
pub fn parse_latency(line: &str, fifth: FifthColumn) -> Option<Prefix<'_>> {
    let b = line.as_bytes();
    let mut prev: Option<(usize, usize)> = None;
    let mut p = skip_ws(b, 0);
    while p < b.len() {
        let e = token_end(b, p);
        if let Some((ps, pe)) = prev {
            if let Some((ts, delay, after)) = latency_time(b, p, e) {
                let tok = &b[ps..pe];
                let ndigits = tok.iter().take_while(|c| c.is_ascii_digit()).count();
                if ndigits > 0 && ps > 0 {
                    if let Some(flags) = parse_flags(&tok[ndigits..], fifth) {
                        let cpu = parse_u32(&tok[..ndigits])?;
                        let (comm, pid, tgid) = split_task(&line[..ps])?;
                        let body = line.get(skip_one_space(b, after)..)?;
                        return Some(Prefix { comm, pid, tgid, cpu, flags, ts, untimed: false, delay, body });
                    }
                }
            }
        }
        prev = Some((p, e));
        p = skip_ws(b, e);
    }
    None
}

/// A latency time token at `b[s..e]`: `12116us`, `0us*:`, `2563694114us` (then a ` : ` token), or
/// `1401.282250:`. Returns the time, the delay marker and where the body starts.
fn latency_time(b: &[u8], s: usize, e: usize) -> Option<(Nanos, Option<u8>, usize)> {
    let tok = &b[s..e];
    if let Some((pos, unit)) = find_us(tok) {
        let us = parse_u64(&tok[..pos])?;
        let ts = Nanos(us.checked_mul(1000)?);
        let tail = &tok[pos + unit..];
        return match tail {
            [b':'] => Some((ts, None, e)),
            [m, b':'] if is_delay(*m) => Some((ts, Some(*m), e)),
            [] | [_] => {
                // `12116us : body` or `0us+ : body`: the marker/colon comes in the next token.
                let marker = tail.first().copied().filter(|m| is_delay(*m));
                if tail.len() == 1 && marker.is_none() {
                    return None;
                }
                let n = skip_ws(b, e);
                match b.get(n..n + 1) {
                    Some([b':']) => Some((ts, marker, n + 1)),
                    _ => None,
                }
            }
            _ => None,
        };
    }
    if tok.len() > 1 && tok[tok.len() - 1] == b':' && is_secs(&tok[..tok.len() - 1]) {
        return Some((parse_secs(&tok[..tok.len() - 1])?, None, e));
    }
    None
}

/// Where the digits of a microsecond time end in `tok`, and the unit's length: `us`, `µs` (the 2.6.11/12 -rt
/// tracer's own unit), or `\u{FFFD}s` (that `µ`, written in Latin-1, in a mail that said it was UTF-8).
fn find_us(tok: &[u8]) -> Option<(usize, usize)> {
    let n = tok.iter().take_while(|c| c.is_ascii_digit()).count();
    if n == 0 {
        return None;
    }
    ["us", "\u{b5}s", "\u{fffd}s"].into_iter().find(|u| tok[n..].starts_with(u.as_bytes())).map(|u| (n, u.len()))
}

/// The latency output's delay markers: `+` >10us, `!` >100us, `#` >1ms, `*` >10ms, `@` >100ms, `$` >1s.
fn is_delay(b: u8) -> bool {
    matches!(b, b'+' | b'!' | b'#' | b'*' | b'@' | b'$')
}

/// `comm-pid` with an optional trailing `(tgid)` / `(-----)`. The pid is the digits after the last `-`.
pub fn split_task(s: &str) -> Option<(&str, i32, Option<i32>)> {
    let mut t = s.trim_ascii_end();
    let mut tgid = None;
    if t.ends_with(')') {
        let open = t.rfind('(')?;
        let inner = t[open + 1..t.len() - 1].trim_ascii();
        tgid = if inner.bytes().all(|c| c == b'-') { None } else { Some(inner.parse().ok()?) };
        t = t[..open].trim_ascii_end();
    }
    let dash = t.rfind('-')?;
    let pid = t[dash + 1..].parse::<i32>().ok()?;
    if t.as_bytes().get(dash + 1).is_some_and(|c| !c.is_ascii_digit()) {
        return None;
    }
    // `<...>--1`: no task (pid -1, no name), as latscope prints an event that names none; a comm never
    // reads `<...>-`.
    if t[..dash].trim_ascii_start() == "<...>-" {
        return Some(("", -pid, tgid));
    }
    let mut comm = t[..dash].trim_ascii_start();
    // trace-cmd report prefixes events of an instance (`-B NAME`) with `NAME: `.
    if let Some(i) = memchr::memrchr(b':', comm.as_bytes()) {
        if comm.as_bytes().get(i + 1) == Some(&b' ') {
            comm = comm[i + 2..].trim_ascii_start();
        }
    }
    Some((comm, pid, tgid))
}

#[inline]
fn skip_ws(b: &[u8], mut p: usize) -> usize {
    while p < b.len() && (b[p] == b' ' || b[p] == b'\t') {
        p += 1;
    }
    p
}

#[inline]
fn skip_one_space(b: &[u8], p: usize) -> usize {
    if b.get(p) == Some(&b' ') {
        p + 1
    } else {
        p
    }
}

#[inline]
fn token_end(b: &[u8], mut p: usize) -> usize {
    while p < b.len() && b[p] != b' ' && b[p] != b'\t' {
        p += 1;
    }
    p
}

fn is_secs(t: &[u8]) -> bool {
    let Some(dot) = t.iter().position(|&c| c == b'.') else { return false };
    dot > 0 && dot + 1 < t.len() && t.iter().enumerate().all(|(i, c)| i == dot || c.is_ascii_digit())
}

/// `secs.frac` (any number of fraction digits up to nanoseconds) ➜ nanoseconds.
pub fn parse_secs(t: &[u8]) -> Option<Nanos> {
    let dot = t.iter().position(|&c| c == b'.')?;
    let secs = parse_u64(&t[..dot])?;
    let frac = &t[dot + 1..];
    if frac.is_empty() || !frac.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut ns: u64 = 0;
    for i in 0..9 {
        ns = ns * 10 + frac.get(i).map_or(0, |c| u64::from(c - b'0'));
    }
    secs.checked_mul(1_000_000_000)?.checked_add(ns).map(Nanos)
}

/// `...` (three dots or more): what an author writes in place of a value left out.
fn is_elided(t: &[u8]) -> bool {
    t.len() >= 3 && t.iter().all(|&c| c == b'.')
}

/// Decimal digits ➜ u64 (no sign, no overflow).
pub fn parse_u64(t: &[u8]) -> Option<u64> {
    if t.is_empty() || t.len() > 19 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in t {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v * 10 + u64::from(c - b'0');
    }
    Some(v)
}

fn parse_u32(t: &[u8]) -> Option<u32> {
    u32::try_from(parse_u64(t)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(l: &str) -> Prefix<'_> {
        parse_prefix(l, FifthColumn::MigrateDisable).expect(l)
    }

    #[test]
    fn bracket_layouts() {
        let x = p("            bash-1998  [000] d.h1   138.733101: softirq_raise: vec=1 [action=TIMER]");
        assert_eq!((x.comm, x.pid, x.cpu, x.ts), ("bash", 1998, 0, Nanos(138_733_101_000)));
        assert_eq!(x.body, "softirq_raise: vec=1 [action=TIMER]");
        assert!(x.flags.in_hardirq());
        let x = p(" ndroid.systemui-13580 (13580) [001] ...1 683202.104223: tracing_mark_write: B|1|x");
        assert_eq!((x.comm, x.pid, x.tgid), ("ndroid.systemui", 13580, Some(13580)));
        let x = p("           <...>-19161 (-----) [001] ...1 683201.354908: x: y");
        assert_eq!((x.comm, x.tgid), ("<...>", None));
        let x = p("    yum-updatesd-3111  [003]  1701.957688: free_poll_entry <-poll_freewait");
        assert_eq!((x.comm, x.pid, x.flags.bits), ("yum-updatesd", 3111, 0));
        let x = p(" WebView Thread-11043 [000] 50260.648275: sched_switch: a=b");
        assert_eq!(x.comm, "WebView Thread");
        let x = p("       kworker/u36:1-51219 [000] d..2. 162583.266957: sched_switch:  x");
        assert_eq!((x.comm, x.flags.migrate_disable), ("kworker/u36:1", Some(0)));
        let x = p("    tail-5572  [001] dN.h512  2888.401192: process_event: e");
        assert_eq!(x.flags.preempt_lazy_depth, Some(1));
        let x = p("latscope_b3fix:    stress-ng-cpu-8259  [001]  3173.638933: hrtimer_expire_exit:  hrtimer=0x1");
        assert_eq!((x.comm, x.pid), ("stress-ng-cpu", 8259));
        // latscope's own line for an event that names no task.
        let x = p("           <...>--1      [001]     1.000000123: tracing_mark_write: x");
        assert_eq!((x.comm, x.pid), ("", -1));
        let x = p("           <...>-1       [001]     1.000000123: tracing_mark_write: x");
        assert_eq!((x.comm, x.pid), ("<...>", 1));
        let x = p("  kworker/u17:1-959   (  959) [002] d..3 1.000000001: e: f");
        assert_eq!((x.tgid, x.ts), (Some(959), Nanos(1_000_000_001)));
    }

    #[test]
    fn latency_layouts() {
        let x = p("qseecom--207       7d..1    0us*: console_trylock_spinning <-vprintk_emit");
        assert_eq!((x.comm, x.pid, x.cpu, x.ts, x.delay), ("qseecom-", 207, 7, Nanos(0), Some(b'*')));
        assert_eq!(x.body, "console_trylock_spinning <-vprintk_emit");
        let x = p("qseecom--207       7d..1 12116us : console_trylock_spinning <-vprintk_emit");
        assert_eq!((x.ts, x.delay), (Nanos(12_116_000), None));
        let x = p("  <idle>-0       1dN.h3.. 2563695122us : sched_wakeup: comm=cyclictest pid=1213");
        assert_eq!((x.cpu, x.ts.0), (1, 2_563_695_122_000));
        assert!(x.flags.has(Flags::NEED_RESCHED));
        let x = p("    sshd-4371    0d.h..  1401.282341: funcgraph_exit:       + 17.747 us  |        }");
        assert_eq!((x.cpu, x.ts), (0, Nanos(1_401_282_341_000)));
        let x = p("stress-n-264       1dn.h511    8us#: 0");
        assert_eq!((x.comm, x.delay, x.body), ("stress-n", Some(b'#'), "0"));
        let x = p("      ls-4339  0...1    0us+: get_page_from_freelist (__alloc_pages_internal)");
        assert_eq!((x.comm, x.delay), ("ls", Some(b'+')));
    }

    #[test]
    fn not_event_lines() {
        for l in [
            "# tracer: nop",
            " => vprintk_default",
            " 0)   1.382 us    |          __might_sleep();",
            "CPU:2 [LOST 11745 EVENTS]",
            "cpus=8",
            "[...]",
            "bash-12 [000] d.h1 notatime: x",
        ] {
            assert!(parse_prefix(l, FifthColumn::MigrateDisable).is_none(), "{l}");
        }
        assert_eq!(parse_secs(b"1.5"), Some(Nanos(1_500_000_000)));
        assert_eq!(parse_secs(b"1.1234567891"), Some(Nanos(1_123_456_789)));
        assert_eq!(parse_secs(b"99999999999999999999.1"), None);
    }
}
