//! Two independent analysis passes at once: one on a scoped thread, one on the caller's, so a whole-trace
//! analysis uses two cores; both run on the caller's thread when no thread can be started.

use std::sync::Mutex;

/// `(a(), b())`, with `a` run on another thread while `b` runs on this one. The results are those of
/// running them one after the other: the passes only read what they share. A panic in `a` is resumed here.
pub fn both<A: Send, B>(a: impl FnOnce() -> A + Send, b: impl FnOnce() -> B) -> (A, B) {
    // Whichever thread runs `a` takes it from here: the other one if it starts, else this one.
    let job = Mutex::new(Some(a));
    let run = || job.lock().ok().and_then(|mut j| j.take()).map(|f| f());
    let (ra, rb) = std::thread::scope(|s| {
        let other = std::thread::Builder::new().name("analyze".into()).spawn_scoped(s, run);
        let rb = b();
        let ra = match other {
            Ok(h) => h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)),
            Err(_) => run(),
        };
        (ra, rb)
    });
    match ra {
        Some(ra) => (ra, rb),
        // The job is taken once, by the thread that then returns its result.
        None => unreachable!("the other pass ran nowhere"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_results_come_back_in_order() {
        let data: Vec<u64> = (1..=1000).collect();
        let (a, b) = both(|| data.iter().sum::<u64>(), || data.iter().max().copied());
        assert_eq!((a, b), (500_500, Some(1000)));
    }

    #[test]
    #[should_panic(expected = "pass failed")]
    fn a_panic_in_the_other_pass_reaches_the_caller() {
        both(|| panic!("pass failed"), || 1);
    }
}
