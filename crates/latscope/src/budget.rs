//! The memory a whole-trace analysis may use (`analyze --max-memory`; by default 30 MiB, or most of the memory
//! available for what needs every event), and what a trace that needs more gets: the analysis in windows, or,
//! for what needs every event, a refusal with the trace's real size and what to do; never the out-of-memory
//! killer.

use crate::error::CliError;
use crate::input::Input;
use latscope_analyze::scan::Scan;
use latscope_analyze::wakeup::WakeupSelection;
use latscope_analyze::windowed::Scanned;
use latscope_decode::{Bounded, DecodedTrace};
use latscope_model::Event;

/// What `analyze` holds per event of a trace it analyses whole: the decoded event and the per-CPU timeline,
/// timer and wakeup records built from it. Measured with scripts/bench-analyze-scale.sh (peak RSS over
/// events: 1,345 MB for 6,054,700 events, 262 MB for 1,062,654), rounded up.
pub const BYTES_PER_EVENT: u64 = 240;

/// Share of the available memory an analysis that needs every event (`--report`, `--perfetto`, `--diff`) may
/// take by default: the rest is the machine's.
const AVAILABLE_SHARE: f64 = 0.8;

/// The memory a whole-trace analysis takes by default before the trace is analysed in windows, which give the
/// same results in bounded memory and, from a few hundred thousand events, in less CPU time (one window analysed
/// per candidate instead of every event through every pass): 30 MiB, 131,072 records (2^17: the held events'
/// vector is then full, not doubled, when the trace turns out larger, 17 MB).
pub const WHOLE_BY_DEFAULT: u64 = 30 << 20;

/// How much memory the analysis may use, and where the figure came from (for the refusal).
#[derive(Clone, Debug)]
pub struct Budget {
    /// Bytes; `None`: no limit known.
    pub bytes: Option<u64>,
    /// `--max-memory 2G`, `80 % of the 9.1 GiB available`.
    pub source: String,
}

impl Budget {
    /// `--max-memory` when given; else [`WHOLE_BY_DEFAULT`] (at most 80 % of `MemAvailable` in /proc/meminfo),
    /// or, when the output needs `every_event`, 80 % of `MemAvailable` (no limit when unreadable).
    pub fn new(max_memory: Option<u64>, every_event: bool) -> Budget {
        if let Some(b) = max_memory {
            return Budget { bytes: Some(b), source: "set with --max-memory".into() };
        }
        let share = available().map(|a| ((a as f64 * AVAILABLE_SHARE) as u64, a));
        match (every_event, share) {
            (true, Some((b, a))) => Budget {
                bytes: Some(b),
                source: format!("80 % of the {} available; raise it with --max-memory SIZE", human(a)),
            },
            (true, None) => Budget { bytes: None, source: "no limit: /proc/meminfo unreadable".into() },
            (false, Some((b, a))) if b < WHOLE_BY_DEFAULT => Budget {
                bytes: Some(b),
                source: format!("80 % of the {} available; raise it with --max-memory SIZE", human(a)),
            },
            (false, _) => Budget {
                bytes: Some(WHOLE_BY_DEFAULT),
                source: "larger traces are analysed in windows by default, with the same results; --max-memory SIZE \
                         analyses them whole"
                    .into(),
            },
        }
    }

    /// The most events a trace analysed whole may have.
    pub fn max_events(&self) -> usize {
        self.bytes.map_or(usize::MAX, |b| usize::try_from(b / BYTES_PER_EVENT).unwrap_or(usize::MAX))
    }
}

/// A trace decoded whole, or too large for the budget.
pub enum Fit {
    /// Decoded whole.
    Whole(Box<DecodedTrace>),
    /// Its records need more memory than the budget allows: why, in words, and the windowed analysis's first
    /// pass, done on the way.
    TooLarge(String, Box<Scanned>),
}

/// Decodes `input` whole when its analysis fits the budget. Else the events held so far are handed to the
/// windowed analysis's first pass ([`Scan`], for the wakeups `selection` asks for) and let go, and the rest of
/// the stream goes to it too: one pass either way.
pub fn fit(input: &Input, budget: &Budget, selection: &WakeupSelection) -> Result<Fit, CliError> {
    let max = budget.max_events();
    let mut held: Vec<Event> = Vec::new();
    let mut scan: Option<Scan> = None;
    let streamed = input
        .stream(&mut |e| match scan.as_mut() {
            Some(s) => s.step(&e),
            None if held.len() < max => held.push(e),
            None => {
                let mut s = Scan::new(selection);
                for h in std::mem::take(&mut held) {
                    s.step(&h);
                }
                s.step(&e);
                scan = Some(s);
            }
        })
        .map_err(|e| CliError(format!("cannot analyse the trace: {e}")))?;
    let Some(scan) = scan else {
        return Ok(Fit::Whole(Box::new(latscope_decode::collected(streamed, held))));
    };
    let scan = scan.finish();
    let reason = too_large(scan.records, budget);
    Ok(Fit::TooLarge(reason, Box::new(Scanned { scan, info: streamed.info, warnings: streamed.warnings })))
}

/// Why a trace of `records` records is not analysed whole.
fn too_large(records: u64, budget: &Budget) -> String {
    format!(
        "its {records} records (events and kernel stacks) need about {} of memory to be analysed whole, more than \
         the {} allowed ({})",
        human(records.saturating_mul(BYTES_PER_EVENT)),
        human(budget.bytes.unwrap_or_default()),
        budget.source,
    )
}

/// What to do with a trace too large for what needs every event of it.
pub fn split_advice(name: &str) -> String {
    format!(
        "analyse a part of it (`trace-cmd split -i {name} -o part.dat -s 10` cuts it into 10 s pieces) or allow \
         more with --max-memory"
    )
}

/// Decodes `input` whole when its analysis fits the budget; else refuses with its size and what to do.
pub fn decode(input: &Input, budget: &Budget) -> Result<DecodedTrace, CliError> {
    let decoded =
        input.decode_bounded(budget.max_events()).map_err(|e| CliError(format!("cannot analyse the trace: {e}")))?;
    let name = input.name();
    match decoded {
        Bounded::Whole(t) => Ok(*t),
        Bounded::TooMany { events } => {
            Err(CliError(format!("cannot analyse {name}: {}; {}", too_large(events, budget), split_advice(&name))))
        }
    }
}

/// Parses a memory size: `512M`, `4G`, `1.5GiB`, `2000MB`, plain bytes (K, M, G, T are powers of 1024).
pub fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let value: f64 = num.parse().map_err(|_| format!("'{s}' is not a size (like 512M, 4G)"))?;
    let scale: u64 = match unit.trim().to_ascii_lowercase().trim_end_matches("ib").trim_end_matches('b') {
        "" => 1,
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        "t" => 1 << 40,
        other => return Err(format!("'{s}': unknown unit '{other}' (use K, M, G or T)")),
    };
    let bytes = value * scale as f64;
    if bytes < 1.0 {
        return Err(format!("'{s}': give a size above zero"));
    }
    Ok(bytes as u64)
}

/// `MemAvailable` in bytes.
fn available() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// `1.2 GiB`, `340.5 MiB`, `234 KiB`.
fn human(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.1} GiB", b as f64 / (1u64 << 30) as f64)
    } else if b >= 1 << 20 {
        format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
    } else {
        format!("{} KiB", b >> 10)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("512M"), Ok(512 << 20));
        assert_eq!(parse_size("4G"), Ok(4 << 30));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("2000mb"), Ok(2000 << 20));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("4 parsecs").expect_err("unit").contains("unknown unit 'parsecs'"));
        assert!(parse_size("lots").expect_err("number").contains("not a size"));
        assert!(parse_size("0").is_err());
    }

    #[test]
    fn the_budget_bounds_the_events() {
        let b = Budget::new(Some(240 * 1000), false);
        assert_eq!(b.max_events(), 1000);
        assert_eq!(b.source, "set with --max-memory");
        assert_eq!(
            (human(240 * 1000), human(3 << 19), human(3 << 29)),
            ("234 KiB".into(), "1.5 MiB".into(), "1.5 GiB".into())
        );
        assert_eq!(Budget { bytes: None, source: String::new() }.max_events(), usize::MAX);
        // By default a trace of more than 2^17 records is analysed in windows (unless memory is short).
        let default = Budget::new(None, false);
        assert!(default.max_events() <= 1 << 17, "{default:?}");
        assert_eq!(Budget { bytes: Some(WHOLE_BY_DEFAULT), source: String::new() }.max_events(), 1 << 17);
        // What needs every event may take most of the memory available.
        assert!(Budget::new(None, true).max_events() >= default.max_events());
    }
}
