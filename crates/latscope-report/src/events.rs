//! One decoded [`Event`] per line, as ftrace text or as a JSON object: what `latscope decode` prints.

use latscope_model::{Event, EventKind, Flags, Nanos};
use std::fmt::Write as _;
use std::io::{self, Write};

/// `seconds.nanoseconds`.
pub fn format_ts(ts: Nanos) -> String {
    format!("{}.{:09}", ts.0 / 1_000_000_000, ts.0 % 1_000_000_000)
}

/// The flags in ftrace's alphabet (`dNh1.`): irqs-off, need-resched, context, preempt depth, migrate-disable;
/// PREEMPT_RT's 7 columns (`dN.h512`) when the preempt-lazy depth is known.
/// `-` when the format had no flags column.
pub fn format_flags(f: Flags) -> String {
    if !f.has(Flags::KNOWN) {
        return "-".into();
    }
    let mut s = String::with_capacity(6);
    s.push(match (f.has(Flags::IRQS_OFF), f.has(Flags::BH_OFF), f.has(Flags::IRQS_NOSUPPORT)) {
        (true, true, _) => 'D',
        (true, false, _) => 'd',
        (false, true, _) => 'b',
        (false, false, true) => 'X',
        _ => '.',
    });
    let nr = f.has(Flags::NEED_RESCHED);
    let lazy = f.has(Flags::NEED_RESCHED_LAZY);
    let pr = f.has(Flags::PREEMPT_RESCHED);
    if f.preempt_lazy_depth.is_some() {
        // PREEMPT_RT's 7 columns: need-resched and need-resched-lazy apart.
        s.push(match (nr, pr) {
            (true, true) => 'N',
            (true, false) => 'n',
            (false, true) => 'p',
            _ => '.',
        });
        s.push(if lazy { 'L' } else { '.' });
    } else {
        s.push(match (nr, lazy, pr) {
            (true, true, true) => 'B',
            (true, false, true) => 'N',
            (false, true, true) => 'L',
            (true, true, false) => 'b',
            (true, false, false) => 'n',
            (false, false, true) => 'p',
            (false, true, false) => 'l',
            _ => '.',
        });
    }
    s.push(match (f.in_nmi(), f.in_hardirq(), f.in_softirq()) {
        (true, true, _) => 'Z',
        (true, false, _) => 'z',
        (false, true, true) => 'H',
        (false, true, false) => 'h',
        (false, false, true) => 's',
        _ => '.',
    });
    for d in [f.preempt_depth, f.preempt_lazy_depth, f.migrate_disable] {
        match d {
            Some(0) => s.push('.'),
            Some(v) => {
                let _ = write!(s, "{:x}", v.min(15));
            }
            None => {}
        }
    }
    s
}

/// The event's fields as `key=value` pairs (every field of the typed variant, in declaration order).
pub fn format_fields(kind: &EventKind) -> String {
    let mut s = String::new();
    if let EventKind::Other { fields, .. } = kind {
        for f in fields {
            if !s.is_empty() {
                s.push(' ');
            }
            let _ = match &f.value {
                latscope_model::FieldValue::Int(v) => write!(s, "{}={v}", f.name),
                latscope_model::FieldValue::Str(v) => write!(s, "{}={v}", f.name),
            };
        }
        return s;
    }
    if let Ok(serde_json::Value::Object(map)) = serde_json::to_value(kind) {
        for (k, v) in map.iter().filter(|(k, _)| k.as_str() != "event") {
            if !s.is_empty() {
                s.push(' ');
            }
            match v {
                serde_json::Value::String(t) => {
                    let _ = write!(s, "{k}={t}");
                }
                serde_json::Value::Array(a) => {
                    let items: Vec<String> =
                        a.iter().map(|x| x.as_str().map_or_else(|| x.to_string(), str::to_string)).collect();
                    let _ = write!(s, "{k}=[{}]", items.join(", "));
                }
                serde_json::Value::Number(n) if matches!(k.as_str(), "hrtimer" | "timer" | "work") => {
                    let _ = write!(s, "{k}=0x{:x}", n.as_u64().unwrap_or(0));
                }
                other => {
                    let _ = write!(s, "{k}={other}");
                }
            }
        }
    }
    s
}

/// One event as ftrace text (see [`crate::ftrace_text`]): what `latscope decode` prints and reads back.
pub fn write_text<W: Write>(out: W, e: &Event) -> io::Result<()> {
    crate::ftrace_text::write_ftrace(out, e)
}

/// One JSON object on one line (the [`Event`] serialisation: `ts` in ns, `kind.event` names the event).
pub fn write_json_line<W: Write>(mut out: W, e: &Event) -> io::Result<()> {
    serde_json::to_writer(&mut out, e).map_err(io::Error::other)?;
    out.write_all(b"\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::TaskName;
    use latscope_model::{CpuId, Text};

    fn ev(kind: EventKind, flags: Flags) -> Event {
        Event {
            ts: Nanos(1_500_000_001),
            cpu: CpuId(3),
            pid: 12,
            tgid: None,
            comm: TaskName::from("bash"),
            flags,
            kind,
        }
    }

    #[test]
    fn text_lines() {
        let mut f = Flags::with(Flags::IRQS_OFF | Flags::HARDIRQ | Flags::NEED_RESCHED | Flags::PREEMPT_RESCHED);
        f.preempt_depth = Some(1);
        f.migrate_disable = Some(0);
        let e = ev(EventKind::IrqHandlerEntry { irq: 3, name: Text::from("arch_timer") }, f);
        let mut out = Vec::new();
        write_text(&mut out, &e).expect("write");
        assert_eq!(
            String::from_utf8_lossy(&out),
            "            bash-12      [003] dNh1.     1.500000001: irq_handler_entry: irq=3 name=arch_timer\n"
        );
        let e = ev(EventKind::Stack { frames: vec![Text::from("a"), Text::from("b")].into() }, Flags::default());
        let mut out = Vec::new();
        write_text(&mut out, &e).expect("write");
        assert!(String::from_utf8_lossy(&out).ends_with("[003]     1.500000001: <stack trace>\n => a\n => b\n"));
    }

    #[test]
    fn json_lines_round_trip() {
        let e = ev(EventKind::Lost { count: Some(7) }, Flags::default());
        let mut out = Vec::new();
        write_json_line(&mut out, &e).expect("write");
        let back: Event = serde_json::from_slice(&out).expect("parse");
        assert_eq!(back, e);
        assert!(out.ends_with(b"\n") && !out[..out.len() - 1].contains(&b'\n'));
    }
}
