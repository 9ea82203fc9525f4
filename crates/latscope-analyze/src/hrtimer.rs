//! hrtimer lateness: `hrtimer_start` (expires) paired with `hrtimer_expire_entry` (now) per timer; stats per
//! timer function and CPU; for the latest expiries, what the CPU was doing just before the IRQ that ran them.
//!
//! Only lateness the trace proves is reported. The kernel can re-arm or cancel a queued timer without an
//! event (the NOHZ idle code moves the tick that way), so the last traced start is not always the expiry the
//! timer had. An expiry pass on the timer's CPU (a timer interrupt, or another timer's expiry in an interrupt
//! or hrtimer softirq of the same kind) after that expiry runs every timer that is due: when one ran and did
//! not run this timer, its traced start was no longer in force and its lateness is not known. The same holds
//! for the tick of a CPU that was idle from before the tick's traced expiry to its run, when the run came a whole
//! tick period or more after that expiry: going idle, the NOHZ code stops the tick and moves it to the next timer
//! event on the tick grid, and no event shows the move (seen on 6.18).

use crate::timeline::{Activity, Timeline};
use latscope_model::{
    Bucket, CauseKind, CpuId, Culprit, Event, EventKind, Explanation, LatencyHistogram, Nanos, Summary, TaskRef, Text,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// One expiry of an hrtimer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct HrtimerExpiry {
    /// CPU that ran the timer.
    pub cpu: CpuId,
    /// Trace time of `hrtimer_expire_entry`.
    pub ts: Nanos,
    /// Timer address.
    pub hrtimer: u64,
    /// Callback function.
    pub function: Text,
    /// The expiry time in trace time, when the matching `hrtimer_start` was traced.
    pub expires_at: Option<Nanos>,
    /// `now - expires`, when the start was traced.
    pub lateness: Option<Nanos>,
    /// Index of the `hrtimer_expire_entry` event.
    pub index: usize,
    /// Index of the matching `hrtimer_start` event.
    pub start_index: Option<usize>,
    /// Index of an expiry pass on this CPU after the traced expiry that did not run the timer (a timer
    /// interrupt's entry, another timer's expiry): the timer had been re-armed or cancelled without an event,
    /// so its lateness is not known (`lateness` is `None`).
    pub skipped_by: Option<usize>,
    /// The tick period, when this is the tick of a CPU that was idle from before the traced expiry to the run
    /// and the run came a period or more after that expiry: NOHZ idle moved the tick without an event, so its
    /// lateness is not known (`lateness` is `None`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub idle_tick_period: Option<Nanos>,
}

/// Lateness statistics of one timer function on one CPU.
#[derive(Clone, Debug, Serialize)]
pub struct HrtimerStats {
    /// Callback function.
    pub function: Text,
    /// CPU.
    pub cpu: CpuId,
    /// Count, min, max, mean, percentiles of the lateness.
    pub summary: Summary,
}

/// A late expiry and what the CPU was doing between the expiry and the IRQ that ran it.
#[derive(Clone, Debug, Serialize)]
pub struct LateExpiry {
    /// The expiry.
    pub expiry: HrtimerExpiry,
    /// Entry of the interrupt context the timer ran in, when traced.
    pub irq_entry: Option<Nanos>,
    /// Name of that interrupt (`local_timer`, `irq 3 arch_timer`).
    pub irq_name: Option<String>,
    /// What held the IRQ back first (see [`crate::held_back::decide`]), then what ran between the expiry
    /// and the IRQ entry: irqs-off sections first, the rest longest first. When the timer ran in a timer
    /// thread ([`LateExpiry::thread`]): what ran while that thread waited for the CPU, longest first.
    pub before: Vec<Explanation>,
    /// The kernel thread the timer expired in, when not in the interrupt itself: on PREEMPT_RT the timers
    /// not marked hard (those of normal tasks among them) expire in `ktimers/N` (SCHED_FIFO 1), elsewhere
    /// softirq work can be deferred to `ksoftirqd/N`. Its wait for the CPU is the timer's lateness.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread: Option<TimerThread>,
}

/// A timer thread's wakeup and switch-in before it ran a late timer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TimerThread {
    /// The thread (`ktimers/1`) with the priority it was switched in with.
    pub task: TaskRef,
    /// When it was woken (`sched_waking`, else `sched_wakeup`).
    pub woken: Nanos,
    /// When it got the CPU.
    pub switched_in: Nanos,
    /// Indices of the wakeup and switch-in events.
    pub evidence: Vec<usize>,
}

/// Whether a task is a kernel thread that runs deferred timer work.
fn is_timer_thread(comm: &str) -> bool {
    comm.starts_with("ktimers/") || comm.starts_with("ksoftirqd/")
}

/// When the expiry at `x` ran in a timer thread: that thread's last wakeup and switch-in before it.
fn timer_thread(events: &[Event], x: &HrtimerExpiry) -> Option<TimerThread> {
    let e = events.get(x.index)?;
    if e.pid == 0 || !is_timer_thread(e.comm.as_str()) {
        return None;
    }
    let earliest = x.expires_at?;
    let mut switched: Option<(Nanos, usize, i32)> = None;
    // The wakeup: `sched_waking` (the request) when traced, else `sched_wakeup`.
    let mut woken: Option<(Nanos, usize)> = None;
    let found = |woken: (Nanos, usize), (at, si, prio): (Nanos, usize, i32)| TimerThread {
        task: TaskRef::new(e.comm, e.pid, Some(prio)),
        woken: woken.0,
        switched_in: at,
        evidence: vec![woken.1, si],
    };
    for (i, ev) in events[..x.index].iter().enumerate().rev() {
        // A switch-in before the expiry means no wait for this timer; the wakeup itself may come earlier (the
        // thread already runnable, woken for other work, when the timer expired): look back to it.
        if ev.ts < earliest && switched.is_none() {
            break;
        }
        match &ev.kind {
            EventKind::SchedSwitch { next_pid, next_prio, .. }
                if switched.is_none() && *next_pid == e.pid && ev.cpu == x.cpu =>
            {
                switched = Some((ev.ts, i, *next_prio));
            }
            // The thread went to sleep before this wakeup: the wakeup seen so far is the one.
            EventKind::SchedSwitch { prev_pid, .. } if *prev_pid == e.pid && switched.is_some() => {
                return Some(found(woken?, switched?));
            }
            EventKind::SchedWakeup { pid, kind, .. } if *pid == e.pid && switched.is_some() => {
                woken = Some((ev.ts, i));
                if *kind == latscope_model::event::WakeupKind::Waking {
                    return Some(found(woken?, switched?));
                }
            }
            _ => {}
        }
    }
    Some(found(woken?, switched?))
}

/// A timer lateness that a module printed itself (`delta: 9656`, `8 overruns`), from `print` events.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PrintedLateness {
    /// CPU.
    pub cpu: CpuId,
    /// When it was printed.
    pub ts: Nanos,
    /// The lateness the print states, when it does.
    pub lateness: Option<Nanos>,
    /// The overrun count it states, when it does.
    pub overruns: Option<u64>,
    /// Index of the print event.
    pub index: usize,
}

/// The hrtimer part of an analysis.
#[derive(Clone, Debug, Default, Serialize)]
pub struct HrtimerReport {
    /// Expiries seen.
    pub expiries: u64,
    /// Expiries whose start was traced (lateness known).
    pub with_lateness: u64,
    /// Expiries whose traced start an earlier expiry pass on their CPU passed by (re-armed or cancelled
    /// without an event): their lateness is not known and is left out of the statistics.
    pub rearmed: u64,
    /// Ticks of idle CPUs that ran a tick period or more after their traced expiry (see
    /// [`HrtimerExpiry::idle_tick_period`]): their lateness is not known and is left out of the statistics.
    pub idle_ticks: u64,
    /// Per function and CPU, most late first.
    pub stats: Vec<HrtimerStats>,
    /// All lateness values merged, as histogram buckets.
    pub buckets: Vec<Bucket>,
    /// The latest expiries with their context.
    pub late: Vec<LateExpiry>,
    /// Lateness printed by the traced code itself.
    pub printed: Vec<PrintedLateness>,
}

pub use crate::hrtimer_expiries::expiries;

/// Parses a module's own lateness print: `… now: X [us] expect_expires: Y [us], delta: 9656 …` and `8 overruns`.
pub fn printed_lateness(text: &str) -> (Option<Nanos>, Option<u64>) {
    let lower = text.to_ascii_lowercase();
    let scale = if lower.contains("[ns]") {
        1
    } else if lower.contains("[ms]") {
        1_000_000
    } else {
        1_000
    };
    let number_after = |key: &str| -> Option<u64> {
        let at = lower.find(key)? + key.len();
        let rest = lower[at..].trim_start_matches([':', '=', ' ']);
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        digits.parse().ok()
    };
    let lateness = if lower.contains("expire") || lower.contains("late") {
        number_after("delta").or_else(|| number_after("late")).map(|v| Nanos(v.saturating_mul(scale)))
    } else {
        None
    };
    let overruns = lower.find("overrun").and_then(|at| {
        let before = lower[..at].trim_end();
        let digits: String =
            before.chars().rev().take_while(|c| c.is_ascii_digit()).collect::<Vec<_>>().into_iter().rev().collect();
        digits.parse().ok()
    });
    (lateness, overruns)
}

/// The free text of a print: `print`/`bprint`/trace_printk events, or an event the decoder did not know whose
/// only field is text (`hrtimer_cb: 8 overruns`, a trace_printk line prefixed with its function).
pub fn printed_text(kind: &EventKind) -> Option<&str> {
    match kind {
        EventKind::Print { text, .. } => Some(text),
        EventKind::Other { fields, .. } => match fields.as_slice() {
            [latscope_model::Field { value: latscope_model::FieldValue::Str(t), .. }] => Some(t),
            _ => None,
        },
        _ => None,
    }
}

/// Builds the hrtimer report: stats per function and CPU, the `top` latest expiries explained, printed lateness.
pub fn report(
    events: &[Event],
    timeline: &Timeline,
    all: &[HrtimerExpiry],
    top: usize,
    ctx: &crate::remedy::RemedyContext,
) -> HrtimerReport {
    let mut stats = ExpiryStats::default();
    all.iter().for_each(|x| stats.add(x));
    let printed = events.iter().enumerate().filter_map(|(i, e)| printed_at(i, e)).collect();
    let mut late: Vec<&HrtimerExpiry> = all.iter().filter(|x| x.lateness.is_some_and(|l| l > Nanos::ZERO)).collect();
    late.sort_by_key(|x| std::cmp::Reverse(x.lateness));
    let late = late.into_iter().take(top).map(|x| explain_late(timeline, events, x, ctx)).collect();
    HrtimerReport { late, printed, ..stats.finish() }
}

/// The lateness the trace's event `i` prints, if it does.
pub fn printed_at(i: usize, e: &Event) -> Option<PrintedLateness> {
    let (lateness, overruns) = printed_lateness(printed_text(&e.kind)?);
    (lateness.is_some() || overruns.is_some()).then_some(PrintedLateness {
        cpu: e.cpu,
        ts: e.ts,
        lateness,
        overruns,
        index: i,
    })
}

/// The statistics of [`HrtimerReport`] one expiry at a time: a histogram per function and CPU.
#[derive(Default)]
pub struct ExpiryStats {
    per: BTreeMap<(Text, CpuId), LatencyHistogram>,
    merged: LatencyHistogram,
    expiries: u64,
    with_lateness: u64,
    rearmed: u64,
    idle_ticks: u64,
}

impl ExpiryStats {
    /// The next expiry.
    pub fn add(&mut self, x: &HrtimerExpiry) {
        self.expiries += 1;
        self.rearmed += u64::from(x.skipped_by.is_some());
        self.idle_ticks += u64::from(x.idle_tick_period.is_some());
        if let Some(l) = x.lateness {
            self.with_lateness += 1;
            self.per.entry((x.function.clone(), x.cpu)).or_default().record(l);
            self.merged.record(l);
        }
    }

    /// The report's counts, statistics and histogram (no late expiries, nothing printed).
    pub fn finish(self) -> HrtimerReport {
        let mut stats: Vec<HrtimerStats> = self
            .per
            .into_iter()
            .map(|((function, cpu), h)| HrtimerStats { function, cpu, summary: h.summary(None) })
            .collect();
        stats.sort_by_key(|s| std::cmp::Reverse(s.summary.max_ns));
        HrtimerReport {
            expiries: self.expiries,
            with_lateness: self.with_lateness,
            rearmed: self.rearmed,
            idle_ticks: self.idle_ticks,
            stats,
            buckets: if self.merged.count() > 0 { self.merged.buckets() } else { Vec::new() },
            late: Vec::new(),
            printed: Vec::new(),
        }
    }
}

/// What the CPU did between a timer's expiry and the entry of the interrupt that ran it, what held that
/// interrupt back first (see [`crate::held_back::decide`]).
pub fn explain_late(
    timeline: &Timeline,
    events: &[Event],
    x: &HrtimerExpiry,
    remedy: &crate::remedy::RemedyContext,
) -> LateExpiry {
    let Some(cpu) = timeline.cpu(x.cpu) else {
        return LateExpiry { expiry: x.clone(), irq_entry: None, irq_name: None, before: Vec::new(), thread: None };
    };
    let ctx = cpu.context_at(x.ts);
    let irq_entry = ctx.map(|c| c.start);
    let irq_name = ctx.map(|c| c.activity.label());
    if let Some(t) = timer_thread(events, x) {
        // The thread's wait is the lateness: what held the CPU meanwhile, longest first. An irqs-off
        // section inside it only delayed the thread's wakeup, not its turn on the CPU.
        // From the later of its wakeup and the expiry: time before the expiry is not this timer's.
        let segments = cpu.segments_in(x.expires_at.map_or(t.woken, |at| t.woken.max(at)), t.switched_in);
        let mut before = activity_components(&segments, x.cpu, Some(t.task.pid));
        before.sort_by_key(|c| std::cmp::Reverse(c.magnitude));
        return LateExpiry { expiry: x.clone(), irq_entry, irq_name, before, thread: Some(t) };
    }
    let mut before = Vec::new();
    if let (Some(expires), Some(entry)) = (x.expires_at, irq_entry.or(Some(x.ts))) {
        if entry > expires {
            let raw = window_components(timeline, x.cpu, expires, entry);
            let arrival = crate::held_back::Arrival::at(timeline, events, x.cpu, ctx.and_then(|c| c.entry_index));
            before = crate::held_back::decide(raw, entry - expires, x.cpu, arrival, remedy);
        }
    }
    LateExpiry { expiry: x.clone(), irq_entry, irq_name, before, thread: None }
}

/// What happened in `[start, end)` on `cpu`: irqs-off sections overlapping it first, then what ran (by
/// activity), longest first.
pub fn window_components(timeline: &Timeline, cpu_id: CpuId, start: Nanos, end: Nanos) -> Vec<Explanation> {
    let Some(cpu) = timeline.cpu(cpu_id) else { return Vec::new() };
    let mut out: Vec<Explanation> = Vec::new();
    for s in cpu.irqs_off.iter().filter(|s| s.start < end && s.end > start) {
        let overlap = s.end.min(end) - s.start.max(start);
        out.push(irqs_off_explanation(s, overlap));
    }
    out.extend(activity_components(&cpu.segments_in(start, end), cpu_id, None));
    // Irqs-off sections explain the time of the task they ran in: list them first.
    out.sort_by_key(|c| (c.cause != CauseKind::IrqsOff, std::cmp::Reverse(c.magnitude)));
    out
}

/// An irqs-off section (or `overlap` of it) as an explanation: the task it ran in and, from preemptirq
/// events, the code (caller of the disable, then its parent).
pub fn irqs_off_explanation(s: &crate::timeline::IrqsOffSection, overlap: Nanos) -> Explanation {
    let mut culprit = Culprit::task(TaskRef::new(s.comm, s.pid, None));
    if let crate::timeline::IrqsOffSource::Preemptirq { caller, parent, .. } = &s.source {
        culprit.chain = vec![crate::symbol::short(caller).to_string(), crate::symbol::bare(parent).to_string()];
    }
    Explanation::new(CauseKind::IrqsOff, culprit, overlap, Some(s.cpu))
}

/// Sums clipped segments by activity into explanations (IRQs, softirqs, NMIs, tasks, idle), skipping
/// `skip_pid`, in order of first appearance.
pub fn activity_components(
    segments: &[crate::timeline::Segment],
    cpu: CpuId,
    skip_pid: Option<latscope_model::Pid>,
) -> Vec<Explanation> {
    let mut sums: Vec<(Activity, Nanos, u64)> = Vec::new();
    for s in segments {
        if let Activity::Task { pid, .. } = &s.activity {
            if Some(*pid) == skip_pid {
                continue;
            }
        }
        let key = match &s.activity {
            // One entry per task regardless of the prio the segment knew.
            Activity::Task { comm, pid, .. } => Activity::Task { comm: *comm, pid: *pid, prio: None },
            a => a.clone(),
        };
        let prio = match &s.activity {
            Activity::Task { prio, .. } => *prio,
            _ => None,
        };
        match sums.iter_mut().find(|(a, _, _)| same_activity(a, &key)) {
            Some((a, d, n)) => {
                *d = *d + (s.end - s.start);
                *n += 1;
                if let (Activity::Task { prio: p @ None, .. }, Some(v)) = (a, prio) {
                    *p = Some(v);
                }
            }
            None => {
                let mut k = key;
                if let Activity::Task { prio: p, .. } = &mut k {
                    *p = prio;
                }
                sums.push((k, s.end - s.start, 1))
            }
        }
    }
    sums.into_iter()
        .map(|(a, d, n)| {
            let mut e = activity_explanation(&a, d, cpu);
            e.count = n;
            e
        })
        .collect()
}

/// What an activity is as a cause: a task ran, the CPU was idle, an interrupt of some kind.
pub fn activity_explanation(a: &Activity, d: Nanos, cpu: CpuId) -> Explanation {
    let (kind, culprit) = match a {
        Activity::Task { comm, pid, prio } => {
            (CauseKind::BlockingTask, Culprit::task(TaskRef::new(*comm, *pid, *prio)))
        }
        Activity::Idle => (CauseKind::Idle, Culprit::default()),
        Activity::Irq { irq, name } => (CauseKind::Irq, Culprit::irq(Some(*irq), name.to_string())),
        Activity::Vector { name } => (CauseKind::Vector, Culprit::named(name.to_string())),
        Activity::Softirq { name, .. } => (CauseKind::Softirq, Culprit::named(name.to_string())),
        Activity::Nmi { handler } => (CauseKind::Nmi, Culprit::named(handler.to_string())),
        a @ Activity::HardIrq { .. } => (CauseKind::Irq, Culprit::irq(None, a.label())),
    };
    Explanation::new(kind, culprit, d, Some(cpu))
}

/// Equal activities, tasks compared by name and pid only.
fn same_activity(a: &Activity, b: &Activity) -> bool {
    match (a, b) {
        (Activity::Task { comm: c1, pid: p1, .. }, Activity::Task { comm: c2, pid: p2, .. }) => c1 == c2 && p1 == p2,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ev;

    /// Regression (#18): each expiry scanned every earlier timer interrupt on its CPU, so a long trace took
    /// quadratic time (a 1 M-event recording: 20 s in `expiries`). 200,000 ticks took minutes before.
    #[test]
    fn lateness_takes_linear_time_in_the_trace() {
        let ticks = 200_000u64;
        let mut events = Vec::new();
        let tick = |ts: u64| ts * 1_000_000;
        let kind_start = |next: u64| EventKind::HrtimerStart {
            hrtimer: 0xaa,
            function: "tick_sched_timer".into(),
            expires: Nanos(tick(next)),
            softexpires: Nanos(tick(next)),
            mode: "ABS".into(),
        };
        events.push(ev(0, 0, "idle", 0, kind_start(1)));
        for i in 1..=ticks {
            let t = tick(i);
            events.push(ev(
                t + 1_000,
                0,
                "spin",
                7,
                EventKind::VectorEntry { name: "local_timer".into(), vector: None },
            ));
            let now = Nanos(t + 2_000);
            events.push(ev(
                t + 2_000,
                0,
                "spin",
                7,
                EventKind::HrtimerExpireEntry { hrtimer: 0xaa, function: "tick_sched_timer".into(), now },
            ));
            events.push(ev(t + 3_000, 0, "spin", 7, kind_start(i + 1)));
        }
        let started = std::time::Instant::now();
        let all = expiries(&events);
        let took = started.elapsed();
        assert_eq!(all.len(), ticks as usize);
        assert!(all.iter().all(|x| x.lateness == Some(Nanos(2_000)) && x.skipped_by.is_none()));
        // Linear: milliseconds (debug build: well under a second); quadratic: minutes.
        assert!(took < std::time::Duration::from_secs(5), "expiries of {ticks} ticks took {took:?}");
    }

    #[test]
    fn a_timer_run_by_ktimers_is_late_by_the_threads_wait_not_by_irqs_off() {
        // PREEMPT_RT: a normal task's sleep timer expires in ktimers/1 (FIFO 1), which a FIFO 96 spinner
        // keeps off CPU 1 for 300 ms; a short irqs-off section (flags column) sits in the spinner.
        let events = crate::testing::trace(
            "
             sleeper-140  [001] d..2  10.000000: hrtimer_start: hrtimer=00000000deadbeef function=hrtimer_wakeup expires=10002000000 softexpires=10002000000 mode=REL
             sleeper-140  [001] d..2  10.000100: sched_switch: prev_comm=sleeper prev_pid=140 prev_prio=120 prev_state=S ==> next_comm=spin next_pid=133 next_prio=3
                spin-133  [001] d.h1  10.002000: local_timer_entry: vector=236
                spin-133  [001] d.h1  10.002010: hrtimer_expire_entry: hrtimer=00000000aaaaaaaa function=tick_sched_timer now=10002010000
                spin-133  [001] d.h1  10.002020: hrtimer_expire_exit: hrtimer=00000000aaaaaaaa
                spin-133  [001] d.h4  10.002030: sched_waking: comm=ktimers/1 pid=28 prio=98 target_cpu=001
                spin-133  [001] d.h1  10.002040: local_timer_exit: vector=236
                spin-133  [001] d..1  10.100000: irq_handler_entry: irq=4 name=ttyS0
                spin-133  [001] d..1  10.100050: irq_handler_exit: irq=4 ret=handled
                spin-133  [001] d..2  10.302040: sched_switch: prev_comm=spin prev_pid=133 prev_prio=3 prev_state=R ==> next_comm=ktimers/1 next_pid=28 next_prio=98
           ktimers/1-28   [001] ..s1  10.302050: softirq_entry: vec=8 [action=HRTIMER]
           ktimers/1-28   [001] ..s1  10.302060: hrtimer_expire_entry: hrtimer=00000000deadbeef function=hrtimer_wakeup now=10302060000
           ktimers/1-28   [001] ..s1  10.302070: hrtimer_expire_exit: hrtimer=00000000deadbeef
           ktimers/1-28   [001] ..s1  10.302080: softirq_exit: vec=8 [action=HRTIMER]
            ",
        );
        let tl = Timeline::build(&events);
        let all = expiries(&events);
        let late = all.iter().find(|x| x.function.to_string() == "hrtimer_wakeup").expect("the sleeper's timer");
        assert_eq!(late.lateness, Some(Nanos(300_060_000)));
        let l = explain_late(&tl, &events, late, &Default::default());
        let t = l.thread.as_ref().expect("ran in ktimers/1");
        assert_eq!((t.task.comm.as_str(), t.task.pid, t.task.prio), ("ktimers/1", 28, Some(98)));
        assert_eq!((t.woken, t.switched_in), (Nanos(10_002_030_000), Nanos(10_302_040_000)));
        assert_eq!(l.before[0].cause, CauseKind::BlockingTask);
        assert_eq!(l.before[0].culprit.pid(), Some(133));
        assert!(l.before[0].magnitude > Nanos(290_000_000), "{:?}", l.before[0]);
        assert!(l.before.iter().all(|c| c.cause != CauseKind::IrqsOff));
    }

    #[test]
    fn printed_lateness_of_seed_002_module() {
        let (l, o) = printed_lateness(
            "hrtimer stat: now: 14372743560 [us] expect_expires: 14372733903 [us], delta: 9656, next_expires: 14372744570",
        );
        assert_eq!(l, Some(Nanos(9_656_000)));
        assert_eq!(o, None);
        assert_eq!(printed_lateness("8 overruns"), (None, Some(8)));
        assert_eq!(printed_lateness("hello world"), (None, None));
    }

    #[test]
    fn lateness_pairs_start_with_expiry_and_finds_the_irqs_off_before() {
        use latscope_model::event::Toggle;
        let start = EventKind::HrtimerStart {
            hrtimer: 0xabc,
            function: "hrtimer_wakeup".into(),
            expires: Nanos(50_000),
            softexpires: Nanos(50_000),
            mode: "ABS".into(),
        };
        // The trace clock runs 1_000_000 ns ahead of the timer clock.
        let events = vec![
            ev(1_000_000, 0, "spin", 7, start),
            ev(
                1_040_000,
                0,
                "spin",
                7,
                EventKind::Preemptirq {
                    toggle: Toggle::IrqDisable,
                    caller: "a+0x1/0x9".into(),
                    parent: "b+0x2/0x9".into(),
                },
            ),
            ev(
                1_080_000,
                0,
                "spin",
                7,
                EventKind::Preemptirq {
                    toggle: Toggle::IrqEnable,
                    caller: "a+0x5/0x9".into(),
                    parent: "b+0x2/0x9".into(),
                },
            ),
            ev(1_080_100, 0, "spin", 7, EventKind::VectorEntry { name: "local_timer".into(), vector: None }),
            ev(
                1_080_200,
                0,
                "spin",
                7,
                EventKind::HrtimerExpireEntry { hrtimer: 0xabc, function: "hrtimer_wakeup".into(), now: Nanos(80_200) },
            ),
            ev(1_080_300, 0, "spin", 7, EventKind::VectorExit { name: "local_timer".into(), vector: None }),
        ];
        let tl = Timeline::build(&events);
        let all = expiries(&events);
        assert_eq!(all.len(), 1);
        assert_eq!(all[0].lateness, Some(Nanos(30_200)));
        assert_eq!(all[0].expires_at, Some(Nanos(1_050_000)));
        let r = report(&events, &tl, &all, 5, &Default::default());
        assert!((30_170..=30_230).contains(&r.stats[0].summary.max_ns), "3 significant digits");
        let late = &r.late[0];
        assert_eq!(late.irq_entry, Some(Nanos(1_080_100)));
        assert_eq!(late.before[0].cause, CauseKind::IrqsOff);
        assert_eq!(late.before[0].magnitude, Nanos(30_000));
        assert_eq!(late.before[0].culprit.chain, ["a+0x1", "b"]);
        assert_eq!(late.before[0].culprit.pid(), Some(7));
    }
}
