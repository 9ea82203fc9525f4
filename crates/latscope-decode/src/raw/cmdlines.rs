//! `saved_cmdlines` (`PID COMM` per line): task names by pid for raw records, which carry only the pid.

use crate::typed::FastHash;
use latscope_model::{Pid, Text};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::Arc;

/// Task names by pid.
#[derive(Clone, Debug)]
pub struct Cmdlines {
    by_pid: HashMap<Pid, Text, BuildHasherDefault<FastHash>>,
    /// `<idle>` and `<...>`, shared rather than allocated per event.
    idle: Text,
    unknown: Text,
}

impl Default for Cmdlines {
    fn default() -> Self {
        Cmdlines { by_pid: HashMap::default(), idle: Arc::from("<idle>"), unknown: Arc::from("<...>") }
    }
}

impl Cmdlines {
    /// Parse `saved_cmdlines` text; malformed lines are ignored (the file is advisory).
    pub fn parse(text: &str) -> Cmdlines {
        let mut c = Cmdlines::default();
        for line in text.lines() {
            let line = line.trim_start();
            let Some((pid, comm)) = line.split_once(' ') else { continue };
            if let Ok(pid) = pid.parse::<Pid>() {
                c.by_pid.insert(pid, Arc::from(comm.trim_end()));
            }
        }
        c
    }

    /// Record a name learned from the trace itself (e.g. `sched_switch` next_comm).
    pub fn learn(&mut self, pid: Pid, comm: &str) {
        if self.by_pid.get(&pid).map_or(true, |c| &**c != comm) {
            self.by_pid.insert(pid, Arc::from(comm));
        }
    }

    /// The name of `pid`: `<idle>` for 0, `<...>` when unknown (as ftrace prints them).
    pub fn comm(&self, pid: Pid) -> Text {
        if let Some(c) = self.by_pid.get(&pid) {
            return c.clone();
        }
        if pid == 0 {
            self.idle.clone()
        } else {
            self.unknown.clone()
        }
    }

    /// Number of known pids.
    pub fn len(&self) -> usize {
        self.by_pid.len()
    }

    /// No pid known.
    pub fn is_empty(&self) -> bool {
        self.by_pid.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_falls_back() {
        let c = Cmdlines::parse("1 systemd\n  42 kworker/0:1 x\nbad\n");
        assert_eq!(&*c.comm(1), "systemd");
        assert_eq!(&*c.comm(42), "kworker/0:1 x");
        assert_eq!(&*c.comm(0), "<idle>");
        assert_eq!(&*c.comm(7), "<...>");
        assert_eq!(c.len(), 2);
    }
}
