//! Fuzz target: linkperf_proto::fuzzing::iperf3_authtoken (the harness and its checks
//! live in proto, where the stable corpus replay test runs them too).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| linkperf_proto::fuzzing::iperf3_authtoken(data));
