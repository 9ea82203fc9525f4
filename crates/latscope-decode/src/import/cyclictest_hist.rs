//! cyclictest histogram output (`-h`/`-H`/`--histfile`): bucket rows `NNNNNN c0 c1 …` (a total column with
//! `-H`/`--histofall`), then `# Total:`, `# Min Latencies:`, `# Avg Latencies:`, `# Max Latencies:`
//! (`Latencys` in old versions), `# Histogram Overflows:` and the overflow cycle lists.

use super::{file_error, imported_metadata, timer_from_tool, ToolHistogram};
use crate::DecodeError;
use latscope_model::{ImportedSetup, TimerResult};

#[derive(Default)]
struct Footer {
    total: Vec<u64>,
    min: Vec<u64>,
    avg: Vec<u64>,
    max: Vec<u64>,
    overflows: Vec<u64>,
}

fn numbers(s: &str) -> Vec<u64> {
    s.split_whitespace().map_while(|w| w.parse().ok()).collect()
}

/// Imports cyclictest histogram text. Times are µs (cyclictest's default unit).
pub fn import(file: &str, text: &str) -> Result<TimerResult, DecodeError> {
    let mut rows: Vec<(usize, u64, Vec<u64>)> = Vec::new();
    let mut footer = Footer::default();
    let mut warnings = Vec::new();
    let mut in_hist = false;
    let mut bad_rows = 0usize;
    let mut first_bad = None;
    for (i, line) in text.lines().enumerate() {
        let lineno = i + 1;
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        if let Some(meta) = t.strip_prefix('#') {
            let meta = meta.trim();
            if meta == "Histogram" {
                in_hist = true;
                continue;
            }
            let Some((key, rest)) = meta.split_once(':') else { continue };
            let key = key.trim().to_ascii_lowercase();
            let vals = numbers(rest);
            match key.as_str() {
                "total" => footer.total = vals,
                k if k.starts_with("min latenc") => footer.min = vals,
                k if k.starts_with("avg latenc") => footer.avg = vals,
                k if k.starts_with("max latenc") => footer.max = vals,
                "histogram overflows" => footer.overflows = vals,
                _ => {}
            }
            continue;
        }
        let mut words = t.split_whitespace();
        let first = words.next().unwrap_or("");
        if !first.bytes().all(|b| b.is_ascii_digit()) {
            // Status lines (`T: 0 ( 4723) P:80 …`, `policy: fifo`) around the histogram are not ours.
            continue;
        }
        let counts: Result<Vec<u64>, _> = words.map(str::parse::<u64>).collect();
        match (first.parse::<u64>(), counts) {
            (Ok(idx), Ok(c)) if !c.is_empty() => {
                in_hist = true;
                rows.push((lineno, idx, c));
            }
            _ => {
                bad_rows += 1;
                first_bad.get_or_insert(lineno);
            }
        }
    }
    if rows.is_empty() {
        return Err(file_error(
            file,
            if in_hist {
                "cyclictest histogram has no bucket rows (truncated file?)"
            } else {
                "no cyclictest histogram rows found; produce them with cyclictest -h US or --histfile=FILE"
            },
        ));
    }
    // Thread count: from the per-thread footer rows when present (they never carry the -H total).
    let widest = rows.iter().map(|r| r.2.len()).max().unwrap_or(0);
    let threads = [footer.min.len(), footer.avg.len()].into_iter().find(|n| *n > 0).unwrap_or(widest);
    let histofall = widest == threads + 1;
    let mut hists: Vec<ToolHistogram> =
        (0..threads).map(|t| ToolHistogram { cpu: t as u32, unit_ns: 1000, ..ToolHistogram::default() }).collect();
    for (lineno, idx, counts) in &rows {
        if counts.len() != threads && counts.len() != threads + usize::from(histofall) {
            bad_rows += 1;
            first_bad.get_or_insert(*lineno);
            continue;
        }
        for (t, h) in hists.iter_mut().enumerate() {
            if counts[t] > 0 {
                h.buckets.push((*idx, counts[t]));
            }
        }
    }
    if bad_rows > 0 {
        warnings.push(format!(
            "{file}: {bad_rows} histogram rows could not be read (first at line {}); they are left out",
            first_bad.unwrap_or(0)
        ));
    }
    for (t, h) in hists.iter_mut().enumerate() {
        h.overflows = footer.overflows.get(t).copied().unwrap_or(0);
        h.min_ns = footer.min.get(t).map(|v| v * 1000);
        h.avg_ns = footer.avg.get(t).map(|v| *v as f64 * 1000.0);
        h.max_ns = footer.max.get(t).map(|v| v * 1000);
        h.total = footer.total.get(t).copied();
    }
    if footer.max.is_empty() {
        warnings.push(format!("{file}: no '# Max Latencies' line (truncated file?); maxima come from the buckets"));
    }
    warnings.push(
        "cyclictest threads are shown as CPU 0, 1, …: the histogram file does not say which CPU each ran on".into(),
    );
    let metadata = imported_metadata("cyclictest", file);
    // The histogram file does not record the interval, the priority or how long the run lasted.
    let setup = ImportedSetup { tool: "cyclictest".into(), ..ImportedSetup::default() };
    Ok(timer_from_tool(file, metadata, setup, &hists, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    const V240: &str = "# Histogram\n000000 000000\t000000\n000016 000004\t000000\n000017 000003\t000002\n\
        000040 000100\t000090\n# Total: 000000113 000000095\n# Min Latencies: 00016 00017\n\
        # Avg Latencies: 00041 00038\n# Max Latencies: 02632 00040\n# Histogram Overflows: 00006 00003\n\
        # Histogram Overflow at cycle number:\n# Thread 0: 00615 00708 00905 01412 01413 01417\n\
        # Thread 1: 00439 00440 00521\n";

    #[test]
    fn reads_v2_layout_with_overflows() {
        let r = import("h.txt", V240).expect("import");
        assert_eq!(r.cpus.len(), 2);
        let c0 = &r.cpus[0].stats;
        assert_eq!(c0.count, 113);
        assert_eq!((c0.min_ns, c0.max_ns), (16_000, 2_632_000));
        assert_eq!(c0.avg_ns, 41_000.0);
        assert!(r.warnings.iter().any(|w| w.contains("6 samples above")), "{:?}", r.warnings);
        assert!(!r.warnings.iter().any(|w| w.contains("reports")), "{:?}", r.warnings);
        assert_eq!(r.all.count, 113 + 95);
        assert_eq!(r.all.max_ns, 2_632_000);
    }

    #[test]
    fn histofall_total_column_is_not_a_thread() {
        let text = "# Histogram\n000010 000005\t000001\t000006\n000011 000001\t000003\t000004\n\
            # Total: 000000006 000000004 000000010\n# Min Latencies: 00010 00010\n# Avg Latencies: 00010 00010\n\
            # Max Latencies: 00011 00011 00011\n# Histogram Overflows: 00000 00000 00000\n";
        let r = import("h.txt", text).expect("import");
        assert_eq!(r.cpus.len(), 2);
        assert_eq!((r.cpus[0].stats.count, r.cpus[1].stats.count), (6, 4));
    }

    #[test]
    fn old_layout_with_latencys_typo_and_no_overflow_lines() {
        let text = "# Histogram\n000001 000010\n000002 000005\n# Total: 000000015\n# Min Latencys: 00001\n\
            # Avg Latencys: 00001\n# Max Latencys: 00002\n";
        let r = import("old.txt", text).expect("import");
        assert_eq!(r.cpus.len(), 1);
        assert_eq!((r.cpus[0].stats.count, r.cpus[0].stats.max_ns), (15, 2_000));
    }

    #[test]
    fn truncated_file_keeps_what_it_can_with_a_warning() {
        let text = "# Histogram\n000001 000010\t000001\n000002 000005\t00000x\n000003 0000";
        let r = import("cut.txt", text).expect("import");
        assert_eq!(r.cpus[0].stats.count, 10);
        assert!(r.warnings.iter().any(|w| w.contains("could not be read (first at line 3)")), "{:?}", r.warnings);
        assert!(r.warnings.iter().any(|w| w.contains("Max Latencies")));
    }

    #[test]
    fn empty_histogram_is_an_error_naming_the_file() {
        let e = import("e.txt", "# Histogram\n").expect_err("no rows");
        assert!(e.to_string().starts_with("e.txt: "), "{e}");
    }
}
