//! The convenience `sentence` of every explanation in a result, filled in before it is written as JSON so
//! that readers of the JSON get the words the text report shows; the renderers themselves word the data
//! again and never read these.

use crate::text::{analysis_verdicts, noise_causes, traced_wakeups, verdict};
use latscope_analyze::analysis::Analysis;
use latscope_model::noise_result::NoiseResult;
use latscope_model::{RunResult, TimerResult};

/// The sentences of a timer result's traced wakeups.
pub fn timer(r: &mut TimerResult) {
    for w in r.trace.iter_mut().flat_map(|t| &mut t.worst) {
        let s = traced_wakeups::sentence(w);
        if let Some(h) = &mut w.headline {
            h.sentence = s;
        }
    }
}

/// The labels of a noise result's traced causes.
pub fn noise(r: &mut NoiseResult) {
    for c in r.causes.iter_mut().flat_map(|t| &mut t.cpus).flat_map(|c| &mut c.causes) {
        c.sentence = noise_causes::label(c);
    }
}

/// The titles of a run's causes, and the sentences of its timer and noise results.
pub fn run(r: &mut RunResult) {
    for c in &mut r.causes {
        c.explanation.sentence = verdict::title(c);
    }
    if let Some(t) = &mut r.timer {
        timer(t);
    }
    if let Some(n) = &mut r.noise {
        noise(n);
    }
}

/// The sentences of an analysis' verdicts and decomposed wakeups, and of its windows' when it has them.
pub fn analysis(a: &mut Analysis) {
    let words: Vec<String> = a.verdicts.iter().map(|v| analysis_verdicts::sentence(a, v)).collect();
    for (v, s) in a.verdicts.iter_mut().zip(words) {
        v.explanation.sentence = s;
    }
    for w in &mut a.wakeups {
        let s = analysis_verdicts::wakeup_sentence(w);
        if let Some(h) = &mut w.headline {
            h.sentence = s;
        }
    }
    for win in a.windowed.iter_mut().flat_map(|w| &mut w.windows) {
        analysis(&mut win.analysis);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use latscope_analyze::analysis::{analyze, AnalyzeOptions};

    #[test]
    fn every_verdict_gets_the_sentence_the_text_shows() {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../fixtures/seeds/000-irqsoff-5.4.161-arm64-printk-12ms.txt");
        let t = latscope_decode::decode_file(&p).expect("decode");
        let mut a = analyze("seed", &t, &AnalyzeOptions::default());
        analysis(&mut a);
        assert!(
            a.verdicts[0].explanation.sentence.starts_with("12116 us with irqs off on CPU 7"),
            "{:?}",
            a.verdicts[0]
        );
        let v = serde_json::to_value(&a).expect("json");
        assert_eq!(v["verdicts"][0]["kind"], "latency_trace");
        assert_eq!(v["verdicts"][0]["explanation"]["cause"], "irqs_off");
        assert!(v["verdicts"][0]["explanation"]["sentence"]
            .as_str()
            .is_some_and(|s| s.contains("console_trylock_spinning")));
    }
}
