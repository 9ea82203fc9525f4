//! Silence: the longest stretch on one CPU with no kernel event inside a span the trace does show (an
//! interrupt from its entry to its exit). What filled it the trace cannot say: the code that ran there
//! (with no event of its own), or a CPU stalled below the kernel (a hypervisor, an SMI).

use latscope_model::{CpuId, Event, Nanos};

/// A silent stretch: the events that bound it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Silence {
    /// The last event before it (its index in the analysed slice).
    pub before: usize,
    /// The first event after it.
    pub after: usize,
    /// When it started (the time of `before`).
    pub start: Nanos,
    /// When it ended (the time of `after`).
    pub end: Nanos,
}

impl Silence {
    /// Its length.
    pub fn duration(&self) -> Nanos {
        self.end - self.start
    }
}

/// The longest stretch between consecutive events of `cpu` among `events[from..=to]` (the first longest when
/// several tie); `None` when the range holds fewer than two events of that CPU.
pub fn longest(events: &[Event], cpu: CpuId, from: usize, to: usize) -> Option<Silence> {
    let to = to.min(events.len().checked_sub(1)?);
    let mut best: Option<Silence> = None;
    let mut last: Option<usize> = None;
    for i in (from..=to).filter(|&i| events[i].cpu == cpu) {
        if let Some(p) = last {
            let s = Silence { before: p, after: i, start: events[p].ts, end: events[i].ts };
            if !best.is_some_and(|b| s.duration() <= b.duration()) {
                best = Some(s);
            }
        }
        last = Some(i);
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::trace;

    #[test]
    fn finds_the_longest_gap_of_the_cpu_only() {
        // A timer interrupt of this machine's recording; CPU 0's event does not break CPU 1's silence.
        let events = trace(
            "swapper/1-0 [001] d.h1. 65943.339989608: local_timer_entry: vector=236
swapper/1-0 [001] d.h1. 65943.339990308: hrtimer_expire_entry: hrtimer=ffffc900076c7c68 function=hrtimer_wakeup now=65943339990016
sh-9 [000] d..2. 65943.340001000: sched_switch: prev_comm=sh prev_pid=9 prev_prio=120 prev_state=S ==> next_comm=swapper/0 next_pid=0 next_prio=120
swapper/1-0 [001] dNh1. 65943.339992068: hrtimer_expire_exit: hrtimer=ffffc900076c7c68
swapper/1-0 [001] dNh1. 65943.340901247: local_timer_exit: vector=236
",
        );
        let s = longest(&events, CpuId(1), 0, 4).expect("a silence");
        // The decoder orders the events by time: CPU 0's comes fourth.
        assert_eq!((s.before, s.after, s.duration()), (2, 4, Nanos(909_179)));
        assert_eq!(longest(&events, CpuId(1), 0, 9).map(|s| s.after), Some(4), "clamped to the slice");
        assert_eq!(longest(&events, CpuId(0), 0, 4), None, "one event is no stretch");
        assert_eq!(longest(&[], CpuId(1), 0, 0), None);
    }
}
