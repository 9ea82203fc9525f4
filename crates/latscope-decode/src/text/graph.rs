//! function_graph lines in every `funcgraph-*` option layout ➜ entry / exit / leaf.
//!
//! ```text
//!  0)               |  sys_open() {                                   (default: cpu, duration)
//!  0)   1.382 us    |          __might_sleep();
//!  3) # 1837.709 us |          } /* __switch_to */                    (overhead marker, funcgraph-tail)
//! 360.774522 |   1)   0.541 us    |    }                              (funcgraph-abstime)
//! 0)    sh-4802     |               |   d_free() {                   (funcgraph-proc)
//!         0 us |   0)   bash-1507    |  d... |   0.000 us    |  f();  (latency display-graph: REL TIME, flags)
//!  1)   getname() {                                                   (perf ftrace -D: no duration column)
//! 1)   0.651 us    |      cgroup_migrate_add_task(); /* = 0xffff93fcfd346c00 */   (funcgraph-retval)
//! ```
//! trace-cmd report's `funcgraph_entry:  4.097 us   |    _cond_resched();` bodies use [`parse_graph_body`].

use super::flags::{parse_flags, FifthColumn};
use super::line::{parse_secs, parse_u64, split_task};
use latscope_model::{Flags, Nanos};

/// What a function_graph line says.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GraphBody<'a> {
    /// `func() {`
    Entry {
        /// Nesting depth from the indentation.
        depth: u32,
        /// Function.
        func: &'a str,
    },
    /// `}` with the function when a `/* func */` comment names it.
    Exit {
        /// Nesting depth.
        depth: u32,
        /// Function, when named.
        func: Option<&'a str>,
    },
    /// `func();`
    Leaf {
        /// Nesting depth.
        depth: u32,
        /// Function.
        func: &'a str,
    },
    /// `==========>`: the CPU enters interrupt code (the kernel draws it before an `__irq_entry` function).
    IrqEntry,
    /// `<==========`: the interrupt code returns.
    IrqExit,
    /// A line that carries no call (`...` elisions).
    Nothing,
}

/// A parsed function_graph line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GraphLine<'a> {
    /// `funcgraph-abstime` seconds, or the latency display's REL TIME.
    pub ts: Option<Nanos>,
    /// `funcgraph-cpu` column.
    pub cpu: Option<u32>,
    /// `funcgraph-proc` column (comm, pid).
    pub task: Option<(&'a str, i32)>,
    /// Latency flags column (display-graph).
    pub flags: Option<Flags>,
    /// Duration column.
    pub duration: Option<Nanos>,
    /// The call.
    pub body: GraphBody<'a>,
}

/// Parse a whole function_graph line. `None` when it is not one.
pub fn parse_graph_line(line: &str) -> Option<GraphLine<'_>> {
    let (mut g, call) = match columns_end(line) {
        Some(bar) => graph_columns(&line[..bar], &line[bar + 1..])?,
        None => {
            // `perf ftrace -D`: ` 1) func() {` — the body follows the CPU column directly.
            let close = line.find(')')?;
            let cpu = line[..close].trim();
            let mut g = GraphLine { cpu: Some(u32::try_from(parse_u64(cpu.as_bytes())?).ok()?), ..GraphLine::EMPTY };
            g.body = parse_call(&line[close + 1..])?;
            return Some(g);
        }
    };
    if let Some(call) = call {
        g.body = parse_call(call)?;
    }
    Some(g)
}

/// The function's name of a line whose function_graph columns are whole but whose call column stops before
/// its `() {`, `();` or `}`: a name alone (`13378.411863 |  0)   |  cppc_cpufreq_get_rate`, a mail client
/// having wrapped ` [cppc_cpufreq]() {` onto the next line). `None` for any other line.
pub fn cut_graph_call(line: &str) -> Option<&str> {
    let bar = columns_end(line)?;
    let call = graph_columns(&line[..bar], &line[bar + 1..])?.1?;
    let t = call.trim();
    let named = t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && t.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'$'));
    (named && parse_call(call).is_none()).then_some(t)
}

impl GraphLine<'_> {
    const EMPTY: GraphLine<'static> =
        GraphLine { ts: None, cpu: None, task: None, flags: None, duration: None, body: GraphBody::Nothing };
}

/// The columns before the call column (`cols`, up to its `|`), and the call column itself (`None` when an IRQ
/// arrow in the columns is the line's body). `None` when `cols` are not function_graph columns.
fn graph_columns<'a>(cols: &'a str, call: &'a str) -> Option<(GraphLine<'a>, Option<&'a str>)> {
    let mut g = GraphLine::EMPTY;
    let mut toks = cols.split([' ', '|', '\t']).filter(|t| !t.is_empty()).peekable();
    let mut seen_cpu = false;
    let mut marker = false;
    while let Some(t) = toks.next() {
        let tb = t.as_bytes();
        if let Some(c) = t.strip_suffix(')').filter(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_digit())) {
            g.cpu = Some(u32::try_from(parse_u64(c.as_bytes())?).ok()?);
            seen_cpu = true;
        } else if !seen_cpu && g.ts.is_none() && tb.iter().all(u8::is_ascii_digit) && toks.peek() == Some(&"us") {
            toks.next();
            g.ts = Some(Nanos(parse_u64(tb)?.checked_mul(1000)?));
        } else if !seen_cpu && g.ts.is_none() && tb.contains(&b'.') && toks.peek() != Some(&"us") {
            g.ts = Some(parse_secs(tb)?);
        } else if matches!(t, "+" | "!" | "#" | "*" | "@" | "$") {
            marker = true;
        } else if toks.peek() == Some(&"us") && tb.first().is_some_and(u8::is_ascii_digit) {
            toks.next();
            g.duration = Some(parse_us(t)?);
        } else if let Some(arrow) = irq_arrow(t) {
            g.body = arrow;
            return Some((g, None));
        } else if let Some(f) = parse_flags(tb, FifthColumn::MigrateDisable).filter(|_| g.task.is_some()) {
            g.flags = Some(f);
        } else if let Some((comm, pid, _)) = split_task(t) {
            g.task = Some((comm, pid));
        } else {
            return None;
        }
    }
    if !seen_cpu && g.ts.is_none() && g.duration.is_none() && !marker && g.task.is_none() {
        return None;
    }
    Some((g, Some(call)))
}

/// Where the columns end: the `|` before the call column. Columns are `|`-separated segments of
/// timestamps, CPU, task, flags and duration; a blank segment is the (empty) duration column only
/// right after a task or flags segment. A segment that is none of these starts the call column, so
/// hand-annotated traces (seed 001's `|  +---->ktime_get();`) keep their `|` in the call column,
/// where the call's own indentation gives its depth.
fn columns_end(line: &str) -> Option<usize> {
    let last = line.rfind('|')?;
    let mut start = 0;
    let mut end = None;
    let mut duration_seen = false;
    let mut after_task = false;
    for (bar, _) in line.match_indices('|') {
        let seg = &line[start..bar];
        let toks = || seg.split_whitespace();
        if toks().next().is_none() {
            if duration_seen || !after_task {
                break;
            }
            duration_seen = true;
        } else if !toks().all(is_column_token) {
            break;
        } else {
            duration_seen |= toks().any(|t| t == "us") && !is_abstime_us(seg);
            after_task = toks().last().is_some_and(|t| {
                split_task(t).is_some() || (is_flags(t) && !t.bytes().all(|b| b.is_ascii_digit() || b == b'.'))
            });
        }
        end = Some(bar);
        start = bar + 1;
    }
    Some(end.unwrap_or(last))
}

fn is_flags(t: &str) -> bool {
    parse_flags(t.as_bytes(), FifthColumn::MigrateDisable).is_some()
}

/// `3 us` alone: the latency display's relative-time column (not a duration).
fn is_abstime_us(seg: &str) -> bool {
    let mut toks = seg.split_whitespace();
    matches!((toks.next(), toks.next(), toks.next()), (Some(n), Some("us"), None) if n.bytes().all(|b| b.is_ascii_digit()))
}

/// The IRQ arrows function_graph draws in its duration column (`funcgraph-irqs`).
fn irq_arrow(t: &str) -> Option<GraphBody<'static>> {
    match t {
        "==========>" => Some(GraphBody::IrqEntry),
        "<==========" => Some(GraphBody::IrqExit),
        _ => None,
    }
}

/// A token any function_graph column can hold.
fn is_column_token(t: &str) -> bool {
    let b = t.as_bytes();
    t == "us"
        || irq_arrow(t).is_some()
        || matches!(t, "+" | "!" | "#" | "*" | "@" | "$")
        || t.strip_suffix(')').is_some_and(|c| !c.is_empty() && c.bytes().all(|x| x.is_ascii_digit()))
        || (!b.is_empty() && b.iter().all(|x| x.is_ascii_digit() || *x == b'.'))
        || is_flags(t)
        || split_task(t).is_some()
}

/// trace-cmd's `funcgraph_entry`/`funcgraph_exit` body: `[marker] [N.NNN us] | call`.
pub fn parse_graph_body(body: &str) -> Option<(Option<Nanos>, GraphBody<'_>)> {
    let bar = body.find('|')?;
    let mut dur = None;
    let mut toks = body[..bar].split_whitespace().peekable();
    while let Some(t) = toks.next() {
        if toks.peek() == Some(&"us") {
            dur = Some(parse_us(t)?);
            toks.next();
        } else if !matches!(t, "+" | "!" | "#" | "*" | "@" | "$") {
            return None;
        }
    }
    Some((dur, parse_call(&body[bar + 1..])?))
}

/// `1.382` or `119760.2` microseconds ➜ nanoseconds.
fn parse_us(t: &str) -> Option<Nanos> {
    let (int, frac) = t.split_once('.').unwrap_or((t, ""));
    let us = parse_u64(int.as_bytes())?;
    let mut ns = 0u64;
    let fb = frac.as_bytes();
    if !fb.iter().all(u8::is_ascii_digit) {
        return None;
    }
    for i in 0..3 {
        ns = ns * 10 + fb.get(i).map_or(0, |c| u64::from(c - b'0'));
    }
    Some(Nanos(us.checked_mul(1000)?.checked_add(ns)?))
}

/// The call column: the column the call starts at gives the depth (two spaces per level after the
/// first). Anything before the call (a hand annotation such as `+---->` or `(~7.5us) |`) is skipped.
fn parse_call(s: &str) -> Option<GraphBody<'_>> {
    let s = s.trim_end();
    let t = s.trim_start();
    if t.is_empty() || t.bytes().all(|b| b == b'.') {
        return Some(GraphBody::Nothing);
    }
    // Drop a trailing `/* … */` comment (retval, tail function name).
    let (code, comment) = match s.find("/*") {
        Some(i) => (s[..i].trim_end(), Some(s[i + 2..].trim_end_matches("*/").trim())),
        None => (s, None),
    };
    let depth_at = |col: usize| (col.saturating_sub(1) / 2) as u32;
    if code.ends_with('}') {
        let func = comment
            .map(|c| without_module(c.split(" = ").next().unwrap_or(c).trim()).trim_end_matches("()"))
            .filter(|f| !f.is_empty() && !f.starts_with('='));
        return Some(GraphBody::Exit { depth: depth_at(code.len() - 1), func });
    }
    if let Some(f) = code.strip_suffix("() {") {
        let (col, func) = trailing_symbol(f)?;
        return Some(GraphBody::Entry { depth: depth_at(col), func });
    }
    if let Some(f) = code.strip_suffix("();") {
        let (col, func) = trailing_symbol(f)?;
        return Some(GraphBody::Leaf { depth: depth_at(col), func });
    }
    None
}

/// The symbol `f` ends with and the column it starts at. A module's function is printed with its module
/// after it (`cppc_cpufreq_get_rate [cppc_cpufreq]() {`, as `%ps` prints it): the symbol is the function's.
fn trailing_symbol(f: &str) -> Option<(usize, &str)> {
    let f = without_module(f);
    let col = f
        .char_indices()
        .rev()
        .find(|(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '$')))
        .map_or(0, |(i, c)| i + c.len_utf8());
    let func = &f[col..];
    (!func.is_empty()).then_some((col, func))
}

/// `func [module]` ➜ `func`; any other text unchanged.
fn without_module(f: &str) -> &str {
    f.strip_suffix(']')
        .and_then(|x| x.rsplit_once(" ["))
        .filter(|(_, m)| !m.is_empty() && m.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-')))
        .map_or(f, |(func, _)| func.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(l: &str) -> GraphLine<'_> {
        parse_graph_line(l).expect(l)
    }

    #[test]
    fn layouts() {
        let x = g(" 0)               |  sys_open() {");
        assert_eq!((x.cpu, x.body), (Some(0), GraphBody::Entry { depth: 0, func: "sys_open" }));
        let x = g(" 0)   1.382 us    |          __might_sleep();");
        assert_eq!((x.duration, x.body), (Some(Nanos(1382)), GraphBody::Leaf { depth: 4, func: "__might_sleep" }));
        let x = g("3) # 1837.709 us |          } /* __switch_to */");
        assert_eq!(x.body, GraphBody::Exit { depth: 4, func: Some("__switch_to") });
        assert_eq!(x.duration, Some(Nanos(1_837_709)));
        let x = g("1) @ 119760.2 us |  }");
        assert_eq!(x.duration, Some(Nanos(119_760_200)));
        let x = g("360.774522 |   1)   0.541 us    |                                          }");
        assert_eq!((x.ts, x.cpu), (Some(Nanos(360_774_522_000)), Some(1)));
        let x = g("0)    sh-4802     |               |                  d_free() {");
        assert_eq!(x.task, Some(("sh", 4802)));
        let x = g("        3 us |   0)   bash-1507    |  d..2 |   0.351 us    |              in_task_stack();");
        assert_eq!((x.ts, x.task, x.duration), (Some(Nanos(3000)), Some(("bash", 1507)), Some(Nanos(351))));
        assert!(x.flags.is_some_and(|f| f.irqs_off()));
        let x = g(" 1)   getname() {");
        assert_eq!(x.body, GraphBody::Entry { depth: 1, func: "getname" });
        let x = g("1)   1.232 us    |          } /* cgroup_taskset_first = 0xffff93fc8fb20000 */");
        assert_eq!(x.body, GraphBody::Exit { depth: 4, func: Some("cgroup_taskset_first") });
        let x = g("1)   0.380 us    |          sched_rt_can_attach(); /* = 0x0 */");
        assert_eq!(x.body, GraphBody::Leaf { depth: 4, func: "sched_rt_can_attach" });
        let x = g("0)   1.757 us    |        } /* kmem_cache_free() */");
        assert_eq!(x.body, GraphBody::Exit { depth: 3, func: Some("kmem_cache_free") });
        let x = g("  20) + 17.698 us   |  __kmalloc();");
        assert_eq!((x.cpu, x.duration), (Some(20), Some(Nanos(17_698))));
        assert_eq!(g("1)               |      ...").body, GraphBody::Nothing);
        // IRQ arrows, with and without `funcgraph-abstime` (the abstime form was "not an ftrace line").
        assert_eq!((g(" 0)   ==========> |").cpu, g(" 0)   ==========> |").body), (Some(0), GraphBody::IrqEntry));
        let x = g("  337.154245 |   0)   ==========> |");
        assert_eq!((x.ts, x.cpu, x.body), (Some(Nanos(337_154_245_000)), Some(0), GraphBody::IrqEntry));
        let x = g("  337.154290 |   0)   <========== |");
        assert_eq!((x.ts, x.cpu, x.body), (Some(Nanos(337_154_290_000)), Some(0), GraphBody::IrqExit));
        assert_eq!(
            g("1)   0.470 us    |              +---->ktime_get();").body,
            GraphBody::Leaf { depth: 9, func: "ktime_get" }
        );
        // Seed 001's hand annotation: `|` and labels inside the call column keep the call's depth.
        let x = g("1)   0.394 us    |              |     hrtimer_forward();");
        assert_eq!((x.duration, x.body), (Some(Nanos(394)), GraphBody::Leaf { depth: 9, func: "hrtimer_forward" }));
        let x = g("1)               |   (~7.5us)   |       _raw_spin_lock() {");
        assert_eq!(x.body, GraphBody::Entry { depth: 10, func: "_raw_spin_lock" });
        let x = g("1)   0.382 us    | additional part      preempt_count_sub();");
        assert_eq!(x.body, GraphBody::Leaf { depth: 10, func: "preempt_count_sub" });
        let x = g("1)   7.505 us    |              +---->}");
        assert_eq!(x.body, GraphBody::Exit { depth: 9, func: None });
    }

    #[test]
    fn module_functions_and_calls_cut_short() {
        // `%ps` prints a module's function with its module (Yang Shi's trace, LKML 2023-04-18, rejoined).
        let x = g("13378.411863 |     0)               |  cppc_cpufreq_get_rate [cppc_cpufreq]() {");
        assert_eq!(x.body, GraphBody::Entry { depth: 0, func: "cppc_cpufreq_get_rate" });
        let x = g("19177.226517 |     0)   0.780 us    |    cppc_cpufreq_perf_to_khz [cppc_cpufreq]();");
        assert_eq!(x.body, GraphBody::Leaf { depth: 1, func: "cppc_cpufreq_perf_to_khz" });
        assert_eq!(
            g(" 0)   1.757 us    |  } /* cppc_cpufreq_get_rate [cppc_cpufreq] */").body,
            GraphBody::Exit { depth: 0, func: Some("cppc_cpufreq_get_rate") }
        );
        assert_eq!(
            cut_graph_call("13378.411863 |     0)               |  cppc_cpufreq_get_rate "),
            Some("cppc_cpufreq_get_rate")
        );
        for l in [
            "13378.411864 |     0)               |    cpufreq_cpu_get() {",
            "1)               |      ...",
            " 0)   ==========> |",
            "[cppc_cpufreq]() {",
            "The above trace data captured IRQ when cppc_cpufreq_get_rate() returns ",
            "x | y",
        ] {
            assert_eq!(cut_graph_call(l), None, "{l}");
        }
    }

    #[test]
    fn trace_cmd_bodies_and_rejects() {
        assert_eq!(
            parse_graph_body("      + 21.469 us  |  }"),
            Some((Some(Nanos(21_469)), GraphBody::Exit { depth: 0, func: None }))
        );
        assert_eq!(
            parse_graph_body("                   |  set_fd_set() {"),
            Some((None, GraphBody::Entry { depth: 0, func: "set_fd_set" }))
        );
        for l in ["# CPU  DURATION                  FUNCTION CALLS", "cpus=8", "hello world", "x | y"] {
            assert!(parse_graph_line(l).is_none(), "{l}");
        }
    }
}
