//! `latscope decode trace > d.txt; latscope decode d.txt` reads back the same events (#15.15): the text
//! output is ftrace text in the kernel's field order, with nothing the kernel did not print.

use latscope_model::{Event, EventKind};
use std::path::PathBuf;
use std::process::Command;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn decode(args: &[&str]) -> Vec<u8> {
    let out = Command::new(env!("CARGO_BIN_EXE_latscope")).args(args).current_dir(root()).output().expect("run");
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out.stdout
}

fn json_events(bytes: &[u8]) -> Vec<Event> {
    String::from_utf8_lossy(bytes).lines().map(|l| serde_json::from_str(l).expect("event json")).collect()
}

/// What ftrace text does not print: the event system (`sched:`) and the number of a named syscall event.
fn as_text_shows(mut e: Event) -> Event {
    match &mut e.kind {
        EventKind::Other { system, .. } => *system = None,
        EventKind::SysEnter { nr, name: Some(_), .. } | EventKind::SysExit { nr, name: Some(_), .. } => *nr = None,
        _ => {}
    }
    e
}

#[test]
fn decode_text_reads_back_as_the_same_events() {
    let dir = std::env::temp_dir().join(format!("latscope-roundtrip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("tmp dir");
    let fixtures = [
        "fixtures/events/trace_pipe-sched-3.x-doc.txt",
        "fixtures/events/snapshot-preemptirq-irq_vectors-rt-7col-nullparent-2019.txt",
        "fixtures/events/timerlat-osnoise-events-7col-flags-doc.txt",
        "fixtures/events/rpi-4.19-armv7-irq-workqueue-sched-stack-edited.txt",
        "fixtures/events/rpi-4.19-armv7-function-stacktrace-symoffset-126k.txt",
        "fixtures/tracecmd-report/lisa-trace-cmd-report-juno-arm64-numeric-prev_state.txt",
        "fixtures/tracecmd-report/trace-cmd-report-6.x-sched_waking-filter.txt",
        "fixtures/funcgraph/perftools-funcgraph-Ctp-abstime-sleep-time-off.txt",
        "fixtures/funcgraph/fgraph-2.6.35doc-basic.txt",
        "fixtures/dat/local-6.18-x86_64-sched_irq_timer-v7.dat",
        "fixtures/dat/local-6.18-x86_64-sched_syscalls-v7-zstd.dat",
        "fixtures/dat/buildroot-4.13.9-i686-function-v6.dat",
    ];
    for f in fixtures {
        let want: Vec<Event> = json_events(&decode(&["decode", "--format", "json", f]));
        let text = decode(&["decode", f]);
        let t = String::from_utf8_lossy(&text);
        assert!(!t.contains("kind=") && !t.contains(" frames=["), "{f}: fields the kernel does not print");
        let d = dir.join("d.txt");
        std::fs::write(&d, &text).expect("write d.txt");
        let got = json_events(&decode(&["decode", "--format", "json", d.to_str().expect("utf-8 path")]));
        assert_eq!(got.len(), want.len(), "{f}: event count");
        for (i, (g, w)) in got.into_iter().zip(want).enumerate() {
            assert_eq!(as_text_shows(g), as_text_shows(w), "{f}: event {i}");
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn wakeups_keep_the_kernels_field_order_and_arrow() {
    let t = String::from_utf8_lossy(&decode(&[
        "decode",
        "fixtures/tracecmd-report/trace-cmd-report-6.x-sched_waking-filter.txt",
    ]))
    .into_owned();
    assert!(t.lines().any(|l| l.contains(": sched_waking: comm=") && l.contains(" target_cpu=")), "{t}");
    assert!(
        t.lines().any(|l| l.contains(": sched_switch: prev_comm=")
            && l.contains(" prev_state=")
            && l.contains(" ==> next_comm=")),
        "{t}"
    );
}
