//! `saved_cmdlines` (`PID COMM` per line): task names by pid for raw records, which carry only the pid.

use crate::typed::FastHash;
use latscope_model::{Event, EventKind, FieldValue, Pid, TaskName};
use std::collections::HashMap;
use std::hash::BuildHasherDefault;

/// Task names by pid.
#[derive(Clone, Debug, Default)]
pub struct Cmdlines {
    by_pid: HashMap<Pid, TaskName, BuildHasherDefault<FastHash>>,
}

impl Cmdlines {
    /// Parse `saved_cmdlines` text; malformed lines are ignored (the file is advisory).
    pub fn parse(text: &str) -> Cmdlines {
        let mut c = Cmdlines::default();
        for line in text.lines() {
            let line = line.trim_start();
            let Some((pid, comm)) = line.split_once(' ') else { continue };
            if let Ok(pid) = pid.parse::<Pid>() {
                c.by_pid.insert(pid, TaskName::new(comm.trim_end()));
            }
        }
        c
    }

    /// Record a name learned from the trace itself (e.g. `sched_switch` next_comm).
    pub fn learn(&mut self, pid: Pid, comm: &str) {
        if self.by_pid.get(&pid).map_or(true, |c| c != comm) {
            self.by_pid.insert(pid, TaskName::new(comm));
        }
    }

    /// The name of `pid`: `<idle>` for 0, `<...>` when unknown (as ftrace prints them).
    pub fn comm(&self, pid: Pid) -> TaskName {
        if let Some(&c) = self.by_pid.get(&pid) {
            return c;
        }
        TaskName::new(if pid == 0 { "<idle>" } else { "<...>" })
    }

    /// Number of known pids.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_pid.len()
    }
}

/// Task names for events taken in time order across CPUs (the merged stream of a `.dat`): names the
/// `sched` events reveal (`prev_comm`, `next_comm`, `comm` with their pids) are learned as the events
/// pass, so a name is used from the time the trace shows it (as `trace-cmd report` does), whatever order
/// the CPUs were decoded in. pid 0 is a different task on every CPU (`swapper/N`) and is named per CPU.
#[derive(Clone, Debug)]
pub struct TaskNames {
    cmdlines: Cmdlines,
    /// saved_cmdlines as the file has it (the names at the end of the recording).
    saved: Cmdlines,
    idle: HashMap<u32, TaskName, BuildHasherDefault<FastHash>>,
    /// Per CPU (the first 1024): the last pid named and its name.
    last: Vec<Option<(Pid, TaskName)>>,
}

impl TaskNames {
    /// Start from `saved_cmdlines`.
    pub fn new(cmdlines: Cmdlines) -> TaskNames {
        TaskNames { saved: cmdlines.clone(), cmdlines, idle: HashMap::default(), last: Vec::new() }
    }

    /// Learn what `e` reveals, then set its `comm` (lost-event markers are left as they are).
    pub fn apply(&mut self, e: &mut Event) {
        let cpu = e.cpu.0;
        match &e.kind {
            EventKind::Lost { .. } => return,
            EventKind::SchedSwitch { prev_comm, prev_pid, next_comm, next_pid, .. } => {
                let (pc, pp, nc, np) = (*prev_comm, *prev_pid, *next_comm, *next_pid);
                self.learn(cpu, pp, pc);
                self.learn(cpu, np, nc);
            }
            EventKind::SchedWakeup { comm, pid, .. } | EventKind::SchedMigrate { comm, pid, .. } => {
                let (c, p) = (*comm, *pid);
                self.learn(cpu, p, c);
            }
            EventKind::Other { system: Some(sys), name, fields }
                if &**sys == "sched" && &**name == "sched_process_exec" =>
            {
                // The task took its program's name, which no field gives: fall back to saved_cmdlines
                // (the names at the end of the recording), or unknown, as `trace-cmd report` names it.
                let pid = fields.iter().find(|f| &*f.name == "pid").and_then(|f| match f.value {
                    FieldValue::Int(v) => Some(v as Pid),
                    FieldValue::Str(_) => None,
                });
                if let Some(pid) = pid {
                    match self.saved.by_pid.get(&pid) {
                        Some(&c) => {
                            self.cmdlines.by_pid.insert(pid, c);
                        }
                        None => {
                            self.cmdlines.by_pid.remove(&pid);
                        }
                    }
                    self.last.iter_mut().for_each(|l| *l = None);
                }
            }
            EventKind::Other { system: Some(sys), fields, .. } if &**sys == "sched" => {
                let int = |n: &str| {
                    fields.iter().find(|f| &*f.name == n).and_then(|f| match f.value {
                        FieldValue::Int(v) => Some(v as Pid),
                        FieldValue::Str(_) => None,
                    })
                };
                let text = |n: &str| {
                    fields.iter().find(|f| &*f.name == n).and_then(|f| match &f.value {
                        FieldValue::Str(s) if &**s != "?" => Some(TaskName::new(s)),
                        _ => None,
                    })
                };
                let mut learned = Vec::new();
                for (c, p) in [("prev_comm", "prev_pid"), ("next_comm", "next_pid"), ("comm", "pid")] {
                    if let (Some(c), Some(p)) = (text(c), int(p)) {
                        learned.push((p, c));
                    }
                }
                for (p, c) in learned {
                    self.learn(cpu, p, c);
                }
            }
            _ => {}
        }
        let slot = cpu as usize;
        if let Some(&Some((p, c))) = self.last.get(slot) {
            if p == e.pid {
                e.comm = c;
                return;
            }
        }
        let comm = match self.idle.get(&cpu) {
            Some(&c) if e.pid == 0 => c,
            _ => self.cmdlines.comm(e.pid),
        };
        if slot < 1024 {
            if self.last.len() <= slot {
                self.last.resize(slot + 1, None);
            }
            self.last[slot] = Some((e.pid, comm));
        }
        e.comm = comm;
    }

    fn learn(&mut self, cpu: u32, pid: Pid, comm: TaskName) {
        if comm.is_empty() {
            return;
        }
        let changed = if pid == 0 {
            self.idle.get(&cpu) != Some(&comm) && {
                self.idle.insert(cpu, comm);
                true
            }
        } else {
            self.cmdlines.by_pid.get(&pid) != Some(&comm) && {
                self.cmdlines.by_pid.insert(pid, comm);
                true
            }
        };
        if !changed {
            return;
        }
        // A name changed: the per-CPU shortcuts may be stale.
        self.last.iter_mut().for_each(|l| *l = None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn parses_and_falls_back() {
        let c = Cmdlines::parse("1 systemd\n  42 kworker/0:1 x\nbad\n");
        assert_eq!(&*c.comm(1), "systemd");
        assert_eq!(&*c.comm(42), "kworker/0:1 x");
        assert_eq!(&*c.comm(0), "<idle>");
        assert_eq!(&*c.comm(7), "<...>");
        assert_eq!(c.len(), 2);
    }

    fn ev(cpu: u32, pid: Pid, kind: EventKind) -> Event {
        Event {
            ts: latscope_model::Nanos(0),
            cpu: latscope_model::CpuId(cpu),
            pid,
            tgid: None,
            comm: TaskName::EMPTY,
            flags: Default::default(),
            kind,
        }
    }

    fn switch(cpu: u32, prev: (&str, Pid), next: (&str, Pid)) -> Event {
        ev(
            cpu,
            prev.1,
            EventKind::SchedSwitch {
                prev_comm: TaskName::new(prev.0),
                prev_pid: prev.1,
                prev_prio: 120,
                prev_state: Default::default(),
                next_comm: TaskName::new(next.0),
                next_pid: next.1,
                next_prio: 120,
            },
        )
    }

    fn other(cpu: u32, pid: Pid, name: &str, fields: &[(&str, FieldValue)]) -> Event {
        let fields =
            fields.iter().map(|(n, v)| latscope_model::Field { name: Arc::from(*n), value: v.clone() }).collect();
        ev(cpu, pid, EventKind::Other { system: Some(Arc::from("sched")), name: Arc::from(name), fields })
    }

    #[test]
    fn task_names_follow_the_trace_in_time_order() {
        let mut names = TaskNames::new(Cmdlines::parse("7 stress-ng\n"));
        let mut run = |e: Event| {
            let mut e = e;
            names.apply(&mut e);
            e.comm.to_string()
        };
        // Names are learned from an event before it is named; idle is named per CPU.
        assert_eq!(run(ev(0, 7, EventKind::Lost { count: None })), "");
        assert_eq!(run(other(0, 0, "sched_stat_runtime", &[])), "<idle>");
        assert_eq!(run(other(0, 7, "sched_stat_runtime", &[])), "stress-ng");
        assert_eq!(run(switch(0, ("swapper/0", 0), ("timeout", 7))), "swapper/0");
        assert_eq!(run(switch(1, ("swapper/1", 0), ("x", 9))), "swapper/1");
        assert_eq!(run(switch(0, ("timeout", 7), ("swapper/0", 0))), "timeout");
        assert_eq!(run(other(1, 0, "sched_stat_runtime", &[])), "swapper/1");
        assert_eq!(run(other(0, 0, "sched_stat_runtime", &[])), "swapper/0");
        // exec: the old name is wrong now; saved_cmdlines (the name at the end) or unknown, as trace-cmd.
        let exec = |pid| other(1, pid, "sched_process_exec", &[("pid", FieldValue::Int(i64::from(pid)))]);
        assert_eq!(run(exec(7)), "stress-ng");
        assert_eq!(run(exec(9)), "<...>");
        // Names from `Other` sched events' fields.
        let wait = other(
            1,
            9,
            "sched_process_wait",
            &[("comm", FieldValue::Str(Arc::from("w"))), ("pid", FieldValue::Int(5))],
        );
        assert_eq!(run(wait), "<...>");
        assert_eq!(run(other(1, 5, "sched_stat_runtime", &[])), "w");
    }
}
