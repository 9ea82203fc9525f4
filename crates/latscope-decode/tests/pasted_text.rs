//! Traces as people paste them into mail (#19 items 9-12): `> `-quoted, lines wrapped by the mail client,
//! lines left out by the author and the author's own words in between, and the trace's own delay markers.

use latscope_decode::decode_file;
use latscope_model::{EventKind, Nanos};
use std::path::PathBuf;

fn fixture(rel: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel)
}

const QUOTED: &str = "pasted/irqsoff-6.0-ppc8xx-quoted-wrapped-elided-netdev.txt";

#[test]
fn a_quoted_trace_is_unquoted_and_its_header_read() {
    let t = decode_file(&fixture(QUOTED)).expect("decodes");
    assert_eq!(t.info.tracer.as_deref(), Some("irqsoff"));
    let h = t.info.latency.as_ref().expect("latency header");
    assert_eq!((h.tracer.as_str(), h.latency, h.entries), ("irqsoff", Nanos::from_us(126_337), Some((8207, 8207))));
    assert_eq!(h.task.as_ref().map(|t| (t.comm.as_str(), t.pid)), Some(("CORSurv", 352)));
    assert_eq!(h.started_at.as_deref(), Some("_raw_spin_lock_irqsave"));
    assert_eq!(h.stack.len(), 6, "the quoted `=> frame` lines");
    // The replier's words between the quoted lines are skipped and said so, not decoded as trace lines.
    assert!(t.warnings.iter().all(|w| !w.message.starts_with("not an ftrace line")), "{:?}", t.warnings);
    assert!(t.warnings.iter().any(|w| w.message.contains("6 unquoted line(s)")), "{:?}", t.warnings);
}

#[test]
fn a_parent_wrapped_onto_the_next_line_is_rejoined() {
    let t = decode_file(&fixture(QUOTED)).expect("decodes");
    let calls: Vec<(&str, Option<&str>)> = t
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Function { func, parent } => Some((&**func, parent.as_deref())),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 24);
    assert_eq!(calls[1], ("preempt_count_add", Some("_raw_spin_lock_irqsave")));
    assert_eq!(calls[4], ("_get_random_bytes.part.0", Some("__inet_hash_connect")));
    // The two entries the kernel printed without a parent keep none.
    let orphans: Vec<&str> = calls.iter().filter(|(_, p)| p.is_none()).map(|(f, _)| *f).collect();
    assert_eq!(orphans, ["_raw_spin_lock_irqsave", "_raw_spin_unlock_irqrestore"]);
}

#[test]
fn an_elision_is_recorded_where_it_stands() {
    let t = decode_file(&fixture(QUOTED)).expect("decodes");
    assert_eq!(t.info.elisions.len(), 1, "{:?}", t.info.elisions);
    let x = &t.info.elisions[0];
    assert_eq!(x.text, "8182 x the above two line");
    assert_eq!(x.after_ts, Nanos::from_us(231));
    assert!(x.location.ends_with(":50"), "{}", x.location);
}

#[test]
fn the_trace_keeps_its_own_delay_markers() {
    let t = decode_file(&fixture(QUOTED)).expect("decodes");
    let h = t.info.latency.as_ref().expect("latency header");
    assert!(h.markers.contains(&(Nanos::from_us(231), '+')), "{:?}", h.markers);
    assert!(h.markers.contains(&(Nanos::from_us(13), '+')));
    assert!(!h.markers.iter().any(|(t, _)| *t == Nanos::from_us(4)), "`4us :` has no marker");
}

#[test]
fn the_2_6_12_rt_verbose_format_decodes() {
    let t = decode_file(&fixture("pasted/preemption-2.6.12-rc1-RT-verbose-excerpt-lkml.txt")).expect("decodes");
    let h = t.info.latency.as_ref().expect("latency header");
    assert_eq!((h.tracer.as_str(), h.latency), ("preemption", Nanos::from_us(4104)));
    let calls: Vec<(u64, &str, Option<&str>)> = t
        .events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Function { func, parent } => Some((e.ts.0, &**func, parent.as_deref())),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 8, "{calls:?}");
    assert_eq!(calls[1], (0, "__trace_start_sched_wakeup+0x96/0xc0", Some("try_to_wake_up+0x84/0x140")));
    assert_eq!(calls[3], (976_000, "mask_and_ack_8259A+0xb/0x110", Some("__do_IRQ+0x8b/0x160")));
    assert!(t.events.iter().all(|e| e.comm.as_str() == "kswapd0" && e.pid == 66), "{:?}", t.events);
    // The legend printed without `#` is the header; the `(T6/#4)` record is counted, not a line warning.
    assert!(t.warnings.iter().all(|w| !w.message.starts_with("not an ftrace line")), "{:?}", t.warnings);
}

/// #19 item 13: the 2.6.11-rc4-RT verbose format as mailed in 2005, its `µs` written in Latin-1 into a mail
/// that said UTF-8 (`284 �s`, `281�s :`): the legend without `#` is the header, the function entries and the
/// wakeup/switch records decode with their times, and the tracer's other records are counted, not warned
/// about line by line as "not an ftrace line".
#[test]
fn the_2_6_11_rt_verbose_format_with_a_mangled_micro_sign_decodes() {
    let t = decode_file(&fixture("pasted/preemption-2.6.11-rc4-RT-verbose-mojibake-lkml.txt")).expect("decodes");
    let h = t.info.latency.as_ref().expect("latency header");
    assert_eq!((h.tracer.as_str(), h.latency, h.entries), ("preemption", Nanos::from_us(284), Some((25, 25))));
    assert_eq!(h.task.as_ref().map(|t| (t.comm.as_str(), t.pid)), Some(("ksoftirqd/0", 2)));
    let functions = t.events.iter().filter(|e| matches!(e.kind, EventKind::Function { .. })).count();
    assert_eq!(functions, 19);
    // The `(T3/#n)` records in the latency layout, their `�s` times read as microseconds.
    let records: Vec<(u64, &str, i32)> = t
        .events
        .iter()
        .filter(|e| !matches!(e.kind, EventKind::Function { .. }))
        .map(|e| (e.ts.0, e.comm.as_str(), e.pid))
        .collect();
    assert_eq!(records, [(0, "dpkg", 9299), (281_000, "<...>", 2), (282_000, "<...>", 2)]);
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert!(t.warnings[0].message.starts_with("2 record(s) of the -rt verbose latency format"), "{:?}", t.warnings);
}

/// #19 item 13: a pasted event line whose timestamp (and flags) the author replaced with `...` decodes, says
/// its time is missing, and the `...` the author wrote for the fields before `req_cpu` is not a field value
/// (#19 item 10); the `$ cat …` command pasted above it is skipped, not "not an ftrace line".
#[test]
fn a_line_whose_time_was_left_out_decodes_and_says_the_time_is_missing() {
    let t = decode_file(&fixture("pasted/workqueue-5.18-untimed-elided-lkml.txt")).expect("decodes");
    assert_eq!(t.events.len(), 1, "{:?}", t.events);
    let e = &t.events[0];
    assert_eq!((e.comm.as_str(), e.pid, e.cpu.0, e.ts), ("cat", 317, 1, Nanos::ZERO));
    let EventKind::Other { name, fields, .. } = &e.kind else { panic!("{:?}", e.kind) };
    assert_eq!(&**name, "workqueue_queue_work");
    let fields: Vec<(&str, String)> = fields.iter().map(|f| (&*f.name, format!("{:?}", f.value))).collect();
    assert_eq!(fields.iter().map(|f| f.0).collect::<Vec<_>>(), ["req_cpu", "cpu"], "{fields:?}");
    assert!(fields.iter().all(|(_, v)| !v.contains("...")), "{fields:?}");
    let messages: Vec<&str> = t.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(messages.iter().any(|m| m.starts_with("the times are missing: 1 event line(s)")), "{messages:?}");
    assert!(t.warnings.iter().any(|w| w.location.ends_with(":2") && w.message.contains("timestamp left out")));
    assert!(messages.iter().any(|m| m.contains("fields left out by the author")), "{messages:?}");
    assert!(messages.iter().all(|m| !m.starts_with("not an ftrace line")), "{messages:?}");
}

/// #19 item 10: the words an author wrote after trace lines (seed 001, a blog post's cyclictest worst case:
/// `mode=ABS <========= prepare to sleep, …`) are recorded as notes where they stand, not decoded into the
/// event's fields (the hrtimer's mode read `ABS <========= prepare to sleep, the next expected waking up time
/// is 6389900935569.`).
#[test]
fn an_authors_words_after_a_line_are_a_note_not_a_field() {
    let t = decode_file(&fixture("seeds/001-latency-format-events-cyclictest.txt")).expect("decodes");
    let start = t.events.iter().find(|e| matches!(e.kind, EventKind::HrtimerStart { .. })).expect("hrtimer_start");
    let EventKind::HrtimerStart { mode, expires, .. } = &start.kind else { unreachable!() };
    assert_eq!((&**mode, *expires), ("ABS", Nanos(6_389_900_935_569)));
    let notes: Vec<(&str, &str)> =
        t.info.annotations.iter().map(|a| (a.location.rsplit(':').next().unwrap_or(""), a.text.as_str())).collect();
    assert_eq!(
        notes,
        [
            ("3", "<========= prepare to sleep, the next expected waking up time is 6389900935569."),
            ("5", "<=========== tick interrupt comes."),
            ("7", "<===== timer wakeup handler, current time is 6389900945120."),
            ("14", "<==== try to wake up cyclictest process"),
            ("19", "<==== clock_nanosleep syscall returns."),
        ]
    );
    assert_eq!(t.events.len(), 17);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

/// #19 items 10 and 13: a sequence pasted into a kernel commit message (psi, delayed dequeue, 6.13) with the
/// task and time columns left out (`    [008] d..2.: sched_switch: …`), `...` for the lines and fields left
/// out, the author's `# …` comment lines and `# Splat (…)` words after two events. What is there decodes, in
/// order, on its CPUs with its flags; the words are notes; the missing times are said.
#[test]
fn a_sequence_without_tasks_or_times_decodes_with_its_notes() {
    let t = decode_file(&fixture("pasted/psi-6.13-delayed-dequeue-untimed-annotated-lkml.txt")).expect("decodes");
    let seen: Vec<(u32, String)> = t.events.iter().map(|e| (e.cpu.0, e.kind.name())).collect();
    assert_eq!(
        seen,
        [
            (8, "sched_switch".to_string()),
            (8, "print".to_string()),
            (8, "pick_task_fair".to_string()),
            (15, "psi_flags_change".to_string()),
            (15, "sched_wakeup".to_string()),
            (8, "sched_switch".to_string()),
        ]
    );
    assert!(t.events.iter().all(|e| e.ts == Nanos::ZERO && e.pid == -1 && e.comm.as_str().is_empty()));
    let wakeup = &t.events[4];
    assert!(wakeup.flags.irqs_off() && wakeup.flags.preempt_depth == Some(4), "{:?}", wakeup.flags);
    assert!(
        matches!(&wakeup.kind, EventKind::SchedWakeup { pid: 1831, target_cpu: Some(c), .. } if c.0 == 8),
        "{:?}",
        wakeup.kind
    );
    let notes: Vec<(&str, &str)> =
        t.info.annotations.iter().map(|a| (a.location.rsplit(':').next().unwrap_or(""), a.text.as_str())).collect();
    assert_eq!(notes, [("8", "# Splat (cfs_rq->throttled=1)"), ("9", "# Task has woken on a throttled hierarchy")]);
    assert_eq!(t.info.elisions.len(), 2, "{:?}", t.info.elisions);
    let messages: Vec<&str> = t.warnings.iter().map(|w| w.message.as_str()).collect();
    assert!(messages.iter().any(|m| m.starts_with("the times are missing: 6 event line(s)")), "{messages:?}");
    assert!(messages.iter().all(|m| !m.starts_with("not an ftrace line")), "{messages:?}");
}

const NFS_GUP: &str = "pasted/funcgraph-tracecmd-nfs-gup-mailwrapped-linux-nfs-2024.txt";
const MWIFIEX: &str = "pasted/funcgraph-tracecmd-arm64-mwifiex-abstime-mailwrapped-netdev-2021.txt";

/// (kind, cpu, task, function, depth, duration in ns) of a function_graph event.
type GraphCall = (&'static str, u32, String, String, u32, Option<u64>);

fn graph_calls(t: &latscope_decode::DecodedTrace) -> Vec<GraphCall> {
    t.events
        .iter()
        .filter_map(|e| {
            let who = format!("{}-{}", e.comm, e.pid);
            match &e.kind {
                EventKind::GraphEntry { depth, func } => Some(("entry", e.cpu.0, who, func.to_string(), *depth, None)),
                EventKind::GraphLeaf { depth, func, duration } => {
                    Some(("leaf", e.cpu.0, who, func.to_string(), *depth, duration.map(|d| d.0)))
                }
                EventKind::GraphExit { depth, func, duration } => {
                    let f = func.as_deref().unwrap_or("").to_string();
                    Some(("exit", e.cpu.0, who, f, *depth, duration.map(|d| d.0)))
                }
                _ => None,
            }
        })
        .collect()
}

#[test]
fn trace_cmd_function_graph_records_wrapped_before_their_call_are_rejoined() {
    // Chuck Lever's trace (linux-nfs, 2024-12-18): every `funcgraph_entry:`/`funcgraph_exit:` record broken after
    // the event name, its `[duration] | call` alone on the next line. Before, the records kept no call (the
    // root entry get_user_pages_fast and its child gup_fast_fallback were lost, the two exits unnamed) and the
    // continuation lines decoded as five function_graph lines of their own on CPU 0 of no task: 3 root calls.
    let t = decode_file(&fixture(NFS_GUP)).expect("decodes");
    let task = "mmap-rw-fault-623256".to_string();
    let c = |k: &'static str, f: &str, d: u32, ns: Option<u64>| (k, 16, task.clone(), f.to_string(), d, ns);
    assert_eq!(
        graph_calls(&t),
        vec![
            c("entry", "get_user_pages_fast", 2, None),
            c("entry", "gup_fast_fallback", 3, None),
            c("leaf", "__pte_offset_map", 4, Some(262)),
            c("leaf", "__rcu_read_unlock", 4, Some(142)),
            c("leaf", "__gup_longterm_locked", 4, Some(7824)),
            c("exit", "gup_fast_fallback", 3, Some(8967)),
            c("exit", "get_user_pages_fast", 2, Some(9224)),
            c("entry", "kvfree", 2, None),
        ]
    );
    assert_eq!(t.events.len(), 8, "one event per record, none from the continuation lines alone");
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert!(t.warnings[0].message.starts_with("8 line(s) broken by a mail client were rejoined"), "{:?}", t.warnings);
    assert!(t.warnings[0].location.ends_with(":2"), "the first continuation line: {:?}", t.warnings);
}

#[test]
fn a_wrapped_record_keeps_its_duration_and_the_next_record_is_not_joined_to_it() {
    // Brian Norris's trace (netdev, 2021-09-01): `funcgraph_entry:      #` (the trace's own delay marker) with
    // `6219.500 us |  mwifiex_pm_wakeup_card();` on the next line. That line is also a function_graph line in
    // the no-CPU layout, so before it decoded twice: an empty record on the task's CPU and a leaf on CPU 0 with
    // no task (16 events for 8 calls). Each record is now one leaf with its task, CPU and duration; the next
    // record line, complete in itself, is never joined to the one before.
    let t = decode_file(&fixture(MWIFIEX)).expect("decodes");
    let calls = graph_calls(&t);
    assert_eq!(t.events.len(), 8);
    let leaf = |cpu: u32, who: &str, ns: u64| {
        ("leaf", cpu, who.to_string(), "mwifiex_pm_wakeup_card".to_string(), 0, Some(ns))
    };
    assert_eq!(calls[0], leaf(3, "kworker/u13:0-199", 6_219_500));
    assert_eq!(calls[2], leaf(1, "kworker/u13:3-4057", 6_184_250));
    assert_eq!(calls[7], leaf(4, "kworker/u13:0-199", 6_204_042));
    assert_eq!(t.events[0].ts, Nanos(348_987_306_000));
    assert!(t.warnings.iter().any(|w| w.message.starts_with("8 line(s) broken by a mail client")), "{:?}", t.warnings);
}

const CPPC_IRQ: &str = "pasted/funcgraph-abstime-arm64-cppc-irq-root-mailwrapped-lkml-2023.txt";
const CPPC_MODULE: &str = "pasted/funcgraph-abstime-arm64-cppc-module-calls-mailwrapped-lkml-2023.txt";

#[test]
fn a_function_graph_call_wrapped_inside_its_name_is_rejoined() {
    // Yang Shi's traces (LKML and linux-pm, 2023-04-18; Thunderbird, format=flowed): a module's function is
    // printed `cppc_cpufreq_get_rate [cppc_cpufreq]() {`, and the mail client broke the line after the name,
    // ` [cppc_cpufreq]() {` alone on the next line. Before, both lines were 'not an ftrace line': the root entry
    // of each trace and the leaf cppc_cpufreq_perf_to_khz were lost (5 root calls instead of 1).
    let t = decode_file(&fixture(CPPC_MODULE)).expect("decodes");
    let calls = graph_calls(&t);
    let none = "--1".to_string(); // no task column: no comm, pid -1
    assert_eq!(calls.len(), 27, "one event per call line, none from the continuation lines alone");
    assert_eq!(calls[0], ("entry", 0, none.clone(), "cppc_cpufreq_get_rate".to_string(), 0, None));
    assert_eq!(t.events[0].ts, Nanos(19_177_226_497_000));
    assert_eq!(calls[25], ("leaf", 0, none.clone(), "cppc_cpufreq_perf_to_khz".to_string(), 1, Some(780)));
    let (kind, depth, duration) = (calls[26].0, calls[26].4, calls[26].5);
    assert_eq!((kind, depth, duration), ("exit", 0, Some(23_320)), "the root's return");
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert!(t.warnings[0].message.starts_with("2 line(s) broken by a mail client were rejoined"), "{:?}", t.warnings);
    assert!(t.warnings[0].location.ends_with(":6"), "the first continuation line: {:?}", t.warnings);

    // The other trace of the mail: its root entry wrapped the same way, then an interrupt drawn with arrows.
    let t = decode_file(&fixture(CPPC_IRQ)).expect("decodes");
    let calls = graph_calls(&t);
    assert_eq!(calls[0], ("entry", 0, none, "cppc_cpufreq_get_rate".to_string(), 0, None));
    // `==========>`, `gic_handle_irq();` (49.260 us) and `<==========` all print 13378.411877: a leaf is one
    // record, at its entry's time. The interrupt returned when its handler did, 49.26 us later.
    let irq = |k: fn(&EventKind) -> bool| t.events.iter().filter(|e| k(&e.kind)).map(|e| e.ts).collect::<Vec<_>>();
    assert_eq!(irq(|k| matches!(k, EventKind::VectorEntry { .. })), [Nanos(13_378_411_877_000)]);
    assert_eq!(irq(|k| matches!(k, EventKind::VectorExit { .. })), [Nanos(13_378_411_877_000 + 49_260)]);
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert!(t.warnings[0].message.starts_with("1 line(s) broken by a mail client were rejoined"), "{:?}", t.warnings);
}

#[test]
fn a_cut_function_graph_line_is_not_glued_to_the_next_trace_line() {
    // The same trace with its continuation line `[cppc_cpufreq]() {` left out: the cut line is followed by a
    // whole function_graph line of its own, which is never joined to it. The cut line stays what it is, a
    // line latscope cannot read, said at its line number; the next line decodes as itself.
    let text = std::fs::read_to_string(fixture(CPPC_IRQ)).expect("reads");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[5].starts_with('['), "line 6 is the continuation: {:?}", lines[5]);
    let without: Vec<&str> = lines.iter().enumerate().filter(|(i, _)| *i != 5).map(|(_, l)| *l).collect();
    let t = latscope_decode::decode_bytes("cut.txt", without.join("\n").as_bytes()).expect("decodes");
    let calls = graph_calls(&t);
    assert_eq!(calls[0], ("entry", 0, "--1".to_string(), "cpufreq_cpu_get".to_string(), 1, None));
    assert_eq!(calls.len(), 38, "the 39 calls of the rejoined trace but its root");
    let messages: Vec<(&str, &str)> = t.warnings.iter().map(|w| (w.location.as_str(), w.message.as_str())).collect();
    assert_eq!(messages.len(), 1, "{messages:?}");
    assert_eq!(messages[0].0, "cut.txt:5");
    assert!(messages[0].1.starts_with("not an ftrace line"), "{messages:?}");
}

const VP_MMX: &str = "pasted/preemption-2.6.8.1-zaphod-vp-v1.0.2-lkml.txt";
const RT_PID: &str = "pasted/preemption-2.6.10-rc2-mm1-RT-v1.0.7-pid-column-lkml.txt";
const VP_FULL: &str = "pasted/preemption-2.6.9-rc1-VP-v1.0.2-full-buffer-elided-lkml.txt";

/// (time, comm, pid, function, parent) of the function entries.
fn entries(t: &latscope_decode::DecodedTrace) -> Vec<(u64, String, i32, String, Option<String>)> {
    t.events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::Function { func, parent } => {
                Some((e.ts.0, e.comm.to_string(), e.pid, func.to_string(), parent.as_deref().map(str::to_string)))
            }
            _ => None,
        })
        .collect()
}

/// #19 item 13: the 2004 latency tracer (v1.0.2, voluntary-preempt on 2.6.8.1) as mailed to LKML: its header
/// (`latency: 730 us, entries: 4 (4)`, `| task: events/0/4, uid:0 …`, started/ended at) and its entries
/// (`00000001 0.730ms (+0.730ms): sub_preempt_count (_mmx_memcpy)`) decode. Before: 0 events, 4 warnings.
#[test]
fn the_2004_latency_tracer_v1_0_2_decodes_with_its_header() {
    let t = decode_file(&fixture(VP_MMX)).expect("decodes");
    let h = t.info.latency.as_ref().expect("latency header");
    assert_eq!((h.tracer.as_str(), h.version.as_deref(), h.kernel.as_deref()), ("preemption", Some("1.0.2"), None));
    assert_eq!((h.latency, h.entries), (Nanos::from_us(730), Some((4, 4))));
    let task = h.task.as_ref().expect("task");
    assert_eq!((task.comm.as_str(), task.pid), ("events/0", 4));
    assert_eq!((task.uid, task.nice, task.policy, task.rt_prio), (Some(0), Some(-10), Some(0), Some(0)));
    assert_eq!(h.started_at.as_deref(), Some("kernel_fpu_begin+0x21/0x60"));
    assert_eq!(h.ended_at.as_deref(), Some("_mmx_memcpy+0x131/0x180"));
    let e = |ts: u64, f: &str, p: &str| (ts, "events/0".to_string(), 4, f.to_string(), Some(p.to_string()));
    assert_eq!(
        entries(&t),
        [
            e(0, "kernel_fpu_begin", "_mmx_memcpy"),
            e(730_000, "sub_preempt_count", "_mmx_memcpy"),
            e(730_000, "_mmx_memcpy", "check_preempt_timing"),
            e(730_000, "kernel_fpu_begin", "_mmx_memcpy"),
        ]
    );
    assert_eq!(t.events.len(), 4);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

/// #19 item 13: the 2004 tracer in -RT (v1.0.7 on 2.6.10-rc2-mm1-RT-V0.7.27-10): the header's kernel and
/// `#CPUS:1`, a task name with a space (`IRQ 8/13`), the addresses after started/ended at, the pid column
/// (pid 5, then the woken IRQ 8 thread, 13) and the `(1) ((98))` special-value records, counted once.
#[test]
fn the_2004_rt_tracer_decodes_its_pid_column_and_counts_its_special_records() {
    let t = decode_file(&fixture(RT_PID)).expect("decodes");
    let h = t.info.latency.as_ref().expect("latency header");
    assert_eq!((h.version.as_deref(), h.kernel.as_deref()), (Some("1.0.7"), Some("2.6.10-rc2-mm1-RT-V0.7.27-10")));
    assert_eq!((h.latency, h.entries, t.info.cpus), (Nanos::from_us(63), Some((22, 22)), Some(1)));
    let task = h.task.as_ref().expect("task");
    assert_eq!(
        (task.comm.as_str(), task.pid, task.nice, task.policy, task.rt_prio),
        ("IRQ 8", 13, Some(-5), Some(1), Some(98))
    );
    assert_eq!(h.started_at.as_deref(), Some("try_to_wake_up+0x51/0x170"));
    assert_eq!(h.ended_at.as_deref(), Some("finish_task_switch+0x51/0xb0"));
    let calls = entries(&t);
    // 22 entries, of which 6 are `(a) ((b))` records: 12 function entries of pid 5, then 4 of pid 13.
    assert_eq!(calls.len(), 16);
    assert!(calls[..12].iter().all(|c| (c.1.as_str(), c.2) == ("<...>", 5)), "{calls:?}");
    assert!(calls[12..].iter().all(|c| (c.1.as_str(), c.2) == ("IRQ 8", 13)), "{calls:?}");
    assert_eq!(calls[0].3, "trace_start_sched_wakeup");
    // The longest step: `0.001ms … __do_softirq (do_softirq)`, then `0.062ms … preempt_schedule (_mmx_memcpy)`.
    assert_eq!((calls[7].0, calls[7].3.as_str(), calls[7].4.as_deref()), (1_000, "__do_softirq", Some("do_softirq")));
    assert_eq!(
        (calls[8].0, calls[8].3.as_str(), calls[8].4.as_deref()),
        (62_000, "preempt_schedule", Some("_mmx_memcpy"))
    );
    assert_eq!((calls[15].0, calls[15].3.as_str()), (66_000, "trace_stop_sched_switched"));
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert!(
        t.warnings[0].message.starts_with("6 special-value record(s) of the 2004 latency tracer"),
        "{:?}",
        t.warnings
    );
}

/// #19 item 13: `entries: 4000 (7910)`: the tracer's buffer held the first 4000 of the section's 7910
/// entries; the mail shows 10 of them, then the author's `[ this repeats hundreds of times ]`.
#[test]
fn a_2004_trace_whose_buffer_filled_keeps_both_counts_and_the_authors_elision() {
    let t = decode_file(&fixture(VP_FULL)).expect("decodes");
    let h = t.info.latency.as_ref().expect("latency header");
    assert_eq!((h.latency, h.entries), (Nanos::from_us(2906), Some((4000, 7910))));
    assert_eq!(h.task.as_ref().map(|t| (t.comm.as_str(), t.pid)), Some(("cat", 2091)));
    let calls = entries(&t);
    assert_eq!(calls.len(), 10);
    assert_eq!((calls[0].3.as_str(), calls[0].4.as_deref()), ("touch_preempt_timing", Some("cond_resched")));
    assert_eq!(calls.iter().filter(|c| c.3 == "ct_seq_show" && c.4.as_deref() == Some("seq_read")).count(), 5);
    assert_eq!(calls[9].0, 4_000);
    assert_eq!(t.info.elisions.len(), 1, "{:?}", t.info.elisions);
    let x = &t.info.elisions[0];
    assert_eq!(
        (x.text.as_str(), x.after_events, x.after_ts),
        ("[ this repeats hundreds of times ]", 10, Nanos::from_us(4))
    );
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

/// #19 item 13: a 2004 trace cut short (in an entry's time, or in its header) decodes what precedes the cut,
/// says which line it could not read, and never panics.
#[test]
fn a_2004_trace_cut_short_keeps_the_entries_before_the_cut_and_warns() {
    let bytes = std::fs::read(fixture(RT_PID)).expect("fixture");
    let text = std::str::from_utf8(&bytes).expect("ascii");
    // Line 22: `    5 90000000 0.062ms (+0.000ms): __schedule (preempt_schedule)`, cut after `0.06`.
    let at = text.find("0.062ms (+0.000ms): __schedule").expect("the __schedule entry") + "0.06".len();
    let t = latscope_decode::decode_bytes("cut", &bytes[..at]).expect("decodes");
    let calls = entries(&t);
    assert_eq!(calls.len(), 9, "the 9 function entries before it: {calls:?}");
    assert_eq!(calls[8].3, "preempt_schedule");
    assert_eq!(t.warnings.iter().filter(|w| w.location == "cut:22").count(), 1, "{:?}", t.warnings);
    // Cut in the header, after the latency line: no entry, the header as far as it goes.
    let at = text.find("    -----------------").expect("task box");
    let t = latscope_decode::decode_bytes("cut", &bytes[..at]).expect("a header alone decodes");
    assert!(t.events.is_empty());
    assert_eq!(t.info.latency.map(|h| h.latency), Some(Nanos::from_us(63)));
    for cut in 0..bytes.len() {
        let _ = latscope_decode::decode_bytes("cut", &bytes[..cut]);
    }
}

const V1_0: &str = "pasted/preemption-2.6.8-rc4-O6-v1.0-process-nice-lines-lkml.txt";

/// #19 item 13: the tracer's first version (v1.0, voluntary-preempt 2.6.8-rc4-O6, as Ingo Molnar announced it)
/// printed the task on lines of its own, `process: default.hotplug/1470, uid: 0` and `nice: -10, policy: 0,
/// rt_priority: 0`, and entries without the preempt count column. Before: both lines were "not an ftrace
/// line" and the entries had no task (pid -1).
#[test]
fn the_2004_tracer_v1_0_reads_its_process_and_nice_lines() {
    let t = decode_file(&fixture(V1_0)).expect("decodes");
    let h = t.info.latency.as_ref().expect("latency header");
    assert_eq!((h.tracer.as_str(), h.version.as_deref()), ("preemption", Some("1.0")));
    assert_eq!((h.latency, h.entries), (Nanos::from_us(121), Some((1032, 1032))));
    let task = h.task.as_ref().expect("task");
    assert_eq!((task.comm.as_str(), task.pid), ("default.hotplug", 1470));
    assert_eq!((task.uid, task.nice, task.policy, task.rt_prio), (Some(0), Some(-10), Some(0), Some(0)));
    let calls = entries(&t);
    assert_eq!(calls.len(), 6);
    assert!(calls.iter().all(|c| (c.1.as_str(), c.2) == ("default.hotplug", 1470)), "{calls:?}");
    assert_eq!((calls[3].3.as_str(), calls[3].4.as_deref()), ("set_page_address", Some("flush_all_zero_pkmaps")));
    assert_eq!((calls[5].0, calls[5].3.as_str()), (118_000, "check_preempt_timing"));
    assert_eq!(t.info.elisions.len(), 1, "the author's [...]: {:?}", t.info.elisions);
    assert!(t.warnings.is_empty(), "{:?}", t.warnings);
}

const WRAPPED_LATENCY: &str = "pasted/preemption-2.6.9-rc1-bk12-VP-S0-wrapped-latency-line-lkml.txt";
const TWO_TRACES: &str = "pasted/preemption-2.6.9-rc1-bk12-VP-S0-two-traces-one-mail-lkml.txt";

/// #19 item 13: a `latency:` line the mail client wrapped before its `#CPUS:2]`, and a parent wrapped onto
/// a line of its own (`update_process_times` / `(smp_apic_timer_interrupt)`): both rejoined. Before: the CPU
/// count was lost (the `#CPUS:2]` line was taken for a comment).
#[test]
fn a_2004_latency_line_wrapped_before_its_cpu_count_is_rejoined() {
    let t = decode_file(&fixture(WRAPPED_LATENCY)).expect("decodes");
    let h = t.info.latency.as_ref().expect("latency header");
    assert_eq!((h.latency, h.entries, t.info.cpus), (Nanos::from_us(71_065), Some((4000, 5343)), Some(2)));
    let task = h.task.as_ref().expect("task");
    assert_eq!((task.comm.as_str(), task.pid, task.policy, task.rt_prio), ("latencytest", 4408, Some(1), Some(99)));
    let calls = entries(&t);
    assert_eq!(calls.len(), 60);
    assert_eq!(
        (calls[39].3.as_str(), calls[39].4.as_deref()),
        ("update_process_times", Some("smp_apic_timer_interrupt"))
    );
    assert_eq!((calls[59].0, calls[59].3.as_str()), (37_000, "send_IPI_mask_bitmask"));
    assert_eq!(t.warnings.len(), 1, "{:?}", t.warnings);
    assert!(t.warnings[0].message.starts_with("2 line(s) broken by a mail client"), "{:?}", t.warnings);
}

/// #19 item 13: a mail with one trace after another (Mark Johnson's report lists twelve): the first trace is
/// decoded with its own header; the second one's header and entries are left out and said so, instead of its
/// header lines being "not an ftrace line" and its entries joining the first trace's task and times.
#[test]
fn a_second_trace_in_one_mail_is_left_out_and_said_so() {
    let t = decode_file(&fixture(TWO_TRACES)).expect("decodes");
    let h = t.info.latency.as_ref().expect("latency header");
    assert_eq!((h.latency, h.entries, t.info.cpus), (Nanos::from_us(460), Some((9, 9)), Some(2)));
    assert_eq!(h.task.as_ref().map(|t| (t.comm.as_str(), t.pid)), Some(("modprobe", 2995)));
    let calls = entries(&t);
    assert_eq!(calls.len(), 9);
    assert!(calls.iter().all(|c| (c.1.as_str(), c.2) == ("modprobe", 2995)), "{calls:?}");
    let later: Vec<_> = t.warnings.iter().filter(|w| w.message.contains("more latency trace")).collect();
    assert_eq!(later.len(), 1, "{:?}", t.warnings);
    assert!(later[0].location.ends_with(":34") && later[0].message.starts_with("1 more"), "{later:?}");
    // The second trace's header lines are not reported one by one; the author's words around are.
    assert!(
        t.warnings.iter().all(|w| !w.location.ends_with(":36") && !w.location.ends_with(":38")),
        "{:?}",
        t.warnings
    );
}
