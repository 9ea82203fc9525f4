//! `latscope decode --stats`: counts per CPU and per event name, time span, lost events and warnings,
//! accumulated one event at a time (no event is kept) and rendered as text or versioned JSON.

use crate::events::format_ts;
use latscope_model::event::{TimerOp, Toggle, WakeupKind};
use latscope_model::{CpuId, Event, EventKind, Nanos, Text};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};

/// Summary of a decoded trace.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DecodeStats {
    /// `latscope/1`.
    pub schema: &'static str,
    /// The input.
    pub file: String,
    /// Recognised format.
    pub format: String,
    /// Tracer named by the trace.
    pub tracer: Option<String>,
    /// CPUs the trace says the machine had.
    pub cpus: Option<u32>,
    /// Events decoded, as `trace-cmd report` counts them: without the kernel stacks that follow events and
    /// without lost-event markers.
    pub events: u64,
    /// Kernel stacks (`<stack trace>`, `ftrace:kernel_stack`), each tied to the event before it.
    pub stacks: u64,
    /// First and last timestamps.
    pub first_ts: Option<Nanos>,
    /// Last timestamp.
    pub last_ts: Option<Nanos>,
    /// Events per CPU.
    pub per_cpu: BTreeMap<u32, u64>,
    /// Events per event name.
    pub per_event: BTreeMap<String, u64>,
    /// Events lost per CPU (from lost-event markers).
    pub lost: BTreeMap<u32, u64>,
    /// CPUs with lost events of unknown count.
    pub lost_unknown: Vec<u32>,
    /// Warnings (count).
    pub warnings: usize,
    /// The first warnings, `location: message`.
    pub first_warnings: Vec<String>,
    #[serde(skip)]
    names: Vec<(&'static str, u64)>,
    #[serde(skip)]
    dyn_names: HashMap<String, u64>,
    /// Events of `Other` kinds by their name (no text made per event).
    #[serde(skip)]
    other_names: HashMap<Text, u64>,
    /// Events per CPU while counting, indexed by CPU number (the first [`CPU_SLOTS`]).
    #[serde(skip)]
    cpu_counts: Vec<u64>,
}

/// CPUs counted in a plain vector; higher numbers (corrupt input) go to the map directly.
const CPU_SLOTS: usize = 8192;

impl DecodeStats {
    /// An empty summary for `file`.
    pub fn new(file: &str) -> DecodeStats {
        DecodeStats { schema: latscope_model::wire::SCHEMA, file: file.into(), ..DecodeStats::default() }
    }

    /// Count one event.
    pub fn add(&mut self, e: &Event) {
        match e.kind {
            EventKind::Stack { .. } => {
                self.stacks += 1;
                return;
            }
            // Counted per CPU by the decoder (see [`DecodeStats::finish`]).
            EventKind::Lost { .. } => return,
            _ => self.events += 1,
        }
        if self.first_ts.map_or(true, |t| e.ts < t) {
            self.first_ts = Some(e.ts);
        }
        if self.last_ts.map_or(true, |t| e.ts > t) {
            self.last_ts = Some(e.ts);
        }
        let cpu = e.cpu.0 as usize;
        if cpu < CPU_SLOTS {
            if self.cpu_counts.len() <= cpu {
                self.cpu_counts.resize(cpu + 1, 0);
            }
            self.cpu_counts[cpu] += 1;
        } else {
            *self.per_cpu.entry(e.cpu.0).or_insert(0) += 1;
        }
        if let EventKind::Other { name, .. } = &e.kind {
            match self.other_names.get_mut(&**name) {
                Some(c) => *c += 1,
                None => {
                    self.other_names.insert(name.clone(), 1);
                }
            }
            return;
        }
        match static_name(&e.kind) {
            // A short list scanned by pointer: a trace has a few dozen event names, most events a handful.
            Some(n) => match self.names.iter_mut().find(|(k, _)| std::ptr::eq(*k, n)) {
                Some((_, c)) => *c += 1,
                None => self.names.push((n, 1)),
            },
            None => *self.dyn_names.entry(e.kind.name()).or_insert(0) += 1,
        }
    }

    /// Fill in what the decoder reported at the end (format, lost events, warnings).
    pub fn finish(
        &mut self,
        format: String,
        tracer: Option<String>,
        cpus: Option<u32>,
        lost: &BTreeMap<CpuId, u64>,
        lost_unknown: &[CpuId],
        warnings: &[String],
    ) {
        self.format = format;
        self.tracer = tracer;
        self.cpus = cpus;
        self.lost = lost.iter().map(|(c, n)| (c.0, *n)).collect();
        self.lost_unknown = lost_unknown.iter().map(|c| c.0).collect();
        self.warnings = warnings.len();
        self.first_warnings = warnings.iter().take(20).cloned().collect();
        for (n, c) in self.names.drain(..) {
            *self.per_event.entry(n.to_string()).or_insert(0) += c;
        }
        for (cpu, n) in self.cpu_counts.drain(..).enumerate().filter(|(_, n)| *n > 0) {
            *self.per_cpu.entry(cpu as u32).or_insert(0) += n;
        }
        for (n, c) in self.other_names.drain() {
            *self.per_event.entry(n.to_string()).or_insert(0) += c;
        }
        for (n, c) in self.dyn_names.drain() {
            *self.per_event.entry(n).or_insert(0) += c;
        }
    }

    /// The text summary.
    pub fn write_text<W: Write>(&self, mut w: W) -> io::Result<()> {
        writeln!(w, "file:    {}", self.file)?;
        write!(w, "format:  {}", self.format)?;
        if let Some(t) = &self.tracer {
            write!(w, ", tracer {t}")?;
        }
        if let Some(c) = self.cpus {
            write!(w, ", {c} CPUs")?;
        }
        writeln!(w)?;
        write!(w, "events:  {}", self.events)?;
        if let (Some(a), Some(b)) = (self.first_ts, self.last_ts) {
            write!(w, " from {} to {} ({})", format_ts(a), format_ts(b), b - a)?;
        }
        writeln!(w)?;
        if self.stacks > 0 {
            writeln!(w, "stacks:  {} (kernel stacks after events, not counted as events)", self.stacks)?;
        }
        writeln!(w, "per CPU:")?;
        for (cpu, n) in &self.per_cpu {
            writeln!(w, "  cpu {cpu:<4} {n:>12}")?;
        }
        writeln!(w, "per event:")?;
        let mut by_count: Vec<_> = self.per_event.iter().collect();
        by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (name, n) in by_count {
            writeln!(w, "  {name:<32} {n:>12}")?;
        }
        if self.lost.is_empty() && self.lost_unknown.is_empty() {
            writeln!(w, "lost events: none reported")?;
        } else {
            write!(w, "lost events:")?;
            for (cpu, n) in &self.lost {
                write!(w, " cpu{cpu}={n}")?;
            }
            for cpu in &self.lost_unknown {
                write!(w, " cpu{cpu}=unknown")?;
            }
            writeln!(w)?;
        }
        writeln!(w, "warnings: {}", self.warnings)?;
        for m in &self.first_warnings {
            writeln!(w, "  {m}")?;
        }
        Ok(())
    }
}

/// The event name without allocating, for every variant whose name is fixed.
fn static_name(k: &EventKind) -> Option<&'static str> {
    Some(match k {
        EventKind::IrqHandlerEntry { .. } => "irq_handler_entry",
        EventKind::IrqHandlerExit { .. } => "irq_handler_exit",
        EventKind::SoftirqEntry { .. } => "softirq_entry",
        EventKind::SoftirqExit { .. } => "softirq_exit",
        EventKind::SoftirqRaise { .. } => "softirq_raise",
        EventKind::VectorEntry { name, .. } if &**name == "local_timer" => "local_timer_entry",
        EventKind::VectorExit { name, .. } if &**name == "local_timer" => "local_timer_exit",
        EventKind::HrtimerInit { .. } => "hrtimer_init",
        EventKind::HrtimerStart { .. } => "hrtimer_start",
        EventKind::HrtimerCancel { .. } => "hrtimer_cancel",
        EventKind::HrtimerExpireEntry { .. } => "hrtimer_expire_entry",
        EventKind::HrtimerExpireExit { .. } => "hrtimer_expire_exit",
        EventKind::Timer { op, .. } => match op {
            TimerOp::Init => "timer_init",
            TimerOp::Start => "timer_start",
            TimerOp::Cancel => "timer_cancel",
            TimerOp::ExpireEntry => "timer_expire_entry",
            TimerOp::ExpireExit => "timer_expire_exit",
        },
        EventKind::SchedSwitch { .. } => "sched_switch",
        EventKind::SchedWakeup { kind, .. } => match kind {
            WakeupKind::Waking => "sched_waking",
            WakeupKind::Wakeup => "sched_wakeup",
            WakeupKind::WakeupNew => "sched_wakeup_new",
        },
        EventKind::SchedMigrate { .. } => "sched_migrate_task",
        EventKind::SchedPiSetprio { .. } => "sched_pi_setprio",
        EventKind::LockContentionBegin { .. } => "contention_begin",
        EventKind::LockContentionEnd { .. } => "contention_end",
        EventKind::Preemptirq { toggle, .. } => match toggle {
            Toggle::IrqDisable => "irq_disable",
            Toggle::IrqEnable => "irq_enable",
            Toggle::PreemptDisable => "preempt_disable",
            Toggle::PreemptEnable => "preempt_enable",
        },
        EventKind::SysEnter { name: None, .. } => "sys_enter",
        EventKind::SysExit { name: None, .. } => "sys_exit",
        EventKind::NmiHandler { .. } => "nmi_handler",
        EventKind::Print { .. } => "print",
        EventKind::Timerlat { .. } => "timerlat_sample",
        EventKind::OsnoiseSample { .. } => "osnoise",
        EventKind::Hwlat { .. } => "hwlat",
        EventKind::WorkqueueStart { .. } => "workqueue_execute_start",
        EventKind::WorkqueueEnd { .. } => "workqueue_execute_end",
        EventKind::Function { .. } => "function",
        EventKind::GraphEntry { .. } => "funcgraph_entry",
        EventKind::GraphExit { .. } => "funcgraph_exit",
        EventKind::GraphLeaf { .. } => "funcgraph_leaf",
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::TaskName;
    use latscope_model::{Flags, Text};

    fn ev(ts: u64, cpu: u32, kind: EventKind) -> Event {
        Event {
            ts: Nanos(ts),
            cpu: CpuId(cpu),
            pid: 1,
            tgid: None,
            comm: TaskName::from("x"),
            flags: Flags::default(),
            kind,
        }
    }

    #[test]
    fn stacks_and_lost_markers_are_not_events() {
        let mut s = DecodeStats::new("t.dat");
        s.add(&ev(1_000, 1, EventKind::HrtimerCancel { hrtimer: 1 }));
        s.add(&ev(1_000, 1, EventKind::Stack { frames: vec![Text::from("console_unlock")].into() }));
        s.add(&ev(2_000, 1, EventKind::Lost { count: Some(3) }));
        s.finish("dat".into(), None, Some(2), &BTreeMap::from([(CpuId(1), 3)]), &[], &[]);
        assert_eq!((s.events, s.stacks), (1, 1));
        assert_eq!(s.per_cpu, BTreeMap::from([(1, 1)]));
        assert_eq!(s.per_event.keys().collect::<Vec<_>>(), ["hrtimer_cancel"]);
        assert_eq!(s.lost, BTreeMap::from([(1, 3)]), "lost events are the decoder's count");
        let mut out = Vec::new();
        s.write_text(&mut out).expect("write");
        assert!(String::from_utf8_lossy(&out).contains("stacks:  1"));
    }

    #[test]
    fn counts_and_renders() {
        let mut s = DecodeStats::new("t.txt");
        s.add(&ev(2_000, 1, EventKind::HrtimerCancel { hrtimer: 1 }));
        s.add(&ev(1_000, 0, EventKind::VectorEntry { name: Text::from("reschedule"), vector: Some(253) }));
        s.add(&ev(3_000, 1, EventKind::HrtimerCancel { hrtimer: 2 }));
        let lost = BTreeMap::from([(CpuId(1), 5)]);
        s.finish("ftrace text".into(), Some("nop".into()), Some(2), &lost, &[], &["t.txt:3: bad".into()]);
        assert_eq!((s.events, s.first_ts, s.last_ts), (3, Some(Nanos(1_000)), Some(Nanos(3_000))));
        assert_eq!(s.per_cpu, BTreeMap::from([(0, 1), (1, 2)]));
        assert_eq!(s.per_event.get("hrtimer_cancel"), Some(&2));
        assert_eq!(s.per_event.get("reschedule_entry"), Some(&1));
        let mut out = Vec::new();
        s.write_text(&mut out).expect("write");
        let t = String::from_utf8_lossy(&out);
        assert!(
            t.contains("lost events: cpu1=5") && t.contains("warnings: 1") && t.contains("tracer nop, 2 CPUs"),
            "{t}"
        );
        let j = serde_json::to_value(&s).expect("json");
        assert_eq!(j["schema"], "latscope/1");
        assert_eq!(j["per_event"]["hrtimer_cancel"], 2);
    }
}
