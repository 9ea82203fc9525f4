//! IRQ, vector, softirq and NMI duration statistics per name and per CPU (total and self time).

use crate::timeline::{Activity, ContextSpan, Timeline};
use latscope_model::{CpuId, LatencyHistogram, Nanos, Summary};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// Duration statistics of one interrupt source on one CPU.
#[derive(Clone, Debug, Serialize)]
pub struct IrqStat {
    /// `irq`, `vector`, `softirq` or `nmi`.
    pub kind: &'static str,
    /// IRQ name, vector name or softirq vector name.
    pub name: String,
    /// CPU.
    pub cpu: CpuId,
    /// Durations (entry to exit, nested contexts included).
    pub summary: Summary,
    /// Sum of the durations.
    #[serde(rename = "total_ns")]
    pub total: Nanos,
    /// Sum of the self times (nested contexts excluded).
    #[serde(rename = "self_total_ns")]
    pub self_total: Nanos,
}

/// Statistics for every interrupt source seen, largest total first.
pub fn irq_stats(timeline: &Timeline) -> Vec<IrqStat> {
    let mut s = IrqStats::default();
    for (cpu, t) in &timeline.cpus {
        for c in &t.contexts {
            s.add(*cpu, c);
        }
    }
    s.finish()
}

/// [`irq_stats`] one interrupt context at a time: the state is a histogram per interrupt and CPU.
#[derive(Default)]
pub struct IrqStats {
    acc: FxHashMap<(Activity, CpuId), (LatencyHistogram, Nanos, Nanos)>,
}

impl IrqStats {
    /// An interrupt context that ended on `cpu` (anything else is not counted).
    pub fn add(&mut self, cpu: CpuId, c: &ContextSpan) {
        if !c.activity.is_interrupt() {
            return;
        }
        let e = self
            .acc
            .entry((c.activity.clone(), cpu))
            .or_insert_with(|| (LatencyHistogram::new(), Nanos::ZERO, Nanos::ZERO));
        e.0.record(c.duration());
        e.1 = e.1 + c.duration();
        e.2 = e.2 + c.self_time;
    }

    /// Every source (kind and name) per CPU, largest total first.
    pub fn finish(self) -> Vec<IrqStat> {
        let mut by_name: BTreeMap<(&'static str, String, CpuId), (LatencyHistogram, Nanos, Nanos)> = BTreeMap::new();
        for ((activity, cpu), (h, total, self_total)) in self.acc {
            let (kind, name) = match &activity {
                Activity::Irq { irq, name } => ("irq", format!("{irq}:{name}")),
                Activity::Vector { name } => ("vector", name.to_string()),
                Activity::Softirq { name, .. } => ("softirq", name.to_string()),
                Activity::Nmi { handler } => ("nmi", handler.to_string()),
                a => ("irq", a.label()),
            };
            let e =
                by_name.entry((kind, name, cpu)).or_insert_with(|| (LatencyHistogram::new(), Nanos::ZERO, Nanos::ZERO));
            e.0.merge(&h);
            e.1 = e.1 + total;
            e.2 = e.2 + self_total;
        }
        let mut out: Vec<IrqStat> = by_name
            .into_iter()
            .map(|((kind, name, cpu), (h, total, self_total))| IrqStat {
                kind,
                name,
                cpu,
                summary: h.summary(None),
                total,
                self_total,
            })
            .collect();
        out.sort_by_key(|s| std::cmp::Reverse(s.total));
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ev;
    use latscope_model::EventKind;

    #[test]
    fn per_name_and_cpu() {
        let events = vec![
            ev(0, 0, "a", 1, EventKind::IrqHandlerEntry { irq: 5, name: "eth0".into() }),
            ev(100, 0, "a", 1, EventKind::SoftirqEntry { vec: 3, name: "NET_RX".into() }),
            ev(300, 0, "a", 1, EventKind::SoftirqExit { vec: 3, name: "NET_RX".into() }),
            ev(400, 0, "a", 1, EventKind::IrqHandlerExit { irq: 5, handled: true }),
            ev(500, 1, "b", 2, EventKind::IrqHandlerEntry { irq: 5, name: "eth0".into() }),
            ev(550, 1, "b", 2, EventKind::IrqHandlerExit { irq: 5, handled: true }),
        ];
        let s = irq_stats(&Timeline::build(&events));
        assert_eq!(s.len(), 3);
        assert_eq!(
            (s[0].name.as_str(), s[0].cpu, s[0].total, s[0].self_total),
            ("5:eth0", CpuId(0), Nanos(400), Nanos(200))
        );
        assert_eq!(s[1].kind, "softirq");
        assert_eq!(s[1].summary.max_ns, 200);
    }
}
