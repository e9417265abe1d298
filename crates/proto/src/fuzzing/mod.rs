//! Fuzz harnesses: one function per fuzz target, each taking arbitrary bytes
//! and asserting the protocol's invariants (never a panic, no decoded frame
//! over its limit, both ends of a session agreeing on its phase). They live
//! here, not in `fuzz/`, so that libFuzzer (nightly, `fuzz/fuzz_targets`) and
//! the corpus replay test (stable, `tests/fuzz_corpus.rs`) run the same code.
//! Not an API: hidden from the docs and free to change.

mod authtoken;
mod checks;
mod control;
mod iperf3;
mod rr;
mod seeds;

pub use authtoken::iperf3_authtoken;
pub use control::{control_codec, session};
pub use iperf3::iperf3_codec;
pub use rr::rr_codec;
pub use seeds::{seeds, Seed};

/// A harness: arbitrary bytes in, a panic when an invariant breaks.
pub type Harness = fn(&[u8]);

/// Every fuzz target: its name (the directory of its corpus under
/// `fuzz/corpus/`) and its harness.
pub const TARGETS: [(&str, Harness); 5] = [
    ("control_codec", control_codec),
    ("session", session),
    ("rr_codec", rr_codec),
    ("iperf3_codec", iperf3_codec),
    ("iperf3_authtoken", iperf3_authtoken),
];
