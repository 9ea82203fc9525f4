//! `latscope record`: record the latency event set (optionally while a command runs) into a trace-cmd
//! `.dat` file (v6; v7 zstd-compressed with `--compress`), for `latscope analyze`/`decode` or `trace-cmd report` elsewhere; `--json` says what it
//! recorded. The pages spool beside the output while recording; the file is written through the output
//! module (a regular file replaced only when complete, a device or FIFO written through). A command that
//! fails makes `record` exit with its code.

use crate::args::{CpuArgs, DurationArg, StacksArg};
use crate::beside::Beside;
use crate::capture::decoder_for;
use crate::error::{CliError, CmdResult, Outcome};
use crate::output::{self, is_stdout, write_file, write_text, Kind, Outputs};
use crate::signal;
use latscope_decode::{write_dat_v6, write_dat_v7_zstd, DatCpu, DatInput, DatSummary, DecodeError, Missed, PageSource};
use latscope_model::{CpuId, Nanos, RecordResult, RecordedCpu};
use latscope_report::json::write_json;
use latscope_sys::tracefs::{
    kallsyms_text, Capture, CaptureConfig, CaptureData, CaptureReport, EventSelection, Retention, StackSpec,
};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

/// Arguments of `latscope record`.
#[derive(clap::Args, Debug)]
#[command(
    mut_arg("cpus", |a| a.help("CPUs to record (e.g. `1,3-5`); default: every online CPU")),
    mut_arg("duration", |a| a.help("Stop after this long (e.g. `10s`); without it, record until COMMAND exits or Ctrl-C"))
)]
pub struct Args {
    /// The `.dat` file to write (trace-cmd format, version 6, or 7 with `--compress`; `-` for stdout, the summary
    /// then goes to stderr).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: PathBuf,
    /// Also write what was recorded (per CPU pages, events, lost events; events by name; the command's end)
    /// as JSON to FILE (`-` for stdout)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    #[command(flatten)]
    cpus: CpuArgs,
    #[command(flatten)]
    duration: DurationArg,
    /// `default` (the latency set), or a comma list of `default`, `SYSTEM`, `SYSTEM/EVENT`.
    #[arg(long, value_name = "LIST", default_value = "default")]
    events: String,
    /// Ring-buffer size per recorded CPU, in KiB.
    #[arg(long = "buffer-kb", value_name = "KIB", default_value_t = 4096)]
    buffer_kb: u32,
    /// Do not store kernel symbols (/proc/kallsyms text symbols, a few MB) in the file.
    #[arg(long)]
    no_kallsyms: bool,
    #[command(flatten)]
    stacks: StacksArg,
    /// Write the `.dat` compressed (trace-cmd format version 7, zstd, as `trace-cmd record --compression
    /// zstd` does; trace-cmd 3.x reads it): several times smaller, for long captures.
    #[arg(long)]
    compress: bool,
    /// The command to run while recording (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,
}

/// Runs `latscope record`.
pub fn run(args: Args) -> CmdResult {
    // The capture checks the CPUs itself (and traces every online one without -c).
    let cpus = args.cpus.cpus.clone();
    let duration = args.duration.nonzero()?;
    let events = EventSelection::parse(&args.events).map_err(CliError::msg)?;
    let output = args.output.clone();
    let outputs = Outputs::new(false).file(Kind::Recording, Some(&output)).file(Kind::Json, args.json.as_deref());
    outputs.check()?;
    let stdout_taken = outputs.takes_stdout();
    // latscope's own threads (this one, the trace readers it starts) stay off the traced CPUs; the recorded
    // command runs where latscope was allowed to.
    let allowed = latscope_sys::measure::allowed_cpus().ok();
    let traced = match &cpus {
        Some(c) => c.clone(),
        None => latscope_sys::host::online_cpus().map_err(CliError::msg)?,
    };
    let mut warnings = Vec::new();
    let mut beside = Beside::start(&traced, &mut warnings);
    let spool = SpoolDir::create(&output)?;
    let cfg = CaptureConfig {
        cpus,
        events,
        buffer_kb: args.buffer_kb,
        retention: Retention::Spool(spool.0.clone()),
        tracefs_root: None,
        stacks: if args.stacks.no_stacks { Vec::new() } else { StackSpec::timer_interrupt() },
        tracer: None,
        ..CaptureConfig::default()
    };
    let capture = match Capture::start(&cfg) {
        Ok(c) => c,
        Err(e) => {
            render_capture_report(&mut std::io::stderr().lock(), &e.report)?;
            if e.report.instance.is_none() && !e.report.missing.is_empty() {
                return Err(CliError("cannot record: kernel tracing is not available (see 'missing' above)".into()));
            }
            return Err(CliError(format!("{e}")));
        }
    };
    {
        let mut err = std::io::stderr().lock();
        render_capture_report(&mut err, capture.report())?;
        writeln!(err, "latscope: recording into {} … (Ctrl-C to stop)", shown(&output))?;
    }
    let child = match args.command.split_first() {
        Some((prog, rest)) => Some({
            let mut cmd = Command::new(prog);
            cmd.args(rest);
            if let Some(cpus) = &allowed {
                latscope_sys::measure::run_on(&mut cmd, cpus);
            }
            cmd.spawn().map_err(|e| CliError(format!("cannot run '{prog}': {e}; check the command after '--'")))?
        }),
        None => None,
    };
    let started = Instant::now();
    let ended = wait(child, duration)?;
    beside.look_again(&mut warnings);
    let data = capture.finish().map_err(CliError::msg)?;
    let recorded_for = started.elapsed();
    let writing = Instant::now();
    let written = write_dat_with(&output, &data, !args.no_kallsyms, args.compress.then_some(spool.0.as_path()))?;
    let write_time = writing.elapsed();
    let counts = count_events(&data)?;
    let mut result = recorded(&output, &data, &written, &counts);
    result.format = if args.compress { "trace-cmd .dat v7, zstd" } else { "trace-cmd .dat v6" }.into();
    result.recorded_ns = recorded_for.as_nanos() as u64;
    result.write_ns = write_time.as_nanos() as u64;
    result.command = args.command.clone();
    result.command_status = ended.as_ref().map(|e| e.status.clone());
    result.warnings.extend(warnings);
    let mut text = Vec::new();
    render_summary(&mut text, &result)?;
    write_text(|out| out.write_all(&text), stdout_taken)?;
    if let Some(path) = &args.json {
        write_file(Kind::Json, path, |w| write_json(w, &result))?;
    }
    Ok(match ended.and_then(|e| e.failure) {
        Some(code) => Outcome::Child(code),
        None => Outcome::Ok,
    })
}

/// How the recorded command ended.
struct Ended {
    /// `exit status: 1`, with `(stopped by latscope)` when latscope ended it.
    status: String,
    /// The exit code to pass on when it failed on its own (128 + signal when a signal ended it).
    failure: Option<u8>,
}

fn shown(path: &Path) -> String {
    if is_stdout(path) {
        "standard output".into()
    } else {
        path.display().to_string()
    }
}

/// Waits for the command to exit, the duration to pass, or SIGINT/SIGTERM, whichever is first; a
/// command still running then gets SIGTERM. Returns how the command ended.
fn wait(mut child: Option<Child>, duration: Option<Nanos>) -> Result<Option<Ended>, CliError> {
    use std::os::unix::process::ExitStatusExt;
    let start = Instant::now();
    let limit = duration.map(|d| Duration::from_nanos(d.0));
    loop {
        if let Some(c) = child.as_mut() {
            if let Some(st) = c.try_wait()? {
                let failure = match (st.code(), st.signal()) {
                    (Some(0), _) => None,
                    (Some(code), _) => Some(u8::try_from(code).unwrap_or(1)),
                    (None, Some(sig)) => Some(128 + u8::try_from(sig).unwrap_or(0).min(127)),
                    (None, None) => Some(1),
                };
                return Ok(Some(Ended { status: st.to_string(), failure }));
            }
        }
        let expired = limit.is_some_and(|l| start.elapsed() >= l);
        if signal::STOP.load(Ordering::SeqCst) || expired {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let Some(mut c) = child else { return Ok(None) };
    // SAFETY: kill with a pid we spawned and have not reaped.
    unsafe { libc::kill(c.id() as libc::pid_t, libc::SIGTERM) };
    let st = c.wait()?;
    Ok(Some(Ended { status: format!("{st} (stopped by latscope)"), failure: None }))
}

/// The spool directory `.NAME.latscope-PID` next to a regular output (same file system; in the temporary
/// directory for a device, FIFO or stdout), removed on drop; one that a killed `record` left is removed by
/// the next ([`output::spool_parent`]).
struct SpoolDir(PathBuf);

impl SpoolDir {
    fn create(output: &Path) -> Result<SpoolDir, CliError> {
        let parent = output::spool_parent(output)?;
        let name = match output.file_name() {
            Some(n) if !is_stdout(output) => n.to_string_lossy().into_owned(),
            _ => "trace".into(),
        };
        let dir = parent.join(format!(".{name}.latscope-{}", std::process::id()));
        std::fs::create_dir(&dir)
            .map_err(|e| CliError(format!("cannot create {}: {e}; pick a writable output directory", dir.display())))?;
        Ok(SpoolDir(dir))
    }
}

impl Drop for SpoolDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Writes the `.dat` (see [`write_file`]: nothing is left of a regular file that could not be written,
/// on a full disk either); returns its size.
pub(crate) fn write_dat(output: &Path, data: &CaptureData, kallsyms: bool) -> Result<u64, CliError> {
    write_dat_with(output, data, kallsyms, None).map(|s| s.bytes)
}

/// [`write_dat`], v7 zstd-compressed when given a directory for the scratch file of compressed pages;
/// returns what was written.
fn write_dat_with(
    output: &Path,
    data: &CaptureData,
    kallsyms: bool,
    compress_in: Option<&Path>,
) -> Result<DatSummary, CliError> {
    let syms = if kallsyms { kallsyms_text(true) } else { String::new() };
    let mut cpus = Vec::new();
    for c in &data.cpus {
        let pages = match &c.spool {
            Some(p) => {
                let fail = |e: std::io::Error| CliError(format!("cannot read the spooled pages {}: {e}", p.display()));
                let file = std::fs::File::open(p).map_err(fail)?;
                let len = file.metadata().map_err(fail)?.len();
                PageSource::Stream {
                    name: p.display().to_string(),
                    len,
                    reader: Box::new(std::io::BufReader::new(file)),
                }
            }
            None => PageSource::Pages(c.pages.iter().map(|p| p.data.as_slice()).collect()),
        };
        cpus.push(DatCpu { cpu: c.cpu, pages, stats: c.stats.as_ref().map(|s| s.text.as_str()) });
    }
    let f = &data.formats;
    let uname = uname();
    let version = format!("latscope {}", env!("CARGO_PKG_VERSION"));
    let input = DatInput {
        header_page: &f.header_page,
        header_event: &f.header_event,
        formats: f.formats.iter().map(|x| (x.system.as_str(), x.text.as_str())).collect(),
        page_size: f.page_size,
        big_endian: f.big_endian,
        long_size: f.long_size,
        clock: &f.clock,
        kallsyms: &syms,
        printk_formats: &data.printk_formats,
        cmdlines: &data.cmdlines,
        cpus,
        uname: &uname,
        version: &version,
    };
    let name = shown(output);
    let io_error = |e: DecodeError| match e {
        DecodeError::Write { source, .. } => source,
        other => std::io::Error::other(other.to_string()),
    };
    match compress_in {
        None => write_file(Kind::Recording, output, |w| write_dat_v6(w, input, &name).map_err(io_error)),
        Some(dir) => {
            let path = dir.join("compressed.chunks");
            let fail = |e: std::io::Error| CliError(format!("cannot create {}: {e}", path.display()));
            let mut scratch =
                std::fs::OpenOptions::new().read(true).write(true).create_new(true).open(&path).map_err(fail)?;
            // Each chunk is a few writes of ~40 KB pages' worth: unbuffered is fine.
            let r = write_file(Kind::Recording, output, |w| {
                write_dat_v7_zstd(w, input, &mut scratch, &name).map_err(io_error)
            });
            let _ = std::fs::remove_file(&path);
            r
        }
    }
}

fn uname() -> String {
    // SAFETY: utsname is plain data filled by uname; its fields are NUL-terminated.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return String::new();
        }
        let f = |a: &[libc::c_char]| std::ffi::CStr::from_ptr(a.as_ptr()).to_string_lossy().into_owned();
        format!("{} {} {} {} {}", f(&u.sysname), f(&u.nodename), f(&u.release), f(&u.version), f(&u.machine))
    }
}

/// Events decoded per CPU and per event name, and lost events the pages flagged.
#[derive(Debug, Default)]
struct Counts {
    per_cpu: BTreeMap<CpuId, u64>,
    per_event: BTreeMap<String, u64>,
    lost_flagged: BTreeMap<CpuId, u64>,
    lost_unknown: BTreeSet<CpuId>,
    warnings: Vec<String>,
}

/// Decodes every recorded page once, to count what the file holds (and prove it decodes).
fn count_events(data: &CaptureData) -> Result<Counts, CliError> {
    let mut dec = decoder_for(&data.formats, &data.cmdlines)?;
    let mut counts = Counts::default();
    let ps = data.formats.page_size;
    for c in &data.cpus {
        let mut page_fn = |page: &[u8], counts: &mut Counts| {
            let s = dec.decode_page(c.cpu, page, &mut |e| {
                *counts.per_cpu.entry(e.cpu).or_insert(0) += 1;
                *counts.per_event.entry(e.kind.name().to_string()).or_insert(0) += 1;
            });
            match s.missed {
                Missed::Count(n) => *counts.lost_flagged.entry(c.cpu).or_insert(0) += n,
                Missed::Unknown => {
                    counts.lost_unknown.insert(c.cpu);
                }
                Missed::None => {}
            }
            counts.warnings.extend(s.warnings.into_iter().map(|w| format!("CPU {}: {w}", c.cpu)));
        };
        for p in &c.pages {
            page_fn(&p.data, &mut counts);
        }
        if let Some(path) = &c.spool {
            let mut f = std::fs::File::open(path).map_err(|e| CliError(format!("{}: {e}", path.display())))?;
            let mut buf = vec![0u8; ps];
            while f.read_exact(&mut buf).is_ok() {
                page_fn(&buf, &mut counts);
            }
        }
    }
    Ok(counts)
}

/// Renders what a capture did without (and other notes) — shared by every command that traces.
pub fn render_capture_report(w: &mut dyn Write, r: &CaptureReport) -> std::io::Result<()> {
    for n in &r.notes {
        writeln!(w, "latscope: note: {n}")?;
    }
    for m in &r.missing {
        writeln!(w, "latscope: missing {}: {}", m.what, m.why)?;
        if !m.enable.is_empty() {
            writeln!(w, "          to enable: {}", m.enable)?;
        }
    }
    if let (Some(inst), Some(clock)) = (&r.instance, &r.clock) {
        writeln!(
            w,
            "latscope: tracing {} on {} (instance {inst}, clock {clock}{})",
            latscope_report::human::counted(r.events.len() as u64, "event", "events"),
            crate::args::cpus_label(&r.cpus),
            if r.filters.is_empty() { String::new() } else { format!(", {} filtered", r.filters.len()) }
        )?;
    }
    Ok(())
}

/// What the recording holds, as `--json` writes it and the summary shows it.
fn recorded(output: &Path, data: &CaptureData, written: &DatSummary, counts: &Counts) -> RecordResult {
    let mut r = RecordResult::new(output.display().to_string());
    r.bytes = written.bytes;
    r.data_bytes = written.raw_bytes;
    r.data_bytes_in_file = written.data_bytes;
    r.clock = data.formats.clock.clone();
    for c in &data.cpus {
        let lost = c.stats.as_ref().map_or(0, |s| s.lost());
        let flagged = counts.lost_flagged.get(&c.cpu).copied().unwrap_or(0);
        r.cpus.push(RecordedCpu {
            cpu: c.cpu,
            pages: c.pages_read,
            events: counts.per_cpu.get(&c.cpu).copied().unwrap_or(0),
            lost: lost.max(flagged),
            overrun: c.stats.as_ref().map_or(0, |s| s.overrun),
            lost_uncounted: counts.lost_unknown.contains(&c.cpu),
            error: c.error.as_ref().map(ToString::to_string),
        });
    }
    r.events = counts.per_event.clone();
    let lost_total: u64 = data.cpus.iter().map(|c| c.stats.as_ref().map_or(0, |s| s.lost())).sum();
    if lost_total > 0 {
        r.warnings.push(format!("{lost_total} events were lost; record fewer CPUs/events or raise --buffer-kb"));
    }
    r.warnings.extend(counts.warnings.iter().take(5).cloned());
    r
}

fn render_summary(w: &mut dyn Write, r: &RecordResult) -> std::io::Result<()> {
    if let Some(s) = &r.command_status {
        writeln!(w, "command: {s}")?;
    }
    writeln!(
        w,
        "wrote {} ({:.1} MiB, {}, clock {})",
        shown(Path::new(&r.output)),
        r.bytes as f64 / 1048576.0,
        r.format,
        r.clock
    )?;
    if r.recorded_ns > 0 {
        let mb = |b: u64| b as f64 / 1e6;
        let secs = |ns: u64| ns as f64 / 1e9;
        writeln!(
            w,
            "data: {:.1} MB of pages in {:.1} s ({:.1} MB/s); file written in {:.1} s ({:.1} MB/s of pages{})",
            mb(r.data_bytes),
            secs(r.recorded_ns),
            mb(r.data_bytes) / secs(r.recorded_ns).max(1e-9),
            secs(r.write_ns),
            mb(r.data_bytes) / secs(r.write_ns).max(1e-9),
            if r.data_bytes_in_file < r.data_bytes {
                format!(", compressed {:.1}x", r.data_bytes as f64 / r.data_bytes_in_file.max(1) as f64)
            } else {
                String::new()
            }
        )?;
    }
    writeln!(w, "{:>5} {:>8} {:>10} {:>10} {:>10}", "CPU", "pages", "events", "lost", "overrun")?;
    for c in &r.cpus {
        writeln!(w, "{:>5} {:>8} {:>10} {:>10} {:>10}", c.cpu.to_string(), c.pages, c.events, c.lost, c.overrun)?;
        if c.lost_uncounted {
            writeln!(w, "      CPU {}: some pages say events were lost before them, without a count", c.cpu)?;
        }
        if let Some(e) = &c.error {
            writeln!(w, "      CPU {} reader stopped early: {e}", c.cpu)?;
        }
    }
    let mut by_count: Vec<(&String, &u64)> = r.events.iter().collect();
    by_count.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let list: Vec<String> = by_count.iter().map(|(n, c)| format!("{n} {c}")).collect();
    if !list.is_empty() {
        writeln!(w, "events: {}", list.join(", "))?;
    }
    for warning in &r.warnings {
        writeln!(w, "warning: {warning}")?;
    }
    Ok(())
}
