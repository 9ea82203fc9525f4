//! Collects the [`RunMetadata`] every result carries: kernel, preemption model, CPU, hypervisor, clock.

use super::read_opt;
use latscope_model::facts::{KernelFacts, SystemFacts};
use latscope_model::RunMetadata;
use std::time::{SystemTime, UNIX_EPOCH};

/// Reads what can be read without privileges; anything unreadable is left empty, never guessed. The
/// preemption model and the hypervisor come from `facts` (the audit's reading), so a result's header and
/// its findings agree and nothing is read twice.
pub fn run_metadata(args: Vec<String>, facts: &SystemFacts) -> RunMetadata {
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    let kernel_version = read_opt("/proc/sys/kernel/version").unwrap_or_default();
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    RunMetadata {
        tool_version: env!("CARGO_PKG_VERSION").to_string(),
        args,
        hostname: read_opt("/proc/sys/kernel/hostname").unwrap_or_default(),
        kernel_release: read_opt("/proc/sys/kernel/osrelease").unwrap_or_default(),
        preemption_model: preemption_model(&facts.kernel),
        kernel_version,
        kernel_cmdline: read_opt("/proc/cmdline").unwrap_or_default(),
        cpu_model: cpu_model(&cpuinfo),
        cpu_count: super::cpus::online_cpus().map(|l| l.len() as u32).unwrap_or(0),
        hypervisor: facts.hypervisor.detected().map(|(name, _)| name),
        clocksource: read_opt("/sys/devices/system/clocksource/clocksource0/current_clocksource").unwrap_or_default(),
        start_unix_s: now.as_secs_f64(),
        start_time: rfc3339(now.as_secs()),
        duration_ns: 0,
    }
}

/// The preemption model the audit read, with ` (dynamic)` on a switchable kernel; `unknown` when unread.
pub fn preemption_model(k: &KernelFacts) -> String {
    let model = k.preemption.get().cloned().unwrap_or_else(|| "unknown".into());
    if k.preempt_dynamic.get() == Some(&true) && model != "rt" {
        format!("{model} (dynamic)")
    } else {
        model
    }
}

fn cpu_model(cpuinfo: &str) -> String {
    cpuinfo
        .lines()
        .find(|l| l.starts_with("model name") || l.starts_with("Model") || l.starts_with("Hardware"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
        .unwrap_or_default()
}

/// Formats seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (civil-from-days, no time zone database).
pub fn rfc3339(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (h, m, s) = (rem / 3600, rem % 3600 / 60, rem % 60);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let mo = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = if mo <= 2 { y + 1 } else { y };
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{m:02}:{s:02}Z")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(1_795_000_000), "2026-11-18T11:06:40Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn reads_cpu_model() {
        assert_eq!(cpu_model("processor\t: 0\nmodel name\t: Intel(R) Xeon(R)\n"), "Intel(R) Xeon(R)");
    }
}
