//! What `analyze` concludes from traces pasted into mail (#19 items 10-12): a gap the author left out is
//! called that, and the delay marker is the one the trace printed.

use latscope_analyze::analysis::{analyze, AnalyzeOptions};
use latscope_analyze::latency_report::Overflow;
use latscope_decode::decode_file;
use latscope_model::{CauseKind, Nanos};
use std::path::PathBuf;

#[test]
fn an_elided_gap_is_not_time_without_a_trace_entry() {
    let rel = "pasted/irqsoff-6.0-ppc8xx-quoted-wrapped-elided-netdev.txt";
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel);
    let t = decode_file(&p).expect("decodes");
    let a = analyze(rel, &t, &AnalyzeOptions::default());
    let r = a.latency_trace.as_ref().expect("latency-tracer report");
    assert_eq!(r.latency, Nanos::from_us(126_337));
    let big = r.big.as_ref().expect("big entry");
    assert_eq!(big.ts, Nanos::from_us(231));
    assert_eq!(big.elided.as_deref(), Some("8182 x the above two line"));
    // The trace printed `231us+`; today's thresholds would print '@' for the 126 ms that follow.
    assert_eq!((big.printed_marker, big.marker), (Some('+'), '@'));
}

/// #19 item 10: the words the author of seed 001 wrote after five trace lines are kept with the analysis as
/// notes, where they stand, instead of inside the events' fields.
#[test]
fn the_authors_notes_are_kept_with_the_source() {
    let rel = "seeds/001-latency-format-events-cyclictest.txt";
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel);
    let t = decode_file(&p).expect("decodes");
    let a = analyze(rel, &t, &AnalyzeOptions::default());
    assert_eq!(a.source.notes.len(), 5, "{:?}", a.source.notes);
    assert!(a.source.notes[0]
        .ends_with(":3: <========= prepare to sleep, the next expected waking up time is 6389900935569."));
    assert!(a.source.notes[3].ends_with(":14: <==== try to wake up cyclictest process"));
}

fn analysed(rel: &str) -> latscope_analyze::analysis::Analysis {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel);
    let t = decode_file(&p).unwrap_or_else(|e| panic!("{rel}: {e}"));
    analyze(rel, &t, &AnalyzeOptions::default())
}

/// #19 item 13: the 2004 tracer's v1.0.2 section (2.6.8.1 voluntary-preempt, LKML 2004-08-28): 730 us with
/// preemption off in events/0:4 from kernel_fpu_begin to _mmx_memcpy, all of it after the
/// `0.000ms … kernel_fpu_begin (_mmx_memcpy)` entry (the next is at 0.730ms). Before: no verdict (0 events),
/// and with the entries a "preemption" trace was called wakeup latency without a wakeup in it.
#[test]
fn a_2004_critical_section_is_preemption_off_from_its_header_and_longest_step() {
    let a = analysed("pasted/preemption-2.6.8.1-zaphod-vp-v1.0.2-lkml.txt");
    let r = a.latency_trace.as_ref().expect("latency-tracer report");
    assert_eq!((r.latency, r.cause), (Nanos::from_us(730), CauseKind::PreemptOff));
    assert_eq!(r.task, Some(("events/0".to_string(), 4)));
    assert_eq!(r.started_at.as_deref(), Some("kernel_fpu_begin+0x21/0x60"));
    assert_eq!(r.ended_at.as_deref(), Some("_mmx_memcpy+0x131/0x180"));
    let big = r.big.as_ref().expect("longest step");
    assert_eq!((big.ts, big.delay), (Nanos::ZERO, Nanos::from_us(730)));
    assert_eq!((big.func.as_deref(), big.parent.as_deref()), (Some("kernel_fpu_begin"), Some("_mmx_memcpy")));
    assert_eq!((r.overflow.as_ref(), r.excerpt.as_ref()), (None, None));
    let v = &a.verdicts[0];
    assert_eq!((v.magnitude, v.explanation.cause), (Nanos::from_us(730), CauseKind::PreemptOff));
    assert_eq!(v.explanation.culprit.name, "kernel_fpu_begin");
    assert_eq!(v.explanation.culprit.task.as_ref().map(|t| (t.comm.as_str(), t.pid)), Some(("events/0", 4)));
}

/// #19 item 13: the 2004 tracer in -RT timing a wakeup (2.6.10-rc2-mm1-RT-V0.7.27-10, LKML 2004-11-16): the
/// IRQ 8 thread (pid 13) woken from try_to_wake_up and switched in at finish_task_switch 63 us later; the
/// longest step is the 61 us after `0.001ms … __do_softirq (do_softirq)` (the next entry is at 0.062ms).
#[test]
fn a_2004_rt_wakeup_trace_is_wakeup_latency_with_the_softirq_step() {
    let a = analysed("pasted/preemption-2.6.10-rc2-mm1-RT-v1.0.7-pid-column-lkml.txt");
    let r = a.latency_trace.as_ref().expect("latency-tracer report");
    assert_eq!((r.latency, r.cause), (Nanos::from_us(63), CauseKind::WakeupLatency));
    assert_eq!(r.task, Some(("IRQ 8".to_string(), 13)));
    let big = r.big.as_ref().expect("longest step");
    assert_eq!((big.ts, big.delay), (Nanos::from_us(1), Nanos::from_us(61)));
    assert_eq!((big.func.as_deref(), big.parent.as_deref()), (Some("__do_softirq"), Some("do_softirq")));
    assert_eq!(a.verdicts[0].explanation.culprit.name, "__do_softirq");
}

/// #19 item 13: `entries: 4000 (7910)`: the 2004 tracer kept the first 4000 of the section's 7910 entries,
/// and the mail shows 10 of those (LKML 2004-09-01, `cat /proc/net/ip_conntrack`, 2906 us). The report says
/// the section's end was not kept, and the excerpt's content is its repeated work: seq_read calling
/// ct_seq_show (5 of the 10 entries).
#[test]
fn a_2004_trace_cut_by_a_full_buffer_says_so() {
    let a = analysed("pasted/preemption-2.6.9-rc1-VP-v1.0.2-full-buffer-elided-lkml.txt");
    let r = a.latency_trace.as_ref().expect("latency-tracer report");
    assert_eq!((r.latency, r.cause), (Nanos::from_us(2906), CauseKind::PreemptOff));
    assert_eq!(r.task, Some(("cat".to_string(), 2091)));
    assert_eq!(r.overflow, Some(Overflow { kept: 4000, recorded: 7910, first_kept: true }));
    let x = r.excerpt.as_ref().expect("an excerpt of the 4000 kept");
    assert_eq!((x.shown, x.recorded, x.has_start), (10, 4000, true));
    let c = &x.repeated[0];
    assert_eq!((&*c.func, &*c.parent, c.count), ("ct_seq_show", "seq_read", 5));
    assert_eq!(a.verdicts[0].explanation.culprit.name, "ct_seq_show");
}

/// (function, total in ns) of each child of `n`.
fn children(n: &latscope_analyze::funcgraph::CallNode) -> Vec<(&str, Option<u64>)> {
    n.children.iter().map(|c| (&*c.func, c.total.map(|t| t.0))).collect()
}

/// #19 item 9: Yang Shi's function_graph traces (LKML, 2023-04-18), their root entry
/// `cppc_cpufreq_get_rate [cppc_cpufreq]() {` broken after the name by the mail client. Rejoined, each trace is
/// one call tree again: before, the root was lost and its five callees were five root calls.
#[test]
fn a_mail_wrapped_function_graph_root_is_one_call_tree() {
    let rel = "pasted/funcgraph-abstime-arm64-cppc-module-calls-mailwrapped-lkml-2023.txt";
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel);
    let t = decode_file(&p).expect("decodes");
    let trees = latscope_analyze::funcgraph::call_trees(&t.events);
    assert_eq!(trees.len(), 1, "one root call");
    let root = &trees[0];
    assert_eq!((&*root.func, root.total), ("cppc_cpufreq_get_rate", Some(Nanos(23_320))));
    assert_eq!(
        children(root),
        [
            ("cpufreq_cpu_get", Some(4_780)),
            ("cpufreq_cpu_put", Some(420)),
            ("cppc_get_perf_ctrs", Some(5_240)),
            ("__delay", Some(2_420)),
            ("cppc_get_perf_ctrs", Some(3_660)),
            // The other wrapped line, a leaf: `cppc_cpufreq_perf_to_khz` / `[cppc_cpufreq]();`.
            ("cppc_cpufreq_perf_to_khz", Some(780)),
        ]
    );
    assert_eq!(
        children(&root.children[2]),
        [
            ("cpc_read.isra.0", Some(720)),
            ("cpc_read.isra.0", Some(1_180)),
            ("cpc_read.isra.0", Some(400)),
            ("cpc_read.isra.0", Some(600))
        ]
    );

    // The first trace of the mail ends before its root returns (the author pasted part of it): one root call,
    // open, and the slowest call the trace measures is the one inside it that took an interrupt.
    let rel = "pasted/funcgraph-abstime-arm64-cppc-irq-root-mailwrapped-lkml-2023.txt";
    let a = analysed(rel);
    let f = a.funcgraph.as_ref().expect("function-graph report");
    assert_eq!(f.roots, 1);
    let slowest = f.slowest.first().expect("a measured call");
    assert_eq!((&*slowest.func, slowest.total), ("cppc_get_perf_ctrs", Some(Nanos(81_980))));
    let path: Vec<&str> = f.hot_path.iter().map(|s| &*s.func).collect();
    assert_eq!(path, ["cppc_get_perf_ctrs", "cpc_read.isra.0", "do_interrupt_handler", "gic_handle_irq"]);
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel);
    let trees = latscope_analyze::funcgraph::call_trees(&decode_file(&p).expect("decodes").events);
    assert_eq!(trees.len(), 1);
    assert_eq!((&*trees[0].func, trees[0].total), ("cppc_cpufreq_get_rate", None));
    assert_eq!(
        children(&trees[0]),
        [
            ("cpufreq_cpu_get", Some(5_160)),
            ("cpufreq_cpu_put", Some(440)),
            ("cppc_get_perf_ctrs", Some(81_980)),
            ("__delay", Some(2_460)),
            ("cppc_get_perf_ctrs", None),
        ]
    );
}
