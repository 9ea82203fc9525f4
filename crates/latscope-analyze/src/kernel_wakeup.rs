//! A wakeup latency tracer's max-latency trace (`wakeup_rt`, `wakeup_dl`: the header and the records the
//! kernel kept for its worst wakeup) read into [`KernelWakeup`]: the woken task, the task running where it
//! was woken, and the task its CPU ran until it switched to it.

use latscope_model::{Event, EventKind, KernelWakeup, LatencyHeader, Nanos, TracerTask};

/// What the trace says about its worst wakeup. `ran_in`, `function_trace` and `ours` are the caller's to fill.
/// Where the header or a record is missing, the field stays empty and a note says what is not known.
pub fn kernel_wakeup(header: Option<&LatencyHeader>, events: &[Event]) -> KernelWakeup {
    let mut k = KernelWakeup { entries: events.len() as u64, ..KernelWakeup::default() };
    let Some(h) = header else {
        k.notes.push("the trace holds no latency header: which task the worst wakeup was is not known".into());
        return k;
    };
    k.tracer = h.tracer.clone();
    k.latency = h.latency;
    k.cpu = h.cpu;
    k.rt_prio = h.task.as_ref().and_then(|t| t.rt_prio);
    let woken = h.task.as_ref().map(|t| t.pid);
    // The buffer holds the records since the tracer last cleared it, not only the worst wakeup's: the worst is
    // the last switch to the header's task and the last wakeup of it before that switch.
    let switch_at = events.iter().rposition(
        |e| matches!(&e.kind, EventKind::SchedSwitch { next_pid, .. } if woken.map_or(true, |w| w == *next_pid)),
    );
    let switch = switch_at.and_then(|i| match &events[i].kind {
        EventKind::SchedSwitch { prev_comm, prev_pid, prev_prio, next_pid, next_prio, .. } => {
            Some((&events[i], prev_comm, *prev_pid, *prev_prio, *next_pid, *next_prio))
        }
        _ => None,
    });
    let woken = woken.or(switch.map(|s| s.4));
    let wakeup = events[..switch_at.unwrap_or(events.len())].iter().rev().find_map(|e| match &e.kind {
        EventKind::SchedWakeup { comm, pid, prio, .. } if woken.map_or(true, |w| w == *pid) => {
            Some((e, comm, *pid, *prio))
        }
        _ => None,
    });
    if let (Some(w), Some(s)) = (wakeup, switch) {
        let apart = s.0.ts.saturating_sub(w.0.ts);
        let off = apart.0.abs_diff(h.latency.0);
        if h.latency > Nanos::ZERO && off > (h.latency.0 / 4).max(100_000) {
            k.notes.push(format!(
                "the last wakeup and switch records of the task are {apart} apart where the kernel states {}: the \
                 records may belong to another of its wakeups",
                h.latency
            ));
        }
    }
    k.task = match (&h.task, wakeup) {
        (Some(t), w) => Some(TracerTask { comm: t.comm.clone(), pid: t.pid, prio: w.map(|w| w.3) }),
        (None, Some((_, comm, pid, prio))) => Some(TracerTask { comm: comm.to_string(), pid, prio: Some(prio) }),
        (None, None) => None,
    };
    match wakeup {
        Some((e, ..)) => k.waker = Some(TracerTask { comm: e.comm.to_string(), pid: e.pid, prio: None }),
        None => k.notes.push("the trace holds no wakeup record of the woken task: who woke it is not known".into()),
    }
    match switch {
        Some((_, comm, pid, prio, _, next_prio)) => {
            k.before = Some(TracerTask { comm: comm.to_string(), pid, prio: Some(prio) });
            if let Some(t) = k.task.as_mut().filter(|t| t.prio.is_none()) {
                t.prio = Some(next_prio);
            }
        }
        None => k.notes.push(
            "the trace holds no switch record to the woken task: what ran on its CPU until the switch is not known"
                .into(),
        ),
    }
    k
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::CpuId;

    fn read(text: &str) -> KernelWakeup {
        let t = latscope_decode::decode_bytes("wakeup_rt.txt", text.as_bytes()).expect("decodes");
        kernel_wakeup(t.info.latency.as_ref(), &t.events)
    }

    #[test]
    fn names_the_woken_task_its_waker_and_what_ran_before_the_switch() {
        // The kernel documentation's wakeup_rt trace (fixtures/latency/wakeup_rt-3.8-doc-nofunc.txt).
        let text = include_str!("../../../fixtures/latency/wakeup_rt-3.8-doc-nofunc.txt");
        let k = read(text);
        assert_eq!((k.tracer.as_str(), k.latency, k.cpu), ("wakeup_rt", Nanos::from_us(5), Some(CpuId(3))));
        let task = k.task.as_ref().expect("task");
        assert_eq!((task.comm.as_str(), task.pid, task.prio, k.rt_prio), ("sleep", 2389, Some(94), Some(5)));
        assert_eq!(k.waker.as_ref().map(|w| (w.comm.as_str(), w.pid)), Some(("<idle>", 0)));
        let before = k.before.as_ref().expect("before");
        assert_eq!((before.pid, before.prio), (0, Some(120)));
        assert!(k.notes.is_empty(), "{:?}", k.notes);
    }

    #[test]
    fn a_spinner_held_the_cpu_until_the_switch() {
        // A FIFO 95 thread (prio 4) woken from the idle task on CPU 1, switched in 48 ms later from a task of
        // pid 130 at prio 120 (hand-written in 6.1's latency format).
        let text = "\
# tracer: wakeup_rt
#
# wakeup_rt latency trace v1.1.5 on 6.1.0-56-rt-amd64
# --------------------------------------------------------------------
# latency: 48123 us, #3/3, CPU#1 | (M:preempt VP:0, KP:0, SP:0 HP:0 #P:2)
#    -----------------
#    | task: latscope-timer-128 (uid:0 nice:0 policy:1 rt_prio:95)
#    -----------------
#
  <idle>-0       1d.h4    0us :      0:120:R   + [001]   128:  4:R latscope-timer
  <idle>-0       1d.h4    2us : try_to_wake_up <-hrtimer_wakeup
 spinner-130     1d..3 48123us :    130:120:R ==> [001]   128:  4:R latscope-timer
";
        let k = read(text);
        assert_eq!(k.latency, Nanos::from_us(48_123));
        assert_eq!(k.task.as_ref().map(|t| (t.comm.as_str(), t.pid, t.prio)), Some(("latscope-timer", 128, Some(4))));
        assert_eq!(k.before.as_ref().map(|b| (b.pid, b.prio)), Some((130, Some(120))));
        assert_eq!(k.waker.as_ref().map(|w| w.pid), Some(0));
    }

    #[test]
    fn a_real_wakeup_rt_trace_of_a_thread_held_by_rt_throttling() {
        // Debian 6.1-rt under qemu: latscope's FIFO 95 thread woken on CPU 1 while RT throttling kept every
        // real-time task off it (fixtures/README.md); latscope measured 50.18 ms for the same wakeup.
        let k = read(include_str!("../../../fixtures/latency/wakeup_rt-6.1-rt-qemu-rt-throttled.txt"));
        assert_eq!((k.tracer.as_str(), k.latency, k.cpu), ("wakeup_rt", Nanos::from_us(49_826), Some(CpuId(1))));
        assert_eq!(k.task.as_ref().map(|t| (t.comm.as_str(), t.pid, t.prio)), Some(("latscope-t1", 278, Some(4))));
        assert_eq!(k.rt_prio, Some(95));
        assert_eq!(k.waker.as_ref().map(|w| w.pid), Some(0));
        assert_eq!(k.before.as_ref().map(|b| (b.comm.as_str(), b.pid, b.prio)), Some(("<idle>", 0, Some(120))));
        assert!(k.notes.is_empty(), "{:?}", k.notes);
    }

    #[test]
    fn an_empty_trace_says_nothing_was_recorded() {
        let k = read("# tracer: wakeup_rt\n#\n");
        assert_eq!(k.latency, Nanos::ZERO);
        assert!(k.task.is_none() && !k.notes.is_empty(), "{k:?}");
    }
}
