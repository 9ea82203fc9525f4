//! Per-window rows (`--window`): each window's mean, standard deviation, share above the threshold and
//! min–max, followed by the running global min–max, as seed 003's driver printed every 10 s.

use latscope_model::{Nanos, WindowAccum, WindowRow};

/// Turns the accumulators of one CPU, in time order, into rows. `run_start` (CLOCK_MONOTONIC) makes the
/// offsets relative; empty windows (a stall longer than a window) stay, with a count of 0.
pub fn window_rows(accums: &[WindowAccum], run_start: Nanos, threshold: Option<Nanos>) -> Vec<WindowRow> {
    let mut global_min = u64::MAX;
    let mut global_max = 0u64;
    accums
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let (min, max) = if w.count == 0 { (0, 0) } else { (w.min_ns, w.max_ns) };
            if w.count > 0 {
                global_min = global_min.min(min);
                global_max = global_max.max(max);
            }
            WindowRow {
                index: i as u64,
                offset_ns: w.start_ns.saturating_sub(run_start.0),
                count: w.count,
                mean_ns: w.mean_ns(),
                stddev_ns: w.stddev_ns(),
                min_ns: min,
                max_ns: max,
                above_threshold: threshold.map(|_| w.above),
                above_threshold_pct: threshold.map(|_| {
                    if w.count == 0 {
                        0.0
                    } else {
                        100.0 * w.above as f64 / w.count as f64
                    }
                }),
                overruns: w.overruns,
                global_min_ns: if global_min == u64::MAX { 0 } else { global_min },
                global_max_ns: global_max,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(start: u64, values: &[u64], threshold: u64) -> WindowAccum {
        let mut w = WindowAccum::new(start);
        values.iter().for_each(|&v| w.record(v, v > threshold));
        w
    }

    /// numpy reference: a = [8000, 9000, 10000, 30000] → mean 14250.0, std 9120.7181734…;
    /// b = [7000, 12000] → mean 9500.0, std 2500.0.
    #[test]
    fn rows_carry_window_and_global_extremes() {
        let accums = [
            window(1_000, &[8_000, 9_000, 10_000, 30_000], 25_000),
            WindowAccum::new(11_000),
            window(21_000, &[7_000, 12_000], 25_000),
        ];
        let rows = window_rows(&accums, Nanos(1_000), Some(Nanos(25_000)));
        assert_eq!(rows.len(), 3);
        assert_eq!((rows[0].offset_ns, rows[0].count, rows[0].min_ns, rows[0].max_ns), (0, 4, 8_000, 30_000));
        assert!((rows[0].mean_ns - 14_250.0).abs() < 1e-9);
        assert!((rows[0].stddev_ns - 9_120.718_173_5).abs() < 1e-3, "{}", rows[0].stddev_ns);
        assert_eq!(rows[0].above_threshold, Some(1));
        assert_eq!(rows[0].above_threshold_pct, Some(25.0));
        assert_eq!((rows[1].count, rows[1].global_min_ns, rows[1].global_max_ns), (0, 8_000, 30_000));
        assert!((rows[2].stddev_ns - 2_500.0).abs() < 1e-9);
        assert_eq!((rows[2].global_min_ns, rows[2].global_max_ns), (7_000, 30_000));
        assert_eq!(rows[2].offset_ns, 20_000);
    }

    #[test]
    fn no_threshold_means_no_counts() {
        let rows = window_rows(&[window(0, &[5], 0)], Nanos(0), None);
        assert_eq!((rows[0].above_threshold, rows[0].above_threshold_pct), (None, None));
    }
}
