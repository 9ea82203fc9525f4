//! CPU numbers and CPU lists in the kernel's `1,3-5` syntax.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A logical CPU number as the kernel counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CpuId(pub u32);

impl fmt::Display for CpuId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// A sorted set of CPUs without duplicates.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct CpuList(pub Vec<CpuId>);

/// Why a CPU list was rejected.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CpuListError {
    /// An element is neither `N` nor `N-M`.
    #[error("'{item}' in CPU list '{list}' is not a CPU number or range; write e.g. 1,3-5")]
    Item {
        /// The whole list.
        list: String,
        /// The bad element.
        item: String,
    },
    /// A range runs backwards.
    #[error("range '{item}' in CPU list '{list}' runs backwards; write the lower CPU first")]
    Backwards {
        /// The whole list.
        list: String,
        /// The bad range.
        item: String,
    },
    /// The list is empty.
    #[error("empty CPU list; write e.g. 0 or 1,3-5")]
    Empty,
}

impl CpuList {
    /// Parses the kernel's list syntax: `0`, `1,3-5`, `0-3:2` is not supported (no strides).
    /// Whitespace and a trailing newline (as in sysfs files) are accepted.
    pub fn parse(s: &str) -> Result<CpuList, CpuListError> {
        let t = s.trim();
        if t.is_empty() {
            return Err(CpuListError::Empty);
        }
        let mut cpus = Vec::new();
        for item in t.split(',') {
            let item = item.trim();
            let bad = || CpuListError::Item { list: t.to_string(), item: item.to_string() };
            match item.split_once('-') {
                Some((a, b)) => {
                    let a: u32 = a.trim().parse().map_err(|_| bad())?;
                    let b: u32 = b.trim().parse().map_err(|_| bad())?;
                    if b < a {
                        return Err(CpuListError::Backwards { list: t.to_string(), item: item.to_string() });
                    }
                    if b - a > 65_536 {
                        return Err(bad());
                    }
                    cpus.extend((a..=b).map(CpuId));
                }
                None => cpus.push(CpuId(item.parse().map_err(|_| bad())?)),
            }
        }
        cpus.sort();
        cpus.dedup();
        Ok(CpuList(cpus))
    }

    /// Whether `cpu` is in the list.
    pub fn contains(&self, cpu: CpuId) -> bool {
        self.0.binary_search(&cpu).is_ok()
    }

    /// The CPUs, in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = CpuId> + '_ {
        self.0.iter().copied()
    }

    /// Number of CPUs in the list.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether the list is empty.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl fmt::Display for CpuList {
    /// Renders back in compact range syntax (`0-3,6`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        let mut i = 0;
        while i < self.0.len() {
            let start = self.0[i].0;
            let mut end = start;
            while i + 1 < self.0.len() && self.0[i + 1].0 == end + 1 {
                i += 1;
                end += 1;
            }
            parts.push(if start == end { start.to_string() } else { format!("{start}-{end}") });
            i += 1;
        }
        write!(f, "{}", parts.join(","))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[u32]) -> CpuList {
        CpuList(v.iter().copied().map(CpuId).collect())
    }

    #[test]
    fn parses_lists() {
        assert_eq!(CpuList::parse("1"), Ok(ids(&[1])));
        assert_eq!(CpuList::parse("1,3-5"), Ok(ids(&[1, 3, 4, 5])));
        assert_eq!(CpuList::parse("0-1\n"), Ok(ids(&[0, 1])));
        assert_eq!(CpuList::parse("3,1,1"), Ok(ids(&[1, 3])));
    }

    #[test]
    fn rejects_bad_lists() {
        assert_eq!(CpuList::parse(""), Err(CpuListError::Empty));
        assert!(matches!(CpuList::parse("a"), Err(CpuListError::Item { .. })));
        assert!(matches!(CpuList::parse("5-3"), Err(CpuListError::Backwards { .. })));
        assert!(matches!(CpuList::parse("1,,2"), Err(CpuListError::Item { .. })));
        assert!(matches!(CpuList::parse("-1"), Err(CpuListError::Item { .. })));
    }

    #[test]
    fn renders_ranges() {
        assert_eq!(ids(&[0, 1, 2, 3, 6]).to_string(), "0-3,6");
        assert_eq!(ids(&[1]).to_string(), "1");
    }
}
