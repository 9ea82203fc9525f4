//! [`TaskName`]: a task's command name (`comm`) held in 16 bytes, copied without a reference count.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::sync::{Mutex, OnceLock};

/// The kernel keeps a task's name in 16 bytes with its terminating NUL (`TASK_COMM_LEN`).
const INLINE: usize = 15;
/// Last byte of a name too long to be kept inline; its first four bytes index [`long_names`].
const LONG: u8 = 0xff;

/// A task's name as traces show it (`comm`, `prev_comm`, `<idle>`, `<...>`).
///
/// The kernel's names are at most 15 bytes, so the name is kept inline: naming a million events copies
/// 16 bytes each, where a shared string would update a reference count that the decoding threads pass
/// between cores. A longer name (a text format that printed one) is stored once for the whole process
/// and referred to by number: such names are few, and they stay until the process exits.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TaskName {
    /// Inline: the name's bytes, zero-padded, and its length in the last byte. Long: [`LONG`] in the
    /// last byte and the index into [`long_names`] in the first four.
    bytes: [u8; 16],
}

impl TaskName {
    /// The empty name.
    pub const EMPTY: TaskName = TaskName { bytes: [0; 16] };

    /// The name `s`.
    pub fn new(s: &str) -> TaskName {
        let mut bytes = [0u8; 16];
        if s.len() <= INLINE {
            bytes[..s.len()].copy_from_slice(s.as_bytes());
            bytes[15] = s.len() as u8;
        } else {
            bytes[..4].copy_from_slice(&long_names().index_of(s).to_le_bytes());
            bytes[15] = LONG;
        }
        TaskName { bytes }
    }

    /// A name as the kernel records it: a fixed-size field, NUL-terminated when shorter. Bytes that are
    /// not UTF-8 are replaced (`U+FFFD`), as text output would show them.
    pub fn from_c_bytes(raw: &[u8]) -> TaskName {
        let end = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
        let raw = &raw[..end];
        match std::str::from_utf8(raw) {
            Ok(s) => TaskName::new(s),
            Err(_) => TaskName::new(&String::from_utf8_lossy(raw)),
        }
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        let len = self.bytes[15];
        if len == LONG {
            let index = u32::from_le_bytes([self.bytes[0], self.bytes[1], self.bytes[2], self.bytes[3]]);
            return long_names().get(index);
        }
        // Only `new` writes inline bytes, and it copies a whole `&str` of at most 15 bytes.
        std::str::from_utf8(&self.bytes[..usize::from(len)]).unwrap_or("")
    }
}

impl TaskName {
    /// Whether the name starts with `prefix`, compared as bytes: cheaper than [`as_str`](Self::as_str) for
    /// a test made on every event of a trace.
    pub fn has_prefix(&self, prefix: &str) -> bool {
        let len = self.bytes[15];
        if len == LONG {
            return self.as_str().starts_with(prefix);
        }
        self.bytes[..usize::from(len)].starts_with(prefix.as_bytes())
    }
}

impl Default for TaskName {
    fn default() -> TaskName {
        TaskName::EMPTY
    }
}

impl Deref for TaskName {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for TaskName {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for TaskName {
    fn from(s: &str) -> TaskName {
        TaskName::new(s)
    }
}

impl From<&String> for TaskName {
    fn from(s: &String) -> TaskName {
        TaskName::new(s)
    }
}

impl From<String> for TaskName {
    fn from(s: String) -> TaskName {
        TaskName::new(&s)
    }
}

impl PartialEq<str> for TaskName {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for TaskName {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialOrd for TaskName {
    fn partial_cmp(&self, other: &TaskName) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for TaskName {
    fn cmp(&self, other: &TaskName) -> Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Display for TaskName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.as_str())
    }
}

impl fmt::Debug for TaskName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl Serialize for TaskName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskName {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<TaskName, D::Error> {
        Ok(TaskName::new(&String::deserialize(d)?))
    }
}

/// Names longer than [`INLINE`] bytes, each stored once for the life of the process.
#[derive(Default)]
struct LongNames {
    names: Vec<&'static str>,
    index: HashMap<&'static str, u32>,
}

/// The process's long names.
fn long_names() -> LongNamesHandle {
    static NAMES: OnceLock<Mutex<LongNames>> = OnceLock::new();
    LongNamesHandle(NAMES.get_or_init(Mutex::default))
}

/// Access to the long names (a lock held only while looking up or adding one).
struct LongNamesHandle(&'static Mutex<LongNames>);

impl LongNamesHandle {
    fn index_of(&self, s: &str) -> u32 {
        let mut names = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(&i) = names.index.get(s) {
            return i;
        }
        let stored: &'static str = Box::leak(s.to_owned().into_boxed_str());
        let i = names.names.len() as u32;
        names.names.push(stored);
        names.index.insert(stored, i);
        i
    }

    fn get(&self, index: u32) -> &'static str {
        let names = self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        names.names.get(index as usize).copied().unwrap_or("")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_names_are_inline_and_long_names_stored_once() {
        for s in ["", "<idle>", "swapper/0", "kworker/u4:1-ev", "exactly15bytes!"] {
            let n = TaskName::new(s);
            assert_eq!(n.as_str(), s);
            assert_eq!(n.bytes[15] as usize, s.len());
        }
        let long = "a-name-longer-than-the-kernel-keeps";
        let (a, b) = (TaskName::new(long), TaskName::new(long));
        assert_eq!((a.as_str(), a.bytes[15]), (long, LONG));
        assert_eq!(a, b);
        assert_ne!(a, TaskName::new("a-name-longer-than-the-kernel-keeps!"));
        assert_eq!(std::mem::size_of::<TaskName>(), 16);
    }

    #[test]
    fn prefixes_of_inline_and_long_names() {
        let long = TaskName::new("latscope-a-name-longer-than-the-kernel-keeps");
        for (name, prefix, yes) in [
            (TaskName::new("latscope-t1"), "latscope", true),
            (TaskName::new("latscope"), "latscope", true),
            (TaskName::new("latscop"), "latscope", false),
            (TaskName::new("stress-ng"), "latscope", false),
            (TaskName::EMPTY, "", true),
            (long, "latscope-a", true),
            (long, "latscope-b", false),
        ] {
            assert_eq!(name.has_prefix(prefix), yes, "{name} {prefix}");
        }
    }

    #[test]
    fn kernel_fields_stop_at_nul_and_replace_bad_bytes() {
        assert_eq!(TaskName::from_c_bytes(b"bash\0\0garbage\0\0\0").as_str(), "bash");
        assert_eq!(TaskName::from_c_bytes(b"0123456789abcdef").as_str(), "0123456789abcdef");
        assert_eq!(TaskName::from_c_bytes(b"a\xffb\0").as_str(), "a\u{fffd}b");
    }

    #[test]
    fn compares_prints_and_serialises_as_text() {
        let n = TaskName::from("cyclictest");
        assert!(n == "cyclictest" && TaskName::from("a") < TaskName::from("b"));
        assert_eq!(format!("[{n:>12}] {n:?}"), "[  cyclictest] \"cyclictest\"");
        let json = serde_json::to_string(&n).expect("a name serialises");
        assert_eq!(json, "\"cyclictest\"");
        assert_eq!(serde_json::from_str::<TaskName>(&json).expect("and reads back"), n);
    }
}
