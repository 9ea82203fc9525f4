//! The live per-CPU table shown while a measurement runs (count, cur, min, avg, max, overruns): redrawn in
//! place on a terminal, or one plain line per CPU per refresh when the output is a file or a pipe.
//! It returns text; the caller decides where it goes and whether it is a terminal.

use latscope_model::{Nanos, TimerProgress};

/// Draws successive frames of the table. On a terminal each frame moves the cursor back over the previous
/// one; otherwise frames are plain lines prefixed with the elapsed time.
#[derive(Clone, Debug, Default)]
pub struct LiveTable {
    terminal: bool,
    drawn_lines: usize,
}

const HEADER: &str = "CPU       count        cur        min        avg        max   overruns";

impl LiveTable {
    /// A table for a terminal (`true`: redraw in place) or for a file/pipe (`false`: append lines).
    pub fn new(terminal: bool) -> LiveTable {
        LiveTable { terminal, drawn_lines: 0 }
    }

    /// The text of the next frame, `elapsed` since the start of the run.
    pub fn frame(&mut self, elapsed: Nanos, rows: &[TimerProgress]) -> String {
        let mut out = String::new();
        if self.terminal {
            if self.drawn_lines > 0 {
                // Cursor to the start of the line `drawn_lines` up; each line clears its tail.
                out.push_str(&format!("\x1b[{}F", self.drawn_lines));
            }
            out.push_str(&format!("{HEADER}   {:>8}\x1b[K\n", format!("T+{}", whole(elapsed))));
            for r in rows {
                out.push_str(&row_text(r));
                out.push_str("\x1b[K\n");
            }
            self.drawn_lines = rows.len() + 1;
        } else {
            for r in rows {
                let min = r.min_ns.map_or_else(|| "-".to_string(), |m| Nanos(m).to_string());
                out.push_str(&format!(
                    "T+{} CPU {} count {} cur {} min {min} avg {} max {} overruns {}\n",
                    whole(elapsed),
                    r.cpu,
                    r.count,
                    Nanos(r.cur_ns),
                    Nanos(r.avg_ns.round() as u64),
                    Nanos(r.max_ns),
                    r.overruns
                ));
            }
        }
        out
    }

    /// Text that ends the live display before the final summary (nothing for plain output).
    pub fn finish(&mut self) -> String {
        let was = self.drawn_lines;
        self.drawn_lines = 0;
        if self.terminal && was > 0 {
            "\n".to_string()
        } else {
            String::new()
        }
    }
}

fn whole(t: Nanos) -> String {
    let s = t.0 / 1_000_000_000;
    if s >= 3600 {
        format!("{}h{:02}m{:02}s", s / 3600, s % 3600 / 60, s % 60)
    } else if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{s}s")
    }
}

fn row_text(r: &TimerProgress) -> String {
    let min = r.min_ns.map_or_else(|| "-".to_string(), |m| Nanos(m).to_string());
    format!(
        "{:<3} {:>11} {:>10} {:>10} {:>10} {:>10} {:>10}",
        r.cpu.0,
        r.count,
        Nanos(r.cur_ns).to_string(),
        min,
        Nanos(r.avg_ns.round() as u64).to_string(),
        Nanos(r.max_ns).to_string(),
        r.overruns
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::CpuId;

    fn row(cpu: u32, count: u64) -> TimerProgress {
        TimerProgress {
            cpu: CpuId(cpu),
            count,
            cur_ns: 5_100,
            min_ns: Some(3_000),
            avg_ns: 7_450.4,
            max_ns: 2_100_000,
            overruns: 2,
            above_threshold: 0,
        }
    }

    #[test]
    fn terminal_frames_redraw_in_place() {
        let mut t = LiveTable::new(true);
        let first = t.frame(Nanos::from_secs(1), &[row(0, 1000), row(1, 999)]);
        assert!(!first.contains("\x1b[3F"));
        assert_eq!(first.lines().count(), 3);
        assert!(first.contains("2.1ms") && first.contains("7.45us") && first.contains("T+1s"));
        let second = t.frame(Nanos::from_secs(2), &[row(0, 2000), row(1, 1999)]);
        assert!(second.starts_with("\x1b[3F"), "{second:?}");
        assert_eq!(t.finish(), "\n");
    }

    #[test]
    fn plain_frames_are_one_line_per_cpu() {
        let mut t = LiveTable::new(false);
        let text = t.frame(Nanos::from_secs(75), &[row(1, 75_000)]);
        assert_eq!(text.lines().count(), 1);
        assert!(text.starts_with("T+1m15s"), "{text}");
        assert!(!text.contains('\x1b'));
        assert_eq!(text, "T+1m15s CPU 1 count 75000 cur 5.1us min 3us avg 7.45us max 2.1ms overruns 2\n");
        assert_eq!(t.finish(), "");
    }

    #[test]
    fn before_the_first_sample_min_is_a_dash() {
        let r = TimerProgress { cpu: CpuId(3), ..TimerProgress::default() };
        assert!(row_text(&r).split_whitespace().any(|c| c == "-"));
    }
}
