//! `campaign run --simulate`: the ns-3 twin of every flow of a campaign
//! run in a testbed (`testbed = "NAME"`), simulated right after its phase
//! ran (never beside a measurement) on the links then in force, and put
//! on the flow's result as `simulated` (one simulation per phase and sweep
//! point: ns-3 is deterministic, sessions share it). The flows of a phase
//! are simulated together, sharing the links their paths have in common as
//! the measured flows did; [`check`] refuses what the scenario cannot
//! express before anything runs.

use super::analysis::PhaseResult;
use super::plan::{Campaign, Flow, Phase, Point};
use crate::model::testbed::host_by_address;
use crate::simulate::path::Route;
use crate::simulate::{self, twin, SimError, SimSpec};
use linkperf_testbed::{Testbed, Topology};
use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Simulated flows of each phase at each point, by "point label / phase".
pub type Cache = BTreeMap<String, Vec<Value>>;

/// The testbed hosts of `flow`'s agents and its simulation.
fn flow_spec(campaign: &Campaign, topology: &Topology, flow: &Flow) -> Result<SimSpec, String> {
    let host_of = |agent: &str| -> Result<String, String> {
        let a = campaign
            .agents
            .iter()
            .find(|a| a.name == agent)
            .ok_or_else(|| format!("no agent '{agent}'"))?;
        host_by_address(topology, &a.host)
            .map(String::from)
            .ok_or_else(|| {
                format!(
                    "agent {agent}'s address {} is no host of testbed {}",
                    a.host, topology.name
                )
            })
    };
    let (from, to) = (host_of(&flow.from)?, host_of(&flow.to)?);
    let name = std::path::Path::new(&topology.name);
    twin::sim_spec(&flow.spec, name, &from, &to).map_err(|e| e.message)
}

/// Each flow's simulation and route in `phase`, or why one has none
/// (naming the flow).
fn phase_specs(
    campaign: &Campaign,
    topology: &Topology,
    phase: &Phase,
) -> Result<Vec<(SimSpec, Route)>, String> {
    phase
        .flows
        .iter()
        .map(|flow| {
            let what = format!(
                "flow {} -> {} of phase '{}'",
                flow.from, flow.to, phase.name
            );
            let spec = flow_spec(campaign, topology, flow).map_err(|e| format!("{what}: {e}"))?;
            let route = twin::route(&spec, topology).map_err(|e| format!("{what}: {e}"))?;
            Ok((spec, route))
        })
        .collect()
}

/// Before anything runs: a testbed, ns-3, and a twin for every flow of
/// every phase at every point (with the links each sets).
pub fn check(campaign: &Campaign) -> Result<(), String> {
    let Some(name) = campaign.testbed.as_deref() else {
        return Err("--simulate needs a campaign in a testbed (testbed = \"NAME\"): the simulated paths are its".into());
    };
    simulate::ns3::Install::find().map_err(|e| format!("--simulate: {e}"))?;
    let testbed = Testbed::attach(name).map_err(|e| format!("testbed {name}: {e}"))?;
    let live = crate::runner::live_topology(&testbed);
    for point in &campaign.points {
        for phase in campaign.phases_at(point)? {
            let changes = super::links::in_force(point, &phase)
                .iter()
                .map(|(k, v)| crate::sweep::network::link_change(&live, k, v))
                .collect::<Result<Vec<_>, _>>()?;
            let topology = twin::with_changes(&live, &changes);
            phase_specs(campaign, &topology, &phase).map_err(|e| format!("--simulate: {e}"))?;
        }
    }
    Ok(())
}

/// What a flow's result keeps of its twin: the rate, the ratio and the
/// intervals (not the samples: the campaign document stays small).
fn compact(doc: &Value) -> Value {
    let intervals: Vec<Value> = doc["intervals"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|iv| json!({"start": iv["start"], "end": iv["end"], "bits_per_second": iv["sum"]["bits_per_second"]}))
        .collect();
    json!({
        "source": doc["source"],
        "bits_per_second": doc["summary"]["received"]["bits_per_second"],
        "retransmits": doc["summary"]["sent"]["retransmits"],
        "flows_together": doc["simulation"]["flows_together"],
        "intervals": intervals,
    })
}

fn simulate_all(campaign: &Campaign, phase: &Phase) -> Result<Vec<Value>, SimError> {
    let name = campaign.testbed.as_deref().unwrap_or_default();
    let testbed = Testbed::attach(name).map_err(|e| SimError::failed(e.to_string()))?;
    let topology = crate::runner::live_topology(&testbed);
    let twins = phase_specs(campaign, &topology, phase).map_err(SimError::usage)?;
    let docs = simulate::run_together(&twins, &topology)?;
    Ok(docs.iter().map(compact).collect())
}

/// Puts each flow's twin on `result` (simulated now unless this phase at
/// this point was already); a failure is a warning: the measurement stays.
pub fn simulate_phase(
    campaign: &Campaign,
    point: &Point,
    phase: &Phase,
    result: &mut PhaseResult,
    cache: &mut Cache,
) -> Result<(), String> {
    let key = format!("{} / {}", crate::sweep::plan::label(point), phase.name);
    if !cache.contains_key(&key) {
        let twins = simulate_all(campaign, phase)
            .map_err(|e| format!("phase {}: the ns-3 twins failed: {e}", phase.name))?;
        cache.insert(key.clone(), twins);
    }
    for (flow, twin) in result.flows.iter_mut().zip(&cache[&key]) {
        let mut twin = twin.clone();
        let simulated = twin["bits_per_second"].as_f64().unwrap_or(0.0);
        if simulated > 0.0 && flow.status == "ok" {
            twin["measured_over_simulated"] =
                json!(flow.direction.received.bits_per_second / simulated);
        }
        flow.simulated = Some(twin);
    }
    Ok(())
}
