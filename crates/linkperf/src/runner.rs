//! One throughput test against whichever server its [`TestSpec`] names: a
//! linkperf server through [`crate::client`], a stock iperf3 server through
//! [`crate::iperf3::client`]. Both give the same [`Report`]. A test that
//! crosses an emulated testbed also gets the emulator's account of its links
//! over the test, and a warning where the emulator fell behind. A test with a
//! described path (`--path`, or the testbed it runs in) gets the model's
//! prediction beside each direction's measurement (docs/model.md).

use crate::client::{self, ClientError, ClientOptions};
use crate::model::{self, describe, ModelError, Path};
use crate::report::{DirectionSummary, IntervalReport, Report, TestbedTiming};
use crate::spec::{Peer, TestSpec};
use linkperf_testbed::status::DirectionStatus;
use linkperf_testbed::Testbed;
use std::collections::BTreeMap;
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
        predict_into(spec, report);
        link_reference_into(spec, report);
    }
    result
}

/// Puts the model's prediction beside each direction's measurement when the
/// path is described; a description the model refuses becomes a warning.
fn predict_into(spec: &TestSpec, report: &mut Report) {
    let config = report.test.config.clone();
    let (client, server) = (report.start.local.clone(), report.start.remote.clone());
    let mut one = |summary: &mut DirectionSummary, client_sends: bool| {
        let Some(path) = described_path(spec, client_sends) else {
            return;
        };
        let predicted = path.and_then(|path| {
            let flow = describe::flow_of(&config)?;
            model::predict(&path, &flow, &model::host::local())
        });
        match predicted {
            Ok(p) => {
                summary.measured_over_predicted = Some(summary.received.bits_per_second / p.value);
                summary.prediction = Some(p);
                let (sender, receiver) = if client_sends {
                    (&client, &server)
                } else {
                    (&server, &client)
                };
                crate::diagnose::against_prediction(summary, sender, receiver);
            }
            // Only a path the user described is worth a warning; a testbed's
            // path may just not bound this flow (an unlimited link).
            Err(e) if spec.path.is_some() => report.warnings.push(format!("prediction: {e}")),
            Err(_) => {}
        }
    };
    let forward = config.direction.client_sends();
    one(&mut report.summary, forward);
    if let Some(reverse) = report.summary_reverse.as_mut() {
        one(reverse, false);
    }
}

/// With `--sample`, the convergence metrics refer "90 %" to the payload rate
/// of the bottleneck link the data crossed when the path is described (the
/// testbed's live links, `--path`), rather than to the best window measured.
fn link_reference_into(spec: &TestSpec, report: &mut Report) {
    let Some(period) = report.test.config.sample_s.filter(|p| *p > 0.0) else {
        return;
    };
    let one = |summary: &mut DirectionSummary, client_sends: bool| {
        if let Some(Ok(path)) = described_path(spec, client_sends) {
            if let Some(rate) = path.payload_rate_bps() {
                summary.dynamics_against_link(period, rate);
            }
        }
    };
    let forward = report.test.config.direction.client_sends();
    one(&mut report.summary, forward);
    if let Some(reverse) = report.summary_reverse.as_mut() {
        one(reverse, false);
    }
}

/// What `client --doctor` examines this host against: the rate and round
/// trip of the path the test's data will cross (`--path`, the testbed's
/// path), else the test's own rate (`-b`) over the `--path` round trip.
pub fn doctor_target(spec: &TestSpec) -> Result<crate::doctor::Target, String> {
    let missing = "--doctor: the path is not known: give --path rate=RATE,rtt=DURATION (or run the client inside a testbed)";
    let forward = spec.config().direction.client_sends();
    let path = match described_path(spec, forward) {
        Some(p) => p.map_err(|e| format!("--doctor: {e}"))?,
        None => return Err(missing.into()),
    };
    let config = spec.config();
    let offered = config
        .stream_rate()
        .map(|r| r as f64 * f64::from(config.parallel.max(1)));
    let rate = path.rate_bps.or(offered).ok_or(missing)?;
    crate::doctor::Target::new(rate, path.rtt_s, Some(u64::from(path.mtu)))
        .map_err(|e| format!("--doctor: {e}"))
}

/// The path the test's data crossed, in the direction it went: the testbed's
/// links (when run in one) with `--path` keys over them; None when neither.
fn described_path(spec: &TestSpec, client_sends: bool) -> Option<Result<Path, ModelError>> {
    let testbed = spec
        .testbed
        .as_deref()
        .and_then(|n| Testbed::attach(n).ok());
    if spec.path.is_none() && testbed.is_none() {
        return None;
    }
    let mut path = match &testbed {
        Some(t) => match testbed_path(t, &spec.host, client_sends) {
            Ok(p) => p,
            Err(e) => return Some(Err(e)),
        },
        None => Path::default(),
    };
    if let Some(text) = &spec.path {
        if let Err(e) = describe::apply_path_text(&mut path, text) {
            return Some(Err(e));
        }
    }
    Some(Ok(path))
}

/// Between this host (`LINKPERF_TESTBED_HOST`, set by `testbed exec`, else the
/// other of two hosts) and the server's host (found by its address).
fn testbed_path(t: &Testbed, server: &str, client_sends: bool) -> Result<Path, ModelError> {
    let live = live_topology(t);
    let topology = &live;
    let far = model::testbed::host_by_address(topology, server).ok_or_else(|| {
        ModelError(format!(
            "the server {server} is no host of testbed {}: describe the path with --path",
            t.name()
        ))
    })?;
    let near = std::env::var("LINKPERF_TESTBED_HOST")
        .ok()
        .filter(|h| topology.host(h).is_some())
        .or_else(|| match topology.hosts.as_slice() {
            [a, b] => Some(if a.name == far { &b.name } else { &a.name }.clone()),
            _ => None,
        })
        .ok_or_else(|| ModelError("which testbed host runs this client is not known (LINKPERF_TESTBED_HOST): describe the path with --path".into()))?;
    if client_sends {
        model::testbed::host_path(topology, &near, far)
    } else {
        model::testbed::host_path(topology, far, &near)
    }
}

/// The testbed's topology with each link direction's parameters in force
/// (after `testbed set`, a sweep's `link.*` point or a schedule step): the
/// plan holds the values the testbed was built with.
pub fn live_topology(t: &Testbed) -> linkperf_testbed::Topology {
    let mut topology = t.topology().clone();
    for status in t.link_status().unwrap_or_default() {
        let Some(link) = topology.links.get_mut(status.link) else {
            continue;
        };
        link.mtu = status.mtu;
        if status.direction == "b_to_a" {
            link.b_to_a = status.params;
        } else {
            link.a_to_b = status.params;
        }
    }
    topology
}

/// The testbed's link status when a test began.
struct LinkWatch {
    testbed: Testbed,
    before: Vec<DirectionStatus>,
    interface_drops: BTreeMap<String, u64>,
}

impl LinkWatch {
    /// None if the testbed is not up (a test outside one, or one torn down):
    /// the result then says nothing about it.
    fn start(name: &str) -> Option<LinkWatch> {
        let testbed = Testbed::attach(name).ok()?;
        let before = testbed.link_status().ok()?;
        let interface_drops = testbed.interface_drops().unwrap_or_default();
        Some(LinkWatch {
            testbed,
            before,
            interface_drops,
        })
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
        let mut interface_drops = self.testbed.interface_drops().unwrap_or_default();
        for (host, n) in interface_drops.iter_mut() {
            *n = n.saturating_sub(self.interface_drops.get(host).copied().unwrap_or(0));
        }
        report.testbed = Some(TestbedTiming {
            name: self.testbed.name().to_string(),
            links: links.iter().map(|d| d.timing_report()).collect(),
            interface_drops,
        });
    }
}
