//! The only crate that touches the kernel: measurement threads, tracefs, and host facts.

mod error;
pub mod host;
pub mod measure;
pub mod tracefs;

pub use error::SysError;
