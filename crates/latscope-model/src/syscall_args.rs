//! [`SyscallArgs`]: a system call's arguments as a binary trace records them or as a text trace prints them.

use crate::Text;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// The arguments of a `sys_enter` event.
///
/// Binary traces (ring-buffer pages, `.dat`) keep the six argument words as they are: a million syscall
/// entries then cost no text formatting and no allocation, and the text (`0x3, 0x7ffd…`, the way ftrace
/// prints an array of longs) is made only when something displays it. Text traces keep what they printed.
/// Both serialise as that text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SyscallArgs {
    /// `raw_syscalls:sys_enter`'s `args[6]`, as recorded.
    Words([u64; 6]),
    /// The arguments as a trace printed them (`3, 7ffd, 40, 0, 0, 0`, `fd: 0x3, buf: …`).
    Text(Text),
}

impl SyscallArgs {
    /// No arguments known.
    pub fn empty() -> SyscallArgs {
        SyscallArgs::Text(Text::from(""))
    }
}

impl From<&str> for SyscallArgs {
    fn from(s: &str) -> SyscallArgs {
        SyscallArgs::Text(Text::from(s))
    }
}

impl From<Text> for SyscallArgs {
    fn from(t: Text) -> SyscallArgs {
        SyscallArgs::Text(t)
    }
}

impl fmt::Display for SyscallArgs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyscallArgs::Words(words) => {
                for (i, w) in words.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{w:#x}")?;
                }
                Ok(())
            }
            SyscallArgs::Text(t) => f.write_str(t),
        }
    }
}

impl Serialize for SyscallArgs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SyscallArgs {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SyscallArgs, D::Error> {
        Ok(SyscallArgs::Text(Text::deserialize(d)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_print_as_ftrace_prints_an_array_of_longs() {
        let args = SyscallArgs::Words([3, 0x7ffd, 0x40, 0, 0, u64::MAX]);
        assert_eq!(args.to_string(), "0x3, 0x7ffd, 0x40, 0x0, 0x0, 0xffffffffffffffff");
        assert_eq!(SyscallArgs::from("fd: 0x3").to_string(), "fd: 0x3");
    }

    #[test]
    fn serialises_as_its_text() {
        let json = serde_json::to_string(&SyscallArgs::Words([1, 2, 3, 4, 5, 6])).expect("json");
        assert_eq!(json, "\"0x1, 0x2, 0x3, 0x4, 0x5, 0x6\"");
        let back: SyscallArgs = serde_json::from_str(&json).expect("parse");
        assert_eq!(back.to_string(), "0x1, 0x2, 0x3, 0x4, 0x5, 0x6");
    }
}
