//! The HTML reports of imported cyclictest and oslat fixtures and of their comparison open in headless
//! Chromium without console errors, and every plot element in the rendered DOM holds a non-empty SVG.
//! Skips (with a message) when Chromium is not installed.

use latscope_analyze::compare::{compare, RunInput};
use latscope_decode::import::{load, Loaded};
use latscope_report::compare::Comparison;
use latscope_report::html::{Page, ReportFiles};
use latscope_report::pages;
use std::path::{Path, PathBuf};
use std::process::Command;

// Skip or fail (under LATSCOPE_REQUIRE_LIVE=1) when chromium is missing: the live tests' shared decision.
#[path = "../../latscope/tests/live/require.rs"]
#[allow(dead_code)]
mod require;

fn fixture(rel: &str) -> (String, String) {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures").join(rel);
    (rel.to_string(), std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display())))
}

fn chromium() -> Option<PathBuf> {
    ["chromium", "chromium-browser", "google-chrome"].iter().find_map(|name| {
        std::env::var_os("PATH")?.to_str()?.split(':').map(|d| Path::new(d).join(name)).find(|p| p.is_file())
    })
}

fn write(dir: &Path, files: &ReportFiles) -> PathBuf {
    std::fs::create_dir_all(dir).expect("mkdir");
    for (name, svg) in &files.svgs {
        std::fs::write(dir.join(name), svg).expect("write svg");
    }
    let index = dir.join("index.html");
    std::fs::write(&index, &files.index_html).expect("write html");
    index
}

/// Runs headless Chromium on `index` and returns (DOM, stderr).
fn dump_dom(chrome: &Path, index: &Path, profile: &Path) -> (String, String) {
    let out = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", index.display()))
        .output()
        .expect("run chromium");
    (String::from_utf8_lossy(&out.stdout).into_owned(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Checks the rendered DOM: every `<figure class="plot" …>` has an `<svg>` with drawn elements.
fn check_plots(dom: &str, page: &Page) {
    for p in page.plots() {
        let marker = format!("id=\"plot-{}\"", p.id);
        let start = dom.find(&marker).unwrap_or_else(|| panic!("plot {} missing from the DOM", p.id));
        let end = start + dom[start..].find("</figure>").unwrap_or_else(|| panic!("plot {} not closed", p.id));
        let fig = &dom[start..end];
        let svg_at = fig.find("<svg").unwrap_or_else(|| panic!("plot {} has no <svg>", p.id));
        let drawn = ["<path", "<rect", "<polyline", "<line", "<circle", "<text"]
            .iter()
            .map(|t| fig[svg_at..].matches(t).count())
            .sum::<usize>();
        assert!(drawn >= 3, "plot {} has an almost empty SVG ({drawn} elements)", p.id);
    }
}

fn console_errors(stderr: &str) -> Vec<&str> {
    stderr.lines().filter(|l| l.contains("CONSOLE") || l.contains("Refused") || l.contains("Failed to load")).collect()
}

#[test]
fn reports_render_in_headless_chromium() {
    let (hist_name, hist) = fixture("cyclictest/rpi4-nonrt-stress-histofall-4000buckets.log");
    let (json_name, json) = fixture("cyclictest/vm-6.18-cyclictest-2.40.json");
    let (oslat_name, oslat) = fixture("oslat/oslat-1.10-rhel8.3-rt-4.18-x86_64-7cpu.txt");
    let Ok(Loaded::Timer(a)) = load(&hist_name, &hist) else { panic!("cyclictest histogram import") };
    let Ok(Loaded::Timer(b)) = load(&json_name, &json) else { panic!("cyclictest json import") };
    let Ok(Loaded::Noise(n)) = load(&oslat_name, &oslat) else { panic!("oslat import") };
    let cmp = Comparison::from(
        compare(vec![RunInput::timer("A", &hist_name, &a), RunInput::timer("B", &json_name, &b)])
            .expect("two timer runs"),
    );
    // A run page with a worst-case timeline drawn from a real trace (recorded here): a made-up wakeup
    // on CPU 0 at 3173.723300 s, while memfd:sealed-91 (5261) ran there.
    let trace = latscope_decode::decode_file(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/dat/local-6.18-x86_64-sched_irq_timer-v7.dat"),
    )
    .expect("decode fixture");
    let built = latscope_report::slices::build(&trace.events);
    let mut traced = (*b).clone();
    traced.cpus.truncate(1);
    traced.cpus[0].cpu = latscope_model::CpuId(0);
    traced.cpus[0].worst = vec![latscope_model::WakeupSample {
        seq: 1,
        expected_ns: 3_173_723_300_000,
        actual_ns: 3_173_723_340_000,
        latency_ns: 40_000,
        missed_periods: 0,
    }];
    let timelines = pages::worst_case_timelines(&traced, &built, &[], 1);
    assert_eq!(timelines.len(), 1);
    let mut run = latscope_model::RunResult::new(b.metadata.clone(), 2_000_000_000);
    run.timer = Some(traced);
    run.noise = Some((*n).clone());
    let remedy = latscope_analyze::remedy::RemedyContext::default();
    run.causes = latscope_analyze::ranking::rank(None, run.timer.as_ref(), run.noise.as_ref(), &remedy);
    assert!(!run.causes.is_empty());
    let pages = vec![
        ("run", pages::run_page(&run, timelines)),
        ("timer", pages::timer_page(&a, &hist_name)),
        ("noise", pages::noise_page(&n, &oslat_name)),
        (
            "compare",
            pages::compare_page(&cmp, vec![("A".into(), a.metadata.clone()), ("B".into(), b.metadata.clone())]),
        ),
    ];
    let root = std::env::temp_dir().join(format!("latscope-html-test-{}", std::process::id()));
    let mut indexes = Vec::new();
    for (name, page) in &pages {
        let files = page.render();
        assert!(!files.index_html.contains("src=\"http") && !files.index_html.contains("href=\"http"));
        for (file, svg) in &files.svgs {
            roxmltree::Document::parse(svg).unwrap_or_else(|e| panic!("{name}/{file}: invalid XML: {e}"));
        }
        indexes.push((name, write(&root.join(name), &files), page));
    }
    let Some(chrome) = chromium() else {
        require::skip(format!(
            "chromium not installed (scripts/install-deps.sh installs it); reports written to {}",
            root.display()
        ));
        return;
    };
    for (name, index, page) in indexes {
        let (dom, stderr) = dump_dom(&chrome, &index, &root.join(format!("profile-{name}")));
        assert!(dom.contains("</html>"), "{name}: chromium produced no DOM; stderr:\n{stderr}");
        check_plots(&dom, page);
        let errors = console_errors(&stderr);
        assert!(errors.is_empty(), "{name}: console errors:\n{}", errors.join("\n"));
    }
    if std::env::var_os("LATSCOPE_KEEP_REPORT").is_some() {
        eprintln!("reports kept in {}", root.display());
    } else {
        let _ = std::fs::remove_dir_all(&root);
    }
}
