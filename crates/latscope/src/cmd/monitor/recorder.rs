//! The flight recorder of `latscope monitor --trace`: the rolling trace of the measured CPUs (the
//! `timer --trace` capture, driven by the same trigger), and at a wakeup later than `--threshold` it
//! freezes the trace, explains the breach from it, writes `DIR/<UTC time>-cpu<N>/` (the report with
//! `result.json`, `trace.perfetto.json`, `trace.dat` for `trace-cmd report`), removes the oldest
//! directories beyond `--keep`, and re-arms with a new capture. At most `--max-captures-per-hour`
//! captures; breaches it cannot capture are counted. The measurement never waits for it: it runs in its
//! own thread and only reads the measuring threads' live counters.

use super::log;
use super::noise_causes::NoiseCauses;
use crate::capture;
use crate::cmd::record::write_dat;
use crate::cmd::report::{write_perfetto, write_timer_report};
use crate::error::CliError;
use latscope_analyze::monitor_stats::MonitorStats;
use latscope_analyze::remedy::RemedyContext;
use latscope_analyze::sample_explain::{explain_samples, worst_samples};
use latscope_analyze::timer_summary::{summarize_timer, CpuSamples};
use latscope_model::{
    CauseKind, CpuList, LatencyHistogram, MonitorSnapshot, Nanos, SystemFacts, TimerBackend, TimerOptions, TimerResult,
    TimerTrace, WakeupSample,
};
use latscope_sys::host::{rfc3339, run_metadata};
use latscope_sys::measure::{clock, Policy, TimerRun};
use latscope_sys::tracefs::{CpuProgress, Trigger};
use std::collections::{BTreeMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// The rolling window the trace keeps (plus what is held around marked samples).
const TRACE_SPAN: Nanos = Nanos::from_secs(2);
/// How often the live counters are polled.
const POLL: Duration = Duration::from_millis(10);
/// How long the trace goes on after a breach is seen, before it is frozen: the late wakeup and what
/// follows it are in the buffers by then.
const AFTER_BREACH: Duration = Duration::from_millis(20);
const HOUR: Nanos = Nanos::from_secs(3_600);

/// What the recorder is asked to do.
#[derive(Debug)]
pub struct Plan {
    /// The measured CPUs (and traced).
    pub cpus: CpuList,
    /// Where capture directories go.
    pub dir: PathBuf,
    /// Captures allowed in any hour.
    pub per_hour: u32,
    /// Capture directories kept.
    pub keep: usize,
    /// No kernel stacks in the trace.
    pub no_stacks: bool,
    /// The measuring threads' policy.
    pub policy: Policy,
    /// The timer period.
    pub interval: Nanos,
    /// The breach threshold.
    pub threshold: Nanos,
    /// Whether idle states were limited to polling (for the remedies).
    pub idle_polling: bool,
    /// The machine, for each capture's result.
    pub facts: SystemFacts,
}

/// What the recorder counted, read by the collecting loop for the metrics.
#[derive(Debug, Default)]
struct Counts {
    breaches: BTreeMap<CauseKind, u64>,
    not_captured: u64,
    lost_events: u64,
    notes: Vec<String>,
}

/// The flight recorder, shared between its thread and the collecting loop.
#[derive(Debug)]
pub struct Recorder {
    plan: Plan,
    counts: Mutex<Counts>,
    /// The rolling window's latencies per CPU, published every second (for each capture's report).
    windows: Mutex<Vec<LatencyHistogram>>,
    /// The noise bursts' gaps by cause (`--noise`), explained from the rolling trace.
    pub noise: NoiseCauses,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A breach seen in the live counters.
#[derive(Clone, Copy, Debug)]
struct Breach {
    index: usize,
    progress: CpuProgress,
}

impl Recorder {
    /// Checks that the capture directory can be made.
    pub fn new(plan: Plan) -> Result<Recorder, CliError> {
        std::fs::create_dir_all(&plan.dir).map_err(|e| {
            CliError(format!("--capture-dir {}: cannot create it ({e}); pick a writable directory", plan.dir.display()))
        })?;
        Ok(Recorder { plan, counts: Mutex::default(), windows: Mutex::default(), noise: NoiseCauses::default() })
    }

    /// SIGHUP: creates the capture directory again when it was moved away, and removes the oldest captures
    /// beyond `--keep`; the directory.
    pub fn reopen(&self) -> Result<&std::path::Path, CliError> {
        std::fs::create_dir_all(&self.plan.dir)
            .map_err(|e| CliError(format!("capture directory {} not re-created ({e})", self.plan.dir.display())))?;
        self.prune();
        Ok(&self.plan.dir)
    }

    /// Adds the recorder's counters to a snapshot.
    pub fn fill(&self, snap: &mut MonitorSnapshot) {
        let c = locked(&self.counts);
        snap.breaches = c.breaches.clone();
        snap.breaches_not_captured = c.not_captured;
        snap.trace_lost_events = c.lost_events;
        self.noise.fill(snap);
    }

    /// Keeps the rolling window's latencies for the next capture's report.
    pub fn publish_windows(&self, stats: &[MonitorStats]) {
        let w: Vec<LatencyHistogram> = stats.iter().map(MonitorStats::window).collect();
        *locked(&self.windows) = w;
    }

    /// What the captures ran without, and other notes, for the exit summary.
    pub fn notes(&self) -> Vec<String> {
        locked(&self.counts).notes.clone()
    }

    /// Captures breaches until `done`: one capture armed at a time.
    pub fn run(&self, run: &TimerRun, done: &AtomicBool) {
        let mut seen: Vec<u64> = run.live().iter().map(|l| l.progress.above_threshold).collect();
        let mut taken: VecDeque<Nanos> = VecDeque::new();
        let mut first = true;
        while !done.load(Ordering::SeqCst) {
            let mut notes = Vec::new();
            let mut skipped = Vec::new();
            let c = capture::start(&self.plan.cpus, TRACE_SPAN, "flight recorder", self.plan.no_stacks, &mut skipped);
            notes.extend(skipped.iter().map(|m| format!("missing {m}")));
            if first {
                for n in &notes {
                    log(&format!("monitor: flight recorder: {n}"));
                }
                locked(&self.counts).notes.extend(notes.iter().cloned());
                first = false;
            }
            let Some(c) = c else {
                // No tracing here: count every breach as not captured until the end.
                self.count_until_done(run, done, &mut seen);
                return;
            };
            capture::add_thread_stacks(&c, run.thread_ids(), self.plan.no_stacks, &mut notes);
            // Breaches while the capture was set up (or the previous one saved) are not in this trace.
            self.count_missed(run, &mut seen);
            let mut trigger = Trigger::new(c, false);
            let breach = self.watch(run, done, &mut trigger, &mut seen, &mut taken);
            let Some(breach) = breach else {
                drop(trigger); // tears the capture down
                return;
            };
            std::thread::sleep(AFTER_BREACH);
            trigger.poll(run.live().into_iter().map(CpuProgress::from));
            taken.push_back(clock::now());
            let marks = trigger.marks();
            let capture = trigger.into_capture();
            capture.freeze();
            match self.save(run, capture, breach, marks, notes) {
                Ok(()) => {}
                Err(e) => log(&format!("monitor: flight recorder: the capture could not be saved: {e}")),
            }
            // The bursts of the frozen trace are not in the next one.
            self.noise.drop_pending();
        }
    }

    /// Counts the crossings since `seen` as not captured.
    fn count_missed(&self, run: &TimerRun, seen: &mut [u64]) {
        for (i, l) in run.live().iter().enumerate() {
            locked(&self.counts).not_captured += l.progress.above_threshold.saturating_sub(seen[i]);
            seen[i] = l.progress.above_threshold;
        }
    }

    /// Polls the trigger until a breach that may be captured, counting those that may not; `None` when
    /// the run ends first.
    fn watch(
        &self,
        run: &TimerRun,
        done: &AtomicBool,
        trigger: &mut Trigger,
        seen: &mut [u64],
        taken: &mut VecDeque<Nanos>,
    ) -> Option<Breach> {
        while !done.load(Ordering::SeqCst) {
            std::thread::sleep(POLL);
            let live = run.live();
            trigger.poll(live.iter().copied().map(CpuProgress::from));
            self.noise.attribute(trigger.capture());
            let now = clock::now();
            while taken.front().is_some_and(|t| now.saturating_sub(*t) >= HOUR) {
                taken.pop_front();
            }
            let mut breach = None;
            for (i, l) in live.iter().enumerate() {
                let new = l.progress.above_threshold.saturating_sub(seen[i]);
                if new == 0 {
                    continue;
                }
                seen[i] = l.progress.above_threshold;
                if breach.is_none() && taken.len() < self.plan.per_hour as usize {
                    breach = Some(Breach { index: i, progress: CpuProgress::from(*l) });
                    locked(&self.counts).not_captured += new - 1;
                } else {
                    locked(&self.counts).not_captured += new;
                }
            }
            if breach.is_some() {
                return breach;
            }
        }
        None
    }

    fn count_until_done(&self, run: &TimerRun, done: &AtomicBool, seen: &mut [u64]) {
        while !done.load(Ordering::SeqCst) {
            std::thread::sleep(POLL * 10);
            self.count_missed(run, seen);
        }
    }

    /// Stops the capture, explains the breach, writes its directory and counts it by cause.
    fn save(
        &self,
        run: &TimerRun,
        capture: latscope_sys::tracefs::Capture,
        breach: Breach,
        marks: u64,
        mut notes: Vec<String>,
    ) -> Result<(), CliError> {
        let data = capture.finish().map_err(CliError::msg)?;
        let decoded = capture::decode(&data, &mut notes)?;
        let p = breach.progress;
        let (expected, actual) = p.last_above.unwrap_or((0, 0));
        let sample = WakeupSample {
            seq: 0,
            expected_ns: expected,
            actual_ns: actual,
            latency_ns: actual.saturating_sub(expected),
            missed_periods: actual.saturating_sub(expected) / self.plan.interval.0.max(1),
        };
        let tid = run.thread_ids().get(breach.index).map_or(0, |t| t.1);
        let worst = [sample];
        let samples = worst_samples([(p.cpu, tid, &worst[..])], Some(self.plan.policy.kernel_prio()), 1);
        let remedy = RemedyContext::from_facts(&self.plan.facts);
        let remedy = if self.plan.idle_polling { remedy.with_idle_polling() } else { remedy };
        let explained = explain_samples(&decoded.events, &samples, &remedy);
        let cause = explained.first().and_then(|w| w.headline.as_ref()).map_or(CauseKind::NotTraced, |h| h.cause);

        let mut trace = TimerTrace { worst: explained, frozen: true, marks, notes, ..TimerTrace::default() };
        (trace.events, trace.stacks) = latscope_model::count_events_and_stacks(&decoded.events);
        trace.lost_events = decoded.lost;
        let mut result = self.result(run, breach, sample);
        result.trace = Some(trace);
        latscope_report::sentences::timer(&mut result);

        let dir = self.capture_dir(p.cpu.0);
        // The recorder's own directory: its files are latscope's.
        write_timer_report(&dir, true, &result, &format!("breach on CPU {}", p.cpu))?;
        write_perfetto(&dir.join("trace.perfetto.json"), &decoded.events, Some(&result), None)?;
        write_dat(&dir.join("trace.dat"), &data, true)?;
        {
            let mut c = locked(&self.counts);
            *c.breaches.entry(cause).or_default() += 1;
            c.lost_events += decoded.lost;
        }
        let sentence = result
            .trace
            .as_ref()
            .and_then(|t| t.worst.first())
            .and_then(|w| w.headline.as_ref())
            .map_or_else(|| "the trace does not explain it".to_string(), |h| h.sentence.clone());
        log(&format!(
            "breach: cpu={} latency={} cause={} capture={}: {}",
            p.cpu,
            Nanos(sample.latency_ns),
            cause.as_str(),
            dir.display(),
            sentence.replace('\n', " ")
        ));
        self.prune();
        Ok(())
    }

    /// The capture's timer result: the rolling window's statistics and the breach as the worst sample.
    fn result(&self, run: &TimerRun, breach: Breach, sample: WakeupSample) -> TimerResult {
        let windows = locked(&self.windows).clone();
        let empty = LatencyHistogram::new();
        let cpus = run.config().cpus.clone();
        let live = run.live();
        let worst = [sample];
        let samples: Vec<CpuSamples<'_>> = cpus
            .iter()
            .enumerate()
            .map(|(i, cpu)| CpuSamples {
                cpu,
                histogram: windows.get(i).unwrap_or(&empty),
                overruns: live.get(i).map_or(0, |l| l.progress.overruns),
                windows: &[],
                windows_dropped: 0,
                worst: if i == breach.index { &worst } else { &[] },
            })
            .collect();
        let summary = summarize_timer(&samples, run.start(), Some(self.plan.threshold));
        let metadata = run_metadata(std::env::args().collect(), &self.plan.facts);
        let options = TimerOptions {
            cpus,
            interval_ns: self.plan.interval.0,
            priority: u32::from(self.plan.policy.priority()),
            duration_ns: None,
            threshold_ns: Some(self.plan.threshold.0),
            stop_on_threshold: false,
            window_ns: None,
            backend: TimerBackend::User,
        };
        let mut r = TimerResult::new(metadata, options);
        r.start_monotonic_ns = run.start().0;
        r.cpus = summary.cpus;
        r.all = summary.all;
        r.warnings.push("statistics of the rolling window before the breach, not of the whole run".into());
        r
    }

    /// `DIR/20261125-171500-cpu1` (a suffix when that exists already).
    fn capture_dir(&self, cpu: u32) -> PathBuf {
        let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
        let digits: String = rfc3339(secs).chars().filter(char::is_ascii_digit).collect();
        let stamp = format!("{}-{}", &digits[..8.min(digits.len())], &digits[8.min(digits.len())..]);
        let mut dir = self.plan.dir.join(format!("{stamp}-cpu{cpu}"));
        let mut n = 1;
        while dir.exists() {
            n += 1;
            dir = self.plan.dir.join(format!("{stamp}-cpu{cpu}.{n}"));
        }
        dir
    }

    /// Removes the oldest capture directories beyond `keep` (their names sort by time).
    fn prune(&self) {
        let Ok(entries) = std::fs::read_dir(&self.plan.dir) else { return };
        let mut dirs: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_dir() && p.file_name().is_some_and(|n| is_capture_name(&n.to_string_lossy())))
            .collect();
        dirs.sort();
        let excess = dirs.len().saturating_sub(self.plan.keep);
        for d in dirs.into_iter().take(excess) {
            if let Err(e) = std::fs::remove_dir_all(&d) {
                log(&format!("monitor: cannot remove the old capture {}: {e}", d.display()));
            }
        }
    }
}

/// Whether a directory name is one of ours: `YYYYMMDD-HHMMSS-cpuN` (with an optional `.n`).
fn is_capture_name(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() > 19
        && b[..8].iter().all(u8::is_ascii_digit)
        && b[8] == b'-'
        && b[9..15].iter().all(u8::is_ascii_digit)
        && name[15..].starts_with("-cpu")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knows_its_own_directories_only() {
        assert!(is_capture_name("20261125-171500-cpu1"));
        assert!(is_capture_name("20261125-171500-cpu12.2"));
        assert!(!is_capture_name("notes"));
        assert!(!is_capture_name("2026112x-171500-cpu1"));
        assert!(!is_capture_name("20261125-171500-cp1"));
    }
}
