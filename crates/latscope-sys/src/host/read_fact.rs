//! Reading one fact from a kernel file: the value when readable, otherwise why not (absent, permission
//! denied) — never a guess.

use latscope_model::Fact;
use std::io::ErrorKind;
use std::path::Path;

/// Why `err` kept `path` from being read, with the fix when there is one.
pub fn why_unreadable(path: &Path, err: &std::io::Error) -> String {
    match err.kind() {
        ErrorKind::NotFound => format!("{} does not exist on this kernel", path.display()),
        ErrorKind::PermissionDenied => {
            // SAFETY: geteuid has no preconditions.
            if unsafe { libc::geteuid() } == 0 {
                format!("{}: permission denied even to root (kernel lockdown or LSM policy)", path.display())
            } else {
                format!("{}: permission denied; run latscope as root", path.display())
            }
        }
        _ => format!("{}: {err}", path.display()),
    }
}

/// Reads a small file to a trimmed string.
pub fn read_string(path: impl AsRef<Path>) -> Fact<String> {
    let p = path.as_ref();
    match std::fs::read_to_string(p) {
        Ok(s) => Fact::known(s.trim().to_string(), p.display().to_string()),
        Err(e) => Fact::unknown(p.display().to_string(), why_unreadable(p, &e)),
    }
}

/// Reads a small file and parses it; a parse failure is a note naming the file and the content.
pub fn read_parsed<T>(path: impl AsRef<Path>, parse: impl FnOnce(&str) -> Option<T>) -> Fact<T> {
    let f = read_string(path);
    match f.value {
        Some(text) => match parse(&text) {
            Some(v) => Fact::known(v, f.from),
            None => {
                let why = format!("{}: unexpected content {:?}", f.from, text);
                Fact::unknown(f.from, why)
            }
        },
        None => Fact { value: None, from: f.from, note: f.note },
    }
}

/// Parses an integer file (`950000`, `-1`).
pub fn read_int<T: std::str::FromStr>(path: impl AsRef<Path>) -> Fact<T> {
    read_parsed(path, |s| s.parse().ok())
}

/// Parses a `0`/`1` file.
pub fn read_bool(path: impl AsRef<Path>) -> Fact<bool> {
    read_parsed(path, |s| match s {
        "0" => Some(false),
        "1" => Some(true),
        _ => None,
    })
}

/// Whether `path` exists (a fact that is always known).
pub fn exists(path: impl AsRef<Path>) -> Fact<bool> {
    let p = path.as_ref();
    Fact::known(p.exists(), p.display().to_string())
}

/// The bracketed choice of a sysfs selection file (`always [madvise] never` → `madvise`).
pub fn bracketed(text: &str) -> Option<String> {
    let start = text.find('[')?;
    let end = text[start..].find(']')?;
    Some(text[start + 1..start + end].to_string())
}

/// Parses a hexadecimal CPU mask (`3`, `ff,ffffffff`) into the CPUs it has set.
pub fn parse_hex_mask(text: &str) -> Option<latscope_model::CpuList> {
    let digits: String = text.trim().chars().filter(|c| *c != ',').collect();
    if digits.is_empty() {
        return None;
    }
    let mut cpus = Vec::new();
    for (i, c) in digits.chars().rev().enumerate() {
        let v = c.to_digit(16)?;
        for bit in 0..4 {
            if v & (1 << bit) != 0 {
                cpus.push(latscope_model::CpuId((i * 4 + bit) as u32));
            }
        }
    }
    Some(latscope_model::CpuList(cpus))
}

/// Parses a CPU list file where an empty file means "no CPUs" (`isolated`, `nohz_full`).
pub fn parse_list_or_empty(text: &str) -> Option<latscope_model::CpuList> {
    if text.trim().is_empty() || text.trim() == "(null)" {
        Some(latscope_model::CpuList::default())
    } else {
        latscope_model::CpuList::parse(text).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::CpuList;

    #[test]
    fn parses_selections_and_masks() {
        assert_eq!(bracketed("always [madvise] never").as_deref(), Some("madvise"));
        assert_eq!(bracketed("always madvise never"), None);
        assert_eq!(parse_hex_mask("3"), CpuList::parse("0-1").ok());
        assert_eq!(parse_hex_mask("1,00000001"), CpuList::parse("0,32").ok());
        assert_eq!(parse_hex_mask("0"), Some(CpuList::default()));
        assert_eq!(parse_hex_mask("xyz"), None);
        assert_eq!(parse_list_or_empty(""), Some(CpuList::default()));
        assert_eq!(parse_list_or_empty("2-3\n"), CpuList::parse("2,3").ok());
    }

    #[test]
    fn unreadable_files_say_why() {
        let f: Fact<String> = read_string("/nonexistent/latscope");
        assert!(f.value.is_none());
        assert!(f.note.as_deref().is_some_and(|n| n.contains("does not exist")));
        let bad: Fact<u64> = read_parsed("/proc/self/comm", |s| s.parse().ok());
        assert!(bad.note.as_deref().is_some_and(|n| n.contains("unexpected content")));
    }
}
