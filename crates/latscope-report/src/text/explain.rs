//! Explanations in words: a culprit's name ([`who`]), a part's label in a list ([`label`]), what the part
//! that explains most of a late wakeup was ([`wakeup_sentence`]), and the remedy. The only place the
//! sentences of a cause are built: an exhaustive `match` over [`CauseKind`], so a new cause does not
//! compile until it has its words here.

use crate::human::human;
use latscope_model::{is_rt_prio, CauseKind, CpuId, Culprit, Explanation, Nanos, Pid, Place, TaskRef};

/// A task as the explanations name it: `spin (pid 60, SCHED_FIFO/RR prio 97)`.
pub fn task(t: &TaskRef) -> String {
    if let Some(l) = &t.latscope {
        return latscope_thread(l, t);
    }
    match t.prio {
        Some(p) if is_rt_prio(p) => format!("{} (pid {}, SCHED_FIFO/RR prio {})", t.comm, t.pid, 99 - p),
        Some(p) => format!("{} (pid {}, SCHED_OTHER, kernel prio {p})", t.comm, t.pid),
        None => format!("{} (pid {})", t.comm, t.pid),
    }
}

/// A thread of latscope itself, named as such and with what that means for the number.
fn latscope_thread(l: &latscope_model::LatscopeThread, t: &TaskRef) -> String {
    match l.other_run {
        None => format!(
            "latscope's own {} ({}, pid {}: the measurement's own work on this CPU, not a load of this machine)",
            l.role, t.comm, t.pid
        ),
        Some(run) => format!(
            "another latscope run (pid {run}), its {} ({}, pid {}: a concurrent measurement on the same CPU)",
            l.role, t.comm, t.pid
        ),
    }
}

/// A task that ran, by its task (its code is said by [`located`]), or what else ran.
fn runner(c: &Culprit) -> String {
    c.task.as_ref().map_or_else(|| c.name.clone(), task)
}

/// Where a task that held the CPU was, when stacks show it: at the interrupt that woke the waiting task,
/// and where it gave the CPU up.
pub fn located(c: &Culprit) -> String {
    let chain = |v: &[String]| {
        let mut s = v.iter().take(6).map(String::as_str).collect::<Vec<_>>().join(" ← ");
        if v.len() > 6 {
            s.push_str(" ← …");
        }
        s
    };
    let mut s = String::new();
    if !c.chain.is_empty() {
        s.push_str(&format!(" When the waiting task was woken it was in {}", chain(&c.chain)));
    }
    if !c.yielded_at.is_empty() {
        let join = if s.is_empty() { " It gave up the CPU at " } else { "; it gave up the CPU at " };
        s.push_str(join);
        s.push_str(&chain(&c.yielded_at));
    }
    if !s.is_empty() {
        s.push_str(&syscall(c));
        s.push('.');
    }
    s
}

/// Code as a chain, outermost last: `console_flush_all ← console_unlock ← vprintk_emit` in `bash:5`.
pub fn code(c: &Culprit) -> String {
    let chain: Vec<&str> = c.chain.iter().take(6).map(String::as_str).collect();
    let mut s = chain.join(" ← ");
    if c.chain.len() > 6 {
        s.push_str(" ← …");
    }
    if let Some(t) = &c.task {
        s.push_str(&format!(" in {}", task(t)));
    }
    s
}

/// `, in write()` when the culprit ran in a system call.
fn syscall(c: &Culprit) -> String {
    c.syscall.as_deref().map_or_else(String::new, |s| format!(", in {s}()"))
}

/// Who or what a culprit is: a task with its policy, an IRQ by name, code with the task it ran in.
pub fn who(c: &Culprit) -> String {
    let code = match c.chain.as_slice() {
        [] => None,
        [only] => Some(only.clone()),
        [first, parent, ..] => Some(format!("{first} (parent {parent})")),
    };
    match (code, &c.task) {
        (Some(code), Some(t)) if t.latscope.is_some() => format!("{code} in {}", task(t)),
        (Some(code), Some(t)) => format!("{code} in {}:{}", t.comm, t.pid),
        (Some(code), None) => code,
        (None, Some(t)) => task(t),
        (None, None) => c.name.clone(),
    }
}

/// A part as a list labels it: its kind and culprit (`IRQ virtio0`, `task spin (pid 60, …)`).
pub fn label(e: &Explanation) -> String {
    let c = &e.culprit;
    match e.cause {
        CauseKind::TimerIrqDelay => format!("timer IRQ delay ({})", c.name),
        CauseKind::IrqHandler => format!("IRQ handler {}", c.name),
        CauseKind::Irq => match c.irq {
            Some(n) => format!("IRQ {n} {}", c.name),
            None => format!("IRQ {}", c.name),
        },
        CauseKind::Vector => format!("vector {}", c.name),
        CauseKind::TimerTick => format!("timer tick ({})", c.name),
        CauseKind::Softirq => format!("softirq {}", c.name),
        CauseKind::Nmi => format!("NMI {}", c.name),
        CauseKind::BlockingTask => format!("task {}", runner(c)),
        CauseKind::PreemptOff => format!("non-preemptible task {}", runner(c)),
        CauseKind::Idle => "idle".into(),
        CauseKind::IrqsOff => format!("irqs off at {}", who(c)),
        CauseKind::BhOff => format!("bottom halves off in {}", who(c)),
        CauseKind::PreemptOrIrqsOff => format!("irqs or preemption off at {}", who(c)),
        CauseKind::KernelCode => format!("kernel code {}", who(c)),
        CauseKind::RtThrottling => format!("RT throttling ({})", c.name),
        CauseKind::ReturnToUser => "return to user space".into(),
        CauseKind::NoKernelEvent => match c.place {
            Some(Place::Unknown { .. }) => format!("no kernel event while {} ran (no stack)", runner(c)),
            Some(Place::Kernel) if !c.name.is_empty() => format!("no kernel event inside {} (code or stall)", c.name),
            _ => "no kernel event (hardware or hypervisor)".into(),
        },
        CauseKind::OtherKernelEvent => "kernel events without a handler or task switch".into(),
        CauseKind::WakeupLatency => format!("wakeup path ({})", c.name),
        CauseKind::FunctionTime => format!("function {}", c.name),
        CauseKind::LostEvents => "lost events".into(),
        CauseKind::Configuration => format!("configuration {}", c.name),
        CauseKind::NotTraced => "not traced".into(),
    }
}

/// `×3` for a part summed from several occurrences, nothing for one.
pub fn times(e: &Explanation) -> String {
    if e.count > 1 {
        format!(" ×{}", e.count)
    } else {
        String::new()
    }
}

/// The remedy of an explanation, when it has one.
pub fn remedy(e: &Explanation) -> Option<&str> {
    e.hint.as_ref().map(|h| h.remedy.as_str()).filter(|r| !r.is_empty())
}

/// Why a recognised pattern matters, when the explanation's hint names one.
pub fn why(e: &Explanation) -> Option<&str> {
    e.hint.as_ref().map(|h| h.why.as_str()).filter(|w| !w.is_empty())
}

fn on_cpu(cpu: Option<CpuId>) -> String {
    cpu.map_or_else(String::new, |c| format!(" on CPU {c}"))
}

/// What held back a timer interrupt, after "passed before the timer interrupt even entered" (or "before
/// the interrupt entered"): `within` is what the trace shows there, the deciding item first.
pub fn held_back(within: &[Explanation]) -> String {
    let Some(e) = within.first() else {
        return ": the trace shows nothing that held it back.".into();
    };
    let d = human(e.magnitude);
    match e.cause {
        CauseKind::IrqsOff | CauseKind::PreemptOrIrqsOff => {
            format!(": interrupts were disabled by {}{} for {d}.", who(&e.culprit), syscall(&e.culprit))
        }
        CauseKind::Idle => match e.culprit.place {
            // Decided as an idle exit only when it is no longer than the slowest idle state takes to leave.
            Some(Place::Idle { exit_max_ns: Some(m) }) => {
                format!(
                    ": the CPU was idle ({d}), waking from an idle state (its states take at most {} to leave).",
                    human(m)
                )
            }
            // Only the time is known, not what it went to: an idle exit is not claimed.
            _ => format!(
                ": the CPU was idle for {d}{}: the trace does not account for the delay (how long this CPU's idle \
                 states take to leave is not known).",
                if within.len() == 1 { ", with no other activity in the trace there" } else { "" }
            ),
        },
        CauseKind::NoKernelEvent => match e.culprit.place {
            Some(Place::UserSpace) => format!(
                ": it came into user space ({}), where nothing in the kernel held it: the time went below the kernel \
                 (hardware, firmware or hypervisor).",
                e.culprit.task.as_ref().map_or_else(|| "a task".to_string(), task)
            ),
            Some(Place::Idle { exit_max_ns: Some(Nanos::ZERO) }) => {
                ": the CPU was idle, only polling (no idle state to \
                 leave while /dev/cpu_dma_latency was held at 0): the time went below the kernel (hardware, firmware \
                 or hypervisor)."
                    .into()
            }
            Some(Place::Idle { exit_max_ns: Some(m) }) => format!(
                ": the CPU was idle, but in states that take at most {} to leave: the time went below the kernel \
                 (hardware, firmware or hypervisor).",
                human(m)
            ),
            Some(Place::Unknown { stacks_traced }) => format!(
                ": the interrupt found {} running, {}: whether kernel code held interrupts off or the time went \
                 below the kernel (hardware, firmware or hypervisor) is not known.",
                e.culprit.task.as_ref().map_or_else(|| "a task".to_string(), task),
                if stacks_traced {
                    "but the kernel recorded no stack there although it did at other interrupts in this trace"
                } else {
                    "and the trace has no kernel stacks to show where"
                }
            ),
            Some(Place::Idle { exit_max_ns: None } | Place::Kernel) | None => match &e.culprit.task {
                Some(t) => format!(
                    ": {} ran with interrupts on as far as the trace shows; no kernel event explains it \
                     (hardware, firmware or hypervisor).",
                    task(t)
                ),
                None => ": no kernel event explains it (hardware, firmware or hypervisor).".into(),
            },
        },
        CauseKind::KernelCode => format!(
            ": it came into kernel code, {}{}, after {d}: interrupts were off there, or the CPU was stalled below \
             the kernel; the trace does not tell which.",
            code(&e.culprit),
            syscall(&e.culprit)
        ),
        CauseKind::Irq
        | CauseKind::Vector
        | CauseKind::TimerTick
        | CauseKind::Softirq
        | CauseKind::Nmi
        | CauseKind::IrqHandler => format!(": another interrupt ran first, {} for {d}.", label(e)),
        _ => format!(": {} for {d}.", label(e)),
    }
}

/// A late wakeup as its sentence needs it.
#[derive(Clone, Debug, Default)]
pub struct WakeupView<'a> {
    /// The woken task, when the trace names it.
    pub task: Option<&'a TaskRef>,
    /// Its thread id.
    pub tid: Pid,
    /// The latency.
    pub latency: Nanos,
    /// The CPU it ran on.
    pub cpu: CpuId,
    /// The timer callback that woke it.
    pub timer: Option<&'a str>,
    /// From the interrupt's entry to the timer callback.
    pub callback_delay: Option<Nanos>,
    /// Other timers that ran in the same interrupt.
    pub other_timers: Vec<&'a str>,
    /// The trace has no wakeup: the thread was not asleep at its deadline.
    pub not_asleep: bool,
}

/// One paragraph without the remedy: who woke how late, and what the part `h` that explains most of it was.
pub fn wakeup_sentence(w: &WakeupView<'_>, h: Option<&Explanation>) -> String {
    let mut s = if w.not_asleep {
        format!(
            "tid {} was not asleep at its deadline (no wakeup in the trace: it was kept off CPU {} before it could \
             sleep)",
            w.tid, w.cpu
        )
    } else {
        let name = match w.task {
            Some(t) => {
                let prio =
                    t.prio.map_or_else(String::new, |p| format!(" (prio {})", if is_rt_prio(p) { 99 - p } else { p }));
                format!("{}:{}{prio}", t.comm, t.pid)
            }
            // The run's verdict knows the thread only when the trace named it.
            None if w.tid == 0 => "the measuring thread".to_string(),
            None => format!("tid {}", w.tid),
        };
        let mut s = format!("{name} woke {} late on CPU {}", human(w.latency), w.cpu);
        if let Some(f) = w.timer {
            s.push_str(&format!(" (timer {f})"));
        }
        s
    };
    let Some(h) = h else {
        s.push_str(": the trace shows nothing between the expected wakeup and the switch-in.");
        return s;
    };
    let share = h.share.unwrap_or_else(|| h.magnitude.0 as f64 * 100.0 / w.latency.0.max(1) as f64);
    s.push_str(&format!("; {share:.0}% of it ({})", human(h.magnitude)));
    s.push_str(&part_clause(w, h));
    s
}

/// What the part `h` of the wakeup `w` was, as the rest of the sentence after "N% of it (D)".
fn part_clause(w: &WakeupView<'_>, h: &Explanation) -> String {
    let c = &h.culprit;
    let cpu = on_cpu(h.cpu);
    match h.cause {
        CauseKind::BlockingTask => {
            let kind = match (w.task.and_then(|t| t.prio), c.task.as_ref().and_then(|t| t.prio)) {
                (Some(v), Some(p)) if is_rt_prio(p) && p <= v => "a task of higher or equal real-time priority",
                _ => "another task",
            };
            format!(" was {} running{cpu}: {kind}.{}", runner(c), located(c))
        }
        CauseKind::PreemptOff => format!(
            " was {} running{cpu}: a lower-priority task the woken RT task could not preempt (preemption disabled, \
             or RT throttling).{}",
            runner(c),
            located(c)
        ),
        CauseKind::TimerIrqDelay => {
            format!(" passed before the timer interrupt even entered{}", held_back(&h.within))
        }
        CauseKind::IrqHandler => {
            let mut s = match w.timer {
                Some(_) => format!(" was the {} handler that ran the timer", c.name),
                None => format!(" was the {} interrupt in which it was woken", c.name),
            };
            if let Some(d) = w.callback_delay {
                s.push_str(&format!(" ({} of it before the timer callback ran)", human(d)));
            }
            if !w.other_timers.is_empty() {
                s.push_str(&format!(", which also ran {}", w.other_timers.join(", ")));
            }
            if let Some(q) = h.within.iter().find(|q| q.cause == CauseKind::NoKernelEvent) {
                s.push_str(&format!(
                    "; {} of it passed inside the interrupt with no kernel event: its own code, or the CPU stalled \
                     below the kernel (hardware, firmware or hypervisor); the trace cannot tell which",
                    human(q.magnitude)
                ));
            }
            s.push('.');
            s
        }
        CauseKind::Irq | CauseKind::Vector | CauseKind::TimerTick => format!(" was the {} interrupt{cpu}.", c.name),
        CauseKind::Softirq => format!(" was the {} softirq{cpu}.", c.name),
        CauseKind::Nmi => format!(" was the NMI handler {}.", c.name),
        CauseKind::Idle => match h.within.iter().find(|q| q.cause == CauseKind::NoKernelEvent) {
            Some(q) => format!(
                " passed in the idle task after the task was woken on this CPU, with the switch to it due; {} of it \
                 with no kernel event: the idle loop switches at once, so either code that traces nothing ran there \
                 or the CPU was stalled below the kernel (hardware, firmware or hypervisor); the trace cannot tell \
                 which.",
                human(q.magnitude)
            ),
            None => " the CPU sat idle after the wakeup before switching to the task (idle exit or wakeup IPI).".into(),
        },
        CauseKind::IrqsOff | CauseKind::PreemptOrIrqsOff => format!(" was interrupts disabled at {}.", who(c)),
        CauseKind::BhOff => format!(" was bottom halves disabled in {}.", who(c)),
        CauseKind::KernelCode => format!(
            " came late into kernel code, {}{}: interrupts were off there, or the CPU was stalled below the kernel.",
            code(c),
            syscall(c)
        ),
        CauseKind::RtThrottling => format!(
            " was RT throttling{cpu}: real-time tasks had used up their bandwidth (kernel.sched_rt_runtime_us), so \
             normal tasks ran while it waited."
        ),
        CauseKind::ReturnToUser => " was the return from the system call to user space.".into(),
        CauseKind::NoKernelEvent => match (c.place, &c.task) {
            (Some(Place::UserSpace), Some(t)) => format!(
                " passed while the trace still shows {} current{cpu}, though the wakeup found it in user space,                  where the return from the interrupt preempts it: no kernel event accounts for that time                  (hardware, firmware or hypervisor).",
                task(t)
            ),
            _ => " had no kernel event on the CPU at all (hardware, firmware or hypervisor).".to_string(),
        },
        CauseKind::OtherKernelEvent
        | CauseKind::WakeupLatency
        | CauseKind::FunctionTime
        | CauseKind::LostEvents
        | CauseKind::Configuration
        | CauseKind::NotTraced => format!(" was {}.", label(h)),
    }
}

/// The sentence of a wakeup with its remedy appended (`… Remedy: …`), for the places that show one line.
pub fn with_remedy(sentence: String, h: Option<&Explanation>) -> String {
    match h.and_then(remedy) {
        Some(r) => format!("{sentence} Remedy: {r}."),
        None => sentence,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::Hint;

    #[test]
    fn latscope_threads_are_named_as_latscope_and_say_what_that_means() {
        let mut own = TaskRef::new("latscope", 812, Some(120));
        own.latscope = Some(Box::new(latscope_model::LatscopeThread { other_run: None, role: "main thread".into() }));
        assert_eq!(
            task(&own),
            "latscope's own main thread (latscope, pid 812: the measurement's own work on this CPU, not a load of \
             this machine)"
        );
        let mut other = TaskRef::new("latscope-t1", 902, Some(2));
        other.latscope = Some(Box::new(latscope_model::LatscopeThread {
            other_run: Some(900),
            role: "timer thread on CPU 1".into(),
        }));
        assert!(
            task(&other).starts_with("another latscope run (pid 900), its timer thread on CPU 1"),
            "{}",
            task(&other)
        );
        let c = Culprit { chain: vec!["do_nanosleep".into()], ..Culprit::task(other) };
        assert!(who(&c).starts_with("do_nanosleep in another latscope run (pid 900)"), "{}", who(&c));
    }

    #[test]
    fn a_higher_priority_spinner_is_named_with_its_policy() {
        let victim = TaskRef::new("cyclictest", 50, Some(4));
        let mut h = Explanation::new(
            CauseKind::BlockingTask,
            Culprit::task(TaskRef::new("spin", 60, Some(2))),
            Nanos::from_us(580),
            Some(CpuId(1)),
        )
        .share_of(Nanos::from_us(612));
        h.hint = Some(Hint { remedy: "move spin off CPU 1".into(), ..Hint::default() });
        let w = WakeupView {
            task: Some(&victim),
            tid: 50,
            latency: Nanos::from_us(612),
            cpu: CpuId(1),
            timer: Some("hrtimer_wakeup"),
            ..WakeupView::default()
        };
        let s = with_remedy(wakeup_sentence(&w, Some(&h)), Some(&h));
        assert_eq!(
            s,
            "cyclictest:50 (prio 95) woke 612 us late on CPU 1 (timer hrtimer_wakeup); 95% of it (580 us) was spin \
             (pid 60, SCHED_FIFO/RR prio 97) running on CPU 1: a task of higher or equal real-time priority. \
             Remedy: move spin off CPU 1."
        );
    }

    /// The run's verdict has no thread id when the trace did not name the thread: it said "tid 0 woke".
    #[test]
    fn an_unnamed_thread_is_not_tid_0() {
        let w = WakeupView { latency: Nanos::from_us(90), cpu: CpuId(1), ..WakeupView::default() };
        let h = Explanation::new(CauseKind::IrqHandler, Culprit::named("local_timer"), Nanos::from_us(60), None);
        let s = wakeup_sentence(&w, Some(&h));
        assert!(s.starts_with("the measuring thread woke 90 us late on CPU 1"), "{s}");
    }

    #[test]
    fn a_timer_irq_delay_says_what_held_the_interrupt() {
        let w = WakeupView { tid: 7, latency: Nanos::from_us(1_590), cpu: CpuId(1), ..WakeupView::default() };
        let mut h =
            Explanation::new(CauseKind::TimerIrqDelay, Culprit::named("local_timer"), Nanos::from_us(1_555), None);
        let s = wakeup_sentence(&w, Some(&h));
        assert!(
            s.ends_with("passed before the timer interrupt even entered: the trace shows nothing that held it back."),
            "{s}"
        );
        h.within.push(Explanation::new(CauseKind::NoKernelEvent, Culprit::default(), Nanos::from_us(1_555), None));
        assert!(
            wakeup_sentence(&w, Some(&h)).ends_with("no kernel event explains it (hardware, firmware or hypervisor).")
        );
        let section = Culprit::task(TaskRef::new("bash", 9, None))
            .with_chain(vec!["console_unlock+0xc0".into(), "vprintk_emit".into()]);
        h.within = vec![Explanation::new(CauseKind::IrqsOff, section, Nanos::from_us(1_000), None)];
        assert!(
            wakeup_sentence(&w, Some(&h))
                .ends_with("interrupts were disabled by console_unlock+0xc0 (parent vprintk_emit) in bash:9 for 1 ms."),
            "{}",
            wakeup_sentence(&w, Some(&h))
        );
    }

    #[test]
    fn labels_name_the_kind_and_the_culprit() {
        let e = |k, c| Explanation::new(k, c, Nanos(1), None);
        assert_eq!(label(&e(CauseKind::Irq, Culprit::irq(Some(30), "virtio0"))), "IRQ 30 virtio0");
        assert_eq!(label(&e(CauseKind::TimerTick, Culprit::named("local_timer"))), "timer tick (local_timer)");
        assert_eq!(
            label(&e(CauseKind::BlockingTask, Culprit::task(TaskRef::new("kworker/1:1", 42, Some(120))))),
            "task kworker/1:1 (pid 42, SCHED_OTHER, kernel prio 120)"
        );
        assert_eq!(label(&e(CauseKind::NoKernelEvent, Culprit::default())), "no kernel event (hardware or hypervisor)");
    }
}
