//! Every text fixture in `fixtures/` decodes; per fixture the event count, first/last timestamps and format,
//! and for the interesting ones the decoded fields (latency headers, flags of every generation, special
//! print formats, function_graph, systrace wrappers). Counts were cross-checked against `grep` counts of
//! event lines in each file.

use latscope_decode::{decode_bytes, decode_file, DecodeError, DecodedTrace, Format};
use latscope_model::event::{OsnoiseKind, TimerlatContext, WakeupKind};
use latscope_model::{CpuId, EventKind, Flags, Nanos};
use std::path::PathBuf;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel)
}

fn decode(rel: &str) -> DecodedTrace {
    decode_file(&fixture(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
}

/// (file, events, first ts ns, last ts ns, format, warnings)
const TABLE: &[(&str, usize, u64, u64, Format, usize)] = &[
    ("events/function-tracer-3.x-doc.txt", 8, 3082063030000, 3082063033000, Format::FtraceText, 0),
    ("events/function-tracer-nolat-cpu-buffer-started-doc.txt", 5, 1701957688000, 1701957693000, Format::FtraceText, 0),
    ("events/osnoise-events-doc.txt", 4, 5789857532000, 5789858413000, Format::FtraceText, 0),
    (
        "events/preemptirq-irq_disable-irq_handler-arm64-5.4.txt",
        7,
        14372732649000,
        14372743625000,
        Format::FtraceText,
        0,
    ),
    (
        "events/rpi-4.19-armv7-function-stacktrace-symoffset-126k.txt",
        736,
        333875303000,
        339254944000,
        Format::FtraceText,
        0,
    ),
    ("events/rpi-4.19-armv7-irq-softirq-nop.txt", 11, 239691099000, 239691236000, Format::FtraceText, 0),
    (
        "events/rpi-4.19-armv7-irq-workqueue-sched-stack-edited.txt",
        42,
        1571189380000,
        1571295070000,
        Format::FtraceText,
        0,
    ),
    ("events/rpi-4.19-armv7-arch_timer-irq_svc-stack.txt", 3, 230859933000, 230859993000, Format::FtraceText, 0),
    ("events/rpi-arm64-el1h_64_irq-stacks-edited.txt", 5, 327007803000, 337398809000, Format::FtraceText, 0),
    ("events/rpi-4.19-armv7-irq_handler-trace_printk.txt", 14, 89431692000, 89432046000, Format::FtraceText, 0),
    ("events/sched_switch-tracer-2.6.35doc.txt", 14, 240132281000, 240132603000, Format::FtraceText, 0),
    (
        "events/snapshot-preemptirq-irq_vectors-rt-7col-nullparent-2019.txt",
        6,
        2888401184000,
        2888401200000,
        Format::FtraceText,
        0,
    ),
    ("events/snapshot-sched_switch-3.x-doc.txt", 3, 2440603828000, 2440707230000, Format::FtraceText, 0),
    ("events/timerlat-instance-6.1-rt-qemu.txt", 32, 6966399000, 7032857000, Format::FtraceText, 0),
    ("events/timerlat-osnoise-events-7col-flags-doc.txt", 5, 548771078000, 548771104000, Format::FtraceText, 0),
    ("events/timerlat-print_stack-7col-flags-doc.txt", 7, 200201948000, 200203446000, Format::FtraceText, 0),
    ("events/timerlat-trace-spin-6.1-rt-qemu.txt", 768, 33000068000, 33159663000, Format::FtraceText, 0),
    ("events/trace_pipe-irq-softirq-3.x-doc.txt", 12, 138732674000, 138733283000, Format::FtraceText, 0),
    ("events/trace_pipe-sched-3.x-doc.txt", 10, 136676759000, 136677025000, Format::FtraceText, 0),
    ("funcgraph/fgraph-2.6.35doc-abstime.txt", 13, 360774522000, 360774530000, Format::FuncGraphText, 0),
    // Without the abstime column function_graph lines carry no time: one warning says so.
    ("funcgraph/fgraph-2.6.35doc-basic.txt", 16, 0, 0, Format::FuncGraphText, 1),
    ("funcgraph/fgraph-2.6.35doc-proc.txt", 9, 0, 0, Format::FuncGraphText, 1),
    ("funcgraph/fgraph-module-functions-iio-dpot-pac1921-mail-2024.txt", 19, 0, 0, Format::FuncGraphText, 1),
    ("funcgraph/fgraph-overhead-markers-doc.txt", 31, 0, 0, Format::FuncGraphText, 1),
    ("funcgraph/fgraph-retval-doc-6.5.txt", 11, 0, 0, Format::FuncGraphText, 1),
    ("funcgraph/fgraph-retval-hex-doc-6.5.txt", 11, 0, 0, Format::FuncGraphText, 1),
    ("funcgraph/fgraph-tail-doc.txt", 5, 0, 0, Format::FuncGraphText, 1),
    ("funcgraph/perf-ftrace-T-kmalloc-2digit-cpu.txt", 3, 0, 0, Format::FuncGraphText, 1),
    (
        "funcgraph/perftools-funcgraph-Ctp-abstime-sleep-time-off.txt",
        520,
        7338520591816000,
        7338520855286000,
        Format::FuncGraphText,
        0,
    ),
    ("funcgraph/perftools-funcgraph-D-noduration.txt", 19, 0, 0, Format::FuncGraphText, 1),
    ("funcgraph/perftools-funcgraph-xen-3.x-ctxswitch-nooverhead.txt", 116, 0, 0, Format::FuncGraphText, 1),
    ("hwlat/hwlat-6.1-rt-x86_64-tcg.txt", 18, 20325678000, 22289533000, Format::FtraceText, 0),
    ("hwlat/hwlat-tracer-5.6-doc.txt", 12, 678473449000, 886114702000, Format::FtraceText, 0),
    ("latency/irqsoff-2.6.26-nofunc.txt", 3, 0, 14000, Format::LatencyText, 0),
    ("latency/irqsoff-2.6.26-rc8-func.txt", 21, 0, 51000, Format::LatencyText, 0),
    ("latency/irqsoff-3.8-doc-func.txt", 19, 0, 120000, Format::LatencyText, 0),
    ("latency/irqsoff-3.8-doc-nofunc-ps.txt", 4, 0, 306000, Format::LatencyText, 0),
    ("latency/irqsoff-4.20-doc-display-graph.txt", 13, 0, 3792000, Format::LatencyText, 0),
    ("latency/irqsoff-5.4.161-arm64-qcom-idle-el1_irq.txt", 4, 0, 221000, Format::LatencyText, 0),
    ("latency/irqsoff-5.4.161-arm64-qcom-kworker-7ms-joinedline.txt", 4, 0, 7042000, Format::LatencyText, 0),
    ("latency/irqsoff-5.4.161-arm64-qcom-printk-12ms.txt", 4, 0, 12118000, Format::LatencyText, 0),
    ("latency/preemptirqsoff-2.6.26-rc8-func.txt", 56, 0, 105000, Format::LatencyText, 0),
    ("latency/preemptirqsoff-2.6.26-rc8-nofunc.txt", 3, 0, 294000, Format::LatencyText, 0),
    ("latency/preemptirqsoff-3.8-doc-func.txt", 59, 0, 186000, Format::LatencyText, 0),
    ("latency/preemptirqsoff-3.8-doc-nofunc.txt", 4, 0, 111000, Format::LatencyText, 0),
    ("latency/preemptoff-2.6.26-rc8-func.txt", 32, 0, 64000, Format::LatencyText, 0),
    ("latency/preemptoff-2.6.26-rc8-nofunc.txt", 3, 0, 30000, Format::LatencyText, 0),
    ("latency/preemptoff-3.8-doc-func.txt", 32, 0, 104000, Format::LatencyText, 0),
    ("latency/preemptoff-3.8-doc-nofunc.txt", 4, 0, 52000, Format::LatencyText, 0),
    ("latency/wakeup-2.6.26-rc8-func.txt", 31, 0, 50000, Format::LatencyText, 0),
    ("latency/wakeup-2.6.26-rc8-nofunc.txt", 2, 0, 4000, Format::LatencyText, 0),
    ("latency/wakeup-3.8-doc-nofunc.txt", 4, 0, 15000, Format::LatencyText, 0),
    ("latency/wakeup_rt-3.8-doc-events.txt", 12, 0, 6000, Format::LatencyText, 0),
    ("latency/wakeup_rt-3.8-doc-func.txt", 85, 1000, 30000, Format::LatencyText, 0),
    ("latency/wakeup_rt-3.8-doc-nofunc.txt", 4, 0, 5000, Format::LatencyText, 0),
    ("latency/wakeup_rt-6.1-rt-qemu-rt-throttled.txt", 6, 3000, 49815000, Format::LatencyText, 0),
    ("latency/wakeup_rt-5.4.140-rt64-rpi4-arm64-abridged.txt", 10, 1000, 389000, Format::LatencyText, 0),
    ("latency/wakeup_rt-6.5-rt6-riscv-8col-before.txt", 6, 1000, 1968000, Format::LatencyText, 0),
    // 1 warning: the 6 wrapped wakeup/switch records it rejoins.
    ("latency/wakeup_rt-6.12-m68k-coldfire-zero-ip-mailwrapped.txt", 18, 0, 2000000, Format::LatencyText, 1),
    ("rtla/osnoise-tracer-trace-doc.txt", 8, 81637220000, 81638326000, Format::FtraceText, 0),
    ("rtla/timerlat-tracer-trace-doc.txt", 8, 54029328000, 54030347000, Format::FtraceText, 0),
    ("seeds/000-irqsoff-5.4.161-arm64-printk-12ms.txt", 4, 0, 12118000, Format::LatencyText, 0),
    // The seed's author annotated the graph (`+---->`, `| additional part …`, `(~7.5us)`): every call
    // still decodes at its own depth; the one warning is the missing abstime column.
    ("seeds/001-funcgraph-abnormal.txt", 52, 0, 0, Format::FuncGraphText, 1),
    ("seeds/001-funcgraph-normal.txt", 35, 0, 0, Format::FuncGraphText, 1),
    ("seeds/001-latency-format-events-cyclictest.txt", 17, 2563694114000, 2563695128000, Format::FtraceText, 0),
    ("seeds/002-preemptirq-irq-events-5.4.161-arm64.txt", 7, 14372732649000, 14372743625000, Format::FtraceText, 0),
    (
        "systrace/catapult-android_systrace-noirqinfo-escaped.txt",
        91,
        50260647576000,
        50260767491000,
        Format::Systrace,
        0,
    ),
    // The page's last line is a clock-sync marker stamped 0.000000: sorted first.
    ("systrace/catapult-android_systrace.html", 31479, 0, 50265647792000, Format::Systrace, 0),
    ("systrace/catapult-atrace-tgid-decompressed.txt", 1042, 683201354908000, 683202352760000, Format::FtraceText, 0),
    ("systrace/catapult-atrace-zlib-compressed.bin", 1042, 683201354908000, 683202352760000, Format::Systrace, 0),
    ("systrace/catapult-atrace_data_raw.txt", 116, 1212465062000, 1213465171000, Format::FtraceText, 0),
    ("systrace/trappy-trace_surfaceflinger-tgid.html", 2506, 538064659000, 538802729000, Format::Systrace, 0),
    (
        "tracecmd-report/hiboma-centos6-2.6.32-trace-cmd-report-funcgraph-annotated.txt",
        52,
        107227460641000,
        107227461041000,
        Format::TraceCmdReport,
        0,
    ),
    (
        "tracecmd-report/hiboma-centos6-2.6.32-trace-cmd-report-l-latency-funcgraph.txt",
        19,
        1401282250000,
        1401282369000,
        Format::FuncGraphText,
        0,
    ),
    (
        "tracecmd-report/local-6.18-x86_64-printk-stacks-excerpt.txt",
        130,
        8041555140000,
        8041562768000,
        Format::TraceCmdReport,
        0,
    ),
    (
        "tracecmd-report/lisa-trace-cmd-report-juno-arm64-numeric-prev_state.txt",
        2941,
        76211513000,
        82888010000,
        Format::TraceCmdReport,
        0,
    ),
    (
        "tracecmd-report/trace-cmd-report-6.x-5col-function-events.txt",
        12,
        162573215752000,
        162573215761000,
        Format::TraceCmdReport,
        0,
    ),
    (
        "tracecmd-report/trace-cmd-report-6.x-sched_waking-filter.txt",
        12,
        162573215941000,
        162573241983000,
        Format::TraceCmdReport,
        0,
    ),
    (
        "tracecmd-report/trace-cmd-report-w-wakeup-latency-rt.txt",
        22,
        162573291142000,
        162581646809000,
        Format::TraceCmdReport,
        0,
    ),
    (
        "tracecmd-report/trace-cmd-report-w-wakeup-latency.txt",
        19,
        162583263060000,
        162583275399000,
        Format::TraceCmdReport,
        0,
    ),
];

#[test]
fn every_text_fixture_decodes_with_its_count_and_time_span() {
    for &(rel, n, first, last, format, warnings) in TABLE {
        let t = decode(rel);
        assert_eq!(t.events.len(), n, "{rel}: event count");
        assert_eq!(t.events.first().map(|e| e.ts.0), Some(first), "{rel}: first ts");
        assert_eq!(t.events.last().map(|e| e.ts.0), Some(last), "{rel}: last ts");
        assert_eq!(t.info.format, Some(format), "{rel}: format");
        assert_eq!(t.warnings.len(), warnings, "{rel}: warnings {:?}", t.warnings);
        // A `kind` that is not just the catch-all for most events: the decoder understood the format.
        let other = t.events.iter().filter(|e| matches!(e.kind, EventKind::Other { .. })).count();
        assert!(
            other * 2 <= n || rel.contains("hwlat") || rel.contains("osnoise-tracer"),
            "{rel}: {other} Other of {n}"
        );
    }
}

#[test]
fn table_covers_every_text_fixture() {
    let mut listed: Vec<&str> = TABLE.iter().map(|r| r.0).collect();
    listed.sort_unstable();
    for dir in ["events", "funcgraph", "latency", "systrace", "tracecmd-report", "hwlat", "seeds"] {
        for entry in std::fs::read_dir(fixture(dir)).expect("fixture dir") {
            let name = format!("{dir}/{}", entry.expect("entry").file_name().to_string_lossy());
            // An injector's ground truth beside its trace (what it spun, when) is not a trace.
            if name.ends_with("-spins.txt") {
                continue;
            }
            assert!(listed.binary_search(&name.as_str()).is_ok(), "{name} is not in TABLE");
        }
    }
}

#[test]
fn seed_000_irqsoff_header_and_stack() {
    for rel in ["seeds/000-irqsoff-5.4.161-arm64-printk-12ms.txt", "latency/irqsoff-5.4.161-arm64-qcom-printk-12ms.txt"]
    {
        let t = decode(rel);
        assert_eq!(t.info.tracer.as_deref(), Some("irqsoff"));
        assert_eq!(t.info.cpus, Some(8));
        let h = t.info.latency.as_ref().expect("latency header");
        assert_eq!((h.latency, h.cpu), (Nanos::from_us(12116), Some(CpuId(7))), "{rel}");
        assert_eq!(h.kernel.as_deref(), Some("5.4.161-qgki-debug"));
        assert_eq!(h.started_at.as_deref(), Some("vprintk_emit"));
        assert_eq!(h.ended_at.as_deref(), Some("vprintk_emit"));
        assert_eq!(h.entries, Some((4, 4)));
        assert_eq!(h.model.as_deref(), Some("M:preempt"));
        let task = h.task.as_ref().expect("task");
        assert_eq!((task.comm.as_str(), task.pid), ("qseecom-unload-", 207));
        let frames: Vec<&str> = h.stack.iter().map(|f| &**f).collect();
        assert_eq!(
            frames,
            [
                "vprintk_default",
                "vprintk_func",
                "printk",
                "__dynamic_pr_debug",
                "__qseecom_unload_app_kthread_func",
                "kthread",
                "ret_from_fork"
            ]
        );
        let e = &t.events[0];
        assert_eq!((&*e.comm, e.pid, e.cpu), ("qseecom-", 207, CpuId(7)));
        assert!(e.flags.irqs_off() && e.flags.preempt_depth == Some(1));
        assert_eq!(
            e.kind,
            EventKind::Function { func: "console_trylock_spinning".into(), parent: Some("vprintk_emit".into()) }
        );
        assert!(matches!(t.events[3].kind, EventKind::Stack { ref frames } if frames.len() == 7));
    }
}

#[test]
fn joined_line_and_old_latency_headers() {
    let t = decode("latency/irqsoff-5.4.161-arm64-qcom-kworker-7ms-joinedline.txt");
    let h = t.info.latency.expect("header");
    assert_eq!((h.latency, h.cpu), (Nanos::from_us(7038), Some(CpuId(2))));
    assert_eq!(h.stack.len(), 15);
    assert_eq!(h.stack.last().map(|f| &**f), Some("ret_from_fork"));
    assert_eq!(&*t.events[0].comm, "kworker/");

    let t = decode("latency/irqsoff-2.6.26-rc8-func.txt");
    let h = t.info.latency.expect("2.6.26 header without #");
    assert_eq!((h.tracer.as_str(), h.latency, h.cpu), ("irqsoff", Nanos::from_us(50), Some(CpuId(0))));
    assert_eq!(h.started_at.as_deref(), Some("__alloc_pages_internal"));
    assert_eq!(h.task.map(|t| (t.comm, t.pid)), Some(("ls".to_string(), 4339)));
    // `func (parent)` callers and the `+` delay marker.
    assert_eq!(
        t.events[0].kind,
        EventKind::Function { func: "get_page_from_freelist".into(), parent: Some("__alloc_pages_internal".into()) }
    );

    let t = decode("latency/wakeup-2.6.26-rc8-func.txt");
    let h = t.info.latency.expect("wakeup header");
    let task = h.task.expect("task");
    assert_eq!((task.comm.as_str(), task.pid, task.policy, task.rt_prio), ("sleep", 4068, Some(2), Some(5)));
    // `1d.H3`: hardirq inside softirq.
    assert!(t.events[0].flags.in_hardirq() && t.events[0].flags.in_softirq());
}

#[test]
fn wakeup_rt_records_and_eight_column_flags() {
    let t = decode("latency/wakeup_rt-6.5-rt6-riscv-8col-before.txt");
    let h = t.info.latency.as_ref().expect("header");
    assert_eq!((h.latency, h.model.as_deref()), (Nanos::from_us(1969), Some("M:preempt_rt")));
    let e = &t.events[0];
    // `1dn.h511`: CPU 1, irqs off, TIF_NEED_RESCHED only, hardirq, preempt 5, lazy 1, migrate-disable 1.
    assert_eq!(e.cpu, CpuId(1));
    assert!(e.flags.irqs_off() && e.flags.in_hardirq());
    assert!(e.flags.has(Flags::NEED_RESCHED) && !e.flags.has(Flags::PREEMPT_RESCHED));
    assert_eq!(
        (e.flags.preempt_depth, e.flags.preempt_lazy_depth, e.flags.migrate_disable),
        (Some(5), Some(1), Some(1))
    );
    assert_eq!(
        e.kind,
        EventKind::SchedWakeup {
            kind: WakeupKind::Wakeup,
            comm: "cyclictest".into(),
            pid: 250,
            prio: 0,
            target_cpu: Some(CpuId(1))
        }
    );
    let switch = t.events.iter().find(|e| matches!(e.kind, EventKind::SchedSwitch { .. })).expect("switch");
    assert!(matches!(&switch.kind,
        EventKind::SchedSwitch { prev_comm, prev_pid: 264, next_pid: 250, prev_state, .. }
            if &**prev_comm == "stress-n" && &**prev_state == "R"));
    assert_eq!(switch.ts, Nanos::from_us(1956));
    // Two `<stack trace>` sections; the header keeps the last.
    assert_eq!(t.events.iter().filter(|e| matches!(e.kind, EventKind::Stack { .. })).count(), 2);
    assert_eq!(h.stack.first().map(|f| &**f), Some("__ftrace_trace_stack"));
    assert_eq!(h.stack.last().map(|f| &**f), Some("ret_from_exception"));
}

/// The wakeup tracer's `CALLER_ADDR1` record on an arch without frame pointers prints as `0` (m68k,
/// riscv): a function record at address 0, not a print; the mail wrapped each wakeup/switch record
/// after the woken task's pid, and the rest on the next line completes it.
#[test]
fn wakeup_rt_zero_address_records_and_wrapped_switch_records() {
    let t = decode("latency/wakeup_rt-6.12-m68k-coldfire-zero-ip-mailwrapped.txt");
    // The only warning says how many lines were rejoined: the rest of each of the 6 wrapped records.
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert!(t.warnings[0].message.starts_with("6 line(s) broken by a mail client were rejoined"), "{:?}", t.warnings);
    assert!(!t.events.iter().any(|e| matches!(e.kind, EventKind::Print { .. })), "no print events");
    let zero: Vec<_> = t
        .events
        .iter()
        .filter(|e| matches!(&e.kind, EventKind::Function { func, parent: None } if &**func == "0"))
        .collect();
    assert_eq!(zero.len(), 3);
    // `0dn.5.    0us#: 0`: the delay marker of the last one is kept.
    assert!(
        zero[2].flags.irqs_off() && zero[2].flags.has(Flags::NEED_RESCHED) && zero[2].flags.preempt_depth == Some(5)
    );
    let wakeups: Vec<_> = t
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::SchedWakeup { comm, pid, prio, target_cpu, .. } => {
                Some((e.pid, comm.to_string(), *pid, *prio, *target_cpu))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        wakeups,
        [
            (11, "irq_work/0".to_string(), 22, 98, Some(CpuId(0))),
            (229, "irq/100-enet-fe".to_string(), 118, 49, Some(CpuId(0))),
            (229, "irq/100-enet-fe".to_string(), 118, 49, Some(CpuId(0))),
        ]
    );
    let switches =
        t.events.iter().filter(|e| matches!(&e.kind, EventKind::SchedSwitch { next_pid: 22 | 118, .. })).count();
    assert_eq!(switches, 3);
    let e = t.events.iter().find(|e| e.pid == 229).expect("telnetd");
    // `0Dnh4.`: CPU 0, irqs and bottom halves off, hardirq.
    assert!(e.flags.has(Flags::IRQS_OFF | Flags::BH_OFF) && e.flags.in_hardirq() && e.cpu == CpuId(0));
    let t = decode("latency/wakeup_rt-6.5-rt6-riscv-8col-before.txt");
    assert!(t.events.iter().any(|e| matches!(&e.kind, EventKind::Function { func, .. } if &**func == "0")));
}

/// A synthetic event's `unsigned long[]` stacktrace field (`stack=STACK:`) is followed by its frames on
/// `=> fn` lines in column 0: they are the event's stack, not lines to skip.
#[test]
fn synthetic_event_stack_field_frames_in_column_zero() {
    let t = decode("explain/synthetic-block_lat-stack-doc-6.x.txt");
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
    let stacks: Vec<(i32, Vec<&str>)> = t
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Stack { frames } => Some((e.pid, frames.iter().map(|f| &**f).collect())),
            _ => None,
        })
        .collect();
    assert_eq!(stacks.len(), 2);
    assert_eq!(stacks[0].0, 0);
    assert_eq!(stacks[0].1.len(), 10);
    assert_eq!(stacks[0].1[0], "__schedule+0x448/0x7b0");
    assert_eq!(stacks[0].1[9], "ret_from_fork+0x2c/0x50");
    assert_eq!((stacks[1].0, stacks[1].1[3]), (2, "wait_for_completion_killable+0x144/0x1f0"));
    // Each stack follows its event.
    assert!(
        matches!(&t.events[0].kind, EventKind::Other { name, .. } if &**name == "block_lat"),
        "{:?}",
        t.events[0].kind
    );
    assert!(matches!(t.events[1].kind, EventKind::Stack { .. }));
}

#[test]
fn event_traces_fields_and_flags() {
    let t = decode("seeds/002-preemptirq-irq-events-5.4.161-arm64.txt");
    let e = &t.events[0];
    assert_eq!((&*e.comm, e.pid, e.cpu, e.ts), ("<...>", 6462, CpuId(6), Nanos(14_372_732_649_000)));
    assert!(matches!(&e.kind, EventKind::Preemptirq { caller, parent, .. }
        if &**caller == "console_unlock+0xc0/0x510" && &**parent == "vprintk_emit+0x134/0x1d0"));
    assert_eq!(t.events[3].kind, EventKind::IrqHandlerEntry { irq: 3, name: "arch_timer".into() });
    assert_eq!(t.events[6].kind, EventKind::IrqHandlerExit { irq: 3, handled: true });
    assert!(matches!(&t.events[4].kind, EventKind::Other { name, .. } if &**name == "hrtimer_cb"));

    let t = decode("seeds/001-latency-format-events-cyclictest.txt");
    let kinds: Vec<String> = t.events.iter().map(|e| e.kind.name()).collect();
    assert_eq!(kinds[0], "sys_enter_clock_nanosleep");
    assert_eq!(kinds.last().map(String::as_str), Some("sys_exit_clock_nanosleep"));
    let expire = t.events.iter().find(|e| matches!(e.kind, EventKind::HrtimerExpireEntry { .. })).expect("expire");
    assert_eq!(expire.ts, Nanos::from_us(2_563_695_119));
    assert!(
        matches!(&expire.kind, EventKind::HrtimerExpireEntry { hrtimer: 0x2ad8bc6a, function, now: Nanos(6389900945120) }
        if &**function == "hrtimer_wakeup")
    );
    let start = t.events.iter().find(|e| matches!(e.kind, EventKind::HrtimerStart { .. })).expect("start");
    assert!(matches!(&start.kind, EventKind::HrtimerStart { expires: Nanos(6389900935569), .. }));
    // `1d..h1..`: the 7 flag columns after the CPU digit.
    let timer = t.events.iter().find(|e| matches!(e.kind, EventKind::VectorEntry { .. })).expect("local_timer");
    assert_eq!(timer.kind, EventKind::VectorEntry { name: "local_timer".into(), vector: Some(236) });
    assert!(timer.flags.in_hardirq() && timer.flags.irqs_off() && timer.flags.preempt_depth == Some(1));
    let exit = t.events.iter().find(|e| matches!(e.kind, EventKind::SysExit { name: None, .. })).expect("sys_exit");
    assert_eq!(exit.kind, EventKind::SysExit { nr: Some(230), name: None, ret: 0 });

    let t = decode("events/trace_pipe-sched-3.x-doc.txt");
    assert!(t
        .events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::SchedSwitch { prev_state, prev_comm, next_pid: 59, .. }
        if &**prev_state == "R+" && &**prev_comm == "bash")));

    let t = decode("events/timerlat-osnoise-events-7col-flags-doc.txt");
    assert_eq!(
        t.events[0].kind,
        EventKind::Timerlat { context: TimerlatContext::Irq, seqnum: 402268, latency: Nanos(13585) }
    );
    assert!(
        matches!(&t.events[3].kind, EventKind::Osnoise { kind: OsnoiseKind::Thread, name, duration: Nanos(9909), .. } if &**name == "cc1")
    );

    let t = decode("events/snapshot-preemptirq-irq_vectors-rt-7col-nullparent-2019.txt");
    // `d..h212`: preempt 2, lazy 1, migrate-disable 2.
    let e = &t.events[3];
    assert_eq!(
        (e.flags.preempt_depth, e.flags.preempt_lazy_depth, e.flags.migrate_disable),
        (Some(2), Some(1), Some(2))
    );

    let t = decode("events/sched_switch-tracer-2.6.35doc.txt");
    assert_eq!(t.events[1].kind.name(), "sched_switch");
    assert!(matches!(t.events[0].kind, EventKind::SchedWakeup { pid: 4055, prio: 120, .. }));
    assert!(!t.events[0].flags.has(Flags::KNOWN), "no flags column in 2.6.35's sched_switch tracer");
}

#[test]
fn trace_cmd_report_variants() {
    let t = decode("tracecmd-report/trace-cmd-report-w-wakeup-latency.txt");
    assert!(t.events.iter().any(
        |e| matches!(&e.kind, EventKind::SchedSwitch { prev_comm, prev_pid: 51219, next_comm, next_pid: 49692, .. }
        if &**prev_comm == "kworker/u36:1" && &**next_comm == "kworker/u33:2")
    ));
    assert!(t
        .events
        .iter()
        .any(|e| matches!(e.kind, EventKind::SchedWakeup { pid: 89142, target_cpu: Some(CpuId(1)), .. })));

    let t = decode("tracecmd-report/lisa-trace-cmd-report-juno-arm64-numeric-prev_state.txt");
    assert_eq!(t.info.cpus, Some(6));
    // Numeric states are kept as printed: their bit meaning depends on the kernel version.
    assert!(matches!(&t.events[0].kind, EventKind::SchedSwitch { prev_state, .. } if &**prev_state == "64"));

    let t = decode("tracecmd-report/trace-cmd-report-6.x-5col-function-events.txt");
    assert_eq!(t.events[0].kind, EventKind::Function { func: "mutex_unlock".into(), parent: None });
    assert_eq!((t.events[0].flags.preempt_depth, t.events[0].flags.migrate_disable), (Some(1), Some(0)));

    let t = decode("tracecmd-report/hiboma-centos6-2.6.32-trace-cmd-report-l-latency-funcgraph.txt");
    assert_eq!(t.events[0].kind, EventKind::GraphEntry { depth: 0, func: "set_fd_set".into() });
    assert_eq!(
        t.events[3].kind,
        EventKind::GraphExit { depth: 0, func: Some("set_fd_set".into()), duration: Some(Nanos(21_469)) }
    );
}

#[test]
fn function_graph_layouts() {
    let t = decode("funcgraph/fgraph-2.6.35doc-basic.txt");
    assert_eq!(t.events[0].kind, EventKind::GraphEntry { depth: 0, func: "sys_open".into() });
    assert_eq!(
        t.events[4].kind,
        EventKind::GraphLeaf { depth: 4, func: "__might_sleep".into(), duration: Some(Nanos(1382)) }
    );
    // `}` named from the call stack when no `/* func */` comment.
    assert_eq!(
        t.events[5].kind,
        EventKind::GraphExit { depth: 3, func: Some("kmem_cache_alloc".into()), duration: Some(Nanos(2478)) }
    );
    // A module's functions print with their module (`dpot_dac_read_avail [dpot_dac]() {`); each was 'not an
    // ftrace line' (9 of the 19), and the trace's one call tree was 4 roots.
    let t = decode("funcgraph/fgraph-module-functions-iio-dpot-pac1921-mail-2024.txt");
    assert_eq!(t.events[0].kind, EventKind::GraphEntry { depth: 0, func: "iio_read_channel_info_avail".into() });
    assert_eq!(t.events[4].kind, EventKind::GraphEntry { depth: 4, func: "pac1921_read_avail".into() });
    assert_eq!(
        t.events.last().map(|e| e.kind.clone()),
        Some(EventKind::GraphExit {
            depth: 0,
            func: Some("iio_read_channel_info_avail".into()),
            duration: Some(Nanos(84_292))
        })
    );
    let t = decode("funcgraph/fgraph-overhead-markers-doc.txt");
    assert!(t
        .events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::GraphExit { func: Some(f), duration: Some(Nanos(33_998_590)), .. }
        if &**f == "schedule_preempt_disabled")));
    let t = decode("funcgraph/fgraph-retval-doc-6.5.txt");
    assert!(
        matches!(&t.events.last().map(|e| e.kind.clone()), Some(EventKind::GraphExit { func: Some(f), .. }) if &**f == "cgroup_migrate")
    );
    let t = decode("funcgraph/perftools-funcgraph-xen-3.x-ctxswitch-nooverhead.txt");
    // The `=>` context-switch banner names the task of the lines after it.
    let after = t.events.iter().skip_while(|e| e.pid != 2854).count();
    assert!(after > 0 && t.events.iter().filter(|e| e.pid == 2854).all(|e| &*e.comm == "vmstat"));
    let t = decode("funcgraph/perftools-funcgraph-Ctp-abstime-sleep-time-off.txt");
    assert_eq!(t.events[0].ts, Nanos(7_338_520_591_816_000));
    assert!(t.events.windows(2).all(|w| w[0].ts <= w[1].ts));
    let t = decode("seeds/001-funcgraph-abnormal.txt");
    assert!(t
        .events
        .iter()
        .any(|e| matches!(&e.kind, EventKind::GraphExit { func: Some(f), duration: Some(Nanos(63_996)), .. }
        if &**f == "smp_apic_timer_interrupt")));
    // The annotated call sits at the depth of enqueue_task_rt's callees, with its own 7.505 µs.
    assert!(t.events.iter().any(|e| matches!(&e.kind,
        EventKind::GraphExit { depth: 9, func: Some(f), duration: Some(Nanos(7_505)) } if &**f == "hrtimer_start_range_ns")));
}

#[test]
fn systrace_wrappers_agree() {
    let plain = decode("systrace/catapult-atrace-tgid-decompressed.txt");
    let zlib = decode("systrace/catapult-atrace-zlib-compressed.bin");
    assert_eq!(plain.events, zlib.events);
    let e = plain.events.iter().find(|e| e.pid == 13580).expect("tgid line");
    assert_eq!((&*e.comm, e.tgid), ("ndroid.systemui", Some(13580)));
    assert!(matches!(&e.kind, EventKind::Print { text, .. } if text.starts_with("S|13580|deliverInputEvent")));
    assert_eq!(plain.events[0].tgid, None, "(-----) is no tgid");

    let js = decode("systrace/catapult-android_systrace-noirqinfo-escaped.txt");
    assert!(matches!(&js.events[0].kind, EventKind::SchedSwitch { prev_comm, next_comm, .. }
        if &**prev_comm == "atrace" && &**next_comm == "kworker/0:0"));
    let html = decode("systrace/trappy-trace_surfaceflinger-tgid.html");
    assert_eq!(html.info.cpus, Some(8));
}

#[test]
fn not_a_trace_and_damaged_input() {
    for bytes in [&b"hello\nthis is a README\n"[..], b"\x00\x01\x02binary", b"{\"json\": true}\n"] {
        assert!(matches!(decode_bytes("x", bytes), Err(DecodeError::NotATrace { .. })));
    }
    let t = decode_bytes(
        "t.txt",
        b"# tracer: nop\n  bash-1 [000] d.h1 1.000001: irq_handler_entry: irq=1 name=x\ngarbage line\n  bash-1 [000] d.h1 1.000002: irq_handler_exit: irq=1 ret=handled\nCPU:0 [LOST 12 EVENTS]\n",
    )
    .expect("decodes");
    assert_eq!(t.events.len(), 3);
    assert_eq!(t.warnings.len(), 1);
    assert_eq!(t.warnings[0].location, "t.txt:3");
    assert_eq!(t.info.lost.get(&CpuId(0)), Some(&12));
    assert_eq!(t.events[2].kind, EventKind::Lost { count: Some(12) });
}
