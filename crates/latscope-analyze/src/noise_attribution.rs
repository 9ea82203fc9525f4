//! Noise attribution: every gap a noise loop recorded (start and length on a CPU, CLOCK_MONOTONIC) is
//! matched with a trace taken at the same time and attributed to what ran in it — RT throttling of the
//! spinner, a hard IRQ, the timer tick, another vector, a softirq, an NMI, another task, idle, another
//! kernel event — or to nothing the kernel recorded at all ("hardware or hypervisor", as hwlat calls it).
//! Then summarised by cause and culprit as [`Explanation`]s: count, total, longest, share.

use crate::hrtimer::activity_components;
use crate::throttling::throttle_gaps;
use crate::timeline::Timeline;
use latscope_model::noise_result::Gap;
use latscope_model::{CauseKind, CpuId, CpuNoiseCauses, Culprit, Event, Explanation, Nanos, Pid};

/// How far outside a gap an event may fall and still count as inside it (the loop's cycle-counter
/// timestamps and the trace clock are converted separately).
pub const SLACK: Nanos = Nanos::from_us(1);

/// One CPU's recorded gaps and what is known about its run.
#[derive(Clone, Copy, Debug)]
pub struct CpuGaps<'a> {
    /// The CPU.
    pub cpu: CpuId,
    /// The spinning thread's id (trace `pid`).
    pub spinner: Pid,
    /// The recorded gaps.
    pub gaps: &'a [Gap],
    /// The noise the loop measured in total (recorded or not).
    pub measured_noise: Nanos,
    /// Steal time over the run, when known.
    pub steal_ns: Option<u64>,
}

/// What ran in a gap: the activity that took most of it, with the timer tick (the `local_timer` vector)
/// told apart from other vectors.
fn from_activity(c: Explanation) -> Explanation {
    let cause = match c.cause {
        CauseKind::Vector if c.culprit.name == "local_timer" => CauseKind::TimerTick,
        k => k,
    };
    Explanation { cause, ..c }
}

/// Attributes every gap of every CPU and summarises per CPU.
pub fn attribute(events: &[Event], cpus: &[CpuGaps<'_>]) -> Vec<CpuNoiseCauses> {
    let timeline = Timeline::build(events);
    let throttled = throttle_gaps(events, &timeline);
    cpus.iter()
        .map(|g| {
            let ts: Vec<Nanos> = events.iter().filter(|e| e.cpu == g.cpu).map(|e| e.ts).collect();
            let windows: Vec<(Nanos, Nanos)> = throttled
                .iter()
                .filter(|t| t.cpu == g.cpu && t.task.pid == g.spinner)
                .map(|t| (t.start, t.end))
                .collect();
            // Only gaps inside the trace's span on this CPU can be judged.
            let (first, last) = (ts.first().copied().unwrap_or(Nanos::ZERO), ts.last().copied().unwrap_or(Nanos::ZERO));
            let inside = |gap: &&Gap| gap.start_ns >= first && gap.end() <= last;
            let causes: Vec<Explanation> =
                g.gaps.iter().filter(inside).map(|gap| gap_cause(&timeline, &ts, &windows, g, gap)).collect();
            let mut out = summarise(g, causes);
            out.outside_trace = g.gaps.len() as u64 - out.gaps;
            out
        })
        .collect()
}

/// The cause of one gap, as an explanation of the gap's whole duration.
pub fn gap_cause(
    timeline: &Timeline,
    cpu_events: &[Nanos],
    throttled: &[(Nanos, Nanos)],
    g: &CpuGaps<'_>,
    gap: &Gap,
) -> Explanation {
    let (start, end) = (gap.start_ns, gap.end());
    let whole = |cause, culprit| Explanation::new(cause, culprit, gap.duration_ns, Some(g.cpu));
    let overlap = |(s, e): &(Nanos, Nanos)| e.min(&end).0.saturating_sub(s.max(&start).0);
    if throttled.iter().any(|w| overlap(w) * 2 >= gap.duration_ns.0) {
        return whole(CauseKind::RtThrottling, Culprit::named(crate::noise::RT_RUNTIME_SYSCTL));
    }
    let from = start.saturating_sub(SLACK);
    let first = cpu_events.partition_point(|t| *t < from);
    if !cpu_events.get(first).is_some_and(|t| *t <= end + SLACK) {
        return whole(CauseKind::NoKernelEvent, Culprit::default());
    }
    let segs = timeline.cpu(g.cpu).map(|t| t.segments_in(from, end + SLACK)).unwrap_or_default();
    let comps = activity_components(&segs, g.cpu, Some(g.spinner));
    match comps.into_iter().filter(|c| c.magnitude > Nanos::ZERO).max_by_key(|c| c.magnitude) {
        Some(c) => {
            let c = from_activity(c);
            whole(c.cause, c.culprit)
        }
        None => whole(CauseKind::OtherKernelEvent, Culprit::default()),
    }
}

/// The gaps' causes summed by cause and culprit (count, total, longest, share), largest total first.
fn summarise(g: &CpuGaps<'_>, gaps: Vec<Explanation>) -> CpuNoiseCauses {
    let n = gaps.len();
    let silent = gaps.iter().filter(|c| c.cause == CauseKind::NoKernelEvent).count();
    let mut out = latscope_model::merge_same(gaps);
    let total = out.iter().fold(Nanos::ZERO, |a, c| a + c.magnitude);
    for c in &mut out {
        c.max = Some(c.max.unwrap_or(c.magnitude));
        c.share = Some(if total.0 == 0 { 0.0 } else { c.magnitude.0 as f64 * 100.0 / total.0 as f64 });
    }
    out.sort_by(|a, b| b.magnitude.cmp(&a.magnitude).then(a.culprit.name.cmp(&b.culprit.name)));
    CpuNoiseCauses {
        cpu: g.cpu,
        gaps: n as u64,
        attributed_ns: total,
        measured_noise_ns: g.measured_noise,
        outside_trace: 0,
        no_kernel_event_pct: if n == 0 { 0.0 } else { silent as f64 * 100.0 / n as f64 },
        steal_ns: g.steal_ns.map(Nanos),
        causes: out,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ev;
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

    fn gap(start_us: u64, dur_us: u64) -> Gap {
        Gap { start_ns: Nanos::from_us(start_us), duration_ns: Nanos::from_us(dur_us) }
    }

    #[test]
    fn every_kind_of_gap_gets_its_cause() {
        let us = Nanos::from_us;
        let ms = |v: u64| v * 1000;
        let spin = ("spin", 9, 4);
        let events = vec![
            ev(us(1).0, 1, "x", 3, switch(("x", 3, 120, "S"), spin)),
            // 100 µs: a tick of 15 µs.
            ev(us(102).0, 1, "spin", 9, EventKind::VectorEntry { name: "local_timer".into(), vector: None }),
            ev(us(117).0, 1, "spin", 9, EventKind::VectorExit { name: "local_timer".into(), vector: None }),
            // 200 µs: an IRQ.
            ev(us(201).0, 1, "spin", 9, EventKind::IrqHandlerEntry { irq: 30, name: "virtio0".into() }),
            ev(us(240).0, 1, "spin", 9, EventKind::IrqHandlerExit { irq: 30, handled: true }),
            // 500 µs: a higher-priority task.
            ev(us(501).0, 1, "spin", 9, switch(("spin", 9, 4, "R+"), ("fifo", 11, 2))),
            ev(us(560).0, 1, "fifo", 11, switch(("fifo", 11, 2, "S"), spin)),
            // 10 ms: throttled for 50 ms.
            ev(us(ms(10)).0, 1, "spin", 9, switch(("spin", 9, 4, "R"), ("swapper/1", 0, 120))),
            ev(us(ms(60)).0, 1, "swapper/1", 0, switch(("swapper/1", 0, 120, "R"), spin)),
            ev(us(ms(70)).0, 1, "spin", 9, EventKind::VectorEntry { name: "local_timer".into(), vector: None }),
            ev(us(ms(70) + 5).0, 1, "spin", 9, EventKind::VectorExit { name: "local_timer".into(), vector: None }),
            // A tick outside every gap, so the trace covers the last gap.
            ev(us(ms(95)).0, 1, "spin", 9, EventKind::VectorEntry { name: "local_timer".into(), vector: None }),
            ev(us(ms(95) + 5).0, 1, "spin", 9, EventKind::VectorExit { name: "local_timer".into(), vector: None }),
        ];
        let gaps = vec![
            gap(100, 18),
            gap(200, 41),
            gap(300, 30), // nothing traced
            gap(500, 61),
            gap(ms(10), ms(50)),
            gap(ms(70), 18),
            gap(ms(80), 20), // nothing traced
        ];
        let late = [gap(ms(500), 20)];
        let outside = CpuGaps { cpu: CpuId(1), spinner: 9, gaps: &late, measured_noise: us(20), steal_ns: None };
        let o = attribute(&events, &[outside]);
        assert_eq!((o[0].gaps, o[0].outside_trace, o[0].attributed_ns), (0, 1, Nanos::ZERO));
        let measured: u64 = gaps.iter().map(|g| g.duration_ns.0).sum();
        let g = CpuGaps { cpu: CpuId(1), spinner: 9, gaps: &gaps, measured_noise: Nanos(measured), steal_ns: Some(7) };
        let out = attribute(&events, &[g]);
        assert_eq!(out.len(), 1);
        let c = &out[0];
        assert_eq!((c.gaps, c.outside_trace), (7, 0));
        assert_eq!(c.attributed_ns, Nanos(measured), "every gap is attributed once");
        assert_eq!(c.steal_ns, Some(Nanos(7)));
        assert!((c.no_kernel_event_pct - 200.0 / 7.0).abs() < 1e-9);
        let find =
            |kind: CauseKind| c.causes.iter().find(|x| x.cause == kind).cloned().unwrap_or_else(|| panic!("{kind:?}"));
        let rt = find(CauseKind::RtThrottling);
        assert_eq!((rt.count, rt.magnitude), (1, us(ms(50))));
        assert_eq!(c.causes[0].cause, CauseKind::RtThrottling, "largest first");
        let tick = find(CauseKind::TimerTick);
        assert_eq!((tick.count, tick.magnitude, tick.max), (2, us(36), Some(us(18))));
        let irq = find(CauseKind::Irq);
        assert_eq!((irq.culprit.irq, irq.culprit.name.as_str(), irq.magnitude), (Some(30), "virtio0", us(41)));
        let task = find(CauseKind::BlockingTask);
        assert_eq!(task.culprit.task, Some(latscope_model::TaskRef::new("fifo", 11, Some(2))));
        let none = find(CauseKind::NoKernelEvent);
        assert_eq!((none.count, none.magnitude), (2, us(50)));
        let share: f64 = c.causes.iter().filter_map(|x| x.share).sum();
        assert!((share - 100.0).abs() < 1e-9);
    }
}
