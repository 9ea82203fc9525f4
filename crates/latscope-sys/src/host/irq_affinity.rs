//! Where device interrupts may fire: every numbered IRQ's affinity (`/proc/irq/N/smp_affinity_list`,
//! `effective_affinity_list`) and counts, the default affinity, and the unbound-workqueue CPU mask.

use super::counters::{parse_per_cpu_table, INTERRUPTS};
use super::read_fact::{parse_hex_mask, read_parsed, why_unreadable};
use latscope_model::facts::{CpuCount, IrqInfo};
use latscope_model::{CpuList, Fact};
use std::path::Path;

fn list(path: &Path) -> Option<CpuList> {
    std::fs::read_to_string(path).ok().and_then(|t| CpuList::parse(&t).ok())
}

/// Reads every numbered IRQ: description and per-CPU counts from `/proc/interrupts`, affinity from
/// `/proc/irq/N/`.
pub fn read_irqs() -> Fact<Vec<IrqInfo>> {
    let path = Path::new(INTERRUPTS);
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => return Fact::unknown(INTERRUPTS, why_unreadable(path, &e)),
    };
    let table = match parse_per_cpu_table(&text, INTERRUPTS) {
        Ok(t) => t,
        Err(e) => return Fact::unknown(INTERRUPTS, e.to_string()),
    };
    let mut irqs = Vec::new();
    for row in &table.rows {
        let Ok(irq) = row.id.parse::<u32>() else { continue };
        let dir = Path::new("/proc/irq").join(irq.to_string());
        irqs.push(IrqInfo {
            irq,
            name: row.description.clone(),
            affinity: list(&dir.join("smp_affinity_list")),
            effective: list(&dir.join("effective_affinity_list")),
            counts: table.cpus.iter().zip(&row.counts).map(|(c, n)| CpuCount { cpu: *c, count: *n }).collect(),
        });
    }
    Fact::known(irqs, "/proc/interrupts, /proc/irq/*/smp_affinity_list")
}

/// `/proc/irq/default_smp_affinity` (a hex mask).
pub fn read_default_affinity() -> Fact<CpuList> {
    read_parsed("/proc/irq/default_smp_affinity", parse_hex_mask)
}

/// `/sys/devices/virtual/workqueue/cpumask` (a hex mask).
pub fn read_workqueue_cpumask() -> Fact<CpuList> {
    read_parsed("/sys/devices/virtual/workqueue/cpumask", parse_hex_mask)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_this_machine() {
        let irqs = read_irqs();
        let v = irqs.get().expect("/proc/interrupts is world-readable");
        assert!(v.iter().all(|i| !i.counts.is_empty()));
        assert!(read_default_affinity().get().is_some_and(|l| !l.is_empty()));
    }
}
