//! [`TextDecoder`]: the line-by-line state machine over ftrace text of any flavour. Fed one line at a
//! time (so memory stays flat), it emits [`Event`]s in input order and collects [`TraceInfo`] and warnings.

use super::body::{classify, Body};
use super::fields::is_elision_token;
use super::flags::FifthColumn;
use super::graph::{cut_graph_call, parse_graph_line, GraphBody, GraphLine};
use super::latency::{header_line, legend_line, old_entry, strip_verbose_tag, switch_record};
use super::latency::{summary_tail, title, verbose_entry, OldEntry};
use super::line::{parse_prefix, split_task, Prefix};
use crate::typed::Interner;
use crate::{Annotation, Elision, Format, TraceInfo, Warning};
use latscope_model::{CpuId, Event, EventKind, Flags, LatencyHeader, Nanos, TaskName, Text};
use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;

mod pasted;
use pasted::{completes_graph_line, graph_record, is_cut_record, is_elision, is_symbol_text, split_annotation};

/// Warnings kept in full; later ones are only counted.
pub const MAX_WARNINGS: usize = 1000;

/// The kernel tracers' records whose fields every figure of theirs needs: one that stays untyped was cut
/// short or mangled, and says so.
const TRACER_RECORDS: &[&str] = &[
    "thread_noise",
    "irq_noise",
    "softirq_noise",
    "nmi_noise",
    "sample_threshold",
    "osnoise_sample",
    "timerlat_sample",
    "hwlat_sample",
];

/// CPUs tracked for function_graph state (higher CPU numbers still decode, without exit names).
const MAX_GRAPH_CPUS: usize = 4096;

/// The interrupt a function_graph IRQ arrow (`==========>` / `<==========`) stands for: the arrow does not
/// name its vector.
pub const GRAPH_IRQ: &str = "irq";

/// Deepest function_graph nesting tracked for naming `}` lines.
const MAX_GRAPH_DEPTH: usize = 256;

/// Decodes ftrace text one line at a time. See the [module docs](super).
pub struct TextDecoder {
    name: String,
    interner: RefCell<Interner>,
    info: TraceInfo,
    latency: Option<LatencyHeader>,
    warnings: Vec<Warning>,
    suppressed: u64,
    fifth: FifthColumn,
    line_no: u64,
    events: u64,
    graph_events: u64,
    report_preamble: bool,
    systrace: bool,
    graph_mode: bool,
    stack: Option<Event>,
    frames: Vec<Text>,
    last_ts: Nanos,
    graph: Vec<GraphCpu>,
    untimed_graph_warned: bool,
    last_comm: Option<TaskName>,
    /// Lost-events markers waiting for the event they precede, whose time they take (as in a `.dat`).
    pending_lost: Vec<Event>,
    /// A function entry printed without its parent, held one line: a mail client may have wrapped the
    /// `<-parent` onto the next line.
    held: Option<Event>,
    /// The mail quote depth (`> `, `> > `) of a quoted trace, once its first trace line showed it.
    quote: Option<usize>,
    /// Lines of author text between the quoted lines of a quoted trace.
    unquoted: u64,
    /// Records of the -rt verbose format that are not function entries or event lines.
    verbose_other: u64,
    /// Special-value records (`(1) ((98))`) of the 2004 latency tracer.
    old_special: u64,
    /// A wakeup tracer's record line that ends after the next task's `PID:`, a trace-cmd function_graph
    /// record without its call column, or a function_graph line cut inside its call, held one line: a mail
    /// client may have wrapped the rest onto the next. With its line number.
    cut_record: Option<(String, u64)>,
    /// The open stack was opened by a synthetic event's `stack=STACK:` field, not a `<stack trace>` line.
    stack_from_field: bool,
    /// Event lines whose timestamp the author replaced with `...`, and the first one's line.
    untimed: (u64, u64),
    /// Shell command lines pasted with the trace (`$ cat /sys/kernel/debug/tracing/trace`).
    commands: u64,
    /// Event lines where the author left fields out (`workqueue_queue_work: ... req_cpu=8192`), and the first.
    fields_elided: (u64, u64),
    /// Lines a mail client wrapped that were rejoined to the line they continue, and the first one's line.
    rejoined: (u64, u64),
    /// Latency traces pasted after the first one (a mail with several), and the line of the first of them.
    later_traces: (u64, u64),
}

/// Per-CPU function_graph state: the running task (from `=>` banners / proc column) and the call stack.
#[derive(Clone, Default)]
struct GraphCpu {
    task: Option<(TaskName, i32)>,
    calls: Vec<Text>,
    /// When the leaf on the line before returned (its time plus its duration), with `funcgraph-abstime`.
    leaf_end: Option<Nanos>,
}

impl TextDecoder {
    /// A decoder for the input called `name` (used in warning locations).
    pub fn new(name: &str) -> TextDecoder {
        let interner = Interner::default();
        TextDecoder {
            name: name.to_string(),
            interner: RefCell::new(interner),
            info: TraceInfo::default(),
            latency: None,
            warnings: Vec::new(),
            suppressed: 0,
            fifth: FifthColumn::MigrateDisable,
            line_no: 0,
            events: 0,
            graph_events: 0,
            report_preamble: false,
            systrace: false,
            graph_mode: false,
            stack: None,
            frames: Vec::new(),
            last_ts: Nanos::ZERO,
            graph: Vec::new(),
            untimed_graph_warned: false,
            last_comm: None,
            pending_lost: Vec::new(),
            held: None,
            quote: None,
            unquoted: 0,
            verbose_other: 0,
            old_special: 0,
            cut_record: None,
            stack_from_field: false,
            untimed: (0, 0),
            commands: 0,
            fields_elided: (0, 0),
            rejoined: (0, 0),
            later_traces: (0, 0),
        }
    }

    /// Mark the input as Android systrace/atrace (for [`TraceInfo::format`]).
    pub fn set_systrace(&mut self) {
        self.systrace = true;
    }

    /// Events emitted so far.
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Whether anything so far showed this is a trace (an event, a `# tracer:` line, a latency header,
    /// a trace-cmd preamble).
    pub fn recognised(&self) -> bool {
        self.events > 0
            || !self.pending_lost.is_empty()
            || self.info.tracer.is_some()
            || self.latency.is_some()
            || self.report_preamble
    }

    /// Decode one line (without its `\n`).
    pub fn line(&mut self, raw: &[u8], sink: &mut dyn FnMut(Event)) {
        let text: Cow<'_, str> = match std::str::from_utf8(raw) {
            Ok(s) => Cow::Borrowed(s),
            Err(_) => String::from_utf8_lossy(raw),
        };
        // U+00A0 no-break spaces from copy/paste out of rendered pages (UTF-8 C2 A0).
        let text: Cow<'_, str> = if memchr::memchr(0xc2, raw).is_some() && text.contains('\u{a0}') {
            Cow::Owned(text.replace('\u{a0}', " "))
        } else {
            text
        };
        self.plain_line(&text, sink);
    }

    /// Decode one line (without its `\n`) already known to be text without no-break spaces (the reader
    /// checks a whole block of lines at once).
    pub fn plain_line(&mut self, line: &str, sink: &mut dyn FnMut(Event)) {
        self.line_no += 1;
        self.decode(line.strip_suffix('\r').unwrap_or(line), sink);
    }

    fn decode(&mut self, line: &str, sink: &mut dyn FnMut(Event)) {
        let line = match self.unquote(line) {
            Some(l) => l,
            None => return,
        };
        // The author's words after the line (`mode=ABS <==== prepare to sleep`): kept as a note, not decoded.
        let line = match split_annotation(line) {
            Some((code, note)) => {
                let location = format!("{}:{}", self.name, self.line_no);
                self.info.annotations.push(Annotation { location, text: note.to_string() });
                code
            }
            None => line,
        };
        if let Some((cut, at)) = self.cut_record.take() {
            // A wakeup tracer's record cut after the next task's `PID:` (a mail client wrapped it): the rest,
            // `PRIO:STATE COMM`, is this line.
            // A trace-cmd `funcgraph_entry:`/`funcgraph_exit:` record cut before its call column: the rest,
            // `[DURATION] | call`, is this line (the call column's own indentation kept).
            // A function_graph line cut inside its call (`|  cppc_cpufreq_get_rate`): the rest, ` [module]() {`,
            // is this line, when it is no trace line of its own.
            let rest = line.trim_ascii();
            if !rest.is_empty() && parse_prefix(line, self.fifth).is_none() {
                let joined = format!("{} {}", cut.trim_ascii_end(), line.trim_ascii_start().trim_end());
                let completes = match parse_prefix(&joined, self.fifth) {
                    Some(p) => switch_record(p.body.trim_ascii()).is_some() || graph_record(p.body) == Some(true),
                    None => completes_graph_line(&cut, line, &joined),
                };
                if completes {
                    self.count_rejoined();
                    self.decode_line(&joined, false, sink);
                    return;
                }
            }
            self.decode_cut(&cut, at, sink);
        }
        self.decode_line(line, true, sink);
    }

    /// Decode one unquoted line; `may_cut` lets a record cut at its end wait for the next line.
    fn decode_line(&mut self, line: &str, may_cut: bool, sink: &mut dyn FnMut(Event)) {
        let t = line.trim_ascii();
        if let Some(mut e) = self.held.take() {
            // A wrapped `<-parent` (or the 2004 tracer's `(parent)`) continues the function entry before it.
            let wrapped = t.strip_prefix("<-").or_else(|| t.strip_prefix('(').and_then(|p| p.strip_suffix(')')));
            if let (Some(parent), EventKind::Function { parent: p @ None, .. }) = (wrapped, &mut e.kind) {
                if is_symbol_text(parent.trim_ascii()) {
                    *p = Some(self.interner.borrow_mut().intern(parent.trim_ascii()));
                    self.count_rejoined();
                    self.emit(e, sink);
                    return;
                }
            }
            self.emit(e, sink);
        }
        if self.stack.is_some() {
            if let Some(frame) = t.strip_prefix("=>") {
                let f = self.interner.borrow_mut().intern(frame_name(frame.trim_ascii()));
                self.frames.push(f);
                return;
            }
            self.flush_stack(sink);
        }
        if t.is_empty() {
            return;
        }
        // A second latency trace after the first one's entries: it and what follows are left out (said at the end).
        let titled = title(t.trim_start_matches('#')).is_some();
        if self.later_traces.0 > 0 || (titled && self.events > 0 && self.latency.is_some()) {
            if titled {
                self.later_traces.0 += 1;
                if self.later_traces.1 == 0 {
                    self.later_traces.1 = self.line_no;
                }
            }
            return;
        }
        // `#CPUS:2]` alone: the end of the 2004 tracer's `latency:` line, wrapped by a mail client.
        if self.events == 0 && self.latency.is_some() && summary_tail(t, &mut self.info.cpus) {
            self.count_rejoined();
            return;
        }
        if let Some(rest) = t.strip_prefix('#') {
            self.comment(rest);
            return;
        }
        // `$ cat /sys/kernel/debug/tracing/trace`: the command the author ran, pasted above its output.
        if t.strip_prefix("$ ")
            .is_some_and(|c| c.starts_with(|ch: char| ch.is_ascii_alphabetic() || ch == '.' || ch == '/'))
        {
            self.commands += 1;
            return;
        }
        if self.graph_mode {
            if let Some(g) = parse_graph_line(line) {
                self.graph_line(g, sink);
                return;
            }
        }
        // The hot path first: an event line.
        if let Some(p) = parse_prefix(line, self.fifth) {
            if may_cut && (is_cut_record(p.body) || graph_record(p.body) == Some(false)) {
                self.cut_record = Some((line.to_string(), self.line_no));
                return;
            }
            if !p.comm.starts_with("(T") {
                self.event_line(p, sink);
                return;
            }
        }
        if let Some(rest) = strip_verbose_tag(line) {
            if let Some(p) = parse_prefix(rest, self.fifth) {
                self.event_line(p, sink);
                return;
            }
            if let Some((comm, pid, cpu, ts, func, parent)) = verbose_entry(rest) {
                let kind = {
                    let i = &mut *self.interner.borrow_mut();
                    EventKind::Function { func: i.intern(func), parent: parent.map(|p| i.intern(p)) }
                };
                let e = Event {
                    ts,
                    cpu: CpuId(cpu),
                    pid,
                    tgid: None,
                    comm: TaskName::new(comm),
                    flags: Flags::default(),
                    kind,
                };
                self.last_ts = ts;
                self.emit(e, sink);
                return;
            }
            // The tracer's other records in that format (`(T4/#18) [ =>  dpkg ] 0.280ms`, `(T6/#7) … 1µs!< (1)`):
            // known, without an event of ours.
            self.verbose_other += 1;
            return;
        }
        if self.latency.is_some() {
            if let Some(x) = old_entry(t) {
                self.old_latency_entry(x, sink);
                return;
            }
        }
        if self.understood_marker(t) {
            return;
        }
        if self.events == 0 && header_line(t, &mut self.latency, &mut self.info.cpus) {
            return;
        }
        if self.events == 0 && legend_line(t) {
            if t.contains("lock-depth") {
                self.fifth = FifthColumn::LockDepth;
            }
            return;
        }
        if let Some(g) = parse_graph_line(line) {
            self.graph_mode = true;
            self.graph_line(g, sink);
            return;
        }
        if may_cut && cut_graph_call(line).is_some() {
            self.cut_record = Some((line.to_string(), self.line_no));
            return;
        }
        self.warn("not an ftrace line: no `TASK-PID [CPU] TIMESTAMP:` prefix or function_graph columns");
    }

    /// An entry of the 2004 latency tracer ([`OldEntry`]). Its task is the pid column's, or without that
    /// column the header's: the tracer recorded one section of that task with preemption off. An entry
    /// without its parent waits a line: a mail client may have wrapped `(parent)` onto the next.
    fn old_latency_entry(&mut self, x: OldEntry<'_>, sink: &mut dyn FnMut(Event)) {
        let Some((func, parent)) = x.call else {
            self.old_special += 1;
            return;
        };
        let header = self.latency.as_ref();
        let task = header.and_then(|h| h.task.as_ref());
        let pid = x.pid.or(task.map(|t| t.pid)).unwrap_or(-1);
        let comm = match task {
            Some(t) if t.pid == pid => TaskName::new(&t.comm),
            _ if pid >= 0 => TaskName::new("<...>"),
            _ => TaskName::EMPTY,
        };
        let kind = {
            let i = &mut *self.interner.borrow_mut();
            EventKind::Function { func: i.intern(func), parent: parent.map(|p| i.intern(p)) }
        };
        let e = Event {
            ts: x.ts,
            cpu: header.and_then(|h| h.cpu).unwrap_or(CpuId(0)),
            pid,
            tgid: None,
            comm,
            flags: Flags::default(),
            kind,
        };
        self.last_ts = x.ts;
        if parent.is_none() {
            self.held = Some(e);
        } else {
            self.emit(e, sink);
        }
    }

    /// `# tracer:`, `# entries-in-buffer…#P:N`, latency header lines, legends, comments.
    fn comment(&mut self, rest: &str) {
        let r = rest.trim_ascii();
        if let Some(t) = r.strip_prefix("tracer:") {
            let t = t.trim_ascii().to_string();
            self.graph_mode = t == "function_graph";
            self.info.tracer = Some(t);
            return;
        }
        if r.starts_with("entries-in-buffer") {
            if let Some(p) = r.split("#P:").nth(1) {
                self.info.cpus = p.trim_ascii().parse().ok();
            }
            return;
        }
        if header_line(rest, &mut self.latency, &mut self.info.cpus) {
            return;
        }
        if r.contains("lock-depth") {
            self.fifth = FifthColumn::LockDepth;
        }
    }

    /// Lines that are understood and carry no event (or a lost-events marker). Returns whether handled.
    fn understood_marker(&mut self, t: &str) -> bool {
        // `CPU:2 [LOST 11745 EVENTS]` (trace, trace-cmd report), `CPU 2 [LOST EVENTS]`, trace-cmd's
        // `instance: CPU:1 [1202 EVENTS DROPPED]`.
        let lost = t.find("[LOST ").map(|i| (i, &t[i + 6..])).or_else(|| {
            let i = t.find('[')?;
            t.ends_with("EVENTS DROPPED]").then(|| (i, &t[i + 1..]))
        });
        if let Some((i, after)) = lost {
            let cpu_tok = t[..i].split_whitespace().last().unwrap_or("");
            let cpu = cpu_tok.trim_start_matches("CPU").trim_matches([':', ' ']).parse::<u32>().ok();
            let count = after.split_whitespace().next().and_then(|n| n.parse::<u64>().ok());
            let cpu = CpuId(cpu.unwrap_or(0));
            match count {
                Some(n) => *self.info.lost.entry(cpu).or_insert(0) += n,
                None if !self.info.lost_unknown.contains(&cpu) => self.info.lost_unknown.push(cpu),
                None => {}
            }
            let e = Event {
                ts: self.last_ts,
                cpu,
                pid: -1,
                tgid: None,
                comm: TaskName::EMPTY,
                flags: Flags::default(),
                kind: EventKind::Lost { count },
            };
            self.pending_lost.push(e);
            return true;
        }
        if t.starts_with("#####") {
            return true;
        }
        if is_elision(t) {
            let e = Elision {
                location: format!("{}:{}", self.name, self.line_no),
                text: t.to_string(),
                after_events: self.events,
                after_ts: self.last_ts,
            };
            self.info.elisions.push(e);
            return true;
        }
        if let Some(v) = t.strip_prefix("version = ") {
            self.report_preamble = v.trim_ascii().parse::<u32>().is_ok();
            return self.report_preamble;
        }
        if let Some(n) = t.strip_prefix("cpus=") {
            if let Ok(n) = n.trim_ascii().parse() {
                self.info.cpus = Some(n);
                self.report_preamble = true;
                return true;
            }
        }
        // `trace-cmd report -w` summary.
        if ["Average wakeup latency:", "Maximum Latency:", "Minimum Latency:", "RT task timings:"]
            .iter()
            .any(|p| t.starts_with(p))
        {
            self.report_preamble = true;
            return true;
        }
        if t.starts_with("CPU ") && t.ends_with(" is empty") {
            self.report_preamble = true;
            return true;
        }
        // function_graph context-switch banner: ` ----------` / ` 0)  platfor-3210  =>  vmstat-2854`.
        if t.starts_with("---") {
            return true;
        }
        if let Some((l, r)) = t.split_once("=>") {
            if let Some((cpu, prev)) = l.split_once(')') {
                if let (Ok(cpu), Some(_)) = (cpu.trim_ascii().parse::<usize>(), split_task(prev.trim_ascii())) {
                    if let Some((comm, pid, _)) = split_task(r.trim_ascii()) {
                        let comm = TaskName::new(comm);
                        if let Some(g) = self.graph_cpu(cpu) {
                            g.task = Some((comm, pid));
                            g.calls.clear();
                        }
                        return true;
                    }
                }
            }
        }
        false
    }

    fn event_line(&mut self, p: Prefix<'_>, sink: &mut dyn FnMut(Event)) {
        let tracer = self.info.tracer.as_deref().unwrap_or("");
        let Some(body) = classify(p.body, tracer, p.comm, &self.interner) else {
            self.warn("event line without an event");
            return;
        };
        let comm = match self.last_comm {
            Some(c) if c == p.comm => c,
            _ => {
                let c = TaskName::new(p.comm);
                self.last_comm = Some(c);
                c
            }
        };
        if memchr::memmem::find(p.body.as_bytes(), b"...").is_some()
            && p.body.split_ascii_whitespace().any(|w| is_elision_token(w.as_bytes()))
        {
            if self.fields_elided.0 == 0 {
                self.fields_elided.1 = self.line_no;
            }
            self.fields_elided.0 += 1;
        }
        // A line whose time the author left out (`...:`) keeps the time of the event before it.
        let ts = if p.untimed {
            if self.untimed.0 == 0 {
                self.untimed.1 = self.line_no;
            }
            self.untimed.0 += 1;
            self.last_ts
        } else {
            p.ts
        };
        let mut e = Event {
            ts,
            cpu: CpuId(p.cpu),
            pid: p.pid,
            tgid: p.tgid,
            comm,
            flags: p.flags,
            kind: EventKind::Lost { count: None },
        };
        self.last_ts = ts;
        if let (Some(m), Some(h)) = (p.delay, self.latency.as_mut()) {
            h.markers.push((ts, char::from(m)));
        }
        match body {
            Body::Kind(k) => {
                if let EventKind::Other { name, .. } = &k {
                    if TRACER_RECORDS.contains(&&**name) {
                        self.warn(&format!(
                            "this `{name}` record lacks fields (the line cut short?): kept untyped, so \
                             it counts in no figure"
                        ));
                    }
                }
                let hold = matches!(k, EventKind::Function { parent: None, .. });
                // A synthetic event's `unsigned long[]` stacktrace field prints as `stack=STACK:` with its
                // frames on the `=> fn` lines that follow (6.3+): they are this event's stack.
                let stack = p
                    .body
                    .trim_ascii_end()
                    .ends_with("=STACK:")
                    .then(|| Event { kind: EventKind::Stack { frames: Arc::from([]) }, ..e.clone() });
                e.kind = k;
                if hold {
                    self.held = Some(e);
                } else {
                    self.emit(e, sink);
                }
                if stack.is_some() {
                    self.stack = stack;
                    self.stack_from_field = true;
                }
            }
            Body::StackStart => {
                e.kind = EventKind::Stack { frames: Arc::from([]) };
                self.stack = Some(e);
                self.stack_from_field = false;
            }
            Body::Graph(duration, g) => {
                if let Some(k) = self.graph_kind(p.cpu as usize, g, duration) {
                    e.kind = k;
                    self.graph_events += 1;
                    self.emit(e, sink);
                }
            }
        }
    }

    fn graph_line(&mut self, g: GraphLine<'_>, sink: &mut dyn FnMut(Event)) {
        let cpu = g.cpu.unwrap_or(0);
        if let Some((comm, pid)) = g.task {
            let comm = TaskName::new(comm);
            if let Some(c) = self.graph_cpu(cpu as usize) {
                c.task = Some((comm, pid));
            }
        }
        let Some(kind) = self.graph_kind(cpu as usize, g.body, g.duration) else { return };
        let ts = match g.ts {
            Some(ts) => ts,
            None => {
                if !self.untimed_graph_warned {
                    self.untimed_graph_warned = true;
                    self.warn(
                        "function_graph output without the abstime column: its events carry the last timestamp seen",
                    );
                }
                self.last_ts
            }
        };
        // A leaf is one record, printed at its entry's time, and so is the `<==========` printed after it when
        // it was the interrupt's handler: the interrupt returned when the leaf did.
        let leaf_end = self.graph_cpu(cpu as usize).and_then(|c| c.leaf_end.take());
        let ts = match (g.body, leaf_end) {
            (GraphBody::IrqExit, Some(end)) if g.ts.is_some() => ts.max(end),
            _ => ts,
        };
        if let (GraphBody::Leaf { .. }, Some(d), Some(_)) = (g.body, g.duration, g.ts) {
            if let Some(c) = self.graph_cpu(cpu as usize) {
                c.leaf_end = Some(ts + d);
            }
        }
        self.last_ts = ts;
        let (comm, pid) = self.graph.get(cpu as usize).and_then(|c| c.task).unwrap_or((TaskName::EMPTY, -1));
        let e = Event { ts, cpu: CpuId(cpu), pid, tgid: None, comm, flags: g.flags.unwrap_or_default(), kind };
        self.graph_events += 1;
        self.emit(e, sink);
    }

    fn graph_kind(&mut self, cpu: usize, body: GraphBody<'_>, duration: Option<Nanos>) -> Option<EventKind> {
        let mut intern = |s: &str| self.interner.borrow_mut().intern(s);
        let (kind, push) = match body {
            GraphBody::Nothing => return None,
            // The kernel does not say which interrupt: the handler is the call under the arrow.
            GraphBody::IrqEntry => (EventKind::VectorEntry { name: intern(GRAPH_IRQ), vector: None }, None),
            GraphBody::IrqExit => (EventKind::VectorExit { name: intern(GRAPH_IRQ), vector: None }, None),
            GraphBody::Entry { depth, func } => {
                let f = intern(func);
                (EventKind::GraphEntry { depth, func: f.clone() }, Some((depth, f)))
            }
            GraphBody::Leaf { depth, func } => (EventKind::GraphLeaf { depth, func: intern(func), duration }, None),
            GraphBody::Exit { depth, func } => {
                let named = func.map(&mut intern);
                let func = named.or_else(|| self.graph.get(cpu).and_then(|c| c.calls.get(depth as usize).cloned()));
                if let Some(c) = self.graph.get_mut(cpu) {
                    c.calls.truncate(depth as usize);
                }
                (EventKind::GraphExit { depth, func, duration }, None)
            }
        };
        if let Some((depth, f)) = push {
            if let Some(c) = self.graph_cpu(cpu) {
                if (depth as usize) < MAX_GRAPH_DEPTH {
                    c.calls.resize(depth as usize, Text::from(""));
                    c.calls.push(f);
                }
            }
        }
        Some(kind)
    }

    fn graph_cpu(&mut self, cpu: usize) -> Option<&mut GraphCpu> {
        if cpu >= MAX_GRAPH_CPUS {
            return None;
        }
        if self.graph.len() <= cpu {
            self.graph.resize(cpu + 1, GraphCpu::default());
        }
        self.graph.get_mut(cpu)
    }

    fn flush_stack(&mut self, sink: &mut dyn FnMut(Event)) {
        if let Some(mut e) = self.stack.take() {
            let frames = std::mem::take(&mut self.frames);
            if frames.is_empty() && self.stack_from_field {
                // A `stack=STACK:` field with no frames after it (latscope's own rendering puts them under a
                // `<stack trace>` line of their own): no stack to report.
                return;
            }
            if let Some(h) = self.latency.as_mut() {
                h.stack = frames.clone();
            }
            e.kind = EventKind::Stack { frames: frames.into() };
            self.emit(e, sink);
        }
    }

    /// Record a warning about the input as a whole at the current line (e.g. a truncated stream).
    pub fn warn_input(&mut self, message: String) {
        self.warn(&message);
    }

    fn emit(&mut self, e: Event, sink: &mut dyn FnMut(Event)) {
        for mut lost in self.pending_lost.drain(..) {
            lost.ts = e.ts;
            self.events += 1;
            sink(lost);
        }
        self.events += 1;
        sink(e);
    }

    fn warn(&mut self, message: &str) {
        if self.warnings.len() < MAX_WARNINGS {
            self.warnings
                .push(Warning { location: format!("{}:{}", self.name, self.line_no), message: message.into() });
        } else {
            self.suppressed += 1;
        }
    }

    /// End of input: flush a pending stack trace, settle the format. Returns the info and warnings.
    pub fn finish(mut self, sink: &mut dyn FnMut(Event)) -> (TraceInfo, Vec<Warning>) {
        if let Some((cut, at)) = self.cut_record.take() {
            self.decode_cut(&cut, at, sink);
        }
        if let Some(e) = self.held.take() {
            self.emit(e, sink);
        }
        self.flush_stack(sink);
        self.paste_warnings();
        if self.verbose_other > 0 {
            self.warnings.push(Warning {
                location: self.name.clone(),
                message: format!(
                    "{} record(s) of the -rt verbose latency format that are neither function entries nor event \
                     lines (task-switch markers, special values) were skipped",
                    self.verbose_other
                ),
            });
        }
        if self.old_special > 0 {
            self.warnings.push(Warning {
                location: self.name.clone(),
                message: format!(
                    "{} special-value record(s) of the 2004 latency tracer (`(1) ((98))`: numbers without their \
                     meaning, such as pids and priorities) were skipped",
                    self.old_special
                ),
            });
        }
        for lost in std::mem::take(&mut self.pending_lost) {
            self.events += 1;
            sink(lost);
        }
        if self.suppressed > 0 {
            self.warnings.push(Warning {
                location: self.name.clone(),
                message: format!("{} more lines could not be decoded (warnings not kept)", self.suppressed),
            });
        }
        let format = if self.systrace {
            Format::Systrace
        } else if self.latency.is_some() {
            Format::LatencyText
        } else if self.report_preamble {
            Format::TraceCmdReport
        } else if self.graph_events * 2 > self.events {
            Format::FuncGraphText
        } else {
            Format::FtraceText
        };
        let mut info = self.info;
        info.format = Some(format);
        info.latency = self.latency;
        if info.tracer.is_none() {
            info.tracer = info.latency.as_ref().map(|h| h.tracer.clone()).filter(|t| !t.is_empty());
        }
        (info, self.warnings)
    }
}
/// A stack frame without the address printed beside it: trace-cmd's `console_unlock (ffffffff813f07fa)`,
/// old kernels' `[<c0123456>] console_unlock`; offsets (`console_unlock+0x12/0x30`) stay.
pub(crate) fn frame_name(f: &str) -> &str {
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
    let f = match f.strip_prefix("[<").and_then(|r| r.split_once(">]")) {
        Some((addr, rest)) if hex(addr.trim_start_matches("0x")) => rest.trim_ascii(),
        _ => f,
    };
    match f.strip_suffix(')').and_then(|r| r.rsplit_once(" (")) {
        Some((name, addr)) if hex(addr.trim_start_matches("0x")) => name.trim_ascii_end(),
        _ => f,
    }
}

#[cfg(test)]
mod tests {
    use super::{completes_graph_line, frame_name, split_annotation};

    #[test]
    fn a_cut_call_is_completed_only_by_the_rest_of_its_own_name() {
        let cut = "13378.411863 |     0)               |  cppc_cpufreq_get_rate ";
        let join = |next: &str| format!("{} {}", cut.trim_end(), next.trim());
        assert!(completes_graph_line(cut, "[cppc_cpufreq]() {", &join("[cppc_cpufreq]() {")));
        // A name broken in its middle would join into another function's call.
        let cut = "13378.411863 |     0)               |  cppc_cpufreq_get_r";
        let join = |next: &str| format!("{} {}", cut.trim_end(), next.trim());
        assert!(!completes_graph_line(cut, "ate() {", &join("ate() {")));
    }

    #[test]
    fn annotations_are_split_off_and_trace_arrows_are_not() {
        assert_eq!(
            split_annotation(
                "  <idle>-0  1d..h1.. 2563695110us : local_timer_entry: vector=236 <=========== tick interrupt comes."
            ),
            Some((
                "  <idle>-0  1d..h1.. 2563695110us : local_timer_entry: vector=236",
                "<=========== tick interrupt comes."
            ))
        );
        assert_eq!(
            split_annotation(" f-1 [000] 1.000001: foo <-bar   <--"),
            Some((" f-1 [000] 1.000001: foo <-bar", "<--"))
        );
        for l in [
            " 0)   <========== |",
            "111735834352899 |   0)   <========== |",
            "  bash-1 [000] 1.000001: foo <-bar",
            "  <idle>-0 [000] 1.0: sched_switch: prev_comm=<...> prev_pid=0 ==> next_comm=x",
            "<== only words",
            "  3)  bash-1507 | d..2 | # 1837.709 us |          } /* __switch_to */",
            "# entries-in-buffer/entries-written: 204964/18371579   #P:4",
            "  sh-1 [000] 1.000001: tracing_mark_write: # a marker",
        ] {
            assert_eq!(split_annotation(l), None, "{l}");
        }
    }

    #[test]
    fn frames_lose_their_printed_addresses_only() {
        assert_eq!(frame_name("console_flush_all (ffffffff813f0621)"), "console_flush_all");
        assert_eq!(frame_name("[<c0123456>] console_unlock"), "console_unlock");
        assert_eq!(frame_name("console_unlock+0x39c/0x510"), "console_unlock+0x39c/0x510");
        assert_eq!(frame_name("devkmsg_emit.constprop.0"), "devkmsg_emit.constprop.0");
        assert_eq!(frame_name("foo (bar)"), "foo (bar)");
    }
}
