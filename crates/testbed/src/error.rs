//! The one error type of the testbed crate. `Display` is a single line meant for people.

use thiserror::Error;

/// What went wrong, sorted by whose fault it is so the CLI can pick an exit code.
#[derive(Debug, Error)]
pub enum TestbedError {
    /// Bad usage or a bad topology file: the user can fix it by changing input (exit 2).
    #[error("{0}")]
    BadInput(String),
    /// Missing privileges (exit 1: the input was fine, the environment was not).
    #[error("{0}")]
    Permission(String),
    /// Something failed while building, running or tearing down a testbed (exit 1).
    #[error("{0}")]
    Runtime(String),
}

impl TestbedError {
    /// Exit code for the CLI: 2 for bad usage or a bad file, 1 for a runtime failure.
    pub fn exit_code(&self) -> i32 {
        match self {
            TestbedError::BadInput(_) => 2,
            TestbedError::Permission(_) | TestbedError::Runtime(_) => 1,
        }
    }

    pub(crate) fn bad(msg: impl Into<String>) -> Self {
        TestbedError::BadInput(one_line(msg.into()))
    }

    pub(crate) fn runtime(msg: impl Into<String>) -> Self {
        TestbedError::Runtime(one_line(msg.into()))
    }
}

/// Collapses multi-line messages (from `ip`, toml, io) so every error stays on one line.
pub(crate) fn one_line(msg: String) -> String {
    if !msg.contains('\n') {
        return msg;
    }
    msg.split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_are_one_line_and_codes_follow_the_kind() {
        let e = TestbedError::bad("first\n  second\n");
        assert_eq!(e.to_string(), "first; second");
        assert_eq!(e.exit_code(), 2);
        assert_eq!(TestbedError::runtime("x").exit_code(), 1);
    }
}
