//! `sweep --simulate`: the ns-3 twin of every point of a sweep through a
//! testbed. ns-3 is deterministic, so a point has one twin whatever its
//! repetitions; it is stored in the sweep at repetition
//! [`TWIN_REPETITION`] (kept apart from the measured runs), its document
//! marked `"twin": {"sweep_id", "point", "params"}`. Checks before anything
//! runs that ns-3 is installed and every point has a twin.

use super::network::{link_change, Network};
use super::plan::{self, Params};
use super::PointSummary;
use crate::simulate::{self, twin, SimError, SimSpec};
use crate::spec::TestSpec;
use linkperf_store::{NewRun, RunRow, SweepSlot, TWIN_REPETITION};
use linkperf_testbed::Topology;
use serde_json::json;

/// The simulation of a point's `test` and the topology with its link values.
fn point_twin(
    network: &Network,
    params: &Params,
    test: &TestSpec,
) -> Result<(SimSpec, Topology), String> {
    let changes = params
        .iter()
        .filter(|(k, _)| plan::is_link(k))
        .map(|(k, v)| link_change(&network.topology, k, v))
        .collect::<Result<Vec<_>, _>>()?;
    let topology = twin::with_changes(&network.topology, &changes);
    let spec = twin::sim_spec(
        test,
        &network.file,
        &network.client_host,
        &network.server_host,
    )
    .map_err(|e| e.message)?;
    twin::route(&spec, &topology).map_err(|e| e.message)?;
    Ok((spec, topology))
}

/// Before anything runs: `--simulate` needs a testbed, ns-3, and a twin
/// for every point (its parameters and test); the error is one line
/// naming the point.
pub fn check(network: Option<&Network>, points: &[(&Params, TestSpec)]) -> Result<(), String> {
    let Some(network) = network else {
        return Err(
            "--simulate needs --testbed FILE.toml: the simulated path is the testbed's".into(),
        );
    };
    simulate::ns3::Install::find().map_err(|e| format!("--simulate: {e}"))?;
    for (params, test) in points {
        point_twin(network, params, test)
            .map_err(|e| format!("--simulate: point {}: {e}", plan::label(params)))?;
    }
    Ok(())
}

/// Simulates point `point` (`params`, `test`) of sweep `sweep_id`; the run to store.
pub fn simulate_point(
    network: &Network,
    params: &Params,
    test: &TestSpec,
    sweep_id: i64,
    point: usize,
) -> Result<NewRun, SimError> {
    let (spec, topology) = point_twin(network, params, test).map_err(SimError::usage)?;
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
