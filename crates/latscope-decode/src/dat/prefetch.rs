//! Background decompression of one CPU's compressed chunks (files on disk only): a thread per CPU reads
//! and inflates chunks ahead of the decoder through a bounded channel, so memory stays flat.

use super::compress::Compression;
use super::input::Input;
use super::meta::CpuData;
use std::fs::File;
use std::path::PathBuf;
use std::sync::mpsc::{sync_channel, Receiver};

/// Decompressed blocks (or the error that ended the CPU's data) in file order.
pub(crate) type Blocks = Receiver<Result<Vec<u8>, String>>;

/// Start inflating `d`'s chunks from `path` on a thread; at most two blocks wait in the channel.
pub(crate) fn spawn(path: PathBuf, d: CpuData, compression: Compression, big_endian: bool) -> Option<Blocks> {
    let (tx, rx) = sync_channel(2);
    let spawned = std::thread::Builder::new().name(format!("dat-cpu{}", d.cpu)).spawn(move || {
        let run = || -> Result<(), String> {
            let f = File::open(&path).map_err(|e| e.to_string())?;
            let mut inp = Input::new(f)?;
            inp.big_endian = big_endian;
            inp.seek(d.offset)?;
            let count = inp.u32()?;
            let end = d.offset.saturating_add(d.size);
            for _ in 0..count {
                if inp.pos() >= end {
                    break;
                }
                let csize = inp.u32()?;
                let usize_ = inp.u32()?;
                let data = inp.bytes(u64::from(csize))?;
                let block = compression.decompress(&data, u64::from(usize_))?;
                if tx.send(Ok(block)).is_err() {
                    return Ok(()); // The reader was dropped.
                }
            }
            Ok(())
        };
        if let Err(e) = run() {
            let _ = tx.send(Err(e));
        }
    });
    spawned.ok().map(|_| rx)
}
