//! Lenient readers of the JSON numbers and flags iperf3 writes (a flag may be
//! `true` or a number; -1 may come through an unsigned path). Knows no keys.

use serde_json::Value;

pub(super) fn uint(v: &Value) -> u64 {
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
        .unwrap_or(0)
}

/// iperf3 marks flags either `true` or a number (non-zero is set).
pub(super) fn flag(v: &Value) -> bool {
    v.as_bool().unwrap_or_else(|| uint(v) != 0)
}

/// iperf3 writes -1 through an unsigned path: accept it as any huge number too.
pub(super) fn signed(v: &Value) -> i64 {
    match v.as_i64() {
        Some(n) => n,
        None => match v.as_f64() {
            Some(f) if f >= 9.2e18 => -1,
            Some(f) => f as i64,
            None => -1,
        },
    }
}
