//! Decompression of v7 `.dat` sections and flyrecord chunks (zlib, zstd), bounded by the declared size.

use std::cell::RefCell;
use std::io::Read;

/// Largest uncompressed block accepted (a chunk or a section); larger claims are treated as corrupt.
pub(crate) const MAX_BLOCK: u64 = 1 << 30;

/// The file's compression algorithm.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    /// Not compressed.
    None,
    /// zlib (`compress2`).
    Zlib,
    /// Zstandard.
    Zstd,
}

impl Compression {
    /// From the header's algorithm name.
    pub(crate) fn from_name(name: &str) -> Result<Compression, String> {
        match name {
            "none" | "" => Ok(Compression::None),
            "zlib" => Ok(Compression::Zlib),
            "zstd" => Ok(Compression::Zstd),
            other => Err(format!("compression `{other}` is not supported (zlib and zstd are)")),
        }
    }

    /// Decompress `data`, which must expand to exactly `size` bytes.
    pub(crate) fn decompress(self, data: &[u8], size: u64) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        self.decompress_into(data, size, &mut out)?;
        Ok(out)
    }

    /// [`decompress`](Self::decompress) into `out` (its content replaced), reusing its allocation.
    pub(crate) fn decompress_into(self, data: &[u8], size: u64, out: &mut Vec<u8>) -> Result<(), String> {
        if size > MAX_BLOCK {
            return Err(format!("compressed block claims {size} bytes uncompressed (limit {MAX_BLOCK})"));
        }
        out.clear();
        out.reserve(size.min(64 << 20) as usize);
        let res = match self {
            Compression::None => {
                out.extend_from_slice(data);
                Ok(())
            }
            Compression::Zlib => flate2::read::ZlibDecoder::new(data)
                .take(size + 1)
                .read_to_end(out)
                .map(|_| ())
                .map_err(|e| e.to_string()),
            Compression::Zstd => zstd_into(data, size as usize, out),
        };
        res.map_err(|e| format!("{self:?} decompression failed: {e}"))?;
        if out.len() as u64 != size {
            return Err(format!("{self:?} block expanded to {} bytes, header says {size}", out.len()));
        }
        Ok(())
    }
}

/// Inflate one zstd block (one or more frames) into `out` (replacing its content), with room for at most
/// `size` bytes: a block that expands further fails. The decompression context is kept per thread.
fn zstd_into(data: &[u8], size: usize, out: &mut Vec<u8>) -> Result<(), String> {
    thread_local! {
        static CTX: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
    }
    out.clear();
    out.reserve_exact(size);
    CTX.with(|c| {
        let mut c = c.try_borrow_mut().map_err(|_| "zstd context in use".to_string())?;
        let d = match &mut *c {
            Some(d) => d,
            None => c.insert(zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?),
        };
        d.decompress_to_buffer(data, out).map(|_| ()).map_err(|e| e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn zlib_round_trip_and_size_check() {
        let mut e = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(b"hello hello hello").expect("write");
        let z = e.finish().expect("finish");
        assert_eq!(Compression::Zlib.decompress(&z, 17).expect("ok"), b"hello hello hello");
        assert!(Compression::Zlib.decompress(&z, 5).is_err());
        assert!(Compression::Zstd.decompress(&z, 17).is_err());
        assert!(Compression::from_name("lz4").is_err());
    }
}
