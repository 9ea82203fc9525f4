//! Measuring beside latscope itself: this run's other threads are kept off the measured CPUs, latscope's
//! threads (this run's and any other latscope run's) are found for the analysis to name, and another
//! latscope run measuring or tracing the same CPUs is warned about. Wiring only.

use latscope_analyze::latscope_threads::LatscopeThreads;
use latscope_model::{CpuList, Pid};
use latscope_sys::host::latscope_threads;

/// What is known of latscope's threads around a measurement.
pub struct Beside {
    cpus: CpuList,
    threads: LatscopeThreads,
    warned: Vec<Pid>,
}

fn look() -> Vec<(Pid, Pid, String)> {
    latscope_threads().into_iter().map(|t| (t.pid as Pid, t.tid as Pid, t.comm)).collect()
}

impl Beside {
    /// Before measuring `cpus`: moves this thread (and the threads it starts: trace readers, decoders) off
    /// them, and looks for another latscope run there. What to say goes to `warnings`.
    pub fn start(cpus: &CpuList, warnings: &mut Vec<String>) -> Beside {
        if let Err(e) = latscope_sys::measure::keep_off(&cpus.0) {
            warnings.push(format!("latscope's own threads may run on the measured CPUs ({e})"));
        }
        let mut b = Beside {
            cpus: cpus.clone(),
            threads: LatscopeThreads::new(std::process::id() as Pid, look()),
            warned: Vec::new(),
        };
        b.warn_concurrent(warnings);
        b
    }

    /// Looks again, once the measuring threads run (their ids) and when the measurement ends (a run that
    /// started meanwhile); a run found now is warned about in `warnings`.
    pub fn look_again(&mut self, warnings: &mut Vec<String>) {
        self.threads.add(look());
        self.warn_concurrent(warnings);
    }

    /// latscope's threads as found.
    pub fn threads(&self) -> &LatscopeThreads {
        &self.threads
    }

    fn warn_concurrent(&mut self, warnings: &mut Vec<String>) {
        let mut found: Vec<(Pid, String)> = self
            .threads
            .others_on(&self.cpus)
            .into_iter()
            .map(|(pid, cpus)| {
                let list = cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",");
                (pid, format!("measures CPU {list} too"))
            })
            .collect();
        for (name, pid) in latscope_sys::tracefs::live_latscope_instances() {
            if pid as Pid != std::process::id() as Pid && !found.iter().any(|f| f.0 == pid as Pid) {
                found.push((pid as Pid, format!("is tracing (tracefs instance {name})")));
            }
        }
        for (pid, what) in found {
            if self.warned.contains(&pid) {
                continue;
            }
            self.warned.push(pid);
            let w = format!(
                "another latscope run (pid {pid}) {what} while this one measures: each run's threads and tracing \
                 delay the other's, so neither measures this machine alone; run them one after the other"
            );
            eprintln!("latscope: {w}");
            warnings.push(w);
        }
    }
}
