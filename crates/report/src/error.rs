//! The one error a report can fail with: an export it cannot read, said in
//! one line that names what was wrong.

use std::fmt;

/// Why an export could not be turned into a report; `Display` is one line
/// naming what was wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportError {
    message: String,
}

impl ReportError {
    pub(crate) fn new(message: impl Into<String>) -> ReportError {
        let message: String = message.into();
        // One line whatever the cause carried.
        let message = message.split_whitespace().collect::<Vec<_>>().join(" ");
        ReportError { message }
    }

    /// The message, one line.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for ReportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ReportError {}
