//! The preemption model in effect: `/sys/kernel/realtime`, the dynamic-preemption debugfs file, the
//! `preempt=` boot parameter of a `CONFIG_PREEMPT_DYNAMIC` kernel, else the build configuration.

use super::read_fact::read_string;
use latscope_model::facts::BootParams;
use latscope_model::Fact;
use std::collections::BTreeMap;

const REALTIME: &str = "/sys/kernel/realtime";
const DEBUGFS_PREEMPT: &str = "/sys/kernel/debug/sched/preempt";

/// The active entry of the debugfs file (`none voluntary (full) lazy` → `full`).
pub fn parse_debugfs_preempt(text: &str) -> Option<String> {
    let start = text.find('(')?;
    let end = text[start..].find(')')?;
    Some(text[start + 1..start + end].to_string())
}

/// The model a config builds by default (`CONFIG_PREEMPT_RT` → `rt`…).
pub fn model_from_config(config: &BTreeMap<String, String>) -> Option<&'static str> {
    let on = |k: &str| config.get(k).is_some_and(|v| v == "y");
    if on("CONFIG_PREEMPT_RT") {
        Some("rt")
    } else if on("CONFIG_PREEMPT_LAZY") {
        Some("lazy")
    } else if on("CONFIG_PREEMPT") {
        Some("full")
    } else if on("CONFIG_PREEMPT_VOLUNTARY") {
        Some("voluntary")
    } else if on("CONFIG_PREEMPT_NONE") {
        Some("none")
    } else {
        None
    }
}

/// Works out the preemption model and whether it is switchable (`CONFIG_PREEMPT_DYNAMIC`).
pub fn read_preemption(
    version: Option<&str>,
    config: Option<&BTreeMap<String, String>>,
    boot: Option<&BootParams>,
) -> (Fact<String>, Fact<bool>) {
    let dynamic = match (config, version) {
        (Some(c), _) if c.contains_key("CONFIG_PREEMPT_DYNAMIC") => {
            Fact::known(c.get("CONFIG_PREEMPT_DYNAMIC").is_some_and(|v| v == "y"), "kernel config")
        }
        (_, Some(v)) => Fact::known(v.contains("PREEMPT_DYNAMIC"), "/proc/sys/kernel/version"),
        _ => Fact::unknown("kernel config", "neither the kernel config nor its version string is readable"),
    };
    if read_string(REALTIME).get().map(String::as_str) == Some("1") {
        return (Fact::known("rt".into(), REALTIME), dynamic);
    }
    if version.is_some_and(|v| v.contains("PREEMPT_RT")) {
        return (Fact::known("rt".into(), "/proc/sys/kernel/version"), dynamic);
    }
    let debugfs = read_string(DEBUGFS_PREEMPT);
    if let Some(m) = debugfs.get().and_then(|t| parse_debugfs_preempt(t)) {
        return (Fact::known(m, DEBUGFS_PREEMPT), dynamic);
    }
    let debugfs_note = debugfs.note.unwrap_or_default();
    if dynamic.get() == Some(&true) {
        if let Some(p) = boot.and_then(|b| b.preempt.clone()) {
            return (Fact::known(p, format!("/proc/cmdline preempt= ({debugfs_note})")), dynamic);
        }
    }
    if let Some(m) = config.and_then(model_from_config) {
        let from = if dynamic.get() == Some(&true) {
            format!("kernel config default of a PREEMPT_DYNAMIC kernel, no preempt= given ({debugfs_note})")
        } else {
            "kernel config".to_string()
        };
        return (Fact::known(m.to_string(), from), dynamic);
    }
    if let Some(v) = version {
        if dynamic.get() != Some(&true) {
            let m = if v.contains("PREEMPT_LAZY") {
                Some("lazy")
            } else if v.contains("PREEMPT ") || v.ends_with("PREEMPT") {
                Some("full")
            } else {
                None
            };
            if let Some(m) = m {
                return (Fact::known(m.to_string(), "/proc/sys/kernel/version"), dynamic);
            }
        }
    }
    let why = format!("{debugfs_note}; the kernel config is not readable and the version string does not say");
    (Fact::unknown(DEBUGFS_PREEMPT, why), dynamic)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_debugfs_and_config() {
        assert_eq!(parse_debugfs_preempt("none voluntary (full) lazy\n").as_deref(), Some("full"));
        assert_eq!(parse_debugfs_preempt("none"), None);
        let mut c = BTreeMap::new();
        c.insert("CONFIG_PREEMPT_NONE".to_string(), "y".to_string());
        c.insert("CONFIG_PREEMPT_DYNAMIC".to_string(), "y".to_string());
        assert_eq!(model_from_config(&c), Some("none"));
        c.insert("CONFIG_PREEMPT_RT".to_string(), "y".to_string());
        assert_eq!(model_from_config(&c), Some("rt"));
    }

    #[test]
    fn boot_parameter_overrides_dynamic_default() {
        let mut c = BTreeMap::new();
        c.insert("CONFIG_PREEMPT_NONE".to_string(), "y".to_string());
        c.insert("CONFIG_PREEMPT_DYNAMIC".to_string(), "y".to_string());
        let boot = BootParams { preempt: Some("full".into()), ..BootParams::default() };
        let (m, d) = read_preemption(Some("#1 SMP PREEMPT_DYNAMIC"), Some(&c), Some(&boot));
        assert_eq!(d.value, Some(true));
        // On a machine where debugfs is readable, it wins; otherwise the boot parameter does.
        if m.from.contains("cmdline") {
            assert_eq!(m.value.as_deref(), Some("full"));
        } else {
            assert!(m.value.is_some());
        }
    }
}
