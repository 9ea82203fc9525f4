//! `latscope noise` end to end: ground truth from a known injected load, RT throttling on this kernel,
//! the JSON contract, Ctrl-C, --stop-on-threshold and bad input. Live tests need root (SCHED_FIFO) and
//! two CPUs; they skip with a printed reason otherwise (fail under LATSCOPE_REQUIRE_LIVE=1). They take
//! turns with every other live test on the machine (they share a CPU).

mod live;

use latscope_model::noise_result::{Gap, NoiseResult};
use latscope_model::{Bucket, CpuId, Nanos};
use latscope_sys::measure::{run_noise, start_injector, InjectSpec, NoiseConfig, Policy};
use live::Need;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

const MEASURED: CpuId = CpuId(1);

fn latscope() -> Command {
    Command::new(env!("CARGO_BIN_EXE_latscope"))
}

fn run(args: &[&str]) -> Output {
    latscope().args(args).output().expect("run latscope")
}

/// Whether the spinner tests can run here (root for SCHED_FIFO, CPU 1 and another one).
fn live_ready() -> bool {
    live::ready(&[Need::Root, Need::Cpu(MEASURED.0)])
}

fn parse(out: &Output) -> NoiseResult {
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("JSON does not parse ({e}):\n{text}"))
}

/// Iteration durations recorded within `[lo, hi]` ns.
fn in_range(buckets: &[Bucket], lo: u64, hi: u64) -> Vec<(u64, u64)> {
    buckets.iter().filter(|b| b.high_ns >= lo && b.low_ns <= hi).map(|b| (b.high_ns, b.count)).collect()
}

fn weighted_median(v: &[(u64, u64)]) -> u64 {
    let total: u64 = v.iter().map(|(_, c)| c).sum();
    let mut seen = 0;
    for (value, count) in v {
        seen += count;
        if 2 * seen >= total {
            return *value;
        }
    }
    0
}

fn rt_settings() -> Option<(u64, i64)> {
    let p = std::fs::read_to_string("/proc/sys/kernel/sched_rt_period_us").ok()?.trim().parse().ok()?;
    let r = std::fs::read_to_string("/proc/sys/kernel/sched_rt_runtime_us").ok()?.trim().parse().ok()?;
    Some((p, r))
}

/// Ground truth: a SCHED_FIFO 60 thread spinning 1 ms every 20 ms on the measured CPU must show up as
/// ~50 gaps per second of ~1 ms, the gap durations within 10% of the injector's deadline-to-end.
#[test]
fn injected_spins_are_found_and_measured() {
    if !live_ready() {
        return;
    }
    let _turn = live::turn::take();
    let spec = InjectSpec::new(MEASURED, Policy::Fifo(60), Nanos::from_ms(1), Nanos::from_ms(20));
    let injector = start_injector(spec).expect("start injector");
    let out = run(&["noise", "-c", "1", "-p", "50", "-D", "3s", "--json", "-", "-q"]);
    let report = injector.stop();
    assert!(out.status.success(), "latscope failed: {}", String::from_utf8_lossy(&out.stderr));
    let r = parse(&out);
    let cpu = &r.cpus[0];
    let secs = cpu.runtime_ns as f64 / 1e9;

    // Gaps of the injected kind: between 0.5 ms and 2 ms (ticks are ~20 us, throttling ~50 ms).
    let injected = in_range(&cpu.histogram, 500_000, 2_000_000);
    let count: u64 = injected.iter().map(|(_, c)| c).sum();
    let rate = count as f64 / secs;
    // At least the injected ~50/s; a loaded machine adds gaps of its own (CFS slices given by the RT
    // throttling server), which the spin-by-spin test below tells apart.
    assert!((40.0..=80.0).contains(&rate), "{count} gaps of 0.5-2 ms in {secs:.2} s = {rate:.1}/s, expected ~50/s");

    // A gap lasts from the injector's deadline (its timer took the CPU) to the spin's end: its wakeup
    // latency plus its spin (the latency's median was 119 us on this VM in a fresh-clone make test).
    let mut spins: Vec<u64> = report.spins.iter().map(|s| s.end.saturating_sub(s.due).0).collect();
    spins.sort_unstable();
    let spin = spins[spins.len() / 2] as f64;
    let gap = weighted_median(&injected) as f64;
    assert!(
        (gap - spin).abs() <= 0.10 * spin,
        "median gap {gap} ns vs median injected deadline-to-end {spin} ns: more than 10% apart"
    );
    // Each injection is also a context switch: the scheduler's interrupts must have been counted.
    assert!(cpu.counters.interrupts.iter().any(|d| d.delta > 0), "no interrupt counted on CPU 1");
}

/// How far the loop's gap may start before its spin was due, or end before the spin did: the clock
/// conversions' slack (measured: the gap starts 0.1-8 µs before the injector's deadline).
const EDGE_SLACK: Nanos = Nanos::from_us(20);

/// Spin by spin: every injected spin that falls inside the run lies in one gap the loop recorded (matched
/// by CLOCK_MONOTONIC time), and a gap that began when its spin was due lasts at least from that deadline
/// to the spin's end, as the injector read them (the injector's wakeup latency plus its 1 ms spin), and
/// typically (the median) no more than 10% of the spin longer.
///
/// On this VM a gap also holds whatever else kept the loop off the CPU before the spin: RT throttling
/// and the fair server's turns for normal tasks (tens of ms; the injector, due meanwhile, spins as soon as
/// they end), a stall of the vCPU, interrupt work. Such a gap is measured right and is not the spin's
/// alone; the injector witnesses it — the gap began before the spin was due, or it holds another spin too —
/// and for those spins only the containment is checked. Of the others none may be shorter (what follows a spin
/// is not witnessed: a normal task the fair server runs right after one, a few per thousand spins under a
/// build). Another live test's injector beside this one would merge with the spins unwitnessed: hence the
/// machine-wide turn.
#[test]
fn every_injected_spin_is_a_gap_of_its_duration() {
    if !live_ready() {
        return;
    }
    let _turn = live::turn::take();
    let spin = Nanos::from_ms(1);
    let spec = InjectSpec::new(MEASURED, Policy::Fifo(60), spin, Nanos::from_ms(20));
    let injector = start_injector(spec).expect("start injector");
    let cfg = NoiseConfig {
        cpus: latscope_model::CpuList(vec![MEASURED]),
        policy: Policy::Fifo(50),
        duration: Some(Nanos::from_secs(2)),
        threshold: Nanos::from_us(5),
        gap_capacity: 1 << 16,
        stop_on_threshold: false,
    };
    let run = run_noise(&cfg, &AtomicBool::new(false)).expect("noise run");
    let report = injector.stop();
    let gaps = &run.cpus[0].gaps;
    let inside: Vec<_> = report
        .spins
        .iter()
        .filter(|s| s.start >= run.start + Nanos::from_ms(2) && s.end + Nanos::from_ms(2) <= run.end)
        .collect();
    assert!(
        inside.len() >= 80,
        "only {} spins inside a 2 s run of 1 ms every 20 ms (run {:?}..{:?}, {} ms; injector: {} spins, {} periods \
         missed, the longest wait between two spins {:?})",
        inside.len(),
        run.start,
        run.end,
        (run.end.0 - run.start.0) / 1_000_000,
        report.spins.len(),
        report.missed_periods,
        report.spins.windows(2).map(|p| (p[1].start.0 - p[0].end.0, p[0].end)).max()
    );
    let (mut alone, mut excess, mut short) = (0, Vec::new(), Vec::new());
    for s in &inside {
        // The gap that contains the spin's middle holds all of it.
        let mid = s.start + Nanos(s.duration().0 / 2);
        let g = gaps
            .iter()
            .find(|g| g.start_ns <= mid && mid <= g.end())
            .unwrap_or_else(|| panic!("no gap holds the spin {s:?}; gaps around it: {:?}", near(gaps, s.start)));
        assert!(
            g.start_ns <= s.start + EDGE_SLACK && s.end <= g.end() + EDGE_SLACK,
            "the gap {g:?} does not hold all of the spin {s:?}"
        );
        let began_before_due = g.start_ns + EDGE_SLACK < s.due;
        let shared = report.spins.iter().filter(|o| o.start < g.end() && g.start_ns < o.end).count() > 1;
        if began_before_due || shared {
            continue;
        }
        alone += 1;
        // The loop lost the CPU when the injector's timer fired (at `due`) and got it back when the spin
        // ended: the gap is the injector's wakeup latency plus its spin. On-time spins are ~1 ms; spins held
        // off 100–300 us (seen on this VM with no other load, a fresh-clone make test failed on it) are
        // judged against the same two instants the injector read, not against the spin alone.
        // Never shorter than what the injector witnessed (the clocks' slack at both ends aside); longer by
        // whatever ran before the loop got the CPU back after the spin, which nothing witnesses.
        let (d, want) = (g.duration_ns.0 as i64, s.end.saturating_sub(s.due).0 as i64);
        if d + 2 * (EDGE_SLACK.0 as i64) < want {
            short.push((*s, *g));
        }
        excess.push(d - want);
    }
    let n = inside.len();
    if alone * 100 < n * 80 {
        live::skip(format!(
            "only {alone} of {n} spins ran alone in their gap (the others began before they were due or shared \
             it): the machine's load leaves too little to judge"
        ));
        return;
    }
    assert!(short.is_empty(), "gaps shorter than their spin's deadline to its end: {short:?}");
    // Typically the loop resumes right after the spin (on this VM a return can take 100-300 us more at
    // times: a fresh-clone make test saw 12 of 96): the median excess is within 10% of the spin.
    excess.sort_unstable();
    let median = excess[excess.len() / 2];
    assert!(median <= spin.0 as i64 / 10, "median gap exceeds deadline-to-end by {median} ns: {excess:?}");
}

/// The gaps within 5 ms of `t`, for a failure message.
fn near(gaps: &[Gap], t: Nanos) -> Vec<Gap> {
    gaps.iter().filter(|g| g.end() + Nanos::from_ms(5) >= t && g.start_ns <= t + Nanos::from_ms(5)).copied().collect()
}

/// On a kernel with sched_rt_runtime_us < sched_rt_period_us a SCHED_FIFO spinner is stopped for
/// (period − runtime) every period: latscope must find those gaps and name RT throttling and its sysctl.
#[test]
fn fifo_spinner_finds_and_names_rt_throttling() {
    if !live_ready() {
        return;
    }
    let Some((period, runtime)) = rt_settings() else {
        live::skip("/proc/sys/kernel/sched_rt_* not readable");
        return;
    };
    if runtime < 0 || runtime as u64 >= period {
        live::skip(format!("RT throttling is off here (sched_rt_runtime_us={runtime}, period {period})"));
        return;
    }
    let _turn = live::turn::take();
    let _normal = live::normal_load::start(MEASURED);
    let dir = std::env::temp_dir().join(format!("latscope-noise-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let json = dir.join("noise.json");
    let out = run(&["noise", "-c", "1", "-p", "50", "-D", "3s", "--json", json.to_str().expect("path"), "-q"]);
    assert!(out.status.success(), "latscope failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    let r: NoiseResult = serde_json::from_str(&std::fs::read_to_string(&json).expect("json file")).expect("parse");
    let _ = std::fs::remove_dir_all(&dir);
    let v = &r.cpus[0].rt_throttling;
    let expected = (period - runtime as u64) * 1000;
    // Other SCHED_FIFO load on the same CPU (another test, a benchmark) changes the pattern: show the gaps.
    assert!(v.detected, "RT throttling not detected: {v:?}\nlongest gaps: {:?}\n{text}", r.cpus[0].gaps.top);
    // Two throttles at least, one of them measured (a throttle right after other noise ends a longer gap).
    assert!(v.matched_gaps >= 1 && v.matched_gaps + v.in_longer_gaps >= 2, "{v:?}");
    assert_eq!(v.expected_gap_ns, Some(expected));
    let off = (v.median_gap_ns as f64 - expected as f64).abs() / expected as f64;
    assert!(off <= 0.3, "throttling gaps of {} ns vs expected {expected} ns", v.median_gap_ns);
    assert!(v.median_interval_ns.abs_diff(period * 1000) <= period * 100, "interval {}", v.median_interval_ns);
    assert!(r.cpus[0].max_gap_ns >= v.median_gap_ns);
    assert!(text.contains("RT throttling:") && text.contains("kernel.sched_rt_runtime_us"), "{text}");
}

/// The JSON goes to stdout with `--json -`, the text to stderr, and it parses back with the documented keys.
#[test]
fn json_parses_back_with_its_keys() {
    let _turn = live::turn::take();
    let out = run(&["noise", "-c", "0", "-D", "300ms", "--window", "100ms", "--json", "-", "-q"]);
    assert!(out.status.success(), "latscope failed: {}", String::from_utf8_lossy(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["schema"], "latscope/1");
    assert_eq!(v["kind"], "noise");
    let cpu = &v["cpus"][0];
    for key in ["cpu", "loops", "loop_cycles", "noise_ns", "noise_pct", "max_gap_ns", "gaps", "histogram", "counters"] {
        assert!(cpu.get(key).is_some(), "per-CPU key {key} missing");
    }
    assert!(v["findings"].is_array());
    let r = parse(&out);
    let c = &r.cpus[0];
    assert_eq!(c.cpu, CpuId(0));
    assert!(c.loops > 0 && c.loop_cycles > 0.0);
    assert_eq!(c.histogram.iter().map(|b| b.count).sum::<u64>(), c.loops, "every iteration is in the histogram");
    assert!(r.counter.freq_hz > 1e6);
    assert_eq!(c.windows.len(), 3);
    assert_eq!(r.options.threshold_ns, 5_000, "default threshold is 5us");
    assert_eq!(r.options.priority, 0, "default policy is SCHED_OTHER");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("latscope noise: CPU 0"), "text summary not on stderr:\n{stderr}");
}

/// Ctrl-C ends an open-ended run cleanly with the summary; --stop-on-threshold exits 2.
#[test]
fn ctrl_c_and_stop_on_threshold() {
    let _turn = live::turn::take();
    let child = latscope()
        .args(["noise", "-c", "0", "-q"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    std::thread::sleep(Duration::from_millis(700));
    // SAFETY: sending SIGINT to our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    let out = child.wait_with_output().expect("wait");
    // 130 after SIGINT, as shells expect (issue 15 item 18), with the summary written.
    assert_eq!(out.status.code(), Some(130), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("(interrupted)"), "{text}");

    let t = Instant::now();
    let out = run(&["noise", "-c", "0", "-D", "20s", "--threshold", "1us", "--stop-on-threshold", "-q"]);
    assert_eq!(out.status.code(), Some(2), "stderr: {}", String::from_utf8_lossy(&out.stderr));
    assert!(t.elapsed() < Duration::from_secs(15), "did not stop at the first gap");
    assert!(String::from_utf8_lossy(&out.stdout).contains("Stopped at a gap above 1us on CPU 0"));
}

#[test]
fn bad_input_is_one_clear_line_and_exit_1() {
    for (args, needle) in [
        (vec!["noise", "-c", "999", "-D", "1s"], "999"),
        (vec!["noise", "-c", "0", "-p", "120", "-D", "1s"], "priority 120 is out of range"),
        (vec!["noise", "-c", "0", "--threshold", "5", "-D", "1s"], "--threshold"),
        (vec!["noise", "-c", "x", "-D", "1s"], "--cpus"),
    ] {
        let out = run(&args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}

/// #17: `--backend osnoise` where it cannot run is one line saying why and what to use instead: with
/// `--trace`, with the tracer's options on the loop backend, and on a kernel without the tracer (this
/// machine's: the backend itself runs in the qemu guest, crates/latscope/tests/kernels.rs), where
/// `--backend auto` measures with the spinning loops and says so.
#[test]
fn osnoise_backend_where_it_cannot_run_is_one_clear_line() {
    let one_line = |args: &[&str], needles: &[&str]| {
        let out = run(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        assert_eq!(stderr.trim_end().lines().count(), 1, "not one line: {stderr}");
        for n in needles {
            assert!(stderr.contains(n), "{args:?}: '{n}' missing from {stderr}");
        }
        assert!(out.stdout.is_empty());
    };
    one_line(&["noise", "--backend", "osnoise", "--trace", "-c", "1", "-D", "1s"], &["--trace is for --backend loop"]);
    one_line(
        &["noise", "--stop-above", "1ms", "-c", "1", "-D", "1s"],
        &["--stop-above sets the kernel's osnoise tracer and needs --backend osnoise", "--stop-on-threshold"],
    );
    if !live_ready() {
        return;
    }
    let tracers = std::fs::read_to_string("/sys/kernel/tracing/available_tracers").unwrap_or_default();
    if tracers.split_whitespace().any(|t| t == "osnoise") {
        return; // this kernel has osnoise: nothing to refuse
    }
    one_line(
        &["noise", "--backend", "osnoise", "-c", "1", "-D", "1s"],
        &["this kernel has no osnoise tracer", "CONFIG_OSNOISE_TRACER=y", "use --backend loop"],
    );
    let _turn = live::turn::take();
    let out = run(&["noise", "--backend", "auto", "-c", "1", "-D", "300ms", "-q", "--json", "-"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("--backend auto: measuring with latscope's spinning loops (this kernel has no osnoise"));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON on stdout");
    assert_eq!(v["options"]["backend"], "loop");
    assert!(v["cpus"][0]["loops"].as_u64().unwrap_or(0) > 0 && v["cpus"][0].get("sources").is_none(), "{v}");
}
