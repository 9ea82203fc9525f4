//! What mail and pasting do to a trace, for [`TextDecoder`]: `>` quoting, lines a mail client wrapped, the
//! author's elisions and notes, and the warnings that say so at the end of input.

use super::super::graph::{cut_graph_call, parse_graph_body, parse_graph_line, GraphBody};
use super::super::latency::{header_line, switch_record};
use super::super::line::parse_prefix;
use super::TextDecoder;
use crate::Warning;
use latscope_model::Event;

impl TextDecoder {
    /// The line without the mail quoting of a quoted trace (`> `, `> > `); `None` for a line to skip.
    ///
    /// The quote depth is taken from the first quoted line that is a trace line once unquoted (a
    /// `# tracer:` line, a latency header, an event); from then on that quoting is removed from every
    /// line, and unquoted lines in between (the replier's own words) are counted and skipped.
    pub(super) fn unquote<'a>(&mut self, line: &'a str) -> Option<&'a str> {
        let (depth, rest) = quote_depth(line);
        match self.quote {
            Some(q) if depth >= q => Some(strip_quotes(line, q)),
            Some(_) if line.trim_ascii().is_empty() => Some(""),
            Some(_) => {
                self.unquoted += 1;
                None
            }
            None if depth > 0 && !self.recognised() && self.is_trace_line(rest) => {
                self.quote = Some(depth);
                Some(rest)
            }
            None => Some(line),
        }
    }

    fn is_trace_line(&self, l: &str) -> bool {
        let t = l.trim_ascii();
        t.starts_with("# tracer:")
            || t.strip_prefix('#').is_some_and(|h| header_line(h, &mut None, &mut None) && !h.trim().is_empty())
            || parse_prefix(l, self.fifth).is_some()
    }
}

/// How many `>` quote marks start `line`, and the line after them (and the one space after each).
pub(super) fn quote_depth(line: &str) -> (usize, &str) {
    let mut rest = line;
    let mut depth = 0;
    while let Some(r) = rest.strip_prefix('>') {
        depth += 1;
        rest = r.strip_prefix(' ').unwrap_or(r);
    }
    (depth, rest)
}

pub(super) fn strip_quotes(line: &str, n: usize) -> &str {
    let mut rest = line;
    for _ in 0..n {
        match rest.strip_prefix('>') {
            Some(r) => rest = r.strip_prefix(' ').unwrap_or(r),
            None => break,
        }
    }
    rest
}

/// A mark where lines were left out: `...`, `[...]`, `[ ... ]`, `<snip>`, `[omitted]`, `8182 x the above two line`.
pub(super) fn is_elision(t: &str) -> bool {
    let b = t.as_bytes();
    if b.len() >= 3 && b.iter().all(|&c| c == b'.') {
        return true;
    }
    let inner = t.trim_matches(|c: char| c == '[' || c == ']' || c == '<' || c == '>' || c == ' ');
    if t.starts_with(['[', '<'])
        && (inner.chars().all(|c| c == '.')
            || inner.starts_with("snip")
            || inner.starts_with("omitted")
            // `[ this repeats hundreds of times ]` (LKML, 2004).
            || (t.starts_with('[') && t.ends_with(']') && inner.contains(" repeats ")))
    {
        return true;
    }
    // `8182 x the above two line(s)`, `(repeats 100 times)`-style counts of left-out lines.
    let mut w = t.split_whitespace();
    matches!((w.next(), w.next()), (Some(n), Some("x" | "times")) if n.bytes().all(|c| c.is_ascii_digit()))
        && t.contains("above")
}

/// A line and the words its author wrote after it: from a left arrow on (`… mode=ABS <========= prepare to
/// sleep`, `… next_prio=19 <==== try to wake up cyclictest process`, `… <-- here`), or from a `# ` after an
/// event (`… target_cpu=008 # Task has woken on a throttled hierarchy`). The mark stands after a space and
/// after something else on the line; function_graph's own `<========== |` (the end of an interrupt) and
/// `# 1837.709 us |` (a delay marker), and the function tracer's `<-parent`, are not annotations.
pub(super) fn split_annotation(line: &str) -> Option<(&str, &str)> {
    let b = line.as_bytes();
    for i in memchr::memchr2_iter(b'<', b'#', b) {
        if i == 0 || !b[i - 1].is_ascii_whitespace() {
            continue;
        }
        let (x, y) = (b.get(i + 1).copied(), b.get(i + 2).copied());
        let code = line[..i].trim_ascii_end();
        let note = line[i..].trim_ascii_end();
        let mark = if b[i] == b'<' {
            x == y && matches!(x, Some(b'=' | b'-'))
        } else {
            // `# words` after an event's body (`event: fields # words`), never inside function_graph columns.
            x == Some(b' ') && code.contains(": ") && !code.ends_with(':') && !note.contains('|')
        };
        let words = note.trim_start_matches(['<', '=', '-', '#']).trim_ascii_start();
        if !mark || code.is_empty() || words.starts_with('|') {
            continue;
        }
        return Some((code, note));
    }
    None
}

/// A trace-cmd `funcgraph_entry:`/`funcgraph_exit:` body: `Some(true)` when its call column is there,
/// `Some(false)` when the record stops before it (`funcgraph_entry:      #`: a mail client wrapped the rest),
/// `None` for any other event.
pub(super) fn graph_record(body: &str) -> Option<bool> {
    let t = body.trim_ascii_start();
    let rest = t.strip_prefix("funcgraph_entry:").or_else(|| t.strip_prefix("funcgraph_exit:"))?;
    Some(parse_graph_body(rest).is_some())
}

/// Whether `next`, the line after a function_graph line `cut` short inside its call, is the rest of that call
/// (`[cppc_cpufreq]() {` after `|  cppc_cpufreq_get_rate`): no trace line or comment of its own, no column of
/// its own, and `joined` (the two as one line) the entry or the call of the function named on the cut line. A
/// name broken in its middle (`cppc_cpufreq_get_r` / `ate() {`) is not completed: the call would be another.
pub(super) fn completes_graph_line(cut: &str, next: &str, joined: &str) -> bool {
    let t = next.trim_ascii();
    let Some(name) = cut_graph_call(cut) else { return false };
    !t.starts_with('#')
        && !t.contains('|')
        && parse_graph_line(next).is_none()
        && parse_graph_line(joined).is_some_and(
            |g| matches!(g.body, GraphBody::Entry { func, .. } | GraphBody::Leaf { func, .. } if func == name),
        )
}

/// A wakeup tracer's record (`11:120:R   + [000]      22:`) that stops after the next task's pid.
pub(super) fn is_cut_record(body: &str) -> bool {
    let t = body.trim_ascii();
    let Some(head) = t.strip_suffix(':') else { return false };
    let Some((before, pid)) = head.rsplit_once(' ') else { return false };
    let before = before.trim_ascii_end();
    !pid.is_empty()
        && pid.bytes().all(|c| c.is_ascii_digit())
        && before.ends_with(']')
        && (before.contains(" + [") || before.contains(" ==> ["))
        && switch_record(t).is_none()
}

/// Text that can be a kernel symbol (`func`, `func.part.0`, `func+0x1c/0x30`).
pub(super) fn is_symbol_text(s: &str) -> bool {
    !s.is_empty() && s.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'+' | b'/' | b'$'))
}

impl TextDecoder {
    /// One more line rejoined to the line before it.
    pub(super) fn count_rejoined(&mut self) {
        if self.rejoined.0 == 0 {
            self.rejoined.1 = self.line_no;
        }
        self.rejoined.0 += 1;
    }

    /// A held line that no next line completed, decoded as it is, at its own line number (a warning about it
    /// names it, not the line after it).
    pub(super) fn decode_cut(&mut self, cut: &str, at: u64, sink: &mut dyn FnMut(Event)) {
        let now = std::mem::replace(&mut self.line_no, at);
        self.decode_line(cut, false, sink);
        self.line_no = now;
    }

    /// The warnings about what a pasted trace's author or mail client did to it, at the end of input.
    pub(super) fn paste_warnings(&mut self) {
        if self.unquoted > 0 {
            self.warnings.push(Warning {
                location: self.name.clone(),
                message: format!(
                    "a mail-quoted trace: the `>` quoting was removed; {} unquoted line(s) between its lines \
                     were taken as the author's text and skipped",
                    self.unquoted
                ),
            });
        }
        if self.untimed.0 > 0 {
            self.warnings.push(Warning {
                location: format!("{}:{}", self.name, self.untimed.1),
                message: format!(
                    "the times are missing: {} event line(s) have their timestamp left out as `...`; they are \
                     decoded in order, each at the time of the event before it (0 when none), so no duration or \
                     latency can be measured from them",
                    self.untimed.0
                ),
            });
        }
        if self.fields_elided.0 > 0 {
            self.warnings.push(Warning {
                location: format!("{}:{}", self.name, self.fields_elided.1),
                message: format!(
                    "{} event line(s) have fields left out by the author (`...`); those fields are missing",
                    self.fields_elided.0
                ),
            });
        }
        if self.rejoined.0 > 0 {
            self.warnings.push(Warning {
                location: format!("{}:{}", self.name, self.rejoined.1),
                message: format!(
                    "{} line(s) broken by a mail client were rejoined to the line they continue (a record cut short, \
                     the rest of it alone on the next line)",
                    self.rejoined.0
                ),
            });
        }
        if self.later_traces.0 > 0 {
            self.warnings.push(Warning {
                location: format!("{}:{}", self.name, self.later_traces.1),
                message: format!(
                    "{} more latency trace(s) follow the first one, from this line on; only the first was decoded \
                     ({} event(s)): save each trace to a file of its own to decode it",
                    self.later_traces.0, self.events
                ),
            });
        }
        if self.commands > 0 {
            self.warnings.push(Warning {
                location: self.name.clone(),
                message: format!("{} shell command line(s) pasted with the trace (`$ …`) were skipped", self.commands),
            });
        }
    }
}
