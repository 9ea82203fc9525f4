//! [`Capture`]: a trace session in a private instance — events enabled on the chosen CPUs with the `mono`
//! clock, per-CPU readers running beside the measurement, markers, freeze, and a teardown that restores
//! every knob and removes the instance (on [`Capture::finish`], on error and on drop).
//!
//! ```no_run
//! use latscope_sys::tracefs::{Capture, CaptureConfig, Retention};
//! use latscope_model::{CpuList, Nanos};
//! let cfg = CaptureConfig {
//!     cpus: Some(CpuList::parse("1").expect("cpus")),
//!     retention: Retention::Window { span: Nanos(2_000_000_000), max_bytes: 64 << 20 },
//!     ..CaptureConfig::default()
//! };
//! let capture = match Capture::start(&cfg) {
//!     Ok(c) => c,
//!     Err(e) => panic!("{e}; missing: {:?}", e.report.missing), // the binary renders and continues
//! };
//! let marker = capture.marker(); // give to the measurement thread
//! let _ = marker.mark_sample(1, 7, 80_000);
//! capture.hold(Nanos(1_000), Nanos(2_000)); // keep the pages around a bad sample
//! capture.freeze(); // stop recording at the first crossing, like cyclictest -b
//! let data = capture.finish().expect("teardown");
//! // data.formats + data.cpus[i].pages go to latscope-decode's RawDecoder, in the binary.
//! ```

use super::events::{resolve, EventSelection};
use super::instance::{remove_stale, restore_and_remove, Instance};
use super::knobs::{write_knob, Knobs};
use super::marker::{Marker, MarkerFile};
use super::mount::TraceFs;
use super::reader::{lock, PageStore, RawPage, Reader, Retention};
use super::stacks::StackSpec;
use super::stats::CpuStats;
use crate::host::cpus::online_cpus;
use crate::SysError;
use latscope_model::{CpuId, CpuList, MissingFeature, Nanos};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// What to capture.
#[derive(Clone, Debug)]
pub struct CaptureConfig {
    /// CPUs to trace (`tracing_cpumask`); `None` traces every online CPU.
    pub cpus: Option<CpuList>,
    /// Events to enable.
    pub events: EventSelection,
    /// Ring-buffer size per traced CPU, in KiB.
    pub buffer_kb: u32,
    /// What the readers keep.
    pub retention: Retention,
    /// Use this tracefs root instead of finding (or mounting) one.
    pub tracefs_root: Option<PathBuf>,
    /// Stack triggers set with the events (see [`StackSpec`]); the first of several on the same event
    /// whose event is enabled wins. More can be added once the run's threads are known
    /// ([`Capture::add_stacks`]).
    pub stacks: Vec<StackSpec>,
    /// A tracer to run in the instance (`current_tracer`, e.g. `timerlat`), set last before tracing starts
    /// and put back to `nop` at teardown; with one, the events may all be missing. `None` runs none.
    pub tracer: Option<String>,
    /// Files (relative to the recording directory) written before the tracer is set, each saved and written
    /// back at teardown: a tracer's own settings (`max_graph_depth`, `options/funcgraph-irqs`).
    pub tracer_knobs: Vec<(String, String)>,
    /// Record in the top-level buffer instead of a private instance, for a tracer the kernel runs only
    /// there (function_graph before 6.7's instance support in some configurations, and on 6.1). Every
    /// top-level file written is saved and written back, the top-level tracer must be `nop` at the start
    /// (someone else's tracing is never taken over), and only the traced CPUs' buffers are resized.
    pub top_level: bool,
}

impl Default for CaptureConfig {
    fn default() -> Self {
        CaptureConfig {
            cpus: None,
            events: EventSelection::Default,
            buffer_kb: 4096,
            retention: Retention::Window { span: Nanos(2_000_000_000), max_bytes: 64 << 20 },
            tracefs_root: None,
            stacks: Vec::new(),
            tracer: None,
            tracer_knobs: Vec::new(),
            top_level: false,
        }
    }
}

/// What a capture did and did without: rendered by the binary beside its results.
#[derive(Clone, Debug, Default, Serialize)]
pub struct CaptureReport {
    /// The tracefs root used.
    pub tracefs: Option<PathBuf>,
    /// The private instance's name.
    pub instance: Option<String>,
    /// The trace clock in use (`mono` unless the kernel lacks it).
    pub clock: Option<String>,
    /// The traced CPUs.
    pub cpus: CpuList,
    /// The events enabled (`system/name`).
    pub events: Vec<String>,
    /// Filters applied (`system/name`, expression).
    pub filters: Vec<(String, String)>,
    /// Stack triggers set at the start (`system/name`, trigger).
    pub stacks: Vec<(String, String)>,
    /// What was missing, why, and what would enable it.
    pub missing: Vec<MissingFeature>,
    /// Other things worth saying (stale instances removed, a filter the kernel refused, teardown errors).
    pub notes: Vec<String>,
}

/// A capture that could not start: the error and what was learned before it (the missing features).
#[derive(Debug)]
pub struct StartError {
    /// What was set up and what is missing.
    pub report: CaptureReport,
    /// Why the capture could not start.
    pub error: SysError,
}

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cannot trace: {}", self.error)
    }
}

impl std::error::Error for StartError {}

/// One event format file's text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FormatText {
    /// Event system (`sched`, `ftrace`).
    pub system: String,
    /// Event name.
    pub name: String,
    /// The `format` file.
    pub text: String,
}

/// Everything a decoder needs to read the pages: the kernel's layout texts and the event formats.
#[derive(Clone, Debug, Default)]
pub struct TraceFormats {
    /// `events/header_page`.
    pub header_page: String,
    /// `events/header_event`.
    pub header_event: String,
    /// `ftrace/*` formats (markers are `ftrace/print`) and the enabled events' formats.
    pub formats: Vec<FormatText>,
    /// Ring-buffer page size in bytes.
    pub page_size: usize,
    /// Whether the kernel is big-endian.
    pub big_endian: bool,
    /// Size of a user-space `long` (trace-cmd's `.dat` field).
    pub long_size: u8,
    /// The trace clock.
    pub clock: String,
}

/// One CPU's share of a finished capture.
#[derive(Debug)]
pub struct CpuCapture {
    /// The CPU.
    pub cpu: CpuId,
    /// The pages kept in memory, oldest first.
    pub pages: Vec<RawPage>,
    /// The spool file holding the pages, when spooling.
    pub spool: Option<PathBuf>,
    /// Pages read from the kernel.
    pub pages_read: u64,
    /// Bytes read from the kernel.
    pub bytes_read: u64,
    /// Pages the rolling window let go.
    pub pages_dropped: u64,
    /// The ring buffer's counters at the end (lost events).
    pub stats: Option<CpuStats>,
    /// A read or spool error, when one stopped this CPU's reader.
    pub error: Option<String>,
}

/// A finished capture.
#[derive(Debug)]
pub struct CaptureData {
    /// Layout and formats.
    pub formats: TraceFormats,
    /// Per traced CPU.
    pub cpus: Vec<CpuCapture>,
    /// `saved_cmdlines` (pid ➜ name) at the end.
    pub cmdlines: String,
    /// `printk_formats`.
    pub printk_formats: String,
    /// What ran and what was missing (teardown notes included).
    pub report: CaptureReport,
}

/// A running capture. Dropping it tears it down like [`finish`](Capture::finish), without the data.
#[derive(Debug)]
pub struct Capture {
    readers: Vec<Reader>,
    stores: Vec<Arc<Mutex<PageStore>>>,
    marker_file: Option<MarkerFile>,
    knobs: Option<Knobs>,
    instance: Option<Instance>,
    /// Where the capture records: the instance, or the tracefs root with [`CaptureConfig::top_level`].
    dir: Option<PathBuf>,
    tracefs: Option<TraceFs>,
    formats: TraceFormats,
    report: CaptureReport,
    frozen: AtomicBool,
    /// The `trigger` files a stack trigger was written to, cleared at teardown.
    stack_files: Mutex<Vec<PathBuf>>,
}

impl Capture {
    /// Sets up the instance and starts recording. On failure nothing is left behind, and the error
    /// carries the report with the missing features.
    pub fn start(cfg: &CaptureConfig) -> Result<Capture, Box<StartError>> {
        let mut report = CaptureReport::default();
        let tracefs = match &cfg.tracefs_root {
            Some(root) => TraceFs::at(root),
            None => TraceFs::open(),
        };
        let tracefs = match tracefs {
            Ok(t) => t,
            Err(m) => {
                let error = SysError::Invalid(m.to_string());
                report.missing.push(m);
                return Err(Box::new(StartError { report, error }));
            }
        };
        report.tracefs = Some(tracefs.root().to_path_buf());
        if tracefs.mounted_by_us() {
            report.notes.push(format!("mounted tracefs at {} (unmounted at the end)", tracefs.root().display()));
        }
        for s in remove_stale(tracefs.root()) {
            match s.removed {
                Ok(()) => report.notes.push(format!("removed instance {} left by dead process {}", s.name, s.pid)),
                Err(e) => report.notes.push(format!("could not remove stale instance {}: {e}", s.name)),
            }
        }
        let mut cap = Capture {
            readers: Vec::new(),
            stores: Vec::new(),
            marker_file: None,
            knobs: None,
            instance: None,
            dir: None,
            tracefs: Some(tracefs),
            formats: TraceFormats::default(),
            report,
            frozen: AtomicBool::new(false),
            stack_files: Mutex::new(Vec::new()),
        };
        match cap.setup(cfg) {
            Ok(()) => Ok(cap),
            Err(error) => {
                let _ = cap.teardown();
                let report = std::mem::take(&mut cap.report);
                Err(Box::new(StartError { report, error }))
            }
        }
    }

    fn setup(&mut self, cfg: &CaptureConfig) -> Result<(), SysError> {
        let root = self.tracefs.as_ref().map(|t| t.root().to_path_buf()).unwrap_or_default();
        let online = online_cpus()?;
        let cpus = match &cfg.cpus {
            Some(c) => {
                crate::host::cpus::check_online(c)?;
                c.clone()
            }
            None => online.clone(),
        };
        if cpus.is_empty() {
            return Err(SysError::Invalid("no CPU to trace".into()));
        }
        self.report.cpus = cpus.clone();
        let dir = if cfg.top_level {
            top_level_free(&root)?;
            root.clone()
        } else {
            let instance = Instance::create(&root)?;
            let dir = instance.path().to_path_buf();
            self.report.instance = Some(instance.name().to_string());
            self.instance = Some(instance);
            dir
        };
        self.dir = Some(dir.clone());
        let knobs = self.knobs.insert(Knobs::new(&dir));
        knobs.set("tracing_on", "0")?;

        // Clock: mono shares CLOCK_MONOTONIC's time base with the measurement threads.
        let clocks = std::fs::read_to_string(dir.join("trace_clock")).unwrap_or_default();
        let clock = if clocks.split_whitespace().any(|c| c.trim_matches(['[', ']']) == "mono") {
            knobs.set("trace_clock", "mono")?;
            "mono".to_string()
        } else {
            self.report.missing.push(MissingFeature::new(
                "trace clock mono",
                "this kernel's trace_clock has no mono clock; trace and sample times differ by an unknown offset",
                "a kernel of 3.17 or later",
            ));
            super::knobs::restore_value("trace_clock", &clocks).unwrap_or_else(|| "local".into())
        };
        self.report.clock = Some(clock.clone());

        // Top level: a buffer not yet expanded (`7 (expanded: 1408)`) takes its expanded size first, on every
        // CPU, as the first use of tracing does (and is written back at that size: the kernel's "expanded"
        // flag, set by any resize, cannot be cleared). Only the traced CPUs' buffers are resized then.
        if cfg.top_level {
            let shown = read_text(&dir.join("buffer_size_kb")).unwrap_or_default();
            if let Some(size) =
                shown.contains("expanded:").then(|| super::knobs::restore_value("buffer_size_kb", &shown)).flatten()
            {
                knobs.set("buffer_size_kb", &size)?;
            }
        }
        // Buffers: the requested size on traced CPUs, the minimum elsewhere (left alone at the top level).
        for cpu in online.iter() {
            if cfg.top_level && !cpus.contains(cpu) {
                continue;
            }
            let kb = if cpus.contains(cpu) { cfg.buffer_kb.max(4).to_string() } else { "4".to_string() };
            let rel = format!("per_cpu/cpu{cpu}/buffer_size_kb");
            if dir.join(&rel).exists() {
                knobs.set(&rel, &kb)?;
            }
        }
        knobs.set("tracing_cpumask", &cpumask_hex(&cpus))?;

        let events_dir = dir.join("events");
        let (present, missing) = resolve(&events_dir, &cfg.events, cfg.cpus.as_ref());
        self.report.missing.extend(missing);
        let mut formats = Vec::new();
        for e in &present {
            let base = format!("events/{}/{}", e.system, e.name);
            if let Some(f) = &e.filter {
                match knobs.set(&format!("{base}/filter"), f) {
                    Ok(()) => self.report.filters.push((e.id(), f.clone())),
                    Err(err) => self.report.notes.push(format!("{} recorded unfiltered: {err}", e.id())),
                }
            }
            if let Err(err) = knobs.set(&format!("{base}/enable"), "1") {
                self.report.missing.push(MissingFeature::new(
                    format!("event {}", e.id()),
                    format!("enabling it failed: {err}"),
                    e.enable,
                ));
                continue;
            }
            let fpath = events_dir.join(&e.system).join(&e.name).join("format");
            let text = std::fs::read_to_string(&fpath).map_err(|err| SysError::file(&fpath, err))?;
            formats.push(FormatText { system: e.system.clone(), name: e.name.clone(), text });
            self.report.events.push(e.id());
        }
        if self.report.events.is_empty() && cfg.tracer.is_none() {
            return Err(SysError::Invalid(
                "none of the requested trace events exists on this kernel (see the missing list)".into(),
            ));
        }
        for spec in super::stacks::choose(&cfg.stacks, &self.report.events) {
            let id = spec.id();
            match self.set_stack(&dir, spec) {
                Ok(()) => self.report.stacks.push((id, spec.trigger())),
                Err(err) => self.report.missing.push(MissingFeature::new(
                    format!("kernel stacks at {id}"),
                    format!("the stacktrace trigger was refused: {err}"),
                    super::stacks::STACKS_NEED,
                )),
            }
        }
        formats.splice(0..0, ftrace_formats(&root));
        let header_page = read_text(&events_dir.join("header_page"))?;
        let header_event = read_text(&events_dir.join("header_event")).unwrap_or_default();
        self.formats = TraceFormats {
            page_size: page_size_of(&header_page),
            header_page,
            header_event,
            formats,
            big_endian: cfg!(target_endian = "big"),
            long_size: std::mem::size_of::<libc::c_long>() as u8,
            clock,
        };

        // The tracer before the readers: the kernel refuses to change it (EBUSY) while a pipe is open.
        if let (Some(t), Some(k)) = (&cfg.tracer, self.knobs.as_mut()) {
            for (file, value) in &cfg.tracer_knobs {
                k.set(file, value)?;
            }
            k.set("current_tracer", t)?;
        }

        // Readers on the CPUs not traced, when there are any, to stay out of the measurement's way.
        let housekeeping: Vec<CpuId> = online.iter().filter(|c| !cpus.contains(*c)).collect();
        let affinity = (!housekeeping.is_empty()).then_some(housekeeping);
        if let Retention::Spool(d) = &cfg.retention {
            std::fs::create_dir_all(d).map_err(|e| SysError::file(d, e))?;
        }
        for cpu in cpus.iter() {
            let store = Arc::new(Mutex::new(PageStore::new(cpu, cfg.retention.clone())?));
            let reader = Reader::start(&dir, cpu, self.formats.page_size, store.clone(), affinity.clone())?;
            self.stores.push(store);
            self.readers.push(reader);
        }
        self.marker_file = Some(MarkerFile::open(&dir)?);
        if let Some(k) = self.knobs.as_mut() {
            k.set("tracing_on", "1")?;
        }
        Ok(())
    }

    /// Writes a stack trigger and remembers its file for teardown.
    fn set_stack(&self, dir: &Path, spec: &StackSpec) -> Result<(), SysError> {
        let path = dir.join("events").join(&spec.system).join(&spec.name).join("trigger");
        write_knob(&path, &spec.trigger())?;
        lock_files(&self.stack_files).push(path);
        Ok(())
    }

    /// Adds stack triggers while recording (for the run's threads, once their ids are known). Events the
    /// capture did not enable are skipped; returns what could not be set, and why, for the run's notes.
    pub fn add_stacks(&self, specs: &[StackSpec]) -> Vec<String> {
        let Some(dir) = &self.dir else { return Vec::new() };
        super::stacks::choose(specs, &self.report.events)
            .into_iter()
            .filter_map(|s| self.set_stack(dir, s).err().map(|e| format!("no kernel stacks at {}: {e}", s.id())))
            .collect()
    }

    /// What is set up and what is missing.
    pub fn report(&self) -> &CaptureReport {
        &self.report
    }

    /// The layout and formats the pages need, for building a decoder at start.
    pub fn formats(&self) -> &TraceFormats {
        &self.formats
    }

    /// The instance directory.
    pub fn instance_dir(&self) -> Option<&Path> {
        self.instance.as_ref().map(|i| i.path())
    }

    /// A marker handle for the measurement threads (`trace_marker` of the instance).
    pub fn marker(&self) -> Marker {
        match &self.marker_file {
            Some(m) => m.handle(),
            None => Marker::closed(),
        }
    }

    /// Keeps the pages overlapping `[from, to]` (trace clock, CLOCK_MONOTONIC with `mono`) from the
    /// rolling window on every CPU.
    pub fn hold(&self, from: Nanos, to: Nanos) {
        for s in &self.stores {
            lock(s).hold(from, to);
        }
    }

    /// Stops recording now (`tracing_on` 0); what is in the buffers and the window stays.
    pub fn freeze(&self) {
        if self.frozen.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(dir) = &self.dir {
            let _ = write_knob(&dir.join("tracing_on"), "0");
        }
    }

    /// Whether the instance still records: `false` after [`freeze`](Capture::freeze) and when the kernel
    /// stopped it (a tracer's own stop condition, e.g. timerlat's `stop_tracing_us`).
    pub fn is_recording(&self) -> bool {
        let Some(dir) = &self.dir else { return false };
        !self.is_frozen() && std::fs::read_to_string(dir.join("tracing_on")).is_ok_and(|t| t.trim() == "1")
    }

    /// Whether [`freeze`](Capture::freeze) was called.
    pub fn is_frozen(&self) -> bool {
        self.frozen.load(Ordering::SeqCst)
    }

    /// A copy of the pages in memory now, per CPU in CPU order (for an analysis during the run).
    pub fn snapshot(&self) -> Vec<RawPage> {
        self.stores.iter().flat_map(|s| lock(s).pages().cloned().collect::<Vec<_>>()).collect()
    }

    /// Takes the pages in memory out (for a consumer that decodes as it goes).
    pub fn take_pages(&self) -> Vec<RawPage> {
        self.stores.iter().flat_map(|s| lock(s).take()).collect()
    }

    /// Copies of the pages read since the previous call, kept in the window (for a consumer that decodes as
    /// it goes and decodes the window again at the end).
    pub fn copy_new_pages(&self) -> Vec<RawPage> {
        self.stores.iter().flat_map(|s| lock(s).copy_new()).collect()
    }

    /// The ring-buffer counters now, per traced CPU.
    pub fn stats(&self) -> Vec<CpuStats> {
        let Some(dir) = &self.dir else { return Vec::new() };
        self.report.cpus.iter().filter_map(|c| CpuStats::read(dir, c).ok()).collect()
    }

    /// Stops recording, reads what is left, restores every knob and removes the instance; returns the
    /// pages and everything needed to decode them.
    pub fn finish(mut self) -> Result<CaptureData, SysError> {
        self.freeze();
        for r in &mut self.readers {
            r.finish();
        }
        let stats = self.stats();
        let mut cpus = Vec::new();
        for s in &self.stores {
            let mut s = lock(s);
            let flushed = s.flush().err().map(|e| e.to_string());
            let cpu = s.cpu();
            cpus.push(CpuCapture {
                cpu,
                pages: s.take(),
                spool: s.spool_path().map(Path::to_path_buf),
                pages_read: s.pages_read,
                bytes_read: s.bytes_read,
                pages_dropped: s.pages_dropped,
                stats: stats.iter().find(|st| st.cpu == cpu).cloned(),
                error: s.error.clone().or(flushed),
            });
        }
        let root = self.tracefs.as_ref().map(|t| t.root().to_path_buf()).unwrap_or_default();
        let cmdlines = std::fs::read_to_string(root.join("saved_cmdlines")).unwrap_or_default();
        let printk_formats = std::fs::read_to_string(root.join("printk_formats")).unwrap_or_default();
        let errors = self.teardown();
        self.report.notes.extend(errors);
        Ok(CaptureData {
            formats: std::mem::take(&mut self.formats),
            cpus,
            cmdlines,
            printk_formats,
            report: std::mem::take(&mut self.report),
        })
    }

    /// Stops the readers, closes the marker, restores the knobs, removes the instance (and unmounts
    /// tracefs when this run mounted it). Idempotent; returns what went wrong.
    fn teardown(&mut self) -> Vec<String> {
        let mut errors = Vec::new();
        if let Some(dir) = self.dir.take() {
            let _ = write_knob(&dir.join("tracing_on"), "0");
        }
        for mut r in self.readers.drain(..) {
            r.finish();
        }
        self.marker_file = None;
        // Removing the instance clears its triggers too; clearing them first keeps the rule that every
        // setting is undone even when the instance cannot be removed.
        for path in lock_files(&self.stack_files).drain(..) {
            if path.exists() {
                if let Err(e) = write_knob(&path, "!stacktrace") {
                    errors.push(format!("removing a stack trigger failed: {e}"));
                }
            }
        }
        errors.extend(restore_and_remove(self.knobs.take(), self.instance.take()));
        self.tracefs = None;
        errors
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = self.teardown();
    }
}

/// Refuses the top-level buffer while another tracer runs there: latscope never takes over someone else's
/// tracing.
fn top_level_free(root: &Path) -> Result<(), SysError> {
    let current = read_text(&root.join("current_tracer"))?;
    let current = current.trim();
    if current != "nop" {
        return Err(SysError::Invalid(format!(
            "the top-level tracer is in use (current_tracer is {current}); latscope leaves it alone: stop it \
             (echo nop > {}/current_tracer) and run again",
            root.display()
        )));
    }
    Ok(())
}

/// The list of stack-trigger files, even after a panic while it was held.
fn lock_files(m: &Mutex<Vec<PathBuf>>) -> std::sync::MutexGuard<'_, Vec<PathBuf>> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// `tracing_cpumask` text for a CPU list: comma-separated 32-bit hex words, most significant first.
pub fn cpumask_hex(cpus: &CpuList) -> String {
    let max = cpus.iter().map(|c| c.0).max().unwrap_or(0);
    let mut words = vec![0u32; (max / 32 + 1) as usize];
    for c in cpus.iter() {
        words[(c.0 / 32) as usize] |= 1 << (c.0 % 32);
    }
    let mut parts: Vec<String> = words.iter().rev().map(|w| format!("{w:08x}")).collect();
    if parts.len() == 1 {
        parts[0] = format!("{:x}", words[0]);
    }
    parts.join(",")
}

/// The ring-buffer page size a `header_page` describes (the `data` field's offset plus size).
pub fn page_size_of(header_page: &str) -> usize {
    for line in header_page.lines() {
        if !line.contains(" data;") {
            continue;
        }
        let num = |key: &str| {
            line.split(';').find_map(|p| p.trim().strip_prefix(key)).and_then(|v| v.trim().parse::<usize>().ok())
        };
        if let (Some(off), Some(size)) = (num("offset:"), num("size:")) {
            return off + size;
        }
    }
    // SAFETY: sysconf has no preconditions.
    let ps = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if ps > 0 {
        ps as usize
    } else {
        4096
    }
}

/// Reads a tracefs text file with one large `read(2)` first: `events/header_page` and `header_event`
/// answer only the read at offset 0 (a small first read, as `read_to_string` does, truncates them).
pub fn read_text(path: &Path) -> Result<String, SysError> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| SysError::file(path, e))?;
    let mut buf = vec![0u8; 64 * 1024];
    let mut len = 0;
    loop {
        if len == buf.len() {
            buf.resize(buf.len() * 2, 0);
        }
        match f.read(&mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(SysError::file(path, e)),
        }
    }
    buf.truncate(len);
    Ok(String::from_utf8_lossy(&buf).into_owned())
}

/// The `events/ftrace/*/format` files (`print` carries markers), from the tracefs root.
fn ftrace_formats(root: &Path) -> Vec<FormatText> {
    let dir = root.join("events/ftrace");
    let mut out: Vec<FormatText> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|d| {
            let text = std::fs::read_to_string(d.path().join("format")).ok()?;
            Some(FormatText { system: "ftrace".into(), name: d.file_name().to_string_lossy().into_owned(), text })
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// `/proc/kallsyms` for naming kernel addresses; with `code_only`, only text symbols (t, T, w, W) are
/// kept. Empty when unreadable or when addresses are hidden (`kptr_restrict`).
pub fn kallsyms_text(code_only: bool) -> String {
    let Ok(text) = std::fs::read_to_string("/proc/kallsyms") else { return String::new() };
    if text.lines().take(16).all(|l| l.starts_with("0000000000000000") || l.starts_with("00000000 ")) {
        return String::new();
    }
    if !code_only {
        return text;
    }
    let mut out = String::with_capacity(text.len() / 2);
    for line in text.lines() {
        let mut f = line.split_whitespace();
        if let (Some(_), Some(t)) = (f.next(), f.next()) {
            if matches!(t, "t" | "T" | "w" | "W") {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpumask_words() {
        assert_eq!(cpumask_hex(&CpuList::parse("1").expect("cpus")), "2");
        assert_eq!(cpumask_hex(&CpuList::parse("0-3").expect("cpus")), "f");
        assert_eq!(cpumask_hex(&CpuList::parse("1,33").expect("cpus")), "00000002,00000002");
    }

    #[test]
    fn page_size_from_header_page() {
        let hp = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
                  \tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
                  \tfield: char data;\toffset:16;\tsize:4080;\tsigned:0;\n";
        assert_eq!(page_size_of(hp), 4096);
        assert!(page_size_of("garbage") >= 4096);
    }

    fn live() -> bool {
        // SAFETY: geteuid has no preconditions.
        let root = unsafe { libc::geteuid() } == 0;
        if !root || TraceFs::open().is_err() {
            eprintln!("skipped: needs root and tracefs");
            return false;
        }
        true
    }

    #[test]
    fn live_capture_reads_pages_marks_and_cleans_up() {
        if !live() {
            return;
        }
        let cfg = CaptureConfig {
            cpus: Some(CpuList(vec![CpuId(0)])),
            retention: Retention::All,
            buffer_kb: 256,
            ..CaptureConfig::default()
        };
        let cap = Capture::start(&cfg).expect("start");
        let dir = cap.instance_dir().expect("instance").to_path_buf();
        assert!(dir.is_dir());
        assert!(std::fs::read_to_string(dir.join("trace_clock")).expect("clock").contains("[mono]"));
        assert!(cap.report().events.iter().any(|e| e == "sched/sched_switch"), "{:?}", cap.report());
        let marker = cap.marker();
        // Run on CPU 0 so the marker and a few context switches land in its buffer.
        let t = std::thread::spawn(move || {
            let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
            unsafe { libc::CPU_SET(0, &mut set) };
            unsafe { libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) };
            for i in 0..20 {
                marker.mark_sample(0, i, 1000).expect("mark");
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            marker
        });
        let marker = t.join().expect("join");
        let data = cap.finish().expect("finish");
        assert!(!dir.exists(), "instance removed");
        assert!(!marker.mark("late").expect("closed"), "marker closed with the capture");
        assert_eq!(data.cpus.len(), 1);
        let c = &data.cpus[0];
        assert!(c.pages_read > 0 && !c.pages.is_empty(), "pages read: {}", c.pages_read);
        assert!(c.pages.iter().all(|p| p.data.len() == data.formats.page_size));
        // The marker text is in the raw pages.
        let hits = c.pages.iter().filter(|p| p.data.windows(14).any(|w| w == b"latscope: cpu=")).count();
        assert!(hits > 0, "marker not found in {} pages", c.pages.len());
        assert!(data.formats.formats.iter().any(|f| f.system == "ftrace" && f.name == "print"));
        assert!(data.formats.header_page.contains("commit"), "{:?}", data.formats.header_page);
        assert!(c.stats.is_some());
    }

    #[test]
    fn missing_tracefs_is_reported_not_fatal_to_the_caller() {
        let cfg = CaptureConfig { tracefs_root: Some("/nonexistent-tracefs".into()), ..CaptureConfig::default() };
        let err = Capture::start(&cfg).expect_err("no tracefs");
        assert_eq!(err.report.missing.len(), 1);
        assert!(err.report.missing[0].what.contains("tracefs"));
    }
}
