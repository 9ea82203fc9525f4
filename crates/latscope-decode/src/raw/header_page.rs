//! `events/header_page` and `header_event`: where a ring-buffer page keeps its timestamp, commit and data.

use super::format::parse_format;

/// Layout of one ring-buffer page, from `header_page` (plus the file's endianness).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PageLayout {
    /// Offset of the page's u64 timestamp.
    pub ts_offset: usize,
    /// Offset of the `commit` word.
    pub commit_offset: usize,
    /// Size of the `commit` word: the kernel's long, 4 or 8.
    pub commit_size: usize,
    /// Offset of the first event.
    pub data_offset: usize,
    /// The kernel has the `overwrite` bit in the commit word.
    pub has_overwrite: bool,
    /// Multi-byte values are big-endian.
    pub big_endian: bool,
}

impl PageLayout {
    /// The layout of a 64-bit (or 32-bit when `long_size == 4`) kernel, for inputs without a header_page.
    pub fn default_for(long_size: usize, big_endian: bool) -> PageLayout {
        let commit_size = if long_size == 4 { 4 } else { 8 };
        PageLayout {
            ts_offset: 0,
            commit_offset: 8,
            commit_size,
            data_offset: 8 + commit_size,
            has_overwrite: true,
            big_endian,
        }
    }
}

/// Parse the `header_page` text (`field: u64 timestamp; offset:0; size:8; signed:0;` …).
/// Errors say what is wrong (the caller names the text: `header_page`).
pub(crate) fn parse_header_page(text: &str, big_endian: bool) -> Result<PageLayout, String> {
    // The file has the same field syntax as an event format but no name/ID lines.
    let wrapped = format!("name: header_page\nID: 0\n{text}");
    let f = parse_format("header_page", &wrapped)?;
    let ts = f.field("timestamp").ok_or("no `timestamp` field")?;
    let commit = f.field("commit").ok_or("no `commit` field")?;
    let data = f.field("data").ok_or("no `data` field")?;
    if commit.size != 4 && commit.size != 8 {
        return Err(format!("commit size {} (expected 4 or 8)", commit.size));
    }
    Ok(PageLayout {
        ts_offset: ts.offset as usize,
        commit_offset: commit.offset as usize,
        commit_size: commit.size as usize,
        data_offset: data.offset as usize,
        has_overwrite: f.field("overwrite").is_some(),
        big_endian,
    })
}

/// The event-header type values from `header_event` (`padding : type == 29` …).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EventHeaderLayout {
    /// type_len of a padding event.
    pub padding: u32,
    /// type_len of a time-extend event.
    pub time_extend: u32,
    /// type_len of an absolute timestamp event.
    pub time_stamp: u32,
    /// Largest type_len that encodes a data length.
    pub data_max: u32,
}

impl Default for EventHeaderLayout {
    fn default() -> Self {
        EventHeaderLayout { padding: 29, time_extend: 30, time_stamp: 31, data_max: 28 }
    }
}

/// Parse `header_event`; unknown or missing lines keep the kernel's long-standing defaults.
pub fn parse_header_event(text: &str) -> EventHeaderLayout {
    let mut l = EventHeaderLayout::default();
    for line in text.lines() {
        let line = line.trim();
        let value = |s: &str| s.rsplit("==").next().and_then(|v| v.trim().parse::<u32>().ok());
        if line.starts_with("padding") {
            l.padding = value(line).unwrap_or(l.padding);
        } else if line.starts_with("time_extend") {
            l.time_extend = value(line).unwrap_or(l.time_extend);
        } else if line.starts_with("time_stamp") {
            l.time_stamp = value(line).unwrap_or(l.time_stamp);
        } else if line.starts_with("data max type_len") {
            l.data_max = value(line).unwrap_or(l.data_max);
        }
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_64_and_32_bit_headers() {
        let h64 = "\tfield: u64 timestamp;\toffset:0;\tsize:8;\tsigned:0;\n\
\tfield: local_t commit;\toffset:8;\tsize:8;\tsigned:1;\n\
\tfield: int overwrite;\toffset:8;\tsize:1;\tsigned:1;\n\
\tfield: char data;\toffset:16;\tsize:4080;\tsigned:1;\n";
        let l = parse_header_page(h64, false).expect("parses");
        assert_eq!(l, PageLayout::default_for(8, false));
        let h32 = h64.replace("size:8;\tsigned:1", "size:4;\tsigned:1").replace("offset:16", "offset:12");
        let l = parse_header_page(&h32, false).expect("parses");
        assert_eq!((l.commit_size, l.data_offset), (4, 12));
        assert!(parse_header_page("garbage", false).is_err());
    }

    #[test]
    fn parses_header_event() {
        let t = "# compressed entry header\n\ttype_len    :    5 bits\n\ttime_delta  :   27 bits\n\
\tarray       :   32 bits\n\n\tpadding     : type == 29\n\ttime_extend : type == 30\n\
\ttime_stamp : type == 31\n\tdata max type_len  == 28\n";
        assert_eq!(parse_header_event(t), EventHeaderLayout::default());
    }
}
