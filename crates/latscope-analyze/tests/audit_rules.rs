//! The audit rules on recorded machines (`fixtures/facts/*.json`): each expected finding is present with
//! the right severity, for the CPUs asked about.

use latscope_analyze::audit::{findings_at, findings_for, has_fail};
use latscope_model::{CpuList, Fact, Finding, FixKind, Severity, SystemFacts};
use std::path::PathBuf;

fn fixture(name: &str) -> SystemFacts {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/facts").join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn cpus(list: &str) -> CpuList {
    CpuList::parse(list).expect("cpu list")
}

fn find<'a>(findings: &'a [Finding], id: &str) -> &'a Finding {
    findings.iter().find(|f| f.id == id).unwrap_or_else(|| {
        let ids: Vec<String> = findings.iter().map(|f| format!("{}:{}", f.id, f.severity)).collect();
        panic!("no finding {id}; have {ids:?}")
    })
}

fn expect(findings: &[Finding], expected: &[(&str, Severity)]) {
    for (id, sev) in expected {
        let f = find(findings, id);
        assert_eq!(f.severity, *sev, "{id}: {} — {:?}", f.title, f.evidence);
    }
}

/// Every finding that asks for action says where its facts came from and how to fix it.
fn well_formed(findings: &[Finding]) {
    for f in findings {
        assert!(!f.title.is_empty() && !f.why.is_empty(), "{}", f.id);
        assert!(f.evidence.iter().all(|e| !e.from.is_empty()), "{}: evidence without a source", f.id);
        if f.severity >= Severity::Warn {
            assert!(!f.evidence.is_empty(), "{}: no evidence", f.id);
            assert!(!f.fix.is_empty(), "{}: no fix", f.id);
        }
    }
    let ids: std::collections::BTreeSet<&str> = findings.iter().map(|f| f.id.as_str()).collect();
    assert_eq!(ids.len(), findings.len(), "duplicate finding ids");
    assert!(findings.windows(2).all(|w| w[0].severity >= w[1].severity), "not sorted worst first");
}

#[test]
fn fixtures_round_trip() {
    for name in ["rt_box", "laptop", "cloud_vm", "firecracker_vm"] {
        let f = fixture(name);
        let back: SystemFacts = serde_json::from_value(serde_json::to_value(&f).expect("to json")).expect("back");
        assert_eq!(back, f, "{name}");
    }
}

#[test]
fn tuned_rt_box_is_clean_on_its_isolated_cpus() {
    let f = findings_for(&fixture("rt_box"), &cpus("2-7"));
    well_formed(&f);
    expect(
        &f,
        &[
            ("kernel.preemption", Severity::Ok),
            ("sched.rt_throttling", Severity::Ok),
            ("cpu.smt", Severity::Ok),
            ("cpu.governor", Severity::Ok),
            ("cpu.idle_states", Severity::Ok),
            ("isolation.isolcpus", Severity::Ok),
            ("irq.affinity", Severity::Ok),
            ("irq.irqbalance", Severity::Ok),
            ("memory.thp", Severity::Ok),
            ("console.loglevel", Severity::Ok),
            ("clock.source", Severity::Ok),
            ("platform.hypervisor", Severity::Ok),
            ("platform.smi", Severity::Ok),
            ("tracer.available", Severity::Ok),
            ("tracing.bpf", Severity::Ok),
        ],
    );
    let bad: Vec<_> = f.iter().filter(|x| x.severity >= Severity::Warn).map(|x| &x.id).collect();
    assert!(bad.is_empty(), "a tuned box should have no warn/fail on its isolated CPUs: {bad:?}");
    assert!(!f.iter().any(|x| x.id.starts_with("tracer.") && x.severity == Severity::Info));
    assert!(!has_fail(&f));
}

#[test]
fn rt_box_housekeeping_cpus_are_flagged() {
    // The same box judged for every CPU: CPUs 0-1 are not isolated and take the device IRQs.
    let f = findings_for(&fixture("rt_box"), &CpuList::default());
    well_formed(&f);
    let iso = find(&f, "isolation.isolcpus");
    assert_eq!(iso.severity, Severity::Warn);
    assert_eq!(iso.cpus, cpus("0-1"));
    let irq = find(&f, "irq.affinity");
    assert_eq!(irq.severity, Severity::Warn);
    // Every CPU is measured, so there is nowhere to move IRQs now: only the boot-time advice is given.
    assert!(irq.fix.iter().all(|x| x.kind == FixKind::BootParam), "{:?}", irq.fix);
}

#[test]
fn laptop_traps() {
    let f = findings_for(&fixture("laptop"), &cpus("2"));
    well_formed(&f);
    expect(
        &f,
        &[
            ("cpu.smt", Severity::Warn),
            ("cpu.governor", Severity::Warn),
            ("cpu.idle_states", Severity::Warn),
            ("irq.irqbalance", Severity::Warn),
            ("irq.affinity", Severity::Warn),
            ("watchdog.nmi", Severity::Warn),
            ("watchdog.tco", Severity::Warn),
            ("sched.rt_throttling", Severity::Warn),
            ("kernel.preemption", Severity::Warn),
            ("platform.smi", Severity::Warn),
            ("isolation.isolcpus", Severity::Warn),
            ("limits.memlock", Severity::Warn),
            ("limits.rtprio", Severity::Warn),
            ("audit.unprivileged", Severity::Info),
            ("tracer.irqsoff", Severity::Info),
            ("tracer.preemptoff", Severity::Info),
            ("sched.timer_migration", Severity::Info),
            ("console.loglevel", Severity::Ok),
            ("memory.thp", Severity::Ok),
            ("clock.source", Severity::Ok),
            ("platform.hypervisor", Severity::Ok),
        ],
    );
    assert!(!has_fail(&f));
    // Evidence names the sibling, the deep state and its exit latency, the SMI count.
    let smt = find(&f, "cpu.smt");
    assert!(smt.title.contains('6') && smt.evidence.iter().any(|e| e.value == "6"), "{smt:?}");
    let idle = find(&f, "cpu.idle_states");
    assert!(idle.title.contains("1048 us"), "{}", idle.title);
    assert!(idle.evidence.iter().any(|e| e.fact.contains("C3_ACPI")));
    assert!(find(&f, "platform.smi").title.contains("1214"));
    assert!(find(&f, "cpu.governor").fix[0].action.contains("performance"));
    // IRQs move to the CPUs not asked about.
    let irq = find(&f, "irq.affinity");
    assert_eq!(irq.fix[0].kind, FixKind::Command);
    assert!(irq.fix[0].action.contains("echo 0-1,3-7 > /proc/irq/$i/smp_affinity_list"), "{:?}", irq.fix);
    assert!(irq.fix.iter().any(|x| x.action == "echo fb > /proc/irq/default_smp_affinity"), "{:?}", irq.fix);
    // Tracers were unreadable without root, so their verdict comes from the kernel config.
    let irqsoff = find(&f, "tracer.irqsoff");
    assert!(irqsoff.evidence.iter().any(|e| e.value == "CONFIG_IRQSOFF_TRACER=n"), "{irqsoff:?}");
    assert!(!f.iter().any(|x| x.id == "tracer.function_graph"), "enabled in the laptop's config");
    // Unknown facts are listed, not guessed.
    let unpriv = find(&f, "audit.unprivileged");
    assert!(unpriv.evidence.iter().any(|e| e.from == "/dev/cpu_dma_latency"));
    // Per-CPU findings concern only the CPU asked about (or its sibling).
    assert_eq!(find(&f, "cpu.governor").cpus, cpus("2"));
}

#[test]
fn cloud_vm_fails_on_serial_console_and_container_rt_budget() {
    let f = findings_for(&fixture("cloud_vm"), &CpuList::default());
    well_formed(&f);
    expect(
        &f,
        &[
            ("console.loglevel", Severity::Fail),
            ("sched.cgroup_rt", Severity::Fail),
            ("memory.thp", Severity::Warn),
            ("platform.hypervisor", Severity::Warn),
            ("platform.steal", Severity::Warn),
            ("cpu.smt", Severity::Warn),
            ("irq.irqbalance", Severity::Warn),
            ("kernel.preemption", Severity::Warn),
            ("sched.rt_throttling", Severity::Warn),
            ("clock.source", Severity::Info),
            ("platform.smi", Severity::Info),
            ("cpu.governor", Severity::Info),
            ("tracer.irqsoff", Severity::Info),
        ],
    );
    assert!(has_fail(&f));
    let console = find(&f, "console.loglevel");
    assert!(console.title.contains("ttyS0") && console.title.contains("loglevel 7"), "{}", console.title);
    assert!(console.fix.iter().any(|x| x.action == "dmesg -n 1"));
    assert!(find(&f, "platform.hypervisor").title.contains("KVM"));
    assert!(find(&f, "sched.cgroup_rt").title.contains("/docker/3f9a1c2e5b7d"));
    // kvm-clock is vDSO-readable: info, with the switch to tsc offered since it is available.
    assert!(find(&f, "clock.source").fix.iter().any(|x| x.action.contains("echo tsc")));
    // Only the IRQs on the asked CPUs count: nvme0q1 is pinned to CPU 0.
    let one = findings_for(&fixture("cloud_vm"), &cpus("1"));
    let irq = find(&one, "irq.affinity");
    assert!(irq.evidence.iter().all(|e| !e.fact.contains("nvme0q1")), "{irq:?}");
    assert!(irq.evidence.iter().any(|e| e.fact.contains("ttyS0")));
}

#[test]
fn firecracker_vm_as_captured() {
    let f = findings_for(&fixture("firecracker_vm"), &CpuList::default());
    well_formed(&f);
    expect(
        &f,
        &[
            ("platform.hypervisor", Severity::Warn),
            ("sched.rt_throttling", Severity::Warn),
            ("isolation.isolcpus", Severity::Warn),
            ("irq.affinity", Severity::Warn),
            ("kernel.preemption", Severity::Warn),
            ("console.loglevel", Severity::Info),
            ("clock.source", Severity::Ok),
            ("tracer.irqsoff", Severity::Info),
            ("tracer.function_graph", Severity::Info),
            ("tracer.timerlat", Severity::Info),
            ("cpu.smt", Severity::Ok),
        ],
    );
    assert!(find(&f, "sched.rt_throttling").title.contains("950000/1000000"));
    assert_eq!(find(&f, "isolation.isolcpus").title, "no isolated CPUs");
    assert!(find(&f, "console.loglevel").evidence.iter().any(|e| e.fact == "console ttyS0"));
    for (id, config) in [
        ("tracer.irqsoff", "CONFIG_IRQSOFF_TRACER"),
        ("tracer.function_graph", "CONFIG_FUNCTION_GRAPH_TRACER"),
        ("tracer.timerlat", "CONFIG_TIMERLAT_TRACER"),
    ] {
        let t = find(&f, id);
        assert!(t.title.contains(config) && t.fix[0].action == format!("{config}=y"), "{t:?}");
    }
}

#[test]
fn slow_clocksource_fails() {
    let mut facts = fixture("laptop");
    facts.clock.current.value = Some("hpet".into());
    let f = findings_for(&facts, &cpus("2"));
    let c = find(&f, "clock.source");
    assert_eq!(c.severity, Severity::Fail);
    assert!(c.fix.iter().any(|x| x.action.contains("echo tsc > /sys/devices/system/clocksource")));
    assert!(has_fail(&f));
}

#[test]
fn unknown_facts_are_not_judged_as_fine() {
    // An empty snapshot (nothing readable) yields no ok verdicts about things never read.
    let f = findings_for(&SystemFacts::default(), &cpus("0"));
    assert!(!f.iter().any(|x| x.severity == Severity::Ok), "{:?}", f.iter().map(|x| &x.id).collect::<Vec<_>>());
    assert!(f.iter().any(|x| x.id == "sched.rt_throttling" && x.severity == Severity::Info));
    assert!(f.iter().any(|x| x.id == "kernel.preemption" && x.severity == Severity::Info));
}

#[test]
fn rt_kernel_wording_is_true_to_threaded_irqs_and_rcuc() {
    // rt_box runs PREEMPT_RT: device handlers are irq/N threads and RCU callbacks run in rcuc/N there.
    let f = findings_for(&fixture("rt_box"), &CpuList::default());
    let irq = find(&f, "irq.affinity");
    assert!(irq.why.contains("irq/N") && !irq.why.contains("preempts whatever runs there"), "{}", irq.why);
    let rcu = find(&f, "isolation.rcu_nocbs");
    assert!(rcu.why.contains("rcuc/N") && !rcu.why.contains("in softirq"), "{}", rcu.why);
    // latscope does not start the kernel's tracers: the audit must not say it uses them.
    let tracers = find(&f, "tracer.available");
    assert!(!tracers.why.contains("can use these"), "{}", tracers.why);
    assert!(tracers.why.contains("does not start"), "{}", tracers.why);
    // Elsewhere the softirq wording stays.
    let laptop = findings_for(&fixture("laptop"), &CpuList::default());
    if let Some(r) = laptop.iter().find(|x| x.id == "isolation.rcu_nocbs") {
        assert!(r.why.contains("softirq"), "{}", r.why);
    }
}

/// The Debian 6.1 PREEMPT_RT guest: every device IRQ is a SCHED_FIFO 50 thread, ktimers/rcuc are FIFO 1.
#[test]
fn rt_kernel_threads_below_a_fifo_95_thread_are_deferred_work_not_preemption() {
    let facts = fixture("debian-6.1-rt-guest");
    let f = findings_at(&facts, &cpus("1"), 95);
    assert!(f.iter().all(|x| x.id != "priority.kernel_threads_above"), "migration/1 is not a finding: {f:#?}");
    let below = f.iter().find(|x| x.id == "priority.deferred_work_below").expect("deferred work finding");
    assert_eq!(below.severity, Severity::Info);
    let values: Vec<&str> = below.evidence.iter().map(|e| e.value.as_str()).collect();
    assert_eq!(values[0], "ktimers/1 (FIFO 1)");
    assert_eq!(values[1], "ksoftirqd/1 (OTHER 0)");
    assert_eq!(values[2], "rcuc/1 (FIFO 1)");
    assert_eq!(values[3], "irq_work/1 (FIFO 1)");
    // Only the IRQ threads allowed on CPU 1; irq/12-i8042 and the virtio config/req.0 threads are on CPU 0.
    assert_eq!(
        values[4],
        "irq/9-acpi (FIFO 50), irq/1-i8042 (FIFO 50), irq/4-ttyS0 (FIFO 50), irq/26-virtio0-req.1 (FIFO 50)"
    );
    let fixes: Vec<&str> = below.fix.iter().map(|x| x.action.as_str()).collect();
    assert_eq!(fixes, ["rcu_nocbs=1", "rcutree.kthread_prio=96"]);
}

#[test]
fn rt_irq_threads_above_a_fifo_40_thread_preempt_it() {
    let facts = fixture("debian-6.1-rt-guest");
    let f = findings_at(&facts, &cpus("1"), 40);
    let above = f.iter().find(|x| x.id == "priority.kernel_threads_above").expect("threads above");
    assert_eq!(above.severity, Severity::Warn);
    assert!(
        above.title.starts_with("4 kernel threads at or above the real-time thread (SCHED_FIFO 40)"),
        "{}",
        above.title
    );
    let facts_named: Vec<&str> = above.evidence.iter().map(|e| e.fact.as_str()).collect();
    assert_eq!(
        facts_named,
        ["irq/9-acpi (pid 47)", "irq/1-i8042 (pid 64)", "irq/4-ttyS0 (pid 99)", "irq/26-virtio0-req.1 (pid 115)"]
    );
    assert_eq!(above.fix[0].action, "for p in 47 64 99 115; do chrt -f -p 39 $p; done");
    assert_eq!(above.fix[1].action, "for i in 9 1 4 26; do echo 0 > /proc/irq/$i/smp_affinity_list; done");
    // Below FIFO 40 remain ktimers, ksoftirqd, rcuc and irq_work: the IRQ threads are no longer deferred work.
    let below = f.iter().find(|x| x.id == "priority.deferred_work_below").expect("deferred work");
    assert_eq!(below.evidence.len(), 4, "{below:#?}");
}

#[test]
fn a_sched_other_thread_is_below_every_real_time_kernel_thread() {
    let facts = fixture("debian-6.1-rt-guest");
    let f = findings_at(&facts, &cpus("1"), 0);
    let above = f.iter().find(|x| x.id == "priority.kernel_threads_above").expect("threads above");
    assert!(above.title.contains("(SCHED_OTHER)"), "{}", above.title);
    // Every real-time kernel thread allowed on CPU 1 but migration/1: rcu_preempt, rcub/0, irq_work/1, rcuc/1,
    // ktimers/1 and the four IRQ threads.
    assert!(above.title.starts_with("9 kernel threads"), "{}", above.title);
    assert!(above.fix.iter().all(|x| !x.action.contains("chrt")), "no chrt below SCHED_OTHER: {:?}", above.fix);
    assert!(f.iter().all(|x| x.id != "priority.deferred_work_below"));
}

#[test]
fn without_threaded_interrupts_deferred_work_below_is_not_a_finding() {
    // The same threads on a kernel said not to be PREEMPT_RT and booted without threadirqs: ksoftirqd below
    // a FIFO 95 thread is how every such kernel is, not a finding.
    let mut facts = fixture("debian-6.1-rt-guest");
    facts.kernel.preemption = Fact::known("full".to_string(), "test");
    let f = findings_at(&facts, &cpus("1"), 95);
    assert!(f.iter().all(|x| !x.id.starts_with("priority.")), "{f:#?}");
    // Facts without the kernel threads (older snapshots) give no priority finding either.
    let f = findings_at(&fixture("rt_box"), &CpuList::default(), 40);
    assert!(f.iter().all(|x| !x.id.starts_with("priority.")), "{f:#?}");
}
