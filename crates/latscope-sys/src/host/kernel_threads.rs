//! The kernel threads whose priority matters next to a real-time thread: those doing a CPU's deferred work
//! (`ksoftirqd`, `ktimers`, `rcuc`, RCU offload and grace-period threads, IRQ threads) and any kernel thread
//! under a real-time policy, read from `/proc/PID/stat` and `/proc/PID/status`.

use latscope_model::facts::KernelThread;
use latscope_model::CpuList;
use std::path::Path;

/// `PF_KTHREAD` in the `flags` field of `/proc/PID/stat`.
const PF_KTHREAD: u64 = 0x0020_0000;

/// Kernel threads doing deferred work, kept whatever their policy.
const DEFERRED_WORK: [&str; 7] = ["irq/", "ktimers/", "ksoftirqd/", "rcuc/", "rcub/", "rcuo", "rcu_"];

/// Where the kernel threads are read from (by `process::scan`'s one pass over `/proc`).
pub(super) const FROM: &str = "/proc/*/stat";

/// The process at `dir` (`/proc/PID`) when it is a kernel thread worth keeping: one doing deferred work, or
/// one under a real-time policy.
pub(super) fn kernel_thread(pid: u32, dir: &Path) -> Option<KernelThread> {
    let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
    let t = parse_stat(pid, &stat)?;
    if !(t.is_rt() || DEFERRED_WORK.iter().any(|p| t.comm.starts_with(p))) {
        return None;
    }
    let status = std::fs::read_to_string(dir.join("status")).unwrap_or_default();
    Some(KernelThread { cpus: allowed_cpus(&status).unwrap_or_default(), ..t })
}

/// A kernel thread's name, policy and priority from its `/proc/PID/stat` line; `None` for a user process or
/// a line that does not parse. The name is between the first `(` and the last `)`: it may hold spaces and
/// parentheses.
fn parse_stat(pid: u32, line: &str) -> Option<KernelThread> {
    let open = line.find('(')?;
    let close = line.rfind(')')?;
    let comm = line.get(open + 1..close)?.to_string();
    // Fields after the name, numbered from 3 (state) as in proc(5).
    let rest: Vec<&str> = line.get(close + 1..)?.split_whitespace().collect();
    let field = |n: usize| rest.get(n - 3).and_then(|v| v.parse::<u64>().ok());
    if field(9)? & PF_KTHREAD == 0 {
        return None;
    }
    let policy = match field(41)? {
        0 => "OTHER",
        1 => "FIFO",
        2 => "RR",
        3 => "BATCH",
        5 => "IDLE",
        6 => "DEADLINE",
        _ => "unknown",
    };
    Some(KernelThread { pid, comm, policy: policy.into(), rt_priority: field(40)? as u32, cpus: CpuList::default() })
}

/// `Cpus_allowed_list` of a `/proc/PID/status`.
fn allowed_cpus(status: &str) -> Option<CpuList> {
    let line = status.lines().find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    CpuList::parse(line.trim()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `/proc/PID/stat` of `migration/0`, `ksoftirqd/1` and a bash shell on the development machine (6.18).
    const MIGRATION: &str = "18 (migration/0) S 2 0 0 0 -1 69238848 0 0 0 0 0 47 0 0 -100 0 1 0 22 0 0 \
        18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 0 99 1 0 0 0 0 0 0 0 0 0 0 0";
    const KSOFTIRQD: &str = "22 (ksoftirqd/1) S 2 0 0 0 -1 69238848 0 0 0 0 82 141 0 0 20 0 1 0 22 0 0 \
        18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0";
    const BASH: &str = "21872 (bash) S 21871 21872 21872 0 -1 4194560 20688 3237937 0 401 19 10 17280 6723 20 0 1 \
        0 3393821 5369856 999 18446744073709551615 94031212695552 94031213484957 140734993052176 0 0 0 65536 4 \
        1132560123 1 0 0 17 0 0 0 0 0 0 94031213718256 94031213766500 94032004120576 140734993054557 \
        140734993054572 140734993054572 140734993055722 0";

    #[test]
    fn a_kernel_threads_policy_and_priority_are_read() {
        let t = parse_stat(18, MIGRATION).expect("a kernel thread");
        assert_eq!((t.comm.as_str(), t.policy.as_str(), t.rt_priority), ("migration/0", "FIFO", 99));
        assert!(t.is_rt());
        let t = parse_stat(22, KSOFTIRQD).expect("a kernel thread");
        assert_eq!((t.comm.as_str(), t.policy.as_str(), t.rt_priority, t.is_rt()), ("ksoftirqd/1", "OTHER", 0, false));
    }

    #[test]
    fn a_user_process_and_a_cut_line_are_not_kernel_threads() {
        assert_eq!(parse_stat(21872, BASH), None);
        // A name with spaces and parentheses is read to the last ')'.
        let odd = KSOFTIRQD.replace("(ksoftirqd/1)", "(irq/9-acpi (x) y)");
        assert_eq!(parse_stat(22, &odd).map(|t| t.comm), Some("irq/9-acpi (x) y".to_string()));
        assert_eq!(parse_stat(18, &MIGRATION[..60]), None);
        assert_eq!(parse_stat(18, "18 migration/0 S"), None);
    }

    #[test]
    fn this_machines_kernel_threads_are_found() {
        let scan = super::super::process::scan();
        let threads = scan.kernel_threads.get().expect("/proc readable");
        let kthreadd = std::fs::read_to_string("/proc/2/comm").is_ok_and(|c| c.trim() == "kthreadd");
        if kthreadd {
            // Every Linux kernel since 2.6 has a ksoftirqd per CPU.
            assert!(threads.iter().any(|t| t.comm == "ksoftirqd/0" && !t.cpus.is_empty()), "{threads:?}");
        } else {
            // In a PID namespace (a container) no kernel thread is visible.
            assert!(threads.is_empty(), "{threads:?}");
        }
    }
}
