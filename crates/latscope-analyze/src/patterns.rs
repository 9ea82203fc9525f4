//! Known culprit patterns recognised in code: the printk/console path (interrupts off while a serial
//! console prints) and the RT bandwidth timer started from `enqueue_task_rt`; and the part of a stack
//! worth naming.

use crate::symbol;
use latscope_model::{CauseKind, Explanation, Pattern};

/// Functions of the printk/console path (bare symbol names).
const CONSOLE_FUNCS: &[&str] = &[
    "console_unlock",
    "console_trylock_spinning",
    "console_flush_all",
    "console_emit_next_record",
    "call_console_drivers",
    "vprintk_emit",
    "serial8250_console_write",
    "univ8250_console_write",
    "pl011_console_write",
    "msm_geni_serial_console_write",
];

/// printk-family wrappers that add nothing to a call chain (`vprintk_default` …).
const PRINTK_INTERNAL: &[&str] =
    &["vprintk_default", "vprintk_func", "vprintk", "vprintk_emit", "vprintk_store", "vprintk_deferred"];

/// Generic frames at the bottom of every kernel-thread or syscall stack.
const GENERIC_TAIL: &[&str] = &[
    "kthread",
    "ret_from_fork",
    "ret_from_fork_asm",
    "worker_thread",
    "process_one_work",
    "el0_svc",
    "el0_svc_common",
    "el0_sync",
    "do_syscall_64",
    "entry_SYSCALL_64_after_hwframe",
    "system_call_fastpath",
];

/// Functions that start the RT bandwidth timer.
const RT_TIMER_START: &[&str] = &["hrtimer_start_range_ns", "hrtimer_start", "start_rt_bandwidth"];

/// Whether `func` (bare name) is part of the console/printk path.
pub fn is_console_func(func: &str) -> bool {
    CONSOLE_FUNCS.contains(&func) || func.ends_with("_console_write")
}

/// Whether any of `names` (symbols in any form) is on the console/printk path.
pub fn any_console<'a>(names: impl IntoIterator<Item = &'a str>) -> bool {
    names.into_iter().any(|n| is_console_func(symbol::bare(n)))
}

/// Whether a stack (innermost first) went through printk.
pub fn through_printk(frames: &[&str]) -> bool {
    frames.iter().any(|f| matches!(symbol::bare(f), "printk" | "_printk" | "vprintk" | "vprintk_emit"))
}

/// Whether a call path (outermost first) started the RT bandwidth timer from `enqueue_task_rt`.
pub fn starts_rt_bandwidth_timer(func: &str, path: &[&str]) -> bool {
    RT_TIMER_START.contains(&func) && path.iter().any(|p| *p == "enqueue_task_rt" || *p == "start_rt_bandwidth")
}

/// The pattern an explanation's culprit shows, if any: console printing for interrupts or preemption held
/// off on the printk path, the RT bandwidth timer for function time spent starting it (in the explanation
/// or in what it holds).
pub fn recognise(e: &Explanation) -> Option<Pattern> {
    let chain = || e.culprit.chain.iter().map(String::as_str).chain(std::iter::once(e.culprit.name.as_str()));
    match e.cause {
        CauseKind::IrqsOff | CauseKind::PreemptOrIrqsOff | CauseKind::PreemptOff if any_console(chain()) => {
            Some(Pattern::ConsolePrint)
        }
        CauseKind::TimerIrqDelay => e.within.first().and_then(recognise),
        CauseKind::FunctionTime => {
            let mine = |x: &Explanation| {
                let path: Vec<&str> = x.culprit.chain.iter().rev().map(String::as_str).collect();
                starts_rt_bandwidth_timer(&x.culprit.name, &path)
            };
            (mine(e) || e.within.iter().any(mine)).then_some(Pattern::RtBandwidthTimer)
        }
        _ => None,
    }
}

/// The call chain worth naming from a stack (innermost first): printk internals and generic bottom frames
/// dropped.
pub fn meaningful_chain(frames: &[&str]) -> Vec<String> {
    frames
        .iter()
        .map(|f| symbol::bare(f))
        .filter(|f| !PRINTK_INTERNAL.contains(f) && !GENERIC_TAIL.contains(f) && !f.is_empty())
        .map(str::to_string)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{Culprit, Nanos};

    #[test]
    fn printk_chain_of_seed_000() {
        let frames = [
            "vprintk_default",
            "vprintk_func",
            "printk",
            "__dynamic_pr_debug",
            "__qseecom_unload_app_kthread_func",
            "kthread",
            "ret_from_fork",
        ];
        assert_eq!(
            meaningful_chain(&frames),
            vec!["printk", "__dynamic_pr_debug", "__qseecom_unload_app_kthread_func"]
        );
        assert!(is_console_func("console_trylock_spinning"));
        assert!(is_console_func("foo_console_write"));
        assert!(!is_console_func("schedule"));
        assert!(through_printk(&frames));
    }

    #[test]
    fn recognises_the_console_and_the_rt_timer() {
        let off = |chain: &[&str]| {
            let c = Culprit::default().with_chain(chain.iter().map(|s| s.to_string()).collect());
            Explanation::new(CauseKind::IrqsOff, c, Nanos(1), None)
        };
        assert_eq!(recognise(&off(&["console_unlock+0xc0", "vprintk_emit"])), Some(Pattern::ConsolePrint));
        assert_eq!(recognise(&off(&["do_idle"])), None);
        let mut delay = Explanation::new(CauseKind::TimerIrqDelay, Culprit::default(), Nanos(1), None);
        delay.within.push(off(&["console_unlock"]));
        assert_eq!(recognise(&delay), Some(Pattern::ConsolePrint));
        let f = Explanation::new(
            CauseKind::FunctionTime,
            Culprit::named("hrtimer_start_range_ns").with_chain(vec![
                "hrtimer_start_range_ns".into(),
                "enqueue_task_rt".into(),
                "root".into(),
            ]),
            Nanos(1),
            None,
        );
        assert_eq!(recognise(&f), Some(Pattern::RtBandwidthTimer));
    }
}
