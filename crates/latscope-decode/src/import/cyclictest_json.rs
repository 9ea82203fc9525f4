//! cyclictest `--json` output: `"cmdline:"` and `"rt_test_version:"` keys (with the colon inside the key,
//! as rt-tests writes them), `sysinfo`, and per thread a sparse `histogram` of µs (ns with
//! `resolution_in_ns`), `cycles`, `min`, `max`, `avg`, `cpu`.

use super::{cyclictest_options, file_error, imported_metadata, line_error, timer_from_tool, ToolHistogram};
use crate::DecodeError;
use latscope_model::{ImportedSetup, TimerResult};
use serde_json::Value;

/// The thread's number as a key string, its object, the file name: reads a u64 field.
fn u64_field(v: &Value, key: &str) -> Option<u64> {
    v.get(key).and_then(|x| x.as_u64().or_else(|| x.as_f64().map(|f| f as u64)))
}

/// Imports cyclictest JSON.
pub fn import(file: &str, text: &str) -> Result<TimerResult, DecodeError> {
    let v: Value = serde_json::from_str(text).map_err(|e| line_error(file, e.line(), e.to_string()))?;
    let threads = v.get("thread").and_then(Value::as_object).ok_or_else(|| {
        file_error(file, "no \"thread\" object: is this cyclictest --json output (rt-tests 2.0 or newer)?")
    })?;
    let unit_ns = if u64_field(&v, "resolution_in_ns") == Some(1) { 1 } else { 1000 };
    let mut hists = Vec::new();
    let mut warnings = Vec::new();
    let mut keys: Vec<(u64, &String)> = threads.keys().map(|k| (k.parse().unwrap_or(u64::MAX), k)).collect();
    keys.sort();
    for (_, key) in keys {
        let t = &threads[key];
        let mut h = ToolHistogram { unit_ns, ..ToolHistogram::default() };
        h.cpu = u64_field(t, "cpu").or_else(|| key.parse().ok()).unwrap_or(0) as u32;
        if let Some(hist) = t.get("histogram").and_then(Value::as_object) {
            for (bucket, count) in hist {
                match (bucket.parse::<u64>(), count.as_u64()) {
                    (Ok(b), Some(c)) => h.buckets.push((b, c)),
                    _ => warnings.push(format!(
                        "{file}: thread {key}: histogram entry \"{bucket}\": {count} is not a number; skipped"
                    )),
                }
            }
        } else {
            warnings.push(format!(
                "{file}: thread {key} has no histogram (run cyclictest with -h US); only its min/avg/max are known"
            ));
        }
        h.buckets.sort();
        h.min_ns = u64_field(t, "min").map(|x| x * unit_ns);
        h.max_ns = u64_field(t, "max").map(|x| x * unit_ns);
        h.avg_ns = t.get("avg").and_then(Value::as_f64).map(|x| x * unit_ns as f64);
        let cycles = u64_field(t, "cycles");
        let in_hist: u64 = h.buckets.iter().map(|b| b.1).sum();
        // Samples beyond the histogram's range are not in the JSON histogram: the cycle count tells them.
        h.overflows = cycles.map_or(0, |c| c.saturating_sub(in_hist));
        h.total = cycles;
        hists.push(h);
    }
    if hists.is_empty() {
        return Err(file_error(file, "the \"thread\" object is empty: cyclictest measured nothing"));
    }
    let cmdline = v.get("cmdline:").or_else(|| v.get("cmdline")).and_then(Value::as_str).unwrap_or("");
    let version = v.get("rt_test_version:").or_else(|| v.get("rt_test_version")).and_then(Value::as_str);
    let mut md = imported_metadata(&format!("cyclictest {}", version.unwrap_or("?")), file);
    if !cmdline.is_empty() {
        md.args = cmdline.split_whitespace().map(str::to_string).collect();
    }
    if let Some(sys) = v.get("sysinfo") {
        let s = |k: &str| sys.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        md.hostname = s("nodename");
        md.kernel_release = s("release");
        md.kernel_version = s("version");
        if sys.get("realtime").and_then(Value::as_u64) == Some(1) {
            md.preemption_model = "rt".into();
        }
    }
    md.start_time = v.get("start_time").and_then(Value::as_str).unwrap_or("").to_string();
    md.cpu_count = hists.len() as u32;
    let end = v.get("end_time").and_then(Value::as_str);
    let duration_ns = match (mail_date_secs(&md.start_time), end.and_then(mail_date_secs)) {
        (Some(a), Some(b)) if b >= a => Some((b - a) as u64 * 1_000_000_000),
        _ => None,
    };
    let (interval_ns, prio) = cyclictest_options(cmdline);
    let known = !cmdline.is_empty();
    let setup = ImportedSetup {
        tool: "cyclictest".into(),
        interval_ns: known.then_some(interval_ns),
        priority: known.then_some(prio),
        duration_ns,
    };
    Ok(timer_from_tool(file, md, setup, &hists, warnings))
}

/// Seconds since 1970 of cyclictest's `start_time`/`end_time` (`Sun, 22 Nov 2026 21:40:10 +0000`, the
/// RFC 2822 form of `strftime("%a, %d %b %Y %T %z")`); `None` when it is not that form.
fn mail_date_secs(s: &str) -> Option<i64> {
    let mut w = s.split_whitespace();
    let _weekday = w.next()?;
    let day: i64 = w.next()?.parse().ok()?;
    let mon = w.next()?;
    let month = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        .iter()
        .position(|m| *m == mon)? as i64
        + 1;
    let year: i64 = w.next()?.parse().ok()?;
    let mut hms = w.next()?.split(':').map(|x| x.parse::<i64>().ok());
    let (h, m, sec) = (hms.next()??, hms.next()??, hms.next()??);
    let zone = w.next()?;
    let sign = if zone.starts_with('-') { -1 } else { 1 };
    let z: i64 = zone.trim_start_matches(['+', '-']).parse().ok()?;
    let offset = sign * ((z / 100) * 3600 + (z % 100) * 60);
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + m * 60 + sec - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r##"{
  "file_version": 1,
  "cmdline:": "cyclictest -m -q -p 80 -t 2 -a 0,1 -i 1000 -D 2s -h 200 --json=c.json",
  "rt_test_version:": "2.40",
  "start_time": "Sun, 22 Nov 2026 21:40:10 +0000",
  "sysinfo": {"sysname": "Linux", "nodename": "vm", "release": "6.18.44", "version": "#1 SMP PREEMPT_DYNAMIC", "machine": "x86_64", "realtime": 0},
  "num_threads": 2,
  "resolution_in_ns": 0,
  "thread": {
    "1": {"histogram": {"20": 5, "30": 3}, "cycles": 10, "min": 20, "max": 450, "avg": 70.5, "cpu": 1, "node": 0},
    "0": {"histogram": {"16": 4}, "cycles": 4, "min": 16, "max": 16, "avg": 16.0, "cpu": 0, "node": 0}
  }
}"##;

    #[test]
    fn reads_threads_options_and_odd_keys() {
        let r = import("c.json", SAMPLE).expect("import");
        assert_eq!(r.cpus.iter().map(|c| c.cpu.0).collect::<Vec<_>>(), vec![0, 1]);
        let c1 = &r.cpus[1].stats;
        assert_eq!(c1.count, 10, "8 in the histogram + 2 overflows");
        assert_eq!((c1.min_ns, c1.max_ns, c1.avg_ns), (20_000, 450_000, 70_500.0));
        assert_eq!((r.options.interval_ns, r.options.priority), (1_000_000, 80));
        assert_eq!(r.metadata.tool_version, "cyclictest 2.40");
        assert_eq!(r.metadata.kernel_release, "6.18.44");
        assert!(r.warnings.iter().any(|w| w.contains("CPU 1: 2 samples above")), "{:?}", r.warnings);
    }

    #[test]
    fn missing_thread_object_is_a_clear_error() {
        let e = import("x.json", "{\"file_version\": 1}").expect_err("no threads");
        assert!(e.to_string().contains("\"thread\""), "{e}");
    }

    #[test]
    fn broken_json_names_the_line() {
        let e = import("x.json", "{\n\"thread\": {\n\"0\": {\"histogram\": {\"1\": 2,}}}}").expect_err("bad");
        assert!(matches!(e, DecodeError::Import { line: Some(3), .. }), "{e}");
    }
}
