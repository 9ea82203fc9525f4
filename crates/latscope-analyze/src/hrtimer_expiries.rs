//! [`Expiries`]: every hrtimer expiry paired with its timer's last traced start, one event at a time (see
//! [`crate::hrtimer`] for what lateness the trace proves), and the tick period per CPU it needs
//! ([`TickPeriods`], a pass of its own before it: the whole trace's smallest step between two ticks).

use crate::hrtimer::{printed_at, ExpiryStats, HrtimerExpiry, HrtimerReport, PrintedLateness};
use latscope_model::{CpuId, Event, EventKind, Nanos};
use rustc_hash::FxHashMap;

/// Pairs every `hrtimer_expire_entry` with the last `hrtimer_start` of the same timer; an expiry whose start an
/// earlier expiry pass on its CPU passed by gets no lateness (see the module's note).
pub fn expiries(events: &[Event]) -> Vec<HrtimerExpiry> {
    let mut periods = TickPeriods::default();
    for e in events {
        periods.step(e);
    }
    let mut x = Expiries::new(periods.finish());
    events.iter().enumerate().filter_map(|(i, e)| x.step(i, e)).collect()
}

/// The tick period per CPU: the smallest step between consecutive traced expiries of its tick (the NOHZ code
/// only ever moves the tick by whole periods), one event at a time.
#[derive(Default)]
pub struct TickPeriods {
    last: FxHashMap<u64, Nanos>,
    out: FxHashMap<CpuId, Nanos>,
}

impl TickPeriods {
    /// The trace's next event.
    pub fn step(&mut self, e: &Event) {
        let EventKind::HrtimerStart { hrtimer, function, expires, .. } = &e.kind else { return };
        if !is_tick(function) {
            return;
        }
        if let Some(prev) = self.last.insert(*hrtimer, *expires) {
            if *expires >= prev + MIN_TICK_PERIOD {
                let step = *expires - prev;
                self.out.entry(e.cpu).and_modify(|p| *p = (*p).min(step)).or_insert(step);
            }
        }
    }

    /// The period per CPU whose tick was seen re-armed.
    pub fn finish(self) -> FxHashMap<CpuId, Nanos> {
        self.out
    }
}

/// [`expiries`] one event at a time, given the tick periods: the state is per timer started and per CPU, and
/// the expiry passes of each CPU since the oldest start still pending.
pub struct Expiries {
    periods: FxHashMap<CpuId, Nanos>,
    started: FxHashMap<u64, (Nanos, usize)>,
    /// A cancel inside the interrupt that then runs the timer is __run_hrtimer removing it from the queue; any
    /// other cancel really cancelled the start.
    cancelled: FxHashMap<u64, (Nanos, usize, Nanos)>,
    soft_mode: FxHashMap<u64, bool>,
    irq_entry: FxHashMap<CpuId, Nanos>,
    softirq_entry: FxHashMap<CpuId, Nanos>,
    passes: FxHashMap<CpuId, Vec<Pass>>,
    /// Per CPU, the time of its last event in a task (not the idle task).
    /// (By CPU number: this is written on every event.)
    last_busy: Vec<Option<Nanos>>,
    /// Expiries since the passes were last trimmed.
    since_trim: usize,
}

impl Expiries {
    /// A pass with the tick `periods` of the whole trace ([`TickPeriods`]).
    pub fn new(periods: FxHashMap<CpuId, Nanos>) -> Expiries {
        Expiries {
            periods,
            started: FxHashMap::default(),
            cancelled: FxHashMap::default(),
            soft_mode: FxHashMap::default(),
            irq_entry: FxHashMap::default(),
            softirq_entry: FxHashMap::default(),
            passes: FxHashMap::default(),
            last_busy: Vec::new(),
            since_trim: 0,
        }
    }

    /// The trace's event `i`: the expiry it is, if any.
    pub fn step(&mut self, i: usize, e: &Event) -> Option<HrtimerExpiry> {
        if e.pid != 0 && !matches!(e.kind, EventKind::Stack { .. } | EventKind::Lost { .. }) {
            // A CPU number past any machine's (a corrupted trace's) is not followed.
            let cpu = e.cpu.0 as usize;
            if cpu >= self.last_busy.len() && cpu < MAX_CPUS {
                self.last_busy.resize(cpu + 1, None);
            }
            if let Some(b) = self.last_busy.get_mut(cpu) {
                *b = Some(e.ts);
            }
        }
        match &e.kind {
            EventKind::VectorEntry { name, .. } => {
                self.irq_entry.insert(e.cpu, e.ts);
                if &**name == "local_timer" {
                    // hrtimer_interrupt reads its clock after this entry and runs every hard timer due by then.
                    self.passes.entry(e.cpu).or_default().push(Pass {
                        soft: false,
                        at: Some(e.ts),
                        id: e.ts,
                        now: None,
                        index: i,
                    });
                }
                None
            }
            EventKind::IrqHandlerEntry { .. } => {
                self.irq_entry.insert(e.cpu, e.ts);
                None
            }
            EventKind::SoftirqEntry { .. } => {
                self.softirq_entry.insert(e.cpu, e.ts);
                None
            }
            EventKind::HrtimerStart { hrtimer, expires, mode, .. } => {
                self.cancelled.remove(hrtimer);
                self.started.insert(*hrtimer, (*expires, i));
                self.soft_mode.insert(*hrtimer, mode.contains("SOFT"));
                None
            }
            EventKind::HrtimerCancel { hrtimer } => {
                if let Some((expires, idx)) = self.started.remove(hrtimer) {
                    self.cancelled.insert(*hrtimer, (expires, idx, e.ts));
                }
                None
            }
            EventKind::HrtimerExpireEntry { hrtimer, function, now } => {
                let x = self.expiry(i, e, *hrtimer, function, *now);
                self.since_trim += 1;
                if self.since_trim >= TRIM_EVERY {
                    self.trim(e.ts);
                }
                Some(x)
            }
            _ => None,
        }
    }

    fn expiry(
        &mut self,
        i: usize,
        e: &Event,
        hrtimer: u64,
        function: &latscope_model::Text,
        now: Nanos,
    ) -> HrtimerExpiry {
        let soft = expiry_is_soft(e, self.soft_mode.get(&hrtimer).copied());
        let context = if soft { self.softirq_entry.get(&e.cpu) } else { self.irq_entry.get(&e.cpu) };
        let entry = context.copied().filter(|c| *c <= e.ts);
        let entry_or_ts = entry.unwrap_or(e.ts);
        let start = self.started.remove(&hrtimer).or_else(|| {
            self.cancelled.remove(&hrtimer).filter(|c| c.2 >= entry_or_ts && c.2 <= e.ts).map(|c| (c.0, c.1))
        });
        // Map the timer clock to trace time with this event's own (ts, now) pair: the clock was read before the
        // event, so the mapped expiry is never earlier than the true one.
        let offset = e.ts.0 as i128 - now.0 as i128;
        let cpu_passes = self.passes.entry(e.cpu).or_default();
        let skipped_by = start.and_then(|(expires, start_index)| {
            let at = Nanos((expires.0 as i128 + offset).max(0) as u64);
            skipping_pass(cpu_passes, soft, start_index, expires, at, offset, entry_or_ts)
        });
        // The tick of a CPU idle since before the traced expiry, run a period or more late: NOHZ idle moved it
        // when the CPU went idle.
        let idle_tick_period = start.filter(|_| skipped_by.is_none() && e.pid == 0).and_then(|(x, _)| {
            let period = *self.periods.get(&e.cpu)?;
            let at = Nanos((x.0 as i128 + offset).max(0) as u64);
            let idle = self.last_busy.get(e.cpu.0 as usize).copied().flatten().map_or(true, |b| b < at);
            (is_tick(function) && idle && now >= x + period).then_some(period)
        });
        let (expires_at, lateness) = match start {
            Some((expires, _)) if skipped_by.is_none() && idle_tick_period.is_none() => {
                let at = (expires.0 as i128 + offset).max(0) as u64;
                (Some(Nanos(at)), Some(now - expires))
            }
            _ => (None, None),
        };
        cpu_passes.push(Pass { soft, at: entry, id: entry_or_ts, now: Some((now, offset)), index: i });
        HrtimerExpiry {
            cpu: e.cpu,
            ts: e.ts,
            hrtimer,
            function: function.clone(),
            expires_at,
            lateness,
            index: i,
            start_index: start.map(|s| s.1),
            skipped_by,
            idle_tick_period,
        }
    }

    /// Forgets the passes before the oldest start still pending (only passes after a start are looked at), all
    /// but the last [`MAX_PASSES`] of a CPU, and cancels older than a second before `now` (one is looked at only
    /// in the interrupt that cancelled it).
    fn trim(&mut self, now: Nanos) {
        self.since_trim = 0;
        self.cancelled.retain(|_, c| c.2 + CANCEL_HORIZON >= now);
        let oldest = self.started.values().map(|s| s.1).chain(self.cancelled.values().map(|c| c.1)).min();
        for p in self.passes.values_mut() {
            let before = oldest.map_or(p.len(), |o| p.partition_point(|x| x.index <= o));
            p.drain(..before.max(p.len().saturating_sub(MAX_PASSES)));
        }
    }
}

/// The whole trace's hrtimer statistics one record at a time: an [`HrtimerReport`] without its late expiries
/// (those are explained in their windows).
pub struct HrtimerStream {
    expiries: Expiries,
    stats: ExpiryStats,
    printed: Vec<PrintedLateness>,
    index: usize,
}

impl HrtimerStream {
    /// A pass with the tick `periods` of the whole trace ([`TickPeriods`]).
    pub fn new(periods: FxHashMap<CpuId, Nanos>) -> HrtimerStream {
        HrtimerStream { expiries: Expiries::new(periods), stats: ExpiryStats::default(), printed: Vec::new(), index: 0 }
    }

    /// The trace's next record.
    pub fn step(&mut self, e: &Event) {
        if let Some(x) = self.expiries.step(self.index, e) {
            self.stats.add(&x);
        }
        self.printed.extend(printed_at(self.index, e));
        self.index += 1;
    }

    /// The counts, statistics, histogram and printed lateness.
    pub fn finish(self) -> HrtimerReport {
        HrtimerReport { printed: self.printed, ..self.stats.finish() }
    }
}

/// CPU numbers followed for [`Expiries`]'s last busy time.
const MAX_CPUS: usize = 1 << 16;

/// Expiries between two trims of the passes.
const TRIM_EVERY: usize = 4096;

/// Most expiry passes kept per CPU (1 MB; a CPU makes a few thousand a second). A start older than them
/// (a timer pending for tens of seconds) is judged on the passes kept: every pass after its expiry passed it by,
/// so only which of them `skipped_by` names can change.
const MAX_PASSES: usize = 20_000;

/// How long a cancel is kept: longer than any interrupt runs.
const CANCEL_HORIZON: Nanos = Nanos::from_ms(1000);

/// Whether an hrtimer callback is the scheduler tick.
fn is_tick(function: &str) -> bool {
    matches!(function, "tick_nohz_handler" | "tick_sched_timer")
}

/// A tick period shorter than this is not one (HZ is at most a few thousand).
const MIN_TICK_PERIOD: Nanos = Nanos(100_000);

/// One run of a CPU's hrtimer queues, as the trace shows it: a timer interrupt's entry or a timer's expiry.
#[derive(Clone, Copy, Debug)]
struct Pass {
    /// Run from the hrtimer softirq (soft timers) rather than the timer interrupt (hard timers).
    soft: bool,
    /// Trace time no later than the clock reading the run expired timers against: its context's entry.
    at: Option<Nanos>,
    /// Which run it is: the entry of its context (or the event's own time when that is not traced).
    id: Nanos,
    /// The clock reading itself (an expiry's `now`) and its offset to trace time, which tells its clock base.
    now: Option<(Nanos, i128)>,
    /// Index of the event that shows the run.
    index: usize,
}

/// Two offsets between trace time and a timer clock this close belong to one clock base (bases differ by
/// seconds or more: realtime and TAI from monotonic; boottime by the time suspended).
const SAME_BASE: i128 = 100_000_000;

/// The first pass on the CPU, after the timer's start and before the run that expired it (`run`), that
/// would have run it had it still been queued with `expires` (trace time `at`).
fn skipping_pass(
    passes: &[Pass],
    soft: bool,
    start_index: usize,
    expires: Nanos,
    at: Nanos,
    offset: i128,
    run: Nanos,
) -> Option<usize> {
    passes[first_after(passes, start_index)..]
        .iter()
        .filter(|p| p.soft == soft && p.id < run)
        .find(|p| {
            let by_time = p.at.is_some_and(|t| t > at);
            let by_clock = p.now.is_some_and(|(now, o)| (o - offset).abs() < SAME_BASE && now > expires);
            by_time || by_clock
        })
        .map(|p| p.index)
}

/// The first of `passes` (kept in event order) after event `start_index`. Those after a timer's start are a
/// suffix, short for a timer started recently (most are: a period ago), so it is found by galloping back from the
/// end, then bisecting: O(log n) of the passes after the start, not of all kept (scanning from the first made
/// lateness quadratic in the trace, 20 s for 1 M events; bisecting all of them was 5 % of a windowed analysis).
fn first_after(passes: &[Pass], start_index: usize) -> usize {
    let (mut hi, mut step) = (passes.len(), 1);
    while hi > 0 {
        let probe = hi.saturating_sub(step);
        if passes[probe].index <= start_index {
            return probe + 1 + passes[probe + 1..hi].partition_point(|p| p.index <= start_index);
        }
        hi = probe;
        step *= 2;
    }
    0
}

/// Whether an expiry ran from the hrtimer softirq: its context flags when the format shows them, else the
/// timer's mode from its start.
fn expiry_is_soft(e: &Event, mode_soft: Option<bool>) -> bool {
    use latscope_model::Flags;
    if e.flags.bits & Flags::KNOWN != 0 {
        return e.flags.bits & Flags::HARDIRQ == 0 && e.flags.bits & Flags::SOFTIRQ != 0;
    }
    mode_soft.unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_pass_after_a_start_galloping_from_the_end_is_the_bisections() {
        let passes: Vec<Pass> = [3usize, 5, 8, 13, 21, 34, 55]
            .iter()
            .map(|&index| Pass { soft: false, at: None, id: Nanos(0), now: None, index })
            .collect();
        for start in 0..60 {
            for n in 0..=passes.len() {
                let p = &passes[..n];
                assert_eq!(first_after(p, start), p.partition_point(|x| x.index <= start), "start {start}, {n} passes");
            }
        }
    }
}
