//! Decode a `.dat` into typed events and print a summary: the library path `latscope decode --stats`
//! takes, runnable before/without the binary. Usage: `cargo bench -p latscope-decode --bench decode_dat -- FILE`.

use latscope_decode::DatReader;
use std::collections::BTreeMap;
use std::time::Instant;

fn main() {
    let Some(path) = std::env::args().skip(1).find(|a| !a.starts_with("--")) else {
        eprintln!("usage: decode_dat FILE.dat");
        std::process::exit(1);
    };
    let t0 = Instant::now();
    let mut reader = match DatReader::open(std::path::Path::new(&path)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(1);
        }
    };
    let mut per_cpu: BTreeMap<u32, u64> = BTreeMap::new();
    let mut per_name: BTreeMap<String, u64> = BTreeMap::new();
    let (mut first, mut last, mut n) = (u64::MAX, 0u64, 0u64);
    for e in reader.by_ref() {
        *per_cpu.entry(e.cpu.0).or_default() += 1;
        let name = e.kind.name();
        match per_name.get_mut(&name) {
            Some(c) => *c += 1,
            None => {
                per_name.insert(name, 1);
            }
        }
        first = first.min(e.ts.0);
        last = last.max(e.ts.0);
        n += 1;
    }
    let secs = t0.elapsed().as_secs_f64();
    let info = reader.info();
    let warnings = reader.take_warnings();
    println!("events {n} in {secs:.3} s ({:.0} events/s)", n as f64 / secs.max(1e-9));
    println!("span {} ns, per cpu {per_cpu:?}", last.saturating_sub(first));
    println!("lost {:?}, warnings {}", info.lost, warnings.len());
    for (name, c) in per_name.iter().take(40) {
        println!("  {name:<28} {c}");
    }
}
