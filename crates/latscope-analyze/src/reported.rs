//! Latencies a trace states itself, to anchor the explanation on: cyclictest's `--tracemark` line
//! (`hit latency threshold (72 > 30)`, written by the thread that broke, right after its late wakeup) and
//! synthetic events of histogram triggers that carry a latency field (`wakeup_latency: lat=17 pid=…`,
//! `block_lat: pid=0 delta=8322`).

use latscope_model::event::FieldValue;
use latscope_model::{CpuId, Event, EventKind, Nanos, Pid, TaskName};
use serde::Serialize;

/// The fields of a synthetic event that carry its latency, by the names the kernel documentation and
/// rtla use.
const LATENCY_FIELDS: [&str; 6] = ["lat", "latency", "wakeup_lat", "delta", "lat_ns", "delta_ns"];

/// Who stated the latency.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum ReportedBy {
    /// cyclictest's `--tracemark` line when the `-b` threshold was exceeded.
    TraceMark {
        /// The threshold it names.
        #[serde(rename = "threshold_ns")]
        threshold: Nanos,
    },
    /// A synthetic event with a latency field.
    SyntheticEvent {
        /// The event (`wakeup_latency`).
        event: String,
        /// The field (`lat`).
        field: String,
        /// The unit was not in the trace: microseconds assumed (the histogram documentation's
        /// `common_timestamp.usecs`); fields named `*_ns` are nanoseconds.
        unit_assumed: bool,
    },
}

/// One latency the trace states.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ReportedLatency {
    /// Index of the event.
    pub index: usize,
    /// Its CPU.
    pub cpu: CpuId,
    /// Its time.
    pub ts: Nanos,
    /// The task the latency is about: the marking thread, or the event's `pid` field.
    pub pid: Pid,
    /// The name of the task that wrote the event.
    pub comm: TaskName,
    /// The latency.
    #[serde(rename = "latency_ns")]
    pub latency: Nanos,
    /// Who stated it.
    #[serde(flatten)]
    pub by: ReportedBy,
}

/// `hit latency threshold (72 > 30)` → (72 µs, 30 µs).
fn threshold_mark(text: &str) -> Option<(Nanos, Nanos)> {
    let rest = text.split_once("hit latency threshold (")?.1;
    let (a, b) = rest.split_once('>')?;
    let b = b.split_once(')')?.0;
    Some((Nanos::from_us(a.trim().parse().ok()?), Nanos::from_us(b.trim().parse().ok()?)))
}

fn int_field(fields: &[latscope_model::event::Field], names: &[&str]) -> Option<(String, i64)> {
    names.iter().find_map(|n| {
        fields.iter().find(|f| &*f.name == *n).and_then(|f| match &f.value {
            FieldValue::Int(v) => Some((n.to_string(), *v)),
            FieldValue::Str(s) => s.trim().parse().ok().map(|v| (n.to_string(), v)),
        })
    })
}

/// Every latency the trace states, in event order.
pub fn reported(events: &[Event]) -> Vec<ReportedLatency> {
    let mut out = Vec::new();
    for (index, e) in events.iter().enumerate() {
        let (pid, latency, by) = match &e.kind {
            EventKind::Print { text, .. } => match threshold_mark(text) {
                Some((latency, threshold)) => (e.pid, latency, ReportedBy::TraceMark { threshold }),
                None => continue,
            },
            EventKind::Other { name, fields, .. } => {
                let Some((field, v)) = int_field(fields, &LATENCY_FIELDS) else { continue };
                let Ok(v) = u64::try_from(v) else { continue };
                let pid = int_field(fields, &["pid", "next_pid"]).map_or(e.pid, |(_, p)| p as Pid);
                let ns = field.ends_with("_ns");
                let latency = if ns { Nanos(v) } else { Nanos::from_us(v) };
                (pid, latency, ReportedBy::SyntheticEvent { event: name.to_string(), field, unit_assumed: !ns })
            }
            _ => continue,
        };
        out.push(ReportedLatency { index, cpu: e.cpu, ts: e.ts, pid, comm: e.comm, latency, by });
    }
    out
}

/// The latency to anchor the explanation on: the last threshold mark (cyclictest stops at it), else the
/// largest latency a synthetic event reports.
pub fn anchor(list: &[ReportedLatency]) -> Option<&ReportedLatency> {
    list.iter()
        .rev()
        .find(|r| matches!(r.by, ReportedBy::TraceMark { .. }))
        .or_else(|| list.iter().max_by_key(|r| r.latency))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::trace;

    #[test]
    fn a_threshold_mark_and_a_synthetic_latency() {
        let events = trace(
            "\
      cyclictest-28444   [001] ...1. 12491.346207: tracing_mark_write: hit latency threshold (35 > 30)
          <idle>-0       [005] d..4. 12521.164922: wakeup_latency: lat=17 pid=1234 prio=9
",
        );
        let r = reported(&events);
        assert_eq!(r.len(), 2, "{events:?}");
        assert_eq!((r[0].pid, r[0].latency), (28444, Nanos::from_us(35)));
        assert_eq!(r[0].by, ReportedBy::TraceMark { threshold: Nanos::from_us(30) });
        assert_eq!((r[1].pid, r[1].latency), (1234, Nanos::from_us(17)));
        assert_eq!(anchor(&r).map(|a| a.index), Some(0));
    }
}
