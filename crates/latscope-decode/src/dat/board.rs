//! [`Board`]: the hand-off between the threads that decode a `.dat` chunk by chunk and the merge that takes
//! each CPU's chunks in order — which chunk is decoded next, where results wait, who sleeps on which
//! condition variable and who wakes them. Generic over what a job is ([`Jobs`]), so the protocol is
//! model-checked on its own (`RUSTFLAGS="--cfg loom" cargo test -p latscope-decode --lib board::loom_model`) and
//! stress-tested with yields injected at every step.
//!
//! # The protocol and its invariant
//!
//! Each CPU is a *lane* of jobs numbered in file order. Under the one lock, per lane:
//!
//! - `taken <= claimed`: jobs `0..claimed` were handed out, the merge took the results of `0..taken`.
//! - Every job in `taken..claimed` is either in `results` or *in flight*: being decoded by exactly one
//!   thread that holds no lock and will deliver it (or, should it panic, end the lane at that job).
//! - `total` (the lane's number of jobs) is known once no more jobs will be handed out, and then
//!   `total <= claimed`.
//!
//! A thread sleeps only when what it waits for is false, and every change that can make it true is made
//! under the lock and followed by a notification of the condition variable it sleeps on:
//!
//! | who sleeps | on | until | changed by, which notifies |
//! |---|---|---|---|
//! | the merge, for lane L | `ready` | L's next result, L's end, a job it may decode itself, stop | a worker's delivery, a worker ending a lane (claim), [`Board::stop`]; a claimable job appears only when the merge itself takes a result |
//! | a worker | `work` | a claimable job, every lane ended, stop | the merge taking a result, anyone ending a lane, [`Board::stop`] |
//!
//! A notification reaches only threads already asleep, so a thread that changed the state itself looks at
//! its own condition again before it sleeps. (The lost wake-up of issue #19 broke this rule: the merge,
//! looking for a job to decode while its lane's next result was missing, found that lane's data at its
//! end and ended the lane, then slept on `ready` without looking again. The notification it had sent
//! itself was lost; the worker, woken a moment earlier by the merge's previous take but run only after
//! this, found nothing to claim — the other lanes were full — and slept on `work`. Both slept for ever. A
//! CPU hog makes the worker that late.)
//!
//! So the merge never sleeps for ever: when it sleeps, its last look found no job to claim and changed
//! nothing, so lane L is full or ended and its next job was handed out (`taken < total <= claimed`, or
//! `taken < claimed`); the result is not there, so the job is in flight on a worker (the merge decodes
//! its own jobs before it sleeps), whose delivery wakes it.

#[cfg(loom)]
use ::loom::sync::{Condvar, Mutex, MutexGuard};
use std::collections::BTreeMap;
#[cfg(not(loom))]
use std::sync::{Condvar, Mutex, MutexGuard};

/// Most spare buffers kept for reuse.
const MAX_SPARE: usize = 8;

/// What the board hands out to decoding threads.
pub(crate) trait Jobs {
    /// Where a lane is in its data (read and moved on under the lock).
    type Cursor;
    /// One unit of work.
    type Job;
    /// A decoded job.
    type Chunk;
    /// What a thread decodes with (its own decoder and buffers).
    type Worker;
    /// An emptied output buffer, given back by the merge for reuse.
    type Buffer;

    /// The next job of a lane, under the lock: `Ok(None)` when its data ends, `Err(why)` when it cannot be
    /// read further.
    fn next_job(&self, cursor: &mut Self::Cursor) -> Result<Option<Self::Job>, String>;

    /// Decode `job`, no lock held: the chunk, and whether the lane's data cannot be read past it.
    fn run(&self, job: &Self::Job, worker: &mut Self::Worker, buffer: Option<Self::Buffer>) -> (Self::Chunk, bool);
}

/// One lane (a CPU's data).
struct Lane<J: Jobs> {
    cursor: J::Cursor,
    /// Jobs handed out, and results taken by the merge.
    claimed: u64,
    taken: u64,
    /// The number of jobs, once no more will be handed out (the lane has ended).
    total: Option<u64>,
    /// Delivered results not yet taken, by job number.
    results: BTreeMap<u64, J::Chunk>,
    /// Why the lane ended early, for the merge to report.
    error: Option<String>,
}

impl<J: Jobs> Lane<J> {
    fn ended(&self) -> bool {
        self.total.is_some()
    }

    /// End the lane before job `seq` (or earlier, if it already ends there).
    fn end_at(&mut self, seq: u64) {
        self.total = Some(self.total.map_or(seq, |t| t.min(seq)));
    }
}

struct State<J: Jobs> {
    lanes: Vec<Lane<J>>,
    spare: Vec<J::Buffer>,
    stop: bool,
}

/// A job handed out: its lane, its number in the lane, the job.
struct Claimed<T> {
    lane: usize,
    seq: u64,
    job: T,
}

/// What [`Board::claim`] found.
enum Claim<T> {
    /// A job to decode.
    Job(Claimed<T>),
    /// No lane has a job and room for it; `ended`: lanes were found to end on the way (the state changed).
    Nothing { ended: bool },
}

/// What the merge gets for a lane from [`Board::take`].
pub(crate) struct Taken<C> {
    /// The lane's next chunk; `None` once the lane has ended (or the board stopped).
    pub chunk: Option<C>,
    /// Why the lane ended early, once.
    pub error: Option<String>,
}

/// The shared state of one decoding pool: jobs handed out, results waiting for the merge, and the two
/// condition variables (see the module's documentation for the protocol).
pub(crate) struct Board<J: Jobs> {
    jobs: J,
    /// Results decoded ahead of the merge, per lane.
    ahead: u64,
    state: Mutex<State<J>>,
    /// Workers sleep here for a job.
    work: Condvar,
    /// The merge sleeps here for a result.
    ready: Condvar,
}

impl<J: Jobs> Board<J> {
    /// A board over `lanes` (each a cursor, and whether it is empty from the start), decoding at most
    /// `ahead` results ahead of the merge per lane.
    pub(crate) fn new(jobs: J, lanes: impl IntoIterator<Item = (J::Cursor, bool)>, ahead: u64) -> Board<J> {
        let lanes = lanes
            .into_iter()
            .map(|(cursor, empty)| Lane {
                cursor,
                claimed: 0,
                taken: 0,
                total: empty.then_some(0),
                results: BTreeMap::new(),
                error: None,
            })
            .collect();
        Board {
            jobs,
            ahead: ahead.max(1),
            state: Mutex::new(State { lanes, spare: Vec::new(), stop: false }),
            work: Condvar::new(),
            ready: Condvar::new(),
        }
    }

    /// What the jobs are read from.
    pub(crate) fn jobs(&self) -> &J {
        &self.jobs
    }

    fn lock(&self) -> MutexGuard<'_, State<J>> {
        let st = self.state.lock().unwrap_or_else(|p| p.into_inner());
        chaos::pause();
        st
    }

    fn wait<'a>(&self, on: &Condvar, st: MutexGuard<'a, State<J>>) -> MutexGuard<'a, State<J>> {
        let st = on.wait(st).unwrap_or_else(|p| p.into_inner());
        chaos::pause();
        st
    }

    /// A job of the lane with the fewest results waiting (the merge reaches its end first) and room for
    /// one more; ends the lanes whose data ended on the way.
    fn claim(&self, st: &mut State<J>) -> Claim<J::Job> {
        let mut ended = false;
        loop {
            let pick = (0..st.lanes.len())
                .filter(|&i| !st.lanes[i].ended() && st.lanes[i].claimed - st.lanes[i].taken < self.ahead)
                .min_by_key(|&i| (st.lanes[i].claimed - st.lanes[i].taken, i));
            let Some(pick) = pick else { return Claim::Nothing { ended } };
            let lane = &mut st.lanes[pick];
            match self.jobs.next_job(&mut lane.cursor) {
                Ok(Some(job)) => {
                    let seq = lane.claimed;
                    lane.claimed += 1;
                    return Claim::Job(Claimed { lane: pick, seq, job });
                }
                Ok(None) => lane.end_at(lane.claimed),
                Err(why) => {
                    lane.end_at(lane.claimed);
                    lane.error = Some(why);
                }
            }
            ended = true;
            // A lane ended: the merge may sleep until it learns so, a worker until every lane has ended.
            self.ready.notify_all();
            self.work.notify_all();
        }
    }

    /// Decode `claimed` with `worker`, the lock released meanwhile, and deliver the result; the lock is
    /// held again on return.
    fn work_on<'a>(
        &'a self,
        mut st: MutexGuard<'a, State<J>>,
        claimed: Claimed<J::Job>,
        worker: &mut J::Worker,
    ) -> MutexGuard<'a, State<J>> {
        let buffer = st.spare.pop();
        drop(st);
        chaos::pause();
        let in_flight = InFlight { board: self, lane: claimed.lane, seq: claimed.seq };
        let (chunk, last) = self.jobs.run(&claimed.job, worker, buffer);
        std::mem::forget(in_flight);
        chaos::pause();
        let mut st = self.lock();
        let lane = &mut st.lanes[claimed.lane];
        if last {
            lane.end_at(claimed.seq + 1);
        }
        lane.results.insert(claimed.seq, chunk);
        st
    }

    /// A worker thread's loop: decode jobs until every lane has ended or the board is stopped.
    pub(crate) fn serve(&self, worker: &mut J::Worker) {
        let mut st = self.lock();
        loop {
            if st.stop {
                return;
            }
            if let Claim::Job(claimed) = self.claim(&mut st) {
                st = self.work_on(st, claimed, worker);
                self.ready.notify_all();
                chaos::pause();
                continue;
            }
            if st.lanes.iter().all(Lane::ended) {
                return;
            }
            st = self.wait(&self.work, st);
        }
    }

    /// The merge: lane `lane`'s next chunk, decoding others' jobs with `helper` while it is not ready;
    /// `used` is the emptied buffer of the previous chunk, kept for reuse.
    pub(crate) fn take(&self, lane: usize, helper: &mut J::Worker, used: Option<J::Buffer>) -> Taken<J::Chunk> {
        let mut st = self.lock();
        let chunk = loop {
            let l = &mut st.lanes[lane];
            if l.total.is_some_and(|t| l.taken >= t) {
                break None;
            }
            if let Some(chunk) = l.results.remove(&l.taken) {
                l.taken += 1;
                break Some(chunk);
            }
            if st.stop {
                break None;
            }
            match self.claim(&mut st) {
                Claim::Job(claimed) => st = self.work_on(st, claimed, helper),
                // This thread just ended a lane (its data ended), maybe the one it waits for, and the
                // notification went to no one: the merge is the one that would sleep. Look again first.
                Claim::Nothing { ended: true } => {}
                Claim::Nothing { ended: false } => st = self.wait(&self.ready, st),
            }
        };
        let error = st.lanes[lane].error.take();
        if let Some(b) = used.filter(|_| st.spare.len() < MAX_SPARE) {
            st.spare.push(b);
        }
        drop(st);
        if chunk.is_some() {
            chaos::pause();
            // The lane has room for one more job: a worker may sleep until it does.
            self.work.notify_all();
        }
        Taken { chunk, error }
    }

    /// Stop handing out jobs; sleeping threads wake and return.
    pub(crate) fn stop(&self) {
        self.lock().stop = true;
        self.work.notify_all();
        self.ready.notify_all();
    }
}

/// A job being decoded. Forgotten when its result is delivered; dropped only when the decoding thread
/// unwinds from a panic, and then it ends the lane at that job (with the reason) instead of leaving it in
/// flight for ever, so the merge does not wait for a result that will never come.
struct InFlight<'a, J: Jobs> {
    board: &'a Board<J>,
    lane: usize,
    seq: u64,
}

impl<J: Jobs> Drop for InFlight<'_, J> {
    fn drop(&mut self) {
        let mut st = self.board.lock();
        let lane = &mut st.lanes[self.lane];
        lane.end_at(self.seq);
        lane.error.get_or_insert_with(|| format!("decoding chunk {} failed (a decoding thread panicked)", self.seq));
        drop(st);
        self.board.ready.notify_all();
        self.board.work.notify_all();
    }
}

/// Yields and short sleeps injected at every step of the protocol while a stress test asks for them
/// ([`chaos::Enabled`]); nothing outside tests.
pub(crate) mod chaos {
    #[cfg(all(test, not(loom)))]
    mod on {
        use std::cell::Cell;
        use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
        use std::time::Duration;

        static ENABLED: AtomicUsize = AtomicUsize::new(0);
        static SEED: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);

        /// Chaos is on while one of these lives.
        pub(crate) struct Enabled(());

        impl Enabled {
            pub(crate) fn new() -> Enabled {
                ENABLED.fetch_add(1, Ordering::SeqCst);
                Enabled(())
            }
        }

        impl Drop for Enabled {
            fn drop(&mut self) {
                ENABLED.fetch_sub(1, Ordering::SeqCst);
            }
        }

        thread_local! {
            static RNG: Cell<u64> = Cell::new(SEED.fetch_add(0x2545_f491_4f6c_dd1d, Ordering::Relaxed) | 1);
        }

        /// Nothing, a yield, or a sleep of up to 200 µs, at random.
        pub(crate) fn pause() {
            if ENABLED.load(Ordering::Relaxed) == 0 {
                return;
            }
            let r = RNG.with(|c| {
                let mut x = c.get();
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                c.set(x);
                x
            });
            match r % 8 {
                0..=2 => {}
                3..=5 => std::thread::yield_now(),
                _ => std::thread::sleep(Duration::from_micros(r >> 56)),
            }
        }
    }
    #[cfg(all(test, not(loom)))]
    pub(crate) use on::{pause, Enabled};

    /// Nothing outside stress tests.
    #[cfg(not(all(test, not(loom))))]
    #[inline(always)]
    pub(crate) fn pause() {}
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// Lanes of numbered jobs; a job's chunk is (lane, job number). `fail` makes a lane's job end the lane
    /// (`last`), `panic` makes a worker thread (not the merge) panic on a job.
    struct Numbered {
        fail: Option<(usize, u32)>,
        panic: Option<(usize, u32)>,
    }

    /// A worker thread's or the merge's state: which one it is, and a number to spin on.
    struct Spinner {
        worker: bool,
        x: u64,
    }

    impl Jobs for Numbered {
        /// (lane, next job, jobs in all)
        type Cursor = (usize, u32, u32);
        type Job = (usize, u32);
        type Chunk = (usize, u32);
        type Worker = Spinner;
        type Buffer = ();

        fn next_job(&self, c: &mut (usize, u32, u32)) -> Result<Option<(usize, u32)>, String> {
            chaos::pause();
            if c.1 == c.2 {
                return Ok(None);
            }
            c.1 += 1;
            Ok(Some((c.0, c.1 - 1)))
        }

        fn run(&self, job: &(usize, u32), s: &mut Spinner, _: Option<()>) -> ((usize, u32), bool) {
            chaos::pause();
            assert!(!(s.worker && self.panic == Some(*job)), "injected panic at {job:?}");
            // A little work, different per job, so threads overtake each other.
            for i in 0..(u64::from(job.1) * 37 % 500) {
                s.x = std::hint::black_box(s.x.wrapping_add(i).rotate_left(3));
            }
            chaos::pause();
            (*job, self.fail == Some(*job))
        }
    }

    /// Threads spinning on every core until dropped, so the protocol's threads are preempted anywhere.
    struct Hog(Arc<AtomicBool>, Vec<std::thread::JoinHandle<()>>);

    impl Hog {
        fn start() -> Hog {
            let stop = Arc::new(AtomicBool::new(false));
            let n = std::thread::available_parallelism().map_or(2, |n| n.get());
            let threads = (0..n)
                .map(|_| {
                    let stop = stop.clone();
                    std::thread::spawn(move || {
                        let mut x = 0u64;
                        while !stop.load(Ordering::Relaxed) {
                            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
                        }
                    })
                })
                .collect();
            Hog(stop, threads)
        }
    }

    impl Drop for Hog {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
            for t in self.1.drain(..) {
                let _ = t.join();
            }
        }
    }

    /// Run a board with `workers` threads over lanes of `sizes` jobs; the merge takes the lanes' chunks in
    /// an order drawn from `seed`, after the workers have ended if `workers_first`: returns what each lane
    /// gave and the errors.
    fn run_board(
        sizes: &[u32],
        workers: usize,
        ahead: u64,
        jobs: Numbered,
        seed: u64,
        workers_first: bool,
    ) -> (Vec<Vec<u32>>, Vec<String>) {
        let lanes = sizes.iter().enumerate().map(|(i, &n)| ((i, 0, n), n == 0));
        let board = Arc::new(Board::new(jobs, lanes, ahead));
        let mut threads: Vec<_> = (0..workers)
            .map(|_| {
                let b = board.clone();
                std::thread::spawn(move || b.serve(&mut Spinner { worker: true, x: 0 }))
            })
            .collect();
        if workers_first {
            for t in threads.drain(..) {
                let _ = t.join();
            }
        }
        let mut got = vec![Vec::new(); sizes.len()];
        let mut errors = Vec::new();
        let mut open: Vec<usize> = (0..sizes.len()).collect();
        let mut helper = Spinner { worker: false, x: 0 };
        let mut x = seed | 1;
        while !open.is_empty() {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = (x % open.len() as u64) as usize;
            let lane = open[k];
            let t = board.take(lane, &mut helper, Some(()));
            errors.extend(t.error);
            match t.chunk {
                Some((l, n)) => {
                    assert_eq!(l, lane, "a chunk of another lane");
                    got[lane].push(n);
                }
                None => {
                    open.swap_remove(k);
                }
            }
        }
        board.stop();
        for t in threads {
            let _ = t.join();
        }
        (got, errors)
    }

    /// Fails the test (instead of hanging it) should the merge never return: a deadlock found.
    fn watchdog<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        let run = std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        match rx.recv_timeout(Duration::from_secs(120)) {
            Ok(v) => v,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match run.join() {
                Err(panic) => std::panic::resume_unwind(panic),
                Ok(()) => unreachable!("the result was sent"),
            },
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                panic!("{what}: the merge and the workers are all asleep (deadlock)")
            }
        }
    }

    #[test]
    fn every_chunk_arrives_in_order_whatever_the_interleaving() {
        // Thousands of boards, each with yields and sleeps at every step of the protocol and every core
        // busy with a spinning thread: a lost wake-up leaves the merge asleep and the watchdog fails.
        let _chaos = chaos::Enabled::new();
        let _hog = Hog::start();
        watchdog("stress", || {
            let mut x = 0x2545_f491_4f6c_dd1du64;
            for round in 0..300u64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let lanes = 1 + (x % 4) as usize;
                let sizes: Vec<u32> = (0..lanes).map(|i| ((x >> (8 * i + 4)) % 9) as u32).collect();
                let workers = 1 + ((x >> 40) % 3) as usize;
                let ahead = 1 + (x >> 50) % 4;
                let (got, errors) = run_board(&sizes, workers, ahead, Numbered { fail: None, panic: None }, x, false);
                for (lane, n) in sizes.iter().enumerate() {
                    assert_eq!(got[lane], (0..*n).collect::<Vec<_>>(), "round {round}: lane {lane} of {sizes:?}");
                }
                assert!(errors.is_empty(), "{errors:?}");
            }
        });
    }

    #[test]
    fn a_lane_that_cannot_be_read_further_ends_there() {
        let _chaos = chaos::Enabled::new();
        watchdog("fail", || {
            for seed in 1..200u64 {
                let jobs = Numbered { fail: Some((1, 2)), panic: None };
                let (got, _) = run_board(&[5, 6, 3], 1 + (seed % 2) as usize, 1 + seed % 4, jobs, seed, false);
                assert_eq!(got, vec![vec![0, 1, 2, 3, 4], vec![0, 1, 2], vec![0, 1, 2]], "seed {seed}");
            }
        });
    }

    #[test]
    fn a_panicking_decoder_ends_its_lane_instead_of_hanging_the_merge() {
        // Before: the job a panicking worker held stayed in flight for ever and the merge slept on it. The
        // worker runs alone first: it decodes lane 0's jobs 0-2 and lane 1's 0-2 (fewest waiting first, 4
        // ahead), then panics on lane 0's job 3; the merge then takes what is there and decodes the rest.
        let _chaos = chaos::Enabled::new();
        watchdog("panic", || {
            for seed in 1..20u64 {
                let jobs = Numbered { fail: None, panic: Some((0, 3)) };
                let (got, errors) = run_board(&[6, 4], 1, 4, jobs, seed, true);
                assert_eq!(got, vec![vec![0, 1, 2], vec![0, 1, 2, 3]], "seed {seed}");
                assert!(errors.iter().any(|e| e.contains("chunk 3") && e.contains("panicked")), "{errors:?}");
            }
        });
    }
}

#[cfg(all(test, loom))]
mod loom_model {
    //! Every interleaving of one merge and one or two workers, for small lanes: the merge gets every chunk
    //! of every lane in order, and no thread sleeps for ever (loom reports a deadlock otherwise). With the
    //! lost wake-up of #19 put back (`Claim::Nothing { ended: true }` sleeping on `ready` in `take`), all
    //! four models fail with "deadlock; threads = [(Id(0), Blocked…" (checked 2026-11-26, `make test-loom`).
    use super::*;
    use ::loom::sync::Arc;

    /// Lanes of `n` numbered jobs; `fail` ends a lane after one of its jobs.
    struct Numbered {
        fail: Option<(usize, u32)>,
    }

    impl Jobs for Numbered {
        type Cursor = (usize, u32, u32);
        type Job = (usize, u32);
        type Chunk = (usize, u32);
        type Worker = ();
        type Buffer = ();

        fn next_job(&self, c: &mut (usize, u32, u32)) -> Result<Option<(usize, u32)>, String> {
            if c.1 == c.2 {
                return Ok(None);
            }
            c.1 += 1;
            Ok(Some((c.0, c.1 - 1)))
        }

        fn run(&self, job: &(usize, u32), _: &mut (), _: Option<()>) -> ((usize, u32), bool) {
            (*job, self.fail == Some(*job))
        }
    }

    fn check(sizes: &'static [u32], workers: usize, ahead: u64, fail: Option<(usize, u32)>, want: &'static [&[u32]]) {
        let mut model = ::loom::model::Builder::new();
        model.preemption_bound = Some(3);
        model.check(move || {
            let lanes = sizes.iter().enumerate().map(|(i, &n)| ((i, 0, n), n == 0));
            let board = Arc::new(Board::new(Numbered { fail }, lanes, ahead));
            let threads: Vec<_> = (0..workers)
                .map(|_| {
                    let b = board.clone();
                    ::loom::thread::spawn(move || b.serve(&mut ()))
                })
                .collect();
            // The merge takes the lanes round-robin, as a merge of interleaved CPUs does.
            let mut got = vec![Vec::new(); sizes.len()];
            let mut open = vec![true; sizes.len()];
            while open.iter().any(|&o| o) {
                for lane in 0..sizes.len() {
                    if open[lane] {
                        match board.take(lane, &mut (), Some(())).chunk {
                            Some((_, n)) => got[lane].push(n),
                            None => open[lane] = false,
                        }
                    }
                }
            }
            board.stop();
            for t in threads {
                t.join().expect("worker");
            }
            let want: Vec<Vec<u32>> = want.iter().map(|w| w.to_vec()).collect();
            assert_eq!(got, want);
        });
    }

    #[test]
    fn one_worker_two_lanes() {
        check(&[3, 2], 1, 1, None, &[&[0, 1, 2], &[0, 1]]);
    }

    #[test]
    fn one_worker_room_for_two() {
        check(&[3, 3], 1, 2, None, &[&[0, 1, 2], &[0, 1, 2]]);
    }

    #[test]
    fn an_empty_lane_and_one_ending_early() {
        check(&[3, 0, 2], 1, 1, Some((0, 1)), &[&[0, 1], &[], &[0, 1]]);
    }

    #[test]
    fn two_workers() {
        check(&[2, 2], 2, 1, None, &[&[0, 1], &[0, 1]]);
    }
}
