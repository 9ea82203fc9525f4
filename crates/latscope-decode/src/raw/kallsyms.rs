//! `/proc/kallsyms` and `printk_formats`: function names for addresses, `bprint` formats by pointer.

use std::collections::HashMap;
use std::io::Read;

/// The value of each byte as a hex digit, 0xff when it is none.
const HEX: [u8; 256] = {
    let mut t = [0xffu8; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// `ADDR TYPE NAME[\t[MODULE]]` ➜ (address, name); `None` for anything else. Hand-rolled for the
/// kernel's own layout (one space between the columns), with a tolerant path for other spacing: a `.dat`
/// carries 100k+ of these lines and the decoding waits for them.
fn symbol_line(line: &[u8]) -> Option<(u64, &[u8])> {
    let mut i = 0;
    let mut addr = 0u64;
    while let Some(&d) = line.get(i).map(|&c| &HEX[usize::from(c)]).filter(|&&d| d != 0xff) {
        addr = (addr << 4) | u64::from(d);
        i += 1;
    }
    if i == 0 || i > 16 {
        return None;
    }
    if let [b' ', ty, b' ', rest @ ..] = &line[i..] {
        if !ty.is_ascii_whitespace() {
            let len = rest.iter().position(u8::is_ascii_whitespace).unwrap_or(rest.len());
            return (len > 0).then(|| (addr, &rest[..len]));
        }
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

/// A [`Kallsyms`] being parsed: names as bytes, checked as UTF-8 once at the end.
#[derive(Default)]
struct Builder {
    names: Vec<u8>,
    syms: Vec<(u64, u32, u32)>,
}

impl Builder {
    /// Room for the symbols of about `text_len` bytes of kallsyms text.
    fn with_size_hint(text_len: usize) -> Builder {
        let text_len = text_len.min(64 << 20);
        Builder { names: Vec::with_capacity(text_len / 2), syms: Vec::with_capacity(text_len / 40) }
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
            if addr == 0 || u32::try_from(start + name.len()).is_err() {
                continue;
            }
            self.names.extend_from_slice(name);
            self.syms.push((addr, start as u32, name.len() as u32));
        }
    }

    fn finish(self) -> Kallsyms {
        let Builder { names, mut syms } = self;
        let names = match String::from_utf8(names) {
            Ok(n) => n,
            // Some name is not UTF-8 (never in a real kernel): each name made valid on its own.
            Err(e) => {
                let bytes = e.into_bytes();
                let mut names = String::new();
                for s in &mut syms {
                    let start = names.len();
                    names.push_str(&String::from_utf8_lossy(&bytes[s.1 as usize..(s.1 + s.2) as usize]));
                    (s.1, s.2) = (start as u32, (names.len() - start) as u32);
                }
                names
            }
        };
        // Stable: the first name listed at an address wins. The kernel lists most in order already.
        if !syms.windows(2).all(|w| w[0].0 <= w[1].0) {
            syms.sort_by_key(|s| s.0);
        }
        Kallsyms { names, syms }
    }
}

impl Kallsyms {
    /// Parse `ADDR TYPE NAME [MODULE]` lines; malformed lines are ignored.
    pub fn parse(text: &str) -> Kallsyms {
        let mut b = Builder::with_size_hint(text.len());
        b.add_lines(text.as_bytes());
        b.finish()
    }

    /// [`parse`](Self::parse) text as it is read (inflated), a block at a time: the whole text is never
    /// held in memory. `size_hint` is the text's expected length (0 when unknown).
    pub fn from_reader<R: Read>(mut r: R, size_hint: usize) -> std::io::Result<Kallsyms> {
        let mut k = Builder::with_size_hint(size_hint);
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
    fn odd_spacing_unsorted_lines_and_bad_bytes() {
        let mut text = b"ffffffff81000200  t   spaced\t[mod]\nffffffff81000100 T first\n".to_vec();
        text.extend_from_slice(b"ffffffff81000300 T bad\xffname\n0000000000000000 T zero\nnot a line\n");
        let k = Kallsyms::from_reader(&text[..], 0).expect("reads");
        assert_eq!(k.len(), 3);
        assert_eq!(k.lookup(0xffffffff81000104), Some(("first", 4)));
        assert_eq!(k.exact(0xffffffff81000200), Some("spaced"));
        assert_eq!(k.exact(0xffffffff81000300), Some("bad\u{fffd}name"));
        // A reader that hands out a byte at a time: lines are joined across reads.
        struct Trickle<'a>(&'a [u8]);
        impl Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                let Some((&b, rest)) = self.0.split_first() else { return Ok(0) };
                buf[0] = b;
                self.0 = rest;
                Ok(1)
            }
        }
        let t = Kallsyms::from_reader(Trickle(&text), text.len()).expect("reads");
        assert_eq!((t.len(), t.exact(0xffffffff81000200)), (3, Some("spaced")));
    }

    #[test]
    fn printk_formats() {
        let p = PrintkFormats::parse("0xffffffff81e2b3a8 : \"fig: cpu=%d\\n\"\n");
        assert_eq!(p.get(0xffffffff81e2b3a8), Some("fig: cpu=%d\n"));
    }
}
