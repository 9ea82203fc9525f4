//! One decoded [`Event`] as the line the kernel's ftrace (or `trace-cmd report`, for function_graph
//! records) prints for it: `COMM-PID [CPU] FLAGS SECS.NSECS: NAME: BODY`, each event's body in its own
//! print format and field order, so latscope and other ftrace text readers read it back.
//!
//! What the event does not carry is not printed (no invented pid, vector or option); timestamps keep all
//! nine digits of the nanoseconds.

use latscope_model::event::{OsnoiseKind, TimerlatContext, SOFTIRQ_NAMES};
use latscope_model::{Event, EventKind, FieldValue, Flags, Nanos, SyscallArgs};
use std::fmt::Write as _;
use std::io::{self, Write};

/// Writes `e` as ftrace text: one line, or for a stack trace the `<stack trace>` line and its ` => ` frames.
pub fn write_ftrace<W: Write>(mut out: W, e: &Event) -> io::Result<()> {
    if let EventKind::Lost { count } = &e.kind {
        return match count {
            Some(n) => writeln!(out, "CPU:{} [LOST {n} EVENTS]", e.cpu.0),
            None => writeln!(out, "CPU:{} [LOST EVENTS]", e.cpu.0),
        };
    }
    if e.pid < 0 {
        if let Some(call) = graph_call(&e.kind) {
            // function_graph output names no task: its own layout (`funcgraph-abstime` when the time is known).
            if e.ts > Nanos::ZERO {
                write!(out, "{:>5}.{:09} | ", e.ts.0 / 1_000_000_000, e.ts.0 % 1_000_000_000)?;
            }
            return writeln!(out, "{:>2}) {call}", e.cpu.0);
        }
    }
    let comm = if e.comm.is_empty() { "<...>" } else { e.comm.as_str() };
    write!(out, "{comm:>16}-{:<7} ", e.pid)?;
    if let Some(tgid) = e.tgid {
        // record-tgid's column, so the thread group survives a re-read.
        write!(out, "({tgid:>5}) ")?;
    }
    write!(out, "[{:03}] ", e.cpu.0)?;
    if e.flags.has(Flags::KNOWN) {
        write!(out, "{} ", crate::events::format_flags(e.flags))?;
    }
    writeln!(out, "{:>5}.{:09}: {}", e.ts.0 / 1_000_000_000, e.ts.0 % 1_000_000_000, body(&e.kind))?;
    if let EventKind::Stack { frames } = &e.kind {
        for f in frames.iter() {
            writeln!(out, " => {f}")?;
        }
    }
    Ok(())
}

/// `name: fields` in the event's own print format (the function tracer prints no name).
pub fn body(k: &EventKind) -> String {
    let mut s = String::new();
    let name = k.name();
    let _ = match k {
        EventKind::IrqHandlerEntry { irq, name: n } => write!(s, "{name}: irq={irq} name={n}"),
        EventKind::IrqHandlerExit { irq, handled } => {
            write!(s, "{name}: irq={irq} ret={}", if *handled { "handled" } else { "unhandled" })
        }
        EventKind::SoftirqEntry { vec, name: n }
        | EventKind::SoftirqExit { vec, name: n }
        | EventKind::SoftirqRaise { vec, name: n } => write!(s, "{name}: vec={vec} [action={n}]"),
        EventKind::VectorEntry { vector, .. } | EventKind::VectorExit { vector, .. } => match vector {
            Some(v) => write!(s, "{name}: vector={v}"),
            None => write!(s, "{name}:"),
        },
        EventKind::HrtimerInit { hrtimer, clockid, mode } => {
            write!(s, "{name}: hrtimer={hrtimer:016x} clockid={clockid} mode={mode}")
        }
        EventKind::HrtimerStart { hrtimer, function, expires, softexpires, mode } => write!(
            s,
            "{name}: hrtimer={hrtimer:016x} function={function} expires={} softexpires={} mode={mode}",
            expires.0, softexpires.0
        ),
        EventKind::HrtimerCancel { hrtimer } | EventKind::HrtimerExpireExit { hrtimer } => {
            write!(s, "{name}: hrtimer={hrtimer:016x}")
        }
        EventKind::HrtimerExpireEntry { hrtimer, function, now } => {
            write!(s, "{name}: hrtimer={hrtimer:016x} function={function} now={}", now.0)
        }
        EventKind::Timer { timer, function, expires, now, .. } => {
            let _ = write!(s, "{name}: timer={timer:016x}");
            if let Some(f) = function {
                let _ = write!(s, " function={f}");
            }
            if let Some(x) = expires {
                let _ = write!(s, " expires={x}");
            }
            if let Some(n) = now {
                let _ = write!(s, " now={n}");
            }
            Ok(())
        }
        EventKind::SchedSwitch { prev_comm, prev_pid, prev_prio, prev_state, next_comm, next_pid, next_prio } => {
            write!(
                s,
                "{name}: prev_comm={prev_comm} prev_pid={prev_pid} prev_prio={prev_prio} prev_state={prev_state} \
                 ==> next_comm={next_comm} next_pid={next_pid} next_prio={next_prio}"
            )
        }
        EventKind::SchedWakeup { comm, pid, prio, target_cpu, .. } => {
            let _ = write!(s, "{name}: comm={comm} pid={pid} prio={prio}");
            if let Some(c) = target_cpu {
                let _ = write!(s, " target_cpu={:03}", c.0);
            }
            Ok(())
        }
        EventKind::SchedMigrate { comm, pid, prio, orig_cpu, dest_cpu } => {
            write!(s, "{name}: comm={comm} pid={pid} prio={prio} orig_cpu={} dest_cpu={}", orig_cpu.0, dest_cpu.0)
        }
        EventKind::SchedPiSetprio { comm, pid, oldprio, newprio } => {
            write!(s, "{name}: comm={comm} pid={pid} oldprio={oldprio} newprio={newprio}")
        }
        EventKind::LockContentionBegin { lock, flags } => {
            write!(s, "{name}: {lock:016x} (flags={})", latscope_model::event::lock_flags::names(*flags))
        }
        EventKind::LockContentionEnd { lock, ret } => write!(s, "{name}: {lock:016x} (ret={ret})"),
        EventKind::Preemptirq { caller, parent, .. } => write!(s, "{name}: caller={caller} parent={parent}"),
        EventKind::NmiHandler { handler, delta, handled } => {
            write!(s, "{name}: {handler}() delta_ns: {} handled: {handled}", delta.0)
        }
        EventKind::SysEnter { nr, name: call, args } => match (call, nr) {
            (Some(c), _) => write!(s, "sys_{c}({})", syscall_args(args)),
            (None, Some(nr)) => write!(s, "sys_enter: NR {nr} ({})", syscall_args(args)),
            (None, None) => write!(s, "sys_enter: args={}", syscall_args(args)),
        },
        EventKind::SysExit { nr, name: call, ret } => match (call, nr) {
            (Some(c), _) => write!(s, "sys_{c} -> {:#x}", *ret as u64),
            (None, Some(nr)) => write!(s, "sys_exit: NR {nr} = {ret}"),
            (None, None) => write!(s, "sys_exit: ret={ret}"),
        },
        EventKind::Print { ip: Some(ip), text } => write!(s, "{ip}: {text}"),
        EventKind::Print { ip: None, text } => write!(s, "tracing_mark_write: {text}"),
        EventKind::Timerlat { context, seqnum, latency } => {
            let c = match context {
                TimerlatContext::Irq => "irq",
                TimerlatContext::Thread => "thread",
                TimerlatContext::User => "user-ret",
            };
            write!(s, "{name}: #{seqnum:<5} context {c:>6} timer_latency {:>9} ns", latency.0)
        }
        EventKind::Hwlat { .. } => hwlat_line(&mut s, k),
        EventKind::Osnoise { kind, name: n, number, start, duration } => {
            let _ = write!(s, "{name}: ");
            let num = number.map_or_else(String::new, |v| format!(":{v}"));
            let _ = match kind {
                OsnoiseKind::Softirq => match (number, SOFTIRQ_NAMES.iter().position(|x| *x == &**n)) {
                    (None, Some(v)) => write!(s, "{n:>8}:{v} "),
                    _ => write!(s, "{n:>8}{num} "),
                },
                OsnoiseKind::Thread | OsnoiseKind::Irq => write!(s, "{n:>8}{num} "),
                OsnoiseKind::Nmi | OsnoiseKind::SampleThreshold => Ok(()),
            };
            let _ = write!(s, "start {} duration {} ns", secs(*start), duration.0);
            match (kind, number) {
                (OsnoiseKind::SampleThreshold, Some(v)) => write!(s, " interference {v}"),
                _ => Ok(()),
            }
        }
        // The tracer's own columns, as `cat trace` shows them under `# tracer: osnoise`.
        EventKind::OsnoiseSample { runtime, noise, max_single, counts: c } => {
            let avail = if runtime.0 > 0 { 100.0 * (1.0 - noise.0 as f64 / runtime.0 as f64) } else { 0.0 };
            write!(
                s,
                "{:>12} {:>10} {:>9.5} {:>10} {:>6} {:>6} {:>6} {:>6} {:>6}",
                runtime.0 / 1_000,
                noise.0 / 1_000,
                avail,
                max_single.0 / 1_000,
                c.hw,
                c.nmi,
                c.irq,
                c.softirq,
                c.thread
            )
        }
        EventKind::WorkqueueStart { work, function } => {
            write!(s, "{name}: work struct {work:016x}: function {function}")
        }
        EventKind::WorkqueueEnd { work, function } => match function {
            Some(f) => write!(s, "{name}: work struct {work:016x}: function {f}"),
            None => write!(s, "{name}: work struct {work:016x}"),
        },
        EventKind::Function { func, parent } => match parent {
            Some(p) => write!(s, "{func} <-{p}"),
            None => write!(s, "{func}"),
        },
        EventKind::GraphEntry { .. } | EventKind::GraphLeaf { .. } => {
            write!(s, "funcgraph_entry: {}", graph_call(k).unwrap_or_default())
        }
        EventKind::GraphExit { .. } => write!(s, "funcgraph_exit: {}", graph_call(k).unwrap_or_default()),
        EventKind::Stack { .. } => write!(s, "<stack trace>"),
        EventKind::Lost { .. } => Ok(()),
        EventKind::Other { name: n, fields, .. } => {
            let _ = write!(s, "{n}:");
            for (i, f) in fields.iter().enumerate() {
                let _ = match (&f.value, i == 0 && &*f.name == "text") {
                    // Text before the first `key=` (printed without a key).
                    (FieldValue::Str(v), true) => write!(s, " {v}"),
                    (FieldValue::Int(v), true) => write!(s, " {v}"),
                    (FieldValue::Int(v), false) => write!(s, " {}={v}", f.name),
                    (FieldValue::Str(v), false) => write!(s, " {}={v}", f.name),
                };
            }
            Ok(())
        }
    };
    s
}

/// A function_graph record's duration and call columns (`  1.234 us   |    func();`).
fn graph_call(k: &EventKind) -> Option<String> {
    Some(match k {
        EventKind::GraphEntry { depth, func } => format!("{}|  {}{func}() {{", duration_col(None), indent(*depth)),
        EventKind::GraphLeaf { depth, func, duration } => {
            format!("{}|  {}{func}();", duration_col(*duration), indent(*depth))
        }
        EventKind::GraphExit { depth, func, duration } => {
            let tail = func.as_ref().map(|f| format!(" /* {f} */")).unwrap_or_default();
            format!("{}|  {}}}{tail}", duration_col(*duration), indent(*depth))
        }
        _ => return None,
    })
}

fn syscall_args(a: &SyscallArgs) -> String {
    a.to_string()
}

fn secs(t: Nanos) -> String {
    format!("{}.{:09}", t.0 / 1_000_000_000, t.0 % 1_000_000_000)
}

fn indent(depth: u32) -> String {
    " ".repeat(2 * depth.min(256) as usize)
}

/// trace-cmd's duration column: `  1.234 us   ` or blanks.
fn duration_col(d: Option<Nanos>) -> String {
    match d {
        Some(d) => format!("{:>10}.{:03} us   ", d.0 / 1000, d.0 % 1000),
        None => format!("{:>18}", ""),
    }
}

/// The hwlat tracer's line as the kernel writes it (`trace_hwlat_print`), in microseconds.
fn hwlat_line(s: &mut String, k: &EventKind) -> std::fmt::Result {
    let EventKind::Hwlat { seqnum, count, nmi_count, inner, outer, nmi_total, wall } = k else { return Ok(()) };
    write!(s, "#{seqnum:<5} inner/outer(us): {:>4}/{:<5}", inner.0 / 1_000, outer.0 / 1_000)?;
    if let Some(w) = wall {
        write!(s, " ts:{}.{:09}", w.0 / 1_000_000_000, w.0 % 1_000_000_000)?;
    }
    write!(s, " count:{count}")?;
    if let Some(t) = nmi_total {
        write!(s, " nmi-total:{}", t.0 / 1_000)?;
    }
    if *nmi_count > 0 {
        write!(s, " nmi-count:{nmi_count}")?;
    }
    Ok(())
}
