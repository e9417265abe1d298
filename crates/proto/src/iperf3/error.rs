//! Why a peer's control bytes could not be read as iperf3. Shared by the
//! decoder and the parameter and results readers; depends on none of them.

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DecodeError {
    BadCookie,
    UnknownState(u8),
    TooLong(usize),
    BadJson(String),
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DecodeError::BadCookie => write!(f, "not an iperf3 cookie"),
            DecodeError::UnknownState(b) => write!(f, "unknown iperf3 state {}", *b as i8),
            DecodeError::TooLong(n) => write!(f, "iperf3 JSON of {n} bytes is too long"),
            DecodeError::BadJson(e) => write!(f, "bad iperf3 JSON: {e}"),
        }
    }
}

impl std::error::Error for DecodeError {}
