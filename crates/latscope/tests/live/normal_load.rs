//! A normal (SCHED_OTHER) thread that always wants a CPU while it lives. Since Linux 6.12 the fair server
//! takes an RT spinner's CPU away (period − runtime every period) only while a normal task is runnable
//! there: without one the throttling pattern depends on what else the machine runs. Under a concurrent
//! build it came as pieces scattered over the period (7 ms, then 1-2.5 ms pieces 400 ms later), not in
//! throttling's shape, and the RT-throttling tests failed now and then (noise: 4 of 10 runs).

use latscope_model::CpuId;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The running load; stopped and joined on drop.
#[derive(Debug)]
pub struct NormalLoad {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Starts a thread pinned to `cpu` that spins at SCHED_OTHER until dropped.
pub fn start(cpu: CpuId) -> NormalLoad {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&stop);
    let thread = std::thread::spawn(move || {
        latscope_sys::measure::pin_current_thread(cpu).expect("pin the normal load");
        while !flag.load(Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    });
    NormalLoad { stop, thread: Some(thread) }
}

impl Drop for NormalLoad {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
