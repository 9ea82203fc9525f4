//! The latency event set: which tracepoints latscope enables (the default set or a user list), the
//! filters that cut their cost, and which of them this kernel lacks, with the option that would add them.

use crate::SysError;
use latscope_model::{CpuList, MissingFeature};
use std::path::Path;

/// One tracepoint to enable, with an optional filter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventSpec {
    /// Event system (`sched`).
    pub system: String,
    /// Event name (`sched_switch`).
    pub name: String,
    /// A filter expression for the event's `filter` file (`target_cpu == 1`), when it cuts overhead.
    pub filter: Option<String>,
    /// What would provide the event when a kernel lacks it.
    pub enable: &'static str,
}

impl EventSpec {
    fn new(system: &str, name: &str, enable: &'static str) -> EventSpec {
        EventSpec { system: system.into(), name: name.into(), filter: None, enable }
    }

    /// `system/name`.
    pub fn id(&self) -> String {
        format!("{}/{}", self.system, self.name)
    }
}

/// Which events to record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum EventSelection {
    /// The default latency set: interrupts, hrtimers, scheduler switches and wakeups, NMIs and
    /// `clock_nanosleep` (`default_events`).
    #[default]
    Default,
    /// The default set (when `default` is listed) plus `system` or `system/name` entries.
    List {
        /// Whether `default` was in the list.
        default: bool,
        /// `(system, Some(name))` for one event, `(system, None)` for a whole system.
        entries: Vec<(String, Option<String>)>,
    },
}

impl EventSelection {
    /// Parses `default` or a comma list of `default`, `SYSTEM`, `SYSTEM/NAME` or `SYSTEM:NAME`.
    pub fn parse(s: &str) -> Result<EventSelection, SysError> {
        let s = s.trim();
        if s.is_empty() || s == "default" {
            return Ok(EventSelection::Default);
        }
        let mut default = false;
        let mut entries = Vec::new();
        for item in s.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            if item == "default" {
                default = true;
                continue;
            }
            let (sys, name) = match item.split_once(['/', ':']) {
                Some((a, b)) => (a, Some(b)),
                None => (item, None),
            };
            let ok = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
            if !ok(sys) || name.is_some_and(|n| !ok(n)) {
                return Err(SysError::Invalid(format!(
                    "--events: '{item}' is not an event; use SYSTEM or SYSTEM/NAME (e.g. sched/sched_switch), \
                     see 'ls /sys/kernel/tracing/events'"
                )));
            }
            entries.push((sys.to_string(), name.map(str::to_string)));
        }
        Ok(EventSelection::List { default, entries })
    }
}

const CORE: &str = "CONFIG_FTRACE=y and CONFIG_ENABLE_DEFAULT_TRACERS=y (event tracing)";
const X86_VECTORS: &str =
    "x86 only (CONFIG_X86_LOCAL_APIC); elsewhere the timer interrupt shows as irq/irq_handler_entry";
const X86_NMI: &str = "x86 only (arch/x86 nmi tracepoint); NMIs are not traced on this architecture";
const SYSCALLS: &str = "CONFIG_FTRACE_SYSCALLS=y";
const LOCK: &str = "Linux 5.19 or later (the lock:contention_begin/end tracepoints)";
const LISTED: &str = "a kernel with this tracepoint (see /sys/kernel/tracing/available_events for what exists)";

/// The default latency event set: interrupts, IRQ vectors, hrtimers, scheduler switches and wakeups,
/// priority inheritance, kernel lock contention, NMIs, and `clock_nanosleep` entry/exit. Wakeups are filtered to the measured CPUs when `cpus` is given.
/// The `clock_nanosleep` pair is `syscalls/*` here; [`resolve`] falls back to filtered `raw_syscalls`.
pub fn default_events(cpus: Option<&CpuList>) -> Vec<EventSpec> {
    let mut v = Vec::new();
    for n in ["irq_handler_entry", "irq_handler_exit", "softirq_entry", "softirq_exit"] {
        v.push(EventSpec::new("irq", n, CORE));
    }
    for n in [
        "local_timer_entry",
        "local_timer_exit",
        "reschedule_entry",
        "reschedule_exit",
        "call_function_entry",
        "call_function_exit",
        "call_function_single_entry",
        "call_function_single_exit",
        "irq_work_entry",
        "irq_work_exit",
    ] {
        v.push(EventSpec::new("irq_vectors", n, X86_VECTORS));
    }
    for n in ["hrtimer_start", "hrtimer_cancel", "hrtimer_expire_entry", "hrtimer_expire_exit"] {
        v.push(EventSpec::new("timer", n, CORE));
    }
    let wake_filter = cpus
        .filter(|c| !c.is_empty())
        .map(|c| c.iter().map(|cpu| format!("target_cpu == {cpu}")).collect::<Vec<_>>().join(" || "));
    for n in ["sched_switch", "sched_waking", "sched_wakeup", "sched_wakeup_new", "sched_migrate_task"] {
        let mut e = EventSpec::new("sched", n, CORE);
        if n.starts_with("sched_wak") {
            e.filter = wake_filter.clone();
        }
        v.push(e);
    }
    // Priority inheritance: a task boosted by a higher-priority waiter on an rt_mutex it holds (on
    // PREEMPT_RT every spinlock_t is one). Rare outside RT kernels, so it costs nothing there.
    v.push(EventSpec::new("sched", "sched_pi_setprio", CORE));
    // Kernel lock contention: which lock a task or an interrupt waited for, and how long. Fires only when
    // a lock is contended (32 pairs in 5 s here under a two-core build).
    v.push(EventSpec::new("lock", "contention_begin", LOCK));
    v.push(EventSpec::new("lock", "contention_end", LOCK));
    v.push(EventSpec::new("nmi", "nmi_handler", X86_NMI));
    v.push(EventSpec::new("syscalls", "sys_enter_clock_nanosleep", SYSCALLS));
    v.push(EventSpec::new("syscalls", "sys_exit_clock_nanosleep", SYSCALLS));
    v
}

/// The `raw_syscalls` stand-ins for a missing `syscalls/*_clock_nanosleep` event, filtered on its number.
fn raw_syscall_fallback(e: &EventSpec) -> Option<EventSpec> {
    if e.system != "syscalls" || !e.name.ends_with("_clock_nanosleep") {
        return None;
    }
    let name = if e.name.starts_with("sys_enter") { "sys_enter" } else { "sys_exit" };
    let mut r = EventSpec::new("raw_syscalls", name, SYSCALLS);
    r.filter = Some(format!("id == {}", libc::SYS_clock_nanosleep));
    Some(r)
}

/// The events of a selection that exist under `events_dir` (an instance's `events/`), and the missing
/// ones as data: what, why, and the kernel option that would provide them.
pub fn resolve(
    events_dir: &Path,
    sel: &EventSelection,
    cpus: Option<&CpuList>,
) -> (Vec<EventSpec>, Vec<MissingFeature>) {
    let mut wanted = Vec::new();
    let mut missing = Vec::new();
    match sel {
        EventSelection::Default => wanted = default_events(cpus),
        EventSelection::List { default, entries } => {
            if *default {
                wanted = default_events(cpus);
            }
            for (sys, name) in entries {
                match name {
                    Some(n) => wanted.push(EventSpec::new(sys, n, LISTED)),
                    None => match list_system(&events_dir.join(sys)) {
                        Some(names) => wanted.extend(names.iter().map(|n| EventSpec::new(sys, n, LISTED))),
                        None => missing.push(MissingFeature::new(
                            format!("event system {sys}"),
                            format!("{} does not exist on this kernel", events_dir.join(sys).display()),
                            "a kernel built with the subsystem and its tracepoints; see available_events",
                        )),
                    },
                }
            }
        }
    }
    let mut present: Vec<EventSpec> = Vec::new();
    for e in wanted {
        if present.iter().any(|p| p.system == e.system && p.name == e.name) {
            continue;
        }
        if exists(events_dir, &e) {
            present.push(e);
            continue;
        }
        if let Some(fb) = raw_syscall_fallback(&e).filter(|fb| exists(events_dir, fb)) {
            if !present.iter().any(|p| p.system == fb.system && p.name == fb.name) {
                present.push(fb);
            }
            continue;
        }
        missing.push(MissingFeature::new(format!("event {}", e.id()), "not in this kernel's tracefs", e.enable));
    }
    (present, missing)
}

fn exists(events_dir: &Path, e: &EventSpec) -> bool {
    events_dir.join(&e.system).join(&e.name).join("enable").is_file()
}

fn list_system(dir: &Path) -> Option<Vec<String>> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter(|d| d.path().join("format").is_file())
        .map(|d| d.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    Some(names)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fake_events(events: &[&str]) -> std::path::PathBuf {
        static N: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let root = std::env::temp_dir().join(format!("latscope-events-test-{}-{n}", std::process::id()));
        for e in events {
            let d = root.join(e);
            std::fs::create_dir_all(&d).expect("mkdir");
            std::fs::write(d.join("enable"), "0\n").expect("write");
            std::fs::write(d.join("format"), "name: x\n").expect("write");
        }
        root
    }

    #[test]
    fn parses_event_lists() {
        assert_eq!(EventSelection::parse("default").expect("ok"), EventSelection::Default);
        let sel = EventSelection::parse("default, sched/sched_switch,irq,timer:hrtimer_start").expect("ok");
        assert_eq!(
            sel,
            EventSelection::List {
                default: true,
                entries: vec![
                    ("sched".into(), Some("sched_switch".into())),
                    ("irq".into(), None),
                    ("timer".into(), Some("hrtimer_start".into()))
                ]
            }
        );
        let err = EventSelection::parse("sched/../../etc").expect_err("bad");
        assert!(err.to_string().contains("sched/../../etc"), "{err}");
    }

    #[test]
    fn default_set_filters_wakeups_to_measured_cpus() {
        let cpus = CpuList::parse("1,3").expect("cpus");
        let set = default_events(Some(&cpus));
        let waking = set.iter().find(|e| e.name == "sched_waking").expect("waking");
        assert_eq!(waking.filter.as_deref(), Some("target_cpu == 1 || target_cpu == 3"));
        assert!(set.iter().any(|e| e.id() == "irq_vectors/local_timer_entry"));
        assert!(set.iter().any(|e| e.id() == "nmi/nmi_handler"));
        assert!(default_events(None).iter().all(|e| e.filter.is_none()));
    }

    #[test]
    fn missing_events_are_reported_with_the_option_and_syscalls_fall_back() {
        let dir = fake_events(&[
            "sched/sched_switch",
            "irq/irq_handler_entry",
            "raw_syscalls/sys_enter",
            "raw_syscalls/sys_exit",
        ]);
        let (present, missing) = resolve(&dir, &EventSelection::Default, None);
        let ids: Vec<String> = present.iter().map(EventSpec::id).collect();
        assert_eq!(
            ids,
            vec!["irq/irq_handler_entry", "sched/sched_switch", "raw_syscalls/sys_enter", "raw_syscalls/sys_exit"]
        );
        let enter = &present[2];
        assert_eq!(enter.filter.as_deref(), Some(format!("id == {}", libc::SYS_clock_nanosleep).as_str()));
        let nmi = missing.iter().find(|m| m.what == "event nmi/nmi_handler").expect("nmi missing");
        assert!(nmi.enable.contains("x86"), "{nmi}");
        assert!(!missing.iter().any(|m| m.what.contains("clock_nanosleep")), "fallback used: {missing:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn whole_systems_expand_and_unknown_systems_are_missing() {
        let dir = fake_events(&["sched/sched_switch", "sched/sched_wakeup"]);
        let sel = EventSelection::parse("sched,bogus").expect("ok");
        let (present, missing) = resolve(&dir, &sel, None);
        assert_eq!(present.len(), 2);
        assert_eq!(missing.len(), 1);
        assert!(missing[0].what.contains("bogus"));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
