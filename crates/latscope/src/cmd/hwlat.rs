//! `latscope hwlat`: hardware and firmware latency, hwlatdetect's job. The kernel's hwlat tracer samples
//! (sys's `HwlatRun`), the instance's pages are decoded as they come into analyze's samples, each sample
//! gets the SMIs its CPU counted since the one before where the MSR is readable, and the result is drawn
//! as text and JSON. Wiring only.

use crate::args::{self, CpuArgs, DurationArg};
use crate::capture::decoder_for;
use crate::cmd::timer::emit;
use crate::error::{CliError, CmdResult, Outcome};
use crate::output::{write_file, write_text, Kind, Outputs};
use crate::signal;
use latscope_analyze::hwlat::{sample, source, summarize};
use latscope_decode::RawDecoder;
use latscope_model::{CpuId, HwlatOptions, HwlatResult, HwlatSample, Nanos, SmiCounts, StopReason};
use latscope_report::json::write_json;
use latscope_report::text::hwlat::{sample_line, write_result};
use latscope_sys::host::{collect, run_metadata, smi_count, smi_counts};
use latscope_sys::measure::{clock, HwlatConfig, HwlatRun};
use latscope_sys::tracefs::RawPage;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Arguments of `latscope hwlat`.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    cpus: CpuArgs,
    /// A gap longer than this (whole microseconds) is a sample; any sample makes the exit code 2
    #[arg(long, value_name = "DUR", default_value = "10us", value_parser = args::duration())]
    threshold: Nanos,
    /// Time the CPU spins with interrupts off in each window (the CPU is unusable meanwhile)
    #[arg(long, value_name = "DUR", default_value = "500ms", value_parser = args::duration())]
    width: Nanos,
    /// The sampling period; one width of each window is sampled, one CPU at a time
    #[arg(long, value_name = "DUR", default_value = "1s", value_parser = args::duration())]
    window: Nanos,
    #[command(flatten)]
    duration: DurationArg,
    /// Write the result as JSON to FILE (`-` for stdout; the text then goes to stderr)
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// No line per sample as it comes; only the final summary
    #[arg(short = 'q', long)]
    quiet: bool,
}

/// How often the instance's pages are taken and decoded.
const POLL: Duration = Duration::from_millis(100);

/// The SMI counters as the run reads them: the last count per CPU, or why they are not readable.
struct Smi {
    first: BTreeMap<CpuId, u64>,
    last: BTreeMap<CpuId, u64>,
    unreadable: Option<String>,
}

impl Smi {
    fn start(cpus: &latscope_model::CpuList) -> Smi {
        match smi_counts(cpus) {
            Ok(v) => {
                let m: BTreeMap<CpuId, u64> = v.into_iter().collect();
                Smi { first: m.clone(), last: m, unreadable: None }
            }
            Err(why) => Smi { first: BTreeMap::new(), last: BTreeMap::new(), unreadable: Some(why) },
        }
    }

    /// The SMIs `cpu` counted since the last reading.
    fn delta(&mut self, cpu: CpuId) -> Option<u64> {
        if self.unreadable.is_some() {
            return None;
        }
        let now = smi_count(cpu).ok()?;
        let before = self.last.insert(cpu, now)?;
        Some(now.saturating_sub(before))
    }

    fn finish(mut self) -> SmiCounts {
        if let Some(why) = self.unreadable {
            return SmiCounts { cpus: Vec::new(), unreadable: Some(why) };
        }
        let cpus: Vec<CpuId> = self.first.keys().copied().collect();
        for c in &cpus {
            if let Ok(n) = smi_count(*c) {
                self.last.insert(*c, n);
            }
        }
        SmiCounts { cpus: cpus.iter().map(|c| (*c, self.first[c], self.last[c])).collect(), unreadable: None }
    }
}

/// Runs `latscope hwlat`.
pub fn run(args: Args) -> CmdResult {
    let cpus = args.cpus.resolve()?;
    let duration = args.duration.nonzero()?;
    let outputs = Outputs::new(false).file(Kind::Json, args.json.as_deref());
    outputs.check()?;
    let to_stderr = outputs.takes_stdout();
    let facts = collect();
    let mut metadata = run_metadata(std::env::args().collect(), &facts);
    let cfg = HwlatConfig { cpus: cpus.clone(), threshold: args.threshold, width: args.width, window: args.window };
    let mut smi = Smi::start(&cpus);
    let run = HwlatRun::start(&cfg).map_err(|e| CliError(format!("hwlat: {e}")))?;
    let start = run.tracer().start_time();
    let end = duration.map(|d| start + d);
    let mut dec = decoder_for(run.tracer().capture().formats(), "")?;
    let mut samples = Vec::new();
    let mut lost = 0u64;
    let stopped_by = loop {
        std::thread::sleep(POLL);
        let new = feed(&mut dec, run.tracer().capture().take_pages(), &mut samples, &mut smi, &mut lost);
        show(&samples[samples.len() - new..], start, args.quiet, to_stderr);
        if signal::stop_flag().load(Ordering::Relaxed) {
            break StopReason::Signal;
        }
        if end.is_some_and(|e| clock::now() >= e) {
            break StopReason::Duration;
        }
    };
    let finished = clock::now();
    let mut warnings: Vec<String> = run.tracer().notes().to_vec();
    let mode = run.mode().map(str::to_string);
    let data = run.finish().map_err(|e| CliError(format!("hwlat: stopping the tracer: {e}")))?;
    warnings.extend(data.report.notes.iter().cloned());
    for cpu in data.cpus {
        if let Some(e) = &cpu.error {
            warnings.push(format!("CPU {}: the hwlat reader stopped early: {e}", cpu.cpu));
        }
        let new = feed(&mut dec, cpu.pages, &mut samples, &mut smi, &mut lost);
        show(&samples[samples.len() - new..], start, args.quiet, to_stderr);
    }
    if lost > 0 {
        warnings.push(format!("the kernel's buffer lost {lost} hwlat records (ring buffer overrun)"));
    }
    metadata.duration_ns = end.map_or(finished, |e| e.min(finished)).saturating_sub(start).0;
    let options = HwlatOptions {
        cpus,
        threshold_ns: args.threshold.0,
        width_ns: args.width.0,
        window_ns: args.window.0,
        duration_ns: duration.map(|d| d.0),
        mode,
    };
    // Pages come per CPU: the kernel's sequence numbers put the samples back in order.
    samples.sort_by_key(|x| (x.seqnum, x.time));
    let mut result = HwlatResult::new(metadata, options);
    result.stopped_by = stopped_by;
    result.start_monotonic_ns = start.0;
    result.summary = summarize(&samples, Some(args.threshold));
    result.samples = samples;
    result.smi = smi.finish();
    result.source = source(&result.summary, result.metadata.hypervisor.as_deref(), Some(&result.smi));
    result.warnings = warnings;
    write_text(|out| write_result(out, &result), to_stderr)?;
    if let Some(path) = &args.json {
        write_file(Kind::Json, path, |w| write_json(w, &result))?;
    }
    Ok(if result.summary.over_threshold > 0 { Outcome::ThresholdExceeded } else { Outcome::Ok })
}

/// Decodes `pages` into `samples` (with their SMI deltas); returns how many were added.
fn feed(
    dec: &mut RawDecoder,
    pages: Vec<RawPage>,
    samples: &mut Vec<HwlatSample>,
    smi: &mut Smi,
    lost: &mut u64,
) -> usize {
    let before = samples.len();
    for p in pages {
        crate::capture::decode_page(dec, p.cpu, &p.data, lost, &mut |e| {
            if let Some(mut x) = sample(&e) {
                x.smi_delta = smi.delta(x.cpu);
                samples.push(x);
            }
        });
    }
    // Pages come per CPU: the kernel's sequence numbers put the new samples in order.
    samples[before..].sort_by_key(|x| (x.seqnum, x.time));
    samples.len() - before
}

/// One line per new sample, unless quiet.
fn show(new: &[HwlatSample], start: Nanos, quiet: bool, to_stderr: bool) {
    if quiet {
        return;
    }
    for x in new {
        emit(&sample_line(x, start), to_stderr);
    }
}
