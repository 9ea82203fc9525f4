//! Writes a capture as a trace-cmd `.dat` file, version 6 (flyrecord, uncompressed), as documented in
//! trace-cmd.dat.v6(5): the kernel's own page bytes plus the format texts needed to read them. Pure: the
//! pages come as bytes or readers, the file goes to any [`Write`]; the numbers are those the reader uses
//! ([`super::spec`]).
//!
//! Layout: magic, version, endianness, long size, page size; header_page; header_event; ftrace formats;
//! event formats per system; kallsyms; printk formats; saved cmdlines; CPU count; options (trace clock,
//! uname, version, per-CPU stats); `flyrecord` with each CPU's offset and size; the trace clock text;
//! padding to a page boundary; then each CPU's pages back to back.

use super::spec::{
    HEADER_EVENT, HEADER_PAGE, LABEL_FLYRECORD, LABEL_OPTIONS, MAGIC, OPT_CPUSTAT, OPT_DONE, OPT_TRACECLOCK, OPT_UNAME,
    OPT_VERSION,
};
use crate::DecodeError;
use latscope_model::CpuId;
use std::io::{Read, Write};

/// Where one CPU's pages are.
pub enum PageSource<'a> {
    /// Whole pages in memory, oldest first (each written padded, or cut, to the page size).
    Pages(Vec<&'a [u8]>),
    /// Whole pages back to back (a spool file), `len` bytes, read from `reader` as the file is written.
    Stream {
        /// The source's name in messages (the spool file).
        name: String,
        /// Bytes it holds.
        len: u64,
        /// The bytes.
        reader: Box<dyn Read + 'a>,
    },
}

/// One CPU's data for the file.
pub struct DatCpu<'a> {
    /// The CPU.
    pub cpu: CpuId,
    /// Its pages.
    pub pages: PageSource<'a>,
    /// Its `per_cpu/cpuN/stats` text (stored as a CPUSTAT option), when read.
    pub stats: Option<&'a str>,
}

/// Everything that goes into the file.
pub struct DatInput<'a> {
    /// `events/header_page` text.
    pub header_page: &'a str,
    /// `events/header_event` text.
    pub header_event: &'a str,
    /// (system, `format` file text) of every event, `ftrace` ones included.
    pub formats: Vec<(&'a str, &'a str)>,
    /// Ring-buffer page size in bytes.
    pub page_size: usize,
    /// Whether the recording kernel is big-endian.
    pub big_endian: bool,
    /// Size of a user-space `long` on the recording machine.
    pub long_size: u8,
    /// The trace clock.
    pub clock: &'a str,
    /// `/proc/kallsyms` text (may be empty).
    pub kallsyms: &'a str,
    /// `printk_formats` text (may be empty).
    pub printk_formats: &'a str,
    /// `saved_cmdlines` text.
    pub cmdlines: &'a str,
    /// The recorded CPUs; CPUs between them without data get empty slots.
    pub cpus: Vec<DatCpu<'a>>,
    /// `uname -a`-like text for the UNAME option.
    pub uname: &'a str,
    /// The writing tool's version for the VERSION option.
    pub version: &'a str,
}

/// What was written.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DatSummary {
    /// Bytes in the file.
    pub bytes: u64,
    /// Offset of the first CPU's data (page aligned).
    pub data_offset: u64,
    /// Pages written per CPU slot.
    pub pages: Vec<(CpuId, u64)>,
    /// Bytes of pages before compression.
    pub raw_bytes: u64,
    /// Bytes the pages take in the file (compressed, or `raw_bytes`).
    pub data_bytes: u64,
}

/// Writes the file to `out` (named `out_name` in messages); returns its size and where the data went.
pub fn write_dat_v6(out: &mut dyn Write, input: DatInput<'_>, out_name: &str) -> Result<DatSummary, DecodeError> {
    let err = |source: std::io::Error| DecodeError::Write { path: out_name.to_string(), source };
    let page_size = input.page_size.max(1) as u64;
    let mut h = Header::new(input.big_endian);
    h.bytes(MAGIC);
    h.bytes(b"6\0");
    h.bytes(&[u8::from(input.big_endian), input.long_size]);
    h.u32(page_size as u32);
    h.cstr(HEADER_PAGE);
    h.sized64(input.header_page.as_bytes());
    h.cstr(HEADER_EVENT);
    h.sized64(input.header_event.as_bytes());

    let ftrace: Vec<&str> = input.formats.iter().filter(|f| f.0 == "ftrace").map(|f| f.1).collect();
    h.u32(ftrace.len() as u32);
    for text in &ftrace {
        h.sized64(text.as_bytes());
    }
    let mut systems: Vec<&str> = Vec::new();
    for (sys, _) in input.formats.iter().filter(|f| f.0 != "ftrace") {
        if !systems.contains(sys) {
            systems.push(sys);
        }
    }
    h.u32(systems.len() as u32);
    for sys in &systems {
        h.cstr(sys);
        let events: Vec<&str> = input.formats.iter().filter(|f| f.0 == *sys).map(|f| f.1).collect();
        h.u32(events.len() as u32);
        for text in events {
            h.sized64(text.as_bytes());
        }
    }
    h.sized32(input.kallsyms.as_bytes());
    h.sized32(input.printk_formats.as_bytes());
    h.sized64(input.cmdlines.as_bytes());

    // CPU slots 0..=max, so a CPU's data sits at its own index.
    let slots = input.cpus.iter().map(|c| c.cpu.0 + 1).max().unwrap_or(0);
    h.u32(slots);
    h.bytes(LABEL_OPTIONS);
    h.option(OPT_TRACECLOCK, b"");
    h.option(OPT_UNAME, &nul(input.uname));
    h.option(OPT_VERSION, &nul(input.version));
    for c in &input.cpus {
        if let Some(s) = c.stats {
            h.option(OPT_CPUSTAT, &nul(&format!("CPU: {}\n{s}", c.cpu)));
        }
    }
    h.u16(OPT_DONE);
    h.bytes(LABEL_FLYRECORD);

    // Sizes first, so the offsets can be computed before any data is written.
    let mut sizes = vec![0u64; slots as usize];
    for c in &input.cpus {
        sizes[c.cpu.0 as usize] = match &c.pages {
            PageSource::Pages(pages) => pages.len() as u64 * page_size,
            PageSource::Stream { len, .. } => *len,
        };
    }
    let clock_text = format!("[{}]\n", input.clock);
    let table_end = h.buf.len() as u64 + 16 * u64::from(slots) + 8 + clock_text.len() as u64;
    let data_offset = table_end.div_ceil(page_size) * page_size;
    let mut offset = data_offset;
    let mut summary = DatSummary { data_offset, ..DatSummary::default() };
    for (i, size) in sizes.iter().enumerate() {
        h.u64(offset);
        h.u64(*size);
        summary.pages.push((CpuId(i as u32), size / page_size));
        offset += size;
    }
    h.sized64(clock_text.as_bytes());
    h.buf.resize(data_offset as usize, 0);
    out.write_all(&h.buf).map_err(err)?;

    let mut cpus = input.cpus;
    cpus.sort_by_key(|c| c.cpu);
    let mut page = vec![0u8; page_size as usize];
    for c in cpus {
        match c.pages {
            PageSource::Pages(pages) => {
                for p in pages {
                    let n = p.len().min(page.len());
                    page[..n].copy_from_slice(&p[..n]);
                    page[n..].fill(0);
                    out.write_all(&page).map_err(err)?;
                }
            }
            PageSource::Stream { name, len, reader } => copy_exactly(reader, len, &name, out, out_name)?,
        }
    }
    out.flush().map_err(err)?;
    summary.bytes = offset;
    summary.raw_bytes = offset - data_offset;
    summary.data_bytes = summary.raw_bytes;
    Ok(summary)
}

/// Copies `len` bytes of `reader` (named `name`) to `out`: fewer would shift every later CPU's data away
/// from the offset the file gives it.
fn copy_exactly(
    reader: Box<dyn Read + '_>,
    len: u64,
    name: &str,
    out: &mut dyn Write,
    out_name: &str,
) -> Result<(), DecodeError> {
    let mut src = reader.take(len);
    let mut buf = vec![0u8; 1 << 16];
    let mut copied = 0u64;
    loop {
        let n = match src.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(source) => return Err(DecodeError::Io { path: name.to_string(), source }),
        };
        out.write_all(&buf[..n]).map_err(|source| DecodeError::Write { path: out_name.to_string(), source })?;
        copied += n as u64;
    }
    if copied < len {
        let source = std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            format!(
                "{copied} bytes of pages where {len} were announced; the spool file shrank while the .dat was written"
            ),
        );
        return Err(DecodeError::Io { path: name.to_string(), source });
    }
    Ok(())
}

pub(super) fn nul(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

/// The header being built, numbers in the file's endianness.
pub(super) struct Header {
    pub(super) buf: Vec<u8>,
    big_endian: bool,
}

impl Header {
    pub(super) fn new(big_endian: bool) -> Header {
        Header { buf: Vec::with_capacity(1 << 20), big_endian }
    }
    pub(super) fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
    pub(super) fn cstr(&mut self, s: &str) {
        self.bytes(s.as_bytes());
        self.bytes(&[0]);
    }
    pub(super) fn u16(&mut self, v: u16) {
        let b = if self.big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
        self.bytes(&b);
    }
    pub(super) fn u32(&mut self, v: u32) {
        let b = if self.big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
        self.bytes(&b);
    }
    pub(super) fn u64(&mut self, v: u64) {
        let b = if self.big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
        self.bytes(&b);
    }
    pub(super) fn sized32(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.bytes(b);
    }
    pub(super) fn sized64(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.bytes(b);
    }
    pub(super) fn option(&mut self, id: u16, data: &[u8]) {
        self.u16(id);
        self.sized32(data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dat::input::Input;
    use crate::dat::meta::read_meta;

    const FORMATS: [(&str, &str); 4] = [
        ("ftrace", "name: print\nID: 5\n"),
        ("sched", "name: sched_switch\n"),
        ("irq", "name: softirq_entry\n"),
        ("sched", "name: sched_waking\n"),
    ];

    fn input<'a>(cpus: Vec<DatCpu<'a>>) -> DatInput<'a> {
        DatInput {
            header_page: "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n",
            header_event: "# compressed entry header\n",
            formats: FORMATS.to_vec(),
            page_size: 4096,
            big_endian: false,
            long_size: 8,
            clock: "mono",
            kallsyms: "ffffffff81000000 T _stext\n",
            printk_formats: "",
            cmdlines: "1 init\n",
            cpus,
            uname: "Linux test",
            version: "latscope 0",
        }
    }

    /// A little reader of the same layout, enough to check every field lands where the format says.
    struct Cursor<'a>(&'a [u8], usize);
    impl Cursor<'_> {
        fn take(&mut self, n: usize) -> &[u8] {
            let s = &self.0[self.1..self.1 + n];
            self.1 += n;
            s
        }
        fn u16(&mut self) -> u16 {
            u16::from_le_bytes(self.take(2).try_into().expect("2"))
        }
        fn u32(&mut self) -> u32 {
            u32::from_le_bytes(self.take(4).try_into().expect("4"))
        }
        fn u64(&mut self) -> u64 {
            u64::from_le_bytes(self.take(8).try_into().expect("8"))
        }
        fn cstr(&mut self) -> String {
            let end = self.0[self.1..].iter().position(|&b| b == 0).expect("nul");
            let s = String::from_utf8_lossy(&self.0[self.1..self.1 + end]).into_owned();
            self.1 += end + 1;
            s
        }
        fn text64(&mut self) -> String {
            let n = self.u64() as usize;
            String::from_utf8_lossy(self.take(n)).into_owned()
        }
        fn text32(&mut self) -> String {
            let n = self.u32() as usize;
            String::from_utf8_lossy(self.take(n)).into_owned()
        }
    }

    #[test]
    fn writes_the_v6_layout() {
        let pages: Vec<Vec<u8>> = (0..3).map(|i| vec![i as u8 + 1; 4096]).collect();
        let cpus = vec![DatCpu {
            cpu: CpuId(1),
            pages: PageSource::Pages(pages.iter().map(Vec::as_slice).collect()),
            stats: Some("entries: 3\n"),
        }];
        let mut out = Vec::new();
        let s = write_dat_v6(&mut out, input(cpus), "x.dat").expect("write");
        assert_eq!(s.bytes as usize, out.len());
        assert_eq!(s.data_offset % 4096, 0);
        assert_eq!(s.pages, vec![(CpuId(0), 0), (CpuId(1), 3)]);

        let mut c = Cursor(&out, 0);
        assert_eq!(c.take(10), b"\x17\x08\x44tracing");
        assert_eq!(c.cstr(), "6");
        assert_eq!(c.take(2), &[0, 8]);
        assert_eq!(c.u32(), 4096);
        assert_eq!(c.cstr(), "header_page");
        assert!(c.text64().contains("timestamp"));
        assert_eq!(c.cstr(), "header_event");
        assert!(c.text64().contains("compressed"));
        assert_eq!(c.u32(), 1, "one ftrace format");
        assert!(c.text64().starts_with("name: print"));
        assert_eq!(c.u32(), 2, "two systems");
        assert_eq!(c.cstr(), "sched");
        assert_eq!(c.u32(), 2);
        assert!(c.text64().contains("sched_switch"));
        assert!(c.text64().contains("sched_waking"));
        assert_eq!(c.cstr(), "irq");
        assert_eq!(c.u32(), 1);
        assert!(c.text64().contains("softirq_entry"));
        assert!(c.text32().contains("_stext"));
        assert_eq!(c.text32(), "");
        assert_eq!(c.text64(), "1 init\n");
        assert_eq!(c.u32(), 2, "CPU slots 0 and 1");
        assert_eq!(c.take(10), b"options  \0");
        let mut opts = Vec::new();
        loop {
            let id = c.u16();
            if id == 0 {
                break;
            }
            let n = c.u32() as usize;
            opts.push((id, String::from_utf8_lossy(c.take(n)).into_owned()));
        }
        assert_eq!(opts[0], (OPT_TRACECLOCK, String::new()));
        assert_eq!(opts[1], (OPT_UNAME, "Linux test\0".into()));
        assert_eq!(opts[3], (OPT_CPUSTAT, "CPU: 1\nentries: 3\n\0".into()));
        assert_eq!(c.take(10), b"flyrecord\0");
        assert_eq!((c.u64(), c.u64()), (s.data_offset, 0));
        assert_eq!((c.u64(), c.u64()), (s.data_offset, 3 * 4096));
        assert_eq!(c.text64(), "[mono]\n");
        let data = &out[s.data_offset as usize..];
        assert_eq!(data.len(), 3 * 4096);
        assert_eq!((data[0], data[4096], data[8191 + 4096]), (1, 2, 3));
    }

    /// The reader of this crate reads back what the writer wrote: one definition of the layout.
    #[test]
    fn the_reader_reads_what_the_writer_writes() {
        let short = vec![9u8; 100];
        let cpus = vec![
            DatCpu { cpu: CpuId(2), pages: PageSource::Pages(vec![&short, &short]), stats: None },
            DatCpu { cpu: CpuId(0), pages: PageSource::Pages(vec![&short]), stats: Some("entries: 1\n") },
        ];
        let mut out = Vec::new();
        let s = write_dat_v6(&mut out, input(cpus), "r.dat").expect("write");
        let m = read_meta(&mut Input::new(std::io::Cursor::new(&out)).expect("input"), None).expect("meta");
        assert_eq!((m.version, m.big_endian, m.long_size, m.page_size, m.cpus), (6, false, 8, 4096, 3));
        assert!(m.header_page.contains("timestamp") && m.header_event.contains("compressed"));
        assert_eq!(m.ftrace_formats, ["name: print\nID: 5\n"]);
        let systems: Vec<&str> = m.event_formats.iter().map(|(s, _)| s.as_str()).collect();
        assert_eq!(systems, ["sched", "sched", "irq"]);
        assert_eq!((m.kallsyms.as_str(), m.cmdlines.as_str()), ("ffffffff81000000 T _stext\n", "1 init\n"));
        // The clock goes in the text after the flyrecord table (the TRACECLOCK option is empty), which the
        // reader does not read: only the options are checked here.
        assert_eq!(m.uname.as_deref(), Some("Linux test"));
        assert!(m.warnings.is_empty(), "{:?}", m.warnings);
        let cpus: Vec<(u32, u64, u64)> = m.buffers[0].cpus.iter().map(|d| (d.cpu, d.offset, d.size)).collect();
        let d = s.data_offset;
        assert_eq!(cpus, [(0, d, 4096), (1, d + 4096, 0), (2, d + 4096, 2 * 4096)]);
        // A short page is padded to the page size.
        assert_eq!(&out[d as usize..d as usize + 101], [&[9u8; 100][..], &[0]].concat());
    }

    #[test]
    fn copies_streamed_pages() {
        let spool = vec![7u8; 2 * 4096];
        let cpus = vec![DatCpu {
            cpu: CpuId(0),
            pages: PageSource::Stream {
                name: "cpu0.raw".into(),
                len: spool.len() as u64,
                reader: Box::new(&spool[..]),
            },
            stats: None,
        }];
        let mut out = Vec::new();
        let s = write_dat_v6(&mut out, input(cpus), "y.dat").expect("write");
        assert_eq!(s.pages, vec![(CpuId(0), 2)]);
        assert_eq!(out.len() as u64, s.data_offset + 2 * 4096);
        assert!(out[s.data_offset as usize..].iter().all(|&b| b == 7));
    }

    #[test]
    fn a_stream_shorter_than_announced_names_its_source() {
        let spool = vec![7u8; 4096];
        let cpus = vec![DatCpu {
            cpu: CpuId(0),
            pages: PageSource::Stream { name: "spool/cpu0.raw".into(), len: 2 * 4096, reader: Box::new(&spool[..]) },
            stats: None,
        }];
        let e = write_dat_v6(&mut Vec::new(), input(cpus), "z.dat").expect_err("short stream");
        let msg = e.to_string();
        assert!(msg.starts_with("spool/cpu0.raw: 4096 bytes of pages where 8192 were announced"), "{msg}");
    }

    #[test]
    fn a_failed_write_names_the_output() {
        struct Full;
        impl Write for Full {
            fn write(&mut self, _: &[u8]) -> std::io::Result<usize> {
                Err(std::io::Error::other("no space left on device"))
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let e = write_dat_v6(&mut Full, input(Vec::new()), "out/trace.dat").expect_err("disk full");
        assert!(matches!(&e, DecodeError::Write { path, .. } if path == "out/trace.dat"), "{e}");
        assert!(e.to_string().contains("no space left on device"), "{e}");
    }
}
