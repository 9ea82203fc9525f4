//! Priority inheritance from `sched_pi_setprio`: which tasks were boosted, to what priority, how often and
//! for how long. A boost means a higher-priority task waited on an rt_mutex the boosted task held (on
//! PREEMPT_RT every `spinlock_t` and `rwlock_t` is one), so that task's latency included the holder's
//! critical section.

use latscope_model::{CpuId, Event, EventKind, Nanos, Pid, TaskRef};
use serde::Serialize;
use std::collections::BTreeMap;

/// The boosts of one task.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct PiBoost {
    /// The boosted task (the lock holder), with its priority before the first boost.
    pub task: TaskRef,
    /// CPU of its first boost event.
    pub cpu: CpuId,
    /// Boosts (priority raised from the task's own).
    pub count: u64,
    /// The highest priority it was given (kernel prio: the lowest number seen).
    pub top_prio: i32,
    /// Time spent boosted, over the boosts whose end the trace holds.
    #[serde(rename = "boosted_ns")]
    pub boosted: Nanos,
    /// The longest single boost.
    #[serde(rename = "longest_ns")]
    pub longest: Nanos,
    /// Index of its first `sched_pi_setprio` event.
    pub first_index: usize,
}

/// Every boosted task, the longest boosted first.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct PiReport {
    /// `sched_pi_setprio` events in the trace.
    pub events: u64,
    /// Boosted tasks.
    pub boosts: Vec<PiBoost>,
}

/// Pairs each task's boost (priority raised above its own) with its end (priority back to its own).
pub fn pi_boosts(events: &[Event]) -> PiReport {
    let mut p = PiBoosts::default();
    for (i, e) in events.iter().enumerate() {
        p.step(i, e);
    }
    p.finish()
}

/// [`pi_boosts`] one event at a time: the state is one entry per boosted task.
#[derive(Default)]
pub struct PiBoosts {
    /// Per task: its entry in `out` and, while boosted, the boost's start and the task's own priority.
    state: BTreeMap<Pid, (usize, Option<(Nanos, i32)>)>,
    out: Vec<PiBoost>,
    events: u64,
}

impl PiBoosts {
    /// The trace's event `i`.
    pub fn step(&mut self, i: usize, e: &Event) {
        let EventKind::SchedPiSetprio { comm, pid, oldprio, newprio } = &e.kind else { return };
        self.events += 1;
        let out = &mut self.out;
        let (slot, open) = self.state.entry(*pid).or_insert_with(|| {
            out.push(PiBoost {
                task: TaskRef::new(*comm, *pid, Some(*oldprio)),
                cpu: e.cpu,
                count: 0,
                top_prio: *oldprio,
                boosted: Nanos::ZERO,
                longest: Nanos::ZERO,
                first_index: i,
            });
            (out.len() - 1, None)
        });
        let b = &mut out[*slot];
        b.top_prio = b.top_prio.min(*newprio);
        match *open {
            None if newprio < oldprio => {
                b.count += 1;
                *open = Some((e.ts, *oldprio));
            }
            Some((start, own)) if *newprio >= own => {
                let d = e.ts - start;
                b.boosted = b.boosted + d;
                b.longest = b.longest.max(d);
                *open = None;
            }
            _ => {}
        }
    }

    /// Every boosted task, the longest boosted first.
    pub fn finish(mut self) -> PiReport {
        self.out.sort_by_key(|b| (std::cmp::Reverse(b.boosted), std::cmp::Reverse(b.count)));
        PiReport { events: self.events, boosts: self.out }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::trace;

    #[test]
    fn a_boost_and_its_end_are_paired_per_task() {
        // As 6.1-rt prints them: the serial console's IRQ thread (FIFO 50, prio 49) boosting a writer.
        let events = trace(
            "
            sh-131 [001] d..2 15.000100: sched_pi_setprio: comm=sh pid=131 oldprio=120 newprio=49
            sh-131 [001] d..2 15.000400: sched_pi_setprio: comm=sh pid=131 oldprio=49 newprio=120
            sh-131 [001] d..2 15.002000: sched_pi_setprio: comm=sh pid=131 oldprio=120 newprio=49
            sh-131 [001] d..2 15.002100: sched_pi_setprio: comm=sh pid=131 oldprio=49 newprio=120
            rcu-17 [000] d..2 15.003000: sched_pi_setprio: comm=kworker/0:1 pid=40 oldprio=120 newprio=98
        ",
        );
        let r = pi_boosts(&events);
        assert_eq!(r.events, 5);
        assert_eq!(r.boosts.len(), 2);
        let sh = &r.boosts[0];
        assert_eq!((sh.task.pid, sh.count, sh.top_prio, sh.task.prio), (131, 2, 49, Some(120)));
        assert_eq!((sh.boosted, sh.longest), (Nanos(400_000), Nanos(300_000)));
        // Boosted and not seen ending: counted, no time.
        assert_eq!((r.boosts[1].count, r.boosts[1].boosted), (1, Nanos::ZERO));
    }
}
