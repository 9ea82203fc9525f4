//! latscope's renderers: text tables, live table, JSON (HTML, SVG plots and Perfetto come next).

pub mod json;
pub mod live;
pub mod text;
