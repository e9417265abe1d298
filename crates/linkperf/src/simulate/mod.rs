//! `linkperf simulate`: the ns-3 twin of a test through a testbed path
//! (docs/simulate.md). Owns the mapping from a topology's path and a test
//! spec to the scenario program's parameters ([`path`]), finding ns-3 and
//! building the scenario once into a cache ([`ns3`]), a link schedule's
//! steps on that path ([`schedule`]), and turning its JSON
//! lines into a result in linkperf's schema, `"source": "ns-3 <version>"`
//! ([`result`]). Convergence metrics come from [`crate::dynamics`], the same
//! code as for measurements.

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
    let (topology, route, crossed) = path::load(&spec.testbed, spec.ends.as_ref(), spec.reverse)?;
    let from_file = schedule_file
        .map(|f| linkperf_testbed::topology::schedule_from_file(f, &topology))
        .transpose()
        .map_err(|e| SimError::usage(e.to_string()))?;
    let steps = match from_file.as_ref().or(topology.schedule.as_ref()) {
        Some(s) => schedule::link_steps(&topology, &route, &crossed, s, spec.duration_s)?,
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

/// Builds (once) and runs the scenario for `spec` along `route` with `steps`.
fn simulate_route(
    spec: &SimSpec,
    route: &path::Route,
    steps: &[schedule::LinkStep],
) -> Result<serde_json::Value, SimError> {
    let congestion = spec.congestion.clone().unwrap_or_else(host_congestion);
    let model = ns3_model(&congestion, spec.cwnd_clamp.is_some())?;
    let install = ns3::Install::find()?;
    let program = install.scenario()?;
    let (rcvbuf, sndbuf) = path::buffers(spec);
    let mut args = vec![
        format!("--hops={}", route.hops_arg()),
        format!("--cc={model}"),
        format!("--streams={}", spec.streams),
        format!("--duration={}", spec.duration_s),
        format!("--interval={}", spec.interval_s),
        format!("--sample={}", spec.sample_s),
        format!("--rcvbuf={rcvbuf}"),
        format!("--sndbuf={sndbuf}"),
    ];
    if let Some(clamp) = spec.cwnd_clamp {
        args.push(format!("--cwndclamp={clamp}"));
    }
    // ns-3's command line refuses an empty value.
    if !steps.is_empty() {
        args.push(format!("--steps={}", schedule::steps_arg(steps)));
    }
    let lines = ns3::run_scenario(&program, &args)?;
    let mss = u64::from(route.hops.iter().map(|h| h.mtu).min().unwrap_or(1500)) - 52;
    let parsed = result::parse_lines(&lines, mss)?;
    let mut doc = result::document(
        &result::Context {
            spec,
            congestion: &congestion,
            model,
            route,
            source: format!("ns-3 {}", install.version),
            rcvbuf,
        },
        &parsed,
    );
    doc["simulation"]["schedule"] = result::steps_json(steps);
    Ok(doc)
}
