//! Import of the formats people already have — cyclictest histograms (`-h`/`-H`/`--histfile`) and
//! `--json`, oslat text and `--json` — into latscope's timer and noise results, plus loading of saved
//! latscope JSON, so any of them can be plotted and compared. Errors name the file, the line when the
//! problem is on one, and the field.

mod cyclictest_hist;
mod cyclictest_json;
mod oslat_json;
mod oslat_text;
pub mod rtla;
mod tool_histogram;

use tool_histogram::{cyclictest_options, imported_metadata, noise_from_tool, timer_from_tool, ToolHistogram};

use crate::DecodeError;
use latscope_model::noise_result::NoiseResult;
use latscope_model::wire::{Envelope, ResultKind};
use latscope_model::{AuditResult, TimerResult};

/// An error about the whole file `file`.
fn file_error(file: &str, message: impl Into<String>) -> DecodeError {
    DecodeError::Import { file: file.to_string(), line: None, message: message.into() }
}

/// An error on line `line` (1-based) of `file`.
fn line_error(file: &str, line: usize, message: impl Into<String>) -> DecodeError {
    DecodeError::Import { file: file.to_string(), line: Some(line), message: message.into() }
}

/// The formats [`load`] recognises.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultFormat {
    /// A latscope JSON result (`"schema": "latscope/1"`).
    Latscope,
    /// cyclictest `-h`/`-H` output or `--histfile`.
    CyclictestHist,
    /// cyclictest `--json`.
    CyclictestJson,
    /// oslat `--json`.
    OslatJson,
    /// oslat's text output.
    OslatText,
}

/// Guesses the format of `text` from its content (not its name).
pub fn detect(text: &str) -> Option<ResultFormat> {
    let head: String = text.chars().take(4096).collect();
    let trimmed = head.trim_start();
    if trimmed.starts_with('{') {
        if head.contains("\"schema\"") && head.contains("latscope/") {
            return Some(ResultFormat::Latscope);
        }
        if head.contains("\"cmdline:\"") || head.contains("\"rt_test_version:\"") || head.contains("\"thread\"") {
            let cmd_is_oslat = head
                .split("\"cmdline:\"")
                .nth(1)
                .and_then(|rest| rest.split('"').nth(1))
                .is_some_and(|cmd| cmd.split_whitespace().next().is_some_and(|p| p.ends_with("oslat")));
            let oslat_fields = head.contains("\"freq\"") && head.contains("\"duration\"");
            return Some(if cmd_is_oslat || oslat_fields {
                ResultFormat::OslatJson
            } else {
                ResultFormat::CyclictestJson
            });
        }
        return None;
    }
    if text.lines().any(|l| l.trim_start().starts_with("Core:")) && text.contains("(us):") {
        return Some(ResultFormat::OslatText);
    }
    if text.lines().any(|l| l.trim() == "# Histogram") || text.lines().any(|l| l.starts_with("# Max Latenc")) {
        return Some(ResultFormat::CyclictestHist);
    }
    None
}

/// A loaded result, whatever file it came from.
#[derive(Clone, Debug, PartialEq)]
pub enum Loaded {
    /// A timer result (latscope timer, cyclictest).
    Timer(Box<TimerResult>),
    /// A noise result (latscope noise, oslat).
    Noise(Box<NoiseResult>),
    /// An audit result.
    Audit(Box<AuditResult>),
    /// A `latscope run` result (or another latscope kind kept as raw JSON until it has a renderer).
    Other(ResultKind, Box<serde_json::Value>),
}

/// Loads `text` (the content of `file`): a latscope JSON result or any imported format.
pub fn load(file: &str, text: &str) -> Result<Loaded, DecodeError> {
    match detect(text) {
        Some(ResultFormat::Latscope) => load_latscope(file, text),
        Some(ResultFormat::CyclictestHist) => cyclictest_hist::import(file, text).map(|r| Loaded::Timer(Box::new(r))),
        Some(ResultFormat::CyclictestJson) => cyclictest_json::import(file, text).map(|r| Loaded::Timer(Box::new(r))),
        Some(ResultFormat::OslatJson) => oslat_json::import(file, text).map(|r| Loaded::Noise(Box::new(r))),
        Some(ResultFormat::OslatText) => oslat_text::import(file, text).map(|r| Loaded::Noise(Box::new(r))),
        None => Err(file_error(
            file,
            "not a format latscope reads: expected a latscope JSON result, cyclictest -h/--histfile or --json \
             output, or oslat text or --json output",
        )),
    }
}

/// A JSON error at `file:line`, with the column once (serde's own text ends "at line L column C").
fn json_error(file: &str, e: &serde_json::Error) -> DecodeError {
    let text = e.to_string();
    let what = match text.rfind(" at line ") {
        Some(at) => &text[..at],
        None => &text,
    };
    line_error(file, e.line(), format!("{what} (column {})", e.column()))
}

/// Why a result of another schema is not read: a newer latscope wrote it (upgrade), or an older or unknown
/// one did (re-run the measurement with this latscope).
fn schema_mismatch(schema: &str) -> String {
    let ours = latscope_model::wire::SCHEMA;
    let version = |s: &str| s.strip_prefix("latscope/").and_then(|v| v.parse::<u32>().ok());
    match (version(schema), version(ours)) {
        (Some(theirs), Some(mine)) if theirs > mine => format!(
            "schema '{schema}' was written by a newer latscope than this one (which reads '{ours}'); upgrade latscope \
             to read it"
        ),
        _ => format!("schema '{schema}' is not '{ours}'; measure again with this latscope to get a result it reads"),
    }
}

fn load_latscope(file: &str, text: &str) -> Result<Loaded, DecodeError> {
    let env: Envelope = serde_json::from_str(text).map_err(|e| json_error(file, &e))?;
    if env.schema != latscope_model::wire::SCHEMA {
        return Err(file_error(file, schema_mismatch(&env.schema)));
    }
    Ok(match env.kind {
        ResultKind::Timer => Loaded::Timer(Box::new(serde_json::from_str(text).map_err(|e| json_error(file, &e))?)),
        ResultKind::Noise => Loaded::Noise(Box::new(serde_json::from_str(text).map_err(|e| json_error(file, &e))?)),
        ResultKind::Audit => Loaded::Audit(Box::new(serde_json::from_str(text).map_err(|e| json_error(file, &e))?)),
        kind => Loaded::Other(kind, Box::new(serde_json::from_str(text).map_err(|e| json_error(file, &e))?)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_formats_by_content() {
        assert_eq!(detect("{\"schema\": \"latscope/1\", \"kind\": \"timer\"}"), Some(ResultFormat::Latscope));
        assert_eq!(
            detect("{\"file_version\": 1, \"cmdline:\": \"cyclictest -m\"}"),
            Some(ResultFormat::CyclictestJson)
        );
        assert_eq!(
            detect("{\"file_version\": 1, \"cmdline:\": \"/usr/bin/oslat -D 2s\"}"),
            Some(ResultFormat::OslatJson)
        );
        assert_eq!(detect("# Histogram\n000000 000000\n"), Some(ResultFormat::CyclictestHist));
        assert_eq!(detect("        Core:\t 0 1\n    001 (us):\t 5 6\n"), Some(ResultFormat::OslatText));
        assert_eq!(detect("hello"), None);
    }

    #[test]
    fn unknown_file_says_what_is_accepted() {
        let e = load("notes.txt", "hello").expect_err("must fail");
        assert!(e.to_string().starts_with("notes.txt: not a format"), "{e}");
        assert!(e.to_string().contains("cyclictest"), "{e}");
    }

    #[test]
    fn bad_latscope_json_names_file_and_line() {
        let e =
            load("r.json", "{\"schema\": \"latscope/1\",\n \"kind\": \"timer\",\n \"metadata\": 5}").expect_err("bad");
        assert!(matches!(&e, DecodeError::Import { file, line: Some(3), .. } if file == "r.json"), "{e}");
        assert!(e.to_string().starts_with("r.json:3: "), "{e}");
    }
}
