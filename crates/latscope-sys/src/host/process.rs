//! One pass over `/proc/<pid>`: running irqbalance daemons, processes holding `/dev/cpu_dma_latency` open
//! (each holds a PM QoS CPU-latency request) and the kernel threads whose priority matters; the threads of
//! every latscope process, this one's too.

use latscope_model::facts::{KernelThread, ProcessRef};
use latscope_model::Fact;
use std::path::Path;

/// The PM QoS CPU latency device.
pub const CPU_DMA_LATENCY: &str = "/dev/cpu_dma_latency";

/// What the scan found.
#[derive(Clone, Debug, Default)]
pub struct ProcessScan {
    /// Running `irqbalance` processes.
    pub irqbalance: Fact<Vec<ProcessRef>>,
    /// Holders of `/dev/cpu_dma_latency` (unknown when some processes' fds were not readable).
    pub dma_latency_holders: Fact<Vec<ProcessRef>>,
    /// The kernel threads of [`super::kernel_threads::kernel_thread`], by pid.
    pub kernel_threads: Fact<Vec<KernelThread>>,
}

fn comm(pid_dir: &Path) -> Option<String> {
    std::fs::read_to_string(pid_dir.join("comm")).ok().map(|s| s.trim().to_string())
}

/// Scans `/proc` once. The current process is skipped.
pub fn scan() -> ProcessScan {
    let me = std::process::id();
    let entries = match std::fs::read_dir("/proc") {
        Ok(e) => e,
        Err(e) => {
            let why = super::read_fact::why_unreadable(Path::new("/proc"), &e);
            return ProcessScan {
                irqbalance: Fact::unknown("/proc/*/comm", why.clone()),
                dma_latency_holders: Fact::unknown("/proc/*/fd", why.clone()),
                kernel_threads: Fact::unknown(super::kernel_threads::FROM, why),
            };
        }
    };
    let mut irqbalance = Vec::new();
    let mut holders = Vec::new();
    let mut kernel_threads = Vec::new();
    let mut denied = 0usize;
    for e in entries.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        if pid == me {
            continue;
        }
        let dir = e.path();
        let Some(name) = comm(&dir) else { continue };
        kernel_threads.extend(super::kernel_threads::kernel_thread(pid, &dir));
        if name == "irqbalance" {
            irqbalance.push(ProcessRef { pid, comm: name.clone() });
        }
        match std::fs::read_dir(dir.join("fd")) {
            Ok(fds) => {
                let holds = fds
                    .flatten()
                    .any(|fd| std::fs::read_link(fd.path()).is_ok_and(|t| t == Path::new(CPU_DMA_LATENCY)));
                if holds {
                    holders.push(ProcessRef { pid, comm: name });
                }
            }
            Err(err) if err.kind() == std::io::ErrorKind::PermissionDenied => denied += 1,
            Err(_) => {} // exited meanwhile, or a kernel thread
        }
    }
    let dma_latency_holders = if denied > 0 {
        Fact::unknown(
            "/proc/*/fd",
            format!("the open files of {denied} processes are not readable; run latscope as root to see them"),
        )
    } else {
        Fact::known(holders, "/proc/*/fd")
    };
    kernel_threads.sort_by_key(|t| t.pid);
    ProcessScan {
        irqbalance: Fact::known(irqbalance, "/proc/*/comm"),
        dma_latency_holders,
        kernel_threads: Fact::known(kernel_threads, super::kernel_threads::FROM),
    }
}

/// A thread of a latscope process.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LatscopeTask {
    /// The process (thread-group) id.
    pub pid: u32,
    /// The thread id.
    pub tid: u32,
    /// The thread's name (`latscope`, `latscope-t1`, `latscope-rd1`, …).
    pub comm: String,
}

/// The threads of every latscope process (this one included), from `/proc/*/task/*/comm`: a process whose
/// name starts with `latscope` (a copy of the binary may be renamed `latscope-…`), or one with a thread
/// latscope names (`latscope-t1`, `latscope-noise1`, `latscope-rd1`), whatever the binary is called.
pub fn latscope_threads() -> Vec<LatscopeTask> {
    let me = std::process::id();
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let named = comm(&e.path()).is_some_and(|c| c.starts_with("latscope"));
        let mut threads = Vec::new();
        for t in std::fs::read_dir(e.path().join("task")).into_iter().flatten().flatten() {
            let Some(tid) = t.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
            if let Some(comm) = comm(&t.path()) {
                threads.push(LatscopeTask { pid, tid, comm });
            }
        }
        if pid == me || named || threads.iter().any(|t| latscope_model::latscope_worker(&t.comm).is_some()) {
            out.extend(threads);
        }
    }
    out
}

/// The PM QoS CPU latency limit in effect, µs, read from `/dev/cpu_dma_latency` (needs root). Opening it
/// adds a request with the default value ("no limit"), which changes nothing; it is removed on close.
pub fn read_dma_latency() -> Fact<i64> {
    use std::io::Read;
    let path = Path::new(CPU_DMA_LATENCY);
    let mut buf = [0u8; 4];
    match std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut buf)) {
        Ok(()) => Fact::known(i64::from(i32::from_ne_bytes(buf)), CPU_DMA_LATENCY),
        Err(e) => Fact::unknown(CPU_DMA_LATENCY, super::read_fact::why_unreadable(path, &e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scan_finds_a_holder_we_create() {
        if std::fs::File::open(CPU_DMA_LATENCY).is_err() {
            eprintln!("skipped: {CPU_DMA_LATENCY} not openable (needs root)");
            let s = scan();
            assert!(s.irqbalance.value.is_some());
            return;
        }
        // A child holding the device open (with the default "no limit" request) for a moment.
        let mut child = std::process::Command::new("sh")
            .args(["-c", "exec 3</dev/cpu_dma_latency; sleep 5"])
            .spawn()
            .expect("spawn sh");
        let mut found = false;
        for _ in 0..50 {
            let s = scan();
            if s.dma_latency_holders.get().is_some_and(|h| h.iter().any(|p| p.pid == child.id())) {
                found = true;
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(found, "the child holding {CPU_DMA_LATENCY} was not found");
        let v = read_dma_latency();
        assert!(v.get().is_some_and(|v| *v >= 0), "{v:?}");
    }
}
