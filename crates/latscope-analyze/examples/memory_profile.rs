//! Where `analyze`'s memory goes (issue #18): decodes a trace whole, runs the whole-trace passes of
//! `analysis::analyze` one after the other, and prints the heap each one keeps and its peak while it runs,
//! in bytes per event, counted by a global allocator that tracks live bytes.
//!
//! `cargo run --release -p latscope-analyze --example memory_profile -- TRACE`

use latscope_analyze::analysis::{analyze, AnalyzeOptions};
use latscope_analyze::wakeup::{self, WakeupContext};
use latscope_analyze::{disabled, hrtimer, irq_stats, irqsoff, throttling, timeline::Timeline};
use latscope_model::{Event, EventKind};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting the bytes live now and the most live since the last [`reset_peak`].
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(n: usize) {
    let now = LIVE.fetch_add(n, Ordering::Relaxed) + n;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

// SAFETY: every call is passed to `System` unchanged; only counters are updated beside it.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size());
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= layout.size() {
            grew(new_size - layout.size());
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        // SAFETY: the caller's contract is `System`'s.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> usize {
    LIVE.load(Ordering::Relaxed)
}

fn reset_peak() -> usize {
    let now = live();
    PEAK.store(now, Ordering::Relaxed);
    now
}

/// Runs `f`, prints what it keeps and its peak above the heap before it, per event; returns its result.
fn step<T>(name: &str, events: usize, f: impl FnOnce() -> T) -> T {
    let before = reset_peak();
    let out = f();
    let kept = live().saturating_sub(before);
    let peak = PEAK.load(Ordering::Relaxed).saturating_sub(before);
    let per = |b: usize| b as f64 / events.max(1) as f64;
    println!("| {name} | {:.0} | {:.1} | {:.0} | {:.1} |", kept as f64 / 1e6, per(kept), peak as f64 / 1e6, per(peak));
    out
}

fn main() {
    let Some(path) = std::env::args().nth(1) else {
        eprintln!("usage: memory_profile TRACE");
        std::process::exit(1);
    };
    let path = std::path::PathBuf::from(path);
    let trace = match latscope_decode::decode_file(&path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("memory_profile: {}: {e}", path.display());
            std::process::exit(1);
        }
    };
    let events = &trace.events;
    let n = events.len();
    let stacks = events.iter().filter(|e| matches!(e.kind, EventKind::Stack { .. })).count();
    println!("{n} records ({stacks} kernel stacks); size_of::<Event>() = {} bytes", std::mem::size_of::<Event>());
    println!(
        "decoded Vec<Event>: len {n}, capacity {} ({:.0} MB allocated, {:.0} MB written); heap live after decoding {:.0} MB\n",
        events.capacity(),
        (events.capacity() * std::mem::size_of::<Event>()) as f64 / 1e6,
        (n * std::mem::size_of::<Event>()) as f64 / 1e6,
        live() as f64 / 1e6
    );
    println!("| structure | kept MB | kept B/event | peak MB | peak B/event |\n|---|---|---|---|---|");
    let expiries = step("hrtimer::expiries", n, || hrtimer::expiries(events));
    let timeline = step("Timeline::build", n, || Timeline::build(events));
    let gaps = step("throttling::throttle_gaps", n, || throttling::throttle_gaps(events, &timeline));
    let top = 10;
    let remedy = Default::default();
    let hr = step("hrtimer::report", n, || hrtimer::report(events, &timeline, &expiries, top, &remedy));
    let _irqs = step("irqsoff::report", n, || irqsoff::report(&timeline, &expiries, &hr.printed, top));
    let _dis = step("disabled::report", n, || disabled::report(&timeline, top));
    let _stats = step("irq_stats", n, || irq_stats::irq_stats(&timeline));
    let ctx = WakeupContext::new(events, &timeline, &expiries);
    let _w = step("wakeup::decompose_wakeups_in", n, || wakeup::decompose_wakeups_in(&ctx, &Default::default(), &gaps));
    let _a = step("analysis::analyze (whole, passes two at a time)", n, || {
        analyze(&path.display().to_string(), &trace, &AnalyzeOptions::default())
    });
    let parts: [(&str, usize); 5] = [
        (
            "timeline contexts",
            timeline.cpus.values().map(|c| c.contexts.capacity() * size_of_val_elem(&c.contexts)).sum(),
        ),
        (
            "timeline irqs-off",
            timeline.cpus.values().map(|c| c.irqs_off.capacity() * size_of_val_elem(&c.irqs_off)).sum(),
        ),
        (
            "timeline flag sections",
            timeline.cpus.values().map(|c| c.disabled.capacity() * size_of_val_elem(&c.disabled)).sum(),
        ),
        (
            "timeline untraced switches",
            timeline
                .cpus
                .values()
                .map(|c| c.untraced_switches.capacity() * size_of_val_elem(&c.untraced_switches))
                .sum(),
        ),
        ("hrtimer expiries", expiries.capacity() * size_of_val_elem(&expiries)),
    ];
    let count =
        |f: &dyn Fn(&latscope_analyze::timeline::CpuTimeline) -> usize| timeline.cpus.values().map(f).sum::<usize>();
    println!(
        "\nsizes: Segment {} B (held in 24) × {} , ContextSpan {} B × {}, Activity {} B, HrtimerExpiry {} B × {}",
        std::mem::size_of::<latscope_analyze::timeline::Segment>(),
        count(&|c| c.segments.len()),
        std::mem::size_of::<latscope_analyze::timeline::ContextSpan>(),
        count(&|c| c.contexts.len()),
        std::mem::size_of::<latscope_analyze::timeline::Activity>(),
        std::mem::size_of::<hrtimer::HrtimerExpiry>(),
        expiries.len()
    );
    println!("\n| part (vector capacity × element size) | MB | B/event |\n|---|---|---|");
    for (name, bytes) in parts {
        println!("| {name} | {:.0} | {:.1} |", bytes as f64 / 1e6, bytes as f64 / n.max(1) as f64);
    }
    let distinct: std::collections::HashSet<Vec<&str>> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Stack { frames } => Some(frames.iter().map(|f| &**f).collect()),
            _ => None,
        })
        .collect();
    println!("\nkernel stacks: {stacks}, distinct frame lists: {}", distinct.len());
    let mut kinds: std::collections::BTreeMap<String, usize> = Default::default();
    for e in events {
        *kinds.entry(e.kind.name()).or_default() += 1;
    }
    let mut kinds: Vec<_> = kinds.into_iter().collect();
    kinds.sort_by_key(|(_, c)| std::cmp::Reverse(*c));
    println!("\n| event | count | share |\n|---|---|---|");
    for (k, c) in kinds.iter().take(15) {
        println!("| {k} | {c} | {:.1} % |", *c as f64 * 100.0 / n.max(1) as f64);
    }
}

fn size_of_val_elem<T>(_: &[T]) -> usize {
    std::mem::size_of::<T>()
}
