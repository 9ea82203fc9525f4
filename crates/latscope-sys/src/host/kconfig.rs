//! The running kernel's build configuration (`/proc/config.gz`, else `/boot/config-<release>`), reduced to
//! the `CONFIG_*` options the audit judges.

use super::read_fact::why_unreadable;
use latscope_model::Fact;
use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

/// The options kept: preemption, tickless/isolation, tracers, BPF, MSR access, RT group scheduling.
pub const WANTED: &[&str] = &[
    "CONFIG_PREEMPT_NONE",
    "CONFIG_PREEMPT_VOLUNTARY",
    "CONFIG_PREEMPT",
    "CONFIG_PREEMPT_LAZY",
    "CONFIG_PREEMPT_RT",
    "CONFIG_PREEMPT_DYNAMIC",
    "CONFIG_HZ",
    "CONFIG_NO_HZ_FULL",
    "CONFIG_NO_HZ_IDLE",
    "CONFIG_CPU_ISOLATION",
    "CONFIG_RCU_NOCB_CPU",
    "CONFIG_RT_GROUP_SCHED",
    "CONFIG_FTRACE",
    "CONFIG_FUNCTION_TRACER",
    "CONFIG_FUNCTION_GRAPH_TRACER",
    "CONFIG_IRQSOFF_TRACER",
    "CONFIG_PREEMPT_TRACER",
    "CONFIG_SCHED_TRACER",
    "CONFIG_HWLAT_TRACER",
    "CONFIG_OSNOISE_TRACER",
    "CONFIG_TIMERLAT_TRACER",
    "CONFIG_KPROBE_EVENTS",
    "CONFIG_PREEMPTIRQ_TRACEPOINTS",
    "CONFIG_TRACE_IRQFLAGS",
    "CONFIG_HIST_TRIGGERS",
    "CONFIG_BPF_SYSCALL",
    "CONFIG_DEBUG_INFO_BTF",
    "CONFIG_X86_MSR",
    "CONFIG_LOCKUP_DETECTOR",
    "CONFIG_HARDLOCKUP_DETECTOR",
    "CONFIG_TRANSPARENT_HUGEPAGE",
];

/// Parses a kernel `.config` text, keeping the `wanted` options. `# CONFIG_X is not set` becomes `n`.
pub fn parse_config(text: &str, wanted: &[&str]) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let (name, value) = if let Some(rest) = line.strip_prefix("# ") {
            match rest.strip_suffix(" is not set") {
                Some(name) => (name, "n"),
                None => continue,
            }
        } else {
            match line.split_once('=') {
                Some((n, v)) => (n, v.trim_matches('"')),
                None => continue,
            }
        };
        if wanted.contains(&name) {
            out.insert(name.to_string(), value.to_string());
        }
    }
    out
}

fn read_gz(path: &Path) -> std::io::Result<String> {
    let file = std::fs::File::open(path)?;
    let mut text = String::new();
    flate2::read::GzDecoder::new(file).read_to_string(&mut text)?;
    Ok(text)
}

/// Reads the configuration of the running kernel (`release` is `uname -r`, for `/boot/config-<release>`).
pub fn read_config(release: Option<&str>) -> Fact<BTreeMap<String, String>> {
    let gz = Path::new("/proc/config.gz");
    let gz_err = match read_gz(gz) {
        Ok(text) => return Fact::known(parse_config(&text, WANTED), gz.display().to_string()),
        Err(e) => why_unreadable(gz, &e),
    };
    let Some(release) = release else {
        return Fact::unknown(gz.display().to_string(), gz_err);
    };
    let boot = Path::new("/boot").join(format!("config-{release}"));
    match std::fs::read_to_string(&boot) {
        Ok(text) => Fact::known(parse_config(&text, WANTED), boot.display().to_string()),
        Err(e) => Fact::unknown(
            format!("{} or {}", gz.display(), boot.display()),
            format!("{gz_err}; {} (CONFIG_IKCONFIG_PROC provides /proc/config.gz)", why_unreadable(&boot, &e)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_wanted_options() {
        let text = "CONFIG_HZ=250\n# CONFIG_FUNCTION_GRAPH_TRACER is not set\nCONFIG_FTRACE=y\nCONFIG_OTHER=y\n\
                    CONFIG_PREEMPT_DYNAMIC=y\n# comment\n";
        let c = parse_config(text, WANTED);
        assert_eq!(c.get("CONFIG_HZ").map(String::as_str), Some("250"));
        assert_eq!(c.get("CONFIG_FUNCTION_GRAPH_TRACER").map(String::as_str), Some("n"));
        assert_eq!(c.get("CONFIG_FTRACE").map(String::as_str), Some("y"));
        assert!(!c.contains_key("CONFIG_OTHER"));
    }

    #[test]
    fn reads_this_kernel_config_when_present() {
        let f = read_config(None);
        match f.value {
            Some(c) => assert!(c.contains_key("CONFIG_FTRACE") || c.contains_key("CONFIG_HZ"), "{c:?}"),
            None => assert!(f.note.is_some()),
        }
    }
}
