//! `/proc/kallsyms` and `printk_formats`: function names for addresses, `bprint` formats by pointer.

use std::collections::HashMap;
use std::io::Read;

/// `ADDR TYPE NAME[ \t[MODULE]]` ➜ (address, name); `None` for anything else. Hand-rolled: a `.dat`
/// carries 100k+ of these lines and the decoding waits for them.
fn symbol_line(line: &[u8]) -> Option<(u64, &[u8])> {
    let mut i = 0;
    let mut addr = 0u64;
    while let Some(d) = line.get(i).and_then(|&c| (c as char).to_digit(16)) {
        addr = (addr << 4) | u64::from(d);
        i += 1;
    }
    if i == 0 || i > 16 {
        return None;
    }
    let skip_blanks = |mut i: usize| {
        while line.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
        }
        i
    };
    let ty = skip_blanks(i);
    if ty == i || line.get(ty).map_or(true, u8::is_ascii_whitespace) {
        return None;
    }
    let start = skip_blanks(ty + 1);
    if start == ty + 1 {
        return None;
    }
    let len = line[start..].iter().position(u8::is_ascii_whitespace).unwrap_or(line.len() - start);
    (len > 0).then(|| (addr, &line[start..start + len]))
}

/// Kernel symbols sorted by address. The names are packed into one string (a trace may carry 100k+
/// symbols, of which it uses a few): parsing allocates nothing per symbol.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    names: String,
    /// (address, name start, name length) into `names`.
    syms: Vec<(u64, u32, u32)>,
}

impl Kallsyms {
    /// Parse `ADDR TYPE NAME [MODULE]` lines; malformed lines are ignored.
    pub fn parse(text: &str) -> Kallsyms {
        let mut k = Kallsyms::default();
        k.add_lines(text.as_bytes());
        k.finish()
    }

    /// [`parse`](Self::parse) text as it is read (inflated), a block at a time: the whole text is never
    /// held in memory.
    pub fn from_reader<R: Read>(mut r: R) -> std::io::Result<Kallsyms> {
        let mut k = Kallsyms::default();
        let mut buf = vec![0u8; 256 * 1024];
        let mut filled = 0;
        loop {
            let n = r.read(&mut buf[filled..])?;
            filled += n;
            let whole = if n == 0 {
                filled
            } else {
                match memchr::memrchr(b'\n', &buf[..filled]) {
                    Some(i) => i + 1,
                    // One line longer than the buffer: let it grow.
                    None if filled == buf.len() => {
                        buf.resize(buf.len() * 2, 0);
                        continue;
                    }
                    None => continue,
                }
            };
            k.add_lines(&buf[..whole]);
            buf.copy_within(whole..filled, 0);
            filled -= whole;
            if n == 0 {
                return Ok(k.finish());
            }
        }
    }

    /// Add the symbols of whole lines.
    fn add_lines(&mut self, text: &[u8]) {
        let mut at = 0;
        while at < text.len() {
            let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |i| at + i);
            let line = &text[at..end];
            at = end + 1;
            let Some((addr, name)) = symbol_line(line) else { continue };
            let start = self.names.len();
            if addr == 0 || u32::try_from(start + 4 * name.len()).is_err() {
                continue;
            }
            match std::str::from_utf8(name) {
                Ok(n) => self.names.push_str(n),
                Err(_) => self.names.push_str(&String::from_utf8_lossy(name)),
            }
            self.syms.push((addr, start as u32, (self.names.len() - start) as u32));
        }
    }

    fn finish(mut self) -> Kallsyms {
        // Stable: the first name listed at an address wins. The kernel lists most in order already.
        if !self.syms.windows(2).all(|w| w[0].0 <= w[1].0) {
            self.syms.sort_by_key(|s| s.0);
        }
        self
    }

    fn name(&self, i: usize) -> &str {
        let (_, start, len) = self.syms[i];
        self.names.get(start as usize..(start + len) as usize).unwrap_or("")
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
