//! Text for `latscope timer --trace`: the worst measured wakeups explained from the trace (timer IRQ delay,
//! IRQ handler, interference by name, blocking tasks, remainder, remedy), printed under the statistics.

use latscope_model::{LatencyShare, Nanos, TimerTrace, TracedWakeup};
use std::io::{self, Write};

fn ns(v: u64) -> String {
    Nanos(v).to_string()
}

fn signed(v: i64) -> String {
    if v < 0 {
        format!("-{}", ns(v.unsigned_abs()))
    } else {
        ns(v as u64)
    }
}

fn who(s: &LatencyShare) -> String {
    let mut t = s.name.clone();
    if let Some(pid) = s.pid {
        t.push_str(&format!(" (pid {pid}"));
        match s.prio {
            Some(p) if (0..100).contains(&p) => t.push_str(&format!(", SCHED_FIFO/RR {})", 99 - p)),
            Some(p) => t.push_str(&format!(", SCHED_OTHER prio {p})")),
            None => t.push(')'),
        }
    }
    if s.count > 1 {
        t.push_str(&format!(" ×{}", s.count));
    }
    t
}

fn list(shares: &[LatencyShare]) -> String {
    shares.iter().map(|s| format!("{} {}", who(s), ns(s.duration_ns))).collect::<Vec<_>>().join(", ")
}

/// Writes the traced explanation of the worst wakeups.
pub fn write_traced_wakeups(out: &mut dyn Write, t: &TimerTrace) -> io::Result<()> {
    writeln!(out)?;
    write!(out, "Worst wakeups, from the trace ({} events", t.events)?;
    if t.lost_events > 0 {
        write!(out, ", {} lost", t.lost_events)?;
    }
    if t.marks > 0 {
        write!(out, ", {} marked", t.marks)?;
    }
    if t.frozen {
        write!(out, ", frozen at the first threshold crossing")?;
    }
    writeln!(out, "):")?;
    if t.worst.is_empty() {
        writeln!(out, "  no sample to explain")?;
    }
    for (i, w) in t.worst.iter().enumerate() {
        write_one(out, i + 1, w)?;
    }
    for n in &t.notes {
        writeln!(out, "  note: {n}")?;
    }
    Ok(())
}

fn write_one(out: &mut dyn Write, rank: usize, w: &TracedWakeup) -> io::Result<()> {
    writeln!(
        out,
        "  #{rank} CPU {} seq {} at {}.{:09}: measured {}",
        w.cpu,
        w.seq,
        w.expected_ns / 1_000_000_000,
        w.expected_ns % 1_000_000_000,
        ns(w.sample_latency_ns)
    )?;
    if !w.found {
        return writeln!(out, "     not in the trace: {}", w.note);
    }
    let diff = w.trace_latency_ns as i64 - w.sample_latency_ns as i64;
    writeln!(out, "     trace shows {} (tid {}, {} from the sample)", ns(w.trace_latency_ns), w.tid, signed(diff))?;
    let irq = match (&w.irq_handler_name, w.irq_handler_ns) {
        (Some(n), Some(d)) => format!("{n} {}", ns(d)),
        _ => "-".into(),
    };
    writeln!(out, "     timer IRQ delay {}   IRQ handler {irq}", w.timer_irq_delay_ns.map_or("-".to_string(), ns))?;
    if !w.interference.is_empty() {
        writeln!(out, "     interference: {}", list(&w.interference))?;
    }
    if !w.blocking.is_empty() {
        writeln!(out, "     blocked by:   {}", list(&w.blocking))?;
    }
    if !w.other.is_empty() {
        writeln!(out, "     other:        {}", list(&w.other))?;
    }
    writeln!(out, "     remainder {}", signed(w.remainder_ns))?;
    if !w.explanation.is_empty() {
        writeln!(out, "     {}", w.explanation)?;
    }
    if !w.remedy.is_empty() {
        writeln!(out, "     remedy: {}", w.remedy)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::CpuId;

    #[test]
    fn renders_every_part_and_the_missing_ones() {
        let found = TracedWakeup {
            cpu: CpuId(1),
            tid: 50,
            seq: 9,
            expected_ns: 12_000_500_000,
            sample_latency_ns: 551_000,
            found: true,
            trace_latency_ns: 552_000,
            woken_ns: 12_000_605_000,
            switch_in_ns: 12_001_150_000,
            timer_irq_delay_ns: Some(3_000),
            irq_handler_ns: Some(5_000),
            irq_handler_name: Some("local_timer".into()),
            interference: vec![LatencyShare {
                kind: "irq".into(),
                name: "virtio0".into(),
                duration_ns: 20_000,
                count: 1,
                ..LatencyShare::default()
            }],
            blocking: vec![LatencyShare {
                kind: "blocking_task".into(),
                name: "spin".into(),
                pid: Some(60),
                prio: Some(2),
                duration_ns: 472_000,
                count: 1,
            }],
            other: Vec::new(),
            remainder_ns: -1_000,
            explanation: "t:50 woke late".into(),
            remedy: "move spin off CPU 1".into(),
            note: String::new(),
        };
        let missing = TracedWakeup { found: false, note: "outside the trace".into(), ..found.clone() };
        let t = TimerTrace { worst: vec![found, missing], events: 1234, marks: 2, ..TimerTrace::default() };
        let mut buf = Vec::new();
        write_traced_wakeups(&mut buf, &t).expect("write");
        let s = String::from_utf8(buf).expect("utf8");
        for want in [
            "1234 events, 2 marked",
            "#1 CPU 1 seq 9 at 12.000500000: measured 551",
            "trace shows 552",
            "timer IRQ delay 3",
            "IRQ handler local_timer 5",
            "interference: virtio0 20",
            "blocked by:   spin (pid 60, SCHED_FIFO/RR 97) 472",
            "remainder -1",
            "remedy: move spin off CPU 1",
            "not in the trace: outside the trace",
        ] {
            assert!(s.contains(want), "missing {want:?} in\n{s}");
        }
    }
}
