//! `--textfile DIR`: the metrics in the Prometheus text format as `DIR/latscope.prom`, replaced atomically
//! (written to a temporary file in the same directory, then renamed), as node_exporter's textfile
//! collector requires.

use crate::error::CliError;
use latscope_model::MonitorSnapshot;
use latscope_report::prometheus::{render, Exposition};
use std::io::Write;
use std::path::Path;

/// The file written in the directory.
pub const FILE: &str = "latscope.prom";

/// Checks at the start that the directory exists, so a typo ends the run at once.
pub fn check_dir(dir: &Path) -> Result<(), CliError> {
    if dir.is_dir() {
        Ok(())
    } else {
        Err(CliError(format!(
            "--textfile {}: not a directory; give node_exporter's --collector.textfile.directory",
            dir.display()
        )))
    }
}

/// Writes the snapshot to `dir/latscope.prom` atomically.
pub fn write(dir: &Path, snapshot: &MonitorSnapshot) -> Result<(), CliError> {
    let target = dir.join(FILE);
    // node_exporter reads only `*.prom`: the temporary name is not one.
    let tmp = dir.join(format!(".{FILE}.{}.tmp", std::process::id()));
    let fail = |e: std::io::Error| CliError(format!("--textfile: cannot write {}: {e}", tmp.display()));
    let mut f = std::fs::File::create(&tmp).map_err(fail)?;
    f.write_all(render(snapshot, Exposition::Text).as_bytes()).map_err(fail)?;
    f.sync_all().map_err(fail)?;
    drop(f);
    std::fs::rename(&tmp, &target).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        CliError(format!("--textfile: cannot rename {} to {}: {e}", tmp.display(), target.display()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary_behind() {
        let dir = std::env::temp_dir().join(format!("latscope-textfile-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let mut s = MonitorSnapshot { version: "1".into(), ..MonitorSnapshot::default() };
        write(&dir, &s).expect("first");
        s.version = "2".into();
        write(&dir, &s).expect("second");
        let text = std::fs::read_to_string(dir.join(FILE)).expect("read");
        assert!(text.contains("latscope_build_info{version=\"2\"} 1"), "{text}");
        let names: Vec<_> = std::fs::read_dir(&dir).expect("ls").flatten().map(|e| e.file_name()).collect();
        assert_eq!(names, [std::ffi::OsString::from(FILE)]);
        assert!(check_dir(&dir.join(FILE)).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
