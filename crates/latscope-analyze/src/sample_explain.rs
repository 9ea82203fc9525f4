//! Explaining the samples a timer measurement took itself from a trace recorded at the same time: each
//! sample is matched to its wakeup in the trace by the measuring thread's id and its CLOCK_MONOTONIC time
//! (the trace clock is `mono`), then decomposed into timer IRQ delay, handler, interference, blocking tasks.

use crate::component::{Component, ComponentKind};
use crate::hrtimer::{self, activity_components};
use crate::timeline::Timeline;
use crate::wakeup::{decompose_task_sample, KnownSample, WakeupBreakdown, WakeupContext};
use latscope_model::{CpuId, Event, LatencyShare, Nanos, Pid, TracedWakeup};

/// A sample measured by a known thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MeasuredSample {
    /// CPU of the measuring thread.
    pub cpu: CpuId,
    /// The measuring thread's id (trace `pid`).
    pub tid: Pid,
    /// Sample number.
    pub seq: u64,
    /// Expected wakeup, CLOCK_MONOTONIC.
    pub expected: Nanos,
    /// Measured latency.
    pub latency: Nanos,
}

/// How far the trace's end of a wakeup may be from the sample's own end to be the same wakeup.
pub const MATCH_TOLERANCE: Nanos = Nanos::from_us(200);

/// Explains every sample from time-ordered `events`, in the order given.
pub fn explain_samples(events: &[Event], samples: &[MeasuredSample]) -> Vec<TracedWakeup> {
    let timeline = Timeline::build(events);
    let expiries = hrtimer::expiries(events);
    let ctx = WakeupContext { events, timeline: &timeline, expiries: &expiries };
    let first = events.first().map(|e| e.ts);
    let last = events.last().map(|e| e.ts);
    samples
        .iter()
        .map(|s| {
            let known = KnownSample { cpu: s.cpu, expected: s.expected, latency: s.latency };
            match decompose_task_sample(&ctx, known, s.tid, MATCH_TOLERANCE) {
                Some(b) => traced(s, &b),
                None if covered(first, last, s) => match not_asleep(&timeline, s) {
                    Some(t) => t,
                    None => {
                        let mut t = base(s);
                        t.note = format!("no wakeup of tid {} on CPU {} matches, and nothing else ran", s.tid, s.cpu);
                        t
                    }
                },
                None => {
                    let mut t = base(s);
                    let end = s.expected + s.latency;
                    t.note = match (first, last) {
                        (Some(f), Some(l)) if s.expected < f || end > l + MATCH_TOLERANCE => format!(
                            "outside the trace's time span ({} to {} ns): the rolling window had let it go",
                            f.0, l.0
                        ),
                        (None, _) | (_, None) => "the trace holds no events".into(),
                        _ => format!(
                            "no wakeup of tid {} on CPU {} ends within {} of the sample (events lost?)",
                            s.tid, s.cpu, MATCH_TOLERANCE
                        ),
                    };
                    t
                }
            }
        })
        .collect()
}

fn covered(first: Option<Nanos>, last: Option<Nanos>, s: &MeasuredSample) -> bool {
    // The sample's end is read after the sleeping call returned: it may follow the trace's last event.
    matches!((first, last), (Some(f), Some(l)) if f <= s.expected && s.expected + s.latency <= l + MATCH_TOLERANCE)
}

/// A sample with no wakeup in the trace: the thread was not asleep at its deadline (it was preempted
/// before it could sleep, e.g. by RT throttling), so the late part is what ran on its CPU instead.
fn not_asleep(timeline: &Timeline, s: &MeasuredSample) -> Option<TracedWakeup> {
    let segs = timeline.cpu(s.cpu)?.segments_in(s.expected, s.expected + s.latency);
    let comps = activity_components(&segs, s.cpu, Some(s.tid));
    let top = comps.iter().max_by_key(|c| c.duration)?.clone();
    let mut t = base(s);
    t.found = true;
    t.trace_latency_ns = s.latency.0;
    classify(&mut t, &comps);
    let share = top.duration.0 as f64 * 100.0 / s.latency.0.max(1) as f64;
    t.explanation = format!(
        "tid {} was not asleep at its deadline (no wakeup in the trace: it was kept off CPU {} before it could \
         sleep); {share:.0}% of the {} ({}) went to {}",
        s.tid, s.cpu, s.latency, top.duration, top.name
    );
    t.remedy = match top.prio {
        Some(p) if !(0..100).contains(&p) => "a lower-priority task ran while a real-time thread was runnable: \
            RT throttling (kernel.sched_rt_runtime_us; -1 disables it) or preemption disabled in that task"
            .into(),
        Some(_) => format!("move {} off CPU {} or raise the measuring thread's priority above it", top.name, s.cpu),
        None => "see the interference list: steer those interrupts away from this CPU".into(),
    };
    t.note = "window taken from the sample: the trace has no wakeup for it".into();
    Some(t)
}

fn base(s: &MeasuredSample) -> TracedWakeup {
    TracedWakeup {
        cpu: s.cpu,
        tid: s.tid,
        seq: s.seq,
        expected_ns: s.expected.0,
        sample_latency_ns: s.latency.0,
        ..TracedWakeup::default()
    }
}

fn share(c: &Component) -> LatencyShare {
    LatencyShare {
        kind: c.kind.as_str().to_string(),
        name: c.name.clone(),
        pid: c.pid,
        prio: c.prio,
        duration_ns: c.duration.0,
        count: c.count,
    }
}

/// Adds `c` to `list`, merging with an entry of the same kind, name and pid.
fn add(list: &mut Vec<LatencyShare>, c: &Component) {
    match list.iter_mut().find(|x| x.kind == c.kind.as_str() && x.name == c.name && x.pid == c.pid) {
        Some(x) => {
            x.duration_ns += c.duration.0;
            x.count += c.count;
        }
        None => list.push(share(c)),
    }
}

fn traced(s: &MeasuredSample, b: &WakeupBreakdown) -> TracedWakeup {
    let mut t = base(s);
    t.found = true;
    t.trace_latency_ns = b.latency.0;
    t.woken_ns = b.waking.0;
    t.switch_in_ns = b.switch_in.0;
    classify(&mut t, &b.components);
    t.remainder_ns = b.remainder;
    match b.explanation.split_once(" Remedy: ") {
        Some((what, remedy)) => {
            t.explanation = what.to_string();
            t.remedy = remedy.to_string();
        }
        None => t.explanation = b.explanation.clone(),
    }
    t
}

/// Sorts components into the timer IRQ delay, handler, interference, blocking and other shares.
fn classify(t: &mut TracedWakeup, components: &[Component]) {
    for c in components {
        match c.kind {
            ComponentKind::TimerIrqDelay => *t.timer_irq_delay_ns.get_or_insert(0) += c.duration.0,
            ComponentKind::IrqHandler => {
                *t.irq_handler_ns.get_or_insert(0) += c.duration.0;
                t.irq_handler_name.get_or_insert_with(|| c.name.clone());
            }
            ComponentKind::Irq | ComponentKind::Vector | ComponentKind::Softirq | ComponentKind::Nmi => {
                add(&mut t.interference, c)
            }
            ComponentKind::BlockingTask => add(&mut t.blocking, c),
            ComponentKind::Idle
            | ComponentKind::IrqsOff
            | ComponentKind::RtThrottling
            | ComponentKind::ReturnToUser => add(&mut t.other, c),
        }
    }
    for list in [&mut t.interference, &mut t.blocking, &mut t.other] {
        list.sort_by(|a, b| b.duration_ns.cmp(&a.duration_ns).then(a.name.cmp(&b.name)));
    }
    let sum: u64 = [&t.interference, &t.blocking, &t.other].iter().flat_map(|l| l.iter()).map(|x| x.duration_ns).sum();
    let parts = sum + t.timer_irq_delay_ns.unwrap_or(0) + t.irq_handler_ns.unwrap_or(0);
    t.remainder_ns = t.trace_latency_ns as i64 - parts as i64;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ev;
    use latscope_model::event::WakeupKind;
    use latscope_model::EventKind;

    fn switch(prev: (&str, Pid, i32, &str), next: (&str, Pid, i32)) -> EventKind {
        EventKind::SchedSwitch {
            prev_comm: prev.0.into(),
            prev_pid: prev.1,
            prev_prio: prev.2,
            prev_state: prev.3.into(),
            next_comm: next.0.into(),
            next_pid: next.1,
            next_prio: next.2,
        }
    }

    fn waking(comm: &str, pid: Pid) -> EventKind {
        EventKind::SchedWakeup { kind: WakeupKind::Waking, comm: comm.into(), pid, prio: 4, target_cpu: Some(CpuId(1)) }
    }

    /// Two threads wake at the same time on CPU 1 behind a spinner; only the measuring tid's is matched.
    #[test]
    fn matches_by_tid_and_time_and_splits_the_shares() {
        let us = |v: u64| v * 1000;
        let events = vec![
            ev(us(10), 1, "t", 50, switch(("t", 50, 4, "S"), ("spin", 60, 2))),
            ev(us(103), 1, "spin", 60, EventKind::VectorEntry { name: "local_timer".into(), vector: None }),
            ev(us(105), 1, "spin", 60, waking("other", 51)),
            ev(us(105), 1, "spin", 60, waking("t", 50)),
            ev(us(108), 1, "spin", 60, EventKind::VectorExit { name: "local_timer".into(), vector: None }),
            ev(us(400), 1, "spin", 60, EventKind::IrqHandlerEntry { irq: 30, name: "virtio0".into() }),
            ev(us(420), 1, "spin", 60, EventKind::IrqHandlerExit { irq: 30, handled: true }),
            ev(us(600), 1, "spin", 60, switch(("spin", 60, 2, "S"), ("other", 51, 3))),
            ev(us(650), 1, "other", 51, switch(("other", 51, 3, "S"), ("t", 50, 4))),
            ev(us(652), 1, "t", 50, EventKind::SysExit { nr: Some(230), name: None, ret: 0 }),
            ev(us(900), 1, "t", 50, switch(("t", 50, 4, "S"), ("swapper/1", 0, 120))),
        ];
        let s = MeasuredSample { cpu: CpuId(1), tid: 50, seq: 7, expected: Nanos(us(100)), latency: Nanos(us(551)) };
        let missing = MeasuredSample { seq: 8, expected: Nanos(us(5_000)), ..s };
        let out = explain_samples(&events, &[s, missing]);
        assert_eq!(out.len(), 2);
        let t = &out[0];
        assert!(t.found, "{t:?}");
        assert_eq!(t.trace_latency_ns, us(552));
        assert_eq!((t.woken_ns, t.switch_in_ns), (us(105), us(650)));
        assert_eq!(t.timer_irq_delay_ns, Some(us(3)));
        assert_eq!(t.irq_handler_ns, Some(us(5)));
        assert_eq!(t.irq_handler_name.as_deref(), Some("local_timer"));
        assert_eq!(t.blocking.len(), 2, "{:?}", t.blocking);
        assert_eq!((t.blocking[0].name.as_str(), t.blocking[0].pid), ("spin", Some(60)));
        assert_eq!(t.blocking[0].duration_ns, us(472), "spinner time minus the virtio0 interrupt");
        assert_eq!((t.blocking[1].name.as_str(), t.blocking[1].duration_ns), ("other", us(50)));
        assert_eq!(t.interference[0].name, "virtio0");
        assert_eq!(t.interference[0].duration_ns, us(20));
        assert_eq!(t.remainder_ns, 0);
        assert!(t.explanation.contains("spin (pid 60"), "{}", t.explanation);
        assert!(t.remedy.starts_with("move spin off CPU 1"), "{}", t.remedy);
        assert!(!out[1].found);
        assert!(out[1].note.contains("outside"), "{}", out[1].note);
        // Runnable at its deadline (no wakeup): what ran instead is the explanation.
        let busy = MeasuredSample { seq: 9, expected: Nanos(us(300)), latency: Nanos(us(50)), ..s };
        let b = &explain_samples(&events, &[busy])[0];
        assert!(b.found && b.note.contains("no wakeup"), "{b:?}");
        assert_eq!((b.blocking[0].name.as_str(), b.blocking[0].duration_ns), ("spin", us(50)), "{b:?}");
        assert_eq!(b.remainder_ns, 0);
        assert!(b.remedy.contains("move spin off CPU 1"), "{}", b.remedy);
    }
}
