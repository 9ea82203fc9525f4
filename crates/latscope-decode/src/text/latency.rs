//! The latency tracers' output (irqsoff, preemptoff, preemptirqsoff, wakeup, wakeup_rt): the header
//! ➜ [`LatencyHeader`], and the wakeup/sched_switch tracer records (`0:120:R   + [002]  5882: 94:R sleep`).
//!
//! Header lines come with a `# ` prefix (2.6.27+) or without (2.6.26, and the 2004 tracer of 2.6.8–2.6.10
//! whose entries [`old_entry`] reads), may be joined by copy/paste damage (`# ----…----# latency: 7038 us, …`)
//! and may contain U+00A0 no-break spaces (normalised by the caller).

use latscope_model::{CpuId, LatencyHeader, LatencyTask, Nanos, Text};

/// Apply one header line (without its leading `#`) to `h`. Returns `true` when the line was a latency
/// header line. `cpus` receives the `#P:N` CPU count.
pub fn header_line(line: &str, h: &mut Option<LatencyHeader>, cpus: &mut Option<u32>) -> bool {
    let t = line.trim();
    if let Some((tracer, version, kernel)) = title(t) {
        let hdr = h.get_or_insert_with(LatencyHeader::default);
        hdr.tracer = tracer.to_string();
        hdr.version = Some(version.to_string());
        hdr.kernel = kernel.map(str::to_string);
        return true;
    }
    if let Some(i) = t.find("latency: ") {
        if t[..i].bytes().all(|b| b == b'-' || b == b'#' || b == b' ') {
            let hdr = h.get_or_insert_with(LatencyHeader::default);
            summary_line(&t[i + "latency: ".len()..], hdr, cpus);
            return true;
        }
    }
    if let Some(rest) = t.strip_prefix("| task:") {
        let hdr = h.get_or_insert_with(LatencyHeader::default);
        hdr.task = task(rest.trim());
        return true;
    }
    // The 2004 tracer's first version (v1.0, 2.6.8-rc4 -O6) printed the task on two lines of its own:
    // `process: default.hotplug/1470, uid: 0` then `nice: -10, policy: 0, rt_priority: 0`.
    if let Some(hdr) = h.as_mut() {
        if let Some(rest) = t.strip_prefix("process:") {
            hdr.task = task(&rest.trim().replace(": ", ":"));
            return hdr.task.is_some();
        }
        if let (Some(rest), Some(task)) = (t.strip_prefix("nice:"), hdr.task.as_mut()) {
            attributes(&format!("nice:{}", rest.trim_start().replace(": ", ":")), task);
            return true;
        }
    }
    // `=> started at: try_to_wake_up+0x51/0x170 <c010f3a1>`: the 2004 tracer printed the address too.
    if let Some(rest) = t.strip_prefix("=> started at:") {
        h.get_or_insert_with(LatencyHeader::default).started_at = Some(Text::from(strip_addr(rest)));
        return true;
    }
    if let Some(rest) = t.strip_prefix("=> ended at:") {
        h.get_or_insert_with(LatencyHeader::default).ended_at = Some(Text::from(strip_addr(rest)));
        return true;
    }
    // `=======>`: the 2004 tracer's line between its header and its entries.
    if h.is_some() && t.len() > 1 && t.strip_suffix('>').is_some_and(|r| r.bytes().all(|b| b == b'=')) {
        return true;
    }
    !t.is_empty() && t.bytes().all(|b| b == b'-')
}

/// A latency tracer's title line, `irqsoff latency trace v1.1.5 on 4.14.0` (the 2004 tracer's `preemption
/// latency trace v1.0.7 on 2.6.9-rc1-bk12-VP-S0`, `… v1.0`): (tracer, version, kernel). One tracer word
/// before and a version number after, so words that mention a "latency trace v1.0" are not a title.
pub fn title(line: &str) -> Option<(&str, &str, Option<&str>)> {
    let (tracer, rest) = line.trim().split_once(" latency trace v")?;
    let (version, kernel) = match rest.split_once(" on ") {
        Some((v, k)) => (v.trim(), Some(k.trim()).filter(|k| !k.is_empty())),
        None => (rest.trim(), None),
    };
    let word = !tracer.is_empty() && tracer.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    let number =
        version.starts_with(|c: char| c.is_ascii_digit()) && version.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    (word && number).then_some((tracer, version, kernel))
}

/// The end of a 2004 `latency:` line that a mail client wrapped onto a line of its own: only `NAME:N`
/// fields and the closing `]` (`#CPUS:2]`, `HP:1 #CPUS:2]`). Reads the CPU count from it.
pub fn summary_tail(t: &str, cpus: &mut Option<u32>) -> bool {
    let Some(body) = t.strip_suffix(']') else { return false };
    let field = |f: &str| {
        f.split_once(':').is_some_and(|(k, v)| {
            let k = k.strip_prefix('#').unwrap_or(k);
            !k.is_empty()
                && k.bytes().all(|b| b.is_ascii_uppercase())
                && !v.is_empty()
                && v.bytes().all(|b| b.is_ascii_digit())
        })
    };
    if body.split_ascii_whitespace().next().is_none() || !body.split_ascii_whitespace().all(field) {
        return false;
    }
    // After `#` the decoder may have taken the line for a comment and passed it on without the `#`.
    if let Some(n) = body.split_ascii_whitespace().find_map(|f| f.strip_prefix('#').unwrap_or(f).strip_prefix("CPUS:"))
    {
        *cpus = n.parse().ok();
    }
    true
}

/// A line of the column legend printed without `#` (2.6.11/12 -rt, 2.6.26): `_------=> CPU#`,
/// `|| / _---=> hardirq/softirq`, `cmd     pid ||||| time  |   caller`, `\   /    |||||   \   |   /`.
pub fn legend_line(t: &str) -> bool {
    const WORDS: [&str; 11] = [
        "CPU#",
        "irqs-off",
        "need-resched",
        "hardirq/softirq",
        "preempt-depth",
        "lock-depth",
        "delay",
        "cmd",
        "pid",
        "time",
        "caller",
    ];
    let drawn = |w: &str| w.bytes().all(|b| b"_-=>/|\\".contains(&b));
    let words = t.split_ascii_whitespace().filter(|w| !drawn(w)).collect::<Vec<_>>();
    t.split_ascii_whitespace().any(drawn) && words.iter().all(|w| WORDS.contains(w))
}

/// One verbose-format function entry: comm, pid, CPU, time since the start, function, parent.
pub type VerboseEntry<'a> = (&'a str, i32, u32, Nanos, &'a str, Option<&'a str>);

/// The entry number prefix of the 2.6.11/2.6.12 -rt latency tracer's verbose format (`(T1/#12) `): the line
/// after it, or `None` when there is none.
pub fn strip_verbose_tag(line: &str) -> Option<&str> {
    let r = line.trim_ascii_start().strip_prefix("(T")?;
    let (tag, rest) = r.split_once(')')?;
    let (kind, n) = tag.split_once("/#")?;
    (kind.bytes().all(|b| b.is_ascii_digit()) && n.bytes().all(|b| b.is_ascii_digit())).then_some(rest)
}

/// A function entry of the -rt verbose format (after [`strip_verbose_tag`]):
/// `kswapd0    66 0 5 00000001 00000006 [0061867426579669] 0.976ms (+0.003ms): func+0xb/0x110 <c010818b> (parent+0x8b/0x160 <c01364ab>)`
/// ➜ (comm, pid, cpu, time since the start, function, parent).
pub fn verbose_entry(rest: &str) -> Option<VerboseEntry<'_>> {
    let (cols, call) = rest.split_once("): ")?;
    let mut t = cols.split_whitespace();
    let comm = t.next()?;
    let pid = t.next()?.parse().ok()?;
    let cpu = t.next()?.parse().ok()?;
    let ms = t.find_map(|x| x.strip_suffix("ms"))?;
    let (whole, frac) = ms.split_once('.')?;
    let us = whole.parse::<u64>().ok()?.checked_mul(1000)?.checked_add(frac.get(..3)?.parse::<u64>().ok()?)?;
    let (func, parent) = match call.split_once(" (") {
        Some((f, p)) => (strip_addr(f), Some(strip_addr(p.trim_ascii_end().strip_suffix(')')?))),
        None => (strip_addr(call), None),
    };
    Some((comm, pid, cpu, Nanos(us.checked_mul(1000)?), func, parent))
}

/// `func+0xb/0x110 <c010818b>` ➜ `func+0xb/0x110`.
fn strip_addr(s: &str) -> &str {
    let s = s.trim_ascii();
    match s.rsplit_once(" <") {
        Some((name, addr)) if addr.ends_with('>') => name.trim_ascii_end(),
        _ => s,
    }
}

/// `12116 us, #4/4, CPU#7 | (M:preempt VP:0, KP:0, SP:0 HP:0 #P:8)`
fn summary_line(s: &str, h: &mut LatencyHeader, cpus: &mut Option<u32>) {
    let mut parts = s.split(',');
    if let Some(lat) = parts.next() {
        let lat = lat.trim();
        let num: String = lat.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(v) = num.parse::<u64>() {
            // Saturating: a damaged header must not overflow (fuzz crash 797c5e0a).
            h.latency = if lat.ends_with("ns") { Nanos(v) } else { Nanos(v.saturating_mul(1000)) };
        }
    }
    // The 2004 tracer: `2906 us, entries: 4000 (7910)` (kept, then recorded: a full buffer kept the first
    // 4000) and `|   [VP:1 KP:1 SP:1 HP:1 #CPUS:2]`.
    if let Some((kept, rest)) = s.split_once("entries: ").and_then(|(_, r)| r.split_once(" (")) {
        let total = rest.split_once(')').map(|(n, _)| n);
        if let (Ok(a), Some(Ok(b))) = (kept.trim().parse(), total.map(|n| n.trim().parse())) {
            h.entries = Some((a, b));
        }
    }
    for p in s.split([',', '|', '(', ')', ' ', '[', ']']) {
        let p = p.trim();
        if let Some(n) = p.strip_prefix("#CPUS:") {
            *cpus = n.parse().ok();
        } else if let Some((a, b)) = p.strip_prefix('#').and_then(|e| e.split_once('/')) {
            if let (Ok(a), Ok(b)) = (a.parse(), b.parse()) {
                h.entries = Some((a, b));
            }
        } else if let Some(c) = p.strip_prefix("CPU#") {
            h.cpu = c.parse().ok().map(CpuId);
        } else if let Some(m) = p.strip_prefix("M:") {
            h.model = Some(format!("M:{m}"));
        } else if let Some(n) = p.strip_prefix("#P:") {
            *cpus = n.parse().ok();
        }
    }
}

/// `qseecom-unload--207 (uid:0 nice:0 policy:0 rt_prio:0)`, or the 2004 tracer's
/// `events/0/4, uid:0 nice:-10 policy:0 rt_prio:0` (the pid after the last `/`; names hold `/` and spaces).
fn task(s: &str) -> Option<LatencyTask> {
    let (who, attrs, sep) = match s.split_once(" (") {
        Some((who, attrs)) => (who, attrs, '-'),
        None => match s.split_once(", ") {
            Some((who, attrs)) if attrs.starts_with("uid:") => (who, attrs, '/'),
            _ => (s, "", '-'),
        },
    };
    let (comm, pid) = who.trim().rsplit_once(sep)?;
    let mut t = LatencyTask { comm: comm.to_string(), pid: pid.parse().ok()?, ..LatencyTask::default() };
    attributes(attrs.trim_end_matches(')'), &mut t);
    Some(t)
}

/// `uid:0 nice:-10 policy:0 rt_prio:0` (v1.0: `nice:-10, policy:0, rt_priority:0`) into `t`.
fn attributes(s: &str, t: &mut LatencyTask) {
    for kv in s.split([' ', ',']) {
        if let Some((k, v)) = kv.split_once(':') {
            let v = v.parse().ok();
            match k {
                "uid" => t.uid = v,
                "nice" => t.nice = v,
                "policy" => t.policy = v,
                "rt_prio" | "rt_priority" => t.rt_prio = v,
                _ => {}
            }
        }
    }
}

/// One entry of the 2004 latency tracer ("preemption latency trace v1.0.x", 2.6.8–2.6.10 voluntary-preempt
/// and early -RT): `00000001 0.730ms (+0.730ms): sub_preempt_count (_mmx_memcpy)`, with a pid column first
/// in -RT (`   13 80000002 0.062ms (+0.000ms): __switch_to (__schedule)`) and without the preempt count
/// in v1.0 (` 0.000ms (+0.000ms): page_address (kmap_high)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OldEntry<'a> {
    /// The pid column, when printed.
    pub pid: Option<i32>,
    /// The preempt count column (hex), when printed. Not made into [`latscope_model::Flags`]: the column
    /// does not say whether irqs were off, and its bits above the hardirq count differ between patch versions.
    pub count: Option<u32>,
    /// Time since the start of the section.
    pub ts: Nanos,
    /// The function and its parent, or `None` for the tracer's special-value records (`(1) ((98))`).
    pub call: Option<(&'a str, Option<&'a str>)>,
}

/// Parse an entry of the 2004 latency tracer (see [`OldEntry`]); `None` when the line is not one.
pub fn old_entry(line: &str) -> Option<OldEntry<'_>> {
    let (cols, call) = line.trim_ascii().split_once(": ")?;
    let mut cols: Vec<&str> = cols.split_ascii_whitespace().collect();
    // The `(+0.730ms)` delay column: the next entry's time says the same.
    if cols.last().is_some_and(|c| c.starts_with("(+") && c.ends_with(')')) {
        cols.pop();
    }
    let ts = old_time(cols.pop()?)?;
    let hex8 = |c: &str| c.len() == 8 && c.bytes().all(|b| b.is_ascii_hexdigit());
    let (pid, count) = match cols[..] {
        [] => (None, None),
        [c] if hex8(c) => (None, Some(u32::from_str_radix(c, 16).ok()?)),
        [p, c] if hex8(c) => (Some(p.parse().ok()?), Some(u32::from_str_radix(c, 16).ok()?)),
        _ => return None,
    };
    let call = call.trim_ascii();
    let call = if call.starts_with('(') {
        // `(1) ((98))`: values the tracer recorded with trace_special().
        if !call.ends_with("))") {
            return None;
        }
        None
    } else {
        let (func, parent) = match call.split_once(" (") {
            Some((f, p)) => (f, Some(p.strip_suffix(')')?)),
            None => (call, None),
        };
        if func.is_empty() || func.contains(char::is_whitespace) {
            return None;
        }
        Some((func, parent))
    };
    Some(OldEntry { pid, count, ts, call })
}

/// `0.730ms` or `730us` (`12.5us`) ➜ the time.
fn old_time(t: &str) -> Option<Nanos> {
    let (num, scale) = match t.strip_suffix("ms") {
        Some(n) => (n, 1_000_000u64),
        None => (t.strip_suffix("us")?, 1_000),
    };
    let (whole, frac) = num.split_once('.').unwrap_or((num, ""));
    if whole.is_empty() || !whole.bytes().all(|b| b.is_ascii_digit()) || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut ns = whole.parse::<u64>().ok()?.checked_mul(scale)?;
    let mut unit = scale;
    for d in frac.bytes().take(9) {
        unit /= 10;
        ns = ns.checked_add(u64::from(d - b'0') * unit)?;
    }
    Some(Nanos(ns))
}

/// A wakeup / sched_switch tracer record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SwitchRecord<'a> {
    /// `+` is a wakeup, `==>` a context switch.
    pub switch: bool,
    /// The current (waking or switching-out) task's pid, kernel prio and state.
    pub cur: (i32, i32, &'a str),
    /// The target CPU when printed (`[002]`).
    pub cpu: Option<u32>,
    /// The woken / switched-in task's pid, kernel prio and state.
    pub next: (i32, i32, &'a str),
    /// The woken / switched-in task's name when printed.
    pub comm: Option<&'a str>,
}

/// Parse `  3997:120:R   +  4055:120:R`, `0:120:R   + [002]  5882: 94:R sleep`, `1456:  0:S ==> [001] 12905: 19:R cyclictest`.
pub fn switch_record(body: &str) -> Option<SwitchRecord<'_>> {
    let (switch, left, right) = if let Some((l, r)) = body.split_once(" ==> ") {
        (true, l, r)
    } else {
        let (l, r) = body.split_once(" + ")?;
        (false, l, r)
    };
    let cur = pid_prio_state(left.trim())?;
    let mut r = right.trim_start();
    let mut cpu = None;
    if let Some(rest) = r.strip_prefix('[') {
        let (c, rest) = rest.split_once(']')?;
        cpu = Some(c.parse().ok()?);
        r = rest.trim_start();
    }
    // `5882: 94:R sleep`: pid:prio:state then the optional comm.
    let (rec, comm) = split_record(r)?;
    let next = pid_prio_state(rec)?;
    Some(SwitchRecord { switch, cur, cpu, next, comm: comm.filter(|c| !c.is_empty()) })
}

fn split_record(s: &str) -> Option<(&str, Option<&str>)> {
    let c1 = s.find(':')?;
    let c2 = c1 + 1 + s[c1 + 1..].find(':')?;
    let state_end = s[c2 + 1..].find(' ').map_or(s.len(), |i| c2 + 1 + i);
    Some((&s[..state_end], (state_end < s.len()).then(|| s[state_end..].trim())))
}

fn pid_prio_state(s: &str) -> Option<(i32, i32, &str)> {
    let mut it = s.splitn(3, ':');
    let pid = it.next()?.trim().parse().ok()?;
    let prio = it.next()?.trim().parse().ok()?;
    let state = it.next()?.trim();
    (!state.is_empty() && !state.contains(' ')).then_some((pid, prio, state))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modern_header() {
        let mut h = None;
        let mut cpus = None;
        for l in [
            " irqsoff latency trace v1.1.5 on 5.4.161-qgki-debug",
            " --------------------------------------------------------------------",
            " latency: 12116 us, #4/4, CPU#7 | (M:preempt VP:0, KP:0, SP:0 HP:0 #P:8)",
            "    | task: qseecom-unload--207 (uid:0 nice:0 policy:0 rt_prio:0)",
            "  => started at: vprintk_emit",
            "  => ended at:   vprintk_emit",
        ] {
            assert!(header_line(l, &mut h, &mut cpus), "{l}");
        }
        let h = h.expect("header");
        assert_eq!((h.tracer.as_str(), h.kernel.as_deref()), ("irqsoff", Some("5.4.161-qgki-debug")));
        assert_eq!((h.latency, h.cpu, h.entries), (Nanos::from_us(12116), Some(CpuId(7)), Some((4, 4))));
        assert_eq!((h.model.as_deref(), cpus), (Some("M:preempt"), Some(8)));
        let t = h.task.expect("task");
        assert_eq!((t.comm.as_str(), t.pid, t.policy), ("qseecom-unload-", 207, Some(0)));
        assert_eq!(h.started_at.as_deref(), Some("vprintk_emit"));
        assert!(!header_line("                  _------=> CPU#", &mut None, &mut None));
    }

    #[test]
    fn joined_line_damage() {
        let mut h = None;
        let l = " --------------------------------------------------------------------# latency: 7038 us, #4/4, CPU#2 | (M:preempt VP:0, KP:0, SP:0 HP:0 #P:8)";
        assert!(header_line(l, &mut h, &mut None));
        assert_eq!(h.map(|h| h.latency), Some(Nanos::from_us(7038)));
    }

    #[test]
    fn old_entries_in_each_layout() {
        let e = old_entry("00000001 0.730ms (+0.730ms): sub_preempt_count (_mmx_memcpy)").expect("v1.0.2");
        assert_eq!((e.pid, e.count, e.ts), (None, Some(1), Nanos::from_us(730)));
        assert_eq!(e.call, Some(("sub_preempt_count", Some("_mmx_memcpy"))));
        let e = old_entry("   13 80000001 0.063ms (+0.003ms): (13) ((1))").expect("-RT special record");
        assert_eq!((e.pid, e.count, e.ts, e.call), (Some(13), Some(0x8000_0001), Nanos::from_us(63), None));
        // v1.0: no preempt count column; a time in microseconds; a parent wrapped away by a mail client.
        let e = old_entry(" 0.000ms (+0.000ms): page_address (kmap_high)").expect("v1.0");
        assert_eq!((e.pid, e.count, e.call), (None, None, Some(("page_address", Some("kmap_high")))));
        assert_eq!(old_entry("00000001 12.5us: f").map(|e| (e.ts, e.call)), Some((Nanos(12_500), Some(("f", None)))));
        for not in [" latency: 730 us, entries: 4 (4)", "| task: cat/2091, uid:0", "00000101 0.00", "x 0.1ms: f (g"] {
            assert_eq!(old_entry(not), None, "{not}");
        }
    }

    #[test]
    fn old_header() {
        let mut h = None;
        let mut cpus = None;
        for l in [
            "preemption latency trace v1.0.7 on 2.6.9-rc4-mm1-RT-U6",
            " latency: 1841 us, entries: 4000 (12990)   |   [VP:1 KP:1 SP:1 HP:1 #CPUS:1]",
            "    | task: aplay/2160, uid:1000 nice:0 policy:0 rt_prio:0",
            " => started at: __schedule+0x3b/0x5d0 <c02a767b>",
            "=======>",
        ] {
            assert!(header_line(l, &mut h, &mut cpus), "{l}");
        }
        let h = h.expect("header");
        assert_eq!((h.version.as_deref(), h.kernel.as_deref()), (Some("1.0.7"), Some("2.6.9-rc4-mm1-RT-U6")));
        assert_eq!((h.latency, h.entries, cpus), (Nanos::from_us(1841), Some((4000, 12990)), Some(1)));
        assert_eq!(h.task.map(|t| (t.comm, t.pid, t.uid)), Some(("aplay".to_string(), 2160, Some(1000))));
        assert_eq!(h.started_at.as_deref(), Some("__schedule+0x3b/0x5d0"));
        assert!(!header_line("=======>", &mut None, &mut None), "only after a header");
    }

    #[test]
    fn v1_0_header_with_process_and_nice_lines() {
        let (mut h, mut cpus) = (None, None);
        for l in [
            "  preemption latency trace v1.0",
            "   latency: 121 us, entries: 1032 (1032)",
            "   process: default.hotplug/1470, uid: 0",
            "   nice: -10, policy: 0, rt_priority: 0",
        ] {
            assert!(header_line(l, &mut h, &mut cpus), "{l}");
        }
        let t = h.and_then(|h| h.task).expect("the task");
        assert_eq!(
            (t.comm.as_str(), t.pid, t.uid, t.nice, t.policy, t.rt_prio),
            ("default.hotplug", 1470, Some(0), Some(-10), Some(0), Some(0))
        );
        assert!(!header_line("process: x/1, uid: 0", &mut None, &mut None), "only inside a header");
    }

    #[test]
    fn titles_are_one_tracer_word_and_a_version() {
        assert_eq!(title(" wakeup_RT latency trace v1.1.5 on 6.4.0"), Some(("wakeup_RT", "1.1.5", Some("6.4.0"))));
        assert_eq!(title("preemption latency trace v1.0"), Some(("preemption", "1.0", None)));
        for not in ["the preemption latency trace v1.0 shows it", "irqsoff latency trace vX", " latency trace v1.0"] {
            assert_eq!(title(not), None, "{not}");
        }
        let mut cpus = None;
        assert!(summary_tail("#CPUS:2]", &mut cpus));
        assert_eq!(cpus, Some(2));
        assert!(summary_tail("HP:1 #CPUS:4]", &mut cpus));
        assert_eq!(cpus, Some(4));
        for not in ["[again - no big steps]", "x:1]", "]", "#CPUS:2"] {
            assert!(!summary_tail(not, &mut cpus), "{not}");
        }
    }

    #[test]
    fn switch_records() {
        let r = switch_record("     0:120:R   + [002]  5882: 94:R sleep").expect("wakeup");
        assert_eq!(
            (r.switch, r.cur, r.cpu, r.next, r.comm),
            (false, (0, 120, "R"), Some(2), (5882, 94, "R"), Some("sleep"))
        );
        let r = switch_record("  3997:120:R ==>  4055:120:R").expect("switch");
        assert_eq!((r.switch, r.next, r.comm), (true, (4055, 120, "R"), None));
        let r = switch_record("    1456:  0:S ==> [001]   12905: 19:R cyclictest").expect("switch");
        assert_eq!((r.cur, r.cpu, r.next.0), ((1456, 0, "S"), Some(1), 12905));
        assert!(switch_record("caller=a parent=b").is_none());
    }
}
