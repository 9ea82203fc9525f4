//! Every file and directory latscope writes (`--json`, `--perfetto`, `--report`, `record -o`,
//! `--fix-script`), in one place: all of a command's outputs are checked together before it measures (a
//! bad path, a foreign report directory or two outputs on one file fail at once); `-` is standard output;
//! a regular file is replaced atomically (written to a temporary file beside it, then renamed), while a
//! device, a FIFO or a symlink is written through, never replaced; a report directory is marked as
//! latscope's with a manifest, so that a later report replaces it completely and a directory latscope did
//! not write is refused (unless `--force`); what a killed latscope left behind is removed. Also whether a
//! stream is a terminal.

use crate::error::CliError;
use std::collections::BTreeSet;
use std::fs::{self, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::{FileTypeExt, MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What an output is, for the messages about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// `--json FILE`
    Json,
    /// `--perfetto FILE`
    Perfetto,
    /// `record -o FILE`
    Recording,
    /// `--report DIR`
    Report,
    /// `audit --fix-script FILE`
    FixScript,
}

impl Kind {
    /// The flag that names this output.
    pub fn flag(self) -> &'static str {
        match self {
            Kind::Json => "--json",
            Kind::Perfetto => "--perfetto",
            Kind::Recording => "-o/--output",
            Kind::Report => "--report",
            Kind::FixScript => "--fix-script",
        }
    }
}

/// The file that marks a directory as a latscope report; it lists the files the report wrote.
pub const MANIFEST: &str = ".latscope-report";
const MANIFEST_HEAD: &str = "latscope report: files written by latscope, replaced by the next report here";

/// Whether a path means standard output.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// A command's outputs: file outputs (`Kind`, path) and at most one report directory.
#[derive(Debug, Default)]
pub struct Outputs<'a> {
    files: Vec<(Kind, &'a Path)>,
    report: Option<&'a Path>,
    force: bool,
}

impl<'a> Outputs<'a> {
    /// No outputs yet; `force`: a report may go into a directory latscope did not write.
    pub fn new(force: bool) -> Outputs<'a> {
        Outputs { force, ..Outputs::default() }
    }

    /// Adds a file output when given.
    pub fn file(mut self, kind: Kind, path: Option<&'a Path>) -> Self {
        if let Some(p) = path {
            self.files.push((kind, p));
        }
        self
    }

    /// Adds the report directory when given.
    pub fn report(mut self, dir: Option<&'a Path>) -> Self {
        self.report = dir.or(self.report);
        self
    }

    /// Whether one of the outputs is standard output (the text then goes to standard error).
    pub fn takes_stdout(&self) -> bool {
        self.files.iter().any(|(_, p)| is_stdout(p))
    }

    /// Checks every output before the command measures: each file can be written (a regular file's
    /// directory takes a new file; a device or FIFO is writable), the report directory is new, empty or
    /// latscope's (created when missing), at most one output is standard output, and no two outputs are
    /// one file. Leftovers of killed latscope processes beside the outputs are removed, and said so.
    pub fn check(&self) -> Result<(), CliError> {
        let mut seen: Vec<(Kind, &Path, Option<Identity>)> = Vec::new();
        let report = match self.report {
            Some(dir) => Some(prepare_report_dir(dir, self.force)?),
            None => None,
        };
        for &(kind, path) in &self.files {
            let dest = resolve(kind, path)?;
            match &dest {
                Dest::Stdout => {}
                Dest::Regular(real) => {
                    if real.exists() {
                        writable(real).map_err(|e| cannot(kind, path, &e))?;
                    }
                    let dir = parent_of(real);
                    say_removed(&remove_leftovers(dir));
                    probe(dir).map_err(|e| cannot(kind, path, &e))?;
                }
                Dest::Through(p) => writable(p).map_err(|e| cannot(kind, path, &e))?,
            }
            let id = identity(&dest);
            if let (Some((rdir, rpath)), Dest::Regular(real)) = (&report, &dest) {
                if parent_of(real) == rdir.as_path() {
                    return Err(CliError(format!(
                        "{} {} is inside the --report directory {}, whose files the report replaces; write it \
                         elsewhere",
                        kind.flag(),
                        path.display(),
                        rpath.display()
                    )));
                }
            }
            if let Some((other, other_path, _)) = seen.iter().find(|(_, _, i)| id.is_some() && *i == id) {
                let what = if matches!(dest, Dest::Stdout) { "standard output" } else { "the same file" };
                return Err(CliError(format!(
                    "{} {} and {} {} are {what}: one would overwrite the other; give each output its own path",
                    other.flag(),
                    other_path.display(),
                    kind.flag(),
                    path.display()
                )));
            }
            seen.push((kind, path, id));
        }
        Ok(())
    }
}

/// Where a file output goes, once resolved.
#[derive(Debug)]
enum Dest {
    /// `-`.
    Stdout,
    /// A regular file, or no file yet, at this real path (symlinks resolved): replaced through a temporary
    /// file beside it.
    Regular(PathBuf),
    /// A device or a FIFO (or a symlink to one): opened and written in place, never replaced.
    Through(PathBuf),
}

/// What makes two outputs the same destination (`None`: never a clash, e.g. `/dev/null` twice).
#[derive(Debug, PartialEq, Eq)]
enum Identity {
    Stdout,
    Path(PathBuf),
    Node(u64, u64),
}

fn identity(dest: &Dest) -> Option<Identity> {
    match dest {
        Dest::Stdout => Some(Identity::Stdout),
        Dest::Regular(p) => Some(Identity::Path(p.clone())),
        Dest::Through(p) => {
            let m = fs::metadata(p).ok()?;
            (!m.file_type().is_char_device()).then(|| Identity::Node(m.dev(), m.ino()))
        }
    }
}

fn cannot(kind: Kind, path: &Path, e: &io::Error) -> CliError {
    if e.kind() == io::ErrorKind::BrokenPipe {
        return CliError(String::new());
    }
    let hint = if kind == Kind::Report { "pick another directory" } else { "pick a writable path, or '-' for stdout" };
    // A kernel filesystem refuses new files with "No such file": say what the directory is instead.
    let dir = if kind == Kind::Report { path } else { parent_of(path) };
    if let Some(fs) = on_kernel_fs(dir, e) {
        return CliError(format!(
            "cannot write {} {}: {} is on a {fs} filesystem, which takes no new files; {hint}",
            kind.flag(),
            path.display(),
            dir.display()
        ));
    }
    CliError(format!("cannot write {} {}: {e}; {hint}", kind.flag(), path.display()))
}

/// The kernel filesystem an existing `dir` is on, when `e` (refused: not found, permission) came from it.
fn on_kernel_fs(dir: &Path, e: &io::Error) -> Option<String> {
    let refused = matches!(e.kind(), io::ErrorKind::NotFound | io::ErrorKind::PermissionDenied);
    (refused && dir.is_dir()).then(|| kernel_fs(dir)).flatten()
}

/// The type of the kernel filesystem `dir` is on (`proc`, `sysfs`, `tracefs`…), from /proc/mounts (the
/// longest mount point that holds it); `None` for any other filesystem.
fn kernel_fs(dir: &Path) -> Option<String> {
    const KERNEL: [&str; 8] = ["proc", "sysfs", "tracefs", "debugfs", "cgroup", "cgroup2", "securityfs", "configfs"];
    let real = fs::canonicalize(dir).ok()?;
    let mounts = fs::read_to_string("/proc/mounts").ok()?;
    let (_, fs) = mounts
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.len() > 2 && real.starts_with(f[1])).then(|| (f[1].len(), f[2].to_string()))
        })
        .max_by_key(|(len, _)| *len)?;
    KERNEL.contains(&fs.as_str()).then_some(fs)
}

fn resolve(kind: Kind, path: &Path) -> Result<Dest, CliError> {
    if is_stdout(path) {
        return Ok(Dest::Stdout);
    }
    let fail = |why: String| CliError(format!("{} {}: {why}", kind.flag(), path.display()));
    match fs::metadata(path) {
        Ok(m) if m.is_dir() => Err(fail("is a directory; give a file name".into())),
        Ok(m) if m.file_type().is_socket() => Err(fail("is a socket; give a file, a device or a FIFO".into())),
        Ok(m) if m.is_file() => fs::canonicalize(path).map(Dest::Regular).map_err(|e| fail(e.to_string())),
        Ok(_) => Ok(Dest::Through(path.to_path_buf())),
        Err(e) if e.kind() == io::ErrorKind::NotFound => real_new_path(path).map(Dest::Regular).map_err(fail),
        Err(e) => Err(fail(format!("{e}; pick a path you can write"))),
    }
}

/// The real path a new file at `path` will have: a dangling symlink is followed to where it points, the
/// directory is resolved.
fn real_new_path(path: &Path) -> Result<PathBuf, String> {
    let mut p = path.to_path_buf();
    for _ in 0..40 {
        match fs::read_link(&p) {
            Ok(target) => p = if target.is_absolute() { target } else { parent_of(&p).join(target) },
            Err(_) => break,
        }
    }
    let name = p.file_name().ok_or_else(|| "has no file name; give a file path".to_string())?.to_owned();
    let dir = parent_of(&p);
    let real = fs::canonicalize(dir).map_err(|e| format!("its directory {}: {e}; create it first", dir.display()))?;
    if !real.is_dir() {
        return Err(format!("{} is not a directory", dir.display()));
    }
    Ok(real.join(name))
}

fn parent_of(p: &Path) -> &Path {
    p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."))
}

/// The temporary file a regular file is written to before the rename: `.NAME.latscope-PID.partial`.
fn temp_path(real: &Path) -> PathBuf {
    let name = real.file_name().map_or_else(|| "output".into(), |n| n.to_string_lossy().into_owned());
    parent_of(real).join(format!(".{name}.latscope-{}.partial", std::process::id()))
}

/// Proves that `dir` takes a new file: creates and removes a probe.
fn probe(dir: &Path) -> io::Result<()> {
    let p = dir.join(format!(".probe.latscope-{}.partial", std::process::id()));
    OpenOptions::new().write(true).create_new(true).open(&p)?;
    fs::remove_file(&p)
}

/// Whether this process may write `path` (a device or FIFO; opening a FIFO would wait for its reader).
fn writable(path: &Path) -> io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).map_err(io::Error::other)?;
    // SAFETY: access only reads the NUL-terminated path.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Writes one output through `write`: to stdout for `-`, in place for a device or FIFO, and for a regular
/// file to a temporary file that replaces it only when complete (nothing is left on failure, a full disk
/// included). The error names the flag and the path.
pub fn write_file<T>(
    kind: Kind,
    path: &Path,
    write: impl FnOnce(&mut dyn Write) -> io::Result<T>,
) -> Result<T, CliError> {
    let fail = |e: io::Error| cannot(kind, path, &e);
    match resolve(kind, path)? {
        Dest::Stdout => {
            let mut out = io::stdout().lock();
            let v = write(&mut out).map_err(fail)?;
            out.flush().map_err(fail)?;
            Ok(v)
        }
        Dest::Through(p) => {
            let f = OpenOptions::new().write(true).open(p).map_err(fail)?;
            let mut w = BufWriter::with_capacity(1 << 16, f);
            let v = write(&mut w).map_err(fail)?;
            w.flush().map_err(fail)?;
            Ok(v)
        }
        Dest::Regular(real) => replace(&real, write).map_err(fail),
    }
}

/// Writes `real` through a temporary file beside it, renamed over it once complete and on disk; the old
/// file's permissions are kept. The temporary file is removed on any failure.
fn replace<T>(real: &Path, write: impl FnOnce(&mut dyn Write) -> io::Result<T>) -> io::Result<T> {
    // A file its owner made read-only for us is not replaced behind its back.
    if real.exists() {
        writable(real)?;
    }
    let tmp = temp_path(real);
    let file = OpenOptions::new().write(true).create_new(true).mode(0o666).open(&tmp)?;
    let done = (|| {
        let mut w = BufWriter::with_capacity(1 << 16, file);
        let v = write(&mut w)?;
        let f = w.into_inner().map_err(io::IntoInnerError::into_error)?;
        f.sync_all()?;
        if let Ok(old) = fs::metadata(real) {
            fs::set_permissions(&tmp, old.permissions())?;
        }
        fs::rename(&tmp, real)?;
        Ok(v)
    })();
    if done.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    done
}

/// The directory a recording spools into while it runs: beside a regular output (one file system, one
/// rename), in the temporary directory for a device, FIFO or stdout. Leftovers of killed latscope
/// processes there are removed first, and said so.
pub fn spool_parent(path: &Path) -> Result<PathBuf, CliError> {
    let dir = match resolve(Kind::Recording, path)? {
        Dest::Regular(real) => parent_of(&real).to_path_buf(),
        Dest::Stdout | Dest::Through(_) => std::env::temp_dir(),
    };
    say_removed(&remove_leftovers(&dir));
    Ok(dir)
}

fn say_removed(removed: &[String]) {
    for r in removed {
        eprintln!("latscope: removed {r}");
    }
}

/// Removes from `dir` what latscope processes that are gone left behind (`.NAME.latscope-PID` spool
/// directories, `.NAME.latscope-PID.partial` files); returns what was removed, each with its process.
pub fn remove_leftovers(dir: &Path) -> Vec<String> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let mut removed = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(pid) = leftover_pid(&name) else { continue };
        if pid == std::process::id() || process_alive(pid) {
            continue;
        }
        let p = e.path();
        let gone = match e.file_type() {
            Ok(t) if t.is_dir() => fs::remove_dir_all(&p),
            _ => fs::remove_file(&p),
        };
        if gone.is_ok() {
            removed.push(format!("{} left by dead process {pid}", p.display()));
        }
    }
    removed
}

/// `.x.dat.latscope-4242` or `.x.json.latscope-4242.partial` → 4242.
fn leftover_pid(name: &str) -> Option<u32> {
    if !name.starts_with('.') {
        return None;
    }
    let (_, rest) = name.rsplit_once(".latscope-")?;
    let digits = rest.strip_suffix(".partial").unwrap_or(rest);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

fn process_alive(pid: u32) -> bool {
    let Ok(pid) = libc::pid_t::try_from(pid) else { return false };
    // SAFETY: signal 0 only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 || *libc::__errno_location() == libc::EPERM }
}

/// Checks (and creates when missing) a report directory: `-` and non-directories are refused, and so is a
/// non-empty directory latscope did not write unless `force`. Returns its real path and the path given.
fn prepare_report_dir(dir: &Path, force: bool) -> Result<(PathBuf, PathBuf), CliError> {
    let flag = Kind::Report.flag();
    if is_stdout(dir) {
        return Err(CliError(format!(
            "{flag} -: a report is a directory (index.html, plots, JSON); give a directory name (--json - writes \
             the result to stdout)"
        )));
    }
    match fs::metadata(dir) {
        Ok(m) if !m.is_dir() => {
            return Err(CliError(format!("{flag} {}: is not a directory; give a directory name", dir.display())))
        }
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => fs::create_dir_all(dir).map_err(|e| {
            let why = match on_kernel_fs(parent_of(dir), &e) {
                Some(fs) => {
                    format!("{} is on a {fs} filesystem, which takes no new directories", parent_of(dir).display())
                }
                None => e.to_string(),
            };
            CliError(format!(
                "cannot create the report directory {}: {why}; pick another with {flag} DIR",
                dir.display()
            ))
        })?,
        Err(e) => return Err(cannot(Kind::Report, dir, &e)),
    }
    if read_manifest(dir).is_none() && !force {
        let mut entries = fs::read_dir(dir).map_err(|e| cannot(Kind::Report, dir, &e))?;
        if entries.next().is_some() {
            return Err(CliError(format!(
                "{flag} {}: the directory is not empty and holds no latscope report; pick a new or empty directory, \
                 or add --force to write the report's files into it (files of the same names are replaced, others \
                 kept)",
                dir.display()
            )));
        }
    }
    let real = fs::canonicalize(dir).map_err(|e| cannot(Kind::Report, dir, &e))?;
    say_removed(&remove_leftovers(&real));
    probe(&real).map_err(|e| cannot(Kind::Report, dir, &e))?;
    Ok((real, dir.to_path_buf()))
}

/// The files a previous latscope report in `dir` wrote (`None`: no latscope report there).
fn read_manifest(dir: &Path) -> Option<Vec<String>> {
    let text = fs::read_to_string(dir.join(MANIFEST)).ok()?;
    let mut lines = text.lines();
    (lines.next()? == MANIFEST_HEAD).then(|| lines.filter(|n| plain_name(n)).map(str::to_string).collect())
}

/// A file name inside the directory (no path, nothing hidden).
fn plain_name(n: &str) -> bool {
    !n.is_empty() && !n.contains('/') && !n.starts_with('.')
}

fn write_manifest(dir: &Path, names: &BTreeSet<&str>) -> io::Result<()> {
    replace(&dir.join(MANIFEST), |w| {
        writeln!(w, "{MANIFEST_HEAD}")?;
        names.iter().try_for_each(|n| writeln!(w, "{n}"))
    })
}

/// Writes a report directory: `files` (name, bytes), with `index.html` among them. A previous latscope
/// report there is replaced completely (its files that this one does not write are removed); a directory
/// latscope did not write is refused unless `force` (then only files of the same names are replaced).
/// Returns the path of `index.html`.
pub fn write_report(dir: &Path, force: bool, files: &[(String, Vec<u8>)]) -> Result<PathBuf, CliError> {
    let (real, _) = prepare_report_dir(dir, force)?;
    let fail = |p: &Path, e: io::Error| cannot(Kind::Report, p, &e);
    let old = read_manifest(&real).unwrap_or_default();
    let new: BTreeSet<&str> = files.iter().map(|(n, _)| n.as_str()).collect();
    if let Some(bad) = new.iter().find(|n| !plain_name(n)) {
        return Err(CliError(format!("internal: report file name '{bad}' is not a plain name")));
    }
    // Listed before they are written: a report cut short is still known as latscope's.
    let all: BTreeSet<&str> = new.iter().copied().chain(old.iter().map(String::as_str)).collect();
    let written = write_manifest(&real, &all).map_err(|e| fail(dir, e)).and_then(|()| {
        files.iter().try_for_each(|(name, bytes)| write_file(Kind::Report, &dir.join(name), |w| w.write_all(bytes)))
    });
    if let Err(e) = written {
        // Half a report (a full disk) would pass for a whole one: remove what latscope wrote there.
        for name in all.iter().chain([&MANIFEST]) {
            let p = real.join(name);
            if fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
                let _ = fs::remove_file(&p);
            }
        }
        let _ = fs::remove_dir(&real);
        return Err(CliError(format!("{}; the incomplete report in {} was removed", e.0, dir.display())));
    }
    for stale in old.iter().filter(|n| !new.contains(n.as_str())) {
        let p = real.join(stale);
        if fs::symlink_metadata(&p).is_ok_and(|m| m.is_file()) {
            fs::remove_file(&p).map_err(|e| fail(&p, e))?;
        }
    }
    write_manifest(&real, &new).map_err(|e| fail(dir, e))?;
    Ok(dir.join("index.html"))
}

/// The default report directory `BASE` (or `BASE-2`, `BASE-3` … when taken), created here so that two
/// runs started in the same second never share one.
pub fn new_report_dir(base: &str) -> Result<PathBuf, CliError> {
    for n in 1..1000 {
        let p = PathBuf::from(if n == 1 { base.to_string() } else { format!("{base}-{n}") });
        match fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(cannot(Kind::Report, &p, &e)),
        }
    }
    Err(CliError(format!("{base}-2 … {base}-999 all exist; give a directory with --report DIR")))
}

/// Writes a rendered text report: to stdout, or to stderr when an output takes stdout (`--json -`).
pub fn write_text(render: impl FnOnce(&mut dyn Write) -> io::Result<()>, stdout_taken: bool) -> io::Result<()> {
    let mut text = Vec::new();
    render(&mut text)?;
    if stdout_taken {
        io::stderr().write_all(&text)
    } else {
        let mut out = io::stdout().lock();
        out.write_all(&text)?;
        out.flush()
    }
}

/// Whether standard output is a terminal.
pub fn stdout_is_terminal() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(libc::STDOUT_FILENO) == 1 }
}

/// Whether standard error is a terminal.
pub fn stderr_is_terminal() -> bool {
    // SAFETY: isatty only inspects the descriptor.
    unsafe { libc::isatty(libc::STDERR_FILENO) == 1 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(tag: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("latscope-output-{tag}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).expect("mkdir");
        d
    }

    #[test]
    fn leftover_names() {
        assert_eq!(leftover_pid(".x.dat.latscope-4242"), Some(4242));
        assert_eq!(leftover_pid(".x.json.latscope-17.partial"), Some(17));
        assert_eq!(leftover_pid("x.dat.latscope-17"), None);
        assert_eq!(leftover_pid(".x.latscope-report"), None);
        assert_eq!(leftover_pid(".x.latscope-12a"), None);
    }

    #[test]
    fn a_regular_file_is_replaced_and_a_symlink_written_through() {
        let d = scratch("link");
        let target = d.join("target.json");
        fs::write(&target, "old").expect("write");
        let link = d.join("link.json");
        std::os::unix::fs::symlink("target.json", &link).expect("symlink");
        write_file(Kind::Json, &link, |w| w.write_all(b"new")).expect("write through the link");
        assert!(fs::symlink_metadata(&link).expect("link").file_type().is_symlink());
        assert_eq!(fs::read_to_string(&target).expect("target"), "new");
        // A dangling link creates its target.
        let dangling = d.join("dangling.json");
        std::os::unix::fs::symlink("made.json", &dangling).expect("symlink");
        write_file(Kind::Json, &dangling, |w| w.write_all(b"made")).expect("write");
        assert_eq!(fs::read_to_string(d.join("made.json")).expect("made"), "made");
        assert!(fs::symlink_metadata(&dangling).expect("link").file_type().is_symlink());
        // A failed write leaves the old file and no temporary one.
        let e = write_file(Kind::Json, &target, |_| -> io::Result<()> { Err(io::Error::other("boom")) });
        assert!(e.is_err());
        assert_eq!(fs::read_to_string(&target).expect("target"), "new");
        let names: Vec<String> =
            fs::read_dir(&d).expect("ls").map(|e| e.expect("entry").file_name().to_string_lossy().into()).collect();
        assert!(names.iter().all(|n| !n.ends_with(".partial")), "{names:?}");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn a_report_replaces_its_predecessor_and_refuses_a_foreign_directory() {
        let d = scratch("report");
        let dir = d.join("rep");
        let file = |n: &str| (n.to_string(), n.as_bytes().to_vec());
        write_report(&dir, false, &[file("index.html"), file("a.svg")]).expect("first report");
        write_report(&dir, false, &[file("index.html"), file("b.svg")]).expect("second report");
        assert!(!dir.join("a.svg").exists(), "the first report's plot is gone");
        assert!(dir.join("b.svg").exists());
        let foreign = d.join("mine");
        fs::create_dir(&foreign).expect("mkdir");
        fs::write(foreign.join("index.html"), "my page").expect("write");
        let e = write_report(&foreign, false, &[file("index.html")]).expect_err("foreign");
        assert!(e.0.contains("holds no latscope report") && e.0.contains("--force"), "{e}");
        assert_eq!(fs::read_to_string(foreign.join("index.html")).expect("kept"), "my page");
        fs::write(foreign.join("notes.txt"), "keep").expect("write");
        write_report(&foreign, true, &[file("index.html")]).expect("forced");
        write_report(&foreign, false, &[file("index.html"), file("c.svg")]).expect("now latscope's");
        assert_eq!(fs::read_to_string(foreign.join("notes.txt")).expect("kept"), "keep");
        let _ = fs::remove_dir_all(&d);
    }

    #[test]
    fn clashing_outputs_are_refused() {
        let d = scratch("clash");
        let a = d.join("a.json");
        let same = d.join(".").join("a.json");
        let e = Outputs::new(false)
            .file(Kind::Json, Some(&a))
            .file(Kind::Perfetto, Some(&same))
            .check()
            .expect_err("same file");
        assert!(e.0.contains("are the same file"), "{e}");
        let dash = Path::new("-");
        let e = Outputs::new(false)
            .file(Kind::Json, Some(dash))
            .file(Kind::Perfetto, Some(dash))
            .check()
            .expect_err("stdout twice");
        assert!(e.0.contains("standard output"), "{e}");
        let null = Path::new("/dev/null");
        Outputs::new(false).file(Kind::Json, Some(null)).file(Kind::Perfetto, Some(null)).check().expect("null twice");
        let _ = fs::remove_dir_all(&d);
    }
}
