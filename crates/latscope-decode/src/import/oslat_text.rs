//! oslat's text output: a `key: value` preamble, then `Core:` and `CPU Freq:`/`Counter Freq:` rows, bucket
//! rows `NNN (us): c0 c1 …` (the last one `(including overflows)`), and `Minimum`/`Average`/`Maximum`/
//! `Duration` rows.

use super::{file_error, imported_metadata, noise_from_tool, oslat_json::THRESHOLD_NS, ToolHistogram};
use crate::DecodeError;
use latscope_model::noise_result::{CounterInfo, NoiseResult};

fn values(rest: &str) -> Vec<f64> {
    rest.split_whitespace().map_while(|w| w.parse::<f64>().ok()).collect()
}

/// Imports oslat text output.
pub fn import(file: &str, text: &str) -> Result<NoiseResult, DecodeError> {
    let mut hists: Vec<ToolHistogram> = Vec::new();
    let mut durations: Vec<f64> = Vec::new();
    let mut freq = Vec::new();
    let mut version = None;
    let mut warnings = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if let Some(v) = t.strip_prefix("oslat V ") {
            version = Some(v.trim().to_string());
            continue;
        }
        let Some((key, rest)) = t.split_once(':') else { continue };
        let key = key.trim();
        if key == "Core" {
            let cores: Vec<u32> = rest.split_whitespace().filter_map(|w| w.parse().ok()).collect();
            hists =
                cores.iter().map(|c| ToolHistogram { cpu: *c, unit_ns: 1000, ..ToolHistogram::default() }).collect();
            continue;
        }
        if hists.is_empty() {
            continue;
        }
        let vals = values(rest);
        if let Some(idx) = key.strip_suffix("(us)").map(str::trim) {
            let Ok(idx) = idx.parse::<u64>() else { continue };
            if vals.len() != hists.len() {
                warnings.push(format!(
                    "{file}:{}: bucket row has {} values for {} CPUs; skipped",
                    i + 1,
                    vals.len(),
                    hists.len()
                ));
                continue;
            }
            for (h, n) in hists.iter_mut().zip(&vals) {
                if *n > 0.0 {
                    h.buckets.push((idx, *n as u64));
                }
            }
            continue;
        }
        let set = |hists: &mut [ToolHistogram], f: &dyn Fn(&mut ToolHistogram, f64)| {
            for (h, v) in hists.iter_mut().zip(&vals) {
                f(h, *v);
            }
        };
        match key {
            "CPU Freq" | "Counter Freq" => freq = vals,
            "Minimum" => set(&mut hists, &|h, v| h.min_ns = Some((v * 1000.0) as u64)),
            "Average" => set(&mut hists, &|h, v| h.avg_ns = Some(v * 1000.0)),
            "Maximum" => set(&mut hists, &|h, v| h.max_ns = Some((v * 1000.0) as u64)),
            "Duration" => durations = vals,
            _ => {}
        }
    }
    if hists.is_empty() || hists.iter().all(|h| h.buckets.is_empty()) {
        return Err(file_error(file, "no oslat bucket rows ('001 (us): …' after a 'Core:' row) found"));
    }
    if hists.iter().any(|h| h.max_ns.is_none()) {
        warnings.push(format!("{file}: no 'Maximum:' row (truncated output?); maxima come from the buckets"));
    }
    let cpus: Vec<(ToolHistogram, f64)> =
        hists.into_iter().enumerate().map(|(i, h)| (h, durations.get(i).copied().unwrap_or(0.0))).collect();
    let md = imported_metadata(&format!("oslat {}", version.as_deref().unwrap_or("?")), file);
    let counter = CounterInfo {
        name: "tsc (oslat)".into(),
        freq_hz: freq.first().copied().unwrap_or(0.0) * 1e6,
        calibrated_against: "oslat".into(),
    };
    Ok(noise_from_tool(file, md, counter, THRESHOLD_NS, &cpus, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_v1_10_layout() {
        let text =
            "oslat V 1.10\nTotal runtime: \t\t10 seconds\n\n        Core:\t 5 6\n    CPU Freq:\t 2493 2493 (Mhz)\n\
            \x20   001 (us):\t 100 200\n    002 (us):\t 3 0\n    032 (us):\t 0 1 (including overflows)\n\
            \x20    Minimum:\t 1 1 (us)\n     Average:\t 1.000 1.000 (us)\n     Maximum:\t 2 40 (us)\n\
            \x20   Duration:\t 10.003 10.003 (sec)\n";
        let r = import("o.txt", text).expect("import");
        assert_eq!(r.cpus.iter().map(|c| c.cpu.0).collect::<Vec<_>>(), vec![5, 6]);
        assert_eq!((r.cpus[0].loops, r.cpus[1].loops), (103, 201));
        assert_eq!(r.cpus[1].max_gap_ns, 40_000);
        assert_eq!(r.cpus[1].noise_ns, 40_000);
        assert_eq!(r.metadata.tool_version, "oslat 1.10");
        assert!((r.counter.freq_hz - 2.493e9).abs() < 1.0);
    }

    #[test]
    fn no_buckets_is_an_error() {
        assert!(import("o.txt", "oslat V 2.40\n").is_err());
    }
}
