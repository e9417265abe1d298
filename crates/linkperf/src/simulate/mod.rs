//! `linkperf simulate`: the ns-3 twin of a test through a testbed path
//! (docs/simulate.md). Owns the mapping from a topology's path and a test
//! spec to the scenario program's parameters ([`path`]), finding ns-3 and
//! building the scenario once into a cache ([`ns3`]), and turning its JSON
//! lines into a result in linkperf's schema, `"source": "ns-3 <version>"`
//! ([`result`]). Convergence metrics come from [`crate::dynamics`], the same
//! code as for measurements.

pub mod ns3;
pub mod path;
pub mod result;
pub mod spec;
pub mod twin;

pub use spec::{SimError, SimSpec};

/// Kernel congestion control names and ns-3's TCP models for them.
pub const CONGESTION: &[(&str, &str)] = &[
    ("reno", "ns3::TcpNewReno"),
    ("cubic", "ns3::TcpCubic"),
    ("bic", "ns3::TcpBic"),
    ("bbr", "ns3::TcpBbr"),
];

/// ns-3's model for a kernel congestion control name.
pub fn ns3_congestion(name: &str) -> Result<&'static str, SimError> {
    CONGESTION
        .iter()
        .find(|(k, _)| *k == name)
        .map(|(_, n)| *n)
        .ok_or_else(|| {
            let names: Vec<&str> = CONGESTION.iter().map(|(k, _)| *k).collect();
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
pub fn run(spec: &SimSpec) -> Result<serde_json::Value, SimError> {
    check(spec)?;
    let congestion = spec.congestion.clone().unwrap_or_else(host_congestion);
    ns3_congestion(&congestion)?;
    let route = path::from_file(&spec.testbed, spec.ends.as_ref(), spec.reverse)?;
    run_route(spec, &route)
}

/// Runs the simulation of `spec` along `route` (a path already taken from a
/// topology, e.g. one with a sweep point's link values: see [`twin`]).
pub fn run_route(spec: &SimSpec, route: &path::Route) -> Result<serde_json::Value, SimError> {
    check(spec)?;
    let congestion = spec.congestion.clone().unwrap_or_else(host_congestion);
    let model = ns3_congestion(&congestion)?;
    let install = ns3::Install::find()?;
    let program = install.scenario()?;
    let (rcvbuf, sndbuf) = path::buffers(spec);
    let args = vec![
        format!("--hops={}", route.hops_arg()),
        format!("--cc={model}"),
        format!("--streams={}", spec.streams),
        format!("--duration={}", spec.duration_s),
        format!("--interval={}", spec.interval_s),
        format!("--sample={}", spec.sample_s),
        format!("--rcvbuf={rcvbuf}"),
        format!("--sndbuf={sndbuf}"),
    ];
    let lines = ns3::run_scenario(&program, &args)?;
    let mss = u64::from(route.hops.iter().map(|h| h.mtu).min().unwrap_or(1500)) - 52;
    let parsed = result::parse_lines(&lines, mss)?;
    Ok(result::document(
        &result::Context {
            spec,
            congestion: &congestion,
            route,
            source: format!("ns-3 {}", install.version),
            rcvbuf,
        },
        &parsed,
    ))
}
