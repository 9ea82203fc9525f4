//! Writes a capture as a trace-cmd `.dat` file, version 6 (flyrecord, uncompressed), as documented in
//! trace-cmd.dat.v6(5): the kernel's own page bytes plus the format texts needed to read them.
//!
//! Layout: magic, version, endianness, long size, page size; header_page; header_event; ftrace formats;
//! event formats per system; kallsyms; printk formats; saved cmdlines; CPU count; options (trace clock,
//! uname, version, per-CPU stats); `flyrecord` with each CPU's offset and size; the trace clock text;
//! padding to a page boundary; then each CPU's pages back to back.

use super::capture::TraceFormats;
use super::reader::RawPage;
use crate::SysError;
use latscope_model::CpuId;
use std::io::Write;
use std::path::Path;

/// trace-cmd option ids used here (trace-cmd.dat.v7(5) lists them; v6 uses the same).
const OPT_DONE: u16 = 0;
const OPT_CPUSTAT: u16 = 2;
const OPT_TRACECLOCK: u16 = 4;
const OPT_UNAME: u16 = 5;
const OPT_VERSION: u16 = 9;

/// Where one CPU's pages are.
#[derive(Clone, Copy, Debug)]
pub enum PageSource<'a> {
    /// Pages in memory.
    Memory(&'a [RawPage]),
    /// A spool file of whole pages back to back.
    File(&'a Path),
}

/// One CPU's data for the file.
#[derive(Clone, Debug)]
pub struct DatCpu<'a> {
    /// The CPU.
    pub cpu: CpuId,
    /// Its pages.
    pub pages: PageSource<'a>,
    /// Its `per_cpu/cpuN/stats` text (stored as a CPUSTAT option), when read.
    pub stats: Option<&'a str>,
}

/// Everything that goes into the file.
#[derive(Clone, Debug)]
pub struct DatInput<'a> {
    /// Layout, formats and clock.
    pub formats: &'a TraceFormats,
    /// `/proc/kallsyms` text (may be empty).
    pub kallsyms: &'a str,
    /// `printk_formats` text (may be empty).
    pub printk_formats: &'a str,
    /// `saved_cmdlines` text.
    pub cmdlines: &'a str,
    /// The recorded CPUs; CPUs between them without data get empty slots.
    pub cpus: Vec<DatCpu<'a>>,
    /// `uname -a`-like text for the UNAME option.
    pub uname: String,
    /// The writing tool's version for the VERSION option.
    pub version: String,
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
}

/// Writes the file to `out`; returns its size and where the data went.
pub fn write_dat_v6(out: &mut dyn Write, input: &DatInput<'_>, out_name: &Path) -> Result<DatSummary, SysError> {
    let err = |e: std::io::Error| SysError::file(out_name, e);
    let f = input.formats;
    let page_size = f.page_size.max(1) as u64;
    let mut h = Header::new(f.big_endian);
    h.bytes(&[0x17, 0x08, 0x44]);
    h.bytes(b"tracing6\0");
    h.bytes(&[u8::from(f.big_endian), f.long_size]);
    h.u32(page_size as u32);
    h.bytes(b"header_page\0");
    h.sized64(f.header_page.as_bytes());
    h.bytes(b"header_event\0");
    h.sized64(f.header_event.as_bytes());

    let ftrace: Vec<_> = f.formats.iter().filter(|x| x.system == "ftrace").collect();
    h.u32(ftrace.len() as u32);
    for x in &ftrace {
        h.sized64(x.text.as_bytes());
    }
    let mut systems: Vec<&str> = Vec::new();
    for x in f.formats.iter().filter(|x| x.system != "ftrace") {
        if !systems.contains(&x.system.as_str()) {
            systems.push(&x.system);
        }
    }
    h.u32(systems.len() as u32);
    for sys in &systems {
        h.bytes(sys.as_bytes());
        h.bytes(&[0]);
        let events: Vec<_> = f.formats.iter().filter(|x| x.system == *sys).collect();
        h.u32(events.len() as u32);
        for x in events {
            h.sized64(x.text.as_bytes());
        }
    }
    h.sized32(input.kallsyms.as_bytes());
    h.sized32(input.printk_formats.as_bytes());
    h.sized64(input.cmdlines.as_bytes());

    // CPU slots 0..=max, so a CPU's data sits at its own index.
    let slots = input.cpus.iter().map(|c| c.cpu.0 + 1).max().unwrap_or(0);
    h.u32(slots);
    h.bytes(b"options  \0");
    h.option(OPT_TRACECLOCK, b"");
    h.option(OPT_UNAME, &nul(&input.uname));
    h.option(OPT_VERSION, &nul(&input.version));
    for c in &input.cpus {
        if let Some(s) = c.stats {
            h.option(OPT_CPUSTAT, &nul(&format!("CPU: {}\n{s}", c.cpu)));
        }
    }
    h.u16(OPT_DONE);
    h.bytes(b"flyrecord\0");

    // Sizes first, so the offsets can be computed before any data is written.
    let mut sizes = vec![0u64; slots as usize];
    for c in &input.cpus {
        sizes[c.cpu.0 as usize] = match c.pages {
            PageSource::Memory(pages) => pages.len() as u64 * page_size,
            PageSource::File(p) => std::fs::metadata(p).map_err(|e| SysError::file(p, e))?.len(),
        };
    }
    let clock_text = format!("[{}]\n", f.clock);
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

    let mut cpus: Vec<&DatCpu<'_>> = input.cpus.iter().collect();
    cpus.sort_by_key(|c| c.cpu);
    for c in cpus {
        match c.pages {
            PageSource::Memory(pages) => {
                for p in pages {
                    let mut page = p.data.clone();
                    page.resize(page_size as usize, 0);
                    out.write_all(&page).map_err(err)?;
                }
            }
            PageSource::File(p) => {
                let mut src = std::fs::File::open(p).map_err(|e| SysError::file(p, e))?;
                std::io::copy(&mut src, out).map_err(err)?;
            }
        }
    }
    out.flush().map_err(err)?;
    summary.bytes = offset;
    Ok(summary)
}

fn nul(s: &str) -> Vec<u8> {
    let mut v = s.as_bytes().to_vec();
    v.push(0);
    v
}

/// The header being built, numbers in the file's endianness.
struct Header {
    buf: Vec<u8>,
    big_endian: bool,
}

impl Header {
    fn new(big_endian: bool) -> Header {
        Header { buf: Vec::with_capacity(1 << 20), big_endian }
    }
    fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
    fn u16(&mut self, v: u16) {
        let b = if self.big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
        self.bytes(&b);
    }
    fn u32(&mut self, v: u32) {
        let b = if self.big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
        self.bytes(&b);
    }
    fn u64(&mut self, v: u64) {
        let b = if self.big_endian { v.to_be_bytes() } else { v.to_le_bytes() };
        self.bytes(&b);
    }
    fn sized32(&mut self, b: &[u8]) {
        self.u32(b.len() as u32);
        self.bytes(b);
    }
    fn sized64(&mut self, b: &[u8]) {
        self.u64(b.len() as u64);
        self.bytes(b);
    }
    fn option(&mut self, id: u16, data: &[u8]) {
        self.u16(id);
        self.sized32(data);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tracefs::capture::FormatText;

    fn formats() -> TraceFormats {
        TraceFormats {
            header_page: "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n".into(),
            header_event: "# compressed entry header\n".into(),
            formats: vec![
                FormatText { system: "ftrace".into(), name: "print".into(), text: "name: print\nID: 5\n".into() },
                FormatText { system: "sched".into(), name: "sched_switch".into(), text: "name: sched_switch\n".into() },
                FormatText { system: "irq".into(), name: "softirq_entry".into(), text: "name: softirq_entry\n".into() },
                FormatText { system: "sched".into(), name: "sched_waking".into(), text: "name: sched_waking\n".into() },
            ],
            page_size: 4096,
            big_endian: false,
            long_size: 8,
            clock: "mono".into(),
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
        let f = formats();
        let pages: Vec<RawPage> =
            (0..3).map(|i| RawPage { cpu: CpuId(1), ts: i, data: vec![i as u8 + 1; 4096] }).collect();
        let input = DatInput {
            formats: &f,
            kallsyms: "ffffffff81000000 T _stext\n",
            printk_formats: "",
            cmdlines: "1 init\n",
            cpus: vec![DatCpu { cpu: CpuId(1), pages: PageSource::Memory(&pages), stats: Some("entries: 3\n") }],
            uname: "Linux test".into(),
            version: "latscope 0".into(),
        };
        let mut out = Vec::new();
        let s = write_dat_v6(&mut out, &input, Path::new("x.dat")).expect("write");
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

    #[test]
    fn copies_spooled_pages() {
        let dir = std::env::temp_dir().join(format!("latscope-dat-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let spool = dir.join("cpu0.raw");
        std::fs::write(&spool, vec![7u8; 2 * 4096]).expect("spool");
        let f = formats();
        let input = DatInput {
            formats: &f,
            kallsyms: "",
            printk_formats: "",
            cmdlines: "",
            cpus: vec![DatCpu { cpu: CpuId(0), pages: PageSource::File(&spool), stats: None }],
            uname: String::new(),
            version: String::new(),
        };
        let mut out = Vec::new();
        let s = write_dat_v6(&mut out, &input, Path::new("y.dat")).expect("write");
        assert_eq!(s.pages, vec![(CpuId(0), 2)]);
        assert_eq!(out.len() as u64, s.data_offset + 2 * 4096);
        assert!(out[s.data_offset as usize..].iter().all(|&b| b == 7));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
