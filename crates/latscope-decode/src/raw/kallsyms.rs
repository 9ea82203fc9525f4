//! `/proc/kallsyms` and `printk_formats`: function names for addresses, `bprint` formats by pointer.

use latscope_model::Text;
use std::collections::HashMap;
use std::sync::Arc;

/// Kernel symbols sorted by address.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    syms: Vec<(u64, Text)>,
}

impl Kallsyms {
    /// Parse `ADDR TYPE NAME [MODULE]` lines; malformed lines are ignored.
    pub fn parse(text: &str) -> Kallsyms {
        let mut syms = Vec::new();
        for line in text.lines() {
            let mut it = line.split_ascii_whitespace();
            let (Some(addr), Some(_ty), Some(name)) = (it.next(), it.next(), it.next()) else { continue };
            if let Ok(a) = u64::from_str_radix(addr, 16) {
                if a != 0 {
                    syms.push((a, Arc::from(name)));
                }
            }
        }
        syms.sort_by_key(|s| s.0);
        Kallsyms { syms }
    }

    /// The symbol containing `addr` (the nearest one at or below it) and the offset into it.
    pub fn lookup(&self, addr: u64) -> Option<(&Text, u64)> {
        let i = self.syms.partition_point(|s| s.0 <= addr);
        let (a, name) = self.syms.get(i.checked_sub(1)?)?;
        Some((name, addr - a))
    }

    /// The symbol whose address is exactly `addr`.
    pub fn exact(&self, addr: u64) -> Option<&Text> {
        self.lookup(addr).and_then(|(n, off)| (off == 0).then_some(n))
    }

    /// The address of the symbol called `name` (first match; a linear scan, for rare lookups).
    pub fn address_of(&self, name: &str) -> Option<u64> {
        self.syms.iter().find(|s| &*s.1 == name).map(|s| s.0)
    }

    /// Number of symbols.
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// No symbols.
    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }
}

/// `printk_formats`: `0xADDR : "format"` lines, the format strings `bprint` records point to.
#[derive(Clone, Debug, Default)]
pub struct PrintkFormats {
    by_addr: HashMap<u64, String>,
}

impl PrintkFormats {
    /// Parse the file; the C escapes `\n`, `\t`, `\"`, `\\` in the quoted format are undone.
    pub fn parse(text: &str) -> PrintkFormats {
        let mut by_addr = HashMap::new();
        for line in text.lines() {
            let Some((addr, fmt)) = line.split_once(" : ") else { continue };
            let addr = addr.trim().trim_start_matches("0x");
            let Ok(a) = u64::from_str_radix(addr, 16) else { continue };
            let fmt = fmt.trim();
            let fmt = fmt.strip_prefix('"').and_then(|f| f.strip_suffix('"')).unwrap_or(fmt);
            by_addr.insert(a, unescape(fmt));
        }
        PrintkFormats { by_addr }
    }

    /// The format at `addr`.
    pub fn get(&self, addr: u64) -> Option<&str> {
        self.by_addr.get(&addr).map(String::as_str)
    }
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('n') => out.push('\n'),
            Some('t') => out.push('\t'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_symbol() {
        let k = Kallsyms::parse("ffffffff81000000 T _stext\nffffffff81000100 t foo\tmod\nzz\n");
        assert_eq!(k.lookup(0xffffffff81000104).map(|(n, o)| (n.to_string(), o)), Some(("foo".into(), 4)));
        assert_eq!(k.exact(0xffffffff81000000).map(|n| n.to_string()), Some("_stext".into()));
        assert!(k.lookup(1).is_none());
    }

    #[test]
    fn printk_formats() {
        let p = PrintkFormats::parse("0xffffffff81e2b3a8 : \"fig: cpu=%d\\n\"\n");
        assert_eq!(p.get(0xffffffff81e2b3a8), Some("fig: cpu=%d\n"));
    }
}
