//! The streamed first pass over a trace too large to analyse whole: counts, the latencies the trace states
//! itself, the worst wakeups of the selected tasks, the longest sections and latest timers, the whole
//! trace's statistics ([`crate::trace_stats`]) and function-graph report ([`crate::funcgraph_stream`]), in
//! state bounded by the tasks and CPUs, not the events (but for the function-graph calls still open and 32
//! bytes per function-graph root call that returned with callees, [`crate::funcgraph_stream::RootsReport`]).

use crate::flag_sections::{Disabled, FlagTracker};
use crate::funcgraph_stream::{FuncGraphStream, PendingReport};
use crate::keep::keep_largest;
use crate::reported::{self, ReportedLatency};
use crate::trace_stats::{StatsStream, TraceStats};
use crate::wakeup::{WakeupSelection, RETURN_PREEMPT_WINDOW};
use latscope_model::event::{Text, Toggle, WakeupKind};
use latscope_model::{is_rt_prio, CpuId, Event, EventKind, LatencyHistogram, Nanos, Pid, Summary, TaskName};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// How many candidates the scan keeps per wakeup asked for: the breakdown's latency can start before the
/// waking (the timer's expiry, the IRQ's entry) and end after the switch-in (the return to user space), so
/// the order by waking-to-switch-in time is only nearly the breakdowns' order.
pub const CANDIDATES_PER_TOP: usize = 4;

/// Most latencies the trace states itself that are kept (the largest, and the last threshold mark).
const MAX_REPORTED: usize = 1000;

/// An `hrtimer_start` event: its global index and time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TimerStart {
    /// Global index.
    pub index: u64,
    /// Time.
    pub at: Nanos,
}

/// A wakeup the scan found: the task's waking (or wakeup) event to its switch-in.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WakeupCandidate {
    /// The woken task.
    pub pid: Pid,
    /// Its name.
    pub comm: TaskName,
    /// Its kernel priority at the waking.
    pub prio: i32,
    /// The CPU it was switched in on.
    pub cpu: CpuId,
    /// Where its latency starts: the hrtimer's expiry when a timer woke it (and expired before the waking),
    /// else the interrupt's entry when it woke in one, else the waking.
    pub start: Nanos,
    /// The `hrtimer_start` of the timer that woke it (its expiry time is the start).
    pub timer: Option<TimerStart>,
    /// Global index of the waking event.
    pub waking_index: u64,
    /// Its time.
    pub waking: Nanos,
    /// Global index of the switch-in.
    pub switch_index: u64,
    /// Its time.
    pub switch_in: Nanos,
    /// Where its latency ends: the return to user space on its CPU when traced (and, when it was preempted
    /// right after it, its next switch-in), else the switch-in.
    pub end: Nanos,
}

impl WakeupCandidate {
    /// From its start to its end, as the wakeup's breakdown measures it.
    pub fn latency(&self) -> Nanos {
        self.end.saturating_sub(self.start)
    }

    /// Worst first; of two as late, the one switched in first.
    fn rank(&self) -> (Nanos, std::cmp::Reverse<u64>) {
        (self.latency(), std::cmp::Reverse(self.switch_index))
    }
}

/// A section with interrupts, bottom halves or preemption disabled: from `preemptirq` events, or a run of
/// events whose flags column shows it ([`crate::flag_sections`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SectionCandidate {
    /// Its CPU.
    pub cpu: CpuId,
    /// What was disabled.
    pub disabled: Disabled,
    /// Whether `preemptirq` events bound it (else the flags column).
    pub preemptirq: bool,
    /// Its start.
    pub start: Nanos,
    /// Its end.
    pub end: Nanos,
    /// Whether its evidence is dense enough to state it ([`crate::flag_sections::FlagSection::dense`]; always
    /// for `preemptirq` sections): dense sections are reported before longer sparse ones.
    pub dense: bool,
}

impl SectionCandidate {
    /// `end - start`.
    pub fn duration(&self) -> Nanos {
        self.end.saturating_sub(self.start)
    }

    fn flags(f: &crate::flag_sections::FlagSection) -> SectionCandidate {
        SectionCandidate {
            cpu: f.cpu,
            disabled: f.disabled,
            preemptirq: false,
            start: f.start,
            end: f.end,
            dense: f.dense(),
        }
    }

    /// The order the reports keep them in, largest first: irqs-off sections by length, the others dense before
    /// sparse, then by length ([`crate::irqsoff::report`], [`crate::disabled::report`]).
    fn rank(&self) -> (bool, Nanos, std::cmp::Reverse<Nanos>) {
        (self.dense && self.disabled != Disabled::Irqs, self.duration(), std::cmp::Reverse(self.start))
    }
}

/// An hrtimer that expired later than it was set to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TimerCandidate {
    /// The CPU it expired on.
    pub cpu: CpuId,
    /// Its callback.
    pub function: Text,
    /// When it was set to expire.
    pub expires: Nanos,
    /// When it expired (`hrtimer_expire_entry`'s `now`; `expires` and `expired` are the timer's clock).
    pub expired: Nanos,
    /// The `hrtimer_expire_entry`'s time in the trace.
    pub at: Nanos,
    /// Its `hrtimer_start`.
    pub start: TimerStart,
}

impl TimerCandidate {
    /// `expired - expires`.
    pub fn lateness(&self) -> Nanos {
        self.expired.saturating_sub(self.expires)
    }

    /// Latest first; of two as late, the one started first.
    fn rank(&self) -> (Nanos, std::cmp::Reverse<u64>) {
        (self.lateness(), std::cmp::Reverse(self.start.index))
    }
}

/// What the streamed pass found in the whole trace.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ScanResult {
    /// Events, as `trace-cmd report` counts them (without kernel stacks and lost-event markers).
    pub events: u64,
    /// Kernel stacks recorded after events.
    pub stacks: u64,
    /// Every record the stream gave (events, stacks, lost markers): the global indices count these.
    pub records: u64,
    /// CPUs that had events.
    pub cpus: Vec<CpuId>,
    /// First record's time.
    pub first: Nanos,
    /// Last record's time (the span is from the first to the last, as the whole-trace analysis says it).
    pub last: Nanos,
    /// Waking to switch-in of every wakeup of the selected tasks (every SCHED_FIFO/RR task by default).
    pub wakeups: Summary,
    /// The worst of them, worst first (at most [`CANDIDATES_PER_TOP`] × the wakeups asked for).
    pub worst: Vec<WakeupCandidate>,
    /// Latencies the trace states itself (threshold marks, synthetic latency events): the largest and the
    /// last threshold mark, with global indices.
    pub reported: Vec<ReportedLatency>,
    /// Whether more were stated than kept.
    pub reported_dropped: u64,
    /// The longest sections per CPU and kind (at most [`CANDIDATES_PER_TOP`] × the number asked for of each).
    pub sections: Vec<SectionCandidate>,
    /// The CPUs with `preemptirq` events: their irqs-off sections come from those alone.
    pub preemptirq_cpus: Vec<CpuId>,
    /// The latest hrtimer expiries, latest first.
    pub late_timers: Vec<TimerCandidate>,
    /// The whole trace's statistics (tick storms, PI, locks, interrupt durations, RT throttling).
    pub stats: TraceStats,
    /// Per CPU with sections: their counts and durations.
    pub section_counts: Vec<SectionCounts>,
    /// Records earlier than the one before them, and the index of the first: the windowed analysis reads a
    /// stream in its order, the whole-trace analysis sorts it, so they can differ where this is not zero.
    pub out_of_order: (u64, u64),
    /// The whole trace's function-graph report, when it has function-graph calls; its diff waits for the
    /// second pass.
    #[serde(skip)]
    pub funcgraph: Option<PendingReport>,
}

/// A task woken and not yet switched in.
struct Pending {
    waking_index: u64,
    waking: Nanos,
    /// Where its latency starts: the timer's expiry or the interrupt's entry when it woke in one.
    start: Nanos,
    /// The start of the timer that woke it.
    timer: Option<TimerStart>,
    comm: TaskName,
    prio: i32,
}

/// What the scan follows per CPU.
#[derive(Default)]
struct CpuState {
    last: Nanos,
    current: Option<Pid>,
    /// Hard interrupts (handlers, vectors) open, and when the outermost entered.
    irq_depth: u32,
    irq_entry: Nanos,
    /// The hrtimer whose callback runs: its expiry time (in trace time) and its start.
    expiry: Option<(Nanos, TimerStart)>,
    /// When a `preemptirq:irq_disable` left interrupts off, until the `irq_enable`.
    irqs_off: Option<Nanos>,
    saw_preemptirq: bool,
    flags: FlagTracker,
    counts: Counting,
}

/// A CPU's sections counted as they end.
#[derive(Default)]
struct Counting {
    /// Durations of the irqs-off sections from `preemptirq` events, and from the flags column.
    preemptirq: Option<LatencyHistogram>,
    flags: Option<LatencyHistogram>,
    bottom_halves: usize,
    preemption: usize,
}

impl Counting {
    fn add(&mut self, c: &SectionCandidate) {
        let h = match (c.disabled, c.preemptirq) {
            (Disabled::Irqs, true) => &mut self.preemptirq,
            (Disabled::Irqs, false) => &mut self.flags,
            (Disabled::BottomHalves, _) => return self.bottom_halves += 1,
            (Disabled::Preemption, _) => return self.preemption += 1,
        };
        h.get_or_insert_with(LatencyHistogram::new).record(c.duration());
    }

    /// The CPU's counts, when it had sections: its irqs-off sections are those of `preemptirq` events when it
    /// had any (`preemptirq`), as the timeline takes them.
    fn finish(self, cpu: CpuId, preemptirq: bool) -> Option<SectionCounts> {
        let irqs = if preemptirq { self.preemptirq } else { self.flags }.filter(|h| h.count() > 0);
        let c = SectionCounts {
            cpu,
            irqs_off: irqs.as_ref().map(|h| h.summary(None)).unwrap_or_default(),
            irqs_off_buckets: irqs.as_ref().map(|h| h.buckets()).unwrap_or_default(),
            from_preemptirq: preemptirq && irqs.is_some(),
            bottom_halves: self.bottom_halves,
            preemption: self.preemption,
        };
        (irqs.is_some() || c.bottom_halves > 0 || c.preemption > 0).then_some(c)
    }
}

/// One CPU's sections over the whole trace: what the whole-trace reports count ([`crate::irqsoff::CpuIrqsOff`],
/// [`crate::disabled::CpuDisabled`]).
#[derive(Clone, Debug, Default, Serialize)]
pub struct SectionCounts {
    /// The CPU.
    pub cpu: CpuId,
    /// Durations of its irqs-off sections (count 0: none).
    pub irqs_off: Summary,
    /// Their histogram.
    pub irqs_off_buckets: Vec<latscope_model::Bucket>,
    /// Whether they are `preemptirq` events' (else the flags column's).
    pub from_preemptirq: bool,
    /// Sections with bottom halves disabled (flags column).
    pub bottom_halves: usize,
    /// Sections with preemption disabled (flags column).
    pub preemption: usize,
}

/// The streamed pass: feed it every event in order with [`Scan::step`], then [`Scan::finish`]. Its state is
/// per task woken, per hrtimer started and per CPU.
pub struct Scan {
    selection: WakeupSelection,
    keep: usize,
    out: ScanResult,
    cpus: FxHashMap<CpuId, CpuState>,
    pending: FxHashMap<Pid, Pending>,
    /// Switched in, waiting for the return to user space (on its CPU) that ends the latency.
    awaiting_exit: FxHashMap<Pid, WakeupCandidate>,
    /// Returned to user space at the time given: preempted right after, the latency lasts until it runs again.
    returned: FxHashMap<Pid, (WakeupCandidate, Nanos)>,
    resuming: FxHashMap<Pid, WakeupCandidate>,
    /// Started hrtimers: their expiry time and their start. A `hrtimer_cancel` does not end one: the kernel
    /// traces one right before running an expiring timer (`__run_hrtimer` dequeues it), and a timer cancelled
    /// for good is started again before it expires.
    timers: FxHashMap<u64, (Nanos, TimerStart)>,
    hist: LatencyHistogram,
    last_mark: Option<ReportedLatency>,
    sections: FxHashMap<(CpuId, Disabled, bool), Vec<SectionCandidate>>,
    stats: StatsStream,
    funcgraph: FuncGraphStream,
}

impl Scan {
    /// A scan for the wakeups `selection` asks for.
    pub fn new(selection: &WakeupSelection) -> Scan {
        Scan {
            selection: selection.clone(),
            keep: selection.top.max(1) * CANDIDATES_PER_TOP,
            out: ScanResult::default(),
            cpus: FxHashMap::default(),
            pending: FxHashMap::default(),
            awaiting_exit: FxHashMap::default(),
            returned: FxHashMap::default(),
            resuming: FxHashMap::default(),
            timers: FxHashMap::default(),
            hist: LatencyHistogram::new(),
            last_mark: None,
            sections: FxHashMap::default(),
            stats: StatsStream::new(selection.top),
            funcgraph: FuncGraphStream::new(selection.top.max(1)),
        }
    }

    /// The next event of the stream.
    pub fn step(&mut self, e: &Event) {
        let index = self.out.records;
        self.out.records += 1;
        if index == 0 {
            self.out.first = e.ts;
        } else if e.ts < self.out.last {
            self.out.first = self.out.first.min(e.ts);
            if self.out.out_of_order.0 == 0 {
                self.out.out_of_order.1 = index;
            }
            self.out.out_of_order.0 += 1;
        }
        self.out.last = self.out.last.max(e.ts);
        self.stats.step(index as usize, e);
        self.funcgraph.step(index as usize, e);
        self.cpus.entry(e.cpu).or_default();
        match e.kind {
            EventKind::Stack { .. } => {
                self.out.stacks += 1;
                return;
            }
            EventKind::Lost { .. } => return,
            _ => self.out.events += 1,
        }
        let cpu = self.cpus.entry(e.cpu).or_default();
        // A CPU's first event: what ran before it is not in the trace.
        let before = if cpu.current.is_some() { cpu.last } else { e.ts };
        cpu.last = e.ts;
        cpu.flags.step(e.cpu, index as usize, e);
        for f in cpu.flags.done.drain(..) {
            let c = SectionCandidate::flags(&f);
            cpu.counts.add(&c);
            let v = self.sections.entry((c.cpu, c.disabled, false)).or_default();
            v.push(c);
            keep_largest(v, self.keep, false, SectionCandidate::rank);
        }
        match &e.kind {
            EventKind::Preemptirq { toggle: Toggle::IrqDisable, .. } => {
                cpu.saw_preemptirq = true;
                cpu.irqs_off.get_or_insert(e.ts);
            }
            EventKind::Preemptirq { toggle: Toggle::IrqEnable, .. } => {
                cpu.saw_preemptirq = true;
                if let Some(start) = cpu.irqs_off.take() {
                    let c = SectionCandidate {
                        cpu: e.cpu,
                        disabled: Disabled::Irqs,
                        preemptirq: true,
                        start,
                        end: e.ts,
                        dense: true,
                    };
                    cpu.counts.add(&c);
                    let v = self.sections.entry((e.cpu, Disabled::Irqs, true)).or_default();
                    v.push(c);
                    keep_largest(v, self.keep, false, SectionCandidate::rank);
                }
            }
            _ => {}
        }
        match &e.kind {
            EventKind::IrqHandlerEntry { .. } | EventKind::VectorEntry { .. } => {
                if cpu.irq_depth == 0 {
                    cpu.irq_entry = e.ts;
                }
                cpu.irq_depth += 1;
            }
            EventKind::IrqHandlerExit { .. } | EventKind::VectorExit { .. } => {
                cpu.irq_depth = cpu.irq_depth.saturating_sub(1);
            }
            EventKind::HrtimerStart { hrtimer, expires, .. } => {
                self.timers.insert(*hrtimer, (*expires, TimerStart { index, at: e.ts }));
            }
            EventKind::HrtimerExpireEntry { hrtimer, function, now } => {
                // The timer's clock mapped to trace time with this event's own (ts, now) pair, as the
                // whole-trace analysis does (`hrtimer::expiries`).
                let offset = e.ts.0 as i128 - now.0 as i128;
                let started = self.timers.remove(hrtimer);
                cpu.expiry = started.map(|(x, s)| (Nanos((x.0 as i128 + offset).max(0) as u64), s));
                if let Some((expires, start)) = started.filter(|(x, _)| now > x) {
                    let t = TimerCandidate {
                        cpu: e.cpu,
                        function: function.clone(),
                        expires,
                        expired: *now,
                        at: e.ts,
                        start,
                    };
                    self.out.late_timers.push(t);
                    keep_largest(&mut self.out.late_timers, self.keep, false, TimerCandidate::rank);
                }
            }
            EventKind::HrtimerExpireExit { .. } => cpu.expiry = None,
            EventKind::SchedWakeup { kind: WakeupKind::Waking | WakeupKind::Wakeup, comm, pid, prio, .. } => {
                let (start, timer) = match cpu.expiry {
                    Some((x, started)) if x <= e.ts => (x, Some(started)),
                    _ if cpu.irq_depth > 0 => (cpu.irq_entry, None),
                    _ => (e.ts, None),
                };
                let p = Pending { waking_index: index, waking: e.ts, start, timer, comm: *comm, prio: *prio };
                self.pending.entry(*pid).or_insert(p);
            }
            EventKind::SchedSwitch { prev_pid, prev_state, next_pid, .. } => {
                cpu.current = Some(*next_pid);
                if let Some(c) = self.awaiting_exit.remove(prev_pid) {
                    self.finished(c);
                }
                if prev_pid != next_pid {
                    self.pending.remove(prev_pid);
                }
                if let Some((c, exit)) = self.returned.remove(prev_pid) {
                    if prev_state.starts_with('R') && e.ts - exit <= RETURN_PREEMPT_WINDOW {
                        self.resuming.insert(*prev_pid, c);
                    } else {
                        self.finished(c);
                    }
                }
                self.switched_in(*next_pid, e.cpu, index, e.ts);
                return;
            }
            EventKind::SysExit { .. } => {
                if let Some(mut c) = self.awaiting_exit.remove(&e.pid) {
                    if c.cpu == e.cpu {
                        c.end = e.ts;
                        self.returned.insert(e.pid, (c, e.ts));
                    } else {
                        self.finished(c);
                    }
                }
            }
            EventKind::Print { .. } | EventKind::Other { .. } => self.reported(index, e),
            _ => {}
        }
        // A task's first event on a CPU that ran another: it was switched in without a traced switch, after
        // the CPU's previous event.
        let cpu = self.cpus.entry(e.cpu).or_default();
        if cpu.current != Some(e.pid) {
            cpu.current = Some(e.pid);
            if self.pending.contains_key(&e.pid) || self.resuming.contains_key(&e.pid) {
                self.switched_in(e.pid, e.cpu, index, before);
            }
        }
    }

    fn switched_in(&mut self, pid: Pid, cpu: CpuId, index: u64, at: Nanos) {
        if let Some(mut c) = self.resuming.remove(&pid) {
            c.end = at;
            self.finished(c);
        }
        let Some(p) = self.pending.remove(&pid) else { return };
        if !self.selected(&p.comm, pid, p.prio) {
            return;
        }
        let c = WakeupCandidate {
            pid,
            comm: p.comm,
            prio: p.prio,
            cpu,
            start: p.start,
            timer: p.timer,
            waking_index: p.waking_index,
            waking: p.waking,
            switch_index: index,
            switch_in: at,
            end: at,
        };
        self.hist.record(at - p.waking);
        if let Some(old) = self.awaiting_exit.insert(pid, c) {
            self.finished(old);
        }
    }

    /// A candidate whose end is known.
    fn finished(&mut self, c: WakeupCandidate) {
        self.out.worst.push(c);
        keep_largest(&mut self.out.worst, self.keep, false, WakeupCandidate::rank);
    }

    fn selected(&self, comm: &str, pid: Pid, prio: i32) -> bool {
        match &self.selection.task {
            Some(f) => f.matches(comm, pid),
            None => is_rt_prio(prio),
        }
    }

    fn reported(&mut self, index: u64, e: &Event) {
        for mut r in reported::reported(std::slice::from_ref(e)) {
            r.index = usize::try_from(index).unwrap_or(usize::MAX);
            if matches!(r.by, reported::ReportedBy::TraceMark { .. }) {
                self.last_mark = Some(r.clone());
            }
            self.out.reported.push(r);
            if self.out.reported.len() >= 2 * MAX_REPORTED {
                self.cut_reported();
            }
        }
    }

    fn cut_reported(&mut self) {
        let before = self.out.reported.len();
        self.out.reported.sort_by_key(|r| (std::cmp::Reverse(r.latency), r.index));
        self.out.reported.truncate(MAX_REPORTED);
        self.out.reported_dropped += (before - self.out.reported.len()) as u64;
    }

    /// What the pass found.
    pub fn finish(mut self) -> ScanResult {
        let open: Vec<WakeupCandidate> = (self.awaiting_exit.drain().map(|(_, c)| c))
            .chain(self.returned.drain().map(|(_, (c, _))| c))
            .chain(self.resuming.drain().map(|(_, c)| c))
            .collect();
        for c in open {
            self.finished(c);
        }
        keep_largest(&mut self.out.worst, self.keep, true, WakeupCandidate::rank);
        if self.out.reported.len() > MAX_REPORTED {
            self.cut_reported();
        }
        if let Some(m) = self.last_mark.take() {
            if !self.out.reported.contains(&m) {
                self.out.reported.push(m);
            }
        }
        self.out.reported.sort_by_key(|r| r.index);
        let mut cpus: Vec<(CpuId, CpuState)> = std::mem::take(&mut self.cpus).into_iter().collect();
        cpus.sort_by_key(|(c, _)| *c);
        self.out.cpus = cpus.iter().map(|(c, _)| *c).collect();
        for (id, mut state) in cpus {
            if state.saw_preemptirq {
                self.out.preemptirq_cpus.push(id);
            }
            for f in state.flags.finish(id) {
                let c = SectionCandidate::flags(&f);
                state.counts.add(&c);
                self.sections.entry((c.cpu, c.disabled, false)).or_default().push(c);
            }
            self.out.section_counts.extend(state.counts.finish(id, state.saw_preemptirq));
        }
        let mut sections: Vec<_> = std::mem::take(&mut self.sections).into_iter().collect();
        sections.sort_by_key(|(k, _)| *k);
        for (_, mut v) in sections {
            keep_largest(&mut v, self.keep, true, SectionCandidate::rank);
            self.out.sections.extend(v);
        }
        keep_largest(&mut self.out.late_timers, self.keep, true, TimerCandidate::rank);
        self.out.wakeups = self.hist.summary(None);
        self.out.stats = self.stats.finish();
        self.out.funcgraph = self.funcgraph.finish();
        self.out
    }
}
