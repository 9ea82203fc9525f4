//! Transparent huge pages and this process's memory-lock and RT-priority limits.

use super::read_fact::{bracketed, read_parsed};
use latscope_model::facts::Limit;
use latscope_model::Fact;

const THP: &str = "/sys/kernel/mm/transparent_hugepage";

/// THP `enabled` and `defrag` modes in effect.
pub fn read_thp() -> (Fact<String>, Fact<String>) {
    (read_parsed(format!("{THP}/enabled"), bracketed), read_parsed(format!("{THP}/defrag"), bracketed))
}

fn rlimit(resource: libc::__rlimit_resource_t, name: &str) -> Fact<Limit> {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes into the struct we pass.
    let rc = unsafe { libc::getrlimit(resource, &mut r) };
    if rc != 0 {
        return Fact::unknown(format!("getrlimit({name})"), std::io::Error::last_os_error().to_string());
    }
    let conv = |v: libc::rlim_t| if v == libc::RLIM_INFINITY { Limit::UNLIMITED } else { v };
    Fact::known(Limit { soft: conv(r.rlim_cur), hard: conv(r.rlim_max) }, format!("getrlimit({name})"))
}

/// `RLIMIT_MEMLOCK` and `RLIMIT_RTPRIO` of this process.
pub fn read_limits() -> (Fact<Limit>, Fact<Limit>) {
    (rlimit(libc::RLIMIT_MEMLOCK, "RLIMIT_MEMLOCK"), rlimit(libc::RLIMIT_RTPRIO, "RLIMIT_RTPRIO"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_limits() {
        let (m, r) = read_limits();
        assert!(m.get().is_some_and(|l| l.soft <= l.hard));
        assert!(r.get().is_some());
    }
}
