//! Commands that only read files (decode, analyze, compare, report) end at once on SIGINT/SIGTERM with the
//! status shells expect (130, 143), also while stuck: each is given a FIFO whose writer stays open without
//! finishing, so it is blocked reading its input when the signal comes (issue #19: a hung `analyze`
//! ignored the first SIGTERM and ran on for 15 minutes).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A FIFO in a fresh directory, removed with it.
struct Fifo {
    dir: PathBuf,
    path: PathBuf,
}

impl Fifo {
    fn new(tag: &str) -> Fifo {
        let dir = std::env::temp_dir().join(format!("latscope-signals-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("temp dir");
        let path = dir.join("input");
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).expect("path");
        // SAFETY: mkfifo(3) with a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
        Fifo { dir, path }
    }
}

impl Drop for Fifo {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Start `latscope ARGS` (the FIFO among them), feed it `head` of `input` and keep the FIFO open, then
/// send `signal` once it has read that much: it must be gone within 5 s with `128 + signal`.
fn ends_at_once(args: &[&str], fifo: &Fifo, input: &Path, head: usize, signal: libc::c_int) {
    let mut child: Child = Command::new(env!("CARGO_BIN_EXE_latscope"))
        .args(args)
        .current_dir(root())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start latscope");
    // Opening the write end waits for latscope to open the FIFO for reading.
    let mut writer = File::options().write(true).open(&fifo.path).expect("open the FIFO");
    let bytes = std::fs::read(input).expect("read the fixture");
    writer.write_all(&bytes[..head.min(bytes.len())]).expect("feed the FIFO");
    // The command now waits for the rest, which never comes while `writer` is open.
    std::thread::sleep(Duration::from_millis(300));
    assert!(child.try_wait().expect("poll").is_none(), "{args:?} ended before the signal");
    let sent = Instant::now();
    // SAFETY: kill(2) of our own child.
    unsafe { libc::kill(child.id() as libc::pid_t, signal) };
    let status = loop {
        if let Some(status) = child.try_wait().expect("poll") {
            break status;
        }
        if sent.elapsed() > Duration::from_secs(5) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?}: still running 5 s after signal {signal}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(writer);
    assert_eq!(status.code(), Some(128 + signal), "{args:?} after signal {signal}: {status:?}");
}

fn fixture(rel: &str) -> PathBuf {
    root().join("fixtures").join(rel)
}

#[test]
fn analyze_and_decode_stuck_on_their_input_end_at_once_on_sigterm_and_sigint() {
    let trace = first_text_fixture();
    for (cmd, signal) in [("analyze", libc::SIGTERM), ("analyze", libc::SIGINT), ("decode", libc::SIGTERM)] {
        let fifo = Fifo::new(&format!("{cmd}-{signal}"));
        let path = fifo.path.to_str().expect("utf-8 path").to_string();
        ends_at_once(&[cmd, &path], &fifo, &trace, 2000, signal);
    }
}

#[test]
fn report_and_compare_stuck_on_their_input_end_at_once_on_sigterm() {
    // Any start of a JSON document will do: the command waits for the rest.
    let dir = std::env::temp_dir().join(format!("latscope-signals-json-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let head = dir.join("head.json");
    std::fs::write(&head, b"{\"schema\": \"latscope/1\", ").expect("write");
    let fifo = Fifo::new("report");
    let path = fifo.path.to_str().expect("utf-8 path").to_string();
    ends_at_once(&["report", &path], &fifo, &head, 100, libc::SIGTERM);
    let fifo = Fifo::new("compare");
    let path = fifo.path.to_str().expect("utf-8 path").to_string();
    ends_at_once(&["compare", &path, &path], &fifo, &head, 100, libc::SIGTERM);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Some ftrace text fixture of more than 2000 bytes.
fn first_text_fixture() -> PathBuf {
    files_under(&fixture("events"))
        .into_iter()
        .find(|p| p.extension().is_some_and(|e| e == "txt") && p.metadata().is_ok_and(|m| m.len() > 4000))
        .expect("a text trace in fixtures/events")
}

fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        std::fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    files.sort();
    files
}
