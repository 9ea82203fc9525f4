//! Writes a capture as a trace-cmd `.dat` file, version 7, zstd-compressed, as documented in
//! trace-cmd.dat.v7(5) and as trace-cmd 3.x writes it with `--compression zstd`: each metadata section
//! compressed whole, each CPU's pages compressed in chunks of ten pages. Memory stays bounded whatever the
//! capture's size: the pages are compressed, chunk by chunk, into a scratch file first (their compressed
//! sizes decide every offset the options give), then copied after the metadata.
//!
//! Layout: magic, `7`, endianness, long size, page size, `zstd` and its version, the options' offset;
//! sections (id, flags, description string, size): header info, ftrace formats, event formats, kallsyms,
//! printk formats, saved cmdlines; the options (pointers to those sections, trace clock, uname, version,
//! per-CPU stats, CPU count, the buffer with each CPU's data); the flyrecord section (each CPU's chunk list,
//! page aligned); the strings section naming the sections. Sections are back to back, as trace-cmd walks
//! them from the first to find the strings.

use super::spec::{
    HEADER_EVENT, HEADER_PAGE, MAGIC, OPT_BUFFER, OPT_CMDLINES, OPT_CPUCOUNT, OPT_CPUSTAT, OPT_DONE, OPT_EVENT_FORMATS,
    OPT_FTRACE_EVENTS, OPT_HEADER_INFO, OPT_KALLSYMS, OPT_PRINTK, OPT_TRACECLOCK, OPT_UNAME, OPT_VERSION,
    SECTION_COMPRESSED,
};
use super::writer::{nul, DatInput, DatSummary, Header, PageSource};
use crate::DecodeError;
use latscope_model::CpuId;
use std::io::{Read, Seek, SeekFrom, Write};

/// Pages per compressed chunk (trace-cmd's `PAGES_IN_CHUNK`).
pub const PAGES_PER_CHUNK: usize = 10;
/// zstd level: trace-cmd's (the library default).
const LEVEL: i32 = 3;
/// The strings section's id (trace-cmd's `TRACECMD_OPTION_STRINGS`).
const SECTION_STRINGS: u16 = 15;

/// One CPU's compressed data in the scratch file.
struct Compressed {
    cpu: CpuId,
    /// Where its chunk list starts in the scratch file.
    at: u64,
    /// Bytes of the chunk list (count, then each chunk's sizes and data).
    len: u64,
    /// Pages it holds.
    pages: u64,
}

/// Writes the file to `out` (named `out_name` in messages), compressing the pages through `scratch` (an
/// empty file the caller removes afterwards); returns its size, where the data went, and the pages' size
/// before and after compression.
pub fn write_dat_v7_zstd<S: Read + Write + Seek>(
    out: &mut dyn Write,
    input: DatInput<'_>,
    scratch: &mut S,
    out_name: &str,
) -> Result<DatSummary, DecodeError> {
    let err = |source: std::io::Error| DecodeError::Write { path: out_name.to_string(), source };
    let scratch_err = |source: std::io::Error| DecodeError::Write { path: format!("{out_name} (scratch)"), source };
    let page_size = input.page_size.max(1) as u64;
    let mut zstd = zstd::bulk::Compressor::new(LEVEL).map_err(scratch_err)?;

    // 1. The pages, compressed into the scratch file.
    let mut cpus = input.cpus;
    cpus.sort_by_key(|c| c.cpu);
    let stats: Vec<(CpuId, &str)> = cpus.iter().filter_map(|c| Some((c.cpu, c.stats?))).collect();
    let mut compressed = Vec::new();
    let mut raw_bytes = 0;
    for c in cpus {
        let at = scratch.stream_position().map_err(scratch_err)?;
        let (pages, len) = match c.pages {
            PageSource::Pages(pages) => {
                let mut chunks = pages.chunks(PAGES_PER_CHUNK).map(|chunk| {
                    let mut buf = vec![0u8; chunk.len() * page_size as usize];
                    for (p, to) in chunk.iter().zip(buf.chunks_mut(page_size as usize)) {
                        let n = p.len().min(to.len());
                        to[..n].copy_from_slice(&p[..n]);
                    }
                    Ok(buf)
                });
                (
                    pages.len() as u64,
                    write_chunks(&mut chunks, &mut zstd, scratch, input.big_endian).map_err(scratch_err)?,
                )
            }
            PageSource::Stream { name, len, reader } => {
                let mut src = reader.take(len);
                let mut read = 0u64;
                let mut chunks = std::iter::from_fn(|| {
                    let mut buf = vec![0u8; PAGES_PER_CHUNK * page_size as usize];
                    match read_full(&mut src, &mut buf) {
                        Ok(0) => None,
                        Ok(n) => {
                            read += n as u64;
                            // A last partial page is padded: chunks hold whole pages.
                            buf.truncate((n as u64).div_ceil(page_size) as usize * page_size as usize);
                            Some(Ok(buf))
                        }
                        Err(e) => Some(Err(e)),
                    }
                });
                let written = write_chunks(&mut chunks, &mut zstd, scratch, input.big_endian)
                    .map_err(|source| DecodeError::Io { path: name.clone(), source })?;
                if read < len {
                    let source = std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!(
                            "{read} bytes of pages where {len} were announced; the spool file shrank while the \
                             .dat was written"
                        ),
                    );
                    return Err(DecodeError::Io { path: name, source });
                }
                (read.div_ceil(page_size), written)
            }
        };
        raw_bytes += pages * page_size;
        compressed.push(Compressed { cpu: c.cpu, at, len, pages });
    }

    // 2. Everything before the data, in memory: header, metadata sections, options, flyrecord header.
    let mut strings = Strings::default();
    let mut h = Header::new(input.big_endian);
    h.bytes(MAGIC);
    h.bytes(b"7\0");
    h.bytes(&[u8::from(input.big_endian), input.long_size]);
    h.u32(page_size as u32);
    h.cstr("zstd");
    h.cstr(zstd::zstd_safe::version_string());
    let options_at_field = h.buf.len();
    h.u64(0);

    let mut meta = Vec::new();
    let mut body = Header::new(input.big_endian);
    body.cstr(HEADER_PAGE);
    body.sized64(input.header_page.as_bytes());
    body.cstr(HEADER_EVENT);
    body.sized64(input.header_event.as_bytes());
    meta.push((OPT_HEADER_INFO, "headers", body.buf));
    let mut body = Header::new(input.big_endian);
    let ftrace: Vec<&str> = input.formats.iter().filter(|f| f.0 == "ftrace").map(|f| f.1).collect();
    body.u32(ftrace.len() as u32);
    for text in &ftrace {
        body.sized64(text.as_bytes());
    }
    meta.push((OPT_FTRACE_EVENTS, "ftrace events", body.buf));
    let mut body = Header::new(input.big_endian);
    let mut systems: Vec<&str> = Vec::new();
    for (sys, _) in input.formats.iter().filter(|f| f.0 != "ftrace") {
        if !systems.contains(sys) {
            systems.push(sys);
        }
    }
    body.u32(systems.len() as u32);
    for sys in &systems {
        body.cstr(sys);
        let events: Vec<&str> = input.formats.iter().filter(|f| f.0 == *sys).map(|f| f.1).collect();
        body.u32(events.len() as u32);
        for text in events {
            body.sized64(text.as_bytes());
        }
    }
    meta.push((OPT_EVENT_FORMATS, "events format", body.buf));
    let mut body = Header::new(input.big_endian);
    body.sized32(input.kallsyms.as_bytes());
    meta.push((OPT_KALLSYMS, "kallsyms", body.buf));
    let mut body = Header::new(input.big_endian);
    body.sized32(input.printk_formats.as_bytes());
    meta.push((OPT_PRINTK, "printk", body.buf));
    let mut body = Header::new(input.big_endian);
    body.sized64(input.cmdlines.as_bytes());
    meta.push((OPT_CMDLINES, "command lines", body.buf));
    let mut pointers = Vec::new();
    for (id, desc, data) in &meta {
        pointers.push((*id, h.buf.len() as u64));
        let z = zstd.compress(data).map_err(err)?;
        h.u16(*id);
        h.u16(SECTION_COMPRESSED);
        h.u32(strings.id(desc));
        h.u64(z.len() as u64 + 8);
        h.u32(z.len() as u32);
        h.u32(data.len() as u32);
        h.bytes(&z);
    }

    // The options, whose size does not depend on the offsets they give: built once to measure, once for real.
    let options_at = h.buf.len() as u64;
    let slots = compressed.iter().map(|c| c.cpu.0 + 1).max().unwrap_or(0);
    let options = |fly_at: u64, data: &[(CpuId, u64, u64)]| {
        let mut o = Header::new(input.big_endian);
        for (id, at) in &pointers {
            let mut v = Header::new(input.big_endian);
            v.u64(*at);
            o.option(*id, &v.buf);
        }
        o.option(OPT_TRACECLOCK, &nul(&format!("[{}]\n", input.clock)));
        o.option(OPT_UNAME, &nul(input.uname));
        o.option(OPT_VERSION, &nul(input.version));
        for (cpu, text) in &stats {
            o.option(OPT_CPUSTAT, &nul(&format!("CPU: {cpu}\n{text}")));
        }
        let mut n = Header::new(input.big_endian);
        n.u32(slots);
        o.option(OPT_CPUCOUNT, &n.buf);
        let mut b = Header::new(input.big_endian);
        b.u64(fly_at);
        b.cstr("");
        b.cstr(input.clock);
        b.u32(page_size as u32);
        b.u32(data.len() as u32);
        for (cpu, at, len) in data {
            b.u32(cpu.0);
            b.u64(*at);
            b.u64(*len);
        }
        o.option(OPT_BUFFER, &b.buf);
        let mut done = Header::new(input.big_endian);
        done.u64(0);
        o.option(OPT_DONE, &done.buf);
        o.buf
    };
    let placeholder: Vec<(CpuId, u64, u64)> = compressed.iter().map(|c| (c.cpu, 0, 0)).collect();
    let fly_at = options_at + SECTION_HEADER + options(0, &placeholder).len() as u64;
    // Each CPU's data starts on a page boundary, as trace-cmd places it.
    let data_offset = (fly_at + SECTION_HEADER).div_ceil(page_size) * page_size;
    let mut at = data_offset;
    let mut table = Vec::new();
    for c in &compressed {
        table.push((c.cpu, at, c.len));
        at = (at + c.len).div_ceil(page_size) * page_size;
    }
    let data_end = at;
    let opts = options(fly_at, &table);
    h.u16(OPT_DONE);
    h.u16(0);
    h.u32(strings.id("options"));
    h.u64(opts.len() as u64);
    h.bytes(&opts);
    h.u16(OPT_BUFFER);
    h.u16(SECTION_COMPRESSED);
    h.u32(strings.id("buffer flyrecord "));
    h.u64(data_end - (fly_at + SECTION_HEADER));
    h.buf.resize(data_offset as usize, 0);
    let options_field = options_at.to_le_bytes();
    let options_field = if input.big_endian { options_at.to_be_bytes() } else { options_field };
    h.buf[options_at_field..options_at_field + 8].copy_from_slice(&options_field);
    out.write_all(&h.buf).map_err(err)?;

    // 3. The data, copied from the scratch file, each CPU padded to the next page; then the strings.
    let mut written = data_offset;
    for (c, (_, at, _)) in compressed.iter().zip(&table) {
        let pad = at - written;
        out.write_all(&vec![0u8; pad as usize]).map_err(err)?;
        scratch.seek(SeekFrom::Start(c.at)).map_err(scratch_err)?;
        let copied = std::io::copy(&mut Read::by_ref(scratch).take(c.len), out).map_err(err)?;
        if copied < c.len {
            let e = std::io::Error::new(std::io::ErrorKind::UnexpectedEof, "the scratch file shrank");
            return Err(scratch_err(e));
        }
        written = at + c.len;
    }
    out.write_all(&vec![0u8; (data_end - written) as usize]).map_err(err)?;
    let desc = strings.id("strings");
    let z = zstd.compress(&strings.bytes).map_err(err)?;
    let mut s = Header::new(input.big_endian);
    s.u16(SECTION_STRINGS);
    s.u16(SECTION_COMPRESSED);
    s.u32(desc);
    s.u64(z.len() as u64 + 8);
    s.u32(z.len() as u32);
    s.u32(strings.bytes.len() as u32);
    s.bytes(&z);
    out.write_all(&s.buf).map_err(err)?;
    out.flush().map_err(err)?;
    Ok(DatSummary {
        bytes: data_end + s.buf.len() as u64,
        data_offset,
        pages: compressed.iter().map(|c| (c.cpu, c.pages)).collect(),
        raw_bytes,
        data_bytes: compressed.iter().map(|c| c.len).sum(),
    })
}

/// Bytes of a section header: id, flags, description, size.
const SECTION_HEADER: u64 = 16;

/// Compresses `chunks` (whole pages each) into `scratch` as a v7 chunk list: the count, then per chunk its
/// compressed and uncompressed sizes and its data. Returns the list's length in bytes.
fn write_chunks<S: Write + Seek>(
    chunks: &mut dyn Iterator<Item = std::io::Result<Vec<u8>>>,
    zstd: &mut zstd::bulk::Compressor<'_>,
    scratch: &mut S,
    big_endian: bool,
) -> std::io::Result<u64> {
    let word = |v: u32| if big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
    let start = scratch.stream_position()?;
    scratch.write_all(&[0; 4])?;
    let mut count = 0u32;
    for chunk in chunks {
        let chunk = chunk?;
        let z = zstd.compress(&chunk)?;
        scratch.write_all(&word(z.len() as u32))?;
        scratch.write_all(&word(chunk.len() as u32))?;
        scratch.write_all(&z)?;
        count += 1;
    }
    let end = scratch.stream_position()?;
    scratch.seek(SeekFrom::Start(start))?;
    scratch.write_all(&word(count))?;
    scratch.seek(SeekFrom::Start(end))?;
    Ok(end - start)
}

/// Reads until `buf` is full or the source ends; returns the bytes read.
fn read_full(src: &mut dyn Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// The strings section: each description once, its id the offset of its text.
#[derive(Default)]
struct Strings {
    bytes: Vec<u8>,
}

impl Strings {
    fn id(&mut self, s: &str) -> u32 {
        let mut at = 0;
        for t in self.bytes.split(|b| *b == 0) {
            if t == s.as_bytes() && at < self.bytes.len() {
                return at as u32;
            }
            at += t.len() + 1;
        }
        let id = self.bytes.len() as u32;
        self.bytes.extend_from_slice(s.as_bytes());
        self.bytes.push(0);
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dat::input::Input;
    use crate::dat::meta::read_meta;
    use crate::dat::writer::DatCpu;

    fn fixture(name: &str) -> Vec<u8> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/dat").join(name);
        std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
    }

    /// Rewrites a real v6 recording as v7 zstd from its own metadata and pages, the way `record --compress`
    /// writes a capture: every event decodes the same, and the file is smaller.
    fn rewrite(name: &str) -> (Vec<u8>, Vec<u8>, DatSummary) {
        let v6 = fixture(name);
        let m = read_meta(&mut Input::new(std::io::Cursor::new(&v6)).expect("input"), None).expect("meta");
        assert_eq!(m.version, 6);
        let ps = m.page_size as usize;
        let mut formats: Vec<(&str, &str)> = m.ftrace_formats.iter().map(|f| ("ftrace", f.as_str())).collect();
        formats.extend(m.event_formats.iter().map(|(s, f)| (s.as_str(), f.as_str())));
        let cpus = m.buffers[0]
            .cpus
            .iter()
            .filter(|d| d.size > 0)
            .map(|d| {
                let data = &v6[d.offset as usize..(d.offset + d.size) as usize];
                DatCpu { cpu: CpuId(d.cpu), pages: PageSource::Pages(data.chunks(ps).collect()), stats: None }
            })
            .collect();
        let clock = m.clock.clone().unwrap_or_else(|| "local".into());
        let input = DatInput {
            header_page: &m.header_page,
            header_event: &m.header_event,
            formats,
            page_size: ps,
            big_endian: m.big_endian,
            long_size: m.long_size,
            clock: &clock,
            kallsyms: &m.kallsyms,
            printk_formats: &m.printk,
            cmdlines: &m.cmdlines,
            cpus,
            uname: m.uname.as_deref().unwrap_or(""),
            version: "latscope test",
        };
        let mut out = Vec::new();
        let mut scratch = std::io::Cursor::new(Vec::new());
        let s = write_dat_v7_zstd(&mut out, input, &mut scratch, "v7.dat").expect("write");
        (v6, out, s)
    }

    #[test]
    fn a_real_recording_rewritten_as_v7_zstd_decodes_to_the_same_events() {
        for name in ["local-6.18-x86_64-printk-stacks-v6.dat", "rpi-4.14.62-armv7-sched_switch-v6.dat"] {
            let (v6, v7, s) = rewrite(name);
            assert_eq!(s.bytes as usize, v7.len(), "{name}");
            assert_eq!(&v7[..12], b"\x17\x08\x44tracing7\0");
            let a = crate::decode_dat_bytes(&v6, "v6").expect("v6 decodes");
            let b = crate::decode_dat_bytes(&v7, "v7").expect("v7 decodes");
            assert!(!a.events.is_empty());
            assert_eq!(a.events, b.events, "{name}: the events differ");
            assert_eq!(a.info.lost, b.info.lost, "{name}");
            assert_eq!(b.info.format, Some(crate::Format::TraceCmdDat(7)));
            assert!(b.warnings.is_empty(), "{name}: {:?}", b.warnings);
            assert!(v7.len() * 2 < v6.len(), "{name}: {} bytes compressed from {}", v7.len(), v6.len());
            assert_eq!(s.raw_bytes % s.pages.iter().map(|p| p.1).sum::<u64>().max(1), 0);
        }
    }

    /// Sections follow each other from the options' offset field to the end of the file, as trace-cmd walks
    /// them to find the strings section; each CPU's data starts on a page boundary.
    #[test]
    fn sections_are_back_to_back_and_the_data_page_aligned() {
        let (_, v7, s) = rewrite("local-6.18-x86_64-printk-stacks-v6.dat");
        let word = |at: usize, n: usize| {
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(&v7[at..at + n]);
            u64::from_le_bytes(b)
        };
        let after_header = 10 + 2 + 2 + 4 + "zstd\0".len() + zstd::zstd_safe::version_string().len() + 1 + 8;
        let mut at = after_header;
        let mut ids = Vec::new();
        while at < v7.len() {
            ids.push(word(at, 2) as u16);
            at += 16 + word(at + 8, 8) as usize;
        }
        assert_eq!(at, v7.len());
        assert_eq!(ids, [16, 17, 18, 19, 20, 21, 0, 3, 15]);
        assert_eq!(s.data_offset % 4096, 0);
        let m = read_meta(&mut Input::new(std::io::Cursor::new(&v7)).expect("input"), None).expect("meta");
        assert!(m.buffers[0].cpus.iter().all(|c| c.offset % 4096 == 0), "{:?}", m.buffers[0].cpus);
    }
}
