//! `sweep --simulate`: the ns-3 twin of every point of a sweep through a
//! testbed. ns-3 is deterministic, so a point has one twin whatever its
//! repetitions; it is stored in the sweep at repetition
//! [`TWIN_REPETITION`] (kept apart from the measured runs), its document
//! marked `"twin": {"sweep_id", "point", "params"}`. Checks before anything
//! runs that ns-3 is installed and every point has a twin.

use super::network::{link_change, Network};
use super::plan::{self, Params};
use super::run::Plan;
use super::PointSummary;
use crate::simulate::{self, twin, SimError, SimSpec};
use linkperf_store::{NewRun, RunRow, SweepSlot, TWIN_REPETITION};
use linkperf_testbed::Topology;
use serde_json::json;

/// The point's simulation and the topology with its link values.
fn point_twin(
    plan: &Plan,
    network: &Network,
    params: &Params,
) -> Result<(SimSpec, Topology), String> {
    let test = plan.point(params)?;
    let changes = params
        .iter()
        .filter(|(k, _)| plan::is_link(k))
        .map(|(k, v)| link_change(&network.topology, k, v))
        .collect::<Result<Vec<_>, _>>()?;
    let topology = twin::with_changes(&network.topology, &changes);
    let spec = twin::sim_spec(
        &test,
        &network.file,
        &network.client_host,
        &network.server_host,
    )
    .map_err(|e| e.message)?;
    twin::route(&spec, &topology).map_err(|e| e.message)?;
    Ok((spec, topology))
}

/// Before anything runs: `--simulate` needs a testbed, ns-3, and a twin
/// for every point; the error is one line naming the point.
pub fn check(plan: &Plan) -> Result<(), String> {
    let Some(network) = &plan.network else {
        return Err(
            "--simulate needs --testbed FILE.toml: the simulated path is the testbed's".into(),
        );
    };
    simulate::ns3::Install::find().map_err(|e| format!("--simulate: {e}"))?;
    for params in &plan.points {
        point_twin(plan, network, params)
            .map_err(|e| format!("--simulate: point {}: {e}", plan::label(params)))?;
    }
    Ok(())
}

/// Simulates point `point` of sweep `sweep_id`; the run to store.
pub fn simulate_point(plan: &Plan, sweep_id: i64, point: usize) -> Result<NewRun, SimError> {
    let network = plan
        .network
        .as_ref()
        .ok_or_else(|| SimError::usage("--simulate needs --testbed"))?;
    let params = &plan.points[point];
    let (spec, topology) = point_twin(plan, network, params).map_err(SimError::usage)?;
    let mark = json!({"sweep_id": sweep_id, "point": point, "params": params});
    let doc = twin::run(&spec, &topology, mark)?;
    Ok(NewRun::from_test_report(doc).in_sweep(SweepSlot {
        sweep_id,
        point: point as i64,
        repetition: TWIN_REPETITION,
    }))
}

/// Puts each stored twin's received throughput beside its point's.
pub fn attach(points: &mut [PointSummary], twins: &[RunRow]) {
    for t in twins {
        let Some(slot) = t.slot else { continue };
        if let Some(p) = points.iter_mut().find(|p| p.index as i64 == slot.point) {
            p.simulated = t.metrics.received_bps;
            p.simulated_run = Some(t.id);
        }
    }
}
