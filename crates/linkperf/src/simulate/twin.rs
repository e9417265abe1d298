//! The ns-3 twin of a measured test (`--simulate` on sweeps and campaigns,
//! docs/simulate.md): the [`SimSpec`] a [`TestSpec`] between two testbed
//! hosts becomes (what the scenario cannot model is refused by name), and the
//! route through the topology with a point's link changes applied.

use super::path::{self, Route};
use super::spec::{SimError, SimSpec};
use crate::spec::TestSpec;
use linkperf_proto::{Direction, Protocol};
use linkperf_testbed::schedule::LinkChange;
use linkperf_testbed::Topology;
use std::path::Path;

/// Sample period of a twin whose measurement does not sample: fine enough
/// for the cwnd plot, cheap to simulate.
const DEFAULT_SAMPLE_S: f64 = 0.01;

/// The first option of `test` the scenario does not model, as the user
/// would name it.
fn unmodelled(test: &TestSpec) -> Option<&'static str> {
    [
        (test.protocol != Protocol::Tcp, "-u (UDP)"),
        (test.direction == Direction::Bidir, "--bidir"),
        (test.bitrate.is_some_and(|b| b > 0), "-b (a paced sender)"),
        (test.pacing_rate.is_some(), "--pacing-rate"),
        (test.traffic.is_some(), "--traffic"),
        (test.bytes.is_some(), "-n (a byte count)"),
        (test.mptcp, "-m (MPTCP)"),
        (test.mss.is_some(), "-M (MSS)"),
        (
            test.sndbuf.is_some() || test.rcvbuf.is_some(),
            "--sndbuf/--rcvbuf",
        ),
    ]
    .into_iter()
    .find(|(set, _)| *set)
    .map(|(_, name)| name)
}

/// The simulation of `test` from host `from` to host `to` of `testbed`
/// (`-R` turns the data around as the measurement does).
pub fn sim_spec(
    test: &TestSpec,
    testbed: &Path,
    from: &str,
    to: &str,
) -> Result<SimSpec, SimError> {
    if let Some(option) = unmodelled(test) {
        return Err(SimError::usage(format!(
            "{option} has no ns-3 twin (the scenario simulates bulk TCP: -t, -i, -P, -C, -w, --window-clamp, -R, --sample)"
        )));
    }
    if let Some(cc) = &test.congestion {
        super::ns3_model(cc, false)?;
    }
    let window = |v: Option<u32>| v.map(u64::from);
    Ok(SimSpec {
        testbed: testbed.to_path_buf(),
        ends: Some((from.to_string(), to.to_string())),
        reverse: test.direction == Direction::Reverse,
        duration_s: test.time,
        interval_s: test.interval,
        sample_s: test.sample.unwrap_or(DEFAULT_SAMPLE_S).min(test.time),
        congestion: test.congestion.clone(),
        streams: test.parallel,
        window: window(test.window),
        window_clamp: window(test.window_clamp),
        cwnd_clamp: None,
    })
}

/// `topology` with `changes` (a point's `link.*` values) in force.
pub fn with_changes(topology: &Topology, changes: &[LinkChange]) -> Topology {
    let mut changed = topology.clone();
    for c in changes {
        let Some(link) = changed.links.get_mut(c.link) else {
            continue;
        };
        if let Some(p) = c.apply(0, &link.a_to_b) {
            link.a_to_b = p;
        }
        if let Some(p) = c.apply(1, &link.b_to_a) {
            link.b_to_a = p;
        }
        if let Some(mtu) = c.mtu {
            link.mtu = mtu;
        }
    }
    changed
}

/// The route `spec` simulates through `topology`.
pub fn route(spec: &SimSpec, topology: &Topology) -> Result<Route, SimError> {
    let (from, to) = spec
        .ends
        .clone()
        .ok_or_else(|| SimError::usage("a twin names its hosts"))?;
    if spec.reverse {
        path::route(topology, &to, &from)
    } else {
        path::route(topology, &from, &to)
    }
}

/// Runs the twin of `spec` through `topology` and marks the document with
/// what it twins (`twin`: e.g. the sweep and point, or the campaign flow).
pub fn run(
    spec: &SimSpec,
    topology: &Topology,
    twin: serde_json::Value,
) -> Result<serde_json::Value, SimError> {
    let route = route(spec, topology)?;
    let mut doc = super::run_route(spec, &route)?;
    if let Some(obj) = doc.as_object_mut() {
        obj.insert("twin".into(), twin);
    }
    Ok(doc)
}
