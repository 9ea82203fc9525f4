//! One per-CPU ring-buffer page: page header, event headers, time extends, absolute stamps, padding.

use super::header_page::{EventHeaderLayout, PageLayout};

/// Commit-word flag: events were lost before this page.
const RB_MISSED_EVENTS: u64 = 1 << 31;
/// Commit-word flag: the number of lost events is stored after the page's data.
const RB_MISSED_STORED: u64 = 1 << 30;
/// Bits of the commit word that hold the data length.
const COMMIT_MASK: u64 = (1 << 27) - 1;
/// Absolute timestamps keep only the low 59 bits; the top bits come from the running time.
const TS_MSB: u64 = !((1u64 << 59) - 1);

/// Events the kernel dropped before a page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Missed {
    /// Nothing lost.
    #[default]
    None,
    /// Events were lost; the kernel did not store how many.
    Unknown,
    /// This many events were lost.
    Count(u64),
}

/// What a page said about itself.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PageSummary {
    /// The page's base timestamp.
    pub ts: u64,
    /// Bytes of event data the page holds.
    pub data_len: usize,
    /// Events lost before this page.
    pub missed: Missed,
    /// Data records delivered.
    pub records: usize,
    /// Problems found (the page was decoded up to the first one).
    pub warnings: Vec<String>,
}

/// Read an unsigned integer of `size` bytes at `off` with the given endianness; `None` when out of range.
pub(crate) fn read_uint(buf: &[u8], off: usize, size: usize, big_endian: bool) -> Option<u64> {
    let bytes = buf.get(off..off.checked_add(size)?)?;
    // The usual sizes without a byte loop.
    macro_rules! fixed {
        ($t:ty) => {{
            let a = bytes.try_into().ok()?;
            return Some(if big_endian { <$t>::from_be_bytes(a) } else { <$t>::from_le_bytes(a) } as u64);
        }};
    }
    match size {
        1 => return Some(u64::from(bytes[0])),
        2 => fixed!(u16),
        4 => fixed!(u32),
        8 => fixed!(u64),
        _ => {}
    }
    let mut v: u64 = 0;
    if big_endian {
        for &b in bytes {
            v = (v << 8) | u64::from(b);
        }
    } else {
        for &b in bytes.iter().rev() {
            v = (v << 8) | u64::from(b);
        }
    }
    Some(v)
}

/// A page that its input cuts short (a truncated file) made decodable: its bytes up to the cut, with the
/// commit length lowered to the data present (and a stored lost-events count, which lay after the cut,
/// dropped), so the records wholly before the cut decode. `None` when the cut falls inside the header or
/// the page's data was whole anyway; otherwise the page and the number of data bytes the cut took.
pub fn clamp_cut_page(layout: &PageLayout, page: &[u8]) -> Option<(Vec<u8>, usize)> {
    let be = layout.big_endian;
    let commit = read_uint(page, layout.commit_offset, layout.commit_size, be)?;
    read_uint(page, layout.ts_offset, 8, be)?;
    let len = (commit & COMMIT_MASK) as usize;
    let present = page.len().checked_sub(layout.data_offset)?;
    if len <= present {
        return None;
    }
    let mut commit = (commit & !COMMIT_MASK & !RB_MISSED_STORED) | present as u64;
    if layout.commit_size == 4 {
        commit &= u64::from(u32::MAX);
    }
    let mut out = page.to_vec();
    let word = &mut out[layout.commit_offset..layout.commit_offset + layout.commit_size];
    match (layout.commit_size, be) {
        (4, false) => word.copy_from_slice(&(commit as u32).to_le_bytes()),
        (4, true) => word.copy_from_slice(&(commit as u32).to_be_bytes()),
        (_, false) => word.copy_from_slice(&commit.to_le_bytes()),
        (_, true) => word.copy_from_slice(&commit.to_be_bytes()),
    }
    Some((out, len - present))
}

/// Decode one page. `emit(ts, record)` is called for every data record in order; `record` is the event's
/// payload (starting with `common_type`). Never panics: a malformed page yields the records before the
/// damage and a warning.
pub fn decode_page<F: FnMut(u64, &[u8]) + ?Sized>(
    layout: &PageLayout,
    events: &EventHeaderLayout,
    page: &[u8],
    emit: &mut F,
) -> PageSummary {
    let be = layout.big_endian;
    let mut s = PageSummary::default();
    let (Some(ts), Some(commit)) =
        (read_uint(page, layout.ts_offset, 8, be), read_uint(page, layout.commit_offset, layout.commit_size, be))
    else {
        s.warnings.push(format!("page of {} bytes is shorter than its header", page.len()));
        return s;
    };
    s.ts = ts;
    let len = (commit & COMMIT_MASK) as usize;
    let data_end = layout.data_offset.saturating_add(len);
    if commit & RB_MISSED_EVENTS != 0 {
        s.missed = Missed::Unknown;
        if commit & RB_MISSED_STORED != 0 {
            if let Some(n) = read_uint(page, data_end, layout.commit_size, be) {
                s.missed = Missed::Count(n);
            }
        }
    }
    if data_end > page.len() {
        s.warnings.push(format!("commit length {len} runs past the {}-byte page; page skipped", page.len()));
        return s;
    }
    s.data_len = len;
    let mut ts = ts;
    let mut off = layout.data_offset;
    while off + 4 <= data_end {
        let Some(h) = read_uint(page, off, 4, be) else { break };
        let (type_len, delta) = if be { ((h >> 27) as u32, h & 0x07ff_ffff) } else { ((h & 0x1f) as u32, h >> 5) };
        let array0 = read_uint(page, off + 4, 4, be);
        if type_len == events.padding {
            if delta == 0 {
                break; // The rest of the page is empty.
            }
            let Some(a) = array0 else { break };
            off = off.saturating_add(4).saturating_add(a as usize);
        } else if type_len == events.time_extend {
            let Some(a) = array0 else {
                s.warnings.push(format!("time extend at page offset {off} is cut off"));
                break;
            };
            ts = ts.wrapping_add((a << 27) | delta);
            off += 8;
        } else if type_len == events.time_stamp {
            let Some(a) = array0 else {
                s.warnings.push(format!("absolute timestamp at page offset {off} is cut off"));
                break;
            };
            let mut abs = (a << 27) | delta;
            if ts & TS_MSB != 0 {
                abs |= ts & TS_MSB;
                if abs < ts {
                    abs = abs.wrapping_add(1 << 59);
                }
            }
            ts = abs;
            off += 8;
        } else {
            let (start, data_len) = if type_len == 0 {
                let Some(a) = array0 else {
                    s.warnings.push(format!("event length at page offset {off} is cut off"));
                    break;
                };
                if a < 4 {
                    s.warnings.push(format!("event at page offset {off} has impossible length {a}"));
                    break;
                }
                (off + 8, a as usize - 4)
            } else if type_len <= events.data_max {
                (off + 4, type_len as usize * 4)
            } else {
                s.warnings.push(format!("unknown event type {type_len} at page offset {off}"));
                break;
            };
            let end = start.saturating_add(data_len);
            if end > data_end {
                s.warnings.push(format!("event at page offset {off} runs past the page's data ({data_end})"));
                break;
            }
            ts = ts.wrapping_add(delta);
            emit(ts, &page[start..end]);
            s.records += 1;
            off = end;
        }
    }
    s
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Builds little-endian 64-bit pages by hand.
    pub(crate) struct PageBuilder {
        pub(crate) buf: Vec<u8>,
    }

    impl PageBuilder {
        pub(crate) fn new(ts: u64) -> Self {
            let mut buf = ts.to_le_bytes().to_vec();
            buf.extend_from_slice(&0u64.to_le_bytes());
            PageBuilder { buf }
        }
        fn header(&mut self, type_len: u32, delta: u32) {
            self.buf.extend_from_slice(&((delta << 5) | type_len).to_le_bytes());
        }
        /// A data event with a small (type_len-encoded) payload, padded to 4 bytes.
        pub(crate) fn data(&mut self, delta: u32, payload: &[u8]) -> &mut Self {
            let words = payload.len().div_ceil(4);
            self.header(words as u32, delta);
            self.buf.extend_from_slice(payload);
            self.buf.resize(self.buf.len() + words * 4 - payload.len(), 0);
            self
        }
        pub(crate) fn big_data(&mut self, delta: u32, payload: &[u8]) -> &mut Self {
            let words = payload.len().div_ceil(4);
            self.header(0, delta);
            self.buf.extend_from_slice(&((words * 4 + 4) as u32).to_le_bytes());
            self.buf.extend_from_slice(payload);
            self.buf.resize(self.buf.len() + words * 4 - payload.len(), 0);
            self
        }
        pub(crate) fn extend(&mut self, delta: u64) -> &mut Self {
            self.header(30, (delta & 0x07ff_ffff) as u32);
            self.buf.extend_from_slice(&((delta >> 27) as u32).to_le_bytes());
            self
        }
        pub(crate) fn absolute(&mut self, ts: u64) -> &mut Self {
            self.header(31, (ts & 0x07ff_ffff) as u32);
            self.buf.extend_from_slice(&(((ts >> 27) & 0xffff_ffff) as u32).to_le_bytes());
            self
        }
        pub(crate) fn padding(&mut self, delta: u32, skip: u32) -> &mut Self {
            self.header(29, delta);
            self.buf.extend_from_slice(&skip.to_le_bytes());
            self.buf.resize(self.buf.len() + skip as usize - 4, 0xee);
            self
        }
        /// Finish: set commit (with flags / stored missed count) and pad to 4096 bytes.
        pub(crate) fn finish(&mut self, missed: Option<Option<u64>>) -> Vec<u8> {
            let len = (self.buf.len() - 16) as u64;
            let mut commit = len;
            if let Some(m) = missed {
                commit |= RB_MISSED_EVENTS;
                if let Some(n) = m {
                    commit |= RB_MISSED_STORED;
                    self.buf.extend_from_slice(&n.to_le_bytes());
                }
            }
            self.buf[8..16].copy_from_slice(&commit.to_le_bytes());
            let mut page = self.buf.clone();
            page.resize(4096, 0);
            page
        }
    }

    fn run(page: &[u8]) -> (PageSummary, Vec<(u64, Vec<u8>)>) {
        let mut got = Vec::new();
        let layout = PageLayout::default_for(8, false);
        let s = decode_page(&layout, &EventHeaderLayout::default(), page, &mut |ts, d| got.push((ts, d.to_vec())));
        (s, got)
    }

    #[test]
    fn deltas_extends_and_big_events() {
        let page = PageBuilder::new(1_000)
            .data(5, &[1, 0, 0, 0])
            .extend(1 << 40)
            .data(7, &[2, 0, 0, 0, 9])
            .big_data(3, &[3; 200])
            .finish(None);
        let (s, got) = run(&page);
        assert!(s.warnings.is_empty(), "{:?}", s.warnings);
        assert_eq!(s.missed, Missed::None);
        let ts: Vec<u64> = got.iter().map(|g| g.0).collect();
        assert_eq!(ts, vec![1_005, 1_005 + (1 << 40) + 7, 1_005 + (1 << 40) + 10]);
        assert_eq!(got[1].1, vec![2, 0, 0, 0, 9, 0, 0, 0]);
        assert_eq!(got[2].1.len(), 200);
    }

    #[test]
    fn absolute_timestamps_keep_the_top_bits() {
        let base = (3u64 << 59) + 100;
        let page = PageBuilder::new(base).data(1, &[1, 0, 0, 0]).absolute(base + 5_000).data(2, &[1; 4]).finish(None);
        let (_, got) = run(&page);
        assert_eq!(got[0].0, base + 1);
        assert_eq!(got[1].0, base + 5_002);
    }

    #[test]
    fn padding_is_skipped_and_null_padding_ends_the_page() {
        let mut b = PageBuilder::new(10);
        b.data(1, &[1; 4]).padding(4, 12).data(1, &[2; 4]);
        let page = b.finish(None);
        let (s, got) = run(&page);
        assert_eq!(got.len(), 2, "{s:?}");
        let page = PageBuilder::new(10).data(1, &[1; 4]).padding(0, 8).data(1, &[2; 4]).finish(None);
        assert_eq!(run(&page).1.len(), 1);
    }

    #[test]
    fn missed_events_flags() {
        let page = PageBuilder::new(10).data(1, &[1; 4]).finish(Some(Some(42)));
        assert_eq!(run(&page).0.missed, Missed::Count(42));
        let page = PageBuilder::new(10).data(1, &[1; 4]).finish(Some(None));
        assert_eq!(run(&page).0.missed, Missed::Unknown);
    }

    #[test]
    fn corrupt_pages_warn_and_never_panic() {
        let (s, got) = run(&[1, 2, 3]);
        assert!(got.is_empty() && !s.warnings.is_empty());
        let mut page = PageBuilder::new(10).data(1, &[1; 4]).big_data(1, &[2; 8]).finish(None);
        // Make the second event claim 4000 bytes: first event survives, then a warning.
        page[16 + 8 + 4..16 + 8 + 8].copy_from_slice(&4000u32.to_le_bytes());
        let (s, got) = run(&page);
        assert_eq!(got.len(), 1);
        assert_eq!(s.warnings.len(), 1, "{:?}", s.warnings);
        // Commit larger than the page.
        let mut page = PageBuilder::new(10).data(1, &[1; 4]).finish(None);
        page[8..16].copy_from_slice(&100_000u64.to_le_bytes());
        assert!(!run(&page).0.warnings.is_empty());
        // Every truncation of a valid page.
        let page = PageBuilder::new(10).data(1, &[1; 4]).extend(99).big_data(3, &[7; 40]).finish(Some(Some(3)));
        for cut in 0..200 {
            let _ = run(&page[..cut]);
        }
    }
}
