//! The fixed numbers and labels of the trace-cmd `.dat` format (trace-cmd.dat.v6(5), trace-cmd.dat.v7(5)):
//! the magic, the labels of the v6 sequential header, and the option ids (a v7 section carries the id of
//! the option that points at it; the options section itself has id [`OPT_DONE`]). One definition for the
//! reader ([`super::meta`]) and the writer ([`super::writer`]).

/// The `.dat` magic: 0x17 0x08 0x44 "tracing".
pub const MAGIC: &[u8; 10] = b"\x17\x08\x44tracing";

/// The label before the page layout text.
pub(crate) const HEADER_PAGE: &str = "header_page";
/// The label before the event header text.
pub(crate) const HEADER_EVENT: &str = "header_event";
/// v6: the options follow.
pub(crate) const LABEL_OPTIONS: &[u8] = b"options  \0";
/// v6: the per-CPU offsets and sizes of the ring-buffer data follow.
pub(crate) const LABEL_FLYRECORD: &[u8] = b"flyrecord\0";
/// v6: latency-tracer text follows instead of ring-buffer data.
pub(crate) const LABEL_LATENCY: &[u8] = b"latency  \0";

/// v7 section flag: the section's data is compressed.
pub(crate) const SECTION_COMPRESSED: u16 = 1;

/// End of an option list (v7: also the id of an options section).
pub(crate) const OPT_DONE: u16 = 0;
/// `--date`: microseconds from the trace clock to the time of day, as C text.
pub(crate) const OPT_DATE: u16 = 1;
/// A CPU's `per_cpu/cpuN/stats` text.
pub(crate) const OPT_CPUSTAT: u16 = 2;
/// A named ring buffer (instance).
pub(crate) const OPT_BUFFER: u16 = 3;
/// The `trace_clock` text, selected clock in brackets.
pub(crate) const OPT_TRACECLOCK: u16 = 4;
/// `uname -a`-like text of the recording machine.
pub(crate) const OPT_UNAME: u16 = 5;
/// `--ts-offset`: nanoseconds, as C text.
pub(crate) const OPT_OFFSET: u16 = 7;
/// Number of CPUs.
pub(crate) const OPT_CPUCOUNT: u16 = 8;
/// The recording tool's version text.
pub(crate) const OPT_VERSION: u16 = 9;
/// A guest's time-sync data from the host.
pub(crate) const OPT_TIME_SHIFT: u16 = 12;
/// TSC to nanoseconds: multiplier, shift, offset.
pub(crate) const OPT_TSC2NSEC: u16 = 14;
/// v7: the section holding `header_page` and `header_event`.
pub(crate) const OPT_HEADER_INFO: u16 = 16;
/// v7: the section holding the `ftrace` formats.
pub(crate) const OPT_FTRACE_EVENTS: u16 = 17;
/// v7: the section holding the event formats per system.
pub(crate) const OPT_EVENT_FORMATS: u16 = 18;
/// v7: the section holding `/proc/kallsyms`.
pub(crate) const OPT_KALLSYMS: u16 = 19;
/// v7: the section holding `printk_formats`.
pub(crate) const OPT_PRINTK: u16 = 20;
/// v7: the section holding `saved_cmdlines`.
pub(crate) const OPT_CMDLINES: u16 = 21;
/// v7: a buffer holding latency-tracer text.
pub(crate) const OPT_BUFFER_TEXT: u16 = 22;
