//! What `analyze` concludes from traces pasted into mail (#19 items 10-12): a gap the author left out is
//! called that, and the delay marker is the one the trace printed.

use latscope_analyze::analysis::{analyze, AnalyzeOptions};
use latscope_decode::decode_file;
use latscope_model::Nanos;
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
