//! One table of readers serves files and bytes in memory: every fixture under `fixtures/` (text of every
//! flavour, systrace HTML and `atrace -z`, `.dat` v6/v7) decodes to the same events, info and warnings
//! from its path as from its bytes, and a file that is no trace fails the same way from both.

use latscope_decode::{
    decode_bytes, decode_bytes_bounded, decode_file, decode_file_bounded, visit_file, Bounded, DecodeError,
};
use std::path::{Path, PathBuf};

fn fixtures() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let p = entry.expect("directory entry").path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x != "md" && x != "json")
                && !p.to_string_lossy().contains("/facts/")
            {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures"), &mut out);
    out.sort();
    out
}

#[test]
fn every_fixture_decodes_the_same_from_its_path_and_its_bytes() {
    let (mut decoded, mut rejected, mut dat, mut html, mut zlib) = (0, 0, 0, 0, 0);
    for path in fixtures() {
        let name = path.display().to_string();
        let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{name}: {e}"));
        match (decode_file(&path), decode_bytes(&name, &bytes)) {
            (Ok(f), Ok(m)) => {
                assert_eq!(f.events, m.events, "{name}: events");
                assert_eq!(f.warnings, m.warnings, "{name}: warnings");
                assert_eq!(format!("{:?}", f.info), format!("{:?}", m.info), "{name}: info");
                let mut lent = 0;
                let s = visit_file(&path, &mut |_| lent += 1).unwrap_or_else(|e| panic!("{name}: {e}"));
                assert_eq!(lent, f.events.len(), "{name}: events lent");
                assert_eq!(s.warnings, f.warnings, "{name}: warnings when lent");
                decoded += 1;
                dat += usize::from(bytes.starts_with(b"\x17\x08\x44tracing"));
                html += usize::from(name.ends_with(".html"));
                zlib += usize::from(bytes.starts_with(b"TRACE:"));
            }
            (Err(f), Err(m)) => {
                assert!(
                    matches!((&f, &m), (DecodeError::NotATrace { .. }, DecodeError::NotATrace { .. })),
                    "{name}: {f} / {m}"
                );
                assert_eq!(f.to_string(), m.to_string(), "{name}");
                rejected += 1;
            }
            (f, m) => panic!("{name}: from the file {:?}, from memory {:?}", f.err(), m.err()),
        }
    }
    assert!(decoded >= 80, "only {decoded} fixtures decoded ({rejected} rejected)");
    assert!(dat >= 10 && html >= 2 && zlib >= 1, "dat {dat}, html {html}, atrace -z {zlib}");
}

/// A bounded decode keeps every event up to its limit, and past it keeps none and counts them all (the
/// analysis refuses with the real size instead of running out of memory).
#[test]
fn a_bounded_decode_is_whole_within_the_limit_and_counts_past_it() {
    for name in ["dat/local-6.18-x86_64-sched_irq_timer-v7.dat", "dat/rpi-4.14.62-armv7-sched_switch-v6.dat"] {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(name);
        let whole = decode_file(&path).expect("decodes");
        let n = whole.events.len();
        match decode_file_bounded(&path, n).expect("decodes") {
            Bounded::Whole(t) => {
                assert_eq!(t.events, whole.events, "{name}");
                assert_eq!(t.info.lost, whole.info.lost, "{name}");
            }
            Bounded::TooMany { events } => panic!("{name}: {events} events refused at a limit of {n}"),
        }
        match decode_file_bounded(&path, n - 1).expect("decodes") {
            Bounded::TooMany { events } => assert_eq!(events, n as u64, "{name}"),
            Bounded::Whole(_) => panic!("{name}: {n} events kept at a limit of {}", n - 1),
        }
        let bytes = std::fs::read(&path).expect("read");
        match decode_bytes_bounded(name, &bytes, n).expect("decodes") {
            Bounded::Whole(t) => assert_eq!(t.events, whole.events, "{name} from memory"),
            Bounded::TooMany { events } => panic!("{name} from memory: {events} events refused at {n}"),
        }
        match decode_bytes_bounded(name, &bytes, n - 1).expect("decodes") {
            Bounded::TooMany { events } => assert_eq!(events, n as u64, "{name} from memory"),
            Bounded::Whole(_) => panic!("{name} from memory: {n} events kept at a limit of {}", n - 1),
        }
    }
}
