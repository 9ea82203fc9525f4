//! rtla's own output — `rtla timerlat top` and `hist` tables and the timerlat auto-analysis, `rtla osnoise
//! top` and `hist`, `rtla hwnoise` — read into an [`RtlaOutput`], also as people paste it: tabs turned into
//! spaces, no-break spaces from a web page, a `> ` mail quote, a share `(0.00` wrapped before its `%)`, the
//! idle line glued to the total.

use super::{file_error, line_error};
use crate::DecodeError;
use latscope_model::{
    CpuId, Nanos, RtlaAnalysis, RtlaBlocking, RtlaCpu, RtlaEntry, RtlaMode, RtlaNoise, RtlaOutput, RtlaPart, RtlaStats,
    RtlaTool,
};

/// Whether `text` looks like rtla output (a timerlat table or auto-analysis, an osnoise or hwnoise table).
pub fn is_rtla(text: &str) -> bool {
    let head: String = text.chars().take(16384).map(|c| if c == '\u{a0}' { ' ' } else { c }).collect();
    let head = without_colors(&head);
    head.contains("rtla timerlat hit stop tracing")
        || head.contains("osnoise hit stop tracing")
        || head.contains("# RTLA timerlat histogram")
        || head.contains("# RTLA osnoise histogram")
        || head.lines().any(|l| noise_header(l.trim_start_matches(['>', ' '])).is_some())
        || head.contains("hit stop tracing, analyzing it ##")
        || (head.contains("Timer Latency") && head.contains("CPU COUNT"))
        || head.lines().any(|l| l.trim_start_matches(['>', ' ']).starts_with("IRQ handler delay:"))
        || head.lines().any(|l| {
            let mut w = l.split_whitespace();
            w.next() == Some("Index") && w.next().is_some_and(|c| c.starts_with("IRQ-") || c.starts_with("Thr-"))
        })
}

/// Reads `text` (the content of `file`). Lines it does not understand are listed in `skipped`.
pub fn parse(file: &str, text: &str) -> Result<RtlaOutput, DecodeError> {
    let lines = normalized(text);
    let mut out = RtlaOutput {
        tool: RtlaTool::Timerlat,
        mode: RtlaMode::AutoAnalysis,
        duration: None,
        cpus: Vec::new(),
        columns: Vec::new(),
        buckets: Vec::new(),
        stopped: false,
        analyses: Vec::new(),
        idle_irq_max: None,
        skipped: Vec::new(),
    };
    let mut top_groups: Vec<String> = Vec::new();
    // The osnoise/hwnoise top header: whether its rows have the IRQ, softirq and thread columns.
    let mut noise_columns: Option<bool> = None;
    let mut summary: Vec<(String, Vec<Option<u64>>)> = Vec::new();
    let mut aa = AaState::default();
    for (no, line) in &lines {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(d) = t.strip_prefix("# Duration:") {
            out.duration = Some(d.trim().to_string());
            out.mode = RtlaMode::Hist;
        } else if t == "# RTLA osnoise histogram" {
            out.tool = RtlaTool::Osnoise;
        } else if t.starts_with('#') && !t.starts_with("##") {
            // `# RTLA timerlat histogram`, `# Time unit is microseconds (us)`, a shell prompt.
        } else if t.contains("Latency (us)") && t.contains('|') {
            let mut parts = t.split('|');
            out.duration = parts.next().map(|d| d.trim().to_string()).filter(|d| !d.is_empty());
            top_groups = parts.map(|g| g.trim().to_string()).collect();
            out.mode = RtlaMode::Top;
        } else if t == "Operating System Noise" || t == "Hardware-related Noise" {
            out.tool = if t.starts_with("Hardware") { RtlaTool::Hwnoise } else { RtlaTool::Osnoise };
            out.mode = RtlaMode::Top;
        } else if let Some(d) = t.strip_prefix("duration:").filter(|d| d.contains("time is in us")) {
            out.duration = d.split('|').next().map(|d| d.trim().to_string()).filter(|d| !d.is_empty());
        } else if let Some(with_sources) = noise_header(t) {
            noise_columns = Some(with_sources);
            out.mode = RtlaMode::Top;
            if out.tool == RtlaTool::Timerlat {
                out.tool = if with_sources { RtlaTool::Osnoise } else { RtlaTool::Hwnoise };
            }
        } else if let Some(with_sources) = noise_columns.filter(|_| t.contains('#')) {
            match noise_row(t, with_sources) {
                Some(c) => out.cpus.push(c),
                None => out.skipped.push((*no, t.to_string())),
            }
        } else if t == "Timer Latency" || t.starts_with("CPU COUNT") {
        } else if let Some(rest) = t.strip_prefix("Index") {
            out.columns = rest.split_whitespace().map(str::to_string).collect();
            out.mode = RtlaMode::Hist;
        } else if !top_groups.is_empty() && t.contains('#') && t.contains('|') && aa.current.is_none() {
            match top_row(t, &top_groups) {
                Some(c) => out.cpus.push(c),
                None => out.skipped.push((*no, t.to_string())),
            }
        } else if !out.columns.is_empty() && aa.current.is_none() && hist_row(t, &mut out, &mut summary) {
        } else if !aa.line(t, &mut out) {
            out.skipped.push((*no, t.to_string()));
        }
    }
    aa.finish(&mut out);
    if out.cpus.is_empty() && out.buckets.is_empty() && out.analyses.is_empty() {
        return Err(file_error(
            file,
            "no rtla table (timerlat or osnoise top or hist, hwnoise) or timerlat auto-analysis found; expected \
             the output of `rtla timerlat top`, `rtla timerlat hist`, `rtla osnoise top`, `rtla osnoise hist` or \
             `rtla hwnoise`",
        ));
    }
    hist_cpus(&mut out, &summary).map_err(|m| line_error(file, lines.last().map_or(1, |l| l.0), m))?;
    Ok(out)
}

/// `text` without the terminal's colour and cursor sequences (`ESC [ … letter`) that rtla's top writes
/// around its headers, also with `-q` and when its output is a file.
fn without_colors(text: &str) -> String {
    if !text.contains('\x1b') {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\x1b' && chars.peek() == Some(&'[') {
            chars.next();
            // Parameters and intermediates, then one final byte in @..~.
            for d in chars.by_ref() {
                if ('@'..='~').contains(&d) && d != '[' {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The lines with their numbers: no-break spaces made spaces, a uniform `>` quote removed, a line
/// wrapped inside a parenthesis joined to its start, the idle line split from a total it was glued to.
fn normalized(text: &str) -> Vec<(usize, String)> {
    let text = without_colors(&text.replace('\u{a0}', " "));
    let quoted = text.lines().filter(|l| !l.trim().is_empty()).all(|l| l.starts_with('>'));
    let mut out: Vec<(usize, String)> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let l = if quoted { l.strip_prefix('>').map(|r| r.strip_prefix(' ').unwrap_or(r)).unwrap_or(l) } else { l };
        let l = l.replace('\t', "    ");
        if let Some(last) = out.last_mut() {
            let open = |s: &str| s.matches('(').count() > s.matches(')').count();
            if open(&last.1) && !l.trim().is_empty() {
                last.1.push_str(l.trim());
                continue;
            }
        }
        const IDLE: &str = "Max timerlat IRQ latency from idle:";
        match l.find(IDLE) {
            Some(at) if at > 0 && !l[..at].trim().is_empty() => {
                out.push((i + 1, l[..at].to_string()));
                out.push((i + 1, l[at..].to_string()));
            }
            _ => out.push((i + 1, l)),
        }
    }
    out
}

/// The osnoise/hwnoise top header (`CPU Period Runtime Noise % CPU Aval Max Noise Max Single HW NMI`,
/// then `IRQ Softirq Thread` for osnoise): whether it has the IRQ, softirq and thread columns.
fn noise_header(t: &str) -> Option<bool> {
    let words: Vec<&str> = t.split_whitespace().collect();
    let base = ["CPU", "Period", "Runtime", "Noise", "%", "CPU", "Aval", "Max", "Noise", "Max", "Single", "HW", "NMI"];
    if !words.starts_with(&base) {
        return None;
    }
    match &words[base.len()..] {
        [] => Some(false),
        ["IRQ", "Softirq", "Thread"] => Some(true),
        _ => None,
    }
}

/// `  0 #59  53100000  304896  99.42580  6978  56  549  0  53111  1590  13` → the CPU's noise row.
fn noise_row(t: &str, with_sources: bool) -> Option<RtlaCpu> {
    let w: Vec<&str> = t.split_whitespace().collect();
    if w.len() != if with_sources { 12 } else { 9 } {
        return None;
    }
    let n = |i: usize| w[i].parse::<u64>().ok();
    let us = |i: usize| n(i).map(Nanos::from_us);
    let noise = RtlaNoise {
        periods: w[1].strip_prefix('#')?.parse().ok()?,
        runtime: us(2)?,
        noise: us(3)?,
        available_pct: w[4].parse().ok().filter(|p: &f64| (0.0..=100.0).contains(p))?,
        max_period_noise: us(5)?,
        max_single: us(6)?,
        hw: n(7)?,
        nmi: n(8)?,
        irq: if with_sources { Some(n(9)?) } else { None },
        softirq: if with_sources { Some(n(10)?) } else { None },
        thread: if with_sources { Some(n(11)?) } else { None },
    };
    Some(RtlaCpu { cpu: CpuId(w[0].parse().ok()?), noise: Some(noise), ..RtlaCpu::default() })
}

/// `  1 #12322     |        0         0         1        15 |       10 …` → the CPU's stats.
fn top_row(t: &str, groups: &[String]) -> Option<RtlaCpu> {
    let mut segs = t.split('|');
    let mut head = segs.next()?.split_whitespace();
    let cpu: u32 = head.next()?.parse().ok()?;
    let count: u64 = head.next()?.strip_prefix('#')?.parse().ok()?;
    let mut c = RtlaCpu { cpu: CpuId(cpu), ..RtlaCpu::default() };
    for (g, seg) in groups.iter().zip(segs) {
        let v: Vec<u64> = seg.split_whitespace().map(|x| x.parse().ok()).collect::<Option<_>>()?;
        let [_cur, min, avg, max] = v[..] else { return None };
        let s = RtlaStats {
            count,
            min: Some(Nanos::from_us(min)),
            avg: Some(Nanos::from_us(avg)),
            max: Some(Nanos::from_us(max)),
            over: 0,
        };
        match context(g) {
            Some(Context::Irq) => c.irq = Some(s),
            Some(Context::Thread) => c.thread = Some(s),
            Some(Context::User) => c.user = Some(s),
            Some(Context::Noise) | None => {}
        }
    }
    Some(c)
}

enum Context {
    Irq,
    Thread,
    User,
    /// osnoise hist's `CPU-N` columns: single noise durations.
    Noise,
}

fn context(name: &str) -> Option<Context> {
    let n = name.to_ascii_lowercase();
    if n.starts_with("irq") {
        Some(Context::Irq)
    } else if n.starts_with("thr") {
        Some(Context::Thread)
    } else if n.starts_with("usr") || n.starts_with("ret user") || n.starts_with("user") {
        Some(Context::User)
    } else if n == "cpu" {
        Some(Context::Noise)
    } else {
        None
    }
}

/// A bucket row or a summary row of the histogram; false when `t` is neither.
fn hist_row(t: &str, out: &mut RtlaOutput, summary: &mut Vec<(String, Vec<Option<u64>>)>) -> bool {
    let mut w = t.split_whitespace();
    let Some(first) = w.next() else { return false };
    let rest: Vec<&str> = w.collect();
    if rest.len() != out.columns.len() {
        return false;
    }
    if let Ok(index) = first.parse::<u64>() {
        let Some(counts) = rest.iter().map(|x| x.parse().ok()).collect::<Option<Vec<u64>>>() else { return false };
        out.buckets.push((index, counts));
        return true;
    }
    let key = first.trim_end_matches(':');
    if !matches!(key, "over" | "count" | "min" | "avg" | "max") {
        return false;
    }
    summary.push((key.to_string(), rest.iter().map(|x| x.parse().ok()).collect()));
    true
}

/// Moves the histogram's summary rows into per-CPU stats.
fn hist_cpus(out: &mut RtlaOutput, summary: &[(String, Vec<Option<u64>>)]) -> Result<(), String> {
    if out.columns.is_empty() {
        return Ok(());
    }
    // A row may hold fewer values than there are columns (a cut or damaged file): the missing are unknown.
    let row = |key: &str, i: usize| summary.iter().find(|r| r.0 == key).and_then(|r| r.1.get(i).copied().flatten());
    let mut cpus: Vec<RtlaCpu> = Vec::new();
    for (i, col) in out.columns.iter().enumerate() {
        let Some((ctx, cpu)) = col.split_once('-') else {
            return Err(format!("histogram column '{col}' is not CTX-CPU"));
        };
        let cpu = CpuId(cpu.parse().map_err(|_| format!("histogram column '{col}': '{cpu}' is not a CPU number"))?);
        let over = row("over", i).unwrap_or(0);
        let count = row("count", i)
            .unwrap_or_else(|| out.buckets.iter().map(|b| b.1.get(i).copied().unwrap_or(0)).sum::<u64>() + over);
        // rtla before 6.10 printed ~0 as the minimum of a column without samples.
        let us = |key| row(key, i).filter(|&v| count > 0 && v != u64::MAX).map(Nanos::from_us);
        let s = RtlaStats { count, min: us("min"), avg: us("avg"), max: us("max"), over };
        let at = match cpus.iter().position(|c| c.cpu == cpu) {
            Some(p) => p,
            None => {
                cpus.push(RtlaCpu { cpu, ..RtlaCpu::default() });
                cpus.len() - 1
            }
        };
        match context(ctx) {
            Some(Context::Irq) => cpus[at].irq = Some(s),
            Some(Context::Thread) => cpus[at].thread = Some(s),
            Some(Context::User) => cpus[at].user = Some(s),
            Some(Context::Noise) => cpus[at].noise_hist = Some(s),
            None => return Err(format!("histogram column '{col}': '{ctx}' is not IRQ, Thr, Usr or CPU")),
        }
    }
    cpus.sort_by_key(|c| c.cpu);
    out.cpus = cpus;
    Ok(())
}

/// `27.49 us (65.52 %)` → the time and the share.
fn part(v: &str) -> Option<RtlaPart> {
    let v = v.trim();
    let (num, rest) = v.split_once("us")?;
    let duration = micros(num.trim())?;
    let share =
        rest.trim().strip_prefix('(').and_then(|r| r.split(['%', ')']).next()).and_then(|p| p.trim().parse().ok());
    Some(RtlaPart { duration, share, entries: Vec::new() })
}

/// `27.49` µs → ns.
fn micros(s: &str) -> Option<Nanos> {
    let v: f64 = s.parse().ok()?;
    (0.0..1e12).contains(&v).then(|| Nanos((v * 1000.0).round() as u64))
}

/// `name:id  1.01 us` (or `name:id` alone) → the entry.
fn entry(t: &str) -> Option<(String, i64, Option<Nanos>)> {
    let (who, dur) = match t.strip_suffix("us") {
        Some(r) => {
            let r = r.trim_end();
            let at = r.rfind(char::is_whitespace)?;
            (r[..at].trim(), Some(micros(r[at..].trim())?))
        }
        None => (t.trim(), None),
    };
    let (name, id) = who.rsplit_once(':')?;
    let id = id.trim().parse().ok()?;
    (!name.trim().is_empty()).then(|| (name.trim().to_string(), id, dur))
}

/// Where entry lines go.
#[derive(Clone, Copy, PartialEq)]
enum Under {
    Nothing,
    Blocking,
    Stack,
    Nmi,
    Irqs,
    Softirqs,
    Threads,
}

#[derive(Default)]
struct AaState {
    current: Option<RtlaAnalysis>,
    under: Option<Under>,
}

impl AaState {
    fn cur(&mut self) -> &mut RtlaAnalysis {
        self.current.get_or_insert_with(RtlaAnalysis::default)
    }

    fn finish(&mut self, out: &mut RtlaOutput) {
        if let Some(a) = self.current.take().filter(|a| {
            a.irq_handler_delay.is_some() || a.irq_latency.is_some() || a.total.is_some() || a.blocking.is_some()
        }) {
            out.analyses.push(a);
        }
        self.under = None;
    }

    /// Reads one auto-analysis line; false when it is not one.
    fn line(&mut self, t: &str, out: &mut RtlaOutput) -> bool {
        let label = |p: &str| t.strip_prefix(p).map(|r| r.trim_start_matches(':').trim());
        if t.starts_with("rtla timerlat hit stop tracing") || t.starts_with("osnoise hit stop tracing") {
            out.stopped = true;
        } else if let Some(rest) = t.strip_prefix("## CPU ") {
            self.finish(out);
            let cpu = rest.split_whitespace().next().and_then(|c| c.parse().ok());
            self.cur().cpu = cpu.map(CpuId);
        } else if let Some(v) = label("Previous IRQ interference") {
            if self.current.as_ref().is_some_and(|a| a.irq_handler_delay.is_some()) {
                self.finish(out);
            }
            self.cur().previous_irq =
                v.strip_prefix("up to").and_then(|r| r.trim().strip_suffix("us")).and_then(|r| micros(r.trim()));
        } else if let Some(v) = label("IRQ handler delay") {
            if self.current.as_ref().is_some_and(|a| a.irq_handler_delay.is_some()) {
                self.finish(out);
            }
            let idle = v.contains("(exit from idle)");
            let v = v.replace("(exit from idle)", "");
            let a = self.cur();
            a.exit_from_idle = idle;
            a.irq_handler_delay = part(&v);
            self.under = Some(Under::Nothing);
        } else if let Some(v) = label("IRQ latency") {
            let total = v.contains("(100%)");
            let a = self.cur();
            if total {
                a.total = part(v).map(|p| p.duration);
                a.irq_stop = true;
                self.finish(out);
            } else {
                a.irq_latency = part(v).map(|p| p.duration);
            }
        } else if let Some(v) = label("Thread latency") {
            self.cur().total = part(v).map(|p| p.duration);
            self.finish(out);
        } else if let Some(v) = label("Timerlat IRQ duration") {
            self.cur().timerlat_irq = part(v);
        } else if t.starts_with("Blocking thread stack") {
            self.under = Some(Under::Stack);
        } else if let Some(v) = label("Blocking thread") {
            let p = part(v);
            self.cur().blocking = Some(RtlaBlocking { part: p, ..RtlaBlocking::default() });
            self.under = Some(Under::Blocking);
        } else if let Some(f) = t.strip_prefix("->") {
            if matches!(self.under, Some(Under::Stack | Under::Blocking)) {
                self.cur().blocking.get_or_insert_with(RtlaBlocking::default).stack.push(f.trim().to_string());
            } else {
                return false;
            }
        } else if let Some((under, v)) = [
            ("NMI interference", Under::Nmi),
            ("IRQ interference", Under::Irqs),
            ("Softirq interference", Under::Softirqs),
            ("Thread interference", Under::Threads),
        ]
        .iter()
        .find_map(|(p, u)| label(p).map(|v| (*u, v)))
        {
            let p = part(v);
            let a = self.cur();
            match under {
                Under::Nmi => a.nmi = p,
                Under::Irqs => a.irqs = p,
                Under::Softirqs => a.softirqs = p,
                _ => a.threads = p,
            }
            self.under = Some(under);
        } else if let Some(v) = label("Max timerlat IRQ latency from idle") {
            self.finish(out);
            let (us, cpu) = v.split_once("us in cpu").unwrap_or((v, ""));
            if let (Some(ns), Ok(cpu)) = (micros(us.trim()), cpu.trim().parse()) {
                out.idle_irq_max = Some((ns, CpuId(cpu)));
            }
        } else if t.chars().all(|c| c == '-') && t.len() > 10 {
            self.under = None;
        } else if t.starts_with("The system has exit from idle latency")
            || t.starts_with("Saving trace to")
            || t.starts_with("Printing CPU tasks")
        {
        } else if let (Some(under), Some((name, id, dur))) = (self.under, entry(t)) {
            let a = self.cur();
            let target = match under {
                Under::Blocking => {
                    let b = a.blocking.get_or_insert_with(RtlaBlocking::default);
                    if b.comm.is_empty() {
                        b.comm = name;
                        b.pid = id as i32;
                        return true;
                    }
                    return false;
                }
                Under::Nmi => &mut a.nmi,
                Under::Irqs => &mut a.irqs,
                Under::Softirqs => &mut a.softirqs,
                Under::Threads => &mut a.threads,
                Under::Nothing | Under::Stack => return false,
            };
            let Some(duration) = dur else { return false };
            target.get_or_insert_with(RtlaPart::default).entries.push(RtlaEntry { name, id, duration });
        } else {
            return false;
        }
        true
    }
}
