//! Endian-aware, bounds-checked reads from a `.dat` file (any `Read + Seek`), with errors naming the offset.

use std::io::{Read, Seek, SeekFrom};

/// A `.dat` reader position with the file's endianness; every size is checked against the file length.
pub(crate) struct Input<R> {
    pub(crate) r: R,
    pub(crate) len: u64,
    pub(crate) big_endian: bool,
}

/// Errors while reading: the message names the offset.
pub(crate) type InResult<T> = Result<T, String>;

impl<R: Read + Seek> Input<R> {
    pub(crate) fn new(mut r: R) -> InResult<Input<R>> {
        let len = r.seek(SeekFrom::End(0)).map_err(|e| format!("cannot seek: {e}"))?;
        r.seek(SeekFrom::Start(0)).map_err(|e| format!("cannot seek: {e}"))?;
        Ok(Input { r, len, big_endian: false })
    }

    pub(crate) fn pos(&mut self) -> u64 {
        self.r.stream_position().unwrap_or(u64::MAX)
    }

    pub(crate) fn seek(&mut self, off: u64) -> InResult<()> {
        if off > self.len {
            return Err(format!("offset 0x{off:x} is past the end of the file (0x{:x} bytes)", self.len));
        }
        self.r.seek(SeekFrom::Start(off)).map(|_| ()).map_err(|e| format!("cannot seek to 0x{off:x}: {e}"))
    }

    pub(crate) fn bytes(&mut self, n: u64) -> InResult<Vec<u8>> {
        let at = self.pos();
        if n > self.len.saturating_sub(at) {
            return Err(format!("offset 0x{at:x}: {n} bytes wanted but the file ends at 0x{:x}", self.len));
        }
        let mut buf = vec![0u8; n as usize];
        self.r.read_exact(&mut buf).map_err(|e| format!("offset 0x{at:x}: {e}"))?;
        Ok(buf)
    }

    fn uint(&mut self, n: usize) -> InResult<u64> {
        let b = self.bytes(n as u64)?;
        Ok(crate::raw::page::read_uint(&b, 0, n, self.big_endian).unwrap_or(0))
    }

    pub(crate) fn u8(&mut self) -> InResult<u8> {
        Ok(self.uint(1)? as u8)
    }
    pub(crate) fn u16(&mut self) -> InResult<u16> {
        Ok(self.uint(2)? as u16)
    }
    pub(crate) fn u32(&mut self) -> InResult<u32> {
        Ok(self.uint(4)? as u32)
    }
    pub(crate) fn u64(&mut self) -> InResult<u64> {
        self.uint(8)
    }

    /// A NUL-terminated string (at most 4 KiB).
    pub(crate) fn cstr(&mut self) -> InResult<String> {
        let at = self.pos();
        let mut out = Vec::new();
        loop {
            let b = self.u8()?;
            if b == 0 {
                break;
            }
            out.push(b);
            if out.len() > 4096 {
                return Err(format!("offset 0x{at:x}: unterminated string"));
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    }

    /// `n` bytes as text.
    pub(crate) fn text(&mut self, n: u64) -> InResult<String> {
        Ok(lossy(self.bytes(n)?))
    }
}

/// Reads from an in-memory (decompressed) section with the file's endianness.
pub(crate) struct Bytes<'a> {
    pub(crate) b: &'a [u8],
    pub(crate) at: usize,
    pub(crate) big_endian: bool,
    /// Where the section starts in the file, for messages.
    pub(crate) origin: u64,
}

impl Bytes<'_> {
    pub(crate) fn take(&mut self, n: u64) -> InResult<&[u8]> {
        let end = (self.at as u64).checked_add(n).filter(|&e| e <= self.b.len() as u64).ok_or_else(|| {
            format!("section at 0x{:x}: {n} bytes wanted at +{} but it has {}", self.origin, self.at, self.b.len())
        })?;
        let s = &self.b[self.at..end as usize];
        self.at = end as usize;
        Ok(s)
    }
    fn uint(&mut self, n: usize) -> InResult<u64> {
        let be = self.big_endian;
        let b = self.take(n as u64)?;
        Ok(crate::raw::page::read_uint(b, 0, n, be).unwrap_or(0))
    }
    pub(crate) fn u16(&mut self) -> InResult<u16> {
        Ok(self.uint(2)? as u16)
    }
    pub(crate) fn u32(&mut self) -> InResult<u32> {
        Ok(self.uint(4)? as u32)
    }
    pub(crate) fn u64(&mut self) -> InResult<u64> {
        self.uint(8)
    }
    pub(crate) fn cstr(&mut self) -> InResult<String> {
        let rest = &self.b[self.at.min(self.b.len())..];
        let end =
            memchr::memchr(0, rest).ok_or_else(|| format!("section at 0x{:x}: unterminated string", self.origin))?;
        let s = String::from_utf8_lossy(&rest[..end]).into_owned();
        self.at += end + 1;
        Ok(s)
    }
    pub(crate) fn text(&mut self, n: u64) -> InResult<String> {
        Ok(lossy(self.take(n)?.to_vec()))
    }
    pub(crate) fn remaining(&self) -> usize {
        self.b.len().saturating_sub(self.at)
    }
}

/// Bytes as text, invalid UTF-8 replaced (valid text, the usual case, is taken without a copy).
fn lossy(b: Vec<u8>) -> String {
    String::from_utf8(b).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}
