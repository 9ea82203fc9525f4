//! What held back a late timer interrupt, decided from what is known: the trace's events between the
//! timer's expiry and the interrupt's entry (another interrupt ran first; an irqs-off section from
//! preemptirq events), the kernel stack taken at that entry (where the CPU was when it finally came: user
//! space, the idle loop, or kernel code), and how long this machine's idle states take to leave. The
//! decided cause leads the list; where the evidence does not decide, the cause says so
//! ([`CauseKind::KernelCode`]) rather than naming a default culprit.

use crate::patterns;
use crate::remedy::RemedyContext;
use crate::stacks::{interrupted, Interrupted};
use crate::timeline::Timeline;
use latscope_model::{CauseKind, CpuId, Culprit, Event, Explanation, Nanos, Place, TaskRef};

/// A late interrupt from idle counts as idle exit only when it is no later than the slowest idle state's
/// exit by more than this (the exit latencies the kernel states are estimates).
pub const IDLE_SLACK: Nanos = Nanos::from_us(20);

/// What is known at the entry of the interrupt that finally ran the late timer.
#[derive(Clone, Copy, Debug, Default)]
pub struct Arrival<'a> {
    /// The entry event's index and the event, when traced.
    pub entry: Option<(usize, &'a Event)>,
    /// The kernel stack recorded right after that entry, with its index, when a stack trigger took one.
    pub stack: Option<(usize, &'a [latscope_model::Text])>,
    /// Whether the trace has kernel stacks at all (so a missing one is the kernel's omission).
    pub stacks_traced: bool,
}

impl<'a> Arrival<'a> {
    /// The arrival at the interrupt entered by event `entry` on `cpu`.
    pub fn at(timeline: &Timeline, events: &'a [Event], cpu: CpuId, entry: Option<usize>) -> Arrival<'a> {
        let Some(i) = entry else { return Arrival::default() };
        let stack = timeline.cpu(cpu).and_then(|t| t.stack_of(i, events));
        let stacks_traced = timeline.cpus.values().any(|t| !t.stacks.is_empty());
        Arrival { entry: events.get(i).map(|e| (i, e)), stack, stacks_traced }
    }

    fn evidence(&self) -> Vec<usize> {
        self.entry.map(|e| e.0).into_iter().chain(self.stack.map(|s| s.0)).collect()
    }

    /// The task the interrupt found running, from its entry event (not idle).
    fn task(&self) -> Option<TaskRef> {
        self.entry.filter(|(_, e)| e.pid > 0).map(|(_, e)| TaskRef::new(e.comm, e.pid, None))
    }
}

/// `before` (what the trace shows between the expiry and the interrupt's entry, irqs-off sections first)
/// with what held the interrupt back for `delay` first.
pub fn decide(
    mut before: Vec<Explanation>,
    delay: Nanos,
    cpu: CpuId,
    arrival: Arrival<'_>,
    ctx: &RemedyContext,
) -> Vec<Explanation> {
    // What the events prove comes first: an irqs-off section they delimit, another interrupt that ran.
    let proven = before.first().is_some_and(|c| c.cause == CauseKind::IrqsOff || c.cause.is_interference());
    if proven {
        return before;
    }
    let decided = decided(&before, delay, cpu, &arrival, ctx);
    // The raw item the decision was read from (idle, the task that ran: the decision says where it was) is
    // not listed twice.
    let same = |c: &Explanation| {
        (c.cause == CauseKind::Idle && decided.culprit.place.is_some_and(|p| matches!(p, Place::Idle { .. })))
            || (c.cause == CauseKind::BlockingTask
                && c.culprit.task.as_ref().map(|t| t.pid) == decided.culprit.task.as_ref().map(|t| t.pid)
                && c.culprit.task.is_some())
    };
    before.retain(|c| !same(c));
    before.insert(0, decided);
    before
}

fn decided(
    before: &[Explanation],
    delay: Nanos,
    cpu: CpuId,
    arrival: &Arrival<'_>,
    ctx: &RemedyContext,
) -> Explanation {
    let at = |cause, culprit| {
        let mut e = Explanation::new(cause, culprit, delay, Some(cpu));
        e.evidence = arrival.evidence();
        e
    };
    match arrival.stack.map(|(_, frames)| interrupted(frames)) {
        Some(Interrupted::User) => {
            let culprit = Culprit { place: Some(Place::UserSpace), ..task_culprit(arrival.task()) };
            at(CauseKind::NoKernelEvent, culprit)
        }
        Some(Interrupted::Idle) => idle(delay, cpu, arrival, ctx),
        Some(Interrupted::Kernel { chain, syscall, at_irq_enable }) => {
            let culprit = Culprit { chain, syscall, place: Some(Place::Kernel), ..task_culprit(arrival.task()) };
            // An interrupt held pending is delivered right where interrupts come back on: a point that
            // re-enables them, or code known to run with them off (the console flush, whose re-enabling is
            // inlined). That is an irqs-off section ending there (the delay is a lower bound of it). Deeper
            // frames are no evidence: an interrupt that lands further on arrived while they were on.
            let known = culprit.chain.first().is_some_and(|f| patterns::is_console_func(f));
            let cause = if at_irq_enable || known { CauseKind::IrqsOff } else { CauseKind::KernelCode };
            at(cause, culprit)
        }
        None => {
            // A task ran, and without its stack the trace cannot say where: kernel code with interrupts off
            // and time below the kernel look the same.
            let unknown = Some(Place::Unknown { stacks_traced: arrival.stacks_traced });
            match before.first() {
                _ if arrival.entry.is_some_and(|(_, e)| e.pid == 0) => idle(delay, cpu, arrival, ctx),
                Some(c) if c.cause == CauseKind::Idle => idle(delay, cpu, arrival, ctx),
                Some(task) => {
                    let culprit = Culprit { place: unknown, ..task.culprit.clone() };
                    let mut e = Explanation::new(CauseKind::NoKernelEvent, culprit, delay, Some(cpu));
                    e.evidence = task.evidence.clone();
                    e
                }
                None if arrival.task().is_some() => {
                    at(CauseKind::NoKernelEvent, Culprit { place: unknown, ..task_culprit(arrival.task()) })
                }
                None => at(CauseKind::NoKernelEvent, Culprit::default()),
            }
        }
    }
}

/// A late interrupt from idle: idle exit when the idle states take that long to leave (or nothing is
/// known about them), else time that went below the kernel.
fn idle(delay: Nanos, cpu: CpuId, arrival: &Arrival<'_>, ctx: &RemedyContext) -> Explanation {
    let culprit = Culprit { place: Some(Place::Idle { exit_max_ns: ctx.idle_exit_max }), ..Culprit::default() };
    let beyond = ctx.idle_exit_max.is_some_and(|m| delay > m + IDLE_SLACK);
    let cause = if beyond { CauseKind::NoKernelEvent } else { CauseKind::Idle };
    let mut e = Explanation::new(cause, culprit, delay, Some(cpu));
    e.evidence = arrival.evidence();
    e
}

fn task_culprit(task: Option<TaskRef>) -> Culprit {
    Culprit { task, ..Culprit::default() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::trace;

    /// A late tick on CPU 1 and what its stack (or its absence) says.
    fn late(stack: &str, comm_pid: &str) -> Vec<Event> {
        trace(&format!(
            "\
{comm_pid:>16} [001] d.h1.  100.001000: local_timer_entry: vector=236
{comm_pid:>16} [001] d.h1.  100.001003: <stack trace>
{stack}"
        ))
    }

    fn first(events: &[Event], ctx: &RemedyContext) -> Explanation {
        let tl = Timeline::build(events);
        let arrival = Arrival::at(&tl, events, CpuId(1), Some(0));
        decide(Vec::new(), Nanos::from_us(900), CpuId(1), arrival, ctx).remove(0)
    }

    #[test]
    fn the_stack_decides_between_irqs_off_user_space_and_undecided_kernel_code() {
        let ctx = RemedyContext::default();
        let console = late(
            " => trace_event_raw_event_x86_irq_vector\n => asm_sysvec_apic_timer_interrupt\n => console_flush_all\n => console_unlock\n => vprintk_emit\n => ksys_write\n => do_syscall_64\n",
            "bash-77",
        );
        let e = first(&console, &ctx);
        assert_eq!((e.cause, e.magnitude), (CauseKind::IrqsOff, Nanos::from_us(900)));
        assert_eq!(e.culprit.task, Some(TaskRef::new("bash", 77, None)));
        assert_eq!((e.culprit.chain[0].as_str(), e.culprit.syscall.as_deref()), ("console_flush_all", Some("write")));
        assert_eq!(e.evidence, [0, 1], "the entry and its stack");
        let unlock =
            late(" => asm_sysvec_apic_timer_interrupt\n => _raw_spin_unlock_irqrestore\n => do_foo\n", "kworker-9");
        assert_eq!(first(&unlock, &ctx).cause, CauseKind::IrqsOff, "taken right at an irq-enable point");
        // Seen live during a printk storm: the interrupt landed past the printk store, in code that runs
        // with interrupts on; console code deeper in the stack is no evidence that they were off.
        let past = late(
            " => asm_sysvec_apic_timer_interrupt\n => is_printk_legacy_deferred\n => printk_get_console_flush_type\n => vprintk_emit\n => ksys_write\n",
            "sh-8",
        );
        assert_eq!(first(&past, &ctx).cause, CauseKind::KernelCode);
        let other = late(" => asm_sysvec_apic_timer_interrupt\n => filemap_read\n => vfs_read\n", "git-5");
        assert_eq!(first(&other, &ctx).cause, CauseKind::KernelCode, "mid-function in unknown code: undecided");
        let user = late(" => trace_event_raw_event_x86_irq_vector\n => asm_sysvec_apic_timer_interrupt\n", "spin-3");
        let u = first(&user, &ctx);
        assert_eq!((u.cause, u.culprit.place), (CauseKind::NoKernelEvent, Some(Place::UserSpace)));
    }

    #[test]
    fn idle_is_idle_exit_only_when_the_idle_states_take_that_long() {
        // This kernel records no stack when the interrupt finds the idle task: the entry's pid says idle.
        let events = trace("          <idle>-0 [001] d.h1.  100.001000: local_timer_entry: vector=236\n");
        let unknown = first(&events, &RemedyContext::default());
        assert_eq!(unknown.cause, CauseKind::Idle, "nothing known of the idle states");
        let no_driver = RemedyContext::default().with_idle_polling();
        assert_eq!(first(&events, &no_driver).cause, CauseKind::Idle, "without a cpuidle driver the CPU halts anyway");
        let haltpoll = RemedyContext { idle_exit_max: Some(Nanos::from_us(1)), ..RemedyContext::default() };
        let polling = haltpoll.with_idle_polling();
        let p = first(&events, &polling);
        assert_eq!(p.cause, CauseKind::NoKernelEvent, "polling idle leaves at once: 900 us went below the kernel");
        assert_eq!(p.culprit.place, Some(Place::Idle { exit_max_ns: Some(Nanos::ZERO) }));
        let deep = RemedyContext { idle_exit_max: Some(Nanos::from_ms(1)), ..RemedyContext::default() };
        assert_eq!(first(&events, &deep).cause, CauseKind::Idle, "a C-state that takes 1 ms to leave");
    }
}
