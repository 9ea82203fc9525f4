//! `/proc/kallsyms` and `printk_formats`: function names for addresses, `bprint` formats by pointer.

use std::collections::HashMap;

/// Kernel symbols sorted by address. The names stay in the file's text (a trace may carry 100k+ symbols,
/// of which it uses a few): parsing allocates nothing per symbol.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    text: String,
    /// (address, name start, name length) into `text`.
    syms: Vec<(u64, u32, u32)>,
}

impl Kallsyms {
    /// Parse `ADDR TYPE NAME [MODULE]` lines; malformed lines are ignored.
    pub fn parse(text: &str) -> Kallsyms {
        Kallsyms::from_text(text.to_string())
    }

    /// [`parse`](Self::parse) text already owned (kept as the names' storage, not copied).
    pub fn from_text(text: String) -> Kallsyms {
        let base = text.as_ptr() as usize;
        let mut syms = Vec::with_capacity(text.len() / 40);
        for line in text.lines() {
            let mut it = line.split_ascii_whitespace();
            let (Some(addr), Some(_ty), Some(name)) = (it.next(), it.next(), it.next()) else { continue };
            let (Ok(a), Ok(start), Ok(len)) = (
                u64::from_str_radix(addr, 16),
                u32::try_from(name.as_ptr() as usize - base),
                u32::try_from(name.len()),
            ) else {
                continue;
            };
            if a != 0 {
                syms.push((a, start, len));
            }
        }
        // Stable: the first name listed at an address wins, as before.
        syms.sort_by_key(|s| s.0);
        Kallsyms { text, syms }
    }

    fn name(&self, i: usize) -> &str {
        let (_, start, len) = self.syms[i];
        &self.text[start as usize..(start + len) as usize]
    }

    /// The symbol containing `addr` (the nearest one at or below it): its number (for caches), name and
    /// the offset into it.
    pub fn lookup_index(&self, addr: u64) -> Option<(usize, &str, u64)> {
        let i = self.syms.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        Some((i, self.name(i), addr - self.syms[i].0))
    }

    /// The symbol containing `addr` (the nearest one at or below it) and the offset into it.
    pub fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        self.lookup_index(addr).map(|(_, n, off)| (n, off))
    }

    /// The symbol whose address is exactly `addr`.
    pub fn exact(&self, addr: u64) -> Option<&str> {
        self.lookup(addr).and_then(|(n, off)| (off == 0).then_some(n))
    }

    /// The address of the symbol called `name` (first match; a linear scan, for rare lookups).
    pub fn address_of(&self, name: &str) -> Option<u64> {
        (0..self.syms.len()).find(|&i| self.name(i) == name).map(|i| self.syms[i].0)
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
