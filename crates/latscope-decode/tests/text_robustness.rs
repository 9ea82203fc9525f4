//! Damaged text input never panics: every text fixture truncated at many offsets, with bytes flipped,
//! lines duplicated or spliced, fed whole and through the chunked streaming reader. Truncation keeps
//! what comes before the cut.

use latscope_decode::{decode_bytes, decode_text_bytes, decode_text_reader, DecodeError};
use std::io::Read;
use std::path::{Path, PathBuf};

fn text_fixtures() -> Vec<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures");
    let mut out = Vec::new();
    for dir in ["events", "funcgraph", "latency", "pasted", "systrace", "tracecmd-report", "hwlat", "rtla", "seeds"] {
        let Ok(rd) = std::fs::read_dir(root.join(dir)) else { continue };
        for e in rd.flatten() {
            out.push(e.path());
        }
    }
    out.sort();
    assert!(out.len() > 50, "fixtures missing: {}", out.len());
    out
}

/// At most the first 12 KiB of a fixture, so the whole test stays fast.
fn head(p: &Path) -> Vec<u8> {
    let mut b = std::fs::read(p).expect("read fixture");
    b.truncate(12 * 1024);
    b
}

/// A reader returning odd-sized pieces, so lines straddle chunk boundaries.
struct Pieces<'a>(&'a [u8], usize);

impl Read for Pieces<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.1 = self.1 % 13 + 1;
        let n = self.0.len().min(buf.len()).min(self.1);
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

fn count(name: &str, bytes: &[u8]) -> Result<usize, DecodeError> {
    let mut n = 0;
    decode_text_bytes(name, bytes, &mut |_| n += 1)?;
    Ok(n)
}

#[test]
fn truncated_fixtures_never_panic_and_keep_the_prefix() {
    for p in text_fixtures() {
        let name = p.display().to_string();
        let bytes = head(&p);
        let full = count(&name, &bytes).ok();
        let mut prev = 0;
        for k in 1..=30 {
            let cut = bytes.len() * k / 30;
            let part = &bytes[..cut];
            // Compressed input may not inflate at all once cut; text must keep what precedes the cut.
            if let Ok(n) = count(&name, part) {
                if !name.ends_with(".bin") && !name.ends_with(".html") {
                    assert!(n + 1 >= prev, "{name}: cut at {cut} decoded {n} events, an earlier cut {prev}");
                    prev = prev.max(n);
                }
                if let Some(f) = full {
                    assert!(n <= f + 1, "{name}: a prefix decoded more events ({n}) than the whole ({f})");
                }
            }
            let _ = decode_bytes(&name, part);
        }
    }
}

#[test]
fn corrupted_fixtures_never_panic() {
    for p in text_fixtures() {
        let name = p.display().to_string();
        let bytes = head(&p);
        if bytes.is_empty() {
            continue;
        }
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15 ^ bytes.len() as u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..12 {
            let mut b = bytes.clone();
            for _ in 0..8 {
                let i = (next() as usize) % b.len();
                b[i] = match next() % 6 {
                    0 => b'\n',
                    1 => b' ',
                    2 => b'|',
                    3 => b':',
                    4 => 0xc2,
                    _ => (next() & 0xff) as u8,
                };
            }
            // Splice: a line's tail onto another line's head.
            let a = (next() as usize) % b.len();
            let c = (next() as usize) % b.len();
            let (lo, hi) = (a.min(c), a.max(c));
            let mut spliced = b[..lo].to_vec();
            spliced.extend_from_slice(&b[hi..]);
            for input in [&b[..], &spliced[..]] {
                let _ = count(&name, input);
                let mut n = 0;
                let _ = decode_text_reader(&name, Pieces(input, 0), false, &mut |_| n += 1);
            }
        }
    }
}

#[test]
fn streaming_in_pieces_equals_whole_buffer() {
    for p in text_fixtures() {
        let name = p.display().to_string();
        if name.ends_with(".bin") || name.ends_with(".html") {
            continue; // wrappers are unpacked before the line reader
        }
        let bytes = head(&p);
        let mut whole = Vec::new();
        let w = decode_text_bytes(&name, &bytes, &mut |e| whole.push(e));
        let mut pieces = Vec::new();
        let s = decode_text_reader(&name, Pieces(&bytes, 0), false, &mut |e| pieces.push(e));
        assert_eq!(w.is_ok(), s.is_ok(), "{name}");
        assert_eq!(whole, pieces, "{name}");
    }
}

/// The fuzzer's crash inputs, kept as found (`fuzz/artifacts/text/`, copied here).
const FUZZ_CRASHES: &[&[u8]] = &[include_bytes!("regressions/text-crash-797c5e0a.bin")];

#[test]
fn fuzz_crash_regressions() {
    for c in FUZZ_CRASHES {
        let _ = decode_bytes("crash", c);
        let _ = decode_text_reader("crash", Pieces(c, 0), false, &mut |_| {});
    }
    let t = decode_bytes(
        "x",
        b"# tracer: irqsoff\n latency: 9222222222222222222 us, #3/3, CPU#0\n  a-1  0d..1  0us : f <-g\n",
    )
    .expect("decodes");
    assert_eq!(t.info.latency.map(|h| h.latency.0), Some(u64::MAX));
}

#[test]
fn hostile_lines() {
    let long = format!("bash-1 [000] d.h1 1.0: x: {}\n", "a=b ".repeat(100_000));
    let cases: Vec<Vec<u8>> = vec![
        b"# tracer: nop\n".repeat(3),
        long.into_bytes(),
        b"# tracer: function_graph\n 0) ".to_vec(),
        b"# tracer: function_graph\n".iter().chain(" 0)   1.0 us    |".repeat(1000).as_bytes()).copied().collect(),
        b"x-1 [99999999999999999999] d.h1 1.0: a: b\n".to_vec(),
        b"x-1 [0] d.h1 99999999999999999999.1: a: b\n".to_vec(),
        b"x-99999999999 [0] 1.1: a: b\n# latency: 99999999999999999999999 us, #1/1, CPU#99999999999\n".to_vec(),
        "x-1 [0] 1.1: sched_switch: \u{a0}==> \u{a0}\n".as_bytes().to_vec(),
        b"  x-1  0d..1 99999999999999999999us : f <-g\n".to_vec(),
        b"x-1 [000] 1.0: <stack trace>\n => \n =>\n".to_vec(),
        b"TRACE:\n\x78\x9c\xff\xff".to_vec(),
        b"<html><script class=\"trace-data\">".to_vec(),
        b"<html> var linuxPerfData = \"\\\n\\u12\\x4\\".to_vec(),
        b" 0)  a-1  =>  b-2\n 99999999999)  a-1  =>  b-2\n".to_vec(),
        // Regression (fuzz text crash-797c5e0a): a latency in us that overflows u64 nanoseconds.
        b"# tracer: irqsoff\n latency: 9222222222222222222 us, #3/3, CPU#0 | (M:preempt VP:0, KP:0 #P:2)\n".to_vec(),
    ];
    for c in cases {
        let _ = decode_bytes("hostile", &c);
        let _ = decode_text_reader("hostile", Pieces(&c, 0), false, &mut |_| {});
    }
}
