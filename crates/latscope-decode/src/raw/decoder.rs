//! [`RawDecoder`]: tracefs header + format files ➜ a decoder of per-CPU ring-buffer pages into [`Event`]s.
//!
//! This is the entry point for live capture (`trace_pipe_raw`) and for the `.dat` reader:
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use latscope_decode::RawDecoder;
//! use latscope_model::CpuId;
//! use std::io::Read;
//! // header_page answers only the read at offset 0: read it whole in one large read(2)
//! // (`std::fs::read_to_string` starts small and truncates it; latscope-sys's `read_text` does this).
//! let mut buf = vec![0u8; 64 * 1024];
//! let n = std::fs::File::open("/sys/kernel/tracing/events/header_page")
//!     .and_then(|mut f| f.read(&mut buf))?;
//! let header_page = String::from_utf8_lossy(&buf[..n]).into_owned();
//! let mut dec = RawDecoder::new(&header_page, cfg!(target_endian = "big"))?;
//! let fmt = std::fs::read_to_string("/sys/kernel/tracing/events/sched/sched_switch/format")?;
//! dec.add_format("sched", &fmt)?;
//! let page = vec![0u8; 4096]; // one page read from per_cpu/cpu0/trace_pipe_raw
//! let summary = dec.decode_page(CpuId(0), &page, &mut |event| println!("{event:?}"));
//! println!("lost before this page: {:?}, warnings: {:?}", summary.missed, summary.warnings);
//! # Ok(()) }
//! ```

use super::cmdlines::Cmdlines;
use super::format::{parse_format, FieldDef};
use super::header_page::{parse_header_event, parse_header_page, EventHeaderLayout, PageLayout};
use super::kallsyms::{Kallsyms, PrintkFormats};
use super::page::{decode_page, read_uint, PageSummary};
use super::record::{CompiledFormat, RawRecord};
use super::source::RecordSource;
use super::symbols::{Loading, Symbols};
use super::time_map::TimeMap;
use crate::typed::{self, FastHash, Interner};
use crate::DecodeError;
use latscope_model::{CpuId, Event, Nanos, TaskName, Text};
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::{Arc, OnceLock};

/// A cached name lookup: (name address, name length, field index or none).
type NameSlot = (usize, usize, Option<u16>);

/// Decodes ring-buffer pages with a kernel's header_page layout and event formats.
#[derive(Debug)]
pub struct RawDecoder {
    page: PageLayout,
    headers: EventHeaderLayout,
    /// Event formats indexed by id (ids are small and dense: a vector beats a map per record).
    formats: Vec<Option<Arc<CompiledFormat>>>,
    /// Format texts parsed when their first record comes (a `.dat` saves every format of the machine,
    /// ~1500, and a trace uses a few dozen), by id; shared with forks, each parsed once.
    later: Arc<Vec<Option<Arc<LaterFormat>>>>,
    /// `common_type` location (offset, size), the same in every format.
    common_type: (usize, usize),
    cmdlines: Cmdlines,
    /// Shared with [`fork`](Self::fork)ed decoders: symbol tables are large and read-only.
    kallsyms: Symbols,
    printk: Arc<PrintkFormats>,
    unknown_ids: HashMap<u16, u64>,
    interner: RefCell<Interner>,
    /// Symbol names handed out so far, by symbol number.
    symbols: RefCell<HashMap<u32, Text, BuildHasherDefault<FastHash>>>,
    /// [`symbol_name`](Self::symbol_name)s handed out so far, by address: the few callbacks a trace names
    /// again and again (hrtimer functions) skip the search of the symbol table.
    names_by_addr: RefCell<HashMap<u64, Text, BuildHasherDefault<FastHash>>>,
    /// [`stack_names`](Self::stack_names) handed out so far, by their addresses: a trace records a few
    /// hundred distinct kernel stacks hundreds of thousands of times, and each repeat shares the frames.
    stacks_by_addrs: RefCell<StackCache>,
    /// Per format id: field names already looked up, keyed by the name's address and length (the typed
    /// builder passes string literals), so a name is compared as text once per format, not per record.
    name_cache: RefCell<Vec<Vec<NameSlot>>>,
    /// Records of the page being decoded (ts, id, start, end): kept to reuse its allocation.
    scratch: Vec<(u64, u16, u32, u32)>,
    /// The last task name looked up (consecutive records are mostly of one task).
    last_comm: Option<(i32, TaskName)>,
    /// Task names are left to the caller: every event's name is empty (see
    /// [`leave_task_names`](Self::leave_task_names)).
    names_later: bool,
    /// Raw timestamps to times (a `.dat`'s TSC conversion and offsets).
    time: TimeMap,
}

/// Kernel stacks' frames by their addresses, innermost first.
type StackCache = HashMap<Box<[u64]>, Arc<[Text]>, BuildHasherDefault<FastHash>>;

impl RawDecoder {
    /// A decoder for pages laid out as `header_page` says (its text from tracefs or a `.dat`).
    pub fn new(header_page: &str, big_endian: bool) -> Result<RawDecoder, DecodeError> {
        let layout = parse_header_page(header_page, big_endian)
            .map_err(|what| DecodeError::Format { format: "header_page".into(), what })?;
        Ok(RawDecoder::with_layout(layout))
    }

    /// A decoder for an already known page layout.
    pub fn with_layout(page: PageLayout) -> RawDecoder {
        RawDecoder {
            page,
            headers: EventHeaderLayout::default(),
            formats: Vec::new(),
            later: Arc::default(),
            common_type: (0, 2),
            cmdlines: Cmdlines::default(),
            kallsyms: Symbols::default(),
            printk: Arc::default(),
            unknown_ids: HashMap::new(),
            interner: RefCell::new(Interner::default()),
            symbols: RefCell::default(),
            names_by_addr: RefCell::default(),
            stacks_by_addrs: RefCell::default(),
            name_cache: RefCell::new(Vec::new()),
            scratch: Vec::new(),
            last_comm: None,
            names_later: false,
            time: TimeMap::default(),
        }
    }

    /// A decoder with the same layout, formats, symbols and task names, for another CPU's pages (possibly
    /// on another thread): the symbol tables are shared, the caches, task names learned from now on and
    /// unknown-id counts are its own.
    pub fn fork(&self) -> RawDecoder {
        RawDecoder {
            headers: self.headers,
            formats: self.formats.clone(),
            later: self.later.clone(),
            common_type: self.common_type,
            cmdlines: self.cmdlines.clone(),
            kallsyms: self.kallsyms.clone(),
            printk: self.printk.clone(),
            names_later: self.names_later,
            time: self.time.clone(),
            // Caches, scratch space and unknown-id counts start empty.
            ..RawDecoder::with_layout(self.page)
        }
    }

    /// Use the type values of a `header_event` file (defaults match every kernel since 2.6.3x).
    pub fn set_header_event(&mut self, text: &str) {
        self.headers = parse_header_event(text);
    }

    /// Add one `events/SYSTEM/NAME/format` file.
    pub fn add_format(&mut self, system: &str, text: &str) -> Result<(), DecodeError> {
        let f = parse_format(system, text).map_err(|what| format_error(system, what))?;
        if let Some(ct) = f.field("common_type") {
            self.common_type = (ct.offset as usize, ct.size as usize);
        }
        self.insert_format(Arc::new(CompiledFormat::new(f, self.page.commit_size)));
        Ok(())
    }

    fn insert_format(&mut self, c: Arc<CompiledFormat>) {
        let id = usize::from(c.format.id);
        if self.formats.len() <= id {
            self.formats.resize(id + 1, None);
        }
        self.formats[id] = Some(c);
    }

    /// Add one format file to be parsed when its first record is decoded (the first format added is
    /// parsed now: it gives the `common_type` location every record's id is read from). Only the `ID:`
    /// line is read here; a format that then fails to parse is reported in that page's warnings.
    pub fn add_format_later(&mut self, system: &str, text: String) -> Result<(), DecodeError> {
        if self.formats.iter().all(Option::is_none) {
            return self.add_format(system, &text);
        }
        let id = format_id(&text).map_err(|what| format_error(system, what))?;
        let later = Arc::make_mut(&mut self.later);
        if later.len() <= usize::from(id) {
            later.resize(usize::from(id) + 1, None);
        }
        later[usize::from(id)] =
            Some(Arc::new(LaterFormat { system: system.to_string(), text, parsed: OnceLock::new() }));
        Ok(())
    }

    /// Make the format of `id` ready, parsing a [`LaterFormat`] the first time; false when there is none
    /// (or it does not parse: the reason is pushed to `warnings` by the decoder that parsed it).
    fn ready_format(&mut self, id: u16, warnings: &mut Vec<String>) -> bool {
        if let Some(Some(_)) = self.formats.get(usize::from(id)) {
            return true;
        }
        let Some(Some(later)) = self.later.get(usize::from(id)).cloned() else { return false };
        let mut first = false;
        let long_size = self.page.commit_size;
        let parsed = later.parsed.get_or_init(|| {
            first = true;
            parse_format(&later.system, &later.text).map(|f| Arc::new(CompiledFormat::new(f, long_size)))
        });
        match parsed {
            Ok(c) => {
                self.insert_format(c.clone());
                true
            }
            Err(e) => {
                if first {
                    warnings.push(format!("{} event format (id {id}): {e}; its records are skipped", later.system));
                }
                Arc::make_mut(&mut self.later)[usize::from(id)] = None;
                false
            }
        }
    }

    /// Task names by pid (`saved_cmdlines`).
    pub fn set_cmdlines(&mut self, text: &str) {
        self.set_cmdline_table(Cmdlines::parse(text));
    }

    /// Task names by pid, already parsed.
    pub(crate) fn set_cmdline_table(&mut self, cmdlines: Cmdlines) {
        self.cmdlines = cmdlines;
        self.last_comm = None;
    }

    /// Kernel symbols (`/proc/kallsyms`) to name function addresses.
    pub fn set_kallsyms(&mut self, text: &str) {
        self.set_kallsyms_table(Kallsyms::parse(text));
    }

    /// Kernel symbols already parsed.
    pub(crate) fn set_kallsyms_table(&mut self, kallsyms: Kallsyms) {
        self.kallsyms = Symbols::ready(kallsyms);
        self.symbols.borrow_mut().clear();
        self.names_by_addr.borrow_mut().clear();
        self.stacks_by_addrs.borrow_mut().clear();
    }

    /// Kernel symbols another thread is still loading: the first lookup waits for them.
    pub(crate) fn set_kallsyms_loading(&mut self, loading: Arc<Loading>) {
        self.kallsyms = Symbols::pending(loading);
        self.symbols.borrow_mut().clear();
        self.names_by_addr.borrow_mut().clear();
        self.stacks_by_addrs.borrow_mut().clear();
    }

    /// Convert every raw timestamp with `time` (events and page summaries).
    pub fn set_time_map(&mut self, time: TimeMap) {
        self.time = time;
    }

    /// The address of `_stext` (base of `preemptirq` caller offsets) when kallsyms has it.
    pub fn stext(&self) -> Option<u64> {
        self.kallsyms.get().stext
    }

    /// The printk format at `addr` (`bprint`/`bputs`).
    pub fn printk_format(&self, addr: u64) -> Option<&str> {
        self.printk.get(addr)
    }

    /// The field of `format` called `name`, resolved through the per-format cache.
    pub(crate) fn field<'f>(&self, format: &'f CompiledFormat, name: &str) -> Option<&'f FieldDef> {
        let key = (name.as_ptr() as usize, name.len());
        let Ok(mut caches) = self.name_cache.try_borrow_mut() else {
            return format.format.field(name);
        };
        let id = usize::from(format.format.id);
        if caches.len() <= id {
            caches.resize(id + 1, Vec::new());
        }
        let cache = &mut caches[id];
        if let Some(&(_, _, idx)) = cache.iter().find(|c| (c.0, c.1) == key) {
            return idx.and_then(|i| format.format.fields.get(usize::from(i)));
        }
        let idx = format.format.fields.iter().position(|f| &*f.name == name).map(|i| i as u16);
        if cache.len() < 64 {
            cache.push((key.0, key.1, idx));
        }
        idx.and_then(|i| format.format.fields.get(usize::from(i)))
    }

    /// A shared copy of `s` (repeated names share one allocation).
    pub fn intern(&self, s: &str) -> Text {
        self.interner.borrow_mut().intern(s)
    }

    /// `printk_formats`, for `bprint` records.
    pub fn set_printk_formats(&mut self, text: &str) {
        self.printk = Arc::new(PrintkFormats::parse(text));
    }

    /// The page layout in use.
    pub fn page_layout(&self) -> &PageLayout {
        &self.page
    }

    /// Number of known event formats.
    pub fn format_count(&self) -> usize {
        let later = self
            .later
            .iter()
            .enumerate()
            .filter(|(id, l)| l.is_some() && self.formats.get(*id).map_or(true, Option::is_none));
        self.formats.iter().flatten().count() + later.count()
    }

    /// Records seen per event id that had no format (they are skipped).
    pub fn unknown_ids(&self) -> &HashMap<u16, u64> {
        &self.unknown_ids
    }

    /// Take the counts of [`unknown_ids`](Self::unknown_ids) out (they start again from zero).
    pub fn take_unknown_ids(&mut self) -> HashMap<u16, u64> {
        std::mem::take(&mut self.unknown_ids)
    }

    /// Leave task names to the caller (who sees the events in time order across CPUs, see
    /// `TaskNames`): every event's `comm` is empty and no name is
    /// learned from `sched` records here.
    pub fn leave_task_names(&mut self) {
        self.names_later = true;
    }

    /// The name of the function containing `addr` without the offset (as `%ps` prints it), or hex.
    pub fn symbol_name(&self, addr: u64) -> Text {
        if let Some(t) = self.names_by_addr.try_borrow().ok().and_then(|c| c.get(&addr).cloned()) {
            return t;
        }
        let text = match self.kallsyms.get().table.lookup_index(addr) {
            Some((i, name, off)) if off < 0x10_0000 => self.symbol_text(i, name),
            _ => self.intern(&format!("0x{addr:x}")),
        };
        if let Ok(mut cache) = self.names_by_addr.try_borrow_mut() {
            if cache.len() >= 64 * 1024 {
                cache.clear();
            }
            cache.insert(addr, text.clone());
        }
        text
    }

    /// The frames of a kernel stack recorded at `addrs`, innermost first, named as
    /// [`symbol_name`](Self::symbol_name) names them; a stack met before gives the frames it gave then.
    pub fn stack_names(&self, addrs: &[u64]) -> Arc<[Text]> {
        if let Some(f) = self.stacks_by_addrs.try_borrow().ok().and_then(|c| c.get(addrs).cloned()) {
            return f;
        }
        let frames: Arc<[Text]> = addrs.iter().map(|&a| self.symbol_name(a)).collect();
        if let Ok(mut cache) = self.stacks_by_addrs.try_borrow_mut() {
            // Bounded like the name cache: a trace of ever new stacks starts the cache over.
            if cache.len() >= 16 * 1024 {
                cache.clear();
            }
            cache.insert(addrs.into(), frames.clone());
        }
        frames
    }

    /// The symbol name for a kernel address (`func+0x10` when inside a function), or hex when unknown.
    pub fn symbolize(&self, addr: u64) -> Text {
        match self.kallsyms.get().table.lookup_index(addr) {
            Some((i, name, 0)) => self.symbol_text(i, name),
            Some((_, name, off)) if off < 0x10_0000 && self.interner.try_borrow_mut().is_ok() => {
                self.intern(&format!("{name}+0x{off:x}"))
            }
            Some((_, name, off)) if off < 0x10_0000 => Arc::from(format!("{name}+0x{off:x}")),
            _ => Arc::from(format!("0x{addr:x}")),
        }
    }

    /// The shared [`Text`] of symbol number `i` (made once per decoder).
    fn symbol_text(&self, i: usize, name: &str) -> Text {
        let Ok(mut cache) = self.symbols.try_borrow_mut() else { return Arc::from(name) };
        if cache.len() >= 64 * 1024 {
            cache.clear();
        }
        cache.entry(i as u32).or_insert_with(|| Arc::from(name)).clone()
    }

    /// [`decode_page`](Self::decode_page) for the last page of a file cut short (`page` holds the bytes
    /// up to the cut): the records wholly before the cut, and a warning saying what the cut took.
    pub fn decode_cut_page<S: FnMut(Event) + ?Sized>(&mut self, cpu: CpuId, page: &[u8], sink: &mut S) -> PageSummary {
        let Some((whole, lost)) = super::page::clamp_cut_page(&self.page, page) else {
            return self.decode_page(cpu, page, sink);
        };
        let mut summary = self.decode_page(cpu, &whole, sink);
        summary.warnings.push(format!(
            "the file ends inside this page: its last {lost} bytes of events are missing (the file was cut short); \
             the events before the cut are kept"
        ));
        summary
    }

    /// Decode one page recorded on `cpu`, calling `sink` for every event in order. The summary carries
    /// the page's time (converted like the events' by the [`TimeMap`]), its lost-events marker and
    /// warnings (records without a known format are counted in
    /// [`unknown_ids`](Self::unknown_ids) and skipped). Never panics on malformed input.
    pub fn decode_page<S: FnMut(Event) + ?Sized>(&mut self, cpu: CpuId, page: &[u8], sink: &mut S) -> PageSummary {
        let layout = self.page;
        let headers = self.headers;
        let mut pending = std::mem::take(&mut self.scratch);
        pending.clear();
        let base = page.as_ptr() as usize;
        let (ct_off, ct_size) = self.common_type;
        let be = layout.big_endian;
        let mut summary = decode_page(&layout, &headers, page, &mut |ts, data| {
            let id = read_uint(data, ct_off, ct_size, be).unwrap_or(u64::MAX) as u16;
            let start = data.as_ptr() as usize - base;
            // Pages are far smaller than 4 GiB (the commit length has 27 bits).
            pending.push((ts, id, start as u32, (start + data.len()) as u32));
        });
        // One reference count per page, not per record.
        let time = self.time.clone();
        let cpu_index = cpu.0 as usize;
        summary.ts = time.apply(summary.ts, cpu_index);
        for &(ts, id, start, end) in &pending {
            // A reference, not a clone: the formats are shared by the decoding threads, and a reference
            // count written per record would pass its cache line between the cores.
            let known = self.ready_format(id, &mut summary.warnings);
            let Some(Some(fmt)) = self.formats.get(usize::from(id)).filter(|_| known) else {
                *self.unknown_ids.entry(id).or_insert(0) += 1;
                continue;
            };
            let rec = RawRecord { format: fmt, data: &page[start as usize..end as usize], big_endian: be };
            let pid = rec.pid();
            let comm = if self.names_later {
                TaskName::EMPTY
            } else {
                if &*fmt.format.system == "sched" {
                    for (c, p) in learned_comms(self, &rec) {
                        if let (Some(c), Some(p)) = (c, p) {
                            if !c.is_empty() {
                                self.cmdlines.learn(p as i32, c);
                                self.last_comm = None;
                            }
                        }
                    }
                }
                match self.last_comm {
                    Some((p, c)) if p == pid => c,
                    _ => {
                        let c = self.cmdlines.comm(pid);
                        self.last_comm = Some((pid, c));
                        c
                    }
                }
            };
            let (ts, flags) = (Nanos(time.apply(ts, cpu_index)), rec.flags());
            // Each event is built where it is handed over: a syscall's (most events of a busy trace) is
            // not built first and then copied, 128 bytes at a time.
            if let Some(kind) = fmt.syscall.and_then(|plan| plan.build(rec.data, be)) {
                sink(Event { ts, cpu, pid, tgid: None, comm, flags, kind });
                continue;
            }
            let kind = typed::build(Some(fmt.system()), fmt.name(), &RecordSource { rec, dec: self });
            sink(Event { ts, cpu, pid, tgid: None, comm, flags, kind });
        }
        self.scratch = pending;
        summary
    }
}

/// A format file kept as text until a record needs it.
#[derive(Debug)]
struct LaterFormat {
    system: String,
    text: String,
    parsed: OnceLock<Result<Arc<CompiledFormat>, String>>,
}

/// The error of an event format of `system` that does not parse.
fn format_error(system: &str, what: String) -> DecodeError {
    DecodeError::Format { format: format!("{system} event format"), what }
}

/// The `ID:` of a format file's text, without parsing the rest.
fn format_id(text: &str) -> Result<u16, String> {
    let line = text.lines().find_map(|l| l.trim_start().strip_prefix("ID:")).ok_or("no `ID:` line")?;
    line.trim().parse().map_err(|_| format!("bad ID `{}`", line.trim()))
}

/// Task names a `sched` record reveals (`prev_comm`/`prev_pid`, `next_comm`/`next_pid`, `comm`/`pid`): kept
/// because saved_cmdlines may be stale.
fn learned_comms<'a>(dec: &RawDecoder, rec: &RawRecord<'a>) -> [(Option<&'a str>, Option<i64>); 3] {
    let mut learned: [(Option<&str>, Option<i64>); 3] = [(None, None); 3];
    for (slot, (comm, pid)) in
        [("prev_comm", "prev_pid"), ("next_comm", "next_pid"), ("comm", "pid")].iter().enumerate()
    {
        let c = dec.field(rec.format, comm).and_then(|f| rec.str_of(f));
        let p = dec.field(rec.format, pid).and_then(|f| rec.int_of(f));
        learned[slot] = (c, p);
    }
    learned
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raw::page::tests::PageBuilder;
    use latscope_model::{EventKind, SyscallArgs};

    const HEADER_PAGE: &str = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";

    const WAKING: &str = "name: sched_waking\nID: 7\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:char comm[16];\toffset:8;\tsize:16;\tsigned:0;\n\
\tfield:pid_t pid;\toffset:24;\tsize:4;\tsigned:1;\n";

    const SYS_ENTER: &str = "name: sys_enter\nID: 443\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield:unsigned long args[6];\toffset:16;\tsize:48;\tsigned:0;\n";

    const SYS_EXIT: &str = "name: sys_exit\nID: 442\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\n\
\tfield:long id;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield:long ret;\toffset:16;\tsize:8;\tsigned:1;\n";

    #[test]
    fn format_errors_name_the_text_and_the_line() {
        let Err(e) = RawDecoder::new("garbage", false) else { panic!("garbage has no page layout") };
        assert_eq!(e.to_string(), "header_page: no `timestamp` field");
        let mut dec = RawDecoder::new(HEADER_PAGE, false).expect("decoder");
        let e = dec.add_format("sched", "name: a\nID: zz\n").expect_err("bad id");
        assert_eq!(e.to_string(), "sched event format: line 2: bad ID `zz`");
        dec.add_format("sched", WAKING).expect("format");
        let e = dec.add_format_later("irq", "name: b\n".into()).expect_err("no ID");
        assert!(
            matches!(&e, DecodeError::Format { format, what } if format == "irq event format" && what == "no `ID:` line")
        );
    }

    #[test]
    fn the_syscall_plan_gives_what_the_typed_builder_gives() {
        let mut dec = RawDecoder::new(HEADER_PAGE, false).expect("decoder");
        dec.add_format("raw_syscalls", SYS_ENTER).expect("format");
        dec.add_format("raw_syscalls", SYS_EXIT).expect("format");
        let record = |id: u16, words: &[i64]| {
            let mut r = id.to_le_bytes().to_vec();
            r.extend_from_slice(&[0x01, 0x02, 7, 0, 0, 0]);
            words.iter().for_each(|w| r.extend_from_slice(&w.to_le_bytes()));
            r
        };
        let enter = record(443, &[230, 1, 0x7ffd_1234, -1, 0, 0, 0x40]);
        let exit = record(442, &[230, -11]);
        for rec in [&enter, &exit] {
            let id = usize::from(u16::from_le_bytes([rec[0], rec[1]]));
            let fmt = dec.formats[id].clone().expect("format");
            let plan = fmt.syscall.expect("a raw_syscalls format has a plan");
            let raw = RawRecord { format: &fmt, data: rec, big_endian: false };
            let typed = typed::build(Some("raw_syscalls"), fmt.name(), &RecordSource { rec: raw, dec: &dec });
            assert_eq!(plan.build(rec, false), Some(typed));
            // A record cut short is left to the typed builder.
            assert_eq!(plan.build(&rec[..20], false), None);
        }
        assert_eq!(
            dec.formats[443].as_ref().and_then(|f| f.syscall).and_then(|p| p.build(&enter, false)),
            Some(EventKind::SysEnter {
                nr: Some(230),
                name: None,
                args: SyscallArgs::Words([1, 0x7ffd_1234, u64::MAX, 0, 0, 0x40]),
            })
        );
    }

    #[test]
    fn a_format_parsed_at_its_first_record_warns_once_when_broken() {
        let mut dec = RawDecoder::new(HEADER_PAGE, false).expect("decoder");
        dec.add_format("sched", WAKING).expect("format");
        let broken = "name: broken\nID: 9\nformat:\n\tfield:int a;\toffset:zz;\tsize:4;\tsigned:1;\n";
        dec.add_format_later("sched", broken.to_string()).expect("only the ID is read now");
        dec.add_format_later("sched", WAKING.replace("ID: 7", "ID: 8")).expect("later");
        let mut rec = vec![9, 0, 0, 0, 12, 0, 0, 0];
        rec.extend_from_slice(&[0; 20]);
        let mut good = rec.clone();
        good[0] = 8;
        let page = PageBuilder::new(1_000).data(10, &rec).data(5, &good).data(5, &rec).finish(None);
        let mut got = Vec::new();
        let first = dec.decode_page(CpuId(0), &page, &mut |e| got.push(e));
        let again = dec.decode_page(CpuId(0), &page, &mut |e| got.push(e));
        assert_eq!(first.warnings.len(), 1, "{:?}", first.warnings);
        assert!(first.warnings[0].contains("id 9"), "{:?}", first.warnings);
        assert!(again.warnings.is_empty(), "{:?}", again.warnings);
        assert_eq!(got.len(), 2, "the format parsed later decodes its records");
        assert_eq!(dec.unknown_ids().get(&9), Some(&4));
    }

    /// `events/ftrace/timerlat/format` as Debian's 6.1.0-56-rt-amd64 shows it (recorded in the qemu guest of
    /// `scripts/kernel-vm.sh`): the timerlat tracer's own record, with the RT kernel's lazy count.
    const TIMERLAT_6_1_RT: &str = "name: timerlat\nID: 17\nformat:\n\
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;\n\
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;\n\
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;\n\
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;\n\
\tfield:unsigned char common_preempt_lazy_count;\toffset:8;\tsize:1;\tsigned:0;\n\n\
\tfield:unsigned int seqnum;\toffset:12;\tsize:4;\tsigned:0;\n\
\tfield:int context;\toffset:16;\tsize:4;\tsigned:1;\n\
\tfield:u64 timer_latency;\toffset:24;\tsize:8;\tsigned:0;\n\n\
print fmt: \"seq:%u\\tcontext:%d\\ttimer_latency:%llu\\n\", REC->seqnum, REC->context, REC->timer_latency\n";

    #[test]
    fn decodes_the_timerlat_tracers_records() {
        let mut dec = RawDecoder::new(HEADER_PAGE, false).expect("decoder");
        dec.add_format("ftrace", TIMERLAT_6_1_RT).expect("format");
        let record = |context: i32, seq: u32, latency: u64| {
            let mut r = vec![17, 0, 0x01, 0x01, 135, 0, 0, 0, 0, 0, 0, 0];
            r.extend_from_slice(&seq.to_le_bytes());
            r.extend_from_slice(&context.to_le_bytes());
            r.extend_from_slice(&[0; 4]);
            r.extend_from_slice(&latency.to_le_bytes());
            r
        };
        let page =
            PageBuilder::new(1_000).data(10, &record(0, 2, 8_783_880)).data(5, &record(1, 2, 9_008_940)).finish(None);
        let mut got = Vec::new();
        dec.decode_page(CpuId(1), &page, &mut |e| got.push(e));
        let kinds: Vec<&EventKind> = got.iter().map(|e| &e.kind).collect();
        use latscope_model::event::TimerlatContext;
        assert_eq!(
            kinds,
            [
                &EventKind::Timerlat { context: TimerlatContext::Irq, seqnum: 2, latency: Nanos(8_783_880) },
                &EventKind::Timerlat { context: TimerlatContext::Thread, seqnum: 2, latency: Nanos(9_008_940) },
            ]
        );
    }

    #[test]
    fn decodes_a_page_into_events() {
        let mut dec = RawDecoder::new(HEADER_PAGE, false).expect("decoder");
        dec.add_format("sched", WAKING).expect("format");
        dec.set_cmdlines("12 worker\n");
        let mut rec = vec![7, 0, 0x01, 0x01, 12, 0, 0, 0];
        rec.extend_from_slice(b"cyclictest\0\0\0\0\0\0");
        rec.extend_from_slice(&99i32.to_le_bytes());
        let mut unknown = rec.clone();
        unknown[0] = 8;
        let page = PageBuilder::new(1_000).data(10, &rec).data(5, &unknown).finish(Some(Some(3)));
        let mut got = Vec::new();
        let s = dec.decode_page(CpuId(1), &page, &mut |e| got.push(e));
        assert_eq!(s.missed, crate::raw::page::Missed::Count(3));
        assert_eq!(got.len(), 1);
        let e = &got[0];
        assert_eq!((e.ts, e.cpu, e.pid, &*e.comm), (Nanos(1_010), CpuId(1), 12, "worker"));
        assert!(e.flags.irqs_off());
        assert_eq!(e.kind.name(), "sched_waking");
        assert_eq!(dec.unknown_ids().get(&8), Some(&1));
        // The woken task's name was learned from the record.
        assert_eq!(&*dec.cmdlines.comm(99), "cyclictest");
    }
}
