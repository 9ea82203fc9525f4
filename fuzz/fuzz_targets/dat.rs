//! Fuzz the trace-cmd `.dat` reader (metadata, sections, decompression, CPU streams, merge).
#![no_main]

use latscope_decode::decode_dat_bytes;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = decode_dat_bytes(data, "fuzz.dat");
});
