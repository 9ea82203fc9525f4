//! latscope's own threads, and those of another latscope run, where an analysis blames a task: each is
//! named for what it is (this run's main thread or trace reader, another run's timer thread) so that no
//! explanation passes the measurement itself, or a concurrent one, off as a load of the machine.

use latscope_model::{
    latscope_worker, CpuId, CpuList, Event, EventKind, Explanation, LatscopeThread, LatscopeWorker, NoiseCauses, Pid,
    TaskName, TracedWakeup,
};

/// The threads of latscope processes as found while measuring: (process id, thread id, thread name).
#[derive(Clone, Debug, Default)]
pub struct LatscopeThreads {
    me: Pid,
    threads: Vec<(Pid, Pid, String)>,
}

impl LatscopeThreads {
    /// The threads `threads` of latscope processes, `me` being this run's process id.
    pub fn new(me: Pid, threads: impl IntoIterator<Item = (Pid, Pid, String)>) -> LatscopeThreads {
        let mut t = LatscopeThreads { me, threads: Vec::new() };
        t.add(threads);
        t
    }

    /// Adds threads found by a later look (a run started meanwhile, a thread started since). Another
    /// latscope process counts only while it measures or traces (a timer, noise or trace reader thread): one
    /// that does neither (`inject`, `analyze`) is a load like any other.
    pub fn add(&mut self, threads: impl IntoIterator<Item = (Pid, Pid, String)>) {
        let threads: Vec<(Pid, Pid, String)> = threads.into_iter().collect();
        let measures = |pid: Pid| {
            // A timer, noise or trace reader thread: every worker latscope names.
            threads.iter().any(|t| t.0 == pid && latscope_worker(&t.2).is_some())
        };
        for t in &threads {
            if (t.0 == self.me || measures(t.0)) && !self.threads.iter().any(|x| x.1 == t.1) {
                self.threads.push(t.clone());
            }
        }
    }

    /// latscope's threads as a trace names them (`latscope`, `latscope-rd1`, `latscope-t1`…), for a trace
    /// analysed after the fact: a trace latscope recorded holds its own main thread and readers, and they
    /// are named as the recording's own rather than passed off as a load of the machine. A thread whose last
    /// name is another (`latscope-inject`: it starts as `latscope`) is a load, not one of them.
    pub fn named_in(events: &[Event]) -> LatscopeThreads {
        let mut n = ThreadsNamed::default();
        for e in events {
            n.step(e);
        }
        n.finish()
    }

    /// [`Self::mark`] over an analysis: its verdicts, wakeups and late timers.
    pub fn mark_analysis(&self, a: &mut crate::analysis::Analysis) {
        if self.threads.is_empty() {
            return;
        }
        a.verdicts.iter_mut().for_each(|v| self.mark(&mut v.explanation));
        for w in &mut a.wakeups {
            w.components.iter_mut().chain(w.headline.as_mut()).for_each(|e| self.mark(e));
        }
        a.hrtimers.late.iter_mut().flat_map(|l| &mut l.before).for_each(|e| self.mark(e));
    }

    /// Which latscope thread task `tid` is, when it is one.
    pub fn of(&self, tid: Pid) -> Option<LatscopeThread> {
        let (pid, _, comm) = self.threads.iter().find(|t| t.1 == tid)?;
        Some(LatscopeThread { other_run: (*pid != self.me).then_some(*pid), role: role(comm) })
    }

    /// Names the latscope threads among `e`'s culprit and what happened within it.
    pub fn mark(&self, e: &mut Explanation) {
        if let Some(t) = e.culprit.task.as_mut() {
            t.latscope = self.of(t.pid).map(Box::new);
        }
        for w in &mut e.within {
            self.mark(w);
        }
    }

    /// [`Self::mark`] over traced wakeups' shares and headlines.
    pub fn mark_wakeups(&self, wakeups: &mut [TracedWakeup]) {
        for w in wakeups {
            w.shares.iter_mut().chain(w.headline.as_mut()).for_each(|e| self.mark(e));
        }
    }

    /// [`Self::mark`] over the noise causes of every CPU.
    pub fn mark_noise(&self, causes: &mut NoiseCauses) {
        for c in &mut causes.cpus {
            c.causes.iter_mut().for_each(|e| self.mark(e));
        }
    }

    /// Other latscope runs that measure one of `cpus` (a timer or noise thread there), by process id, with
    /// the CPUs they share.
    pub fn others_on(&self, cpus: &CpuList) -> Vec<(Pid, Vec<CpuId>)> {
        let mut out: Vec<(Pid, Vec<CpuId>)> = Vec::new();
        for (pid, _, comm) in self.threads.iter().filter(|t| t.0 != self.me) {
            let Some(cpu) = measured_cpu(comm).filter(|c| cpus.contains(*c)) else { continue };
            match out.iter_mut().find(|o| o.0 == *pid) {
                Some(o) if !o.1.contains(&cpu) => o.1.push(cpu),
                Some(_) => {}
                None => out.push((*pid, vec![cpu])),
            }
        }
        out.sort();
        out
    }
}

/// Whether a task name is one latscope gives its threads.
fn is_latscope_name(comm: &str) -> bool {
    comm == "latscope" || latscope_worker(comm).is_some()
}

/// The CPU a measuring thread measures, from its name (`latscope-t1`, `latscope-noise1`).
fn measured_cpu(comm: &str) -> Option<CpuId> {
    match latscope_worker(comm)? {
        (LatscopeWorker::Timer | LatscopeWorker::Noise, cpu) => Some(cpu),
        (LatscopeWorker::Reader, _) => None,
    }
}

/// What a latscope thread does, from its name.
pub fn role(comm: &str) -> String {
    match latscope_worker(comm) {
        _ if comm == "latscope" => "main thread".into(),
        Some((LatscopeWorker::Reader, n)) => format!("trace reader of CPU {n}"),
        Some((LatscopeWorker::Noise, n)) => format!("noise loop on CPU {n}"),
        Some((LatscopeWorker::Timer, n)) => format!("timer thread on CPU {n}"),
        None => format!("{comm} thread"),
    }
}

/// [`LatscopeThreads::named_in`] one event at a time, for a trace too large to hold.
#[derive(Default)]
pub struct ThreadsNamed {
    threads: Vec<(Pid, Pid, String)>,
    /// Per task seen in a switch: whether its first and its last name there were latscope's.
    names: rustc_hash::FxHashMap<Pid, (bool, bool)>,
}

impl ThreadsNamed {
    /// The trace's next event.
    pub fn step(&mut self, e: &Event) {
        self.note(&e.comm, e.pid);
        if let EventKind::SchedSwitch { prev_comm, prev_pid, next_comm, next_pid, .. } = &e.kind {
            for (name, pid) in [(prev_comm, *prev_pid), (next_comm, *next_pid)] {
                self.note(name, pid);
                let ours = name.has_prefix("latscope") && is_latscope_name(name.as_str());
                self.names.entry(pid).and_modify(|n| n.1 = ours).or_insert((ours, ours));
            }
        }
    }

    /// A thread starts with its parent's name (`latscope`) and names itself after: the last name holds.
    fn note(&mut self, name: &TaskName, pid: Pid) {
        // Every name of latscope's starts so: the others are passed over without reading them as text.
        if pid <= 0 || !name.has_prefix("latscope") {
            return;
        }
        let comm = name.as_str();
        if !is_latscope_name(comm) {
            // A thread that started as `latscope` and named itself otherwise is no thread of the recording:
            // `latscope inject`'s spinner (`latscope-inject`) is a load injected on purpose, a load of the
            // machine like any other.
            self.threads.retain(|t| t.1 != pid);
            return;
        }
        match self.threads.iter_mut().find(|t| t.1 == pid) {
            Some(t) if t.2 != comm => t.2 = comm.to_string(),
            Some(_) => {}
            None => self.threads.push((0, pid, comm.to_string())),
        }
    }

    /// The threads the trace names. The switches carry each thread's name at the time (an event's own `comm`
    /// is the last name the kernel kept for its pid): a thread that ran under another name before it was
    /// `latscope` exec'd latscope during the recording (`chrt -f 96 latscope inject …`: another latscope
    /// command, not the recording), and one whose last name is another left latscope (the recording's child
    /// command, `latscope inject`'s spinner): neither is the recording's own.
    pub fn finish(mut self) -> LatscopeThreads {
        let names = &self.names;
        self.threads.retain(|t| names.get(&t.1).map_or(true, |n| n.0 && n.1));
        LatscopeThreads { me: 0, threads: self.threads }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_model::{CauseKind, Culprit, Nanos, TaskRef};

    #[test]
    fn own_and_other_runs_threads_are_named_and_other_runs_on_the_cpus_found() {
        let threads = [
            (100, 100, "latscope".to_string()),
            (100, 101, "latscope-rd1".to_string()),
            (200, 200, "latscope".to_string()),
            (200, 202, "latscope-t1".to_string()),
            (300, 300, "latscope".to_string()),
            (300, 301, "latscope-inject".to_string()),
        ];
        let l = LatscopeThreads::new(100, threads);
        let mut e = Explanation::new(
            CauseKind::BlockingTask,
            Culprit::task(TaskRef::new("latscope", 100, None)),
            Nanos(5),
            None,
        );
        e.within.push(Explanation::new(
            CauseKind::IrqsOff,
            Culprit::task(TaskRef::new("latscope-t1", 202, Some(2))),
            Nanos(1),
            None,
        ));
        l.mark(&mut e);
        let own = e.culprit.task.as_ref().and_then(|t| t.latscope.as_deref().cloned());
        assert_eq!(own, Some(LatscopeThread { other_run: None, role: "main thread".into() }));
        let other = e.within[0].culprit.task.as_ref().and_then(|t| t.latscope.as_deref().cloned());
        assert_eq!(other, Some(LatscopeThread { other_run: Some(200), role: "timer thread on CPU 1".into() }));
        assert_eq!(l.of(101).map(|t| t.role), Some("trace reader of CPU 1".to_string()));
        assert_eq!(l.of(7), None, "not latscope");
        assert_eq!(l.of(301), None, "an injector neither measures nor traces: a load like any other");
        let cpus = |s: &str| CpuList::parse(s).expect("list");
        // In a recorded trace the injector's spinner shows first under its parent's name, then under its own:
        // its last name holds, and it is a load (the guest's `latscope analyze` called it "latscope's own main
        // thread … not a load of this machine").
        let switch = |prev: &str, prev_pid, next: &str, next_pid| EventKind::SchedSwitch {
            prev_comm: prev.into(),
            prev_pid,
            prev_prio: 120,
            prev_state: "S".into(),
            next_comm: next.into(),
            next_pid,
            next_prio: 3,
        };
        // The injector's main thread was `chrt` before it exec'd latscope, the recording's child command
        // `latscope` before it exec'd `sh`; an event's own comm is the pid's last name.
        let events = [
            crate::testing::ev(500, 0, "latscope", 30, switch("chrt", 30, "latscope", 50)),
            crate::testing::ev(600, 0, "sh", 50, switch("latscope", 50, "sh", 50)),
            crate::testing::ev(700, 0, "sh", 50, switch("sh", 50, "latscope", 30)),
            crate::testing::ev(1_000, 1, "latscope", 40, switch("latscope", 40, "latscope", 41)),
            crate::testing::ev(2_000, 1, "latscope-inject", 41, switch("latscope-inject", 41, "latscope-t1", 42)),
        ];
        let named = LatscopeThreads::named_in(&events);
        assert_eq!(named.of(41), None, "the injector is a load");
        assert_eq!(named.of(30), None, "a latscope command exec'd during the recording is not the recording");
        assert_eq!(named.of(50), None, "the recording's child command is a load");
        assert_eq!(named.of(40).map(|t| t.role), Some("main thread".to_string()));
        assert_eq!(named.of(42).map(|t| t.role), Some("timer thread on CPU 1".to_string()));
        assert_eq!(l.others_on(&cpus("1")), [(200, vec![CpuId(1)])]);
        assert!(l.others_on(&cpus("0")).is_empty());
    }
}
