//! The text of `timer --wakeup-tracer`: the worst wakeup the kernel's wakeup latency tracer measured, beside
//! latscope's own worst wakeup.

use latscope_model::{KernelWakeup, Nanos, TimerResult, TracerTask};
use std::io::{self, Write};

/// A task with its scheduling class read from the kernel priority (`SCHED_FIFO/RR 95` for 4).
fn task(t: &TracerTask) -> String {
    let class = match t.prio {
        Some(p) if p < 0 => ", SCHED_DEADLINE".to_string(),
        Some(p) if p < 100 => format!(", SCHED_FIFO/RR {}", 99 - p),
        Some(p) => format!(", prio {p}"),
        None => String::new(),
    };
    format!("{} (pid {}{class})", t.comm, t.pid)
}

/// The section, when the run had the tracer.
pub fn write_kernel_wakeup(out: &mut dyn Write, r: &TimerResult) -> io::Result<()> {
    let Some(k) = &r.kernel_wakeup else { return Ok(()) };
    let tracer = if k.tracer.is_empty() { "wakeup" } else { &k.tracer };
    let ft = if k.function_trace { "function tracing on" } else { "function tracing off" };
    writeln!(out)?;
    writeln!(out, "The kernel's {tracer} tracer ({}, {ft}):", k.ran_in)?;
    let ours = r.worst_first().first().map(|(cpu, w)| format!("{} on CPU {cpu}", Nanos(w.latency_ns)));
    match &k.task {
        Some(t) if k.latency > Nanos::ZERO || k.before.is_some() => {
            let cpu = k.cpu.map(|c| format!(" on CPU {c}")).unwrap_or_default();
            writeln!(out, "  worst wakeup it measured: {}{cpu}, switched in {} after its wakeup", task(t), k.latency)?;
            if let Some(w) = &k.waker {
                writeln!(out, "  woken while {} ran there", task(w))?;
            }
            if let Some(b) = &k.before {
                writeln!(out, "  until the switch the CPU ran {}", task(b))?;
            }
            let whose =
                if k.ours { "one of latscope's measuring threads" } else { "not one of latscope's measuring threads" };
            let beside = ours.map(|o| format!("; latscope's own worst wakeup: {o}")).unwrap_or_default();
            writeln!(out, "  the woken task is {whose}{beside}")?;
        }
        _ => {
            let beside = ours.map(|o| format!("; latscope's own worst wakeup: {o}")).unwrap_or_default();
            if k.latency > Nanos::ZERO {
                writeln!(
                    out,
                    "  its worst wakeup took {}, but its trace kept no record of whose it was{beside}",
                    k.latency
                )?;
            } else {
                writeln!(out, "  it measured no wakeup{beside}")?;
            }
        }
    }
    if !k.ours {
        writeln!(out, "  {}", unseen(k))?;
    }
    for n in &k.notes {
        writeln!(out, "  note: {n}")?;
    }
    Ok(())
}

/// Why a measuring thread's late wakeup can be absent from the tracer's: what it counts.
fn unseen(k: &KernelWakeup) -> &'static str {
    if k.tracer == "wakeup_dl" {
        "wakeup_dl counts only deadline tasks' wakeups: latscope's SCHED_FIFO threads are not among them"
    } else {
        "it counts a wakeup only when the woken task outranks the task running where it is woken: a measuring \
         thread held off by a task of equal or higher priority is not measured by it"
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{CpuId, RunMetadata, TimerOptions};

    fn result(k: KernelWakeup) -> String {
        let mut r = TimerResult::new(RunMetadata::default(), TimerOptions::default());
        r.kernel_wakeup = Some(k);
        let mut out = Vec::new();
        write_kernel_wakeup(&mut out, &r).expect("write");
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn names_the_woken_task_what_ran_and_whose_it_is() {
        let k = KernelWakeup {
            tracer: "wakeup_rt".into(),
            ran_in: "instances/latscope-7".into(),
            latency: Nanos::from_us(48_123),
            cpu: Some(CpuId(1)),
            task: Some(TracerTask { comm: "latscope-timer".into(), pid: 128, prio: Some(4) }),
            waker: Some(TracerTask { comm: "<idle>".into(), pid: 0, prio: None }),
            before: Some(TracerTask { comm: "spinner".into(), pid: 130, prio: Some(120) }),
            ours: true,
            ..KernelWakeup::default()
        };
        let text = result(k);
        assert!(text.contains("The kernel's wakeup_rt tracer (instances/latscope-7, function tracing off)"), "{text}");
        assert!(text.contains("latscope-timer (pid 128, SCHED_FIFO/RR 95) on CPU 1, switched in 48.1ms"), "{text}");
        assert!(text.contains("the CPU ran spinner (pid 130, prio 120)"), "{text}");
        assert!(text.contains("is one of latscope's measuring threads"), "{text}");
        assert!(!text.contains("outranks"), "{text}");
    }

    #[test]
    fn another_task_or_nothing_says_what_the_tracer_does_not_count() {
        let other = KernelWakeup {
            tracer: "wakeup_rt".into(),
            latency: Nanos::from_us(60),
            task: Some(TracerTask { comm: "ktimers/1".into(), pid: 20, prio: Some(98) }),
            ..KernelWakeup::default()
        };
        let text = result(other);
        assert!(text.contains("not one of latscope's measuring threads") && text.contains("outranks"), "{text}");
        let none = KernelWakeup { tracer: "wakeup_rt".into(), ..KernelWakeup::default() };
        assert!(result(none).contains("it measured no wakeup"));
        let unnamed =
            KernelWakeup { tracer: "wakeup_rt".into(), latency: Nanos::from_us(4_629), ..KernelWakeup::default() };
        assert!(result(unnamed).contains("its worst wakeup took 4.63ms, but its trace kept no record of whose it was"));
    }
}
