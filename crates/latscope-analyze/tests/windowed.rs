//! The windowed analysis (two streamed passes, one window held at a time) against the whole-trace analysis on
//! every real trace in fixtures/ it reads: the same document, field by field (the worst wakeups decomposed the
//! same way with the same indices, the reports, the statistics, the verdicts and their evidence).

use latscope_analyze::analysis::Analysis;
use latscope_analyze::analysis::{analyze, AnalyzeOptions};
use latscope_analyze::funcgraph;
use latscope_analyze::hrtimer::HrtimerReport;
use latscope_analyze::scan::Scan;
use latscope_analyze::verdict::{Verdict, VerdictKind};
use latscope_analyze::wakeup::{TaskFilter, WakeupBreakdown, WakeupSelection};
use latscope_analyze::windowed::{analyze_windowed, analyze_windows, plan, WindowReason};
use latscope_model::{Event, TraceInfo, Warning};
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures")
}

fn windowed(path: &Path, opts: &AnalyzeOptions) -> Analysis {
    let mut stream = |visit: &mut dyn FnMut(&Event)| -> Result<(TraceInfo, Vec<Warning>), String> {
        let s = latscope_decode::visit_file(path, visit).map_err(|e| e.to_string())?;
        Ok((s.info, s.warnings))
    };
    analyze_windowed(&path.display().to_string(), &mut stream, opts, "test".into())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What a result says, as JSON (its sentences are filled later, by the report crate).
fn json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).unwrap_or_default()
}

/// The event traces and latency-tracer reports in fixtures/.
fn event_traces() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let dirs = [
        "dat",
        "events",
        "explain",
        "tracecmd-report",
        "live",
        "systrace",
        "seeds",
        "funcgraph",
        "pasted",
        "hwlat",
        "rtla",
        "latency",
    ];
    for dir in dirs {
        let Ok(rd) = std::fs::read_dir(fixtures().join(dir)) else { continue };
        for f in rd.flatten() {
            let p = f.path();
            if p.is_file() && matches!(p.extension().and_then(|e| e.to_str()), Some("dat" | "txt")) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

#[test]
fn windows_find_and_explain_the_worst_wakeups_as_the_whole_trace_does() {
    compare(&WakeupSelection { task: None, top: 5 });
}

#[test]
fn windows_find_the_worst_ten_and_those_of_one_task_as_the_whole_trace_does() {
    compare(&WakeupSelection { task: None, top: 10 });
    compare(&WakeupSelection { task: Some(TaskFilter::Comm("cyclictest".into())), top: 3 });
}

fn compare(selection: &WakeupSelection) {
    let opts = AnalyzeOptions { selection: selection.clone(), ..Default::default() };
    let mut compared = 0;
    let mut wakeups = 0;
    let (mut sections, mut timers) = (0, 0);
    let mut stats = Counted::default();
    let (mut verdicts, mut verdict_traces) = (0, 0);
    let mut kinds = std::collections::BTreeMap::new();
    let mut wrong = Vec::new();
    for path in event_traces() {
        let Ok(trace) = latscope_decode::decode_file(&path) else { continue };
        let whole = analyze("t", &trace, &opts);
        let w = windowed(&path, &opts);
        assert!(!w.source.warnings.iter().any(|x| x.contains("earlier than the record before")), "{}", path.display());
        assert_eq!(w.source.events, whole.source.events, "{}", path.display());
        assert_eq!(w.source.span, whole.source.span, "{}", path.display());
        compared += 1;
        wakeups += whole.wakeups.len();
        let a: Vec<_> = whole.wakeups.iter().map(json).collect();
        let b: Vec<_> = w.wakeups.iter().map(json).collect();
        sections += whole.irqs_off.cpus.iter().map(|c| c.longest.len()).sum::<usize>()
            + whole.disabled.cpus.iter().map(|c| c.longest.len()).sum::<usize>();
        timers += whole.hrtimers.late.len();
        // One difference is allowed, and only in what held a late timer back: the priority of a task the
        // whole trace shows only through a `sched_switch` outside the window (the timeline gives a task the
        // priority a switch reveals; a window without one says none).
        let mut late_whole = json(&whole.hrtimers.late);
        let late_windows = json(&w.hrtimers.late);
        forget_unrevealed_prios(&mut late_whole, &late_windows);
        stats.count(&whole);
        // The function-graph report as the whole trace's call trees give it (`report` of them), which the streamed
        // report and its second pass for the diff must equal.
        let trees = funcgraph::call_trees(&trace.events);
        let of_trees = (!trees.is_empty()).then(|| funcgraph::report(&trees, opts.selection.top.max(1)));
        stats.count_kernel_windows(&w, whole.source.events + whole.source.stacks);
        // The verdicts, where the whole trace's are all of kinds the windowed path draws.
        if whole.verdicts.iter().all(|v| DRAWN.contains(&v.kind)) {
            verdicts += whole.verdicts.len();
            verdict_traces += 1;
            for v in &whole.verdicts {
                *kinds.entry(format!("{:?}", v.kind)).or_insert(0) += 1;
            }
            let (mut x, y) = (json(&whole.verdicts), json(&w.verdicts));
            forget_unrevealed_prios(&mut x, &y);
            if x != y {
                let kinds =
                    |v: &[Verdict]| v.iter().map(|v| format!("{:?} {}", v.kind, v.magnitude)).collect::<Vec<_>>();
                wrong.push(format!(
                    "{}: verdicts:\n  whole   {:?}\n  windows {:?}\n  whole   {}\n  windows {}",
                    path.display(),
                    kinds(&whole.verdicts),
                    kinds(&w.verdicts),
                    json(&whole.verdicts),
                    json(&w.verdicts)
                ));
            }
        }
        for (what, x, y) in [
            ("latency-tracer report", json(&whole.latency_trace), json(&w.latency_trace)),
            ("tick storms", json(&whole.tick_storms), json(&w.tick_storms)),
            ("PI boosts", json(&whole.pi), json(&w.pi)),
            ("lock contention", json(&whole.locks), json(&w.locks)),
            ("IRQ statistics", json(&whole.irq_stats), json(&w.irq_stats)),
            ("RT throttling", json(&whole.throttling), json(&w.throttling)),
            ("irqs-off report", json(&whole.irqs_off), json(&w.irqs_off)),
            (
                "hrtimer statistics",
                json(&HrtimerReport { late: Vec::new(), ..whole.hrtimers.clone() }),
                json(&HrtimerReport { late: Vec::new(), ..w.hrtimers.clone() }),
            ),
            ("disabled report", json(&whole.disabled), json(&w.disabled)),
            ("timerlat report", json(&whole.timerlat), json(&w.timerlat)),
            ("osnoise report", json(&whole.osnoise), json(&w.osnoise)),
            ("hwlat report", json(&whole.hwlat), json(&w.hwlat)),
            ("late timers", late_whole, late_windows),
            ("function-graph report", json(&whole.funcgraph), json(&w.funcgraph)),
            ("function-graph report of the trees", json(&of_trees), json(&w.funcgraph)),
        ] {
            if x != y {
                wrong.push(format!("{}: {what}:\n  whole   {x}\n  windows {y}", path.display()));
            }
        }
        // The whole document but for how it was analysed (`windowed`) and the name it was given: every field the
        // lists above do not name is equal too.
        let (mut x, mut y) = (json(&whole), json(&w));
        if let Some(o) = y.as_object_mut() {
            o.remove("windowed");
        }
        for v in [&mut x, &mut y] {
            v["source"]["name"] = serde_json::Value::Null;
        }
        forget_unrevealed_prios(&mut x, &y);
        if let Some(at) = first_difference(&x, &y, String::new()) {
            wrong.push(format!("{}: the analyses differ first at {at}", path.display()));
        }
        if a != b {
            let brief = |v: &[WakeupBreakdown]| {
                v.iter().map(|b| format!("{}@{}={}", b.task.pid, b.switch_in, b.latency)).collect::<Vec<_>>().join(" ")
            };
            wrong.push(format!(
                "{}: whole [{}] windows [{}]",
                path.display(),
                brief(&whole.wakeups),
                brief(&w.wakeups)
            ));
        }
    }
    assert!(wrong.is_empty(), "{selection:?}: {} of {compared} traces differ:\n{}", wrong.len(), wrong.join("\n"));
    eprintln!(
        "{selection:?}: {compared} traces, {wakeups} wakeups, {sections} sections, {timers} late timers, {verdicts} \
         verdicts of {verdict_traces} traces \
         {kinds:?}; {stats:?}"
    );
    stats.enough();
    assert_eq!(
        verdict_traces, compared,
        "{selection:?}: traces with verdicts of kinds the windowed path does not draw"
    );
    let slowest_calls = kinds.get("FuncGraphSlowest").copied().unwrap_or(0);
    assert!(slowest_calls >= 20, "{selection:?}: only {slowest_calls} function-graph verdicts compared");
    assert!(verdicts >= 25 && verdict_traces >= 50, "{selection:?}: only {verdicts} verdicts compared");
    // Each kernel tracer's verdict, on every fixture that has one (3 hwlat traces, 4 osnoise, 7 timerlat).
    for (kind, least) in [("Timerlat", 5), ("Osnoise", 3), ("Hwlat", 3)] {
        let n = kinds.get(kind).copied().unwrap_or(0);
        assert!(n >= least, "{selection:?}: only {n} {kind} verdicts compared");
    }
    assert!(compared >= 5 && wakeups >= 10, "{selection:?}: only {compared} traces with {wakeups} wakeups compared");
    assert!(
        sections >= 20 && timers >= 20,
        "{selection:?}: only {sections} sections and {timers} late timers compared"
    );
}

/// The verdict kinds the windowed path draws over the whole trace.
const DRAWN: [VerdictKind; 14] = [
    VerdictKind::LatencyTrace,
    VerdictKind::Timerlat,
    VerdictKind::Osnoise,
    VerdictKind::Hwlat,
    VerdictKind::Reported,
    VerdictKind::TickStorm,
    VerdictKind::IrqsOff,
    VerdictKind::Disabled,
    VerdictKind::HrtimerLate,
    VerdictKind::Wakeup,
    VerdictKind::RtThrottling,
    VerdictKind::FuncGraphSlowest,
    VerdictKind::FuncGraphDiff,
    VerdictKind::LostEvents,
];

/// How much of the whole-trace statistics the comparison covered: traces with each, and their items.
#[derive(Debug, Default)]
struct Counted {
    tick_storms: usize,
    pi_boosts: usize,
    lock_waits: u64,
    irq_sources: usize,
    throttling_gaps: usize,
    latency_traces: usize,
    timerlat_reports: usize,
    timerlat_explained: usize,
    osnoise_reports: usize,
    osnoise_explained: usize,
    hwlat_samples: usize,
    /// Windows planned around a kernel tracer's record that hold only part of their trace.
    kernel_windows_cut: usize,
    funcgraph_reports: usize,
    funcgraph_roots: usize,
    funcgraph_diffs: usize,
}

impl Counted {
    fn count(&mut self, a: &latscope_analyze::analysis::Analysis) {
        self.tick_storms += a.tick_storms.len();
        self.pi_boosts += a.pi.boosts.len();
        self.lock_waits += a.locks.locks.iter().map(|l| l.waits).sum::<u64>();
        self.irq_sources += a.irq_stats.len();
        self.throttling_gaps += a.throttling.as_ref().map_or(0, |t| t.count);
        self.latency_traces += usize::from(a.latency_trace.is_some());
        self.timerlat_reports += usize::from(a.timerlat.is_some());
        self.timerlat_explained +=
            a.timerlat.iter().filter_map(|t| t.worst.as_ref()).map(|w| w.within.len()).sum::<usize>();
        self.osnoise_reports += usize::from(a.osnoise.is_some());
        self.osnoise_explained +=
            a.osnoise.iter().filter_map(|o| o.longest.as_ref()).map(|n| n.within.len()).sum::<usize>();
        self.hwlat_samples += a.hwlat.as_ref().map_or(0, |h| h.samples.len());
        self.funcgraph_reports += usize::from(a.funcgraph.is_some());
        self.funcgraph_roots += a.funcgraph.as_ref().map_or(0, |f| f.roots);
        self.funcgraph_diffs += a.funcgraph.as_ref().map_or(0, |f| usize::from(f.diff.is_some()));
    }

    /// Counts the windows of `w` planned around a kernel tracer's record that do not hold all `records`.
    fn count_kernel_windows(&mut self, w: &latscope_analyze::analysis::Analysis, records: u64) {
        let windows = w.windowed.as_ref().map_or(&[][..], |x| &x.windows[..]);
        self.kernel_windows_cut += windows
            .iter()
            .filter(|w| w.plan.reasons.iter().any(|r| matches!(r, WindowReason::KernelSample(_))))
            .filter(|w| w.first_index > 0 || w.records < records)
            .count();
    }

    /// The fixtures hold each kind but PI boosts (no fixture has `sched_pi_setprio` events; both paths run the
    /// same `PiBoosts`): a comparison of empty lists would prove nothing.
    fn enough(&self) {
        assert!(
            self.tick_storms > 0
                && self.lock_waits > 0
                && self.irq_sources >= 50
                && self.throttling_gaps >= 5
                && self.latency_traces >= 30
                && self.funcgraph_reports >= 20
                && self.funcgraph_roots >= 500,
            "too few of some statistic compared: {self:?}"
        );
        // The kernel tracers' reports: their worst sample and longest single noise explained in a window that
        // holds part of the trace, with the interferences the whole trace finds.
        assert!(
            self.timerlat_reports >= 5
                && self.timerlat_explained >= 10
                && self.osnoise_reports >= 5
                && self.osnoise_explained >= 10
                && self.hwlat_samples >= 30
                && self.kernel_windows_cut >= 4,
            "too few kernel tracer records compared: {self:?}"
        );
    }
}

/// Where `a` and `b` first differ (a JSON path), when they do.
fn first_difference(a: &serde_json::Value, b: &serde_json::Value, at: String) -> Option<String> {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: std::collections::BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            keys.into_iter().find_map(|k| match (x.get(k), y.get(k)) {
                (Some(p), Some(q)) => first_difference(p, q, format!("{at}.{k}")),
                _ => Some(format!("{at}.{k} (in one only)")),
            })
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            x.iter().zip(y).enumerate().find_map(|(i, (p, q))| first_difference(p, q, format!("{at}[{i}]")))
        }
        _ => (a != b).then(|| format!("{at}: {a} against {b}")),
    }
}

/// Removes from `whole` each `culprit.task.prio` that `windows` lacks at the same place.
fn forget_unrevealed_prios(whole: &mut serde_json::Value, windows: &serde_json::Value) {
    use serde_json::Value;
    match (whole, windows) {
        (Value::Object(a), Value::Object(b)) => {
            if a.contains_key("pid") && a.contains_key("comm") && a.contains_key("prio") && !b.contains_key("prio") {
                a.remove("prio");
            }
            for (k, v) in a.iter_mut() {
                if let Some(w) = b.get(k) {
                    forget_unrevealed_prios(v, w);
                }
            }
        }
        (Value::Array(a), Value::Array(b)) => {
            for (x, y) in a.iter_mut().zip(b) {
                forget_unrevealed_prios(x, y);
            }
        }
        _ => {}
    }
}

/// A stream out of time order (the Android systrace fixture has one record earlier than the one before it) is
/// analysed in windows in its order, with a warning that names the first such record and what to do.
#[test]
fn a_stream_out_of_time_order_is_analysed_in_windows_with_a_warning() {
    let path = fixtures().join("systrace/catapult-android_systrace.html");
    let opts = AnalyzeOptions::default();
    let w = windowed(&path, &opts);
    let whole = analyze("t", &latscope_decode::decode_file(&path).expect("decode the systrace"), &opts);
    assert_eq!((w.source.events, w.source.span), (whole.source.events, whole.source.span));
    let warning = w.source.warnings.iter().find(|x| x.contains("earlier than the record before them"));
    let warning = warning.unwrap_or_else(|| panic!("no warning: {:?}", w.source.warnings));
    assert!(warning.contains(": record #") && warning.contains("1 of its records"), "{warning}");
    assert!(warning.contains("--max-memory"), "{warning}");
    assert!(!whole.source.warnings.iter().any(|x| x.contains("earlier than the record before")));
}

/// A trace cut in the middle (a capture killed, a download stopped) is analysed in windows as far as it goes,
/// with the decoder's warning, and finds the worst wakeup of the part it holds as the whole-trace analysis of
/// that part does.
#[test]
fn a_truncated_trace_is_analysed_in_windows_as_far_as_it_goes() {
    let full = fixtures().join("dat/local-6.18-x86_64-printk-stacks-v6.dat");
    let bytes = std::fs::read(&full).expect("read the fixture");
    let cut = std::env::temp_dir().join(format!("latscope-windowed-cut-{}.dat", std::process::id()));
    std::fs::write(&cut, &bytes[..bytes.len() * 2 / 3]).expect("write the cut trace");
    let opts = AnalyzeOptions::default();
    let w = windowed(&cut, &opts);
    let whole = analyze("t", &latscope_decode::decode_file(&cut).expect("decode the cut trace"), &opts);
    let _ = std::fs::remove_file(&cut);
    assert!(!w.source.warnings.is_empty(), "no warning for the cut trace");
    assert!(w.source.events > 10_000 && w.source.events < 40_769, "{} events", w.source.events);
    assert_eq!(w.source.events, whole.source.events);
    assert!(!w.wakeups.is_empty());
    assert_eq!(json(&w.wakeups[0]), json(&whole.wakeups[0]));
}

/// The windows analysed on four threads beside the reading come back as on the reading thread alone: the
/// same windows, in the same order, with the same analyses.
#[test]
fn windows_analysed_in_parallel_are_those_analysed_in_turn() {
    let opts = AnalyzeOptions { selection: WakeupSelection { task: None, top: 10 }, ..Default::default() };
    let mut windows = 0;
    for path in event_traces() {
        let mut stream = |visit: &mut dyn FnMut(&Event)| -> Result<(TraceInfo, Vec<Warning>), String> {
            let s = latscope_decode::visit_file(&path, visit).map_err(|e| e.to_string())?;
            Ok((s.info, s.warnings))
        };
        let mut scan = Scan::new(&opts.selection);
        let Ok((info, _)) = stream(&mut |e| scan.step(e)) else { continue };
        let plans = plan(&scan.finish());
        let one = analyze_windows("t", &info, &opts, plans.clone(), &mut stream, 1);
        let four = analyze_windows("t", &info, &opts, plans, &mut stream, 4);
        let (one, four) = (one.expect("stream in turn"), four.expect("stream in parallel"));
        assert_eq!(json(&one), json(&four), "{}", path.display());
        windows += one.len();
    }
    assert!(windows >= 100, "only {windows} windows compared");
    eprintln!("{windows} windows, the same on 1 and 4 threads");
}

/// Function-graph traces made up (tasks on two CPUs interleaved, leaves, returns without a duration or whose
/// entry is missing, calls open at the end, equal time stamps): the windowed path's report (streamed, its diff's
/// two calls taken in the second pass) and its verdicts are those of the whole trace's call trees.
#[test]
fn made_up_function_graph_traces_report_as_their_whole_call_trees() {
    use latscope_model::{CpuId, EventKind, Flags, Nanos};
    let mut seed: u64 = 0x5eed;
    let mut rnd = |n: u64| {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (seed >> 33) % n
    };
    let funcs = ["irq", "tick", "schedule", "lock", "?"];
    let opts = AnalyzeOptions { selection: WakeupSelection { task: None, top: 3 }, ..Default::default() };
    let (mut diffs, mut verdicts) = (0, 0);
    for case in 0..300 {
        let mut events = Vec::new();
        let mut depths = std::collections::HashMap::new();
        let mut ts = 1_000;
        for _ in 0..1 + rnd(150) {
            ts += rnd(3) * 100;
            let (cpu, pid) = (rnd(2) as u32, rnd(3) as i32);
            let d: &mut u32 = depths.entry((cpu, pid)).or_insert(0);
            let func = funcs[rnd(funcs.len() as u64) as usize];
            let duration = |r: u64| (r > 0).then_some(Nanos(r * 50));
            let kind = match rnd(6) {
                0 | 1 => {
                    *d += 1;
                    EventKind::GraphEntry { depth: *d - 1, func: func.into() }
                }
                2 => EventKind::GraphLeaf { depth: *d, func: func.into(), duration: duration(rnd(20)) },
                3 | 4 => {
                    *d = d.saturating_sub(1);
                    EventKind::GraphExit { depth: *d, func: None, duration: duration(rnd(40)) }
                }
                _ => EventKind::GraphExit { depth: *d + 2, func: Some(func.into()), duration: duration(rnd(10)) },
            };
            let comm = "t".into();
            events.push(Event { ts: Nanos(ts), cpu: CpuId(cpu), pid, tgid: None, comm, flags: Flags::default(), kind });
        }
        let mut stream = |visit: &mut dyn FnMut(&Event)| -> Result<(TraceInfo, Vec<Warning>), String> {
            events.iter().for_each(visit);
            Ok((TraceInfo::default(), Vec::new()))
        };
        let w = analyze_windowed("t", &mut stream, &opts, "test".into()).expect("streams");
        let trees = funcgraph::call_trees(&events);
        let of_trees = (!trees.is_empty()).then(|| funcgraph::report(&trees, 3));
        assert_eq!(json(&w.funcgraph), json(&of_trees), "case {case}: {events:?}");
        let trace = latscope_model::DecodedTrace { info: TraceInfo::default(), events, warnings: Vec::new() };
        let whole = analyze("t", &trace, &opts);
        assert_eq!(json(&w.verdicts), json(&whole.verdicts), "case {case}");
        diffs += w.funcgraph.as_ref().map_or(0, |f| usize::from(f.diff.is_some()));
        verdicts += w.verdicts.iter().filter(|v| DRAWN.contains(&v.kind)).count();
    }
    eprintln!("300 made-up traces: {diffs} diffs, {verdicts} verdicts");
    assert!(diffs >= 50 && verdicts >= 300, "only {diffs} diffs and {verdicts} verdicts compared");
}
