//! The versioned JSON envelope every saved result uses (`"schema": "latscope/1"`).

use serde::{Deserialize, Serialize};

/// The schema identifier written into every JSON result.
pub const SCHEMA: &str = "latscope/1";

/// Which kind of result a JSON document holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultKind {
    /// `latscope timer`
    Timer,
    /// `latscope noise`
    Noise,
    /// `latscope analyze`
    Analysis,
    /// `latscope audit`
    Audit,
    /// `latscope run`
    Run,
    /// `latscope record --json`: what a recording holds
    Record,
    /// `latscope hwlat`
    Hwlat,
}

/// Reads only the envelope of a JSON result, to dispatch on its kind.
#[derive(Clone, Debug, Deserialize)]
pub struct Envelope {
    /// Must be [`SCHEMA`].
    pub schema: String,
    /// The result kind.
    pub kind: ResultKind,
}
