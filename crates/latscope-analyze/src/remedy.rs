//! The one remedy table: what to do about each [`CauseKind`], for its culprit, on this machine as far as
//! it is known. The only place a remedy is worded; an exhaustive `match`, so a new cause does not compile
//! until it has its remedy here.

use latscope_model::{CauseKind, CpuId, Culprit, Explanation, Hint, Nanos, Pattern, Place, SystemFacts, TaskRef};

/// What the table may use besides the cause: the task that waited and the machine, when known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemedyContext {
    /// The task whose latency is explained (a late wakeup's task), when there is one.
    pub victim: Option<TaskRef>,
    /// The hypervisor the machine runs under, when it is this machine and one was detected.
    pub hypervisor: Option<String>,
    /// `kernel.sched_rt_runtime_us`, when known.
    pub rt_runtime_us: Option<i64>,
    /// `kernel.sched_rt_period_us`, when known.
    pub rt_period_us: Option<u64>,
    /// How long the slowest idle state the CPUs may enter takes to leave, when known (zero while
    /// `/dev/cpu_dma_latency` is held at 0: the CPU then only polls): a late interrupt from idle longer than
    /// this is not idle exit.
    pub idle_exit_max: Option<Nanos>,
    /// The kernel's preemption model (`none`, `voluntary`, `full`, `rt`), when known.
    pub preemption: Option<String>,
    /// The run itself held `/dev/cpu_dma_latency` at 0 (latscope's timer and run do).
    pub dma_latency_held: bool,
    /// The idle states enabled on the CPUs (name and exit latency in µs, slowest of the CPUs), when every CPU
    /// has a cpuidle driver's states; shallowest first.
    pub idle_states: Option<Vec<(String, u64)>>,
}

impl RemedyContext {
    /// The context of a measurement on this machine.
    pub fn from_facts(facts: &SystemFacts) -> RemedyContext {
        RemedyContext {
            victim: None,
            hypervisor: facts.hypervisor.detected().map(|(name, _)| name),
            rt_runtime_us: facts.sched.rt_runtime_us.get().copied(),
            rt_period_us: facts.sched.rt_period_us.get().copied(),
            idle_exit_max: idle_exit_max(facts),
            preemption: facts.kernel.preemption.get().cloned(),
            dma_latency_held: false,
            idle_states: enabled_idle_states(facts),
        }
    }

    /// The same context for a run that held `/dev/cpu_dma_latency` at 0: with a cpuidle driver (its states
    /// known) the CPUs only poll when idle; without one the idle loop halts whatever the request, and what
    /// that costs stays unknown.
    pub fn with_idle_polling(self) -> RemedyContext {
        RemedyContext { idle_exit_max: self.idle_exit_max.map(|_| Nanos::ZERO), dma_latency_held: true, ..self }
    }

    /// The same context for the latency of `victim`.
    pub fn for_victim(&self, victim: &TaskRef) -> RemedyContext {
        RemedyContext { victim: Some(victim.clone()), ..self.clone() }
    }
}

/// The slowest exit of the idle states enabled on any CPU, when every CPU has a cpuidle driver's states
/// (without one the CPU halts, at a cost nothing states).
fn idle_exit_max(facts: &SystemFacts) -> Option<Nanos> {
    let mut max = Nanos::ZERO;
    for c in &facts.cpus.per_cpu {
        let states = c.idle_states.get().filter(|s| !s.is_empty())?;
        for s in states.iter().filter(|s| !s.disabled) {
            max = max.max(Nanos::from_us(s.exit_latency_us));
        }
    }
    (!facts.cpus.per_cpu.is_empty()).then_some(max)
}

/// The idle states enabled on any CPU (the slowest exit of each name), when every CPU has a cpuidle driver's
/// states.
fn enabled_idle_states(facts: &SystemFacts) -> Option<Vec<(String, u64)>> {
    let mut out: Vec<(String, u64)> = Vec::new();
    for c in &facts.cpus.per_cpu {
        let states = c.idle_states.get().filter(|s| !s.is_empty())?;
        for s in states.iter().filter(|s| !s.disabled) {
            match out.iter_mut().find(|(n, _)| *n == s.name) {
                Some((_, exit)) => *exit = (*exit).max(s.exit_latency_us),
                None => out.push((s.name.clone(), s.exit_latency_us)),
            }
        }
    }
    out.sort_by_key(|s| s.1);
    (!facts.cpus.per_cpu.is_empty()).then_some(out)
}

/// The hint for `e`: the remedy of the known `pattern` its analysis recognised, else the remedy of its cause.
pub fn hint(e: &Explanation, pattern: Option<Pattern>, ctx: &RemedyContext) -> Hint {
    match pattern {
        Some(p) => pattern_hint(p, ctx),
        None => Hint { pattern: None, why: why(e, ctx), remedy: remedy(e, ctx) },
    }
}

/// `e` with its hint set from [`hint`].
pub fn with_hint(mut e: Explanation, pattern: Option<Pattern>, ctx: &RemedyContext) -> Explanation {
    e.hint = Some(hint(&e, pattern, ctx));
    e
}

fn pattern_hint(p: Pattern, ctx: &RemedyContext) -> Hint {
    let (why, remedy) = match p {
        Pattern::ConsolePrint => (
            "console printing with interrupts off is a known latency source: printk writes every message to \
             the (serial) console synchronously, with irqs disabled, on the CPU that printed"
                .to_string(),
            "lower the console loglevel so such messages are not written to the console (`dmesg -n 1`, or \
             `loglevel=1`/`quiet` on the kernel command line), or move the print out of the hot path (lower \
             its level, ratelimit it, or drop it)"
                .to_string(),
        ),
        Pattern::RtBandwidthTimer => (
            "enqueue_task_rt started the RT bandwidth (throttling period) timer: start_rt_bandwidth() arms it \
             when the first RT task of a period is enqueued, under a global lock"
                .to_string(),
            format!(
                "disable RT throttling on a dedicated real-time machine with `{}` (then a runaway RT task can \
                 starve the CPU), or keep at least one RT task runnable per period so the timer stays armed",
                UNTHROTTLE
            ),
        ),
        Pattern::TickStorm => (
            "the tick's hrtimer fired again and again far faster than any HZ allows (a regular tick is at least \
             1 ms apart): something keeps re-arming it to expire at once, and the CPU spends its time entering \
             the timer interrupt"
                .to_string(),
            "trace hrtimer_start and timer:tick_stop on that CPU to see what re-arms the tick; such storms are \
             kernel bugs in the nohz tick code (one, on PREEMPT_RT, was the pending-timer check after the \
             timersd split, fixed in 2022): update the kernel, and boot with nohz=off to confirm"
                .to_string(),
        ),
    };
    let _ = ctx;
    Hint { pattern: Some(p), why, remedy }
}

/// The sysctl command that turns RT throttling off.
const UNTHROTTLE: &str = "sysctl -w kernel.sched_rt_runtime_us=-1";

fn cpu_text(cpu: Option<CpuId>) -> String {
    cpu.map_or_else(|| "this CPU".to_string(), |c| format!("CPU {c}"))
}

fn task_name(c: &Culprit) -> String {
    c.task.as_ref().map_or_else(|| c.name.clone(), |t| t.comm.to_string())
}

/// Why a cause matters, when its name alone does not say (empty otherwise).
pub fn why(e: &Explanation, ctx: &RemedyContext) -> String {
    match e.cause {
        CauseKind::TimerIrqDelay => match e.within.first() {
            Some(inner) => hint(inner, crate::patterns::recognise(inner), ctx).why,
            None => why(&Explanation { cause: CauseKind::NoKernelEvent, ..e.clone() }, ctx),
        },
        CauseKind::Idle => match (silent_within(e), ctx.dma_latency_held, &ctx.idle_states) {
            (Some(q), _, _) => why(q, ctx),
            (None, true, Some(_)) => {
                "the CPU was idle when the timer fired, though it only polled there (this run held \
                                /dev/cpu_dma_latency at 0): the time went to leaving the idle loop (in a VM, to \
                                the host delivering the interrupt to the vCPU)"
                    .into()
            }
            (None, false, Some(states)) if !slow_idle(states) => "the CPU was idle when the timer fired, in no state \
                slower to leave than a few microseconds: the time went to leaving the idle loop (in a VM, to the \
                host rescheduling the halted vCPU)"
                .into(),
            _ => "the CPU was idle when the timer fired: leaving a deep C-state (or, in a VM, the host \
                  rescheduling the halted vCPU) takes time before any kernel code runs"
                .into(),
        },
        CauseKind::IrqHandler => silent_within(e).map_or_else(String::new, |q| why(q, ctx)),
        CauseKind::NoKernelEvent => match e.culprit.place {
            Some(Place::Kernel) => "time in kernel code that no kernel event accounts for (inside an interrupt, \
                                    or in the idle task with a switch due): that code, when it traces nothing, and \
                                    a CPU taken away below the kernel (a hypervisor, firmware SMIs) look the same in \
                                    an event trace"
                .into(),
            Some(Place::Unknown { .. }) => "time that no kernel event accounts for, and no kernel stack shows \
                                            where the task was when the interrupt came: kernel code keeping \
                                            interrupts off and a CPU taken away below the kernel (a hypervisor, \
                                            firmware SMIs) look the same without it"
                .into(),
            _ => "time that no kernel event accounts for: the CPU was taken away below the kernel (a hypervisor \
                  running something else, or firmware SMIs)"
                .into(),
        },
        CauseKind::Nmi => "an NMI handler ran (perf sampling or the hard-lockup watchdog)".into(),
        CauseKind::BhOff => "while bottom halves are off no softirq runs on that CPU (network, block completion, \
                             tasklets) and, on a kernel without PREEMPT_RT, the task cannot be preempted either"
            .into(),
        CauseKind::RtThrottling => format!(
            "RT throttling: real-time tasks used up their bandwidth ({}), so the kernel kept them off the CPU for \
             the rest of the period although they were runnable (since Linux 6.12 the fair deadline server \
             enforces it: /sys/kernel/debug/sched/fair_server/cpuN/runtime, 50 ms per 1 s period by default)",
            match (ctx.rt_runtime_us, ctx.rt_period_us) {
                (Some(r), Some(p)) => format!("kernel.sched_rt_runtime_us={r} of kernel.sched_rt_period_us={p}"),
                _ =>
                    "kernel.sched_rt_runtime_us, by default 950000 of a 1000000 us period: 50 ms off per second".into(),
            }
        ),
        CauseKind::KernelCode => "the interrupt came late into this kernel code: either the code kept interrupts \
                                  off until there, or the CPU was stalled below the kernel (a hypervisor, an SMI) \
                                  while it ran; a trace cannot tell the two apart"
            .into(),
        CauseKind::PreemptOff => match ctx.preemption.as_deref() {
            Some(m @ ("none" | "voluntary")) => format!(
                "this kernel is not fully preemptible (preempt={m}): a task in kernel code keeps the CPU until \
                 it returns to user space or reaches a preemption point, whatever the waiting task's priority"
            ),
            _ => String::new(),
        },
        CauseKind::Irq
        | CauseKind::Vector
        | CauseKind::TimerTick
        | CauseKind::Softirq
        | CauseKind::BlockingTask
        | CauseKind::IrqsOff
        | CauseKind::PreemptOrIrqsOff
        | CauseKind::ReturnToUser
        | CauseKind::OtherKernelEvent
        | CauseKind::WakeupLatency
        | CauseKind::FunctionTime
        | CauseKind::LostEvents
        | CauseKind::Configuration
        | CauseKind::NotTraced => String::new(),
    }
}

/// The remedy of a cause (see [`hint`] for known patterns).
pub fn remedy(e: &Explanation, ctx: &RemedyContext) -> String {
    let cpu = cpu_text(e.cpu);
    let c = &e.culprit;
    match e.cause {
        // What held the interrupt back decides; with nothing in the trace, nothing in the kernel did.
        CauseKind::TimerIrqDelay => match e.within.first() {
            Some(inner) => hint(inner, crate::patterns::recognise(inner), ctx).remedy,
            None => no_kernel_event(ctx),
        },
        CauseKind::IrqHandler => match silent_within(e) {
            Some(q) => remedy(q, ctx),
            None => format!(
                "move other timers off {cpu} (nohz_full, timer migration, threaded hrtimers) or reduce what their \
                 callbacks do"
            ),
        },
        CauseKind::Irq => {
            let n = c.irq.map_or_else(|| "<n>".to_string(), |n| n.to_string());
            let each = e.cpu.map_or_else(|| "<cpu>".to_string(), |c| c.to_string());
            format!(
                "steer IRQ {n} ({}) away from {cpu} (/proc/irq/{n}/smp_affinity_list), or boot with \
                 irqaffinity=<other CPUs> isolcpus=managed_irq,{each}",
                c.name
            )
        }
        CauseKind::Vector => format!(
            "{} interrupts are sent by the kernel itself (IPIs, timers): isolate {cpu} (isolcpus=, nohz_full=) \
             so that less work lands there",
            c.name
        ),
        CauseKind::TimerTick => {
            let n = e.cpu.map_or_else(|| "<cpu>".to_string(), |c| c.to_string());
            format!(
                "stop the tick on {cpu} while it runs one task: boot with nohz_full={n} isolcpus={n} rcu_nocbs={n} \
                 (a CONFIG_NO_HZ_FULL kernel)"
            )
        }
        CauseKind::Softirq => format!(
            "softirq {} runs on {cpu} after the interrupts that raise it: move those IRQs to other CPUs, or on \
             PREEMPT_RT give the real-time task a priority above the softirq threads",
            c.name
        ),
        CauseKind::Nmi => "disable the NMI watchdog (`sysctl -w kernel.nmi_watchdog=0` or `nmi_watchdog=0`) and \
                           stop perf sampling on the real-time CPUs"
            .into(),
        CauseKind::BlockingTask => {
            let who = task_name(c);
            let pid = c.pid().map_or_else(|| "<pid>".to_string(), |p| p.to_string());
            let each = e.cpu.map_or_else(|| "<cpu>".to_string(), |c| c.to_string());
            if let Some(t) = crate::per_cpu_thread::per_cpu_thread(&who) {
                return format!(
                    "{who} is CPU {}'s own kernel thread ({}): it cannot be moved off it; {}",
                    t.cpu, t.runs, t.remedy
                );
            }
            match &ctx.victim {
                Some(v) if v.is_rt() => format!(
                    "move {who} off {cpu} (taskset -pc <other CPUs> {pid}, a cpuset, isolcpus={each}), or raise \
                     {}'s priority above it (chrt -f)",
                    v.comm
                ),
                // Its priority unknown: that the task ran instead of it is all the trace says.
                Some(v) if v.prio.is_none() => format!(
                    "move {who} off {cpu} (taskset -pc <other CPUs> {pid}, a cpuset, isolcpus={each}), or give {} a \
                     real-time priority above {who}'s (chrt -f)",
                    v.comm
                ),
                Some(v) => format!(
                    "{} is not a real-time task: run it under SCHED_FIFO (chrt -f) so that {who} cannot delay it, \
                     or move {who} off {cpu}",
                    v.comm
                ),
                None => format!(
                    "move {who} off {cpu} (taskset -pc <other CPUs> {pid}, or a cpuset), or isolate the CPU with \
                     isolcpus={each}; a real-time measuring thread would preempt it"
                ),
            }
        }
        CauseKind::PreemptOff => match ctx.preemption.as_deref() {
            Some("none" | "voluntary") => format!(
                "boot with preempt=full (a PREEMPT_DYNAMIC kernel) or use a PREEMPT_RT kernel, or keep {} off \
                 this CPU (taskset, cpusets, isolcpus=)",
                task_name(c)
            ),
            _ => format!(
                "find what kept preemption off in {} (preemptirq events, the preemptoff tracer), or check RT \
                 throttling (kernel.sched_rt_runtime_us); a kernel built without full preemption (preempt=none \
                 or voluntary) holds off a real-time task for whole system calls: boot with preempt=full or use \
                 PREEMPT_RT",
                task_name(c)
            ),
        },
        CauseKind::BhOff => format!(
            "find the code in {} that holds bottom halves off (local_bh_disable, spin_lock_bh: the function tracer \
             on {cpu} over the section shows it), or keep that work off the real-time CPUs; on PREEMPT_RT such \
             sections stay preemptible",
            task_name(c)
        ),
        CauseKind::Idle => silent_within(e).map_or_else(|| idle_remedy(ctx), |q| remedy(q, ctx)),
        CauseKind::KernelCode => {
            let at = c.chain.first().map_or_else(String::new, |f| format!(" at {f}"));
            format!(
                "find out whether the code{at} runs with interrupts off (the irqsoff tracer, or preemptirq events, \
                 on a kernel that has them); in a VM, check steal time and pin the vCPU to a dedicated CPU on \
                 the host"
            )
        }
        CauseKind::IrqsOff | CauseKind::PreemptOrIrqsOff => {
            let at = c.chain.first().map_or_else(String::new, |f| format!(" at {f}"));
            format!(
                "shorten or move the section{at} that keeps interrupts (or preemption) off; when it is on the \
                 printk/console path, lower the console loglevel (`dmesg -n 1`)"
            )
        }
        CauseKind::RtThrottling => format!(
            "let the RT task sleep or block (a busy-looping SCHED_FIFO task is throttled by design), or, on a \
             machine where that is intended and other CPUs keep the system alive, disable throttling with \
             `{UNTHROTTLE}`"
        ),
        CauseKind::ReturnToUser => {
            "check for signal handling or page faults after the wakeup (lock memory with mlockall)".into()
        }
        CauseKind::NoKernelEvent => match c.place {
            Some(Place::Unknown { stacks_traced: false }) => "trace with kernel stacks at the timer interrupt \
                (`latscope timer --trace` and `latscope record` take them; with other tools, the `stacktrace` \
                trigger on irq_vectors:local_timer_entry) or with the irqsoff tracer, to tell kernel code with \
                interrupts off from time lost below the kernel"
                .into(),
            Some(Place::Unknown { stacks_traced: true }) => "the kernel took no stack at this interrupt although \
                it did at others; look for more occurrences with stacks, or trace with the irqsoff tracer, to tell \
                kernel code with interrupts off from time lost below the kernel"
                .into(),
            Some(Place::Kernel) => format!(
                "to tell the interrupt's code from a stall, trace {cpu} with function_graph (or the irqsoff \
                 tracer) while it happens: code shows as functions, a stall as time between them; if it is a \
                 stall, {}",
                no_kernel_event(ctx)
            ),
            _ => no_kernel_event(ctx),
        },
        CauseKind::OtherKernelEvent => format!(
            "isolate {cpu} (isolcpus=, nohz_full=, rcu_nocbs=) and move IRQs away from it; trace more events to \
             see what the kernel did"
        ),
        CauseKind::WakeupLatency => "look at the entry with the largest delay: the code there ran between the \
                                     wakeup and the switch (preemption or interrupts off)"
            .into(),
        CauseKind::FunctionTime => format!(
            "look at why {} took longer (what it waited for, the locks it took)",
            if c.name.is_empty() { "that call" } else { &c.name }
        ),
        CauseKind::LostEvents => {
            "record with a larger buffer (buffer_size_kb) or fewer events, so that no event is lost".into()
        }
        // The audit worded the finding's fixes; the verdict carries them as its hint.
        CauseKind::Configuration => String::new(),
        // A latency a trace states about a task whose wakeup it does not hold.
        CauseKind::NotTraced if c.task.is_some() => format!(
            "record the scheduler's events (sched_waking, sched_wakeup, sched_switch) and the interrupts of \
             {cpu} together with the statement, so that the trace holds the wakeup of {} it is about",
            task_name(c)
        ),
        CauseKind::NotTraced => "run as root with tracefs mounted and trace the measurement (`--trace`, or \
                                 `latscope run`) so that the trace says what held the CPU"
            .into(),
    }
}

/// Whether an enabled idle state takes longer to leave than the audit's limit for a deep state.
fn slow_idle(states: &[(String, u64)]) -> bool {
    states.iter().any(|s| s.1 > crate::audit::DEEP_IDLE_US)
}

/// What to do about a late interrupt from idle, as far as the run's own settings and the machine's idle states
/// leave anything to do; where nothing is left, what is known instead.
fn idle_remedy(ctx: &RemedyContext) -> String {
    let known = |states: &[(String, u64)]| {
        let list = states.iter().map(|(n, x)| format!("{n} {x} µs")).collect::<Vec<_>>().join(", ");
        match states.last() {
            Some((n, x)) => format!("the deepest enabled idle state, {n}, exits in {x} µs (enabled: {list})"),
            None => "no idle state is enabled".into(),
        }
    };
    let vm = if ctx.hypervisor.is_some() {
        "; in a VM what is left is the host: pin and isolate the vCPU on the host"
    } else {
        ""
    };
    match (ctx.dma_latency_held, &ctx.idle_states) {
        (true, Some(states)) => format!(
            "no idle setting is left to change: this run held /dev/cpu_dma_latency at 0, so the CPU only polled, \
             and {}{vm}",
            known(states)
        ),
        (true, None) => "this run held /dev/cpu_dma_latency at 0, but the kernel has no cpuidle driver (no idle \
                         states in sysfs), so the idle loop halts the CPU whatever the request: boot with \
                         `idle=poll`, or in a VM load cpuidle-haltpoll and pin the vCPU on the host"
            .into(),
        (false, Some(states)) if !slow_idle(states) => {
            format!("no idle setting is left to change: {}{vm}", known(states))
        }
        _ => "keep the CPU out of deep idle states while latency matters: hold /dev/cpu_dma_latency open at 0 \
              (latscope's timer does), or boot with `processor.max_cstate=1 intel_idle.max_cstate=0` (or \
              `idle=poll`); in a VM, pin and isolate the vCPU on the host and use `idle=poll` or haltpoll"
            .into(),
    }
}

/// What to do about time no kernel event accounts for: on the hypervisor's host, or the firmware.
/// The stretch with no kernel event inside a part (an interrupt, the idle task with a switch due), when one
/// was found: the part's why and remedy are that stretch's.
fn silent_within(e: &Explanation) -> Option<&Explanation> {
    e.within.iter().find(|q| q.cause == CauseKind::NoKernelEvent && q.culprit.place == Some(Place::Kernel))
}

fn no_kernel_event(ctx: &RemedyContext) -> String {
    match ctx.hypervisor.as_deref() {
        Some(h) if !h.to_lowercase().contains("unknown") => format!(
            "the guest cannot fix this: on the {h} host, pin each vCPU to a dedicated isolated CPU, avoid \
             overcommit and host power management; or measure on bare metal"
        ),
        Some(_) => "the guest cannot fix this: on the host, pin each vCPU to a dedicated isolated CPU, avoid \
                    overcommit and host power management; or measure on bare metal"
            .into(),
        None => "on bare metal, check the SMI count (modprobe msr; MSR 0x34) and firmware power management (the \
                 hwlat tracer confirms time the kernel never saw); in a VM, dedicate and pin physical CPUs to this \
                 vCPU on the host and check steal time"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::Nanos;

    fn e(cause: CauseKind, culprit: Culprit) -> Explanation {
        Explanation::new(cause, culprit, Nanos(1_000), Some(CpuId(1)))
    }

    #[test]
    fn blocking_task_remedy_depends_on_the_victim() {
        let spin = Culprit::task(TaskRef::new("spin", 60, Some(2)));
        let rt = RemedyContext::default().for_victim(&TaskRef::new("cyclictest", 50, Some(4)));
        let r = remedy(&e(CauseKind::BlockingTask, spin.clone()), &rt);
        assert!(r.starts_with("move spin off CPU 1") && r.contains("raise cyclictest's priority"), "{r}");
        let other = RemedyContext::default().for_victim(&TaskRef::new("app", 51, Some(120)));
        assert!(remedy(&e(CauseKind::BlockingTask, spin.clone()), &other).contains("not a real-time task"));
        assert!(remedy(&e(CauseKind::BlockingTask, spin), &RemedyContext::default()).contains("isolcpus=1"));
    }

    #[test]
    fn a_per_cpu_kernel_thread_is_not_told_to_move() {
        let migration = Culprit::task(TaskRef::new("migration/1", 19, Some(0)));
        let rt = RemedyContext::default().for_victim(&TaskRef::new("cyclictest", 50, Some(4)));
        let r = remedy(&e(CauseKind::BlockingTask, migration), &rt);
        assert!(r.starts_with("migration/1 is CPU 1's own kernel thread") && !r.contains("taskset"), "{r}");
        let unbound = Culprit::task(TaskRef::new("kworker/u4:2", 77, Some(120)));
        assert!(remedy(&e(CauseKind::BlockingTask, unbound), &rt).starts_with("move kworker/u4:2 off CPU 1"));
    }

    #[test]
    fn timer_irq_delay_takes_the_remedy_of_what_held_it() {
        let mut d = e(CauseKind::TimerIrqDelay, Culprit::named("local_timer"));
        let ctx = RemedyContext { hypervisor: Some("KVM".into()), ..RemedyContext::default() };
        assert!(remedy(&d, &ctx).contains("on the KVM host"));
        d.within.push(e(CauseKind::IrqsOff, Culprit::default().with_chain(vec!["console_unlock+0xc0".into()])));
        let h = hint(&d, None, &ctx);
        assert!(h.remedy.contains("dmesg -n 1"), "{h:?}");
        assert_eq!(hint(&d, Some(Pattern::ConsolePrint), &ctx).pattern, Some(Pattern::ConsolePrint));
    }

    #[test]
    fn idle_recommends_nothing_the_run_or_the_machine_already_does() {
        let idle = e(CauseKind::Idle, Culprit::default());
        let haltpoll = Some(vec![("POLL".to_string(), 0), ("haltpoll idle".to_string(), 1)]);
        // Issue #15 item 11: latscope held /dev/cpu_dma_latency at 0 and no slow idle state was enabled.
        let held =
            RemedyContext { idle_states: haltpoll.clone(), hypervisor: Some("KVM".into()), ..Default::default() }
                .with_idle_polling();
        let r = remedy(&idle, &held);
        assert!(!r.contains("hold /dev/cpu_dma_latency"), "{r}");
        assert!(r.contains("held /dev/cpu_dma_latency at 0") && r.contains("haltpoll idle, exits in 1 µs"), "{r}");
        assert!(r.contains("enabled: POLL 0 µs, haltpoll idle 1 µs") && r.contains("vCPU on the host"), "{r}");
        assert!(!why(&idle, &held).contains("deep C-state"), "{}", why(&idle, &held));
        // Not held, but nothing slow is enabled: still nothing to hold.
        let shallow = RemedyContext { idle_states: haltpoll, ..Default::default() };
        let r = remedy(&idle, &shallow);
        assert!(r.starts_with("no idle setting is left to change") && !r.contains("cpu_dma_latency"), "{r}");
        // Held without a cpuidle driver: the CPU halts anyway.
        let no_driver = RemedyContext::default().with_idle_polling();
        assert!(remedy(&idle, &no_driver).contains("no cpuidle driver"), "{}", remedy(&idle, &no_driver));
        // A deep state enabled and nothing held: the advice stands.
        let deep = RemedyContext { idle_states: Some(vec![("C6".into(), 133)]), ..Default::default() };
        assert!(remedy(&idle, &deep).contains("hold /dev/cpu_dma_latency open at 0"));
    }

    #[test]
    fn every_cause_has_a_remedy_but_configuration() {
        use CauseKind::*;
        let all = [
            TimerIrqDelay,
            IrqHandler,
            Irq,
            Vector,
            TimerTick,
            Softirq,
            Nmi,
            BlockingTask,
            PreemptOff,
            Idle,
            IrqsOff,
            PreemptOrIrqsOff,
            KernelCode,
            RtThrottling,
            ReturnToUser,
            NoKernelEvent,
            OtherKernelEvent,
            WakeupLatency,
            FunctionTime,
            LostEvents,
            NotTraced,
        ];
        for k in all {
            assert!(!remedy(&e(k, Culprit::named("x")), &RemedyContext::default()).is_empty(), "{k:?}");
        }
        assert!(remedy(&e(Configuration, Culprit::named("x")), &RemedyContext::default()).is_empty());
    }
}
