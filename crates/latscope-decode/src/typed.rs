//! The one mapping from an event's (system, name, fields) to a typed [`EventKind`], shared by every reader.
//!
//! Readers (ftrace text, raw ring-buffer pages, trace-cmd `.dat`) differ in how they get at a field;
//! they all implement [`FieldSource`] and call [`build`] (the test `a_field_source_builds_a_typed_event`
//! shows the smallest source).
//!
//! Field names are the kernel's tracefs `format` names (`prev_comm`, `vector`, `delta_ns`, `caller_offs`…).
//! Text readers whose print format is not `key=value` (`sys_enter: NR 0 (…)`, `workqueue_execute_start:
//! work struct …: function …`, timerlat and osnoise lines) present their values under those same names.
//! The contract per method:
//!
//! - [`FieldSource::int`]: a numeric field (decimal, `0x` hex, negative). `None` when absent or not a number.
//! - [`FieldSource::ptr`]: a pointer-like field (`hrtimer`, `work`, `timer`): text prints these as bare hex.
//! - [`FieldSource::text`]: a string field, ideally interned by the source (see [`Interner`]).
//! - [`FieldSource::func`]: a code address as a symbol (`tick_sched_timer`, `console_unlock+0xc0/0x510`).
//!   Binary sources resolve `function`, `handler`, `ip` through kallsyms and, for `preemptirq` events,
//!   `caller`/`parent` from `caller_offs`/`parent_offs` (relative to `_stext`). The default is `text`.
//! - [`FieldSource::fields`]: every payload field, only called for [`EventKind::Other`] and per-syscall args.
//!
//! [`build`] never fails: a known event missing a required field becomes `Other` with its fields, so
//! nothing is lost and no analysis sees a half-filled typed event.

use latscope_model::event::SOFTIRQ_NAMES;
use latscope_model::event::{OsnoiseCounts, OsnoiseKind, TimerOp, TimerlatContext, Toggle, WakeupKind};
use latscope_model::{CpuId, EventKind, Field, FieldValue, Nanos, SyscallArgs, TaskName, Text};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// How a reader exposes one event's fields to [`build`]. See the module docs for each method's contract.
pub trait FieldSource {
    /// Integer value of field `name`.
    fn int(&self, name: &str) -> Option<i64>;
    /// String value of field `name`.
    fn text(&self, name: &str) -> Option<Text>;
    /// All payload fields with their values (for [`EventKind::Other`]).
    fn fields(&self) -> Vec<Field>;
    /// Pointer-like field `name` (text formats print it as bare hex).
    fn ptr(&self, name: &str) -> Option<u64> {
        self.int(name).map(|v| v as u64)
    }
    /// Code-address field `name` as a symbol name.
    fn func(&self, name: &str) -> Option<Text> {
        self.text(name)
    }
    /// Function-pointer field `name` (a timer's or work item's callback) as a symbol name, without the
    /// offset a text trace may print after it (trace-cmd's `hrtimer_wakeup/0x0`, `%pS`'s
    /// `hrtimer_wakeup+0x0/0x30`): a callback always starts its function.
    fn callback(&self, name: &str) -> Option<Text> {
        let t = self.func(name)?;
        match latscope_model::symbol::bare(&t) {
            s if s.len() < t.len() => Some(Text::from(s)),
            _ => Some(t),
        }
    }
    /// Task-name field `name` (`comm`, `prev_comm`): binary sources read the kernel's fixed-size field.
    fn task_name(&self, name: &str) -> Option<TaskName> {
        self.text(name).map(|t| TaskName::new(&t))
    }
    /// A `kernel_stack` record's frames, innermost first, as symbol names (`%ps`). Text sources carry stacks
    /// on their own lines (`<stack trace>` then ` => fn`) and do not implement this.
    fn stack_frames(&self) -> Option<std::sync::Arc<[Text]>> {
        None
    }
    /// `sys_enter`'s arguments field `name`: binary sources give the words, text sources the text.
    fn syscall_args(&self, name: &str) -> Option<SyscallArgs> {
        self.text(name).map(SyscallArgs::Text)
    }
    /// A shared [`Text`] for `s` (event and system names of `Other` events); sources with an
    /// [`Interner`] override this to avoid one allocation per event.
    fn intern(&self, s: &str) -> Text {
        Text::from(s)
    }
}

/// A small string cache so repeated function, IRQ and event names share one allocation.
///
/// Bounded: when it holds `capacity` strings it starts over (names in a trace repeat heavily, so a
/// reset costs a few allocations, never memory growth on pathological input).
#[derive(Debug)]
pub struct Interner {
    map: HashMap<Box<str>, Text, BuildHasherDefault<FastHash>>,
    capacity: usize,
}

/// FNV-1a over 8-byte words: names are short, and SipHash's DoS resistance buys nothing for a bounded cache.
#[derive(Default)]
pub struct FastHash(u64);

impl Hasher for FastHash {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        let mut h = self.0 ^ 0xcbf2_9ce4_8422_2325;
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            h = (h ^ u64::from_le_bytes(w)).wrapping_mul(0x0100_0000_01b3).rotate_left(23);
        }
        for &b in chunks.remainder() {
            h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        self.0 = h;
    }
}

impl Default for Interner {
    fn default() -> Self {
        Interner::with_capacity(16 * 1024)
    }
}

impl Interner {
    /// An interner keeping at most `capacity` strings.
    pub fn with_capacity(capacity: usize) -> Interner {
        Interner { map: HashMap::default(), capacity: capacity.max(1) }
    }

    /// The shared [`Text`] for `s`.
    pub fn intern(&mut self, s: &str) -> Text {
        if let Some(t) = self.map.get(s) {
            return t.clone();
        }
        if self.map.len() >= self.capacity {
            self.map.clear();
        }
        let t: Text = Text::from(s);
        self.map.insert(Box::from(s), t.clone());
        t
    }
}

/// The typed event for `system:name` with fields from `f`. `system` is `None` when the format does not
/// say (ftrace text); names are then unique enough (`irq_handler_entry`, `local_timer_entry`…).
pub fn build<F: FieldSource + ?Sized>(system: Option<&str>, name: &str, f: &F) -> EventKind {
    typed(system, name, f).unwrap_or_else(|| other(system, name, f))
}

/// `Other { system, name, fields }` for `f`.
pub fn other<F: FieldSource + ?Sized>(system: Option<&str>, name: &str, f: &F) -> EventKind {
    EventKind::Other { system: system.map(|s| f.intern(s)), name: f.intern(name), fields: f.fields() }
}

fn typed<F: FieldSource + ?Sized>(system: Option<&str>, name: &str, f: &F) -> Option<EventKind> {
    let sys = system.unwrap_or("");
    let name_str = name;
    Some(match name {
        "irq_handler_entry" => {
            EventKind::IrqHandlerEntry { irq: f.int("irq")? as u32, name: f.text("name").unwrap_or_else(empty) }
        }
        "irq_handler_exit" => EventKind::IrqHandlerExit { irq: f.int("irq")? as u32, handled: handled(f) },
        "softirq_entry" | "softirq_exit" | "softirq_raise" => {
            let vec = f.int("vec")? as u32;
            let name = softirq_name_text(vec);
            match name_str {
                "softirq_entry" => EventKind::SoftirqEntry { vec, name },
                "softirq_exit" => EventKind::SoftirqExit { vec, name },
                _ => EventKind::SoftirqRaise { vec, name },
            }
        }
        "hrtimer_init" | "hrtimer_setup" => EventKind::HrtimerInit {
            hrtimer: f.ptr("hrtimer")?,
            clockid: label(f, "clockid", clock_name),
            mode: label(f, "mode", hrtimer_mode_name),
        },
        "hrtimer_start" => EventKind::HrtimerStart {
            hrtimer: f.ptr("hrtimer")?,
            function: f.callback("function").unwrap_or_else(empty),
            expires: nanos(f.int("expires")?),
            softexpires: nanos(f.int("softexpires").or_else(|| f.int("expires"))?),
            mode: label(f, "mode", hrtimer_mode_name),
        },
        "hrtimer_cancel" => EventKind::HrtimerCancel { hrtimer: f.ptr("hrtimer")? },
        "hrtimer_expire_entry" => EventKind::HrtimerExpireEntry {
            hrtimer: f.ptr("hrtimer")?,
            function: f.callback("function").unwrap_or_else(empty),
            now: nanos(f.int("now")?),
        },
        "hrtimer_expire_exit" => EventKind::HrtimerExpireExit { hrtimer: f.ptr("hrtimer")? },
        "timer_init" | "timer_start" | "timer_cancel" | "timer_expire_entry" | "timer_expire_exit" => {
            let op = match name {
                "timer_init" => TimerOp::Init,
                "timer_start" => TimerOp::Start,
                "timer_cancel" => TimerOp::Cancel,
                "timer_expire_entry" => TimerOp::ExpireEntry,
                _ => TimerOp::ExpireExit,
            };
            EventKind::Timer {
                op,
                timer: f.ptr("timer")?,
                function: f.callback("function"),
                expires: f.int("expires").map(|v| v as u64),
                now: f.int("now").map(|v| v as u64),
            }
        }
        "sched_switch" => EventKind::SchedSwitch {
            prev_comm: f.task_name("prev_comm").unwrap_or_default(),
            prev_pid: f.int("prev_pid")? as i32,
            prev_prio: f.int("prev_prio").unwrap_or(-1) as i32,
            prev_state: prev_state(f),
            next_comm: f.task_name("next_comm").unwrap_or_default(),
            next_pid: f.int("next_pid")? as i32,
            next_prio: f.int("next_prio").unwrap_or(-1) as i32,
        },
        "sched_waking" | "sched_wakeup" | "sched_wakeup_new" => EventKind::SchedWakeup {
            kind: match name {
                "sched_waking" => WakeupKind::Waking,
                "sched_wakeup" => WakeupKind::Wakeup,
                _ => WakeupKind::WakeupNew,
            },
            comm: f.task_name("comm").unwrap_or_default(),
            pid: f.int("pid")? as i32,
            prio: f.int("prio").unwrap_or(-1) as i32,
            target_cpu: f.int("target_cpu").and_then(cpu),
        },
        "sched_migrate_task" => EventKind::SchedMigrate {
            comm: f.task_name("comm").unwrap_or_default(),
            pid: f.int("pid")? as i32,
            prio: f.int("prio").unwrap_or(-1) as i32,
            orig_cpu: cpu(f.int("orig_cpu")?)?,
            dest_cpu: cpu(f.int("dest_cpu")?)?,
        },
        "sched_pi_setprio" => EventKind::SchedPiSetprio {
            comm: f.task_name("comm").unwrap_or_default(),
            pid: f.int("pid")? as i32,
            oldprio: f.int("oldprio")? as i32,
            newprio: f.int("newprio")? as i32,
        },
        "contention_begin" if sys.is_empty() || sys == "lock" => EventKind::LockContentionBegin {
            lock: f.ptr("lock_addr")?,
            flags: match f.text("flags_names") {
                Some(names) => latscope_model::event::lock_flags::parse(&names)?,
                None => f.int("flags")? as u32,
            },
        },
        "contention_end" if sys.is_empty() || sys == "lock" => {
            EventKind::LockContentionEnd { lock: f.ptr("lock_addr")?, ret: f.int("ret")? as i32 }
        }
        "irq_disable" | "irq_enable" | "preempt_disable" | "preempt_enable"
            if sys.is_empty() || sys == "preemptirq" =>
        {
            EventKind::Preemptirq {
                toggle: match name {
                    "irq_disable" => Toggle::IrqDisable,
                    "irq_enable" => Toggle::IrqEnable,
                    "preempt_disable" => Toggle::PreemptDisable,
                    _ => Toggle::PreemptEnable,
                },
                caller: f.func("caller").or_else(|| f.func("caller_offs"))?,
                parent: f.func("parent").or_else(|| f.func("parent_offs")).unwrap_or_else(empty),
            }
        }
        "nmi_handler" => EventKind::NmiHandler {
            handler: f.func("handler").unwrap_or_else(empty),
            delta: nanos(f.int("delta_ns")?),
            handled: f.int("handled").unwrap_or(0) as u32,
        },
        "sys_enter" => EventKind::SysEnter {
            nr: syscall_nr(f.int("id")),
            name: None,
            args: f.syscall_args("args").unwrap_or_else(SyscallArgs::empty),
        },
        "sys_exit" => EventKind::SysExit { nr: syscall_nr(f.int("id")), name: None, ret: f.int("ret")? },
        "print" | "bprint" | "bputs" | "tracing_mark_write" | "tracing_mark" => EventKind::Print {
            ip: f.func("ip"),
            text: f.text("buf").or_else(|| f.text("str")).or_else(|| f.text("text"))?,
        },
        // `osnoise:timerlat_sample` (a tracepoint on some kernels) or the timerlat tracer's own record,
        // `ftrace:timerlat` (6.1: `seq:%u context:%d timer_latency:%llu`), read from raw pages.
        "timerlat_sample" | "timerlat" if name == "timerlat_sample" || sys.is_empty() || sys == "ftrace" => {
            EventKind::Timerlat {
                context: match f.int("context") {
                    Some(0) => TimerlatContext::Irq,
                    Some(2) => TimerlatContext::User,
                    Some(_) => TimerlatContext::Thread,
                    None => match f.text("context").as_deref() {
                        Some("irq") => TimerlatContext::Irq,
                        Some("user-ret") | Some("user") => TimerlatContext::User,
                        _ => TimerlatContext::Thread,
                    },
                },
                seqnum: f.int("seqnum")? as u64,
                latency: nanos(f.int("timer_latency")?),
            }
        }
        // The hwlat tracer's record: `ftrace:hwlat` from raw pages, its text line under the same field names.
        // Durations are whole microseconds; the text shows the wall time as `ts:SECONDS.NANOSECONDS`.
        "hwlat_sample" | "hwlat" if name == "hwlat_sample" || sys.is_empty() || sys == "ftrace" => {
            let us = |n: &str| f.int(n).map(|v| Nanos::from_us(v.max(0) as u64));
            let nmi_count = f.int("nmi_count").unwrap_or(0).max(0) as u32;
            EventKind::Hwlat {
                seqnum: f.int("seqnum")?.max(0) as u32,
                count: f.int("count").unwrap_or(0).max(0) as u32,
                nmi_count,
                inner: us("duration")?,
                outer: us("outer_duration")?,
                nmi_total: us("nmi_total_ts").filter(|_| nmi_count > 0),
                wall: f.text("ts").as_deref().and_then(wall_time),
            }
        }
        "thread_noise" | "irq_noise" | "softirq_noise" | "nmi_noise" | "sample_threshold" => {
            let (kind, label, number) = match name {
                "thread_noise" => (OsnoiseKind::Thread, f.text("comm"), f.int("pid")),
                "irq_noise" => (OsnoiseKind::Irq, f.text("desc"), f.int("vector")),
                "softirq_noise" => {
                    (OsnoiseKind::Softirq, f.int("vector").map(|v| softirq_name_text(v as u32)), f.int("vector"))
                }
                "nmi_noise" => (OsnoiseKind::Nmi, None, None),
                // 6.1 names the field `interference`; the kernel documentation's text shows `interferences`.
                _ => (OsnoiseKind::SampleThreshold, None, f.int("interference").or_else(|| f.int("interferences"))),
            };
            EventKind::Osnoise {
                kind,
                name: label.unwrap_or_else(empty),
                number: number.and_then(|n| u32::try_from(n).ok()),
                start: nanos(f.int("start")?),
                duration: nanos(f.int("duration")?),
            }
        }
        // The osnoise tracer's per-period record (`ftrace:osnoise`), in microseconds.
        "osnoise" if sys == "ftrace" => {
            let count = |k: &str| f.int(k).and_then(|v| u32::try_from(v).ok()).unwrap_or(0);
            EventKind::OsnoiseSample {
                runtime: Nanos::from_us(u64::try_from(f.int("runtime")?).ok()?),
                noise: Nanos::from_us(u64::try_from(f.int("noise")?).ok()?),
                max_single: Nanos::from_us(u64::try_from(f.int("max_sample")?).ok()?),
                counts: OsnoiseCounts {
                    hw: count("hw_count"),
                    nmi: count("nmi_count"),
                    irq: count("irq_count"),
                    softirq: count("softirq_count"),
                    thread: count("thread_count"),
                },
            }
        }
        "workqueue_execute_start" => {
            EventKind::WorkqueueStart { work: f.ptr("work")?, function: f.callback("function").unwrap_or_else(empty) }
        }
        "workqueue_execute_end" => EventKind::WorkqueueEnd { work: f.ptr("work")?, function: f.callback("function") },
        "kernel_stack" if sys.is_empty() || sys == "ftrace" => EventKind::Stack { frames: f.stack_frames()? },
        "function" if sys.is_empty() || sys == "ftrace" => {
            EventKind::Function { func: f.func("ip")?, parent: f.func("parent_ip") }
        }
        "funcgraph_entry" if sys.is_empty() || sys == "ftrace" => {
            EventKind::GraphEntry { depth: f.int("depth").unwrap_or(0) as u32, func: f.func("func")? }
        }
        "funcgraph_exit" if sys.is_empty() || sys == "ftrace" => {
            let duration = match (f.int("calltime"), f.int("rettime")) {
                (Some(c), Some(r)) if r >= c => Some(Nanos((r - c) as u64)),
                _ => None,
            };
            EventKind::GraphExit { depth: f.int("depth").unwrap_or(0) as u32, func: f.func("func"), duration }
        }
        _ => return vector_or_syscall(sys, name, f),
    })
}

/// A syscall number (they all fit 32 bits, x32's 0x4000_0000 flag included); `None` when it does not.
fn syscall_nr(v: Option<i64>) -> Option<i32> {
    v.and_then(|v| i32::try_from(v).ok())
}

/// `irq_vectors:*_entry/_exit` and `syscalls:sys_enter_NAME/sys_exit_NAME`.
fn vector_or_syscall<F: FieldSource + ?Sized>(sys: &str, name: &str, f: &F) -> Option<EventKind> {
    if let Some(call) = name.strip_prefix("sys_enter_") {
        if sys.is_empty() || sys == "syscalls" {
            let args = f.text("args").unwrap_or_else(|| join_fields(&f.fields(), "__syscall_nr"));
            let (nr, name, args) = (syscall_nr(f.int("__syscall_nr")), Some(Text::from(call)), SyscallArgs::Text(args));
            return Some(EventKind::SysEnter { nr, name, args });
        }
    }
    if let Some(call) = name.strip_prefix("sys_exit_") {
        if sys.is_empty() || sys == "syscalls" {
            return Some(EventKind::SysExit {
                nr: syscall_nr(f.int("__syscall_nr")),
                name: Some(Text::from(call)),
                ret: f.int("ret")?,
            });
        }
    }
    if sys.is_empty() || sys == "irq_vectors" {
        let vector = f.int("vector").map(|v| v as u32);
        if let Some(base) = name.strip_suffix("_entry").filter(|b| is_vector(sys, b)) {
            return Some(EventKind::VectorEntry { name: vector_name(base), vector });
        }
        if let Some(base) = name.strip_suffix("_exit").filter(|b| is_vector(sys, b)) {
            return Some(EventKind::VectorExit { name: vector_name(base), vector });
        }
    }
    None
}

/// The x86 `irq_vectors` events (any `*_entry/_exit` is accepted when the system says `irq_vectors`).
const VECTORS: [&str; 16] = [
    "local_timer",
    "reschedule",
    "call_function",
    "call_function_single",
    "irq_work",
    "x86_platform_ipi",
    "error_apic",
    "spurious_apic",
    "thermal_apic",
    "threshold_apic",
    "deferred_error_apic",
    "irq_move_cleanup",
    "vector_config",
    "vector_update",
    "reboot",
    "kvm_posted_intr_wakeup_ipi",
];

fn is_vector(sys: &str, base: &str) -> bool {
    sys == "irq_vectors" || VECTORS.contains(&base)
}

fn vector_name(base: &str) -> Text {
    // Static names for the common ones keep this allocation-free per event.
    thread_local! {
        static NAMES: Vec<Text> = VECTORS.iter().map(|s| Text::from(*s)).collect();
    }
    NAMES.with(|n| n.iter().find(|t| &***t == base).cloned()).unwrap_or_else(|| Text::from(base))
}

/// The softirq vector's name as a shared [`Text`] (`"?"` beyond the known ten).
pub fn softirq_name_text(vec: u32) -> Text {
    thread_local! {
        static NAMES: Vec<Text> = SOFTIRQ_NAMES.iter().map(|s| Text::from(*s)).collect();
    }
    NAMES.with(|n| n.get(vec as usize).cloned()).unwrap_or_else(|| Text::from("?"))
}

/// A name from a table of `&'static str` as a shared [`Text`], made once per thread and name.
fn static_text(name: &'static str) -> Text {
    thread_local! {
        static MADE: std::cell::RefCell<Vec<(&'static str, Text)>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    MADE.with(|m| {
        let mut m = m.borrow_mut();
        if let Some((_, t)) = m.iter().find(|(n, _)| *n == name) {
            return t.clone();
        }
        let t = Text::from(name);
        m.push((name, t.clone()));
        t
    })
}

fn empty() -> Text {
    thread_local! { static EMPTY: Text = Text::from(""); }
    EMPTY.with(|e| e.clone())
}

fn nanos(v: i64) -> Nanos {
    Nanos(v.max(0) as u64)
}

fn cpu(v: i64) -> Option<CpuId> {
    u32::try_from(v).ok().map(CpuId)
}

/// `irq_handler_exit`'s `ret=handled` / `ret=unhandled` (text) or `ret` 1/0 (binary).
fn handled<F: FieldSource + ?Sized>(f: &F) -> bool {
    match f.int("ret") {
        Some(v) => v != 0,
        None => f.text("ret").is_some_and(|t| &*t == "handled"),
    }
}

/// An enum-like field: the integer mapped through `names` (binary), else the printed text.
fn label<F: FieldSource + ?Sized>(f: &F, field: &str, names: fn(i64) -> Option<&'static str>) -> Text {
    if let Some(v) = f.int(field) {
        return names(v).map_or_else(|| Text::from(v.to_string()), static_text);
    }
    f.text(field).unwrap_or_else(empty)
}

fn clock_name(v: i64) -> Option<&'static str> {
    Some(match v {
        0 => "CLOCK_REALTIME",
        1 => "CLOCK_MONOTONIC",
        7 => "CLOCK_BOOTTIME",
        11 => "CLOCK_TAI",
        _ => return None,
    })
}

fn hrtimer_mode_name(v: i64) -> Option<&'static str> {
    Some(match v {
        0 => "ABS",
        1 => "REL",
        2 => "ABS|PINNED",
        3 => "REL|PINNED",
        4 => "ABS|SOFT",
        5 => "REL|SOFT",
        6 => "ABS|PINNED|SOFT",
        7 => "REL|PINNED|SOFT",
        8 => "ABS|HARD",
        9 => "REL|HARD",
        10 => "ABS|PINNED|HARD",
        11 => "REL|PINNED|HARD",
        _ => return None,
    })
}

/// `prev_state` as the kernel prints it: text as is, or the binary bit set decoded (`S`, `D|W`, `R+`).
///
/// Text sources give what the kernel printed (kept as is, even the numbers old kernels print, whose bit
/// meanings differ by version); binary sources give the bit set only.
fn prev_state<F: FieldSource + ?Sized>(f: &F) -> Text {
    if let Some(t) = f.text("prev_state") {
        return t;
    }
    f.int("prev_state").map_or_else(empty, state_text)
}

/// [`state_letters`] as a shared [`Text`]: one per state value below 0x200 (the letters and the preempted
/// bit), made once per thread, so that a `sched_switch` costs no allocation for it.
fn state_text(v: i64) -> Text {
    const KNOWN: i64 = 0x200;
    thread_local! {
        static STATES: Vec<Text> = (0..KNOWN).map(|v| Text::from(state_letters(v))).collect();
    }
    match v {
        0..KNOWN => STATES.with(|s| s[v as usize].clone()),
        _ => Text::from(state_letters(v)),
    }
}

/// The kernel's `__trace_sched_switch_state` letters (4.14+: `TASK_REPORT_MAX` = 0x100 means preempted).
pub fn state_letters(v: i64) -> String {
    const LETTERS: [(i64, &str); 8] =
        [(0x01, "S"), (0x02, "D"), (0x04, "T"), (0x08, "t"), (0x10, "X"), (0x20, "Z"), (0x40, "P"), (0x80, "I")];
    let mut s = String::new();
    for (bit, l) in LETTERS {
        if v & bit != 0 {
            if !s.is_empty() {
                s.push('|');
            }
            s.push_str(l);
        }
    }
    if s.is_empty() {
        s.push('R');
    }
    if v & 0x100 != 0 {
        s.push('+');
    }
    s
}

fn join_fields(fields: &[Field], skip: &str) -> Text {
    let mut s = String::new();
    for fl in fields.iter().filter(|fl| &*fl.name != skip) {
        if !s.is_empty() {
            s.push_str(", ");
        }
        s.push_str(&fl.name);
        s.push_str(": ");
        match &fl.value {
            FieldValue::Int(v) => s.push_str(&format!("{v:x}")),
            FieldValue::Str(t) => s.push_str(t),
        }
    }
    Text::from(s)
}

/// `1581527483.343962693` (seconds and nanoseconds of CLOCK_REALTIME) as nanoseconds.
fn wall_time(ts: &str) -> Option<Nanos> {
    let (sec, ns) = ts.split_once('.')?;
    let sec: u64 = sec.parse().ok()?;
    let ns: u64 = if ns.len() == 9 { ns.parse().ok()? } else { return None };
    sec.checked_mul(1_000_000_000)?.checked_add(ns).map(Nanos)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A field source over `key=value` pairs, like a text line.
    struct Kv(Vec<(&'static str, &'static str)>);

    impl FieldSource for Kv {
        fn int(&self, name: &str) -> Option<i64> {
            let v = self.0.iter().find(|(k, _)| *k == name)?.1;
            v.parse().ok().or_else(|| i64::from_str_radix(v.strip_prefix("0x")?, 16).ok())
        }
        fn text(&self, name: &str) -> Option<Text> {
            self.0.iter().find(|(k, _)| *k == name).map(|(_, v)| Text::from(*v))
        }
        fn ptr(&self, name: &str) -> Option<u64> {
            let v = self.0.iter().find(|(k, _)| *k == name)?.1;
            u64::from_str_radix(v.trim_start_matches("0x"), 16).ok()
        }
        fn fields(&self) -> Vec<Field> {
            self.0.iter().map(|(k, v)| Field { name: Text::from(*k), value: FieldValue::Str(Text::from(*v)) }).collect()
        }
    }

    /// The smallest [`FieldSource`]: an `irq_handler_entry` with its two fields.
    #[test]
    fn a_field_source_builds_a_typed_event() {
        struct Irq;
        impl FieldSource for Irq {
            fn int(&self, name: &str) -> Option<i64> {
                (name == "irq").then_some(19)
            }
            fn text(&self, name: &str) -> Option<Text> {
                (name == "name").then(|| Text::from("eth0"))
            }
            fn fields(&self) -> Vec<Field> {
                Vec::new()
            }
        }
        let kind = build(Some("irq"), "irq_handler_entry", &Irq);
        assert_eq!(kind, EventKind::IrqHandlerEntry { irq: 19, name: Text::from("eth0") });
    }

    #[test]
    fn sched_switch_text_and_binary_state() {
        let text = Kv(vec![
            ("prev_comm", "bash"),
            ("prev_pid", "12"),
            ("prev_prio", "120"),
            ("prev_state", "R+"),
            ("next_comm", "swapper/1"),
            ("next_pid", "0"),
            ("next_prio", "120"),
        ]);
        let EventKind::SchedSwitch { prev_state, next_pid, prev_comm, .. } =
            build(Some("sched"), "sched_switch", &text)
        else {
            panic!("not a switch")
        };
        assert_eq!((&*prev_state, next_pid, &*prev_comm), ("R+", 0, "bash"));
        assert_eq!(state_letters(0), "R");
        assert_eq!(state_letters(0x100), "R+");
        assert_eq!(state_letters(0x1), "S");
        assert_eq!(state_letters(0x82), "D|I");
    }

    #[test]
    fn vectors_softirqs_and_timers() {
        let k = build(None, "local_timer_entry", &Kv(vec![("vector", "236")]));
        assert_eq!(k, EventKind::VectorEntry { name: Text::from("local_timer"), vector: Some(236) });
        let k = build(Some("irq_vectors"), "new_vector_exit", &Kv(vec![]));
        assert_eq!(k, EventKind::VectorExit { name: Text::from("new_vector"), vector: None });
        let k = build(None, "softirq_exit", &Kv(vec![("vec", "9")]));
        assert_eq!(k, EventKind::SoftirqExit { vec: 9, name: Text::from("RCU") });
        let k = build(
            None,
            "hrtimer_start",
            &Kv(vec![
                ("hrtimer", "ffff8880bad3e1a0"),
                ("function", "tick_nohz_handler"),
                ("expires", "1000"),
                ("softexpires", "900"),
                ("mode", "ABS|PINNED|HARD"),
            ]),
        );
        assert_eq!(
            k,
            EventKind::HrtimerStart {
                hrtimer: 0xffff8880bad3e1a0,
                function: Text::from("tick_nohz_handler"),
                expires: Nanos(1000),
                softexpires: Nanos(900),
                mode: Text::from("ABS|PINNED|HARD"),
            }
        );
        // trace-cmd report prints a callback with its offset (`hrtimer_wakeup/0x0`): the name stays.
        let k = build(
            None,
            "hrtimer_expire_entry",
            &Kv(vec![("hrtimer", "1"), ("function", "hrtimer_wakeup/0x0"), ("now", "5")]),
        );
        assert!(matches!(k, EventKind::HrtimerExpireEntry { function, .. } if &*function == "hrtimer_wakeup"));
        // Binary mode numbers map to the kernel's names.
        let k = build(Some("timer"), "hrtimer_init", &Kv(vec![("hrtimer", "1"), ("clockid", "1"), ("mode", "8")]));
        assert_eq!(
            k,
            EventKind::HrtimerInit { hrtimer: 1, clockid: Text::from("CLOCK_MONOTONIC"), mode: Text::from("ABS|HARD") }
        );
    }

    #[test]
    fn syscalls_prints_and_missing_fields_fall_back_to_other() {
        let k = build(Some("syscalls"), "sys_enter_read", &Kv(vec![("__syscall_nr", "0"), ("fd", "0x3")]));
        assert_eq!(
            k,
            EventKind::SysEnter { nr: Some(0), name: Some(Text::from("read")), args: SyscallArgs::from("fd: 0x3") }
        );
        let k = build(None, "sys_exit", &Kv(vec![("id", "0"), ("ret", "-11")]));
        assert_eq!(k, EventKind::SysExit { nr: Some(0), name: None, ret: -11 });
        let k = build(None, "tracing_mark_write", &Kv(vec![("buf", "B|12|draw")]));
        assert_eq!(k, EventKind::Print { ip: None, text: Text::from("B|12|draw") });
        // sched_switch without pids is not half-typed: it is kept as Other with its fields.
        let k = build(Some("sched"), "sched_switch", &Kv(vec![("prev_comm", "x")]));
        assert!(
            matches!(k, EventKind::Other { ref name, ref fields, .. } if &**name == "sched_switch" && fields.len() == 1)
        );
        // Same name in another system is not a preemptirq toggle.
        let k = build(Some("mysys"), "irq_disable", &Kv(vec![("caller", "f")]));
        assert!(matches!(k, EventKind::Other { .. }));
    }

    #[test]
    fn interner_shares_and_stays_bounded() {
        let mut i = Interner::with_capacity(2);
        let a = i.intern("a");
        assert!(Text::ptr_eq(&a, &i.intern("a")));
        i.intern("b");
        i.intern("c");
        assert!(i.map.len() <= 2);
    }
}
