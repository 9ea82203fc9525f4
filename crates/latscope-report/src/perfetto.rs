//! Perfetto / chrome://tracing export (Chrome Trace Event JSON): one track per CPU with nested slices for
//! tasks, hard IRQs, vectors, softirqs and NMIs built from the trace events, wakeups and trace markers as
//! instant events, the measurement samples as counter tracks and slices, and the worst cases marked.

use crate::slices::{self, CpuSlices, SliceKind};
use latscope_model::noise_result::NoiseResult;
use latscope_model::{Event, EventKind, TimerResult};
use serde_json::{json, Value};
use std::io::{self, Write};

/// Process id of the per-CPU kernel activity tracks.
pub const PID_CPUS: u32 = 1;
/// Process id of the timer measurement tracks.
pub const PID_TIMER: u32 = 2;
/// Process id of the noise measurement tracks.
pub const PID_NOISE: u32 = 3;

/// A Chrome Trace Event document being built.
#[derive(Clone, Debug, Default)]
pub struct PerfettoTrace {
    /// Each event already serialised: a trace has ~10⁵ of them, and `Value`s would cost ten times the memory.
    events: Vec<String>,
    named: Vec<(u32, u32)>,
    processes: Vec<u32>,
    /// Notes written into `otherData` (lost events, unmatched entries).
    pub notes: Vec<String>,
}

/// ns → the format's us (fractional, so ns precision survives).
fn ts(ns: u64) -> f64 {
    ns as f64 / 1e3
}

impl PerfettoTrace {
    /// An empty trace.
    pub fn new() -> PerfettoTrace {
        PerfettoTrace::default()
    }

    /// Number of events so far.
    pub fn len(&self) -> usize {
        self.events.len()
    }

    /// Whether no event was added.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    fn push(&mut self, v: Value) {
        self.events.push(v.to_string());
    }

    fn process(&mut self, pid: u32, name: &str, sort: u32) {
        if self.processes.contains(&pid) {
            return;
        }
        self.processes.push(pid);
        self.push(json!({"ph": "M", "name": "process_name", "ts": 0, "pid": pid, "tid": 0, "args": {"name": name}}));
        self.push(
            json!({"ph": "M", "name": "process_sort_index", "ts": 0, "pid": pid, "tid": 0, "args": {"sort_index": sort}}),
        );
    }

    fn thread(&mut self, pid: u32, tid: u32, name: &str) {
        if self.named.contains(&(pid, tid)) {
            return;
        }
        self.named.push((pid, tid));
        self.push(json!({"ph": "M", "name": "thread_name", "ts": 0, "pid": pid, "tid": tid, "args": {"name": name}}));
        self.push(
            json!({"ph": "M", "name": "thread_sort_index", "ts": 0, "pid": pid, "tid": tid, "args": {"sort_index": tid}}),
        );
    }

    /// Adds the CPU tracks: slices from `events` (see [`slices::build`]), wakeups and markers as instants.
    pub fn add_events(&mut self, events: &[Event]) {
        let built = slices::build(events);
        self.add_slices(&built);
        for e in events {
            let (name, args) = match &e.kind {
                EventKind::SchedWakeup { comm, pid, prio, target_cpu, kind } => (
                    format!("wakeup {comm} ({pid})"),
                    json!({"kind": format!("{kind:?}"), "pid": pid, "prio": prio, "target_cpu": target_cpu.map(|c| c.0)}),
                ),
                EventKind::Print { text, .. } => (format!("marker: {}", text.trim()), json!({})),
                EventKind::Lost { .. } => ("lost events".to_string(), json!({})),
                _ => continue,
            };
            self.thread(PID_CPUS, e.cpu.0, &format!("CPU {}", e.cpu.0));
            self.push(json!({"ph": "i", "s": "t", "name": name, "cat": "event", "ts": ts(e.ts.0),
                "pid": PID_CPUS, "tid": e.cpu.0, "args": args}));
        }
    }

    /// Adds already built slices, one track per CPU.
    pub fn add_slices(&mut self, s: &CpuSlices) {
        self.process(PID_CPUS, "CPUs (kernel trace)", 1);
        if s.unmatched_exits > 0 || s.unclosed > 0 {
            self.notes.push(format!(
                "{} exit events without their entry and {} entries without their exit (trace window edges)",
                s.unmatched_exits, s.unclosed
            ));
        }
        for (cpu, slices) in &s.cpus {
            self.thread(PID_CPUS, cpu.0, &format!("CPU {}", cpu.0));
            for sl in slices {
                let mut args = json!({"kind": sl.kind.as_str(), "duration_us": sl.duration().0 as f64 / 1e3});
                if let Some(pid) = sl.pid {
                    args["pid"] = json!(pid);
                }
                if let Some(prio) = sl.prio {
                    args["prio"] = json!(prio);
                }
                let name = match (sl.kind, sl.pid) {
                    (SliceKind::Task, Some(pid)) if pid != 0 => format!("{} ({pid})", sl.name),
                    _ => sl.name.clone(),
                };
                self.push(json!({"ph": "X", "name": name, "cat": sl.kind.as_str(), "ts": ts(sl.start.0),
                    "dur": ts(sl.duration().0), "pid": PID_CPUS, "tid": cpu.0, "args": args}));
            }
        }
    }

    /// Adds a timer result: per CPU a counter track of the per-window max/mean latency, and the worst
    /// wakeups as slices (expected → actual) with an instant event naming their rank.
    pub fn add_timer(&mut self, r: &TimerResult) {
        self.process(PID_TIMER, "latscope timer (wakeup latency)", 2);
        let start = r.start_monotonic_ns;
        for c in &r.cpus {
            let tid = c.cpu.0;
            self.thread(PID_TIMER, tid, &format!("CPU {tid} wakeups"));
            for w in &c.windows {
                self.push(json!({"ph": "C", "name": format!("latency CPU {tid} (us)"), "ts": ts(start + w.offset_ns),
                    "pid": PID_TIMER, "tid": tid, "args": {"max": w.max_ns as f64 / 1e3, "mean": w.mean_ns / 1e3}}));
            }
            for (rank, s) in c.worst.iter().enumerate() {
                let label = format!("worst #{}: {:.1} us late", rank + 1, s.latency_ns as f64 / 1e3);
                self.push(json!({"ph": "X", "name": label, "cat": "worst", "ts": ts(s.expected_ns),
                    "dur": ts(s.latency_ns), "pid": PID_TIMER, "tid": tid,
                    "args": {"seq": s.seq, "latency_us": s.latency_ns as f64 / 1e3, "missed_periods": s.missed_periods}}));
                self.push(json!({"ph": "i", "s": "g", "name": label, "cat": "worst", "ts": ts(s.actual_ns),
                    "pid": PID_TIMER, "tid": tid, "args": {"cpu": tid}}));
                self.push(json!({"ph": "C", "name": format!("worst samples CPU {tid} (us)"), "ts": ts(s.actual_ns),
                    "pid": PID_TIMER, "tid": tid, "args": {"latency": s.latency_ns as f64 / 1e3}}));
            }
        }
    }

    /// Adds a noise result: per CPU the kept gaps as slices, the longest marked, and the per-window noise
    /// as a counter track.
    pub fn add_noise(&mut self, r: &NoiseResult) {
        self.process(PID_NOISE, "latscope noise (gaps)", 3);
        let start = r.start_monotonic_ns;
        for c in &r.cpus {
            let tid = c.cpu.0;
            self.thread(PID_NOISE, tid, &format!("CPU {tid} gaps"));
            let mut gaps = c.gaps.top.clone();
            gaps.sort_by_key(|g| g.start_ns);
            for g in &gaps {
                let longest = g.duration_ns.0 == c.max_gap_ns;
                self.push(json!({"ph": "X", "name": format!("gap {:.1} us", g.duration_ns.0 as f64 / 1e3),
                    "cat": if longest { "worst" } else { "gap" }, "ts": ts(g.start_ns.0), "dur": ts(g.duration_ns.0),
                    "pid": PID_NOISE, "tid": tid, "args": {"duration_us": g.duration_ns.0 as f64 / 1e3}}));
                if longest {
                    self.push(json!({"ph": "i", "s": "g", "name": format!("longest gap CPU {tid}"), "cat": "worst",
                        "ts": ts(g.start_ns.0), "pid": PID_NOISE, "tid": tid, "args": {}}));
                }
            }
            for w in &c.windows {
                self.push(json!({"ph": "C", "name": format!("noise CPU {tid} (%)"), "ts": ts(start + w.offset_ns),
                    "pid": PID_NOISE, "tid": tid, "args": {"noise": w.noise_pct}}));
            }
        }
    }

    /// Writes the JSON document (`{"traceEvents": […], "displayTimeUnit": "ns", …}`).
    pub fn write(&self, out: &mut impl Write) -> io::Result<()> {
        out.write_all(b"{\"traceEvents\":[\n")?;
        for (i, e) in self.events.iter().enumerate() {
            if i > 0 {
                out.write_all(b",\n")?;
            }
            out.write_all(e.as_bytes())?;
        }
        let other = json!({"producer": "latscope", "schema": latscope_model::wire::SCHEMA, "notes": self.notes});
        write!(out, "\n],\"displayTimeUnit\":\"ns\",\"otherData\":{other}}}\n")
    }
}

/// A slice on a track: (start us, end us, name).
type TrackSlice = (f64, f64, String);

/// Checks a Chrome Trace Event document the way the viewers need it: every event has `ph`, `ts`, `pid`
/// and `tid`; `X` slices have a non-negative `dur` and nest strictly on each (pid, tid) track.
/// Returns the problems found (empty when valid).
pub fn check(doc: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    let Some(events) = doc.get("traceEvents").and_then(Value::as_array) else {
        return vec!["no traceEvents array".into()];
    };
    let mut tracks: std::collections::BTreeMap<(u64, u64), Vec<TrackSlice>> = Default::default();
    for (i, e) in events.iter().enumerate() {
        for key in ["ph", "ts", "pid", "tid"] {
            if e.get(key).is_none() {
                problems.push(format!("event {i} has no '{key}': {e}"));
            }
        }
        if e.get("ph").and_then(Value::as_str) == Some("X") {
            let start = e.get("ts").and_then(Value::as_f64).unwrap_or(0.0);
            let dur = e.get("dur").and_then(Value::as_f64).unwrap_or(-1.0);
            if dur < 0.0 {
                problems.push(format!("slice {i} has no valid dur: {e}"));
            }
            let key = (e["pid"].as_u64().unwrap_or(0), e["tid"].as_u64().unwrap_or(0));
            let name = e.get("name").and_then(Value::as_str).unwrap_or("").to_string();
            tracks.entry(key).or_default().push((start, start + dur.max(0.0), name));
        }
    }
    for ((pid, tid), mut slices) in tracks {
        slices.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.total_cmp(&a.1)));
        let mut stack: Vec<(f64, String)> = Vec::new();
        for (start, end, name) in slices {
            // A tolerance of 1 ns for the us float conversion.
            while stack.last().is_some_and(|(e, _)| *e <= start + 1e-3) {
                stack.pop();
            }
            if let Some((parent_end, parent)) = stack.last() {
                if end > parent_end + 1e-3 {
                    problems.push(format!(
                        "track {pid}/{tid}: slice '{name}' ({start}…{end}) overlaps the end of '{parent}' ({parent_end})"
                    ));
                }
            }
            stack.push((end, name));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::TaskName;
    use latscope_model::{CpuId, CpuTimer, Flags, Nanos, RunMetadata, TimerOptions, WakeupSample};

    fn ev(ts: u64, cpu: u32, kind: EventKind) -> Event {
        Event {
            ts: Nanos(ts),
            cpu: CpuId(cpu),
            pid: 5,
            tgid: None,
            comm: TaskName::from("task"),
            flags: Flags::default(),
            kind,
        }
    }

    #[test]
    fn builds_valid_nested_tracks_with_measurements() {
        let events = vec![
            ev(1_000, 0, EventKind::IrqHandlerEntry { irq: 24, name: "virtio0".into() }),
            ev(4_000, 0, EventKind::IrqHandlerExit { irq: 24, handled: true }),
            ev(5_000, 0, EventKind::Print { ip: None, text: "hello\n".into() }),
        ];
        let mut t = PerfettoTrace::new();
        t.add_events(&events);
        let mut r = TimerResult::new(RunMetadata::default(), TimerOptions::default());
        r.cpus.push(CpuTimer {
            cpu: CpuId(0),
            worst: vec![WakeupSample {
                seq: 1,
                expected_ns: 2_000,
                actual_ns: 3_500,
                latency_ns: 1_500,
                missed_periods: 0,
            }],
            ..CpuTimer::default()
        });
        t.add_timer(&r);
        let mut out = Vec::new();
        t.write(&mut out).expect("write");
        let doc: Value = serde_json::from_slice(&out).expect("json");
        assert_eq!(check(&doc), Vec::<String>::new());
        let evs = doc["traceEvents"].as_array().expect("array");
        let irq = evs.iter().find(|e| e["name"] == "irq 24 virtio0").expect("irq slice");
        assert_eq!((irq["ts"].as_f64(), irq["dur"].as_f64(), irq["tid"].as_u64()), (Some(1.0), Some(3.0), Some(0)));
        assert!(evs.iter().any(|e| e["ph"] == "i" && e["name"] == "marker: hello"));
        assert!(evs.iter().any(|e| e["ph"] == "i" && e["name"] == "worst #1: 1.5 us late"));
        assert!(evs.iter().any(|e| e["ph"] == "C" && e["pid"] == PID_TIMER));
    }

    #[test]
    fn check_finds_missing_keys_and_bad_nesting() {
        let doc = json!({"traceEvents": [
            {"ph": "X", "ts": 0, "dur": 10, "pid": 1, "tid": 1, "name": "a"},
            {"ph": "X", "ts": 5, "dur": 10, "pid": 1, "tid": 1, "name": "b"},
            {"ph": "i", "ts": 5, "pid": 1, "name": "c"}
        ]});
        let p = check(&doc);
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(p.iter().any(|x| x.contains("overlaps")) && p.iter().any(|x| x.contains("no 'tid'")));
    }
}
