//! Text for `latscope timer --trace`: the worst measured wakeups explained from the trace (timer IRQ delay,
//! IRQ handler, interference by name, blocking tasks, remainder, the sentence and remedy; with timerlat,
//! the worst timer IRQ latencies), printed under the statistics.

use super::explain::{self, WakeupView};
use latscope_model::{
    CauseKind, Explanation, GraphDiffEntry, Nanos, SampleMatch, TimerTrace, TracedIrqSample, TracedWakeup, WakeupGraph,
};
use std::io::{self, Write};

fn ns(v: u64) -> String {
    Nanos(v).to_string()
}

fn signed(v: i64) -> String {
    if v < 0 {
        format!("-{}", ns(v.unsigned_abs()))
    } else {
        ns(v as u64)
    }
}

/// Where a part of a traced wakeup is listed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Group {
    TimerIrqDelay,
    Handler,
    Interference,
    Blocking,
    Other,
}

fn group(kind: CauseKind) -> Group {
    match kind {
        CauseKind::TimerIrqDelay => Group::TimerIrqDelay,
        CauseKind::IrqHandler => Group::Handler,
        CauseKind::Irq | CauseKind::Vector | CauseKind::TimerTick | CauseKind::Softirq | CauseKind::Nmi => {
            Group::Interference
        }
        CauseKind::BlockingTask | CauseKind::PreemptOff => Group::Blocking,
        CauseKind::Idle
        | CauseKind::IrqsOff
        | CauseKind::BhOff
        | CauseKind::PreemptOrIrqsOff
        | CauseKind::KernelCode
        | CauseKind::RtThrottling
        | CauseKind::ReturnToUser
        | CauseKind::NoKernelEvent
        | CauseKind::OtherKernelEvent
        | CauseKind::WakeupLatency
        | CauseKind::FunctionTime
        | CauseKind::LostEvents
        | CauseKind::Configuration
        | CauseKind::NotTraced => Group::Other,
    }
}

fn list(w: &TracedWakeup, g: Group) -> String {
    let mut parts: Vec<&Explanation> = w.shares.iter().filter(|s| group(s.cause) == g).collect();
    parts.sort_by_key(|s| std::cmp::Reverse(s.magnitude));
    let item = |s: &Explanation| {
        let name = match g {
            Group::Other => explain::label(s),
            _ => explain::who(&s.culprit),
        };
        format!("{name}{} {}", explain::times(s), s.magnitude)
    };
    parts.into_iter().map(item).collect::<Vec<_>>().join(", ")
}

/// The wakeup as its sentence needs it.
pub fn view(w: &TracedWakeup) -> WakeupView<'_> {
    WakeupView {
        task: w.task.as_ref(),
        tid: w.tid,
        latency: w.trace_latency_ns,
        cpu: w.cpu,
        timer: w.timer.as_deref(),
        callback_delay: w.callback_delay_ns,
        other_timers: w.other_timers.iter().map(String::as_str).collect(),
        not_asleep: w.matched == SampleMatch::NotAsleep,
    }
}

/// What happened, in one sentence (empty when the trace does not explain the sample).
pub fn sentence(w: &TracedWakeup) -> String {
    if !w.found() {
        return String::new();
    }
    explain::wakeup_sentence(&view(w), w.headline.as_ref())
}

/// How the sample was matched, when that needs saying: why it is not in the trace, or that the window
/// was taken from the sample.
pub fn note(w: &TracedWakeup) -> Option<String> {
    match &w.matched {
        SampleMatch::Wakeup => None,
        SampleMatch::NotAsleep => Some("window taken from the sample: the trace has no wakeup for it".into()),
        SampleMatch::OutsideTrace { first_ns, last_ns } => Some(format!(
            "outside the trace's time span ({} to {} ns): the rolling window had let it go",
            first_ns.0, last_ns.0
        )),
        SampleMatch::EmptyTrace => Some("the trace holds no events".into()),
        SampleMatch::NoWakeup { tolerance_ns } => Some(format!(
            "no wakeup of tid {} on CPU {} ends in the {} before the thread read its clock (events lost?)",
            w.tid, w.cpu, tolerance_ns
        )),
        SampleMatch::NothingRan => Some(format!(
            "no wakeup of tid {} on CPU {} matches, and what the trace shows there covers less than half of the \
                 lateness: what held it is not in the trace",
            w.tid, w.cpu
        )),
    }
}

/// Writes the traced explanation of the worst wakeups.
pub fn write_traced_wakeups(out: &mut dyn Write, t: &TimerTrace) -> io::Result<()> {
    writeln!(out)?;
    if t.events == 0 && t.worst.is_empty() {
        // Nothing was traced: the samples are there, the trace to explain them is not.
        writeln!(out, "Worst wakeups, from the trace: not explained, no trace was taken")?;
        return t.notes.iter().try_for_each(|n| writeln!(out, "  note: {n}"));
    }
    write!(out, "Worst wakeups, from the trace ({} events", t.events)?;
    match t.stacks {
        0 => {}
        1 => write!(out, ", 1 kernel stack")?,
        n => write!(out, ", {n} kernel stacks")?,
    }
    if t.lost_events > 0 {
        write!(out, ", {} lost", t.lost_events)?;
    }
    if t.marks > 0 {
        write!(out, ", {} marked", t.marks)?;
    }
    if t.frozen {
        write!(out, ", frozen at the first threshold crossing")?;
    }
    writeln!(out, "):")?;
    if t.worst.is_empty() {
        writeln!(out, "  no sample to explain")?;
    }
    for (i, w) in t.worst.iter().enumerate() {
        write_one(out, i + 1, w)?;
    }
    if let Some(g) = &t.graph {
        write_graph(out, g)?;
    }
    if !t.irq_worst.is_empty() {
        writeln!(out, "  Worst timer IRQ latencies (timerlat), from the trace:")?;
    }
    for (i, x) in t.irq_worst.iter().enumerate() {
        write_irq(out, i + 1, x)?;
    }
    for n in &t.notes {
        writeln!(out, "  note: {n}")?;
    }
    Ok(())
}

/// A timer IRQ sample as a report row: CPU, activation, IRQ latency, what held the interrupt, remedy.
pub fn irq_row(x: &TracedIrqSample) -> Vec<String> {
    let mut held = if x.activation.found() { irq_held(x) } else { note(&x.activation).unwrap_or_default() };
    if let Some(rest) = irq_in_callback(x).filter(|_| x.activation.found()) {
        held = format!("{held} {}.", in_callback(rest));
    }
    let remedy = irq_remedy(x).unwrap_or_default().to_string();
    vec![x.cpu.to_string(), (x.seq + 1).to_string(), x.irq_latency_ns.to_string(), held, remedy]
}

fn irq_delay(x: &TracedIrqSample) -> Option<&Explanation> {
    x.activation.shares.iter().find(|s| s.cause == CauseKind::TimerIrqDelay)
}

/// How late the timer interrupt entered and what held it back (its activation's timer IRQ delay).
fn irq_held(x: &TracedIrqSample) -> String {
    match irq_delay(x) {
        Some(d) => {
            format!("{} passed before the timer interrupt entered{}", d.magnitude, explain::held_back(&d.within))
        }
        None => "the timer interrupt entered on time".into(),
    }
}

/// The part of the IRQ latency after the timer callback began, when it is not small: timerlat reads the
/// clock inside its callback, so what its IRQ latency holds beyond the interrupt's delay and the way to the
/// callback (`hrtimer_expire_entry`) passed inside the callback itself.
pub fn irq_in_callback(x: &TracedIrqSample) -> Option<Nanos> {
    let callback = x.activation.callback_delay_ns?;
    let before = irq_delay(x).map_or(Nanos::ZERO, |d| d.magnitude) + callback;
    let rest = x.irq_latency_ns.0.checked_sub(before.0)?;
    (rest > 20_000 && rest * 10 > x.irq_latency_ns.0).then_some(Nanos(rest))
}

fn in_callback(rest: Nanos) -> String {
    format!(
        "{rest} of it passed inside the timer callback before timerlat read the clock (after its \
         hrtimer_expire_entry)"
    )
}

fn irq_remedy(x: &TracedIrqSample) -> Option<&str> {
    irq_delay(x).and_then(|d| d.within.first()).and_then(explain::remedy)
}

/// One of timerlat's worst timer IRQ samples: its IRQ latency, what held the interrupt back (its
/// activation's timer IRQ delay), the way from the interrupt's entry to the timer callback, the remedy.
fn write_irq(out: &mut dyn Write, rank: usize, x: &TracedIrqSample) -> io::Result<()> {
    writeln!(
        out,
        "  #{rank} CPU {} activation {} at {}.{:09}: IRQ latency {}",
        x.cpu,
        x.seq + 1,
        x.expected_ns.0 / 1_000_000_000,
        x.expected_ns.0 % 1_000_000_000,
        x.irq_latency_ns
    )?;
    let w = &x.activation;
    if !w.found() {
        return writeln!(out, "     its activation is not in the trace: {}", note(w).unwrap_or_default());
    }
    writeln!(out, "     {}", irq_held(x))?;
    if let Some(c) = w.callback_delay_ns {
        writeln!(out, "     from the interrupt's entry to the timer callback: {c}")?;
    }
    if let Some(rest) = irq_in_callback(x) {
        writeln!(out, "     {}", in_callback(rest))?;
    }
    if let Some(r) = irq_remedy(x) {
        writeln!(out, "     remedy: {r}")?;
    }
    Ok(())
}

/// `--graph`: the calls of the worst wakeup against the median one's (`analyze --diff`'s entries).
fn write_graph(out: &mut dyn Write, g: &WakeupGraph) -> io::Result<()> {
    let at = |w: &latscope_model::GraphWindow| {
        format!("{}.{:09} ({})", w.expected_ns / 1_000_000_000, w.expected_ns % 1_000_000_000, ns(w.latency_ns()))
    };
    writeln!(
        out,
        "  Function graph of CPU {}, worst wakeup at {} against the median of {} traced wakeups at {}:",
        g.cpu,
        at(&g.worst),
        g.wakeups,
        at(&g.normal)
    )?;
    if let Some((m, after)) = g.measured_after_window() {
        writeln!(
            out,
            "     latscope measured {} for this wakeup: {} of it came after the switch-in, outside the window, so \
             these calls do not show where it went",
            ns(m),
            ns(after)
        )?;
    }
    writeln!(out, "     calls in the window: worst {}, normal {}", ns(g.worst_calls_ns), ns(g.normal_calls_ns))?;
    let shown: Vec<_> = g.entries.iter().filter(|e| e.extra_ns > 0).take(8).collect();
    if shown.is_empty() {
        writeln!(out, "     no call of the worst wakeup is absent or shorter in the normal one")?;
    }
    for e in shown {
        writeln!(out, "     +{:<11} {:<17} {}", signed(e.extra_ns), graph_kind(e), graph_path(e))?;
        if let Some(hot) = graph_hot_path(e) {
            writeln!(out, "{:35}where its time went: {hot}", "")?;
        }
    }
    Ok(())
}

/// What a `--graph` diff entry is, in words: only in the worst wakeup, longer there, or only in the normal one.
pub fn graph_kind(e: &GraphDiffEntry) -> &'static str {
    match e.kind.as_str() {
        "added" => "only in the worst",
        "self_grew" => "longer own time",
        _ => "only in the normal",
    }
}

/// A `--graph` diff entry's calls, outermost first.
pub fn graph_path(e: &GraphDiffEntry) -> String {
    e.path.iter().map(|p| &**p).collect::<Vec<&str>>().join(" → ")
}

/// Where an added call's time went (its most expensive callees with their times), when that says more than
/// the call itself.
pub fn graph_hot_path(e: &GraphDiffEntry) -> Option<String> {
    if e.hot_path.len() > 1 || e.hot_path.first().is_some_and(|h| Some(&h.0) != e.path.last()) {
        let hot: Vec<String> = e.hot_path.iter().map(|(f, t)| format!("{f} {}", ns(*t))).collect();
        return Some(hot.join(" → "));
    }
    None
}

fn write_one(out: &mut dyn Write, rank: usize, w: &TracedWakeup) -> io::Result<()> {
    writeln!(
        out,
        "  #{rank} CPU {} seq {} at {}.{:09}: measured {}",
        w.cpu,
        w.seq,
        w.expected_ns.0 / 1_000_000_000,
        w.expected_ns.0 % 1_000_000_000,
        w.sample_latency_ns
    )?;
    if !w.found() {
        return writeln!(out, "     not in the trace: {}", note(w).unwrap_or_default());
    }
    let diff = w.trace_latency_ns.0 as i64 - w.sample_latency_ns.0 as i64;
    writeln!(out, "     trace shows {} (tid {}, {} from the sample)", w.trace_latency_ns, w.tid, signed(diff))?;
    let handler = w.shares.iter().find(|s| s.cause == CauseKind::IrqHandler);
    let irq = match (handler, w.total_of(CauseKind::IrqHandler)) {
        (Some(h), Some(d)) => format!("{} {d}", h.culprit.name),
        _ => "-".into(),
    };
    let delay = w.total_of(CauseKind::TimerIrqDelay).map_or("-".to_string(), |d| d.to_string());
    writeln!(out, "     timer IRQ delay {delay}   IRQ handler {irq}")?;
    for (g, title) in
        [(Group::Interference, "interference: "), (Group::Blocking, "blocked by:   "), (Group::Other, "other:        ")]
    {
        let l = list(w, g);
        if !l.is_empty() {
            writeln!(out, "     {title}{l}")?;
        }
    }
    writeln!(out, "     remainder {}", signed(w.remainder_ns))?;
    let s = sentence(w);
    if !s.is_empty() {
        writeln!(out, "     {s}")?;
    }
    if let Some(r) = w.headline.as_ref().and_then(explain::remedy) {
        writeln!(out, "     remedy: {r}")?;
    }
    if let Some(n) = note(w) {
        writeln!(out, "     note: {n}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{CpuId, Culprit, Hint, TaskRef};

    /// The guest's live `--graph` run: the worst measured sample (27.8 ms) was 317 us late at its switch-in, the
    /// rest came after it: the text says the window does not hold it; a sample the window holds says nothing.
    #[test]
    fn a_worst_wakeup_measured_mostly_after_its_window_is_said() {
        use latscope_model::{GraphWindow, WakeupGraph};
        let mut g = WakeupGraph {
            cpu: CpuId(1),
            worst: GraphWindow { expected_ns: 8_054_500_000, woke_ns: 8_054_816_646 },
            normal: GraphWindow { expected_ns: 8_330_500_000, woke_ns: 8_330_934_896 },
            wakeups: 802,
            measured_ns: Some(27_823_776),
            ..WakeupGraph::default()
        };
        let text = |g: &WakeupGraph| {
            let mut out = Vec::new();
            write_graph(&mut out, g).expect("written");
            String::from_utf8(out).expect("utf-8")
        };
        let t = text(&g);
        assert!(t.contains("latscope measured 27.8ms for this wakeup: 27.5ms of it came after the switch-in"), "{t}");
        g.measured_ns = Some(400_000);
        assert!(!text(&g).contains("came after the switch-in"), "{}", text(&g));
    }

    /// timerlat's worst timer IRQ sample of a real guest buffer (Debian 6.1 PREEMPT_RT under qemu TCG,
    /// fixtures/README.md): activation #444, IRQ latency 5.255 ms, the interrupt entering 5.239 ms after the
    /// expiry while CPU 1 sat idle with no event (33.020379 to 33.025671 in the file).
    #[test]
    fn the_worst_timer_irq_sample_says_what_held_the_interrupt() {
        use latscope_analyze::remedy::RemedyContext;
        use latscope_analyze::sample_explain::{explain_irq_samples, MeasuredSample};
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/events/timerlat-trace-spin-6.1-rt-qemu.txt");
        let events = latscope_decode::decode_file(&p).expect("decode").events;
        let irq = MeasuredSample {
            cpu: CpuId(1),
            tid: 411,
            prio: Some(4),
            seq: 443,
            expected: Nanos(33_020_431_660),
            latency: Nanos(5_255_340),
        };
        let (irq_worst, notes) = explain_irq_samples(&events, &[irq], &RemedyContext::default());
        assert!(notes.is_empty(), "{notes:?}");
        let t = TimerTrace { irq_worst, events: events.len() as u64, ..TimerTrace::default() };
        let mut out = Vec::new();
        write_traced_wakeups(&mut out, &t).expect("write");
        let text = String::from_utf8(out).expect("utf-8");
        assert!(text.contains("Worst timer IRQ latencies (timerlat), from the trace:"), "{text}");
        assert!(text.contains("#1 CPU 1 activation 444 at 33.020431660: IRQ latency 5.26ms"), "{text}");
        // CPU 1 sat idle with no event all that time, and this machine's idle exit times are unknown: the text
        // says what is known and that the trace does not account for it, and does not call it an idle exit.
        assert!(
            text.contains(
                "5.24ms passed before the timer interrupt entered: the CPU was idle for 5.239 ms, with no other \
                 activity in the trace there: the trace does not account for the delay"
            ),
            "{text}"
        );
        assert!(!text.contains("waking from an idle state"), "{text}");
        assert!(!text.contains("inside the timer callback"), "{text}");
        // A sample whose IRQ latency is far longer than the delay and the way to the callback (seen in the
        // guest: 7.55 ms for 42 us + 6 us) says where the rest went.
        let mut long = t.irq_worst[0].clone();
        long.irq_latency_ns = long.irq_latency_ns + Nanos::from_ms(2);
        let rest = irq_in_callback(&long).expect("the rest");
        assert!(rest.0.abs_diff(2_000_000) <= 10_000, "{rest}");
        assert!(irq_row(&long)[3].contains("of it passed inside the timer callback"), "{:?}", irq_row(&long));
        let row = irq_row(&t.irq_worst[0]);
        assert_eq!(row[..3], ["1", "444", "5.26ms"].map(String::from), "{row:?}");
        assert!(row[3].contains("the CPU was idle"), "{row:?}");
    }

    #[test]
    fn renders_every_part_and_the_missing_ones() {
        let share = |k, c, us| Explanation::new(k, c, Nanos::from_us(us), Some(CpuId(1)));
        let spin = share(CauseKind::BlockingTask, Culprit::task(TaskRef::new("spin", 60, Some(2))), 472);
        let mut headline = spin.clone().share_of(Nanos::from_us(552));
        headline.hint = Some(Hint { remedy: "move spin off CPU 1".into(), ..Hint::default() });
        let found = TracedWakeup {
            cpu: CpuId(1),
            tid: 50,
            seq: 9,
            expected_ns: Nanos(12_000_500_000),
            sample_latency_ns: Nanos(551_000),
            matched: SampleMatch::Wakeup,
            task: Some(TaskRef::new("t", 50, Some(4))),
            trace_latency_ns: Nanos(552_000),
            woken_ns: Nanos(12_000_605_000),
            switch_in_ns: Nanos(12_001_150_000),
            shares: vec![
                share(CauseKind::TimerIrqDelay, Culprit::named("local_timer"), 3),
                share(CauseKind::IrqHandler, Culprit::named("local_timer"), 5),
                share(CauseKind::Irq, Culprit::irq(Some(30), "virtio0"), 20),
                spin,
                share(CauseKind::ReturnToUser, Culprit::task(TaskRef::new("t", 50, Some(4))), 53),
            ],
            remainder_ns: -1_000,
            headline: Some(headline),
            ..TracedWakeup::default()
        };
        let missing = TracedWakeup {
            matched: SampleMatch::OutsideTrace { first_ns: Nanos(1), last_ns: Nanos(2) },
            shares: Vec::new(),
            headline: None,
            ..found.clone()
        };
        let t = TimerTrace { worst: vec![found, missing], events: 1234, marks: 2, ..TimerTrace::default() };
        let mut buf = Vec::new();
        write_traced_wakeups(&mut buf, &t).expect("write");
        let s = String::from_utf8(buf).expect("utf8");
        for want in [
            "1234 events, 2 marked",
            "#1 CPU 1 seq 9 at 12.000500000: measured 551us",
            "trace shows 552us",
            "timer IRQ delay 3us   IRQ handler local_timer 5us",
            "interference: virtio0 20us",
            "blocked by:   spin (pid 60, SCHED_FIFO/RR prio 97) 472us",
            "other:        return to user space 53us",
            "remainder -1us",
            "t:50 (prio 95) woke 552 us late on CPU 1; 86% of it (472 us) was spin (pid 60, SCHED_FIFO/RR prio 97)",
            "remedy: move spin off CPU 1",
            "not in the trace: outside the trace's time span (1 to 2 ns)",
        ] {
            assert!(s.contains(want), "missing {want:?} in\n{s}");
        }
    }
}
