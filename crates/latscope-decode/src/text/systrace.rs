//! Android systrace/atrace wrappers around ftrace text: the HTML page (legacy `var linuxPerfData = "…"`
//! JavaScript string, or `<script class="trace-data">` blocks), JS-string escaping (`…\n\` lines), and
//! `atrace -z` output (`TRACE:` then a zlib stream).

use std::borrow::Cow;

/// Whether `head` (the start of an input) is an HTML page.
pub fn is_html(head: &[u8]) -> bool {
    let n = head.len().min(4096);
    let h = &head[..n];
    let lower: Vec<u8> = h.iter().map(u8::to_ascii_lowercase).collect();
    memchr::memmem::find(&lower, b"<html").is_some() || memchr::memmem::find(&lower, b"<!doctype html").is_some()
}

/// Where the zlib stream of `atrace -z` output starts (`TRACE:\n` followed by a zlib header), if it is one.
pub fn zlib_offset(head: &[u8]) -> Option<usize> {
    let start = head.iter().position(|b| !b.is_ascii_whitespace())?;
    let rest = head[start..].strip_prefix(b"TRACE:")?;
    let skip = rest.iter().take_while(|b| **b == b'\r' || **b == b'\n').count();
    let z = &rest[skip..];
    // zlib: CMF 0x78 and (CMF*256 + FLG) % 31 == 0.
    (z.len() >= 2 && z[0] == 0x78 && (u16::from(z[0]) * 256 + u16::from(z[1])) % 31 == 0).then_some(start + 6 + skip)
}

/// The ftrace text inside a systrace HTML page, unescaped. Empty when the page holds none.
pub fn extract_html(page: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    // Legacy systrace: `var linuxPerfData = "\` then one JS-string line per trace line, ended by `";`.
    if let Some(i) = memchr::memmem::find(page, b"linuxPerfData = \"") {
        let body = &page[i + b"linuxPerfData = \"".len()..];
        let end = memchr::memmem::find(body, b"\";").unwrap_or(body.len());
        for line in body[..end].split(|&b| b == b'\n') {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            out.extend_from_slice(&unescape_js_line(line));
            out.push(b'\n');
        }
    }
    // Modern systrace: `<script class="trace-data" type="application/text">` blocks (skip the JSON ones).
    let open_tag = b"<script class=\"trace-data\"";
    let mut from = 0;
    while let Some(i) = memchr::memmem::find(&page[from..], open_tag) {
        let tag_start = from + i;
        let Some(gt) = memchr::memchr(b'>', &page[tag_start..]) else { break };
        let content_start = tag_start + gt + 1;
        let content_end =
            memchr::memmem::find(&page[content_start..], b"</script>").map_or(page.len(), |e| content_start + e);
        let block = &page[content_start..content_end];
        let first = block.iter().find(|b| !b.is_ascii_whitespace());
        if !matches!(first, Some(b'{') | Some(b'[') | None) {
            out.extend_from_slice(block);
            out.push(b'\n');
        }
        from = content_end;
    }
    out
}

/// Whether the text is JS-string escaped (lines ending in a literal `\n\`).
pub fn is_js_escaped(head: &[u8]) -> bool {
    head.split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .find(|l| !l.is_empty())
        .is_some_and(|l| l.ends_with(b"\\n\\"))
}

/// One JS-string source line ➜ its text: drops the `\n\` continuation and undoes `\\ \" \' \t \xHH \uHHHH`.
pub fn unescape_js_line(line: &[u8]) -> Cow<'_, [u8]> {
    let line = line.strip_suffix(b"\\n\\").or_else(|| line.strip_suffix(b"\\")).unwrap_or(line);
    let line = line.strip_suffix(b"\\n").unwrap_or(line);
    if memchr::memchr(b'\\', line).is_none() {
        return Cow::Borrowed(line);
    }
    let mut out = Vec::with_capacity(line.len());
    let mut i = 0;
    while i < line.len() {
        let b = line[i];
        if b != b'\\' || i + 1 >= line.len() {
            out.push(b);
            i += 1;
            continue;
        }
        let e = line[i + 1];
        i += 2;
        match e {
            b'n' => out.push(b'\n'),
            b't' => out.push(b'\t'),
            b'r' => {}
            b'x' | b'u' => {
                let n = if e == b'x' { 2 } else { 4 };
                let hex = line.get(i..i + n).and_then(|h| std::str::from_utf8(h).ok());
                match hex.and_then(|h| u32::from_str_radix(h, 16).ok()).and_then(char::from_u32) {
                    Some(c) => {
                        let mut buf = [0u8; 4];
                        out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
                        i += n;
                    }
                    None => out.push(e),
                }
            }
            other => out.push(other),
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn js_lines() {
        assert_eq!(&*unescape_js_line(b"# tracer: nop\\n\\"), b"# tracer: nop");
        assert_eq!(&*unescape_js_line(b"a \\\"q\\\" \\\\ \\x41\\u00e9\\n\\"), "a \"q\" \\ A\u{e9}".as_bytes());
        assert!(is_js_escaped(b"\n# tracer: nop\\n\\\n#\\n\\\n"));
        assert!(!is_js_escaped(b"# tracer: nop\n"));
    }

    #[test]
    fn html_blocks_and_zlib() {
        let page = b"<!DOCTYPE html><html><script class=\"trace-data\" type=\"application/text\">\n# tracer: nop\nx-1 [000] 1.0: a: b\n</script><script class=\"trace-data\" type=\"application/text\">{\"traceEvents\": []}</script>";
        assert!(is_html(page));
        let t = extract_html(page);
        assert_eq!(t, b"\n# tracer: nop\nx-1 [000] 1.0: a: b\n\n");
        let legacy = b"<html><script>\n  var linuxPerfData = \"\\\n# tracer: nop\\n\\\n  x-1 [000] 1.0: a: b\\n\\\n\";\n</script>";
        let t = extract_html(legacy);
        assert!(t.windows(13).any(|w| w == b"# tracer: nop"));
        assert_eq!(zlib_offset(b"TRACE:\n\x78\x9c..."), Some(7));
        assert_eq!(zlib_offset(b"TRACE:\n# tracer"), None);
    }
}
