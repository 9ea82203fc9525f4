//! The kernel command line (`/proc/cmdline`) and the latency-relevant boot parameters picked out of it.

use super::read_fact::read_string;
use latscope_model::facts::BootParams;
use latscope_model::Fact;

/// Where the kernel shows its command line.
pub const CMDLINE: &str = "/proc/cmdline";

/// Reads and parses `/proc/cmdline`.
pub fn read_boot_params() -> Fact<BootParams> {
    read_string(CMDLINE).map(|raw| parse_boot_params(&raw))
}

/// Splits a command line into words, honouring double quotes (`acpi_osi="Windows 2020"`).
fn words(raw: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut quoted = false;
    for c in raw.chars() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => {
                if !cur.is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
            }
            c => cur.push(c),
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Parses a command line. Parameters after `--` belong to init and are ignored; the last occurrence of a
/// parameter wins, as in the kernel.
pub fn parse_boot_params(raw: &str) -> BootParams {
    let mut b = BootParams { raw: raw.trim().to_string(), ..BootParams::default() };
    for w in words(raw) {
        if w == "--" {
            break;
        }
        let (key, value) = match w.split_once('=') {
            Some((k, v)) => (k.to_string(), Some(v.to_string())),
            None => (w.clone(), None),
        };
        // The kernel treats '-' and '_' in parameter names alike.
        let key = key.replace('-', "_");
        match (key.as_str(), value) {
            ("isolcpus", v) => b.isolcpus = v,
            ("nohz_full", v) => b.nohz_full = v,
            ("rcu_nocbs", v) => b.rcu_nocbs = Some(v.unwrap_or_default()),
            ("irqaffinity", v) => b.irqaffinity = v,
            ("idle", v) => b.idle = v,
            ("processor.max_cstate", v) => b.processor_max_cstate = v,
            ("intel_idle.max_cstate", v) => b.intel_idle_max_cstate = v,
            ("tsc", v) => b.tsc = v,
            ("clocksource", v) => b.clocksource = v,
            ("skew_tick", v) => b.skew_tick = v,
            ("nosoftlockup", _) => b.nosoftlockup = true,
            ("nowatchdog", _) => b.nowatchdog = true,
            ("nmi_watchdog", v) => b.nmi_watchdog = v,
            ("nosmt", v) => b.nosmt = Some(v.unwrap_or_default()),
            ("mitigations", v) => b.mitigations = v,
            ("preempt", v) => b.preempt = v,
            ("loglevel", v) => b.loglevel = v,
            ("quiet", _) => b.quiet = true,
            ("threadirqs", _) => b.threadirqs = true,
            ("rcu_nocb_poll", _) => b.rcu_nocb_poll = true,
            ("transparent_hugepage", v) => b.transparent_hugepage = v,
            ("console", Some(v)) => b.consoles.push(v),
            _ => {}
        }
    }
    b
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn picks_out_rt_parameters() {
        let b = parse_boot_params(
            "BOOT_IMAGE=/vmlinuz root=/dev/sda1 isolcpus=managed_irq,domain,2-3 nohz_full=2-3 rcu_nocbs=2-3 \
             irqaffinity=0-1 intel_idle.max_cstate=0 processor.max_cstate=1 idle=poll tsc=reliable skew_tick=1 \
             nosoftlockup nmi_watchdog=0 nosmt mitigations=off console=tty0 console=ttyS0,115200n8 quiet\n",
        );
        assert_eq!(b.isolcpus.as_deref(), Some("managed_irq,domain,2-3"));
        assert_eq!(b.nohz_full.as_deref(), Some("2-3"));
        assert_eq!(b.rcu_nocbs.as_deref(), Some("2-3"));
        assert_eq!(b.irqaffinity.as_deref(), Some("0-1"));
        assert_eq!(b.intel_idle_max_cstate.as_deref(), Some("0"));
        assert_eq!(b.processor_max_cstate.as_deref(), Some("1"));
        assert_eq!(b.idle.as_deref(), Some("poll"));
        assert_eq!(b.tsc.as_deref(), Some("reliable"));
        assert_eq!(b.skew_tick.as_deref(), Some("1"));
        assert!(b.nosoftlockup && b.quiet && !b.nowatchdog);
        assert_eq!(b.nmi_watchdog.as_deref(), Some("0"));
        assert_eq!(b.nosmt.as_deref(), Some(""));
        assert_eq!(b.mitigations.as_deref(), Some("off"));
        assert_eq!(b.consoles, vec!["tty0".to_string(), "ttyS0,115200n8".to_string()]);
        assert!(!b.raw.ends_with('\n'));
    }

    #[test]
    fn stops_at_init_arguments_and_handles_quotes() {
        let b = parse_boot_params("console=ttyS0 acpi_osi=\"Windows 2020\" quiet -- --nohz_full=1 isolcpus=1");
        assert_eq!(b.consoles, vec!["ttyS0".to_string()]);
        assert!(b.quiet);
        assert_eq!(b.isolcpus, None);
        assert_eq!(b.nohz_full, None);
    }
}
