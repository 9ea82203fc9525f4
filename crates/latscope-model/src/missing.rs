//! [`MissingFeature`]: something a run could not use (root, tracefs, an event, a tracer), why, and the fix.

use serde::{Deserialize, Serialize};

/// A capability the run went without. Missing features are data: the run continues and the renderers
/// say what was lost and what would enable it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MissingFeature {
    /// What is missing (`"event nmi/nmi_handler"`, `"tracefs"`, `"trace clock mono"`).
    pub what: String,
    /// Why it is missing (`"not in this kernel's tracefs"`, `"permission denied"`).
    pub why: String,
    /// What would enable it: a kernel option (`CONFIG_…`), a permission, a command.
    pub enable: String,
}

impl MissingFeature {
    /// A missing feature from its three parts.
    pub fn new(what: impl Into<String>, why: impl Into<String>, enable: impl Into<String>) -> MissingFeature {
        MissingFeature { what: what.into(), why: why.into(), enable: enable.into() }
    }
}

impl std::fmt::Display for MissingFeature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.what, self.why)?;
        if !self.enable.is_empty() {
            write!(f, " (to enable: {})", self.enable)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_the_fix() {
        let m = MissingFeature::new("event nmi/nmi_handler", "not in this kernel", "CONFIG_X86");
        assert_eq!(m.to_string(), "event nmi/nmi_handler: not in this kernel (to enable: CONFIG_X86)");
        let json = serde_json::to_string(&m).expect("json");
        assert!(json.contains("\"enable\":\"CONFIG_X86\""));
    }
}
