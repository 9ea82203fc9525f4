//! The metadata of a trace-cmd `.dat` (v6 sequential header, v7 options and sections): formats, symbols,
//! cmdlines, buffers and where each CPU's ring-buffer pages are.

use super::compress::Compression;
use super::input::{Bytes, InResult, Input};
use super::spec::*;
use crate::raw::time_map::{parse_c_integer, TimeMap};
use crate::raw::time_shift::TimeShift;
use std::io::{Read, Seek};

/// Where one CPU's data is in the file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CpuData {
    /// CPU number.
    pub cpu: u32,
    /// File offset of the data (v7 compressed: of the chunk list).
    pub offset: u64,
    /// Bytes in the file.
    pub size: u64,
}

/// One ring buffer (the top instance or a named one).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Buffer {
    /// Instance name (`""` for the top buffer).
    pub name: String,
    /// Trace clock when known.
    pub clock: Option<String>,
    /// Per-CPU data.
    pub cpus: Vec<CpuData>,
}

/// Everything in a `.dat` except the event data.
#[derive(Clone, Debug)]
pub struct Meta {
    /// File version (6 or 7).
    pub version: u32,
    /// Big-endian data.
    pub big_endian: bool,
    /// User-space long size of the recording machine.
    pub long_size: u8,
    /// Ring-buffer page size.
    pub page_size: u32,
    /// Section/flyrecord compression.
    pub compression: Compression,
    /// `events/header_page` text.
    pub header_page: String,
    /// `events/header_event` text.
    pub header_event: String,
    /// `events/ftrace/*/format` texts (handed to the decoder: empty in `DatReader::meta`).
    pub ftrace_formats: Vec<String>,
    /// (system, format text) of the event formats (handed to the decoder: empty in `DatReader::meta`).
    pub event_formats: Vec<(String, String)>,
    /// `/proc/kallsyms` (empty when left in the file: see `kallsyms_section`).
    pub kallsyms: String,
    /// Where the kallsyms section is (v7), when it was left in the file to be loaded on another thread (as
    /// `DatReader::open` does).
    pub kallsyms_section: Option<u64>,
    /// `printk_formats`.
    pub printk: String,
    /// `saved_cmdlines`.
    pub cmdlines: String,
    /// CPUs in the header / CPUCOUNT.
    pub cpus: u32,
    /// TRACECLOCK's selected clock.
    pub clock: Option<String>,
    /// UNAME option.
    pub uname: Option<String>,
    /// How raw timestamps become times (the TIME_SHIFT, TSC2NSEC, DATE and OFFSET options).
    pub time: TimeMap,
    /// The buffers with data.
    pub buffers: Vec<Buffer>,
    /// Buffers whose CPUSTAT options show the kernel's raw clock counts (`now ts: 67818509289153`, no
    /// decimal point: the ring buffer's clock does not count nanoseconds), by name (`""` for the top one).
    pub raw_count_buffers: Vec<String>,
    /// The buffer the CPUSTAT options being read belong to (v7 names it in a CPUSTAT of its own).
    cpustat_buffer: String,
    /// Recoverable problems in the metadata.
    pub warnings: Vec<String>,
}

impl Meta {
    /// The file header's fields only (version, endianness, sizes, compression): what reading a section
    /// needs.
    pub(crate) fn clone_header(&self) -> Meta {
        let mut m = Meta::empty(self.version, self.big_endian, self.long_size, self.page_size);
        m.compression = self.compression;
        m
    }

    pub(crate) fn empty(version: u32, big_endian: bool, long_size: u8, page_size: u32) -> Meta {
        Meta {
            version,
            big_endian,
            long_size,
            page_size,
            compression: Compression::None,
            header_page: String::new(),
            header_event: String::new(),
            ftrace_formats: Vec::new(),
            event_formats: Vec::new(),
            kallsyms: String::new(),
            kallsyms_section: None,
            printk: String::new(),
            cmdlines: String::new(),
            cpus: 0,
            clock: None,
            uname: None,
            time: TimeMap::default(),
            buffers: Vec::new(),
            raw_count_buffers: Vec::new(),
            cpustat_buffer: String::new(),
            warnings: Vec::new(),
        }
    }
}

/// Clocks that count cycles rather than nanoseconds (the kernel's `trace_clocks[]` with `in_ns` 0).
pub(crate) const CYCLE_CLOCKS: &[&str] = &["x86-tsc", "counter", "ppc-tb"];

impl Meta {
    /// The clock of the buffers with data when it counts cycles the file gives no conversion for (no
    /// TSC2NSEC option): its name, and whether the name came from the CPUSTAT counts rather than the
    /// clock option (trace-cmd 3.1 `extract` writes the top buffer's clock for every buffer).
    pub fn unconverted_cycles(&self) -> Option<(String, bool)> {
        if self.time.tsc2nsec.is_some() {
            return None;
        }
        self.buffers.iter().filter(|b| b.cpus.iter().any(|c| c.size > 0)).find_map(|b| {
            let clock = b.clock.clone().or_else(|| self.clock.clone()).unwrap_or_default();
            if CYCLE_CLOCKS.contains(&clock.as_str()) {
                Some((clock, false))
            } else if self.raw_count_buffers.contains(&b.name) {
                Some((clock, true))
            } else {
                None
            }
        })
    }
}

/// `[local] global counter` ➜ `local`.
fn selected_clock(text: &str) -> Option<String> {
    let s = text.find('[')?;
    let e = text[s..].find(']')?;
    Some(text[s + 1..s + e].to_string())
}

/// Called with the file header and the kallsyms section's offset as soon as the options locate it.
pub(crate) type KallsymsFound<'a> = &'a mut dyn FnMut(&Meta, u64);

/// Read the metadata. Errors name the offset of the damage. With `defer_kallsyms`, a v7 file's kallsyms
/// section is not read, only located (`Meta::kallsyms_section`) and handed to the callback before the
/// other sections are read, so it can be loaded on another thread meanwhile (see [`read_kallsyms_section`]).
pub(crate) fn read_meta<R: Read + Seek>(inp: &mut Input<R>, defer_kallsyms: Option<KallsymsFound>) -> InResult<Meta> {
    let magic = inp.bytes(10).map_err(|_| "too short for a trace-cmd file".to_string())?;
    if magic != MAGIC {
        return Err("no trace-cmd magic (0x17 0x08 0x44 \"tracing\")".into());
    }
    let version_s = inp.cstr()?;
    let version: u32 = version_s.parse().map_err(|_| format!("bad file version `{version_s}`"))?;
    let big_endian = inp.u8()? != 0;
    inp.big_endian = big_endian;
    let long_size = inp.u8()?;
    let page_size = inp.u32()?;
    if !(1024..=(1 << 24)).contains(&page_size) {
        return Err(format!("implausible page size {page_size}"));
    }
    let mut m = Meta::empty(version, big_endian, long_size, page_size);
    match version {
        6 => read_v6(inp, &mut m)?,
        7 => read_v7(inp, &mut m, defer_kallsyms)?,
        v => return Err(format!("trace-cmd file version {v} is not supported (6 and 7 are)")),
    }
    Ok(m)
}

/// The HEADER INFO block (`header_page\0` size data `header_event\0` size data).
fn header_info(b: &mut Bytes<'_>, m: &mut Meta) -> InResult<()> {
    let tag = b.cstr()?;
    if tag != HEADER_PAGE {
        return Err(format!("expected `{HEADER_PAGE}`, found `{tag}`"));
    }
    let n = b.u64()?;
    m.header_page = b.text(n)?;
    let tag = b.cstr()?;
    if tag != HEADER_EVENT {
        return Err(format!("expected `{HEADER_EVENT}`, found `{tag}`"));
    }
    let n = b.u64()?;
    m.header_event = b.text(n)?;
    Ok(())
}

fn ftrace_formats(b: &mut Bytes<'_>, m: &mut Meta) -> InResult<()> {
    let count = b.u32()?;
    for _ in 0..count {
        let n = b.u64()?;
        m.ftrace_formats.push(b.text(n)?);
    }
    Ok(())
}

fn event_formats(b: &mut Bytes<'_>, m: &mut Meta) -> InResult<()> {
    let systems = b.u32()?;
    for _ in 0..systems {
        let sys = b.cstr()?;
        let count = b.u32()?;
        for _ in 0..count {
            let n = b.u64()?;
            m.event_formats.push((sys.clone(), b.text(n)?));
        }
    }
    Ok(())
}

/// v6 stores the header blocks back to back; read them through one in-memory window per block.
fn read_v6<R: Read + Seek>(inp: &mut Input<R>, m: &mut Meta) -> InResult<()> {
    // header_page / header_event
    let mut hi = Vec::new();
    for tag in [HEADER_PAGE, HEADER_EVENT] {
        let t = inp.cstr()?;
        if t != tag {
            return Err(format!("expected `{tag}`, found `{t}`"));
        }
        let n = inp.u64()?;
        let text = inp.text(n)?;
        hi.push(text);
    }
    m.header_event = hi.pop().unwrap_or_default();
    m.header_page = hi.pop().unwrap_or_default();
    let count = inp.u32()?;
    for _ in 0..count {
        let n = inp.u64()?;
        m.ftrace_formats.push(inp.text(n)?);
    }
    let systems = inp.u32()?;
    for _ in 0..systems {
        let sys = inp.cstr()?;
        let count = inp.u32()?;
        for _ in 0..count {
            let n = inp.u64()?;
            m.event_formats.push((sys.clone(), inp.text(n)?));
        }
    }
    let n = inp.u32()?;
    m.kallsyms = inp.text(u64::from(n))?;
    let n = inp.u32()?;
    m.printk = inp.text(u64::from(n))?;
    let n = inp.u64()?;
    m.cmdlines = inp.text(n)?;
    m.cpus = inp.u32()?;
    let mut named: Vec<(u64, String)> = Vec::new();
    loop {
        let at = inp.pos();
        let label = inp.bytes(10)?;
        match &label[..] {
            LABEL_OPTIONS => loop {
                let id = inp.u16()?;
                if id == OPT_DONE {
                    break;
                }
                let size = inp.u32()?;
                let data = inp.bytes(u64::from(size))?;
                let mut b = Bytes { b: &data, at: 0, big_endian: m.big_endian, origin: at };
                match id {
                    OPT_BUFFER => {
                        let off = b.u64()?;
                        named.push((off, b.cstr()?));
                    }
                    _ => simple_option(id, &data, m),
                }
            },
            LABEL_FLYRECORD => {
                let mut top = Buffer { name: String::new(), clock: m.clock.clone(), cpus: Vec::new() };
                for cpu in 0..m.cpus {
                    let offset = inp.u64()?;
                    let size = inp.u64()?;
                    top.cpus.push(CpuData { cpu, offset, size });
                }
                m.buffers.push(top);
                break;
            }
            LABEL_LATENCY => {
                m.warnings.push(format!(
                    "offset 0x{at:x}: this .dat holds latency-tracer text, not ring-buffer data; \
                     decode it with `trace-cmd report` and feed the text to latscope"
                ));
                break;
            }
            other => {
                return Err(format!(
                    "offset 0x{at:x}: expected `options`, `flyrecord` or `latency`, found {:?}",
                    String::from_utf8_lossy(other)
                ))
            }
        }
    }
    for (off, name) in named {
        inp.seek(off)?;
        let mut buf = Buffer { name, clock: m.clock.clone(), cpus: Vec::new() };
        for cpu in 0..m.cpus {
            let offset = inp.u64()?;
            let size = inp.u64()?;
            buf.cpus.push(CpuData { cpu, offset, size });
        }
        m.buffers.push(buf);
    }
    Ok(())
}

/// Options with plain data, the same in v6 and v7.
fn simple_option(id: u16, data: &[u8], m: &mut Meta) {
    let text = || String::from_utf8_lossy(data).trim_end_matches('\0').trim().to_string();
    match id {
        OPT_TRACECLOCK => m.clock = selected_clock(&text()).or(m.clock.take()),
        OPT_UNAME => m.uname = Some(text()),
        OPT_CPUCOUNT if data.len() >= 4 => {
            m.cpus = crate::raw::page::read_uint(data, 0, 4, m.big_endian).unwrap_or(0) as u32;
        }
        // `--date`: microseconds from the trace clock to the time of day, as C text (`0x…`).
        OPT_DATE => match parse_c_integer(&text()) {
            Some(us) => m.time.offset_ns = m.time.offset_ns.wrapping_add(us.wrapping_mul(1000)),
            None => m.warnings.push(format!("DATE option `{}` is not a number; timestamps are not shifted", text())),
        },
        // `--ts-offset`: nanoseconds, as C text.
        OPT_OFFSET => match parse_c_integer(&text()) {
            Some(ns) => m.time.offset_ns = m.time.offset_ns.wrapping_add(ns),
            None => m.warnings.push(format!("OFFSET option `{}` is not a number; timestamps are not shifted", text())),
        },
        OPT_TSC2NSEC if data.len() >= 16 => {
            let word = |at| crate::raw::page::read_uint(data, at, 4, m.big_endian).unwrap_or(0) as u32;
            let (mult, shift) = (word(0), word(4));
            m.time.tsc2nsec = (mult != 0).then_some((mult, shift));
        }
        // A guest's trace from `trace-cmd record -A`: its times move onto the host's clock.
        OPT_TIME_SHIFT => match TimeShift::parse(data, m.big_endian) {
            Ok(shift) => {
                let bare = shift.cpus_without_samples();
                if !bare.is_empty() {
                    m.warnings.push(format!(
                        "the host time-sync data (TIME_SHIFT option) has no sample for guest CPU(s) {bare:?}: their \
                         timestamps stay on the guest's own clock"
                    ));
                }
                m.time.shift = Some(std::sync::Arc::new(shift));
            }
            Err(e) => m.warnings.push(format!(
                "the host time-sync data (TIME_SHIFT option) cannot be read ({e}): timestamps stay on the guest's \
                 own clock"
            )),
        },
        OPT_CPUSTAT => {
            let t = text();
            if let Some(name) = t.lines().find_map(|l| l.strip_prefix("Buffer:")) {
                m.cpustat_buffer = name.trim().to_string();
            }
            let raw = t.lines().filter_map(|l| l.strip_prefix("now ts:")).any(|v| {
                let v = v.trim();
                !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit())
            });
            if raw && !m.raw_count_buffers.contains(&m.cpustat_buffer) {
                m.raw_count_buffers.push(m.cpustat_buffer.clone());
            }
        }
        _ => {}
    }
}

/// The v7 section at `off`: its id and its (inflated) bytes.
fn section<R: Read + Seek>(inp: &mut Input<R>, m: &Meta, off: u64) -> InResult<(u16, Vec<u8>)> {
    inp.seek(off)?;
    let id = inp.u16()?;
    let flags = inp.u16()?;
    let _desc = inp.u32()?;
    let size = inp.u64()?;
    if flags & SECTION_COMPRESSED == 0 {
        return Ok((id, inp.bytes(size)?));
    }
    let csize = inp.u32()?;
    let inflated = inp.u32()?;
    let data = inp.bytes(u64::from(csize))?;
    let out = m.compression.decompress(&data, u64::from(inflated)).map_err(|e| format!("section at 0x{off:x}: {e}"))?;
    Ok((id, out))
}

fn read_v7<R: Read + Seek>(inp: &mut Input<R>, m: &mut Meta, defer_kallsyms: Option<KallsymsFound>) -> InResult<()> {
    let name = inp.cstr()?;
    let _version = inp.cstr()?;
    m.compression = Compression::from_name(&name)?;
    let mut next = inp.u64()?;
    let mut seen = std::collections::HashSet::new();
    // Metadata sections (option id, offset), read once the options are all known.
    let mut sections = Vec::new();
    while next != 0 {
        if !seen.insert(next) {
            return Err(format!("options section at 0x{next:x} is listed twice (loop)"));
        }
        let here = next;
        next = 0;
        if here >= inp.len {
            return Err(format!(
                "the file was cut short: it ends at 0x{:x}, before its options section at 0x{here:x}, which says \
                 where the CPU data is (trace-cmd writes it after the data); nothing can be decoded",
                inp.len
            ));
        }
        let (id, data) = section(inp, m, here)?;
        if id != OPT_DONE {
            return Err(format!("offset 0x{here:x}: expected an options section (id {OPT_DONE}), found id {id}"));
        }
        let mut b = Bytes { b: &data, at: 0, big_endian: m.big_endian, origin: here };
        while b.remaining() >= 6 {
            let oid = b.u16()?;
            let size = b.u32()?;
            let odata = b.take(u64::from(size))?.to_vec();
            let mut ob = Bytes { b: &odata, at: 0, big_endian: m.big_endian, origin: here };
            match oid {
                OPT_DONE => {
                    next = ob.u64().unwrap_or(0);
                    break;
                }
                OPT_HEADER_INFO | OPT_FTRACE_EVENTS | OPT_EVENT_FORMATS | OPT_KALLSYMS | OPT_PRINTK | OPT_CMDLINES => {
                    sections.push((oid, ob.u64()?));
                }
                OPT_BUFFER => {
                    let _data_section = ob.u64()?;
                    let mut buf = Buffer { name: ob.cstr()?, clock: None, cpus: Vec::new() };
                    let clock = ob.cstr()?;
                    buf.clock = (!clock.is_empty()).then_some(clock);
                    let _page_size = ob.u32()?;
                    let count = ob.u32()?;
                    for _ in 0..count {
                        let cpu = ob.u32()?;
                        let offset = ob.u64()?;
                        let size = ob.u64()?;
                        buf.cpus.push(CpuData { cpu, offset, size });
                    }
                    m.buffers.push(buf);
                }
                OPT_BUFFER_TEXT => m.warnings.push(
                    "this .dat holds latency-tracer text, not ring-buffer data; decode it with `trace-cmd report`"
                        .into(),
                ),
                _ => simple_option(oid, &odata, m),
            }
        }
    }
    if let Some(found) = defer_kallsyms {
        if let Some(&(_, off)) = sections.iter().find(|(oid, _)| *oid == OPT_KALLSYMS) {
            m.kallsyms_section = Some(off);
            found(m, off);
        }
    }
    for (oid, off) in sections {
        if oid == OPT_KALLSYMS && m.kallsyms_section.is_some() {
            continue;
        }
        if let Err(e) = v7_meta_section(inp, m, oid, off) {
            if oid == OPT_HEADER_INFO || oid == OPT_EVENT_FORMATS {
                return Err(e);
            }
            m.warnings.push(e);
        }
    }
    if m.clock.is_none() {
        m.clock = m.buffers.iter().find_map(|b| b.clock.clone());
    }
    Ok(())
}

/// The kallsyms section at `off` (located by [`read_meta`]), inflated in one piece: its bytes and where
/// the text starts in them (after the 4-byte length). A length past the section's end keeps what is there.
pub(crate) fn read_kallsyms_section<R: Read + Seek>(
    inp: &mut Input<R>,
    m: &Meta,
    off: u64,
) -> InResult<(Vec<u8>, usize)> {
    inp.big_endian = m.big_endian;
    let (_id, mut bytes) = section(inp, m, off)?;
    let Some(&[a, b, c, d]) = bytes.get(..4) else {
        return Err(format!("section at 0x{off:x}: {} bytes, too short for the kallsyms length", bytes.len()));
    };
    let n = if m.big_endian { u32::from_be_bytes([a, b, c, d]) } else { u32::from_le_bytes([a, b, c, d]) };
    bytes.truncate(4usize.saturating_add(n as usize));
    Ok((bytes, 4))
}

fn v7_meta_section<R: Read + Seek>(inp: &mut Input<R>, m: &mut Meta, oid: u16, off: u64) -> InResult<()> {
    let (_id, data) = section(inp, m, off)?;
    let mut b = Bytes { b: &data, at: 0, big_endian: m.big_endian, origin: off };
    let what = match oid {
        OPT_HEADER_INFO => header_info(&mut b, m).map(|_| "header info"),
        OPT_FTRACE_EVENTS => ftrace_formats(&mut b, m).map(|_| "ftrace formats"),
        OPT_EVENT_FORMATS => event_formats(&mut b, m).map(|_| "event formats"),
        OPT_KALLSYMS => b.u32().and_then(|n| b.text(u64::from(n))).map(|t| m.kallsyms = t).map(|_| "kallsyms"),
        OPT_PRINTK => b.u32().and_then(|n| b.text(u64::from(n))).map(|t| m.printk = t).map(|_| "printk"),
        _ => b.u64().and_then(|n| b.text(n)).map(|t| m.cmdlines = t).map(|_| "cmdlines"),
    };
    what.map(|_| ()).map_err(|e| format!("section at 0x{off:x}: {e}"))
}
