//! latscope's renderers: text tables, JSON, HTML with SVG plots, Perfetto trace JSON, run comparison,
//! Prometheus exposition.

#![forbid(unsafe_code)]

pub mod compare;
pub mod decode_stats;
pub mod events;
pub mod fix_script;
pub mod ftrace_text;
pub mod html;
pub mod human;
pub mod json;
pub mod live;
pub mod pages;
pub mod perfetto;
pub mod plot;
pub mod prometheus;
pub mod sentences;
pub mod slices;
pub mod text;
