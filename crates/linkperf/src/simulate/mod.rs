//! `linkperf simulate`: the ns-3 twin of a test through a testbed path, or of
//! tests run together through one testbed (docs/simulate.md). Owns the
//! mapping from a topology's paths and test specs to the scenario program's
//! network and flow groups ([`path`], [`network`]), finding ns-3 and
//! building the scenario once into a cache ([`ns3`]), a link schedule's
//! steps on that path ([`schedule`]), and turning its JSON
//! lines into a result in linkperf's schema, `"source": "ns-3 <version>"`
//! ([`result`]). Convergence metrics come from [`crate::dynamics`], the same
//! code as for measurements.

pub mod network;
pub mod ns3;
pub mod path;
pub mod result;
pub mod schedule;
pub mod spec;
pub mod twin;

pub use spec::{SimError, SimSpec};

/// Kernel congestion control names and ns-3's TCP models for them: the model
/// of a run without a congestion window clamp, and of one with it. They
/// differ for reno only. Linux's reno grows by one segment per window of
/// acknowledged *segments*; `TcpNewReno` by one per window of *ACKs*, half as
/// fast with delayed ACKs (a reno recovery took 4.64 s in ns-3 where Linux
/// took 2.3 s). `TcpLinuxReno` grows as Linux does, but its slow start
/// (doubling per round trip, as Linux's) overshoots a path into losses whose
/// retransmissions are lost again, which Linux's RACK repairs within the
/// recovery and ns-3 (no RACK) only with a second halving: it simulated the
/// 80 Mbit/s, 60 ms, half-BDP-queue truth path at 56 Mbit/s against 63-71
/// measured, `TcpNewReno` at 70. A clamped window cannot overshoot, so there
/// `TcpLinuxReno` is Linux's reno (docs/simulate.md).
pub const CONGESTION: &[(&str, &str, &str)] = &[
    ("reno", "ns3::TcpNewReno", "ns3::TcpLinuxReno"),
    ("cubic", "ns3::TcpCubic", "ns3::TcpCubic"),
    ("bic", "ns3::TcpBic", "ns3::TcpBic"),
    ("bbr", "ns3::TcpBbr", "ns3::TcpBbr"),
];

/// ns-3's model for a kernel congestion control name, in a run with or
/// without a congestion window clamp.
pub fn ns3_model(name: &str, clamped: bool) -> Result<&'static str, SimError> {
    CONGESTION
        .iter()
        .find(|(k, _, _)| *k == name)
        .map(|&(_, free, clamp)| if clamped { clamp } else { free })
        .ok_or_else(|| {
            let names: Vec<&str> = CONGESTION.iter().map(|(k, _, _)| *k).collect();
            SimError::usage(format!(
                "congestion control '{name}' has no ns-3 model (accepted: {})",
                names.join(", ")
            ))
        })
}

/// This host's default congestion control (what a measurement would use).
fn host_congestion() -> String {
    std::fs::read_to_string("/proc/sys/net/ipv4/tcp_congestion_control")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "cubic".into())
}

fn check(spec: &SimSpec) -> Result<(), SimError> {
    if !(spec.duration_s > 0.0 && spec.duration_s <= 3600.0) {
        return Err(SimError::usage(format!(
            "duration {} s: a simulation runs 0 < t <= 3600 s",
            spec.duration_s
        )));
    }
    if spec.streams == 0 || spec.streams > 128 {
        return Err(SimError::usage(format!(
            "{} streams: -P accepts 1 to 128",
            spec.streams
        )));
    }
    if !(spec.sample_s >= 0.001 && spec.sample_s <= spec.duration_s) {
        return Err(SimError::usage(format!(
            "sample period {} s: at least 1 ms and at most the test's length",
            spec.sample_s
        )));
    }
    if spec.interval_s.is_nan() || spec.interval_s <= 0.0 {
        return Err(SimError::usage("the interval must be above 0 s"));
    }
    Ok(())
}

/// Runs the simulation and returns its result document (schema `linkperf/1`).
/// The topology's `[schedule]`, if any, applies from the test's start.
pub fn run(spec: &SimSpec) -> Result<serde_json::Value, SimError> {
    run_with_schedule(spec, None)
}

/// As [`run`], with the link schedule of `schedule_file` (a file as
/// `testbed set --schedule` takes, times from the test's start) in place of
/// the topology's own.
pub fn run_with_schedule(
    spec: &SimSpec,
    schedule_file: Option<&std::path::Path>,
) -> Result<serde_json::Value, SimError> {
    check(spec)?;
    let (topology, route) = path::load(&spec.testbed, spec.ends.as_ref(), spec.reverse)?;
    let from_file = schedule_file
        .map(|f| linkperf_testbed::topology::schedule_from_file(f, &topology))
        .transpose()
        .map_err(|e| SimError::usage(e.to_string()))?;
    let steps = match from_file.as_ref().or(topology.schedule.as_ref()) {
        Some(s) => schedule::link_steps(&topology, &route, s, spec.duration_s)?,
        None => Vec::new(),
    };
    simulate_route(spec, &route, &steps)
}

/// Runs the simulation of `spec` along `route` (a path already taken from a
/// topology, e.g. one with a sweep point's link values: see [`twin`]), without
/// a link schedule.
pub fn run_route(spec: &SimSpec, route: &path::Route) -> Result<serde_json::Value, SimError> {
    check(spec)?;
    simulate_route(spec, route, &[])
}

/// The tests of `twins` (each a spec and its route through `topology`) run
/// together, sharing the links their paths have in common, as a campaign's
/// flows of one phase do; one result document per test, in order. They are
/// reported at the first one's interval and sampled at the finest period
/// any asks for.
pub fn run_together(
    twins: &[(SimSpec, path::Route)],
    topology: &linkperf_testbed::Topology,
) -> Result<Vec<serde_json::Value>, SimError> {
    let Some((first, _)) = twins.first() else {
        return Ok(Vec::new());
    };
    let sample_s = twins
        .iter()
        .map(|(s, _)| s.sample_s)
        .fold(f64::MAX, f64::min);
    let mut twins = twins.to_vec();
    for (spec, _) in &mut twins {
        (spec.sample_s, spec.interval_s) = (sample_s, first.interval_s);
        check(spec)?;
    }
    let routes: Vec<&path::Route> = twins.iter().map(|(_, r)| r).collect();
    let (network, ends) = network::Network::of_routes(topology, &routes);
    let groups = twins
        .iter()
        .zip(&ends)
        .map(|((spec, route), &(src, dst))| group(spec, route, src, dst))
        .collect::<Result<Vec<_>, _>>()?;
    let run = Scenario {
        network: &network,
        groups: &groups,
        duration_s: twins.iter().map(|(s, _)| s.duration_s).fold(0.0, f64::max),
        interval_s: first.interval_s,
        sample_s,
        steps: &[],
    };
    let (lines, version) = run.run()?;
    let mut docs = Vec::new();
    for ((spec, route), (group, lines)) in twins.iter().zip(groups.iter().zip(&lines)) {
        let mut doc = document(spec, route, group, lines, &version)?;
        doc["simulation"]["flows_together"] = twins.len().into();
        docs.push(doc);
    }
    Ok(docs)
}

/// A test's flow group between nodes `src` and `dst`, and the congestion
/// control it names.
fn group(
    spec: &SimSpec,
    route: &path::Route,
    src: usize,
    dst: usize,
) -> Result<(network::Group, String), SimError> {
    let congestion = spec.congestion.clone().unwrap_or_else(host_congestion);
    let (rcvbuf, sndbuf) = path::buffers(spec);
    // `--cwnd-clamp`, or else the sending host's `cwnd_clamp` in the topology.
    let cwnd_clamp = spec.cwnd_clamp.or(route.cwnd_clamp);
    let group = network::Group {
        src,
        dst,
        streams: spec.streams,
        model: ns3_model(&congestion, cwnd_clamp.is_some())?,
        cwnd_clamp: cwnd_clamp.unwrap_or(0),
        rcvbuf,
        sndbuf,
        segment: route.segment(),
        stop_s: spec.duration_s,
    };
    Ok((group, congestion))
}

/// One run of the scenario program: a network, its flow groups, the
/// reporting periods and a link schedule's steps.
struct Scenario<'a> {
    network: &'a network::Network,
    groups: &'a [(network::Group, String)],
    duration_s: f64,
    interval_s: f64,
    sample_s: f64,
    steps: &'a [schedule::LinkStep],
}

impl Scenario<'_> {
    /// Builds the program (once) and runs it; each group's output lines and
    /// ns-3's version.
    fn run(&self) -> Result<(Vec<Vec<serde_json::Value>>, String), SimError> {
        let install = ns3::Install::find()?;
        let program = install.scenario()?;
        let groups = self.groups.iter().map(|(g, _)| g);
        let mut args = vec![
            format!("--nodes={}", self.network.nodes.len()),
            format!("--links={}", self.network.links_arg()),
            format!("--flows={}", network::flows_arg(groups)),
            format!("--duration={}", self.duration_s),
            format!("--interval={}", self.interval_s),
            format!("--sample={}", self.sample_s),
        ];
        // ns-3's command line refuses an empty value.
        if !self.steps.is_empty() {
            args.push(format!("--steps={}", schedule::steps_arg(self.steps)));
        }
        let lines = ns3::run_scenario(&program, &args)?;
        let by_group = result::split_groups(&lines, self.groups.len())?;
        Ok((by_group, format!("ns-3 {}", install.version)))
    }
}

/// The result document of one test from its group's output lines.
fn document(
    spec: &SimSpec,
    route: &path::Route,
    (group, congestion): &(network::Group, String),
    lines: &[serde_json::Value],
    source: &str,
) -> Result<serde_json::Value, SimError> {
    let parsed = result::parse_lines(lines, group.segment)?;
    Ok(result::document(
        &result::Context {
            spec,
            congestion,
            model: group.model,
            route,
            source: source.to_string(),
            rcvbuf: group.rcvbuf,
        },
        &parsed,
    ))
}

/// Runs the simulation of `spec` alone along `route` with `steps`.
fn simulate_route(
    spec: &SimSpec,
    route: &path::Route,
    steps: &[schedule::LinkStep],
) -> Result<serde_json::Value, SimError> {
    let network = network::Network::chain(route);
    let groups = [group(spec, route, 0, route.hops.len())?];
    let run = Scenario {
        network: &network,
        groups: &groups,
        duration_s: spec.duration_s,
        interval_s: spec.interval_s,
        sample_s: spec.sample_s,
        steps,
    };
    let (lines, version) = run.run()?;
    let mut doc = document(spec, route, &groups[0], &lines[0], &version)?;
    doc["simulation"]["schedule"] = result::steps_json(steps);
    doc["simulation"]["flows_together"] = 1.into();
    Ok(doc)
}
