//! Ground truth for the kernel stacks of `latscope timer --trace` (the `stacktrace` trigger at the timer
//! interrupt and at the measuring thread's switch-in), each cause injected on CPU 1 and asserted:
//!
//! - a printk storm (a shell writing `<3>` messages to /dev/kmsg, printed on the serial console with
//!   interrupts off) is named as console printing with interrupts off in that shell's `write()`, with the
//!   function chain; never the hypervisor, never the timer handler; where the shell kept the woken thread
//!   waiting (this kernel is preempt=none), its syscall and where it gave the CPU up are named;
//! - a SCHED_OTHER busy loop in user space is found in user space by the stack, and never blamed for
//!   holding an interrupt off or the CPU;
//! - an idle CPU is recognised as idle and takes no stack (the trigger's filter).
//!
//! Needs root, tracefs and CPU 1 (the printk test a serial console that prints `<3>` messages); skips with
//! the reason otherwise, fails under LATSCOPE_REQUIRE_LIVE=1.

use latscope_model::{CauseKind, Explanation, Place, TimerResult, TimerTrace, TracedWakeup};
use std::process::{Child, Command, Stdio};

mod live;

use live::Need;

const BIN: &str = env!("CARGO_BIN_EXE_latscope");

/// A process on CPU 1 running `script` under `sh` at nice -20, killed on drop. The highest normal weight
/// keeps the injected cause the main occupant of CPU 1 even when other normal tasks (builds) run there.
struct OnCpu1(Child);

impl OnCpu1 {
    fn start(script: &str) -> OnCpu1 {
        let child = Command::new("nice")
            .args(["-n", "-20", "taskset", "-c", "1", "sh", "-c", script])
            .stdout(Stdio::null())
            .spawn()
            .expect("start a shell on CPU 1");
        OnCpu1(child)
    }

    /// The shell's pid (nice and taskset exec it), the pid its own trace events carry.
    fn pid(&self) -> i32 {
        self.0.id() as i32
    }
}

impl Drop for OnCpu1 {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `latscope timer --trace` on CPU 1 for `duration`, its result.
fn traced_timer(duration: &str, top: &str) -> TimerResult {
    traced_timer_with(duration, top, &[])
}

fn traced_timer_with(duration: &str, top: &str, extra: &[&str]) -> TimerResult {
    let out = Command::new(BIN)
        .args(["timer", "-c", "1", "-p", "95", "-D", duration, "--trace", "--top", top, "-q", "--json", "-"])
        .args(extra)
        .output()
        .expect("run latscope timer");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "timer failed: {stderr}");
    let r: TimerResult = serde_json::from_slice(&out.stdout).expect("json");
    let t = r.trace.as_ref().expect("the result has the trace's explanations");
    assert!(t.notes.iter().all(|n| !n.contains("stack")), "stacks were not taken: {:?}", t.notes);
    r
}

/// One line per worst wakeup, short enough for a CI log: its latency, each share's cause and magnitude, and
/// what held its timer interrupt back (cause, place, task).
fn brief(t: &TimerTrace) -> String {
    let mut out = String::new();
    for w in &t.worst {
        let shares: Vec<String> = w.shares.iter().map(|s| format!("{:?} {}", s.cause, s.magnitude.0)).collect();
        let held = held_back(w).map(|i| {
            format!("{:?} at {:?} in {:?}", i.cause, i.culprit.place, i.culprit.task.as_ref().map(|t| &t.comm))
        });
        out.push_str(&format!(
            "\n  {} ns {:?}: [{}] held back: {held:?}",
            w.sample_latency_ns.0,
            w.matched,
            shares.join(", ")
        ));
    }
    out
}

/// What held the timer interrupt of `w` back, when the trace shows a delay before it.
fn held_back(w: &TracedWakeup) -> Option<&Explanation> {
    w.shares.iter().find(|s| s.cause == CauseKind::TimerIrqDelay).and_then(|d| d.within.first())
}

/// Whether the console prints `<3>` messages (level 3 below the console loglevel) on a serial console.
fn serial_console_prints_errors() -> Result<(), String> {
    let printk =
        std::fs::read_to_string("/proc/sys/kernel/printk").map_err(|e| format!("/proc/sys/kernel/printk: {e}"))?;
    let level: u32 = printk.split_whitespace().next().and_then(|v| v.parse().ok()).unwrap_or(0);
    let consoles = std::fs::read_to_string("/proc/consoles").unwrap_or_default();
    if level <= 3 || !consoles.lines().any(|l| l.starts_with("ttyS")) {
        return Err(format!(
            "needs a serial console printing level-3 messages (console loglevel {level}, consoles: {})",
            consoles.split_whitespace().next().unwrap_or("none")
        ));
    }
    Ok(())
}

#[test]
fn a_printk_storm_is_console_printing_with_interrupts_off_in_the_writing_shell() {
    if !live::ready(&[Need::Root, Need::Tracefs, Need::Cpu(1), Need::Tool("taskset")]) {
        return;
    }
    if let Err(why) = serial_console_prints_errors() {
        live::skip(why);
        return;
    }
    let _turn = live::turn::take();
    // ~1 ms of console printing with interrupts off every ~6 ms, on the measured CPU.
    let storm = OnCpu1::start(
        "i=0; while [ $i -lt 700 ]; do i=$((i+1)); echo \"<3>latscope test: printk storm $i\" > /dev/kmsg; \
         sleep 0.005; done",
    );
    // The 40 worst: this VM alone has 10-20 wakeups above 1 ms in 5 s that no kernel event explains, which
    // can fill a shorter list before the storm's ~1 ms.
    let r = traced_timer("3s", "40");
    let writer = storm.pid();
    drop(storm);
    let t = r.trace.as_ref().expect("trace");
    assert!(t.stacks > 0, "no kernel stack was recorded:{}", brief(t));

    let mut irqs_off = 0;
    let mut blocked = 0;
    let mut in_write = 0;
    for w in t.worst.iter().filter(|w| w.found()) {
        let h = w.headline.as_ref().unwrap_or_else(|| panic!("no headline: {w:?}"));
        // Where the storm's shell held the wakeup, the console printing is the cause, never the timer handler.
        // (Not judged for the VM's own stalls, where the storm took no part: a fresh-clone make test had the CPU
        // idle, the interrupt 0.89 ms late with no event, and 5.2 ms between the timer handler's entry and exit.)
        let storm_involved = held_back(w).is_some_and(|i| i.culprit.pid() == Some(writer))
            || w.shares.iter().any(|s| s.culprit.pid() == Some(writer));
        assert!(!storm_involved || w.trace_latency_ns.0 < 500_000 || h.cause != CauseKind::IrqHandler, "{w:?}");
        for b in w.shares.iter().filter(|s| {
            matches!(s.cause, CauseKind::BlockingTask | CauseKind::PreemptOff)
                && s.culprit.pid() == Some(writer)
                && s.magnitude.0 > 100_000
        }) {
            // The shell kept the woken RT thread waiting (this kernel is preempt=none): where it was when the
            // thread was woken (the waking interrupt's stack) and where it gave the CPU up (the switch-in's
            // stack); in printk, the system call is write().
            assert!(!b.culprit.chain.is_empty() && !b.culprit.yielded_at.is_empty(), "{b:?}");
            if b.culprit.chain.iter().any(|f| f.contains("printk")) {
                assert_eq!(b.culprit.syscall.as_deref(), Some("write"), "{b:?}");
                in_write += 1;
            }
            blocked += 1;
        }
        let Some(inner) = held_back(w).filter(|i| i.culprit.pid() == Some(writer)) else { continue };
        // The interrupt found the shell in the kernel: what held it is that kernel code (decided, or said
        // to be undecided), never time below the kernel.
        if inner.culprit.place == Some(Place::Kernel) {
            assert!(matches!(inner.cause, CauseKind::IrqsOff | CauseKind::KernelCode), "{w:?}");
        }
        if inner.cause == CauseKind::IrqsOff && inner.culprit.chain.iter().any(|f| f.starts_with("console_")) {
            // The stack at the late interrupt: the console flush, in the shell's write().
            assert_eq!(inner.culprit.syscall.as_deref(), Some("write"), "{inner:?}");
            irqs_off += 1;
        }
    }
    eprintln!("held back by console printing: {irqs_off}; blocked by the shell: {blocked}, in write(): {in_write}");
    assert!(irqs_off + blocked >= 2, "the storm explains {irqs_off} + {blocked} of the worst wakeups:{}", brief(t));
    assert!(irqs_off >= 1, "no worst wakeup was held back by console printing:{}", brief(t));
}

#[test]
fn a_user_space_spinner_is_found_in_user_space_and_not_blamed() {
    if !live::ready(&[Need::Root, Need::Tracefs, Need::Cpu(1), Need::Tool("taskset")]) {
        return;
    }
    let _turn = live::turn::take();
    // A SCHED_OTHER loop of shell builtins: no system call, always in user space.
    let spinner = OnCpu1::start("while :; do :; done");
    let r = traced_timer("2s", "20");
    let pid = spinner.pid();
    drop(spinner);
    let t = r.trace.as_ref().expect("trace");
    let mut found_in_user_space = 0;
    for w in t.worst.iter().filter(|w| w.found()) {
        if let Some(inner) = held_back(w).filter(|i| i.culprit.pid() == Some(pid)) {
            // The interrupt found the spinner: the stack says user space, where it holds nothing off.
            assert_eq!(inner.culprit.place, Some(Place::UserSpace), "{w:?}");
            assert!(!matches!(inner.cause, CauseKind::IrqsOff | CauseKind::KernelCode), "{w:?}");
            found_in_user_space += 1;
        }
        // A normal task is preempted by the woken RT thread at once: never a blocker worth naming.
        let blocked: u64 = w
            .shares
            .iter()
            .filter(|s| {
                matches!(s.cause, CauseKind::BlockingTask | CauseKind::PreemptOff) && s.culprit.pid() == Some(pid)
            })
            .map(|s| s.magnitude.0)
            .sum();
        assert!(blocked < 50_000, "the user-space spinner was blamed for {blocked} ns: {w:?}");
    }
    assert!(found_in_user_space >= 1, "no worst wakeup's interrupt found the spinner:{}", brief(t));
}

#[test]
fn an_idle_cpu_is_idle_and_takes_no_stack() {
    if !live::ready(&[Need::Root, Need::Tracefs, Need::Cpu(1)]) {
        return;
    }
    let _turn = live::turn::take();
    // The worst 100 of the 2000 wakeups: after a build this VM's unbound kworkers (ext4 conversion, RCU frees)
    // run on CPU 1 for up to a millisecond in the non-preemptible kernel, and the worst ten were all theirs
    // (each named as such: a kworker in kernel code). The claim is about the wakeups that found CPU 1 idle.
    let r = traced_timer("2s", "100");
    let t = r.trace.as_ref().expect("trace");
    let mut idle = 0;
    for w in t.worst.iter().filter(|w| w.found()) {
        let Some(inner) = held_back(w) else { continue };
        if matches!(inner.culprit.place, Some(Place::Idle { .. })) {
            assert!(matches!(inner.cause, CauseKind::Idle | CauseKind::NoKernelEvent), "{w:?}");
            assert!(inner.culprit.task.is_none() && inner.culprit.chain.is_empty(), "{w:?}");
            idle += 1;
        }
    }
    // The measuring thread sleeps between wakeups: on a CPU with nothing else to do most late interrupts
    // find it idle. Other tasks may run there too (above); one idle case is enough.
    assert!(idle >= 1, "no worst wakeup's interrupt found the CPU idle:{}", brief(t));
}

#[test]
fn without_stacks_a_busy_cpu_is_not_known_rather_than_the_hypervisor() {
    if !live::ready(&[Need::Root, Need::Tracefs, Need::Cpu(1), Need::Tool("taskset")]) {
        return;
    }
    let _turn = live::turn::take();
    let spinner = OnCpu1::start("while :; do :; done");
    let r = traced_timer_with("1s", "10", &["--no-stacks"]);
    let pid = spinner.pid();
    drop(spinner);
    let t = r.trace.as_ref().expect("trace");
    assert_eq!(t.stacks, 0, "--no-stacks took stacks");
    let mut unknown = 0;
    for w in t.worst.iter().filter(|w| w.found()) {
        if let Some(inner) = held_back(w).filter(|i| i.culprit.pid() == Some(pid)) {
            // The interrupt found the loop, and nothing says where it was: not known, not the hypervisor.
            assert_eq!(inner.culprit.place, Some(Place::Unknown { stacks_traced: false }), "{w:?}");
            unknown += 1;
        }
    }
    assert!(unknown >= 1, "no worst wakeup's interrupt found the loop:{}", brief(t));
}
