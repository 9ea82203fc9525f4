//! `/proc/kallsyms` and `printk_formats`: function names for addresses, `bprint` formats by pointer.

use std::collections::HashMap;

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
            if len > 0 {
                return Some((addr, &rest[..len]));
            }
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

/// Kernel symbols sorted by address. The names stay in the kallsyms text they were parsed from (a trace
/// may carry 100k+ symbols, of which it uses a few): parsing allocates nothing per symbol and copies no name.
#[derive(Clone, Debug, Default)]
pub struct Kallsyms {
    /// The text the names are in (ASCII in every real kernel; repacked as valid UTF-8 otherwise).
    text: Vec<u8>,
    /// (address, name start, name length) into `text`.
    syms: Vec<(u64, u32, u32)>,
    /// Where `_stext` is, when listed (the base of `preemptirq` caller offsets).
    stext: Option<u64>,
}

/// A [`Kallsyms`] being parsed.
#[derive(Default)]
struct Builder {
    syms: Vec<(u64, u32, u32)>,
    stext: Option<u64>,
    /// Bits of every name byte or-ed together: a name with its top bit set is not ASCII.
    high: u64,
}

/// Every byte of a word set to `b`.
const fn splat(b: u8) -> u64 {
    u64::from_ne_bytes([b; 8])
}

/// The 16 hex digits of a 64-bit address, or `None` when one is not a hex digit.
fn hex16(digits: &[u8]) -> Option<u64> {
    let (mut addr, mut bad) = (0u64, 0u8);
    for &c in digits {
        let d = HEX[usize::from(c)];
        bad |= d;
        addr = (addr << 4) | u64::from(d & 0xf);
    }
    (bad & 0xf0 == 0).then_some(addr)
}

/// The end of the name starting at `start`: the first byte at or below a space (`\t`, `\n`, ` `), or the
/// end of `text`. Eight bytes at a time; the bits of the name's bytes are or-ed into `high`.
fn name_end(text: &[u8], start: usize, high: &mut u64) -> usize {
    let mut i = start;
    while let Some(word) = text.get(i..i + 8) {
        let x = u64::from_le_bytes([word[0], word[1], word[2], word[3], word[4], word[5], word[6], word[7]]);
        // The lowest byte below 0x21 sets its top bit here (bytes above it may be flagged wrongly: unused).
        let below = x.wrapping_sub(splat(0x21)) & !x & splat(0x80);
        if below != 0 {
            let n = (below.trailing_zeros() / 8) as usize;
            *high |= x & ((1u64 << (8 * n)) - 1);
            return i + n;
        }
        *high |= x;
        i += 8;
    }
    while let Some(&b) = text.get(i).filter(|&&b| b > b' ') {
        *high |= u64::from(b);
        i += 1;
    }
    i
}

impl Builder {
    /// Room for the symbols of about `text_len` bytes of kallsyms text.
    fn with_size_hint(text_len: usize) -> Builder {
        Builder { syms: Vec::with_capacity(text_len.min(64 << 20) / 40), ..Builder::default() }
    }

    /// Add the symbols of the lines of `text[at..]`, names by their place in `text`.
    fn add_lines(&mut self, text: &[u8], mut at: usize) {
        while at < text.len() {
            // The kernel's own layout: 16 hex digits, one space, the type, one space, the name, then
            // `\n` or `\t[module]\n`. Anything else goes the tolerant way.
            let fast = text
                .get(at..at + 19)
                .filter(|h| h[16] == b' ' && h[17] > b' ' && h[18] == b' ')
                .and_then(|h| hex16(&h[..16]))
                .map(|addr| (addr, name_end(text, at + 19, &mut self.high)))
                .filter(|&(_, end)| end > at + 19);
            let line_end = match fast {
                Some((addr, end)) => {
                    self.push(text, addr, at + 19, end);
                    match text.get(end) {
                        Some(b'\n') => end,
                        _ => memchr::memchr(b'\n', &text[end..]).map_or(text.len(), |i| end + i),
                    }
                }
                None => {
                    let end = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |i| at + i);
                    if let Some((addr, name)) = symbol_line(&text[at..end]) {
                        let start = name.as_ptr() as usize - text.as_ptr() as usize;
                        name.iter().for_each(|&b| self.high |= u64::from(b));
                        self.push(text, addr, start, start + name.len());
                    }
                    end
                }
            };
            at = line_end + 1;
        }
    }

    fn push(&mut self, text: &[u8], addr: u64, start: usize, end: usize) {
        let (Ok(s), Ok(len)) = (u32::try_from(start), u32::try_from(end - start)) else { return };
        if addr == 0 || end == start || u32::try_from(end).is_err() {
            return;
        }
        if len == 6 && self.stext.is_none() && &text[start..end] == b"_stext" {
            self.stext = Some(addr);
        }
        self.syms.push((addr, s, len));
    }

    fn finish(self, text: Vec<u8>) -> Kallsyms {
        let Builder { mut syms, stext, high } = self;
        let text = if high & splat(0x80) == 0 {
            text
        } else {
            // Some name is not ASCII (never in a real kernel): each name made valid UTF-8 on its own.
            let mut names = String::new();
            for s in &mut syms {
                let start = names.len();
                names.push_str(&String::from_utf8_lossy(&text[s.1 as usize..(s.1 + s.2) as usize]));
                (s.1, s.2) = (start as u32, (names.len() - start) as u32);
            }
            names.into_bytes()
        };
        // Stable: the first name listed at an address wins. The kernel lists most in order already.
        if !syms.windows(2).all(|w| w[0].0 <= w[1].0) {
            syms.sort_by_key(|s| s.0);
        }
        Kallsyms { text, syms, stext }
    }
}

impl Kallsyms {
    /// Parse `ADDR TYPE NAME [MODULE]` lines; malformed lines are ignored.
    pub fn parse(text: &str) -> Kallsyms {
        Kallsyms::from_bytes(text.as_bytes().to_vec(), 0)
    }

    /// Parse the kallsyms text in `bytes[start..]`, keeping `bytes` for the names (no copy).
    pub fn from_bytes(bytes: Vec<u8>, start: usize) -> Kallsyms {
        let mut b = Builder::with_size_hint(bytes.len());
        b.add_lines(&bytes, start);
        b.finish(bytes)
    }

    /// Where `_stext` is, when listed.
    pub fn stext(&self) -> Option<u64> {
        self.stext
    }

    fn name(&self, i: usize) -> &str {
        let (_, start, len) = self.syms[i];
        // Every name is valid UTF-8 (see `Builder::finish`): checking a short name costs little.
        let bytes = self.text.get(start as usize..(start + len) as usize).unwrap_or_default();
        std::str::from_utf8(bytes).unwrap_or_default()
    }

    /// The symbol containing `addr` (the nearest one at or below it): its number (for caches), name and
    /// the offset into it.
    pub fn lookup_index(&self, addr: u64) -> Option<(usize, &str, u64)> {
        let last = self.syms.partition_point(|s| s.0 <= addr).checked_sub(1)?;
        // Several names at one address (`__do_sys_x`, `__ia32_sys_x`, `__x64_sys_x`): the first listed, as
        // trace-cmd names it.
        let at = self.syms[last].0;
        let i = self.syms[..last].partition_point(|s| s.0 < at);
        Some((i, self.name(i), addr - at))
    }

    /// The symbol containing `addr` (the nearest one at or below it) and the offset into it.
    #[cfg(test)]
    pub fn lookup(&self, addr: u64) -> Option<(&str, u64)> {
        self.lookup_index(addr).map(|(_, n, off)| (n, off))
    }

    /// The symbol whose address is exactly `addr`.
    #[cfg(test)]
    pub fn exact(&self, addr: u64) -> Option<&str> {
        self.lookup(addr).and_then(|(n, off)| (off == 0).then_some(n))
    }

    /// Number of symbols.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.syms.len()
    }

    /// No symbols.
    #[cfg(test)]
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
    fn of_several_names_at_one_address_the_first_listed_is_given() {
        // A 6.1 x86_64 kernel's kallsyms: the syscall's three names share its address; trace-cmd report shows
        // the first (the old lookup gave the last, `__x64_sys_rt_sigreturn`).
        let k = Kallsyms::parse(
            "ffffffff892324b0 t __do_sys_rt_sigreturn\nffffffff892324b0 T __ia32_sys_rt_sigreturn\n\
             ffffffff892324b0 T __x64_sys_rt_sigreturn\nffffffff89232610 t next\n",
        );
        assert_eq!(k.lookup(0xffffffff892324b0), Some(("__do_sys_rt_sigreturn", 0)));
        assert_eq!(k.lookup(0xffffffff892324c0), Some(("__do_sys_rt_sigreturn", 0x10)));
        assert_eq!(k.lookup(0xffffffff89232610), Some(("next", 0)));
    }

    #[test]
    fn odd_spacing_unsorted_lines_and_bad_bytes() {
        let mut text = b"ffffffff81000200  t   spaced\t[mod]\nffffffff81000100 T first\n".to_vec();
        text.extend_from_slice(b"ffffffff81000300 T bad\xffname\n0000000000000000 T zero\nnot a line\n");
        let k = Kallsyms::from_bytes(text, 0);
        assert_eq!(k.len(), 3);
        assert_eq!(k.lookup(0xffffffff81000104), Some(("first", 4)));
        assert_eq!(k.exact(0xffffffff81000200), Some("spaced"));
        assert_eq!(k.exact(0xffffffff81000300), Some("bad\u{fffd}name"));
    }

    #[test]
    fn the_kernel_layout_and_the_tolerant_path_agree() {
        // Names of every length around the 8-byte steps, with and without a module, the last line
        // without its newline, and the same lines spaced oddly (which takes the tolerant path).
        let names: Vec<String> = (1..=20).map(|n| "abcdefghijklmnopqrstu"[..n].to_string()).collect();
        let mut kernel = String::new();
        let mut odd = String::new();
        for (i, name) in names.iter().enumerate() {
            let addr = 0xffff_ffff_8100_0000u64 + 0x100 * i as u64;
            let module = if i % 3 == 0 { "\t[some_mod]" } else { "" };
            kernel.push_str(&format!("{addr:016x} t {name}{module}\n"));
            odd.push_str(&format!("{addr:x}  t\t{name}  {module}\n"));
        }
        kernel.push_str("ffffffff82000000 T _stext");
        odd.push_str("ffffffff82000000 T   _stext");
        let mut prefixed = b"\x07\x00\x80\xff".to_vec();
        prefixed.extend_from_slice(kernel.as_bytes());
        for k in [Kallsyms::parse(&kernel), Kallsyms::parse(&odd), Kallsyms::from_bytes(prefixed, 4)] {
            assert_eq!(k.len(), names.len() + 1);
            assert_eq!(k.stext(), Some(0xffff_ffff_8200_0000));
            for (i, name) in names.iter().enumerate() {
                let addr = 0xffff_ffff_8100_0000u64 + 0x100 * i as u64;
                assert_eq!(k.lookup(addr + 4), Some((name.as_str(), 4)));
            }
        }
        // 32-bit kernels' 8-digit addresses.
        let k = Kallsyms::parse("c0008000 T _stext\nc0008100 t v7_setup\n");
        assert_eq!((k.stext(), k.exact(0xc000_8100)), (Some(0xc000_8000), Some("v7_setup")));
    }

    #[test]
    fn printk_formats() {
        let p = PrintkFormats::parse("0xffffffff81e2b3a8 : \"fig: cpu=%d\\n\"\n");
        assert_eq!(p.get(0xffffffff81e2b3a8), Some("fig: cpu=%d\n"));
    }
}
