//! `bprint` records: the kernel's `vbin_printf` argument buffer rendered with its printk format.

use super::page::read_uint;

/// Render `fmt` with the binary arguments in `buf` (as `trace_printk` stored them). `long_size` is the
/// kernel's long (4 or 8); `sym` names `%pS`/`%ps`/`%pf` addresses. Missing arguments render as `?`.
pub fn format_bprint(fmt: &str, buf: &[u8], long_size: usize, big_endian: bool, sym: &dyn Fn(u64) -> String) -> String {
    let mut out = String::with_capacity(fmt.len() + 16);
    let mut at = 0usize;
    let bytes = fmt.as_bytes();
    let mut i = 0;
    let take = |size: usize, at: &mut usize| -> Option<u64> {
        let align = size.min(4);
        *at = at.div_ceil(align) * align;
        let v = read_uint(buf, *at, size, big_endian)?;
        *at += size;
        Some(v)
    };
    while i < bytes.len() {
        let c = bytes[i];
        if c != b'%' {
            let next = fmt[i..].find('%').map_or(fmt.len(), |n| i + n);
            out.push_str(&fmt[i..next]);
            i = next;
            continue;
        }
        i += 1;
        if bytes.get(i) == Some(&b'%') {
            out.push('%');
            i += 1;
            continue;
        }
        let spec_start = i;
        while i < bytes.len() && b"-+ #0".contains(&bytes[i]) {
            i += 1;
        }
        let mut width_star = false;
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.' || bytes[i] == b'*') {
            width_star |= bytes[i] == b'*';
            i += 1;
        }
        let flags = &fmt[spec_start..i];
        if width_star {
            let _ = take(4, &mut at);
        }
        let mut size = 4;
        let mut longs = 0;
        while i < bytes.len() && b"hlLzjt".contains(&bytes[i]) {
            match bytes[i] {
                b'h' => size = if size == 2 { 1 } else { 2 },
                b'l' | b'L' => {
                    longs += 1;
                    size = if longs >= 2 { 8 } else { long_size }
                }
                b'z' | b'j' | b't' => size = long_size.max(if bytes[i] == b'j' { 8 } else { 0 }),
                _ => {}
            }
            i += 1;
        }
        let Some(&conv) = bytes.get(i) else { break };
        i += 1;
        let zero = flags.starts_with('0') || flags.contains("0") && !flags.contains('.');
        let width: usize = flags
            .trim_start_matches(['-', '+', ' ', '#', '0'])
            .split('.')
            .next()
            .and_then(|w| w.parse().ok())
            .unwrap_or(0);
        let left = flags.contains('-');
        let rendered = match conv {
            b's' => {
                let rest = buf.get(at..).unwrap_or(&[]);
                let end = memchr::memchr(0, rest).unwrap_or(rest.len());
                let s = String::from_utf8_lossy(&rest[..end]).into_owned();
                at += end + 1;
                s
            }
            b'p' => {
                let mut ext = String::new();
                while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
                    ext.push(bytes[i] as char);
                    i += 1;
                }
                match take(long_size, &mut at) {
                    Some(v) if ext.starts_with(['S', 's', 'f', 'F', 'B']) => sym(v),
                    Some(v) => format!("0x{v:x}"),
                    None => "?".into(),
                }
            }
            b'd' | b'i' | b'u' | b'x' | b'X' | b'o' | b'c' => match take(size, &mut at) {
                Some(v) => {
                    let signed = {
                        let shift = 64 - 8 * size as u32;
                        ((v << shift) as i64) >> shift
                    };
                    match conv {
                        b'd' | b'i' => signed.to_string(),
                        b'u' => v.to_string(),
                        b'x' => format!("{}{v:x}", if flags.contains('#') { "0x" } else { "" }),
                        b'X' => format!("{}{v:X}", if flags.contains('#') { "0X" } else { "" }),
                        b'o' => format!("{v:o}"),
                        _ => char::from_u32(v as u32).map(String::from).unwrap_or_default(),
                    }
                }
                None => "?".into(),
            },
            other => format!("%{}", other as char),
        };
        if rendered.len() < width {
            let pad = width - rendered.len();
            if left {
                out.push_str(&rendered);
                out.extend(std::iter::repeat(' ').take(pad));
            } else {
                let (sign, digits) = match rendered.strip_prefix('-') {
                    Some(d) if zero => ("-", d),
                    _ => ("", rendered.as_str()),
                };
                out.push_str(sign);
                out.extend(std::iter::repeat(if zero { '0' } else { ' ' }).take(pad));
                out.push_str(digits);
            }
        } else {
            out.push_str(&rendered);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_ints_strings_and_symbols() {
        let mut buf = Vec::new();
        buf.extend_from_slice(&7i32.to_le_bytes());
        buf.extend_from_slice(b"ab\0");
        buf.push(0); // align the next 8-byte long to 4
        buf.extend_from_slice(&0xffff_0000_1234u64.to_le_bytes());
        buf.extend_from_slice(&(-3i32).to_le_bytes());
        let s = format_bprint("cpu=%d %s %pS v=%03d%%\n", &buf, 8, false, &|a| format!("sym{a:x}"));
        assert_eq!(s, "cpu=7 ab symffff00001234 v=-03%\n");
        // Missing arguments and truncated buffers do not panic.
        assert_eq!(format_bprint("%d %s %lx", &[], 8, false, &|_| String::new()), "?  ?");
    }
}
