//! An ftrace text event body (`prev_comm=bash prev_pid=12 …`, `NR 0 (3, 7ffd)`, `swapper/0:0 [120] R ==> …`)
//! ➜ named fields behind [`FieldSource`], so [`typed::build`](crate::typed::build) maps text like binary.
//!
//! `key=value` bodies are split once into up to [`MAX_FIELDS`] borrowed pairs; the print formats that are not
//! `key=value` (syscalls, trace-cmd's sched plugin, workqueue, nmi, timerlat, osnoise) are parsed into the
//! kernel's tracefs field names.

use super::line::parse_secs;
use crate::typed::{FieldSource, Interner};
use latscope_model::{Field, FieldValue, Text};
use std::cell::RefCell;

/// Fields kept per event; more are ignored (no ftrace event prints that many).
pub const MAX_FIELDS: usize = 16;

/// Longest text value that is interned.
const MAX_INTERNED: usize = 24;

/// One field value: borrowed text, or a number computed while parsing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Val<'a> {
    /// Text as printed.
    S(&'a str),
    /// A computed integer.
    I(i64),
}

/// The fields of one text event.
pub struct TextFields<'a> {
    kv: [(&'a str, Val<'a>); MAX_FIELDS],
    n: usize,
    interner: &'a RefCell<Interner>,
}

impl<'a> TextFields<'a> {
    /// No fields yet.
    pub fn new(interner: &'a RefCell<Interner>) -> TextFields<'a> {
        TextFields { kv: [("", Val::I(0)); MAX_FIELDS], n: 0, interner }
    }

    /// Add a field (ignored beyond [`MAX_FIELDS`]).
    pub fn push(&mut self, key: &'a str, v: Val<'a>) {
        if self.n < MAX_FIELDS {
            self.kv[self.n] = (key, v);
            self.n += 1;
        }
    }

    fn get(&self, name: &str) -> Option<Val<'a>> {
        self.kv[..self.n].iter().find(|(k, _)| *k == name).map(|(_, v)| *v)
    }

    /// Split a `key=value key=value` body. Tokens that are not `key=` continue the previous value
    /// (`comm=WebView Thread`, `vec=1 [action=TIMER]`); tokens before the first key form a `text` field;
    /// `==>` separators are skipped.
    pub fn parse_kv(&mut self, body: &'a str) {
        let b = body.as_bytes();
        let mut cur: Option<(&'a str, usize, usize)> = None;
        let mut lead: Option<(usize, usize)> = None;
        let mut p = 0;
        while p < b.len() {
            while p < b.len() && (b[p] == b' ' || b[p] == b'\t') {
                p += 1;
            }
            let s = p;
            while p < b.len() && b[p] != b' ' && b[p] != b'\t' {
                p += 1;
            }
            if s == p {
                break;
            }
            let tok = &b[s..p];
            // `==>` separates; `...` / `[...]` is where an author left fields out: neither is a value.
            if tok == b"==>" || is_elision_token(tok) {
                continue;
            }
            let key_len = key_len(tok);
            if key_len > 0 {
                if let Some((k, vs, ve)) = cur.take() {
                    self.push(k, Val::S(&body[vs..ve]));
                }
                cur = Some((&body[s..s + key_len], s + key_len + 1, p));
            } else if let Some(c) = cur.as_mut() {
                c.2 = p;
            } else {
                lead = Some((lead.map_or(s, |l| l.0), p));
            }
        }
        if let Some((s, e)) = lead {
            self.push("text", Val::S(&body[s..e]));
        }
        if let Some((k, vs, ve)) = cur {
            self.push(k, Val::S(&body[vs..ve]));
        }
    }
}

/// `...`, `[...]`, `…`: a mark where the author of a pasted trace left something out.
pub(crate) fn is_elision_token(tok: &[u8]) -> bool {
    let inner = tok.strip_prefix(b"[").and_then(|t| t.strip_suffix(b"]")).unwrap_or(tok);
    (inner.len() >= 3 && inner.iter().all(|&c| c == b'.')) || inner == "\u{2026}".as_bytes()
}

/// Length of `key` when `tok` starts with `key=` (an identifier), else 0.
fn key_len(tok: &[u8]) -> usize {
    let Some(eq) = tok.iter().position(|&c| c == b'=') else { return 0 };
    let key = &tok[..eq];
    let ok = !key.is_empty()
        && (key[0].is_ascii_alphabetic() || key[0] == b'_')
        && key.iter().all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-');
    if ok {
        eq
    } else {
        0
    }
}

fn first_token(s: &str) -> &str {
    let s = s.trim_ascii_start();
    s.split([' ', '\t']).next().unwrap_or("").trim_end_matches(',')
}

/// A decimal (optionally signed) or `0x` hex integer.
pub fn parse_int(t: &str) -> Option<i64> {
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        return u64::from_str_radix(h, 16).ok().map(|v| v as i64);
    }
    if let Some(h) = t.strip_prefix("-0x") {
        return i64::from_str_radix(h, 16).ok().map(|v| -v);
    }
    t.parse::<i64>().ok()
}

impl FieldSource for TextFields<'_> {
    fn int(&self, name: &str) -> Option<i64> {
        match self.get(name)? {
            Val::I(v) => Some(v),
            Val::S(s) => parse_int(first_token(s)),
        }
    }

    fn text(&self, name: &str) -> Option<Text> {
        match self.get(name)? {
            Val::S(s) => {
                let s = s.trim_ascii();
                // Names repeat and are interned; long values (syscall args, messages) rarely do.
                Some(if s.len() <= MAX_INTERNED { self.intern(s) } else { Text::from(s) })
            }
            Val::I(v) => Some(Text::from(v.to_string())),
        }
    }

    fn ptr(&self, name: &str) -> Option<u64> {
        match self.get(name)? {
            Val::I(v) => Some(v as u64),
            Val::S(s) => {
                let t = first_token(s);
                let t = t.strip_prefix("0x").unwrap_or(t);
                u64::from_str_radix(t, 16).ok()
            }
        }
    }

    fn fields(&self) -> Vec<Field> {
        self.kv[..self.n]
            .iter()
            .map(|(k, v)| Field {
                name: self.intern(k),
                value: match v {
                    Val::I(i) => FieldValue::Int(*i),
                    Val::S(s) => {
                        let s = s.trim_ascii();
                        match s.parse::<i64>() {
                            Ok(i) => FieldValue::Int(i),
                            Err(_) => FieldValue::Str(self.intern(s)),
                        }
                    }
                },
            })
            .collect()
    }

    fn intern(&self, s: &str) -> Text {
        self.interner.borrow_mut().intern(s)
    }
}

/// Fill `f` from the body of event `name`, using the event's own print format where it is not `key=value`.
pub fn parse_body<'a>(name: &str, body: &'a str, f: &mut TextFields<'a>) {
    let ok = match name {
        "sched_switch" if !body.contains("prev_pid=") => sched_switch_plugin(body, f),
        "sched_wakeup" | "sched_waking" | "sched_wakeup_new" if !body.contains("pid=") => sched_wakeup_plugin(body, f),
        "sys_enter" if body.starts_with("NR ") => sys_enter(body, f),
        "sys_exit" if body.starts_with("NR ") => sys_exit(body, f),
        "workqueue_execute_start" | "workqueue_execute_end" if body.starts_with("work struct ") => workqueue(body, f),
        "nmi_handler" if body.contains("delta_ns:") => nmi(body, f),
        "contention_begin" | "contention_end" if !body.contains("lock_addr=") => contention(body, f),
        "timerlat_sample" => timerlat(body, f),
        "thread_noise" | "irq_noise" | "softirq_noise" | "nmi_noise" | "sample_threshold" => noise(name, body, f),
        "print" | "tracing_mark_write" | "bprint" | "bputs" | "tracing_mark" => {
            f.push("buf", Val::S(body.trim_ascii_end()));
            true
        }
        _ => false,
    };
    if !ok {
        f.parse_kv(body);
    }
}

/// trace-cmd's sched plugin: `swapper/0:0 [120] R ==> trace-cmd:89135 [120] [Latency: 94.6 usecs]`.
fn sched_switch_plugin<'a>(body: &'a str, f: &mut TextFields<'a>) -> bool {
    let Some((prev, next)) = body.split_once(" ==> ") else { return false };
    let Some((pc, pp, pprio, rest)) = comm_pid_prio(prev) else { return false };
    let Some((nc, np, nprio, _)) = comm_pid_prio(next) else { return false };
    f.push("prev_comm", Val::S(pc));
    f.push("prev_pid", Val::S(pp));
    f.push("prev_prio", Val::S(pprio));
    f.push("prev_state", Val::S(rest.trim_ascii()));
    f.push("next_comm", Val::S(nc));
    f.push("next_pid", Val::S(np));
    f.push("next_prio", Val::S(nprio));
    true
}

/// trace-cmd's sched plugin: `sleep:89142 [120] [success=1] CPU:001`.
fn sched_wakeup_plugin<'a>(body: &'a str, f: &mut TextFields<'a>) -> bool {
    let Some((c, p, prio, rest)) = comm_pid_prio(body) else { return false };
    f.push("comm", Val::S(c));
    f.push("pid", Val::S(p));
    f.push("prio", Val::S(prio));
    if let Some(cpu) = rest.split_once("CPU:").map(|(_, c)| c) {
        f.push("target_cpu", Val::S(cpu));
    }
    true
}

/// `comm:pid [prio] rest` (comm may itself contain `:`).
fn comm_pid_prio(s: &str) -> Option<(&str, &str, &str, &str)> {
    let s = s.trim_ascii_start();
    let open = s.find(" [")?;
    let close = open + s[open..].find(']')?;
    let (comm, pid) = s[..open].rsplit_once(':')?;
    Some((comm, pid, &s[open + 2..close], &s[close + 1..]))
}

/// `NR 0 (3, 7ffd, 40, 0, 0, 0)`.
fn sys_enter<'a>(body: &'a str, f: &mut TextFields<'a>) -> bool {
    let rest = &body[3..];
    let (nr, args) = rest.split_once(' ').unwrap_or((rest, ""));
    f.push("id", Val::S(nr));
    let args = args.trim_ascii();
    f.push("args", Val::S(args.strip_prefix('(').and_then(|a| a.strip_suffix(')')).unwrap_or(args)));
    true
}

/// `NR 230 = 0`.
fn sys_exit<'a>(body: &'a str, f: &mut TextFields<'a>) -> bool {
    let rest = &body[3..];
    let Some(eq) = memchr::memchr(b'=', rest.as_bytes()) else { return false };
    let (nr, ret) = (rest[..eq].trim_ascii_end(), rest[eq + 1..].trim_ascii_start());
    f.push("id", Val::S(nr));
    f.push("ret", Val::S(ret));
    true
}

/// `work struct 00000000abcd: function foo` (end: also just `work struct 00000000abcd`).
fn workqueue<'a>(body: &'a str, f: &mut TextFields<'a>) -> bool {
    let rest = &body["work struct ".len()..];
    let (work, func) = match rest.split_once(": function ") {
        Some((w, func)) => (w, Some(func)),
        None => (rest.trim_end_matches(':'), None),
    };
    f.push("work", Val::S(work.trim_ascii()));
    if let Some(func) = func {
        f.push("function", Val::S(func.trim_ascii()));
    }
    true
}

/// `perf_event_nmi_handler() delta_ns: 1234 handled: 1`.
fn nmi<'a>(body: &'a str, f: &mut TextFields<'a>) -> bool {
    let (handler, rest) = body.split_once(' ').unwrap_or((body, ""));
    f.push("handler", Val::S(handler.trim_end_matches("()")));
    let mut it = rest.split_whitespace();
    while let (Some(k), Some(v)) = (it.next(), it.next()) {
        match k {
            "delta_ns:" => f.push("delta_ns", Val::S(v)),
            "handled:" => f.push("handled", Val::S(v)),
            _ => {}
        }
    }
    true
}

/// `00000000cf07f6fd (flags=SPIN|WRITE)` or `00000000cf07f6fd (ret=0)`: the lock's (hashed) address, and
/// the flags by name (`flags_names`) or the result.
fn contention<'a>(body: &'a str, f: &mut TextFields<'a>) -> bool {
    let Some((addr, rest)) = body.split_once(' ') else { return false };
    let Some(inner) = rest.trim().strip_prefix('(').and_then(|r| r.strip_suffix(')')) else { return false };
    f.push("lock_addr", Val::S(addr));
    match inner.split_once('=') {
        Some(("flags", v)) => f.push("flags_names", Val::S(v)),
        Some(("ret", v)) => f.push("ret", Val::S(v)),
        _ => return false,
    }
    true
}

/// `#402268 context    irq timer_latency     13585 ns` (the timerlat tracer and the event print alike).
pub fn timerlat<'a>(body: &'a str, f: &mut TextFields<'a>) -> bool {
    let mut it = body.split_whitespace();
    let Some(seq) = it.next().and_then(|s| s.strip_prefix('#')) else { return false };
    f.push("seqnum", Val::S(seq));
    while let Some(k) = it.next() {
        match (k, it.next()) {
            ("context", Some(v)) => f.push("context", Val::S(v)),
            ("timer_latency", Some(v)) => f.push("timer_latency", Val::S(v)),
            _ => {}
        }
    }
    true
}

/// osnoise events: `local_timer:236 start 5789.857529929 duration 1845 ns`, `cc1:87882 start …`,
/// `start 5789.858404555 duration 8812 ns interferences 2`.
fn noise<'a>(name: &str, body: &'a str, f: &mut TextFields<'a>) -> bool {
    let body = body.trim_ascii();
    let (label, rest) = match body.find(" start ") {
        Some(i) => (body[..i].trim_ascii(), &body[i + 1..]),
        None => ("", body),
    };
    if !label.is_empty() {
        let (desc, num) = label.rsplit_once(':').unwrap_or((label, ""));
        match name {
            "thread_noise" => {
                f.push("comm", Val::S(desc.trim_ascii()));
                f.push("pid", Val::S(num));
            }
            "irq_noise" => {
                f.push("desc", Val::S(desc.trim_ascii()));
                f.push("vector", Val::S(num));
            }
            _ => f.push("vector", Val::S(num)),
        }
    }
    // Keys and values: `start S duration D ns interference N` (the unit word stands alone; a duration
    // without it is a line cut short, its number maybe too).
    let words: Vec<&str> = rest.split_whitespace().collect();
    for (i, (k, v)) in words.iter().zip(words.iter().skip(1)).enumerate() {
        match *k {
            "start" => match parse_secs(v.as_bytes()) {
                Some(ns) => f.push("start", Val::I(ns.0 as i64)),
                None => f.push("start", Val::S(v)),
            },
            "duration" if words.get(i + 2) == Some(&"ns") => f.push("duration", Val::S(v)),
            "interferences" | "interference" => f.push("interference", Val::S(v)),
            _ => {}
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::typed::build;
    use latscope_model::event::{OsnoiseKind, TimerlatContext};
    use latscope_model::{EventKind, Nanos};

    fn kind(name: &str, body: &str) -> EventKind {
        let i = RefCell::new(Interner::default());
        let mut f = TextFields::new(&i);
        parse_body(name, body, &mut f);
        build(None, name, &f)
    }

    #[test]
    fn key_value_bodies() {
        let k = kind(
            "sched_switch",
            "prev_comm=swapper/5 prev_pid=0 prev_prio=120   prev_state=R+ ==> next_comm=snapshot test next_pid=2242 next_prio=120",
        );
        let EventKind::SchedSwitch { prev_state, next_comm, next_pid, .. } = k else { panic!("{k:?}") };
        assert_eq!((&*prev_state, &*next_comm, next_pid), ("R+", "snapshot test", 2242));
        assert_eq!(
            kind("softirq_raise", "vec=1 [action=TIMER]"),
            EventKind::SoftirqRaise { vec: 1, name: "TIMER".into() }
        );
        assert_eq!(
            kind("irq_handler_exit", "irq=21 ret=unhandled"),
            EventKind::IrqHandlerExit { irq: 21, handled: false }
        );
        let k = kind("preempt_enable", "caller=_raw_spin_unlock_irqrestore+0x2a/0x70 parent=          (null)");
        let EventKind::Preemptirq { parent, .. } = k else { panic!() };
        assert_eq!(&*parent, "(null)");
        let k = kind(
            "hrtimer_start",
            "hrtimer=000000002ad8bc6a function=hrtimer_wakeup expires=6389900935569 softexpires=6389900935569 mode=ABS",
        );
        let EventKind::HrtimerStart { hrtimer, expires, .. } = k else { panic!() };
        assert_eq!((hrtimer, expires), (0x2ad8bc6a, Nanos(6389900935569)));
        let k = kind("workqueue_activate_work", "work struct 80d188a0");
        let EventKind::Other { fields, .. } = k else { panic!() };
        assert_eq!(&*fields[0].name, "text");
    }

    #[test]
    fn special_print_formats() {
        let k =
            kind("sched_switch", "kworker/u36:1:51219 [120] R ==> kworker/u33:2:49692 [120] Latency: 4024.977 usecs");
        let EventKind::SchedSwitch { prev_comm, prev_pid, prev_state, next_comm, next_prio, .. } = k else { panic!() };
        assert_eq!(
            (&*prev_comm, prev_pid, &*prev_state, &*next_comm, next_prio),
            ("kworker/u36:1", 51219, "R", "kworker/u33:2", 120)
        );
        let k = kind("sched_wakeup", "sleep:89142 [120] CPU:001");
        let EventKind::SchedWakeup { pid, target_cpu, .. } = k else { panic!() };
        assert_eq!((pid, target_cpu.map(|c| c.0)), (89142, Some(1)));
        assert_eq!(
            kind("sys_enter", "NR 0 (3, 7ffd, 40, 0, 0, 0)"),
            EventKind::SysEnter { nr: Some(0), name: None, args: "3, 7ffd, 40, 0, 0, 0".into() }
        );
        assert_eq!(kind("sys_exit", "NR 230 = -4"), EventKind::SysExit { nr: Some(230), name: None, ret: -4 });
        assert_eq!(
            kind("workqueue_execute_start", "work struct 00000000abcd: function vmstat_update"),
            EventKind::WorkqueueStart { work: 0xabcd, function: "vmstat_update".into() }
        );
        assert_eq!(
            kind("nmi_handler", "perf_event_nmi_handler() delta_ns: 1234 handled: 1"),
            EventKind::NmiHandler { handler: "perf_event_nmi_handler".into(), delta: Nanos(1234), handled: 1 }
        );
        assert_eq!(
            kind("timerlat_sample", "#402268 context thread timer_latency     39960 ns"),
            EventKind::Timerlat { context: TimerlatContext::Thread, seqnum: 402268, latency: Nanos(39960) }
        );
        assert_eq!(
            kind("irq_noise", "local_timer:236 start 5789.857529929 duration 1845 ns"),
            EventKind::Osnoise {
                kind: OsnoiseKind::Irq,
                name: "local_timer".into(),
                number: Some(236),
                start: Nanos(5_789_857_529_929),
                duration: Nanos(1845)
            }
        );
        let k = kind("thread_noise", "     cc1:87882 start 548.771078243 duration 9909 ns");
        assert!(
            matches!(k, EventKind::Osnoise { kind: OsnoiseKind::Thread, ref name, number: Some(87882), .. } if &**name == "cc1")
        );
        let k = kind("sample_threshold", "start 5789.858404555 duration 8812 ns interferences 2");
        let threshold = |n| EventKind::Osnoise {
            kind: OsnoiseKind::SampleThreshold,
            name: "".into(),
            number: Some(n),
            start: Nanos(5_789_858_404_555),
            duration: Nanos(8812),
        };
        assert_eq!(k, threshold(2));
        // 6.1 prints the count as `interference N`.
        assert_eq!(kind("sample_threshold", "start 5789.858404555 duration 8812 ns interference 3"), threshold(3));
        assert_eq!(
            kind("tracing_mark_write", "B|13580|draw "),
            EventKind::Print { ip: None, text: "B|13580|draw".into() }
        );
        // The kernel's own text (6.18, hashed %p) and trace-cmd report's (0x, the raw address).
        assert_eq!(
            kind("contention_begin", "00000000cf07f6fd (flags=SPIN)"),
            EventKind::LockContentionBegin { lock: 0xcf07f6fd, flags: 1 }
        );
        assert_eq!(
            kind("contention_begin", "0xffff8882aa00a950 (flags=WRITE)"),
            EventKind::LockContentionBegin { lock: 0xffff_8882_aa00_a950, flags: 4 }
        );
        assert_eq!(
            kind("contention_end", "00000000cf07f6fd (ret=0)"),
            EventKind::LockContentionEnd { lock: 0xcf07f6fd, ret: 0 }
        );
        assert_eq!(
            kind("contention_begin", "00000000cf07f6fd (flags=SPIN|MUTEX|RT)"),
            EventKind::LockContentionBegin { lock: 0xcf07f6fd, flags: 0b101001 }
        );
    }
}
