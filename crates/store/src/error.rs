//! The archive's one error type: a message for the user, and whether the
//! cause was a lost database or a usage mistake (exit 2). It holds no
//! database logic.

use std::fmt;

/// A failure of the archive, as one line for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreError {
    pub message: String,
    /// The database went away (PostgreSQL connection lost).
    pub connection_lost: bool,
    /// The user named an archive that cannot be (a missing directory, a
    /// reader's missing archive, a malformed --db): a usage error, exit 2.
    pub usage: bool,
}

impl StoreError {
    pub(crate) fn new(message: impl Into<String>) -> StoreError {
        StoreError {
            message: message.into(),
            connection_lost: false,
            usage: false,
        }
    }
    pub(crate) fn lost(message: impl Into<String>) -> StoreError {
        StoreError {
            connection_lost: true,
            ..StoreError::new(message)
        }
    }
    pub(crate) fn usage(message: impl Into<String>) -> StoreError {
        StoreError {
            usage: true,
            ..StoreError::new(message)
        }
    }
    pub(crate) fn context(self, what: &str) -> StoreError {
        StoreError {
            message: format!("{what}: {}", self.message),
            ..self
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}
