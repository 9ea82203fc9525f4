//! Reading a kernel stack taken at an interrupt (a `stacktrace` trigger, a latency tracer's `<stack
//! trace>`): where the CPU was when the interrupt finally came — user space, the idle loop, or kernel code,
//! with its chain (innermost first), the system call it ran in, and whether the interrupt was taken right at
//! a point that re-enables interrupts. The frames of the tracing machinery and of the interrupt's own entry
//! are left out: what remains is the interrupted code.

use crate::symbol;
use latscope_model::Text;

/// Where a stack taken at an interrupt shows the CPU was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Interrupted {
    /// The interrupt came from user space: no kernel frame below its entry.
    User,
    /// The idle loop was running.
    Idle,
    /// Kernel code was running.
    Kernel {
        /// The interrupted code, innermost first, without the generic syscall-entry frames.
        chain: Vec<String>,
        /// The system call it ran in, when the stack shows one (`write`, `openat`).
        syscall: Option<String>,
        /// The innermost frame is a point that re-enables interrupts (`_raw_spin_unlock_irqrestore`,
        /// `finish_task_switch`…): the interrupt was held pending until exactly there.
        at_irq_enable: bool,
    },
}

/// Frames of the tracing machinery that records the stack.
fn is_tracing(f: &str) -> bool {
    f.starts_with("trace_event_raw_event_")
        || f.starts_with("perf_trace_")
        || f.starts_with("trace_")
        || f.starts_with("__trace_")
        || f.starts_with("ftrace_")
        || f.starts_with("event_trigger")
        || f == "stack_trace_save"
}

/// Frames of an interrupt's entry and handling (x86, arm64, arm), outermost of which the interrupted code
/// follows.
fn is_interrupt(f: &str) -> bool {
    const EXACT: &[&str] = &[
        "apic_timer_interrupt",
        "smp_apic_timer_interrupt",
        "ret_from_intr",
        "common_interrupt",
        "handle_irq",
        "irq_exit",
        "irq_exit_rcu",
        "irq_enter",
        "irq_enter_rcu",
        "gic_handle_irq",
        "handle_domain_irq",
        "__handle_domain_irq",
        "generic_handle_irq",
        "generic_handle_domain_irq",
        "handle_percpu_devid_irq",
        "handle_arch_irq",
        "call_on_irq_stack",
        "do_interrupt_handler",
        "el1_interrupt",
        "el1_irq",
        "el1h_64_irq",
        "el1h_64_irq_handler",
        "__irq_svc",
        "hrtimer_interrupt",
        "__hrtimer_run_queues",
        "__sysvec_apic_timer_interrupt",
        "local_apic_timer_interrupt",
    ];
    EXACT.contains(&f)
        || f.starts_with("asm_sysvec_")
        || f.starts_with("sysvec_")
        || f.starts_with("__sysvec_")
        || f.starts_with("asm_common_interrupt")
        || f.starts_with("arch_timer_handler")
        || f.ends_with("_handle_irq")
}

/// Entry frames of an interrupt taken from user mode.
fn is_user_entry(f: &str) -> bool {
    matches!(f, "el0_interrupt" | "el0_irq" | "el0t_64_irq" | "el0t_64_irq_handler" | "__irq_usr" | "el0t_32_irq")
}

/// Frames of the idle loop.
fn is_idle(f: &str) -> bool {
    const IDLE: &[&str] = &[
        "do_idle",
        "cpu_startup_entry",
        "default_idle",
        "default_idle_call",
        "arch_cpu_idle",
        "cpuidle_enter",
        "cpuidle_enter_state",
        "cpuidle_idle_call",
        "cpu_idle_poll",
        "poll_idle",
        "intel_idle",
        "mwait_idle",
        "start_secondary",
        "rest_init",
        "secondary_start_kernel",
        "cpu_do_idle",
        "psci_idle_enter",
        "acpi_idle_enter",
        "acpi_safe_halt",
        "pv_native_safe_halt",
        "default_enter_idle",
    ];
    IDLE.contains(&f) || f.starts_with("acpi_idle") || f.starts_with("intel_idle") || f.ends_with("_idle_enter")
}

/// The generic syscall-entry frames at the bottom of a system call's stack.
fn is_syscall_entry(f: &str) -> bool {
    matches!(
        f,
        "do_syscall_64"
            | "entry_SYSCALL_64_after_hwframe"
            | "entry_SYSCALL_64"
            | "x64_sys_call"
            | "do_int80_syscall_32"
            | "el0_svc"
            | "el0_svc_common"
            | "el0t_64_sync"
            | "el0t_64_sync_handler"
            | "invoke_syscall"
            | "do_el0_svc"
            | "ret_fast_syscall"
            | "system_call_fastpath"
    )
}

/// A point that re-enables interrupts.
fn enables_irqs(f: &str) -> bool {
    f.ends_with("_irqrestore")
        || f.ends_with("_unlock_irq")
        || f.ends_with("irq_enable")
        || f.ends_with("_irq_restore")
        || f.starts_with("finish_task_switch")
}

/// The system call a stack shows (`__x64_sys_write` → `write`, `ksys_write` → `write`).
pub fn syscall_of(chain: &[String]) -> Option<String> {
    chain.iter().rev().find_map(|f| {
        ["__x64_sys_", "__ia32_sys_", "__arm64_sys_", "__se_sys_", "__do_sys_", "ksys_", "sys_"]
            .iter()
            .find_map(|p| f.strip_prefix(p))
            .map(str::to_string)
    })
}

/// Frames of the scheduler on the way into a context switch.
fn is_scheduler(f: &str) -> bool {
    f.starts_with("__schedule")
        || f == "schedule"
        || f.starts_with("schedule_")
        || f.starts_with("preempt_schedule")
        || f.contains("cond_resched")
        || f.starts_with("irqentry_exit")
        || f.starts_with("raw_irqentry_exit")
        || f.starts_with("__traceiter_")
}

/// Where a task gave up the CPU, from the stack at the switch away from it (innermost first): the code
/// that called into the scheduler (`filemap_read` after `__cond_resched`, `exit_to_user_mode_loop` on
/// the way back to user space, `do_nanosleep`…), without the generic syscall-entry frames.
pub fn yielded(frames: &[Text]) -> Vec<String> {
    let names: Vec<&str> = frames.iter().map(|f| symbol::bare(f)).collect();
    let from = names.iter().rposition(|f| is_tracing(f) || is_scheduler(f) || is_interrupt(f)).map_or(0, |i| i + 1);
    names[from..].iter().filter(|f| !f.is_empty() && !is_syscall_entry(f)).map(|f| f.to_string()).collect()
}

/// Where the CPU was when the interrupt whose stack is `frames` (innermost first) came.
pub fn interrupted(frames: &[Text]) -> Interrupted {
    let names: Vec<&str> = frames.iter().map(|f| symbol::bare(f)).collect();
    let from = match names.iter().rposition(|f| is_interrupt(f) || is_user_entry(f) || is_tracing(f)) {
        Some(i) if names.get(i).is_some_and(|f| is_user_entry(f)) => return Interrupted::User,
        Some(i) => i + 1,
        None => 0,
    };
    let rest: Vec<&str> = names[from..].iter().copied().filter(|f| !f.is_empty()).collect();
    if rest.is_empty() {
        return Interrupted::User;
    }
    if rest.iter().any(|f| is_idle(f)) {
        return Interrupted::Idle;
    }
    let mut chain: Vec<String> = rest.iter().filter(|f| !is_syscall_entry(f)).map(|f| f.to_string()).collect();
    if chain.is_empty() {
        // Interrupted in the system call entry or exit path itself: that is where it was.
        chain.push(rest[0].to_string());
    }
    let at_irq_enable = rest.first().is_some_and(|f| enables_irqs(f));
    Interrupted::Kernel { syscall: syscall_of(&chain), chain, at_irq_enable }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frames(names: &[&str]) -> Vec<Text> {
        names.iter().map(|n| Text::from(*n)).collect()
    }

    fn kernel_chain(f: &[Text]) -> Vec<String> {
        match interrupted(f) {
            Interrupted::Kernel { chain, .. } => chain,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_printk_storm_stack_is_console_code_in_write() {
        // Recorded on this project's development VM (kernel 6.18) during a printk storm on CPU 1.
        let f = frames(&[
            "trace_event_raw_event_x86_irq_vector",
            "__sysvec_apic_timer_interrupt",
            "sysvec_apic_timer_interrupt",
            "asm_sysvec_apic_timer_interrupt",
            "console_flush_all",
            "console_unlock",
            "vprintk_emit",
            "devkmsg_emit.constprop.0",
            "devkmsg_write.cold",
            "vfs_write",
            "ksys_write",
            "do_syscall_64",
            "entry_SYSCALL_64_after_hwframe",
        ]);
        let Interrupted::Kernel { chain, syscall, at_irq_enable } = interrupted(&f) else { panic!("{f:?}") };
        assert_eq!(chain[..3], ["console_flush_all", "console_unlock", "vprintk_emit"]);
        assert_eq!(chain.last().map(String::as_str), Some("ksys_write"));
        assert_eq!(syscall.as_deref(), Some("write"));
        assert!(!at_irq_enable);
    }

    #[test]
    fn where_a_task_gave_up_the_cpu() {
        let f = frames(&[
            "trace_event_raw_event_sched_switch",
            "__schedule",
            "__cond_resched",
            "filemap_read",
            "vfs_read",
            "ksys_read",
            "do_syscall_64",
        ]);
        assert_eq!(yielded(&f), ["filemap_read", "vfs_read", "ksys_read"]);
        let back_to_user = frames(&["__schedule", "schedule", "exit_to_user_mode_loop", "do_syscall_64"]);
        assert_eq!(yielded(&back_to_user), ["exit_to_user_mode_loop"]);
    }

    #[test]
    fn an_irq_enable_point_user_space_and_idle() {
        let unlock = frames(&[
            "trace_event_raw_event_x86_irq_vector",
            "asm_sysvec_apic_timer_interrupt",
            "_raw_write_unlock_irq",
            "do_exit",
            "__x64_sys_exit_group",
            "x64_sys_call",
            "do_syscall_64",
        ]);
        let Interrupted::Kernel { syscall, at_irq_enable, .. } = interrupted(&unlock) else { panic!() };
        assert!(at_irq_enable);
        assert_eq!(syscall.as_deref(), Some("exit_group"));
        let user = frames(&[
            "trace_event_raw_event_x86_irq_vector",
            "sysvec_apic_timer_interrupt",
            "asm_sysvec_apic_timer_interrupt",
        ]);
        assert_eq!(interrupted(&user), Interrupted::User);
        // Seen live: interrupted on the way out of a system call, in the entry code itself.
        let exit = frames(&["asm_sysvec_apic_timer_interrupt", "do_syscall_64", "entry_SYSCALL_64_after_hwframe"]);
        assert_eq!(kernel_chain(&exit), ["do_syscall_64"]);
        // An older arm kernel's stack from idle (a trace people posted, kernel 4.19, Raspberry Pi).
        let idle = frames(&[
            "tick_sched_timer",
            "__hrtimer_run_queues",
            "hrtimer_interrupt",
            "arch_timer_handler_phys",
            "handle_percpu_devid_irq",
            "generic_handle_irq",
            "__handle_domain_irq",
            "bcm2836_arm_irqchip_handle_irq",
            "__irq_svc",
            "arch_cpu_idle",
            "default_idle_call",
            "do_idle",
            "cpu_startup_entry",
        ]);
        assert_eq!(interrupted(&idle), Interrupted::Idle);
        let arm64_user = frames(&["gic_handle_irq", "call_on_irq_stack", "el0_interrupt", "el0t_64_irq_handler"]);
        assert_eq!(interrupted(&arm64_user), Interrupted::User);
    }
}
