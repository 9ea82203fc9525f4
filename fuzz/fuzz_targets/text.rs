//! Fuzz the ftrace text reader: whole-buffer decoding (plain, JS-escaped, HTML, zlib) and the chunked
//! streaming reader fed in small, odd-sized reads (partial lines across chunk boundaries).
#![no_main]

use latscope_decode::{decode_text_bytes, decode_text_reader};
use libfuzzer_sys::fuzz_target;
use std::io::Read;

/// A reader that returns at most 7 bytes per call.
struct Dribble<'a>(&'a [u8]);

impl Read for Dribble<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.0.len().min(buf.len()).min(7);
        buf[..n].copy_from_slice(&self.0[..n]);
        self.0 = &self.0[n..];
        Ok(n)
    }
}

fuzz_target!(|data: &[u8]| {
    let mut n = 0u64;
    let _ = decode_text_bytes("fuzz.txt", data, &mut |e| {
        n += 1;
        let _ = e.kind.name();
    });
    let mut m = 0u64;
    let _ = decode_text_reader("fuzz.txt", Dribble(data), false, &mut |_| m += 1);
});
