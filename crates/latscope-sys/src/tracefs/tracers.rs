//! The kernel's tracers as tracefs lists them: whether one is built in, and which tracing directories (the
//! top level and each instance) run which tracer.

use std::path::{Path, PathBuf};

/// The kernel's `available_tracers` (`none` when empty or unreadable) when it lacks `tracer`; `None` when the
/// kernel has it. Callers say what the tracer needs.
pub(crate) fn lacking(root: &Path, tracer: &str) -> Option<String> {
    let tracers = std::fs::read_to_string(root.join("available_tracers")).unwrap_or_default();
    if tracers.split_whitespace().any(|t| t == tracer) {
        return None;
    }
    Some(if tracers.trim().is_empty() { "none".into() } else { tracers.trim().into() })
}

/// Each tracing directory with its `current_tracer`: the top level first, then the instances.
pub(crate) fn current_tracers(root: &Path) -> Vec<(String, String)> {
    let mut dirs: Vec<(String, PathBuf)> = vec![("the top-level tracing directory".into(), root.to_path_buf())];
    for e in std::fs::read_dir(root.join("instances")).into_iter().flatten().flatten() {
        dirs.push((format!("instances/{}", e.file_name().to_string_lossy()), e.path()));
    }
    dirs.into_iter()
        .filter_map(|(name, dir)| {
            let t = std::fs::read_to_string(dir.join("current_tracer")).ok()?;
            Some((name, t.trim().to_string()))
        })
        .collect()
}
