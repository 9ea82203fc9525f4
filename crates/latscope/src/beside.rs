//! Measuring beside latscope itself: this run's other threads are kept off the measured CPUs, latscope's
//! threads (this run's and any other latscope run's) are found for the analysis to name, and another
//! latscope run measuring or tracing the same CPUs is warned about — also one that started and ended while
//! this one measured, which a watcher thread looks for every second. Wiring only.

use latscope_analyze::latscope_threads::LatscopeThreads;
use latscope_model::{CpuList, Pid};
use latscope_sys::host::latscope_threads;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Other runs already warned about on stderr by this process.
static SAID: Mutex<Vec<Pid>> = Mutex::new(Vec::new());

/// How often the watcher looks for other latscope runs.
const WATCH_EVERY: Duration = Duration::from_secs(1);

/// What is known of latscope's threads around a measurement.
pub struct Beside {
    cpus: CpuList,
    threads: LatscopeThreads,
    /// Other runs' tracefs instances seen, as (instance, pid).
    instances: Vec<(String, u32)>,
    warned: Vec<Pid>,
    watcher: Option<Watcher>,
}

/// What one look at the machine found: latscope threads (pid, tid, name) and live latscope instances.
#[derive(Default)]
struct Seen {
    threads: Vec<(Pid, Pid, String)>,
    instances: Vec<(String, u32)>,
}

impl Seen {
    fn look() -> Seen {
        Seen {
            threads: latscope_threads().into_iter().map(|t| (t.pid as Pid, t.tid as Pid, t.comm)).collect(),
            instances: latscope_sys::tracefs::live_latscope_instances(),
        }
    }

    fn merge(&mut self, other: Seen) {
        for t in other.threads {
            if !self.threads.iter().any(|x| x.1 == t.1) {
                self.threads.push(t);
            }
        }
        for i in other.instances {
            if !self.instances.contains(&i) {
                self.instances.push(i);
            }
        }
    }
}

/// A thread that looks every [`WATCH_EVERY`] and keeps what it saw until [`Beside::look_again`] takes it.
struct Watcher {
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl Watcher {
    fn start() -> Option<Watcher> {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let stop = Arc::new(AtomicBool::new(false));
        let (s, st) = (seen.clone(), stop.clone());
        let handle = std::thread::Builder::new()
            .name("latscope-watch".into())
            .spawn(move || {
                let tick = Duration::from_millis(100);
                let mut waited = Duration::ZERO;
                while !st.load(Ordering::Relaxed) {
                    std::thread::sleep(tick);
                    waited += tick;
                    if waited >= WATCH_EVERY {
                        waited = Duration::ZERO;
                        let found = Seen::look();
                        s.lock().unwrap_or_else(|p| p.into_inner()).merge(found);
                    }
                }
            })
            .ok()?;
        Some(Watcher { seen, stop, handle: Some(handle) })
    }

    fn take(&self) -> Seen {
        std::mem::take(&mut *self.seen.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

impl Drop for Watcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Beside {
    /// Before measuring `cpus`: moves this thread (and the threads it starts: trace readers, decoders, the
    /// watcher) off them, and looks for another latscope run there. What to say goes to `warnings`.
    pub fn start(cpus: &CpuList, warnings: &mut Vec<String>) -> Beside {
        if let Err(e) = latscope_sys::measure::keep_off(&cpus.0) {
            warnings.push(format!("latscope's own threads may run on the measured CPUs ({e})"));
        }
        let seen = Seen::look();
        let mut b = Beside {
            cpus: cpus.clone(),
            threads: LatscopeThreads::new(std::process::id() as Pid, seen.threads),
            instances: seen.instances,
            warned: Vec::new(),
            watcher: Watcher::start(),
        };
        b.warn_concurrent(warnings);
        b
    }

    /// Looks again, once the measuring threads run (their ids) and when the measurement ends; what the
    /// watcher saw meanwhile counts too (a run that started and ended in between). A run found now is warned
    /// about in `warnings`.
    pub fn look_again(&mut self, warnings: &mut Vec<String>) {
        let mut seen = self.watcher.as_ref().map(Watcher::take).unwrap_or_default();
        seen.merge(Seen::look());
        self.threads.add(seen.threads);
        for i in seen.instances {
            if !self.instances.contains(&i) {
                self.instances.push(i);
            }
        }
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
        for (name, pid) in &self.instances {
            let pid = *pid as Pid;
            if pid != std::process::id() as Pid && !found.iter().any(|f| f.0 == pid) {
                found.push((pid, format!("is tracing (tracefs instance {name})")));
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
            // `run` measures twice (timer, then noise), each with its own Beside: say it once on stderr.
            let mut said = SAID.lock().unwrap_or_else(|p| p.into_inner());
            if !said.contains(&pid) {
                said.push(pid);
                eprintln!("latscope: {w}");
            }
            warnings.push(w);
        }
    }
}
