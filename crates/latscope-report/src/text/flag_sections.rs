//! Sections read from the flags column in words: what the events show and how finely, never more (the
//! state between two events is not known).

use crate::human::human;
use latscope_analyze::flag_sections::{Disabled, FlagSection, Sampled};
use latscope_model::{Nanos, Pid, TaskName};

/// `irqs were off`, `bottom halves were off`, `preemption was off`.
pub fn what_was_off(d: Disabled) -> &'static str {
    match d {
        Disabled::Irqs => "irqs were off",
        Disabled::BottomHalves => "bottom halves were off",
        Disabled::Preemption => "preemption was off",
    }
}

/// `them`/`it` for the state.
fn them(d: Disabled) -> &'static str {
    match d {
        Disabled::Irqs | Disabled::BottomHalves => "them",
        Disabled::Preemption => "it",
    }
}

/// `irqs were off at each of 107 events over 1.362 ms, at most 30 us apart; no event shows them on`.
pub fn sampled_clause(d: Disabled, over: Nanos, s: &Sampled) -> String {
    format!(
        "{} at each of {} events over {}, at most {} apart; no event shows {} on",
        what_was_off(d),
        s.events,
        human(over),
        human(s.max_gap),
        them(d)
    )
}

/// Where a section ran: `in sh:42`, `in sh:42 → kworker/1:7 (across the switch between them)` or
/// `(across 2 task switches)`, then `, from rcu_note_context_switch to finish_task_switch` (where its first and
/// last events show the CPU).
pub fn where_clause(
    (comm, pid): (TaskName, Pid),
    end_task: Option<(TaskName, Pid)>,
    switches: u32,
    from: &str,
    to: &str,
) -> String {
    let mut text = format!("in {comm}:{pid}");
    if let Some((c, p)) = end_task {
        text.push_str(&format!(" → {c}:{p}"));
    }
    match switches {
        0 => {}
        1 => text.push_str(" (across the switch between them)"),
        n => text.push_str(&format!(" (across {n} task switches)")),
    }
    text.push_str(&format!(", from {from} to {to}"));
    text
}

/// One line of a section: `on CPU 1 in sh:42 → kworker/1:7 (across the switch between them), from … to …:
/// <sampled clause>`.
pub fn section_line(s: &FlagSection) -> String {
    format!(
        "on CPU {} {}: {}",
        s.cpu.0,
        where_clause((s.comm, s.pid), s.end_task, s.sampled.switches, &s.from, &s.to),
        sampled_clause(s.disabled, s.duration(), &s.sampled)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::CpuId;

    #[test]
    fn states_the_granularity_not_a_section() {
        let s = Sampled { events: 107, max_gap: Nanos::from_us(30), switches: 0 };
        assert_eq!(
            sampled_clause(Disabled::Irqs, Nanos::from_us(1_362), &s),
            "irqs were off at each of 107 events over 1.362 ms, at most 30 us apart; no event shows them on"
        );
        let f = FlagSection {
            cpu: CpuId(1),
            disabled: Disabled::BottomHalves,
            start: Nanos(0),
            end: Nanos::from_us(800),
            comm: "python3".into(),
            pid: 9,
            end_task: Some(("ksoftirqd/1".into(), 20)),
            from: "net_dev_queue".into(),
            to: "net_dev_xmit".into(),
            sampled: Sampled { events: 40, max_gap: Nanos::from_us(25), switches: 1 },
            start_index: 0,
            end_index: 39,
        };
        assert_eq!(
            section_line(&f),
            "on CPU 1 in python3:9 → ksoftirqd/1:20 (across the switch between them), from net_dev_queue to \
             net_dev_xmit: bottom halves were off at each of 40 events over 800 us, at most 25 us apart; no event \
             shows them on"
        );
    }
}
