//! What follows an event line's timestamp ➜ an [`EventKind`]: `name: fields` events, function tracer
//! calls (`func <-parent`, 2.6.26's `func (parent)`), per-syscall events (`sys_read(fd: 3, …)`,
//! `sys_read -> 0x40`), the wakeup tracers' records, tracer samples (`#12 context irq …`,
//! hwlat's `#1 inner/outer(us): 11/12 …`, the osnoise tracer's summary) and `<stack trace>` markers.

use super::fields::{parse_body, parse_int, timerlat, TextFields, Val};
use super::graph::{parse_graph_body, GraphBody};
use super::latency::switch_record;
use crate::typed::{build, FieldSource, Interner};
use latscope_model::event::{OsnoiseCounts, WakeupKind};
use latscope_model::{CpuId, EventKind, Nanos, SyscallArgs, TaskName};
use std::cell::RefCell;

/// The meaning of an event body.
#[derive(Debug, PartialEq)]
pub enum Body<'a> {
    /// A complete event.
    Kind(EventKind),
    /// `<stack trace>` / `<user stack trace>` / trace-cmd `kernel_stack:`: frames follow on ` => ` lines.
    StackStart,
    /// trace-cmd `funcgraph_entry:`/`funcgraph_exit:`: a graph call with its duration.
    Graph(Option<Nanos>, GraphBody<'a>),
}

/// Classify an event body. `tracer` is the `# tracer:` name, `comm` the current task's name (it names the
/// switching-out task of wakeup-tracer records). `None` when the body is empty.
pub fn classify<'a>(body: &'a str, tracer: &str, comm: &str, interner: &RefCell<Interner>) -> Option<Body<'a>> {
    let body = body.trim_ascii_end();
    let t = body.trim_ascii_start();
    if t.is_empty() {
        return None;
    }
    if t.starts_with("<stack trace") || t.starts_with("<user stack trace") {
        return Some(Body::StackStart);
    }
    let first_end = t.bytes().position(|b| b == b' ' || b == b'\t').unwrap_or(t.len());
    let first = &t[..first_end];
    // The wakeup tracers' records start with a pid and a colon (`17: 98:I ==> [000] 15: 98:R ktimers/0`,
    // priorities under 100 padded with a space): a context switch, not a printk `ip: text`.
    let pid_record =
        first.strip_suffix(':').is_some_and(|p| p.bytes().all(|b| b.is_ascii_digit())) && switch_record(t).is_some();
    if let Some(name) = first.strip_suffix(':').filter(|_| !pid_record) {
        let rest = t[first_end..].trim_ascii_start();
        if is_ident(name) {
            return Some(named(name, rest, interner));
        }
        if looks_like_ip(name) {
            // trace_printk / bputs: `func+0x28/0x6c: text`, old atrace `0: C|360|…`.
            let ip = Some(interner.borrow_mut().intern(name));
            return Some(Body::Kind(EventKind::Print { ip, text: interner.borrow_mut().intern(rest) }));
        }
    }
    if t.starts_with('#') {
        if let Some(k) = tracer_sample(t, tracer, interner) {
            return Some(Body::Kind(k));
        }
    }
    if let Some(k) = syscall(t, interner) {
        return Some(Body::Kind(k));
    }
    if let Some((func, parent)) = t.split_once(" <-") {
        let i = &mut *interner.borrow_mut();
        return Some(Body::Kind(EventKind::Function {
            func: i.intern(func.trim_ascii()),
            parent: Some(i.intern(parent.trim_ascii())),
        }));
    }
    if let Some(r) = switch_record(t) {
        let i = &mut *interner.borrow_mut();
        let comm_next = r.comm.map(TaskName::new).unwrap_or_default();
        return Some(Body::Kind(if r.switch {
            EventKind::SchedSwitch {
                prev_comm: TaskName::new(comm),
                prev_pid: r.cur.0,
                prev_prio: r.cur.1,
                prev_state: i.intern(r.cur.2),
                next_comm: comm_next,
                next_pid: r.next.0,
                next_prio: r.next.1,
            }
        } else {
            EventKind::SchedWakeup {
                kind: WakeupKind::Wakeup,
                comm: comm_next,
                pid: r.next.0,
                prio: r.next.1,
                target_cpu: r.cpu.map(CpuId),
            }
        }));
    }
    if tracer == "osnoise" && t.as_bytes()[0].is_ascii_digit() {
        return Some(Body::Kind(osnoise_summary(t, interner)));
    }
    // 2.6.26 latency output: `func (parent)`.
    if let Some((func, parent)) = t.split_once(" (") {
        if let Some(parent) = parent.strip_suffix(')') {
            if is_symbol(func) && is_symbol(parent) {
                let i = &mut *interner.borrow_mut();
                return Some(Body::Kind(EventKind::Function { func: i.intern(func), parent: Some(i.intern(parent)) }));
            }
        }
    }
    if is_unresolved_ip(t) {
        // A function record whose address did not resolve: the kernel prints `0` (the wakeup tracers'
        // caller of the caller on arches without frame pointers) or the bare hex address.
        return Some(Body::Kind(EventKind::Function { func: interner.borrow_mut().intern(t), parent: None }));
    }
    if is_symbol(t) && !t.as_bytes()[0].is_ascii_digit() {
        // A function tracer line without the parent (`function:` 5-column trace-cmd, print-parent off).
        return Some(Body::Kind(EventKind::Function { func: interner.borrow_mut().intern(t), parent: None }));
    }
    Some(Body::Kind(EventKind::Print { ip: None, text: interner.borrow_mut().intern(t) }))
}

/// `0` or `0x` and hex digits: how `seq_print_ip_sym` prints an address without a symbol.
fn is_unresolved_ip(t: &str) -> bool {
    t == "0" || t.strip_prefix("0x").is_some_and(|h| !h.is_empty() && h.bytes().all(|c| c.is_ascii_hexdigit()))
}

fn named<'a>(name: &str, rest: &'a str, interner: &RefCell<Interner>) -> Body<'a> {
    match name {
        "funcgraph_entry" | "funcgraph_exit" => {
            if let Some((d, g)) = parse_graph_body(rest) {
                return Body::Graph(d, g);
            }
        }
        "function" => {
            let (func, parent) = match rest.split_once(" <-") {
                Some((f, p)) => (f.trim_ascii(), Some(p.trim_ascii())),
                None => (rest.trim_ascii(), None),
            };
            if is_symbol(func) {
                let i = &mut *interner.borrow_mut();
                return Body::Kind(EventKind::Function { func: i.intern(func), parent: parent.map(|p| i.intern(p)) });
            }
        }
        "kernel_stack" | "user_stack" if rest.starts_with("<stack trace") || rest.is_empty() => {
            return Body::StackStart;
        }
        _ => {}
    }
    let mut f = TextFields::new(interner);
    parse_body(name, rest, &mut f);
    Body::Kind(build(None, name, &f))
}

/// `sys_clock_nanosleep(which_clock: 1, flags: 1, …)` and `sys_clock_nanosleep -> 0x0`.
fn syscall(t: &str, interner: &RefCell<Interner>) -> Option<EventKind> {
    let rest = t.strip_prefix("sys_")?;
    if let Some((call, ret)) = rest.split_once(" -> ") {
        if is_ident(call) {
            let ret = parse_int(ret.split_whitespace().next()?)?;
            return Some(EventKind::SysExit { nr: None, name: Some(interner.borrow_mut().intern(call)), ret });
        }
    }
    let open = rest.find('(')?;
    let call = &rest[..open];
    let close = rest.rfind(')')?;
    if !is_ident(call) || close < open {
        return None;
    }
    let i = &mut *interner.borrow_mut();
    Some(EventKind::SysEnter { nr: None, name: Some(i.intern(call)), args: SyscallArgs::from(&rest[open + 1..close]) })
}

/// Tracer sample lines that start with `#N`: timerlat, hwlat.
fn tracer_sample(t: &str, tracer: &str, interner: &RefCell<Interner>) -> Option<EventKind> {
    if t.contains(" context ") && t.contains("timer_latency") {
        let mut f = TextFields::new(interner);
        timerlat(t, &mut f);
        return Some(build(None, "timerlat_sample", &f));
    }
    if tracer == "hwlat" || t.contains("inner/outer(us):") {
        // `#1     inner/outer(us):   11/12    ts:1581527483.343962693 count:6 [nmi-total:7 nmi-count:1]`,
        // read under the names of the raw record's fields (`ftrace:hwlat`).
        let mut f = TextFields::new(interner);
        let mut it = t.split_whitespace();
        f.push("seqnum", Val::S(it.next()?.trim_start_matches('#')));
        while let Some(tok) = it.next() {
            if tok == "inner/outer(us):" {
                let (a, b) = it.next()?.split_once('/')?;
                f.push("duration", Val::S(a));
                f.push("outer_duration", Val::S(b));
            } else if let Some((k, v)) = tok.split_once(':') {
                let k = match k {
                    "nmi-total" => "nmi_total_ts",
                    "nmi-count" => "nmi_count",
                    k => k,
                };
                f.push(k, Val::S(v));
            }
        }
        return Some(build(None, "hwlat_sample", &f));
    }
    None
}

/// The osnoise tracer's per-period line: `RUNTIME NOISE %AVAILABLE MAX-SINGLE HW NMI IRQ SIRQ THREAD`, times
/// in microseconds; a line with fewer or other columns stays an `osnoise_sample` with its fields.
fn osnoise_summary(t: &str, interner: &RefCell<Interner>) -> EventKind {
    const NAMES: [&str; 9] =
        ["runtime_us", "noise_us", "cpu_available", "max_single_noise_us", "hw", "nmi", "irq", "softirq", "thread"];
    let cols: Vec<&str> = t.split_whitespace().collect();
    let us = |i: usize| cols.get(i).and_then(|v| v.parse::<u64>().ok()).map(Nanos::from_us);
    let n = |i: usize| cols.get(i).and_then(|v| v.parse::<u32>().ok());
    if let (9, Some(runtime), Some(noise), Some(max_single)) = (cols.len(), us(0), us(1), us(3)) {
        if let (Some(hw), Some(nmi), Some(irq), Some(softirq), Some(thread)) = (n(4), n(5), n(6), n(7), n(8)) {
            let counts = OsnoiseCounts { hw, nmi, irq, softirq, thread };
            return EventKind::OsnoiseSample { runtime, noise, max_single, counts };
        }
    }
    let mut f = TextFields::new(interner);
    for (name, v) in NAMES.iter().zip(cols) {
        f.push(name, Val::S(v));
    }
    EventKind::Other { system: None, name: f.intern("osnoise_sample"), fields: f.fields() }
}

fn is_ident(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && (b[0].is_ascii_alphabetic() || b[0] == b'_')
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
}

/// A kernel symbol as printed: `name`, `name.isra.0`, `name+0x14/0x6c`, `0xffffffff81000000`.
fn is_symbol(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'+' | b'/' | b'$'))
}

fn looks_like_ip(s: &str) -> bool {
    (s.contains("+0x") && is_symbol(s)) || s.bytes().all(|c| c.is_ascii_hexdigit()) || s.starts_with("0x")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(body: &str) -> Body<'_> {
        let i = RefCell::new(Interner::default());
        classify(body, "nop", "sleep", &i).expect(body)
    }

    #[test]
    fn kinds_of_bodies() {
        assert_eq!(
            c("console_trylock_spinning <-vprintk_emit"),
            Body::Kind(EventKind::Function {
                func: "console_trylock_spinning".into(),
                parent: Some("vprintk_emit".into())
            })
        );
        assert_eq!(
            c("get_page_from_freelist (__alloc_pages_internal)"),
            Body::Kind(EventKind::Function {
                func: "get_page_from_freelist".into(),
                parent: Some("__alloc_pages_internal".into())
            })
        );
        assert_eq!(c("<stack trace>"), Body::StackStart);
        assert_eq!(c("kernel_stack:         <stack trace >"), Body::StackStart);
        assert!(matches!(
            c("sys_clock_nanosleep(which_clock: 1, flags: 1)"),
            Body::Kind(EventKind::SysEnter { name: Some(_), .. })
        ));
        assert_eq!(
            c("sys_clock_nanosleep -> 0x0"),
            Body::Kind(EventKind::SysExit { nr: None, name: Some("clock_nanosleep".into()), ret: 0 })
        );
        assert!(matches!(
            c("function:             mutex_unlock"),
            Body::Kind(EventKind::Function { parent: None, .. })
        ));
        assert!(matches!(
            c("rpi_get_interrupt_info+0x28/0x6c: [cat] 17: x"),
            Body::Kind(EventKind::Print { ip: Some(_), .. })
        ));
        assert!(matches!(c("0: C|360|x|1"), Body::Kind(EventKind::Print { ip: Some(_), .. })));
        // wakeup_rt on 6.1-rt: a pid first, priorities under 100 padded: rcu_preempt gives the CPU to ktimers/0.
        assert!(matches!(
            c("17: 98:I ==> [000]    15: 98:R ktimers/0"),
            Body::Kind(EventKind::SchedSwitch { prev_pid: 17, prev_prio: 98, next_pid: 15, next_prio: 98, .. })
        ));
        assert!(matches!(
            c("0:120:R   + [000]    15: 98:R ktimers/0"),
            Body::Kind(EventKind::SchedWakeup { pid: 15, prio: 98, .. })
        ));
        assert!(matches!(
            c("#1     context    irq timer_latency       932 ns"),
            Body::Kind(EventKind::Timerlat { .. })
        ));
        assert_eq!(
            c("#10    inner/outer(us):    9/11    ts:1581527668.970010500 count:1 nmi-total:7 nmi-count:1"),
            Body::Kind(EventKind::Hwlat {
                seqnum: 10,
                count: 1,
                nmi_count: 1,
                inner: Nanos::from_us(9),
                outer: Nanos::from_us(11),
                nmi_total: Some(Nanos::from_us(7)),
                wall: Some(Nanos(1_581_527_668_970_010_500)),
            })
        );
        // Without NMIs the kernel prints neither NMI field.
        assert!(matches!(
            c("#2     inner/outer(us):   16/9     ts:1581527494.889008092 count:1"),
            Body::Kind(EventKind::Hwlat { seqnum: 2, nmi_count: 0, nmi_total: None, .. })
        ));
        let Body::Kind(EventKind::SchedWakeup { pid, comm, target_cpu, .. }) =
            c("     0:120:R   + [002]  5882: 94:R sleep")
        else {
            panic!()
        };
        assert_eq!((pid, &*comm, target_cpu), (5882, "sleep", Some(CpuId(2))));
        assert!(matches!(c("funcgraph_exit:       + 21.469 us  |  }"), Body::Graph(Some(_), GraphBody::Exit { .. })));
        // The wakeup tracers' function record at address 0 (no frame pointers) and an address without a symbol.
        assert!(matches!(c("0"), Body::Kind(EventKind::Function { func, parent: None }) if &*func == "0"));
        assert!(matches!(c("0xc0012345"), Body::Kind(EventKind::Function { func, .. }) if &*func == "0xc0012345"));
        assert!(matches!(c("0 and more"), Body::Kind(EventKind::Print { .. })));
        let i = RefCell::new(Interner::default());
        let b = classify("1000000        190  99.98100       9     18      0   1007     18      1", "osnoise", "x", &i);
        let Some(Body::Kind(EventKind::OsnoiseSample { runtime, noise, max_single, counts })) = b else {
            panic!("{b:?}")
        };
        assert_eq!((runtime, noise, max_single), (Nanos::from_secs(1), Nanos::from_us(190), Nanos::from_us(9)));
        assert_eq!(counts, OsnoiseCounts { hw: 18, nmi: 0, irq: 1007, softirq: 18, thread: 1 });
        // Columns that are not the nine numbers stay fields.
        let b = classify("1000000        190  99.98100       9     18      0   1007", "osnoise", "x", &i);
        assert!(matches!(b, Some(Body::Kind(EventKind::Other { ref fields, .. })) if fields.len() == 7));
    }
}
