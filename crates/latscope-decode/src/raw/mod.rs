//! tracefs raw input: event format files, header_page, ring-buffer pages, and the [`RawDecoder`] over them.

pub mod bprint;
pub mod cmdlines;
pub mod common;
pub mod decoder;
pub mod format;
pub mod header_page;
pub mod kallsyms;
pub mod page;
pub mod record;
pub mod source;
pub mod symbols;
pub mod syscall_plan;
pub mod time_map;
pub mod time_shift;

pub use decoder::RawDecoder;
pub use header_page::PageLayout;
pub use page::{Missed, PageSummary};
pub use time_map::TimeMap;
