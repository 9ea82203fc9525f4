//! Kernel lock contention from `lock:contention_begin`/`contention_end` (Linux 5.19+): which locks were
//! waited for, by which task or interrupt, on which CPU, how often and for how long. A wait inside an
//! interrupt delays everything on its CPU; a task's wait delays that task (on PREEMPT_RT most spinlocks
//! are rt_mutexes, so a real-time thread can sleep there behind a lower-priority holder).

use crate::keep::keep_largest;
use latscope_model::event::lock_flags;
use latscope_model::{CpuId, Event, EventKind, Nanos, Pid, TaskRef};
use serde::Serialize;
use std::collections::BTreeMap;

/// Where the waiter ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitContext {
    /// In a task.
    Task,
    /// In a softirq (bottom half).
    Softirq,
    /// In a hard interrupt handler: the CPU ran nothing else meanwhile.
    Hardirq,
    /// In an NMI.
    Nmi,
}

impl WaitContext {
    fn of(e: &Event) -> WaitContext {
        if e.flags.in_nmi() {
            WaitContext::Nmi
        } else if e.flags.in_hardirq() {
            WaitContext::Hardirq
        } else if e.flags.in_softirq() {
            WaitContext::Softirq
        } else {
            WaitContext::Task
        }
    }
}

/// One wait for a contended lock, from `contention_begin` to its `contention_end`.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LockWait {
    /// The lock's address as the trace holds it (text traces print it hashed).
    pub lock: u64,
    /// The kind of lock, as the kernel prints it (`SPIN`, `MUTEX|RT`, `READ`…).
    pub kind: String,
    /// The task that waited, or the task an interrupt that waited interrupted.
    pub task: TaskRef,
    /// Its CPU when the wait began.
    pub cpu: CpuId,
    /// Where it waited.
    pub context: WaitContext,
    /// When the wait began.
    #[serde(rename = "start_ns")]
    pub start: Nanos,
    /// How long it lasted.
    #[serde(rename = "duration_ns")]
    pub duration: Nanos,
    /// Whether it got the lock (`ret=0`); false when it gave up (a signal, a timeout).
    pub acquired: bool,
    /// Index of its `contention_begin` event.
    pub index: usize,
}

impl LockWait {
    /// Longest first; of two as long, the first begun.
    fn rank(&self) -> (Nanos, std::cmp::Reverse<usize>) {
        (self.duration, std::cmp::Reverse(self.index))
    }
}

/// The waits for one lock.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ContendedLock {
    /// The lock's address as the trace holds it.
    pub lock: u64,
    /// The kind of lock.
    pub kind: String,
    /// Waits whose end the trace holds.
    pub waits: u64,
    /// Their total.
    #[serde(rename = "total_ns")]
    pub total: Nanos,
    /// The longest of them.
    pub longest: LockWait,
    /// Waits that happened in an interrupt (hard or soft) or an NMI.
    pub in_interrupt: u64,
}

/// Every contended lock, the most waited-for first, and the longest single waits.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LockReport {
    /// `contention_begin`/`contention_end` events in the trace.
    pub events: u64,
    /// Waits whose begin or end is not in the trace (it started or ended during the wait).
    pub unmatched: u64,
    /// Contended locks, largest total wait first.
    pub locks: Vec<ContendedLock>,
    /// The longest single waits, longest first (at most [`LONGEST`]).
    pub longest: Vec<LockWait>,
}

/// Who waits: a task by pid, or an interrupt by the pid it interrupted, its CPU and its context.
type Waiter = (Pid, Option<(u32, u8)>);

/// An open wait: the lock, its flags, and its `contention_begin` (index and event).
type OpenWait = (u64, u32, usize, Event);

/// Longest waits kept in the report.
pub const LONGEST: usize = 10;

/// Pairs each `contention_begin` with the `contention_end` of the same lock in the same waiter: a task
/// (which may sleep and move to another CPU meanwhile) or an interrupt (which stays on its CPU).
pub fn lock_contention(events: &[Event]) -> LockReport {
    let mut c = LockContention::default();
    for (i, e) in events.iter().enumerate() {
        c.step(i, e);
    }
    c.finish()
}

/// [`lock_contention`] one event at a time: the state is the open waits, one entry per lock waited for and
/// the longest waits.
#[derive(Default)]
pub struct LockContention {
    /// Open waits per waiter: a task by pid, an interrupt by CPU and context; innermost last.
    open: BTreeMap<Waiter, Vec<OpenWait>>,
    by_lock: BTreeMap<u64, ContendedLock>,
    longest: Vec<LockWait>,
    report: LockReport,
}

impl LockContention {
    /// The trace's event `i`.
    pub fn step(&mut self, i: usize, e: &Event) {
        let (lock, end) = match e.kind {
            EventKind::LockContentionBegin { lock, .. } => (lock, None),
            EventKind::LockContentionEnd { lock, ret } => (lock, Some(ret)),
            _ => return,
        };
        self.report.events += 1;
        let context = WaitContext::of(e);
        let waiter = (e.pid, (context != WaitContext::Task).then_some((e.cpu.0, context as u8)));
        let stack = self.open.entry(waiter).or_default();
        let Some(ret) = end else {
            if let EventKind::LockContentionBegin { flags, .. } = e.kind {
                stack.push((lock, flags, i, e.clone()));
            }
            return;
        };
        let Some(at) = stack.iter().rposition(|w| w.0 == lock) else {
            self.report.unmatched += 1;
            return;
        };
        // Waits opened after this one and never closed lost their end.
        self.report.unmatched += (stack.len() - at - 1) as u64;
        // This wait, then the ones after it go.
        let (_, flags, begin, b) = stack.swap_remove(at);
        stack.truncate(at);
        let w = LockWait {
            lock,
            kind: lock_flags::names(flags),
            task: TaskRef::new(b.comm, b.pid, None),
            cpu: b.cpu,
            context: WaitContext::of(&b),
            start: b.ts,
            duration: e.ts - b.ts,
            acquired: ret == 0,
            index: begin,
        };
        let l = self.by_lock.entry(w.lock).or_insert_with(|| ContendedLock {
            lock: w.lock,
            kind: w.kind.clone(),
            waits: 0,
            total: Nanos::ZERO,
            longest: w.clone(),
            in_interrupt: 0,
        });
        l.waits += 1;
        l.total = l.total + w.duration;
        if w.duration > l.longest.duration {
            l.longest = w.clone();
        }
        l.in_interrupt += u64::from(w.context != WaitContext::Task);
        self.longest.push(w);
        keep_largest(&mut self.longest, LONGEST, false, LockWait::rank);
    }

    /// The contended locks, the most waited-for first, and the longest waits.
    pub fn finish(mut self) -> LockReport {
        keep_largest(&mut self.longest, LONGEST, true, LockWait::rank);
        let mut report = self.report;
        report.unmatched += self.open.values().map(|s| s.len() as u64).sum::<u64>();
        report.locks = self.by_lock.into_values().collect();
        report.locks.sort_by_key(|l| (std::cmp::Reverse(l.total), l.lock));
        report.longest = self.longest;
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::Flags;

    fn ev(ts: u64, cpu: u32, pid: Pid, flags: u16, kind: EventKind) -> Event {
        Event { ts: Nanos(ts), cpu: CpuId(cpu), pid, tgid: None, comm: "t".into(), flags: Flags::with(flags), kind }
    }

    fn begin(lock: u64, flags: u32) -> EventKind {
        EventKind::LockContentionBegin { lock, flags }
    }

    fn end(lock: u64) -> EventKind {
        EventKind::LockContentionEnd { lock, ret: 0 }
    }

    #[test]
    fn pairs_waits_per_waiter_across_cpus_and_interrupts() {
        let hardirq = Flags::HARDIRQ;
        let events = vec![
            // Task 10 waits for a mutex, sleeps, and gets it on CPU 1.
            ev(1_000, 0, 10, 0, begin(0xa, lock_flags::MUTEX)),
            // Meanwhile on CPU 0 an interrupt (in task 20) spins for a spinlock 15 us.
            ev(2_000, 0, 20, hardirq, begin(0xb, lock_flags::SPIN)),
            ev(17_000, 0, 20, hardirq, end(0xb)),
            ev(51_000, 1, 10, 0, end(0xa)),
            // A begin whose end the trace lost.
            ev(60_000, 1, 30, 0, begin(0xc, lock_flags::SPIN | lock_flags::WRITE)),
        ];
        let r = lock_contention(&events);
        assert_eq!((r.events, r.unmatched), (5, 1));
        assert_eq!(r.longest.len(), 2);
        let (m, s) = (&r.longest[0], &r.longest[1]);
        assert_eq!(
            (m.lock, m.kind.as_str(), m.duration, m.cpu, m.context),
            (0xa, "MUTEX", Nanos(50_000), CpuId(0), WaitContext::Task)
        );
        assert_eq!(
            (s.lock, s.kind.as_str(), s.duration, s.context),
            (0xb, "SPIN", Nanos(15_000), WaitContext::Hardirq)
        );
        assert_eq!(
            r.locks.iter().map(|l| (l.lock, l.waits, l.in_interrupt)).collect::<Vec<_>>(),
            [(0xa, 1, 0), (0xb, 1, 1)]
        );
    }
}
