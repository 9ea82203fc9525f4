//! The words of the explanation classes of issue #19 (items 3-8) on the real traces the analysis tests use.

use latscope_analyze::analysis::{analyze, Analysis, AnalyzeOptions};
use latscope_decode::decode_file;
use latscope_report::text::analysis_verdicts::{sentence, wakeup_sentence};
use std::path::PathBuf;

fn analysis(rel: &str) -> Analysis {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel);
    let t = decode_file(&p).unwrap_or_else(|e| panic!("{rel}: {e}"));
    analyze(rel, &t, &AnalyzeOptions::default())
}

fn first(rel: &str) -> String {
    let a = analysis(rel);
    sentence(&a, &a.verdicts[0])
}

#[test]
fn interrupt_time_on_an_idle_cpu_is_not_called_idle_whole() {
    let a = analysis("latency/wakeup_rt-3.8-doc-func.txt");
    let s = wakeup_sentence(&a.wakeups[0]);
    assert!(s.contains("72% of it (21 us)"), "{s}");
    assert!(!s.contains("100%"), "{s}");
}

#[test]
fn the_threshold_mark_leads() {
    let s = first("explain/tracemark-cyclictest-trace.txt");
    assert!(s.starts_with("cyclictest:10526 marked the trace: latency 75 us over its threshold of 60 us"), "{s}");
    assert!(s.contains("Its wakeup in the trace: cyclictest:10526 (prio 95) woke 73.91 us late"), "{s}");
    assert!(s.contains("(The trace measures 73.91 us for it, the statement says 75 us.)"), "{s}");
}

#[test]
fn a_tick_storm_is_named_with_its_rate() {
    let s = first("explain/tick-storm-rt-timersd-2022-latency-format.txt");
    assert_eq!(
        s,
        "Tick storm on CPU 1: tick_sched_timer expired 9 times in 76 us, every 10 us (about 100000 per second; a \
         regular tick is at least 1 ms apart)."
    );
}

#[test]
fn a_synthetic_latency_says_its_unit_is_assumed() {
    let s = first("explain/synthetic-block_lat-stack-doc-6.x.txt");
    assert!(s.starts_with("The trace's own block_lat event reports delta=8.322 ms (in microseconds"), "{s}");
    assert!(s.ends_with("The trace has no wakeup of that task before it to explain it."), "{s}");
}

#[test]
fn an_excerpt_says_what_it_covers_and_what_it_repeats() {
    let s = first("explain/preemptoff-5.11-arm64-mmc-softirq-excerpt-mailwrapped.txt");
    assert!(s.contains("The trace is an excerpt:"), "{s}");
    assert!(s.contains("of the 51247 entries the header counts, 216 us from +1055999 us to +1056215 us"), "{s}");
    assert!(s.contains("without the section's start"), "{s}");
    assert!(s.contains("ext4_finish_bio called end_page_writeback 4 times in softirq"), "{s}");
    assert!(!s.contains("big delay marker"), "{s}");
}

#[test]
fn sampled_irqs_off_is_worded_with_its_granularity() {
    let a = analysis("events/rpi-4.19-armv7-function-stacktrace-symoffset-126k.txt");
    let mut out = Vec::new();
    latscope_report::text::analysis::write_analysis(&mut out, &a, true).expect("text");
    let text = String::from_utf8(out).expect("utf-8");
    assert!(
        text.contains(
            "in cat:884, from rpi_get_interrupt_info to print: irqs were off at each of 26 events over 584 us, at most \
             63 us apart; no event shows them on"
        ),
        "{text}"
    );
    assert!(!text.contains("lower bound"), "{text}");
    assert!(!text.contains("nothing in this trace stands out"), "{text}");
    let s = first("events/rpi-4.19-armv7-function-stacktrace-symoffset-126k.txt");
    assert_eq!(
        s,
        "On CPU 2 in cat:884, from rpi_get_interrupt_info to print: irqs were off at each of 26 events over 584 us, \
         at most 63 us apart; no event shows them on. These events are too far apart to show that the state held \
         between them (a gap of 63 us in 584 us): not a measured section. To measure it, trace with the preemptirq events or run the irqsoff or \
         preemptoff tracer."
    );
}

#[test]
fn irqs_off_across_a_switch_names_both_tasks_and_where_it_began_and_ended() {
    let a = analysis("explain/function-6.1-rt-x86_64-tcg-irqsoff-across-sched_switch.txt");
    let mut out = Vec::new();
    latscope_report::text::analysis::write_analysis(&mut out, &a, true).expect("text");
    let text = String::from_utf8(out).expect("utf-8");
    assert!(
        text.contains(
            "64 us  in latscope-t1:124 → rcuc/1:27 (across the switch between them), from rcu_note_context_switch \
             to finish_task_switch: irqs were off at each of 9 events over 64 us, at most 31 us apart; no event \
             shows them on"
        ),
        "{text}"
    );
    assert!(!text.contains("task switch(es)"), "{text}");
}

/// #19 items 10 and 13: the analysis of a pasted trace shows the author's words as notes under its header, and
/// a trace whose times were left out says so.
#[test]
fn a_pasted_traces_notes_and_missing_times_are_shown() {
    let a = analysis("pasted/psi-6.13-delayed-dequeue-untimed-annotated-lkml.txt");
    let mut out = Vec::new();
    latscope_report::text::analysis::write_analysis(&mut out, &a, false).expect("text");
    let s = String::from_utf8(out).expect("utf-8");
    assert!(s.contains("The trace's author wrote after its lines (read, not decoded):"), "{s}");
    assert!(s.contains(":8: # Splat (cfs_rq->throttled=1)\n"), "{s}");
    assert!(s.contains(":9: # Task has woken on a throttled hierarchy\n"), "{s}");
    assert!(s.contains("first: ") && s.contains("the times are missing: 6 event line(s)"), "{s}");
}

/// #19 item 13: a 2004 trace whose tracer kept the first 4000 of the section's 7910 entries says so.
#[test]
fn a_trace_cut_by_a_full_buffer_says_its_end_is_missing() {
    let s = first("pasted/preemption-2.6.9-rc1-VP-v1.0.2-full-buffer-elided-lkml.txt");
    assert!(s.starts_with("2906 us with preemption off (task cat:2091)."), "{s}");
    assert!(s.contains("The tracer kept only the first 4000 of the section's 7910 entries"), "{s}");
    assert!(s.ends_with("the section's end is not in the trace."), "{s}");
    let s = first("pasted/preemption-2.6.8.1-zaphod-vp-v1.0.2-lkml.txt");
    assert!(
        s.starts_with(
            "730 us with preemption off in kernel_fpu_begin called from _mmx_memcpy (task events/0:4); the section \
             started at kernel_fpu_begin+0x21/0x60 and ended at _mmx_memcpy+0x131/0x180."
        ),
        "{s}"
    );
    assert!(!s.contains("kept only"), "{s}");
}
