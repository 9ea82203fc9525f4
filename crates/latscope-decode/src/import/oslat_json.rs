//! oslat `--json` output: per thread `cpu`, `freq` (MHz), `min`/`avg`/`max` (µs), `duration` (s) and a
//! `histogram` of 1 µs buckets whose last bucket also holds the overflows.

use super::{file_error, imported_metadata, line_error, noise_from_tool, ToolHistogram};
use crate::DecodeError;
use latscope_model::noise_result::{CounterInfo, NoiseResult};
use serde_json::Value;

/// The noise threshold applied to imported oslat histograms (latscope noise's default).
pub const THRESHOLD_NS: u64 = 5_000;

/// Imports oslat JSON.
pub fn import(file: &str, text: &str) -> Result<NoiseResult, DecodeError> {
    let v: Value = serde_json::from_str(text).map_err(|e| line_error(file, e.line(), e.to_string()))?;
    let threads = v
        .get("thread")
        .and_then(Value::as_object)
        .ok_or_else(|| file_error(file, "no \"thread\" object: is this oslat --json output (rt-tests 2.0+)?"))?;
    let mut cpus = Vec::new();
    let mut warnings = Vec::new();
    let mut freq_mhz = 0.0;
    for (key, t) in threads {
        let num = |k: &str| t.get(k).and_then(Value::as_f64);
        let mut h = ToolHistogram { unit_ns: 1000, ..ToolHistogram::default() };
        h.cpu = t.get("cpu").and_then(Value::as_u64).or_else(|| key.parse().ok()).unwrap_or(0) as u32;
        if let Some(hist) = t.get("histogram").and_then(Value::as_object) {
            for (bucket, count) in hist {
                match (bucket.parse::<u64>(), count.as_u64()) {
                    (Ok(b), Some(c)) => h.buckets.push((b, c)),
                    _ => warnings.push(format!("{file}: thread {key}: histogram entry \"{bucket}\" skipped")),
                }
            }
        }
        h.buckets.sort();
        h.min_ns = num("min").map(|x| (x * 1000.0) as u64);
        h.max_ns = num("max").map(|x| (x * 1000.0) as u64);
        h.avg_ns = num("avg").map(|x| x * 1000.0);
        freq_mhz = num("freq").unwrap_or(freq_mhz);
        cpus.push((h, num("duration").unwrap_or(0.0)));
    }
    if cpus.is_empty() {
        return Err(file_error(file, "the \"thread\" object is empty: oslat measured nothing"));
    }
    cpus.sort_by_key(|(h, _)| h.cpu);
    let version = v.get("rt_test_version:").or_else(|| v.get("rt_test_version")).and_then(Value::as_str);
    let mut md = imported_metadata(&format!("oslat {}", version.unwrap_or("?")), file);
    if let Some(cmd) = v.get("cmdline:").or_else(|| v.get("cmdline")).and_then(Value::as_str) {
        md.args = cmd.split_whitespace().map(str::to_string).collect();
    }
    if let Some(sys) = v.get("sysinfo") {
        let s = |k: &str| sys.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        md.hostname = s("nodename");
        md.kernel_release = s("release");
        md.kernel_version = s("version");
    }
    md.start_time = v.get("start_time").and_then(Value::as_str).unwrap_or("").to_string();
    let counter =
        CounterInfo { name: "tsc (oslat)".into(), freq_hz: freq_mhz * 1e6, calibrated_against: "oslat".into() };
    Ok(noise_from_tool(file, md, counter, THRESHOLD_NS, &cpus, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_threads_and_estimates_noise() {
        let text = r#"{"file_version": 1, "cmdline:": "oslat -D 2s -c 0,1 --json o.json", "rt_test_version:": "2.40",
          "thread": {"0": {"cpu": 0, "freq": 2597, "min": 1, "avg": 1.01, "max": 35979, "duration": 1.998,
                           "histogram": {"1": 1000, "2": 10, "6": 3, "32": 2}}}}"#;
        let r = import("o.json", text).expect("import");
        let c = &r.cpus[0];
        assert_eq!(c.loops, 1015);
        assert_eq!(c.max_gap_ns, 35_979_000);
        // 3 gaps of 6 µs, and the last bucket: one at 32 µs plus the 35979 µs maximum.
        assert_eq!(c.noise_ns, 3 * 6_000 + 32_000 + 35_979_000);
        assert_eq!(c.gaps.count, 5);
        assert!((r.counter.freq_hz - 2.597e9).abs() < 1.0);
        assert_eq!(r.metadata.tool_version, "oslat 2.40");
    }
}
