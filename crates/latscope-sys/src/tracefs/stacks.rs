//! Kernel stacks in a capture: the ftrace `stacktrace` event trigger (every kernel with
//! `CONFIG_STACKTRACE`; no function tracer, kprobes or BPF needed) on chosen events, filtered to the cases
//! worth a stack, recorded as an `ftrace:kernel_stack` entry right after its event on the same CPU. A
//! stack costs ~3 µs on the CPU that takes it (measured on this project's development VM), so the filters
//! keep the common path free: no stack when the timer interrupt finds the CPU idle (the measuring thread
//! woken from idle), only when it interrupts a task — where that task was is then the culprit chain.

use latscope_model::Pid;

/// One stack trigger: an event and the filter that says when its stack is worth taking.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StackSpec {
    /// Event system (`irq_vectors`).
    pub system: String,
    /// Event name (`local_timer_entry`).
    pub name: String,
    /// The trigger's filter (`common_pid != 0`), when it has one.
    pub filter: Option<String>,
}

impl StackSpec {
    fn new(system: &str, name: &str, filter: Option<String>) -> StackSpec {
        StackSpec { system: system.into(), name: name.into(), filter }
    }

    /// `system/name`.
    pub fn id(&self) -> String {
        format!("{}/{}", self.system, self.name)
    }

    /// The trigger text written to the event's `trigger` file.
    pub fn trigger(&self) -> String {
        match &self.filter {
            Some(f) => format!("stacktrace if {f}"),
            None => "stacktrace".into(),
        }
    }

    /// The stacks at the timer interrupt's entry when it interrupts a task (not the idle task): where the
    /// CPU was when a late timer interrupt finally came. The first of these whose event the capture has
    /// is used: x86's `local_timer_entry` vector, else the `arch_timer` IRQ (arm64, arm).
    pub fn timer_interrupt() -> Vec<StackSpec> {
        vec![
            StackSpec::new("irq_vectors", "local_timer_entry", Some("common_pid != 0".into())),
            StackSpec::new("irq", "irq_handler_entry", Some("common_pid != 0 && name == \"arch_timer\"".into())),
        ]
    }

    /// The stacks at the switch to one of `pids` from another task: where that task was when it finally
    /// gave up the CPU (a lower-priority task that could not be preempted, or its return to user space).
    /// `None` when there is no pid.
    pub fn switch_to(pids: &[Pid]) -> Option<StackSpec> {
        if pids.is_empty() {
            return None;
        }
        let to: Vec<String> = pids.iter().map(|p| format!("next_pid == {p}")).collect();
        Some(StackSpec::new("sched", "sched_switch", Some(format!("prev_pid != 0 && ({})", to.join(" || ")))))
    }

    /// The stacks at the timer interrupt when it interrupts neither idle nor one of `pids` (noise
    /// spinners: their own interruption says nothing; another task running in a gap does).
    pub fn timer_interrupt_except(pids: &[Pid]) -> Vec<StackSpec> {
        let not: String = pids.iter().map(|p| format!(" && common_pid != {p}")).collect();
        StackSpec::timer_interrupt()
            .into_iter()
            .map(|mut s| {
                s.filter = s.filter.map(|f| format!("{f}{not}"));
                s
            })
            .collect()
    }
}

/// The specs to set given the events the capture enabled (`system/name`): those whose event is enabled,
/// and of the timer interrupt's alternatives ([`StackSpec::timer_interrupt`]) only the first enabled one.
pub fn choose<'a>(specs: &'a [StackSpec], enabled: &[String]) -> Vec<&'a StackSpec> {
    let timer = |id: &str| id == "irq_vectors/local_timer_entry" || id == "irq/irq_handler_entry";
    let mut out: Vec<&StackSpec> = Vec::new();
    for s in specs {
        let id = s.id();
        let taken = out.iter().any(|o| o.id() == id || (timer(&o.id()) && timer(&id)));
        if enabled.contains(&id) && !taken {
            out.push(s);
        }
    }
    out
}

/// What enables kernel stacks when the kernel refuses the trigger.
pub const STACKS_NEED: &str = "CONFIG_STACKTRACE=y (every distribution kernel has it) and a kernel of 3.14 or later \
                               (event triggers)";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triggers_are_filtered_to_what_is_worth_a_stack() {
        let t = StackSpec::timer_interrupt();
        assert_eq!(t[0].id(), "irq_vectors/local_timer_entry");
        assert_eq!(t[0].trigger(), "stacktrace if common_pid != 0");
        assert!(t[1].trigger().contains("name == \"arch_timer\""));
        let s = StackSpec::switch_to(&[41, 42]).expect("pids");
        assert_eq!(s.trigger(), "stacktrace if prev_pid != 0 && (next_pid == 41 || next_pid == 42)");
        assert!(StackSpec::switch_to(&[]).is_none());
        let n = StackSpec::timer_interrupt_except(&[7]);
        assert_eq!(n[0].trigger(), "stacktrace if common_pid != 0 && common_pid != 7");
        // One trigger for the timer interrupt: x86's vector when the capture has it, else the IRQ.
        let x86 = ["irq_vectors/local_timer_entry".to_string(), "irq/irq_handler_entry".to_string()];
        assert_eq!(choose(&t, &x86).iter().map(|s| s.id()).collect::<Vec<_>>(), ["irq_vectors/local_timer_entry"]);
        let arm = ["irq/irq_handler_entry".to_string()];
        assert_eq!(choose(&t, &arm).iter().map(|s| s.id()).collect::<Vec<_>>(), ["irq/irq_handler_entry"]);
    }
}
