//! The verdict sentences of an [`Analysis`]: one per finding worth a sentence, with its evidence lines,
//! ordered latency-tracer result first, then by size.

use crate::analysis::{human, section_hints, section_where, Analysis, EvidenceLine, Verdict, VerdictKind};
use crate::component::ComponentKind;
use crate::funcgraph::{DiffKind, TreeDiff};
use crate::hints;
use crate::symbol;
use crate::timeline::IrqsOffSource;
use latscope_model::{Event, Nanos};

/// Irqs-off sections shorter than this get no sentence of their own (they stay in the statistics).
pub const MIN_IRQS_OFF: Nanos = Nanos::from_us(100);
/// Timer lateness below this gets no sentence.
pub const MIN_LATENESS: Nanos = Nanos::from_us(100);

fn lines(events: &[Event], idx: impl IntoIterator<Item = usize>) -> Vec<EvidenceLine> {
    let mut v: Vec<usize> = idx.into_iter().filter(|i| *i < events.len()).collect();
    v.sort_unstable();
    v.dedup();
    v.into_iter().map(|index| EvidenceLine { index, event: events[index].clone() }).collect()
}

/// All verdicts for `a` (whose parts were computed from `events`).
pub fn verdicts(a: &Analysis, events: &[Event]) -> Vec<Verdict> {
    let mut out = Vec::new();
    if let Some(r) = &a.latency_trace {
        let what = match r.tracer.as_str() {
            "irqsoff" => "with irqs off",
            "preemptoff" => "with preemption off",
            "preemptirqsoff" => "with preemption or irqs off",
            _ => "of wakeup latency",
        };
        let us = r.latency.0 / 1000;
        let amount = if r.latency.0 % 1000 == 0 { format!("{us} us") } else { human(r.latency) };
        let mut s = format!("{amount} {what}");
        if let Some(c) = r.cpu {
            s.push_str(&format!(" on CPU {}", c.0));
        }
        if let Some(b) = &r.big {
            if let Some(f) = &b.func {
                s.push_str(&format!(" in {}", symbol::bare(f)));
                if let Some(p) = &b.parent {
                    s.push_str(&format!(" called from {}", symbol::bare(p)));
                }
            }
        } else if let Some(st) = &r.started_at {
            s.push_str(&format!(" from {st} to {}", r.ended_at.as_deref().unwrap_or("?")));
        }
        if !r.chain.is_empty() {
            let chain: Vec<&str> = r.chain.iter().take(5).map(String::as_str).collect();
            s.push_str(&format!(", reached from {}", chain.join(" ← ")));
        }
        if let Some((comm, pid)) = &r.task {
            s.push_str(&format!(" (task {comm}:{pid})"));
        }
        s.push('.');
        if let Some(b) = &r.big {
            s.push_str(&format!(
                " The entry with the big delay marker '{}' is `{}`, followed by {} without a trace entry.",
                b.marker,
                b.what,
                human(b.delay)
            ));
        }
        let mut idx: Vec<usize> = r.big.iter().flat_map(|b| [b.index, b.index + 1]).collect();
        idx.extend(events.iter().rposition(|e| matches!(e.kind, latscope_model::EventKind::Stack { .. })));
        out.push(Verdict {
            kind: VerdictKind::LatencyTrace,
            magnitude: r.latency,
            sentence: s,
            hints: r.hints.clone(),
            evidence: lines(events, idx),
        });
    }
    let mut sized = Vec::new();
    if let Some(f) = a.irqs_off.longest() {
        let s = &f.section;
        let exact = matches!(s.source, IrqsOffSource::Preemptirq { .. });
        // Sections from the flags column are lower bounds from sparse events: details only, no verdict.
        if s.duration() >= MIN_IRQS_OFF && exact {
            let mut text = format!("irqs off {} on CPU {}", human(s.duration()), s.cpu.0);
            match section_where(&s.source) {
                Some((from, to, parent)) => text.push_str(&format!(" from {from} to {to} (parent {parent})")),
                None => text.push_str(" (from the flags column: a lower bound)"),
            }
            text.push_str(&format!(" in {}:{}", s.comm, s.pid));
            let mut idx = vec![s.start_index, s.end_index];
            if let Some(d) = &f.delayed {
                let late = d.timers.iter().filter_map(|t| t.lateness).max();
                let printed = d.printed.iter().filter_map(|p| p.lateness).max();
                text.push_str(&format!("; the {} interrupt that ran right after it", d.name));
                match late.or(printed) {
                    Some(l) => text.push_str(&format!(" delivered the hrtimer {} late", human(l))),
                    None => text.push_str(&format!(" entered {} after the section ended", human(d.entry - s.end))),
                }
                let overruns: Vec<u64> = d.printed.iter().filter_map(|p| p.overruns).collect();
                if let Some(o) = overruns.iter().max() {
                    text.push_str(&format!(" (the traced code itself reported \"{o} overruns\")"));
                }
                idx.extend(d.entry_index);
                idx.extend(d.exit_index);
                idx.extend(d.printed.iter().map(|p| p.index));
                idx.extend(d.timers.iter().flat_map(|t| [Some(t.index), t.start_index]).flatten());
            }
            text.push('.');
            sized.push(Verdict {
                kind: VerdictKind::IrqsOff,
                magnitude: s.duration(),
                sentence: text,
                hints: section_hints(&s.source),
                evidence: lines(events, idx),
            });
        }
    }
    if let Some(l) = a.hrtimers.late.first() {
        let lateness = l.expiry.lateness.unwrap_or_default();
        let covered = a.wakeups.iter().any(|w| w.switch_in >= l.expiry.ts && w.start <= l.expiry.ts);
        if lateness >= MIN_LATENESS && !covered {
            let mut text =
                format!("hrtimer {} on CPU {} expired {} late", l.expiry.function, l.expiry.cpu.0, human(lateness));
            if let Some(c) = l.before.first() {
                let doing = match c.kind {
                    ComponentKind::Idle => "idle".to_string(),
                    ComponentKind::IrqsOff => format!("running with irqs off at {}", c.name),
                    ComponentKind::BlockingTask => format!("running {} (pid {})", c.name, c.pid.unwrap_or(-1)),
                    k => format!("in {} {}", k.as_str().replace('_', " "), c.name),
                };
                text.push_str(&format!(
                    "; before the {} entered, the CPU was {doing} for {}",
                    l.irq_name.as_deref().unwrap_or("interrupt"),
                    human(c.duration)
                ));
            }
            text.push('.');
            let mut h = Vec::new();
            match l.before.first().map(|c| c.kind) {
                Some(ComponentKind::Idle) => h.push(hints::idle_exit()),
                Some(ComponentKind::Nmi) => h.push(hints::nmi()),
                // A task ran with interrupts on and no other interrupt came first: nothing in the kernel held
                // the timer interrupt back.
                Some(ComponentKind::BlockingTask) => h.push(hints::hypervisor()),
                _ => {}
            }
            let idx = [Some(l.expiry.index), l.expiry.start_index].into_iter().flatten();
            sized.push(Verdict {
                kind: VerdictKind::HrtimerLate,
                magnitude: lateness,
                sentence: text,
                hints: h,
                evidence: lines(events, idx),
            });
        }
    }
    if let Some(w) = a.wakeups.first() {
        let mut h = Vec::new();
        if w.components.iter().max_by_key(|c| c.duration).is_some_and(|c| c.kind == ComponentKind::Idle) {
            h.push(hints::idle_exit());
        }
        sized.push(Verdict {
            kind: VerdictKind::Wakeup,
            magnitude: w.latency,
            sentence: w.explanation.clone(),
            hints: h,
            evidence: lines(events, w.evidence.iter().copied()),
        });
    }
    if let Some(t) = &a.throttling {
        if let Some(g) = t.gaps.first() {
            let every = t.interval.map(|i| format!(" about every {}", human(i))).unwrap_or_default();
            let instead = g.ran_instead.first().map(|c| format!("; {} ran instead", c.name)).unwrap_or_default();
            let share = if t.over.0 > 0 { t.total.0 as f64 * 100.0 / t.over.0 as f64 } else { 0.0 };
            let text = format!(
                "RT throttling: {}:{} (SCHED_FIFO/RR prio {}) was kept off CPU {} {} time(s){every}, {} in total \
                 ({share:.1}% of the {} they spread over; median gap {}, longest {}), although it was runnable and \
                 no other real-time task ran there{instead}: the kernel's RT bandwidth limit \
                 (kernel.sched_rt_runtime_us of kernel.sched_rt_period_us, 5% for normal tasks by default) \
                 throttled it.",
                g.task.comm,
                g.task.pid,
                99 - g.task.prio,
                g.cpu.0,
                t.count,
                human(t.total),
                human(t.over),
                human(t.median),
                human(t.max)
            );
            sized.push(Verdict {
                kind: VerdictKind::RtThrottling,
                magnitude: t.max,
                sentence: text,
                hints: vec![hints::rt_throttling(None, None)],
                evidence: lines(events, g.evidence.iter().copied()),
            });
        }
    }
    if let Some(f) = &a.funcgraph {
        if let Some(d) = &f.diff {
            sized.extend(diff_verdict(d, "slowest vs median call in this trace"));
        }
        if let Some(root) = f.slowest.first() {
            let names: Vec<&str> = f.hot_path.iter().map(|n| &*n.func).collect();
            let (last_self, last_func) =
                f.hot_path.last().map(|n| (n.self_time, n.func.clone())).unwrap_or((root.self_time, root.func.clone()));
            let text = format!(
                "The slowest call, {} on CPU {}, took {}; its time went down {} ({} in {} itself).",
                root.func,
                root.cpu.0,
                human(root.total.unwrap_or_default()),
                names.join(" → "),
                human(last_self.unwrap_or_default()),
                last_func
            );
            sized.push(Verdict {
                kind: VerdictKind::FuncGraphSlowest,
                magnitude: root.total.unwrap_or_default(),
                sentence: text,
                hints: Vec::new(),
                evidence: Vec::new(),
            });
        }
    }
    sized.sort_by_key(|v| std::cmp::Reverse(v.magnitude));
    out.extend(sized);
    let lost: u64 = a.source.lost.values().sum();
    if lost > 0 || !a.source.lost_unknown.is_empty() {
        let per: Vec<String> = a.source.lost.iter().map(|(c, n)| format!("CPU {}: {n}", c.0)).collect();
        out.push(Verdict {
            kind: VerdictKind::LostEvents,
            magnitude: Nanos::ZERO,
            sentence: format!(
                "The ring buffer lost events ({}{}): a cause may be missing from the conclusions above; record with a \
                 larger buffer (buffer_size_kb) or fewer events.",
                per.join(", "),
                if a.source.lost_unknown.is_empty() { "" } else { ", and an unknown number elsewhere" }
            ),
            hints: Vec::new(),
            evidence: Vec::new(),
        });
    }
    out
}

/// The sentence for a function-graph diff, when the abnormal tree is slower.
pub fn diff_verdict(d: &TreeDiff, label: &str) -> Option<Verdict> {
    if d.extra <= 0 {
        return None;
    }
    let top = d.entries.iter().find(|e| e.extra > 0)?;
    let mut text = format!(
        "{} took {} more in the abnormal call ({} vs {}, {label}); {} of it in {}",
        d.root,
        human(Nanos(d.extra as u64)),
        human(d.abnormal.unwrap_or_default()),
        human(d.normal.unwrap_or_default()),
        human(Nanos(top.extra as u64)),
        top.func()
    );
    if top.kind == DiffKind::SelfGrew {
        text.push_str(" itself");
    } else {
        text.push_str(" (called only in the abnormal case)");
    }
    let ancestors: Vec<&str> = top.path.iter().rev().skip(1).take(4).map(|p| &**p).collect();
    if !ancestors.is_empty() {
        text.push_str(&format!(" under {}", ancestors.join(" ← ")));
    }
    text.push('.');
    for h in &d.hints {
        text.push(' ');
        text.push_str(&h.what);
        text.push('.');
    }
    Some(Verdict {
        kind: VerdictKind::FuncGraphDiff,
        magnitude: Nanos(d.extra as u64),
        sentence: text,
        hints: d.hints.clone(),
        evidence: Vec::new(),
    })
}
