//! [`Windowed`]: a trace too large to hold, analysed in two streamed passes. The first ([`crate::scan`])
//! finds the worst wakeups, sections and late timers, the latencies the trace states and the whole trace's
//! statistics, with the kernel tracers' records ([`crate::kernel_tracers`]); the second pairs every hrtimer
//! expiry and cuts the events of one time window around each finding at a time, analyses that window whole
//! ([`analyze`]) on a thread of its own and lets it go, so memory holds a few windows, whatever the trace's
//! length. The windows' findings are merged into the whole trace's lists and verdicts (`windowed/merge.rs`);
//! the worst timerlat sample and the longest osnoise single noise are explained in the window planned around
//! each.

use crate::analysis::{analyze, Analysis, AnalyzeOptions, SourceInfo};
use crate::latency_report::latency_report;

mod merge;

use crate::funcgraph_stream::RootCapture;
use crate::hrtimer::HrtimerReport;
use crate::hrtimer_expiries::HrtimerStream;
use crate::kernel_tracers::{Explained, KernelSample};
use crate::reported::{self, ReportedLatency};
use crate::scan::{Scan, ScanResult, SectionCandidate, TimerCandidate, TimerStart, WakeupCandidate};
use crate::window_found::Found;
use latscope_model::{CpuId, DecodedTrace, Event, Nanos, Pid, Summary, TaskName, TraceInfo, Warning};
use rustc_hash::FxHashMap;
use serde::Serialize;

/// How much of the trace before a wakeup's start a window holds: the CPU's state, the sections and interrupts
/// that held it back. The `hrtimer_start` of the timer that woke it, when earlier, is carried into the window
/// alone (its expiry time is where the latency starts).
pub const LEAD: Nanos = Nanos::from_ms(20);

/// How much after the switch-in: the return to user space and a preemption on the way.
pub const TAIL: Nanos = Nanos::from_ms(20);

/// Most events a window holds; a longer window keeps its last ones and says so.
pub const MAX_WINDOW_EVENTS: usize = 1_000_000;

/// Why a window was analysed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "around", rename_all = "snake_case")]
pub enum WindowReason {
    /// One of the worst wakeups the streamed pass found.
    Wakeup(WakeupCandidate),
    /// The latency the trace states itself that the explanation is anchored on.
    Reported(ReportedLatency),
    /// One of the longest sections with interrupts, bottom halves or preemption disabled.
    Section(SectionCandidate),
    /// One of the latest hrtimer expiries.
    LateTimer(TimerCandidate),
    /// A kernel tracer's record explained from the events before it (the worst timerlat sample, the longest
    /// osnoise single noise).
    KernelSample(KernelSample),
    /// One of the longest RT throttling gaps: what ran instead.
    Throttled {
        /// The CPU.
        cpu: CpuId,
        /// The RT task kept off it.
        pid: Pid,
        /// Its name.
        comm: TaskName,
        /// The gap's start.
        start: Nanos,
        /// Its end.
        end: Nanos,
    },
}

/// A time range of the trace to analyse whole.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct WindowPlan {
    /// From this time.
    pub from: Nanos,
    /// To this time (inclusive).
    pub to: Nanos,
    /// What it is around (overlapping windows are one).
    pub reasons: Vec<WindowReason>,
    /// Events before `from` that its explanations read (the starts of the timers that woke its tasks), carried
    /// into the window ahead of its own events.
    pub carry: Vec<TimerStart>,
}

/// One analysed window.
#[derive(Clone, Debug, Serialize)]
pub struct Window {
    /// What it covers and why.
    pub plan: WindowPlan,
    /// Global indices of the events carried ahead of its own ([`WindowPlan::carry`]): the first indices of
    /// `analysis` are these, the rest count from `first_index`.
    pub carried: Vec<u64>,
    /// Global index of its first own record.
    pub first_index: u64,
    /// Records it held.
    pub records: u64,
    /// Whether it held more than [`MAX_WINDOW_EVENTS`] and kept only its last ones.
    pub cut: bool,
    /// The window, analysed whole.
    pub analysis: Analysis,
    /// What it found, with the whole trace's indices (what the merged lists draw from).
    #[serde(skip)]
    pub found: Found,
}

/// How a trace too large to hold was analysed: why, the whole trace's wakeup statistics and the windows. The
/// [`Analysis`] that holds it ([`Analysis::windowed`]) has the whole trace's verdicts, lists and statistics,
/// merged from the windows and the streamed passes as the whole-trace analysis would give them.
#[derive(Clone, Debug, Serialize)]
pub struct Windowed {
    /// Why it was not analysed whole (the memory it would need), as the caller says.
    pub reason: String,
    /// Waking to switch-in of every wakeup of the selected tasks in the whole trace.
    pub wakeups: Summary,
    /// The windows, in time order.
    pub windows: Vec<Window>,
}

/// The windows to analyse: around each wakeup the scan kept and around the anchor, merged where they overlap,
/// in time order.
pub fn plan(scan: &ScanResult) -> Vec<WindowPlan> {
    let mut plans: Vec<WindowPlan> = scan
        .worst
        .iter()
        .map(|c| WindowPlan {
            from: c.start.min(c.waking).saturating_sub(LEAD),
            to: c.end.max(c.switch_in) + TAIL,
            reasons: vec![WindowReason::Wakeup(c.clone())],
            carry: c.timer.into_iter().collect(),
        })
        .collect();
    for c in &scan.sections {
        plans.push(WindowPlan {
            from: c.start.saturating_sub(LEAD),
            to: c.end + TAIL,
            reasons: vec![WindowReason::Section(c.clone())],
            carry: Vec::new(),
        });
    }
    for t in &scan.late_timers {
        plans.push(WindowPlan {
            from: t.at.saturating_sub(t.lateness()).saturating_sub(LEAD),
            to: t.at + TAIL,
            reasons: vec![WindowReason::LateTimer(t.clone())],
            carry: vec![t.start],
        });
    }
    for g in &scan.stats.throttle_longest {
        plans.push(WindowPlan {
            from: g.start.saturating_sub(LEAD),
            to: g.end + TAIL,
            reasons: vec![WindowReason::Throttled {
                cpu: g.cpu,
                pid: g.task.pid,
                comm: g.task.comm,
                start: g.start,
                end: g.end,
            }],
            carry: Vec::new(),
        });
    }
    for k in scan.stats.kernel.samples() {
        plans.push(WindowPlan {
            from: k.at.saturating_sub(k.length).saturating_sub(LEAD),
            to: k.at + TAIL,
            reasons: vec![WindowReason::KernelSample(k)],
            carry: Vec::new(),
        });
    }
    if let Some(a) = reported::anchor(&scan.reported) {
        plans.push(WindowPlan {
            from: a.ts.saturating_sub(a.latency).saturating_sub(LEAD),
            to: a.ts + TAIL,
            reasons: vec![WindowReason::Reported(a.clone())],
            carry: Vec::new(),
        });
    }
    plans.sort_by_key(|p| p.from);
    let mut merged: Vec<WindowPlan> = Vec::new();
    for p in plans {
        match merged.last_mut() {
            Some(m) if p.from <= m.to => {
                m.to = m.to.max(p.to);
                m.reasons.extend(p.reasons);
                m.carry.extend(p.carry);
            }
            _ => merged.push(p),
        }
    }
    for m in &mut merged {
        m.carry.retain(|t| t.at < m.from);
        m.carry.sort_by_key(|t| t.index);
        m.carry.dedup();
    }
    merged
}

/// A source that can be streamed more than once: each call passes every record, in order, to the visitor and
/// returns what the input said about itself.
pub type Restream<'a, E> = dyn FnMut(&mut dyn FnMut(&Event)) -> Result<(TraceInfo, Vec<Warning>), E> + 'a;

/// Analyses the trace `stream` gives in two streamed passes (see the module's text). `reason` says why it is
/// not analysed whole.
pub fn analyze_windowed<E>(
    name: &str,
    stream: &mut Restream<'_, E>,
    opts: &AnalyzeOptions,
    reason: String,
) -> Result<Analysis, E> {
    let mut scan = Scan::new(&opts.selection);
    let (info, warnings) = stream(&mut |e| scan.step(e))?;
    analyze_scanned(name, Scanned { scan: scan.finish(), info, warnings }, stream, opts, reason)
}

/// What the first pass gave: its result and what the input said about itself.
pub struct Scanned {
    /// The pass's result.
    pub scan: ScanResult,
    /// What the input said about itself.
    pub info: TraceInfo,
    /// What the decoder skipped.
    pub warnings: Vec<Warning>,
}

/// [`analyze_windowed`] after its first pass, done by the caller (while it found the trace too large to hold).
pub fn analyze_scanned<E>(
    name: &str,
    scanned: Scanned,
    stream: &mut Restream<'_, E>,
    opts: &AnalyzeOptions,
    reason: String,
) -> Result<Analysis, E> {
    let Scanned { mut scan, info, warnings } = scanned;
    // The second pass also pairs every hrtimer expiry for the whole trace's statistics, holds the entries of a
    // latency-tracer trace (the tracer's snapshot of one section, bounded by its buffer, not by the capture's
    // length, every entry of which its report lists) and takes the two function-graph calls the whole trace's
    // report compares.
    let mut timers = HrtimerStream::new(scan.stats.tick_periods.clone());
    let mut section: Option<Vec<Event>> = info.latency.is_some().then(Vec::new);
    let funcgraph = scan.funcgraph.take();
    let mut calls = funcgraph.as_ref().and_then(|f| f.diff).map(RootCapture::new);
    let mut index = 0;
    let mut both = |visit: &mut dyn FnMut(&Event)| {
        index = 0;
        stream(&mut |e| {
            timers.step(e);
            if let Some(s) = section.as_mut() {
                s.push(e.clone());
            }
            if let Some(c) = calls.as_mut() {
                c.step(index, e);
            }
            index += 1;
            visit(e)
        })
    };
    let windows = analyze_windows(name, &info, opts, plan(&scan), &mut both, workers())?;
    let found = calls.map(RootCapture::finish).unwrap_or_default();
    let section = section.unwrap_or_default();
    let latency_trace = info.latency.as_ref().map(|h| latency_report(h, &section, &info.elisions));
    let top = opts.selection.top.max(1);
    let (wakeups, anchored_wakeup) = merge::worst(&windows, &scan, top);
    let (irqs_off, disabled, late_timers) = merge::findings(&windows, &scan, top);
    let (irqs_off, disabled) = merge::section_reports(&scan.section_counts, irqs_off, disabled);
    let throttling = merge::throttling(&windows, &scan, top);
    let anchor = reported::anchor(&scan.reported).and_then(|a| scan.reported.iter().position(|r| r == a));
    let mut a = Analysis {
        schema: latscope_model::wire::SCHEMA,
        kind: "analysis",
        source: source_info(name, &scan, &info, &warnings),
        verdicts: Vec::new(),
        latency_trace,
        irqs_off,
        disabled,
        hrtimers: HrtimerReport { late: late_timers, ..timers.finish() },
        wakeups,
        throttling,
        reported: scan.reported.clone(),
        anchor,
        anchored_wakeup,
        tick_storms: scan.stats.tick_storms.clone(),
        pi: scan.stats.pi.clone(),
        locks: scan.stats.locks.clone(),
        funcgraph: funcgraph.map(|f| f.complete(&found)),
        diff: None,
        irq_stats: scan.stats.irq_stats.clone(),
        threshold: opts.threshold,
        exceeded: false,
        rtla: None,
        hwlat: None,
        osnoise: None,
        timerlat: None,
        windowed: None,
    };
    let explained = Explained::merged(windows.iter().map(|w| &w.found.kernel));
    let kernel = scan.stats.kernel.reports(&explained);
    let kept = scan.stats.storm_lines.iter().cloned().chain(scan.stats.kernel.evidence_lines(explained));
    let held = merge::Held::new(&windows, kept, section);
    a.verdicts = merge::verdicts(&a, &held, &opts.remedy);
    kernel.lead_verdicts(&mut a.verdicts, &held, &opts.remedy);
    (a.hwlat, a.osnoise, a.timerlat) = (kernel.hwlat, kernel.osnoise, kernel.timerlat);
    scan.stats.threads.mark_analysis(&mut a);
    let worst_verdict = a.worst();
    a.exceeded = opts.threshold.is_some_and(|t| {
        worst_verdict > t || windows.iter().any(|w| w.analysis.exceeded) || Nanos(scan.wakeups.max_ns) > t
    });
    a.windowed = Some(Windowed { reason, wakeups: scan.wakeups, windows });
    Ok(a)
}

fn source_info(name: &str, scan: &ScanResult, info: &TraceInfo, warnings: &[Warning]) -> SourceInfo {
    let mut source = SourceInfo {
        events: scan.events,
        stacks: scan.stacks,
        cpus: scan.cpus.clone(),
        span: scan.last - scan.first,
        ..SourceInfo::described(name, info, warnings)
    };
    if let (n @ 1.., first) = scan.out_of_order {
        source.warnings.push(format!(
            "{name}: record #{first}: {n} of its records come earlier than the record before them; the analysis in \
             windows reads them in the input's order, where a whole-trace analysis sorts them: analyse it whole (--max-memory \
             SIZE) for exact results"
        ));
    }
    source
}

impl Window {
    /// The global index of the window's event `i`.
    pub fn global(&self, i: usize) -> usize {
        match self.carried.get(i) {
            Some(g) => *g as usize,
            None => self.first_index as usize + (i - self.carried.len()),
        }
    }
}

/// Threads that analyse windows while the trace is read: the machine's cores, at most four (a window is a few
/// milliseconds of analysis; more threads would hold more windows for little gain).
pub fn workers() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(4)
}

/// The second pass: reads the trace once, cuts it into the planned windows and analyses each whole, on
/// `workers` threads beside the reading one (on the reading one when `workers` is 1 or no thread starts). The windows
/// come back in time order, the same whatever the number of threads. Memory holds at most `workers` windows
/// being analysed and the one being read.
pub fn analyze_windows<E>(
    name: &str,
    info: &TraceInfo,
    opts: &AnalyzeOptions,
    plans: Vec<WindowPlan>,
    stream: &mut Restream<'_, E>,
    workers: usize,
) -> Result<Vec<Window>, E> {
    let analyse = |c: Cut| c.analyse(name, info, opts);
    let mut done: Vec<(usize, Window)> = Vec::new();
    let read = std::thread::scope(|s| {
        // A rendezvous channel: a cut window waits until a thread takes it.
        let (jobs, queue) = std::sync::mpsc::sync_channel::<Cut>(0);
        let (results, finished) = std::sync::mpsc::channel::<(usize, Window)>();
        let queue = std::sync::Arc::new(std::sync::Mutex::new(queue));
        let mut started = 0;
        for _ in 0..if workers > 1 { workers } else { 0 } {
            let (queue, results) = (queue.clone(), results.clone());
            let work = move || {
                // The lock is held while waiting for a window, not while analysing it.
                while let Some(c) = queue.lock().ok().and_then(|q| q.recv().ok()) {
                    let seq = c.seq;
                    if results.send((seq, analyse(c))).is_err() {
                        break;
                    }
                }
            };
            started += usize::from(std::thread::Builder::new().name("window".into()).spawn_scoped(s, work).is_ok());
        }
        drop(queue);
        let mut inline: Vec<(usize, Window)> = Vec::new();
        let mut sink = |c: Cut| {
            // With no thread to take it (none started, or all gone), the reading thread analyses it.
            let c = match started > 0 {
                true => match jobs.send(c) {
                    Ok(()) => return,
                    Err(std::sync::mpsc::SendError(c)) => c,
                },
                false => c,
            };
            inline.push((c.seq, analyse(c)));
        };
        let mut collector = Collector::new(plans);
        let read = stream(&mut |e| collector.step(e, &mut sink));
        collector.finish(&mut sink);
        drop(jobs);
        drop(results);
        done.extend(inline);
        done.extend(finished.iter());
        read
    });
    read?;
    done.sort_by_key(|(seq, _)| *seq);
    Ok(done.into_iter().map(|(_, w)| w).collect())
}

/// A window cut from the trace, waiting to be analysed.
struct Cut {
    /// Its number, in time order.
    seq: usize,
    plan: WindowPlan,
    carried: Vec<(u64, Event)>,
    first_index: u64,
    events: std::collections::VecDeque<Event>,
    cut: bool,
}

impl Cut {
    fn analyse(self, name: &str, info: &TraceInfo, opts: &AnalyzeOptions) -> Window {
        let records = self.events.len() as u64;
        let indices: Vec<u64> = self.carried.iter().map(|(i, _)| *i).collect();
        let mut events: Vec<Event> = self.carried.into_iter().map(|(_, e)| e).collect();
        events.extend(self.events);
        let trace = DecodedTrace { info: info.clone(), events, warnings: Vec::new() };
        let analysis = analyze(name, &trace, opts);
        let mut w = Window {
            plan: self.plan,
            carried: indices,
            first_index: self.first_index,
            records,
            cut: self.cut,
            analysis,
            found: Found::default(),
        };
        w.found = Found::of(&w.analysis, &trace.events, &|i| w.global(i));
        let kernel: Vec<KernelSample> = (w.plan.reasons.iter())
            .filter_map(|r| if let WindowReason::KernelSample(k) = r { Some(*k) } else { None })
            .collect();
        w.found.kernel = Explained::around(&kernel, &trace.events[w.carried.len()..], w.first_index);
        w
    }
}

/// Cuts the stream into the planned windows: holds the events of the current one and hands it on when the
/// stream leaves it.
struct Collector {
    plans: std::vec::IntoIter<WindowPlan>,
    current: Option<WindowPlan>,
    /// Number of the current window.
    seq: usize,
    events: std::collections::VecDeque<Event>,
    first_index: u64,
    cut: bool,
    index: u64,
    /// The events to carry, by global index, with the number of their window, in index order.
    carry: Vec<(u64, usize)>,
    next_carry: usize,
    /// Carried events collected, per window number.
    carried: FxHashMap<usize, Vec<(u64, Event)>>,
}

impl Collector {
    fn new(plans: Vec<WindowPlan>) -> Collector {
        let mut carry: Vec<(u64, usize)> =
            plans.iter().enumerate().flat_map(|(n, p)| p.carry.iter().map(move |t| (t.index, n))).collect();
        carry.sort_unstable();
        let mut plans = plans.into_iter();
        let current = plans.next();
        Collector {
            plans,
            current,
            seq: 0,
            events: Default::default(),
            first_index: 0,
            cut: false,
            index: 0,
            carry,
            next_carry: 0,
            carried: FxHashMap::default(),
        }
    }

    fn step(&mut self, e: &Event, sink: &mut dyn FnMut(Cut)) {
        let index = self.index;
        self.index += 1;
        while let Some(&(i, n)) = self.carry.get(self.next_carry) {
            if i > index {
                break;
            }
            if i == index {
                self.carried.entry(n).or_default().push((index, e.clone()));
            }
            self.next_carry += 1;
        }
        while let Some(p) = &self.current {
            if e.ts > p.to {
                self.close(sink);
                continue;
            }
            if e.ts >= p.from {
                if self.events.is_empty() {
                    self.first_index = index;
                }
                if self.events.len() == MAX_WINDOW_EVENTS {
                    self.events.pop_front();
                    self.first_index += 1;
                    self.cut = true;
                }
                self.events.push_back(e.clone());
            }
            break;
        }
    }

    /// Hands the current window on and moves to the next.
    fn close(&mut self, sink: &mut dyn FnMut(Cut)) {
        let Some(plan) = self.current.take() else { return };
        sink(Cut {
            seq: self.seq,
            plan,
            carried: self.carried.remove(&self.seq).unwrap_or_default(),
            first_index: self.first_index,
            events: std::mem::take(&mut self.events),
            cut: std::mem::replace(&mut self.cut, false),
        });
        self.seq += 1;
        self.current = self.plans.next();
    }

    fn finish(mut self, sink: &mut dyn FnMut(Cut)) {
        while self.current.is_some() {
            self.close(sink);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::{TimerStart, WakeupCandidate};
    use latscope_model::TaskName;

    fn wakeup(start_ms: u64, end_ms: u64, timer: Option<(u64, u64)>) -> WakeupCandidate {
        WakeupCandidate {
            pid: 7,
            comm: TaskName::from("t"),
            prio: 4,
            cpu: latscope_model::CpuId(1),
            start: Nanos::from_ms(start_ms),
            timer: timer.map(|(index, at)| TimerStart { index, at: Nanos::from_ms(at) }),
            waking_index: 0,
            waking: Nanos::from_ms(start_ms),
            switch_index: 0,
            switch_in: Nanos::from_ms(end_ms),
            end: Nanos::from_ms(end_ms),
        }
    }

    #[test]
    fn overlapping_windows_are_one_and_carry_only_timer_starts_before_them() {
        let scan = ScanResult {
            worst: vec![
                wakeup(1000, 1001, Some((10, 900))),
                wakeup(1030, 1031, Some((12, 1010))),
                wakeup(5000, 5002, None),
            ],
            ..Default::default()
        };
        let plans = plan(&scan);
        assert_eq!(plans.len(), 2, "{plans:?}");
        assert_eq!((plans[0].from, plans[0].to), (Nanos::from_ms(980), Nanos::from_ms(1051)));
        assert_eq!(plans[0].reasons.len(), 2);
        // The second timer started inside the merged window: only the first one's start is carried.
        assert_eq!(plans[0].carry, vec![TimerStart { index: 10, at: Nanos::from_ms(900) }]);
        assert_eq!((plans[1].from, plans[1].to), (Nanos::from_ms(4980), Nanos::from_ms(5022)));
        assert!(plans[1].carry.is_empty());
    }
}
