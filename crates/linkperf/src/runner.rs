//! One throughput test against whichever server its [`TestSpec`] names: a
//! linkperf server through [`crate::client`], a stock iperf3 server through
//! [`crate::iperf3::client`]. Both give the same [`Report`].

use crate::client::{self, ClientError, ClientOptions};
use crate::report::{IntervalReport, Report};
use crate::spec::{Peer, TestSpec};
use std::sync::atomic::AtomicBool;

/// Runs `spec` (validate it first), calling `on_interval` as intervals end;
/// `interrupt` set ends the test early with a partial report.
pub fn run_test(
    spec: &TestSpec,
    on_interval: &mut dyn FnMut(&IntervalReport),
    interrupt: Option<&AtomicBool>,
) -> Result<Report, ClientError> {
    let options = ClientOptions::from_spec(spec);
    match spec.peer {
        Peer::Iperf3 => crate::iperf3::client::run(&options, on_interval, interrupt),
        Peer::Linkperf => client::run(&options, on_interval, interrupt),
    }
}
