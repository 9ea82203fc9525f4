//! Fuzz the importers of other tools' results: cyclictest histogram text and JSON, oslat text and JSON
//! (`import::load`, which detects the format), and rtla's timerlat/osnoise outputs (`import::rtla::parse`).
#![no_main]

use latscope_decode::import::{load, rtla};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = load("fuzz.txt", &text);
    let _ = rtla::is_rtla(&text);
    let _ = rtla::parse("fuzz.txt", &text);
});
