//! The Prometheus exposition of a [`MonitorSnapshot`], in the Prometheus text format (0.0.4, also what
//! node_exporter's textfile collector reads) or OpenMetrics 1.0, encoded by the `prometheus-client` crate.
//! Metric names, labels and units are decided here and nowhere else; seconds are the unit, as Prometheus
//! wants.

use latscope_model::{CpuMonitor, MonitorSnapshot, Nanos, NoiseMonitor, LATENCY_BUCKETS};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric, NoLabelSet};
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;

/// The two exposition formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exposition {
    /// Prometheus text format 0.0.4.
    Text,
    /// OpenMetrics text 1.0.0.
    OpenMetrics,
}

impl Exposition {
    /// The format an HTTP `Accept` header asks for: OpenMetrics when it names
    /// `application/openmetrics-text` (what Prometheus sends first), the text format otherwise.
    pub fn negotiate(accept: Option<&str>) -> Exposition {
        let asks = accept.is_some_and(|a| {
            a.split(',').any(|part| {
                let mut params = part.split(';').map(str::trim);
                let media = params.next().unwrap_or_default();
                let refused = params.any(|p| p.replace(' ', "") == "q=0");
                media.eq_ignore_ascii_case("application/openmetrics-text") && !refused
            })
        });
        if asks {
            Exposition::OpenMetrics
        } else {
            Exposition::Text
        }
    }

    /// The `Content-Type` of a response in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Exposition::Text => prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            Exposition::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// Renders the snapshot in `format`.
pub fn render(snapshot: &MonitorSnapshot, format: Exposition) -> String {
    let mut registry = Registry::default();
    registry.register_collector(Box::new(SnapshotCollector(snapshot.clone())));
    let mut out = String::new();
    // Writing to a String cannot fail, and the collector only writes.
    let _ = match format {
        Exposition::Text => prometheus_client::encoding::prometheus_text::encode(&mut out, &registry),
        Exposition::OpenMetrics => prometheus_client::encoding::text::encode(&mut out, &registry),
    };
    out
}

/// Every metric family exported (as named in the text format), for documentation and tests (the unit
/// tests check that the exposition has each and nothing else).
pub const METRIC_NAMES: [&str; 21] = [
    "latscope_build_info",
    "latscope_timer_interval_seconds",
    "latscope_timer_threshold_seconds",
    "latscope_timer_latency_seconds",
    "latscope_timer_max_latency_seconds",
    "latscope_timer_overruns_total",
    "latscope_timer_threshold_exceeded_total",
    "latscope_timer_samples_lost_total",
    "latscope_noise_ratio",
    "latscope_noise_max_gap_seconds",
    "latscope_noise_sampled_seconds_total",
    "latscope_noise_seconds_total",
    "latscope_noise_gaps_total",
    "latscope_noise_gap_seconds_total",
    "latscope_breaches_total",
    "latscope_breaches_not_captured_total",
    "latscope_trace_lost_events_total",
    "latscope_audit_finding",
    "process_cpu_seconds_total",
    "process_resident_memory_bytes",
    "process_start_time_seconds",
];

#[derive(Debug)]
struct SnapshotCollector(MonitorSnapshot);

fn seconds(n: Nanos) -> f64 {
    n.0 as f64 / 1e9
}

/// A window length as a label value: `60s`, `1500ms`.
fn window_label(w: Nanos) -> String {
    if w.0 % 1_000_000_000 == 0 {
        format!("{}s", w.0 / 1_000_000_000)
    } else {
        format!("{}ms", w.0 / 1_000_000)
    }
}

fn cpu_label(c: &CpuMonitor) -> [(&'static str, String); 1] {
    [("cpu", c.cpu.0.to_string())]
}

/// One gauge without labels.
fn gauge(e: &mut DescriptorEncoder, name: &str, help: &str, v: f64) -> std::fmt::Result {
    ConstGauge::new(v).encode(e.encode_descriptor(name, help, None, MetricType::Gauge)?)
}

/// One counter without labels; `name` without its `_total`.
fn counter(e: &mut DescriptorEncoder, name: &str, help: &str, v: u64) -> std::fmt::Result {
    ConstCounter::new(v).encode(e.encode_descriptor(name, help, None, MetricType::Counter)?)
}

/// A counter per CPU; `name` without its `_total`.
fn per_cpu_counter(
    e: &mut DescriptorEncoder,
    s: &MonitorSnapshot,
    name: &str,
    help: &str,
    v: fn(&CpuMonitor) -> u64,
) -> std::fmt::Result {
    let mut m = e.encode_descriptor(name, help, None, MetricType::Counter)?;
    for c in &s.cpus {
        let labels = cpu_label(c);
        ConstCounter::new(v(c)).encode(m.encode_family(&labels)?)?;
    }
    Ok(())
}

impl Collector for SnapshotCollector {
    fn encode(&self, mut e: DescriptorEncoder) -> std::fmt::Result {
        let s = &self.0;
        {
            let mut m = e.encode_descriptor("latscope_build_info", "latscope's version", None, MetricType::Gauge)?;
            let labels = [("version", s.version.clone())];
            ConstGauge::new(1i64).encode(m.encode_family(&labels)?)?;
        }
        gauge(&mut e, "latscope_timer_interval_seconds", "Period of the timer measurement", seconds(s.interval))?;
        if let Some(t) = s.threshold {
            gauge(&mut e, "latscope_timer_threshold_seconds", "Latency above which a wakeup is a breach", seconds(t))?;
        }
        {
            let mut m = e.encode_descriptor(
                "latscope_timer_latency_seconds",
                "How late the periodic timer woke the measuring thread",
                None,
                MetricType::Histogram,
            )?;
            for c in &s.cpus {
                let mut buckets: Vec<(f64, u64)> =
                    LATENCY_BUCKETS.iter().zip(c.buckets).map(|(b, n)| (seconds(*b), n)).collect();
                let below: u64 = c.buckets.iter().sum();
                buckets.push((f64::INFINITY, c.count.saturating_sub(below)));
                let labels = cpu_label(c);
                let sum = c.sum_ns as f64 / 1e9;
                m.encode_family(&labels)?.encode_histogram::<NoLabelSet>(sum, c.count, &buckets, None)?;
            }
        }
        {
            let mut m = e.encode_descriptor(
                "latscope_timer_max_latency_seconds",
                "Largest timer latency in the rolling window, and since the start (window=\"total\")",
                None,
                MetricType::Gauge,
            )?;
            let window = window_label(s.window);
            for c in &s.cpus {
                for (w, v) in [(window.clone(), c.window_max), ("total".to_string(), c.max)] {
                    let labels = [("cpu", c.cpu.0.to_string()), ("window", w)];
                    ConstGauge::new(seconds(v)).encode(m.encode_family(&labels)?)?;
                }
            }
        }
        per_cpu_counter(&mut e, s, "latscope_timer_overruns", "Timer periods missed", |c| c.overruns)?;
        per_cpu_counter(&mut e, s, "latscope_timer_threshold_exceeded", "Wakeups later than the threshold", |c| {
            c.threshold_exceeded
        })?;
        per_cpu_counter(
            &mut e,
            s,
            "latscope_timer_samples_lost",
            "Samples the exporter fell too far behind to count (not in the histogram)",
            |c| c.samples_lost,
        )?;
        encode_noise(&mut e, s)?;
        {
            let mut m = e.encode_descriptor(
                "latscope_breaches",
                "Breaches of the threshold captured and explained by the flight recorder, by the cause that explains most of each",
                None,
                MetricType::Counter,
            )?;
            for (cause, n) in &s.breaches {
                let labels = [("cause", cause.as_str())];
                ConstCounter::new(*n).encode(m.encode_family(&labels)?)?;
            }
        }
        counter(
            &mut e,
            "latscope_breaches_not_captured",
            "Breaches the flight recorder did not capture (rate limit, capture in progress, no tracing)",
            s.breaches_not_captured,
        )?;
        counter(
            &mut e,
            "latscope_trace_lost_events",
            "Events the flight recorder's trace buffer lost",
            s.trace_lost_events,
        )?;
        {
            let mut m = e.encode_descriptor(
                "latscope_audit_finding",
                "A latency risk the audit found on this machine (1 per rule)",
                None,
                MetricType::Gauge,
            )?;
            for (rule, severity) in &s.findings {
                let labels = [("rule", rule.clone()), ("severity", severity.as_str().to_string())];
                ConstGauge::new(1i64).encode(m.encode_family(&labels)?)?;
            }
        }
        counter_f64(&mut e, "process_cpu_seconds", "CPU time used by latscope", seconds(s.process.cpu_time))?;
        gauge(&mut e, "process_resident_memory_bytes", "Resident memory of latscope", s.process.resident_bytes as f64)?;
        gauge(
            &mut e,
            "process_start_time_seconds",
            "When latscope started, seconds since the Unix epoch",
            s.process.start_time_unix_s as f64,
        )?;
        Ok(())
    }
}

/// The noise series (`--noise`), for the CPUs where noise is sampled.
fn encode_noise(e: &mut DescriptorEncoder, s: &MonitorSnapshot) -> std::fmt::Result {
    let sampled: Vec<(&CpuMonitor, &NoiseMonitor)> =
        s.cpus.iter().filter_map(|c| c.noise.as_ref().map(|n| (c, n))).collect();
    if sampled.is_empty() {
        return Ok(());
    }
    let window = window_label(s.window);
    type Windowed = fn(&NoiseMonitor) -> (f64, f64);
    let windowed: [(&str, &str, Windowed); 2] = [
        (
            "latscope_noise_ratio",
            "Share of the noise loop's time lost to gaps above the noise threshold, in the rolling window and since the start (window=\"total\")",
            |n| (n.window_ratio(), n.ratio()),
        ),
        (
            "latscope_noise_max_gap_seconds",
            "Longest gap the noise loop saw, in the rolling window and since the start (window=\"total\")",
            |n| (seconds(n.window_max_gap), seconds(n.max_gap)),
        ),
    ];
    for (name, help, v) in windowed {
        let mut m = e.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for (c, n) in &sampled {
            let (in_window, total) = v(n);
            for (w, x) in [(window.clone(), in_window), ("total".to_string(), total)] {
                let labels = [("cpu", c.cpu.0.to_string()), ("window", w)];
                ConstGauge::new(x).encode(m.encode_family(&labels)?)?;
            }
        }
    }
    type Total = fn(&NoiseMonitor) -> f64;
    let totals: [(&str, &str, Total); 2] = [
        ("latscope_noise_sampled_seconds", "Time the noise loop ran", |n| seconds(n.sampled)),
        ("latscope_noise_seconds", "Gaps above the noise threshold within it, summed", |n| seconds(n.noise)),
    ];
    for (name, help, v) in totals {
        let mut m = e.encode_descriptor(name, help, None, MetricType::Counter)?;
        for (c, n) in &sampled {
            let labels = cpu_label(c);
            ConstCounter::new(v(n)).encode(m.encode_family(&labels)?)?;
        }
    }
    if sampled.iter().all(|(_, n)| n.causes.is_empty()) {
        return Ok(());
    }
    {
        let help = "Noise gaps the flight recorder's trace explained, by cause";
        let mut m = e.encode_descriptor("latscope_noise_gaps", help, None, MetricType::Counter)?;
        for (c, n) in &sampled {
            for (cause, (gaps, _)) in &n.causes {
                let labels = [("cpu", c.cpu.0.to_string()), ("cause", cause.as_str().to_string())];
                ConstCounter::new(*gaps).encode(m.encode_family(&labels)?)?;
            }
        }
    }
    let help = "Their total, by cause";
    let mut m = e.encode_descriptor("latscope_noise_gap_seconds", help, None, MetricType::Counter)?;
    for (c, n) in &sampled {
        for (cause, (_, total)) in &n.causes {
            let labels = [("cpu", c.cpu.0.to_string()), ("cause", cause.as_str().to_string())];
            ConstCounter::new(seconds(*total)).encode(m.encode_family(&labels)?)?;
        }
    }
    Ok(())
}

/// One counter of seconds; `name` without its `_total`.
fn counter_f64(e: &mut DescriptorEncoder, name: &str, help: &str, v: f64) -> std::fmt::Result {
    ConstCounter::new(v).encode(e.encode_descriptor(name, help, None, MetricType::Counter)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{CauseKind, CpuId, ProcessUsage, Severity};

    fn snapshot() -> MonitorSnapshot {
        let mut cpu = CpuMonitor { cpu: CpuId(1), count: 10, sum_ns: 25_000, ..CpuMonitor::default() };
        cpu.buckets[1] = 6; // ≤ 2 µs
        cpu.buckets[2] = 3; // ≤ 5 µs
        cpu.max = Nanos::from_ms(150);
        cpu.window_max = Nanos::from_us(4);
        cpu.overruns = 2;
        cpu.threshold_exceeded = 1;
        cpu.noise = Some(NoiseMonitor {
            sampled: Nanos::from_ms(200),
            noise: Nanos::from_ms(3),
            max_gap: Nanos::from_us(900),
            window_sampled: Nanos::from_ms(100),
            window_noise: Nanos::from_ms(1),
            window_max_gap: Nanos::from_us(250),
            causes: [(CauseKind::Irq, (40, Nanos::from_us(400)))].into_iter().collect(),
        });
        MonitorSnapshot {
            version: "0.1.0".into(),
            interval: Nanos::from_ms(1),
            window: Nanos::from_secs(60),
            threshold: Some(Nanos::from_us(100)),
            cpus: vec![cpu],
            breaches: [(CauseKind::BlockingTask, 3)].into_iter().collect(),
            breaches_not_captured: 4,
            trace_lost_events: 0,
            findings: vec![("smt_on".into(), Severity::Warn)],
            process: ProcessUsage { cpu_time: Nanos::from_ms(1_500), resident_bytes: 4096, start_time_unix_s: 7 },
        }
    }

    #[test]
    fn the_text_format_has_cumulative_buckets_in_seconds_and_counters_named_total() {
        let t = render(&snapshot(), Exposition::Text);
        assert!(t.contains("# TYPE latscope_timer_latency_seconds histogram\n"), "{t}");
        assert!(t.contains("latscope_timer_latency_seconds_bucket{cpu=\"1\",le=\"1e-06\"} 0\n"), "{t}");
        assert!(t.contains("latscope_timer_latency_seconds_bucket{cpu=\"1\",le=\"2e-06\"} 6\n"), "{t}");
        assert!(t.contains("latscope_timer_latency_seconds_bucket{cpu=\"1\",le=\"0.1\"} 9\n"), "{t}");
        assert!(t.contains("latscope_timer_latency_seconds_bucket{cpu=\"1\",le=\"+Inf\"} 10\n"), "{t}");
        assert!(t.contains("latscope_timer_latency_seconds_count{cpu=\"1\"} 10\n"), "{t}");
        assert!(t.contains("latscope_timer_max_latency_seconds{cpu=\"1\",window=\"60s\"} 0.000004\n"), "{t}");
        assert!(t.contains("latscope_timer_max_latency_seconds{cpu=\"1\",window=\"total\"} 0.15\n"), "{t}");
        assert!(
            t.contains("# TYPE latscope_timer_overruns_total counter\nlatscope_timer_overruns_total{cpu=\"1\"} 2\n")
        );
        assert!(t.contains("latscope_breaches_total{cause=\"blocking_task\"} 3\n"), "{t}");
        assert!(t.contains("latscope_audit_finding{rule=\"smt_on\",severity=\"warn\"} 1\n"), "{t}");
        assert!(t.contains("process_cpu_seconds_total 1.5\n"), "{t}");
        assert!(t.contains("latscope_noise_ratio{cpu=\"1\",window=\"60s\"} 0.01\n"), "{t}");
        assert!(t.contains("latscope_noise_ratio{cpu=\"1\",window=\"total\"} 0.015\n"), "{t}");
        assert!(t.contains("latscope_noise_max_gap_seconds{cpu=\"1\",window=\"60s\"} 0.00025\n"), "{t}");
        assert!(t.contains("latscope_noise_sampled_seconds_total{cpu=\"1\"} 0.2\n"), "{t}");
        assert!(t.contains("latscope_noise_gaps_total{cpu=\"1\",cause=\"irq\"} 40\n"), "{t}");
        assert!(t.contains("latscope_noise_gap_seconds_total{cpu=\"1\",cause=\"irq\"} 0.0004\n"), "{t}");
        assert!(!t.contains("# EOF"), "the text format has no EOF marker");
        for name in METRIC_NAMES {
            assert!(t.contains(&format!("\n{name}")), "{name} missing: {t}");
        }
        // And the list is complete: every family rendered is in it.
        for family in t.lines().filter_map(|l| l.strip_prefix("# TYPE ")).filter_map(|l| l.split(' ').next()) {
            assert!(METRIC_NAMES.contains(&family), "{family} is exported but not in METRIC_NAMES");
        }
    }

    #[test]
    fn openmetrics_names_families_without_total_and_ends_with_eof() {
        let t = render(&snapshot(), Exposition::OpenMetrics);
        assert!(t.contains("# TYPE latscope_timer_overruns counter\n"), "{t}");
        assert!(t.contains("latscope_timer_overruns_total{cpu=\"1\"} 2\n"), "{t}");
        assert!(t.ends_with("# EOF\n"), "{t}");
    }

    #[test]
    fn no_noise_series_when_noise_is_not_sampled() {
        let mut s = snapshot();
        s.cpus[0].noise = None;
        let t = render(&s, Exposition::Text);
        assert!(!t.contains("latscope_noise"), "{t}");
    }

    #[test]
    fn negotiates_openmetrics_only_when_asked() {
        let prometheus = "application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1";
        assert_eq!(Exposition::negotiate(Some(prometheus)), Exposition::OpenMetrics);
        assert_eq!(Exposition::negotiate(Some("text/plain")), Exposition::Text);
        assert_eq!(Exposition::negotiate(Some("*/*")), Exposition::Text);
        assert_eq!(Exposition::negotiate(None), Exposition::Text);
        assert_eq!(Exposition::negotiate(Some("application/openmetrics-text; q=0, text/plain")), Exposition::Text);
    }
}
