//! One throughput test against whichever server its [`TestSpec`] names: a
//! linkperf server through [`crate::client`], a stock iperf3 server through
//! [`crate::iperf3::client`]. Both give the same [`Report`]. A test that
//! crosses an emulated testbed also gets the emulator's account of its links
//! over the test, and a warning where the emulator fell behind.

use crate::client::{self, ClientError, ClientOptions};
use crate::report::{IntervalReport, Report, TestbedTiming};
use crate::spec::{Peer, TestSpec};
use linkperf_testbed::status::DirectionStatus;
use linkperf_testbed::Testbed;
use std::sync::atomic::AtomicBool;

/// Runs `spec` (validate it first), calling `on_interval` as intervals end;
/// `interrupt` set ends the test early with a partial report.
pub fn run_test(
    spec: &TestSpec,
    on_interval: &mut dyn FnMut(&IntervalReport),
    interrupt: Option<&AtomicBool>,
) -> Result<Report, ClientError> {
    let options = ClientOptions::from_spec(spec);
    let watch = spec.testbed.as_deref().and_then(LinkWatch::start);
    let mut result = match spec.peer {
        Peer::Iperf3 => crate::iperf3::client::run(&options, on_interval, interrupt),
        Peer::Linkperf => client::run(&options, on_interval, interrupt),
    };
    if let (Some(watch), Ok(report)) = (watch, result.as_mut()) {
        watch.finish(report);
    }
    if let Ok(report) = result.as_mut() {
        report.extra_data.clone_from(&spec.extra_data);
    }
    result
}

/// The testbed's link status when a test began.
struct LinkWatch {
    testbed: Testbed,
    before: Vec<DirectionStatus>,
}

impl LinkWatch {
    /// None if the testbed is not up (a test outside one, or one torn down):
    /// the result then says nothing about it.
    fn start(name: &str) -> Option<LinkWatch> {
        let testbed = Testbed::attach(name).ok()?;
        let before = testbed.link_status().ok()?;
        Some(LinkWatch { testbed, before })
    }

    /// Puts each link direction's timing over the test into `report`, and a
    /// warning per direction where more than 0.1 % of packets left late.
    fn finish(self, report: &mut Report) {
        let Ok(after) = self.testbed.link_status() else {
            return;
        };
        let links = after
            .iter()
            .filter_map(|a| {
                let b = self
                    .before
                    .iter()
                    .find(|b| b.link == a.link && b.direction == a.direction)?;
                Some(a.since(b))
            })
            .collect::<Vec<_>>();
        report.warnings.extend(
            links
                .iter()
                .flat_map(|d| [d.warning(), d.processing_note()])
                .flatten()
                .map(|w| format!("testbed: {w}")),
        );
        report.testbed = Some(TestbedTiming {
            name: self.testbed.name().to_string(),
            links: links.iter().map(|d| d.timing_report()).collect(),
        });
    }
}
