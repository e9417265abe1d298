//! The model's prediction beside each flow of a campaign run in a testbed
//! (`testbed = "NAME"`): each direction's path comes from the topology (the
//! agents' addresses name its hosts) with the link parameters in force, the
//! flow's own bound from [`crate::model`], and the flows whose paths share a
//! bottleneck link direction split its payload rate max-min fairly (a flow
//! bound lower elsewhere keeps its bound, the others share what is left).

use super::analysis::{DirectionResult, FlowPrediction, PhaseResult};
use super::plan::{Campaign, Phase};
use crate::model::{self, describe, testbed as paths};
use linkperf_testbed::{Testbed, Topology};
use std::collections::BTreeMap;

/// One direction to predict: its testbed hosts and its own bound.
struct Demand {
    flow: usize,
    reverse: bool,
    bottleneck: Option<(usize, bool)>,
    link_bps: Option<f64>,
    own: model::Prediction,
}

/// Puts a prediction on each direction of `result`'s flows when the
/// campaign names a running testbed whose hosts the agents are.
pub fn predict_phase(campaign: &Campaign, phase: &Phase, result: &mut PhaseResult) {
    let Some(testbed) = campaign
        .testbed
        .as_deref()
        .and_then(|n| Testbed::attach(n).ok())
    else {
        return;
    };
    let topology = crate::runner::live_topology(&testbed);
    let host_of = |agent: &str| -> Option<String> {
        let a = campaign.agents.iter().find(|a| a.name == agent)?;
        paths::host_by_address(&topology, &a.host).map(String::from)
    };
    let mut demands = Vec::new();
    for (i, (flow, planned)) in result.flows.iter().zip(&phase.flows).enumerate() {
        let config = planned.config();
        let Ok(shape) = describe::flow_of(&config) else {
            continue;
        };
        let mut ends = vec![(false, &flow.direction)];
        ends.extend(flow.reverse.as_ref().map(|r| (true, r)));
        for (reverse, d) in ends {
            if let Some(demand) = demand(&topology, &host_of, i, reverse, d, &shape) {
                demands.push(demand);
            }
        }
    }
    for (demand, value) in demands.iter().zip(fair_shares(&demands)) {
        let flow = &mut result.flows[demand.flow];
        let d = if demand.reverse {
            flow.reverse.as_mut()
        } else {
            Some(&mut flow.direction)
        };
        if let Some(d) = d {
            let (bits_per_second, binding, sharing) = value;
            d.predicted = Some(FlowPrediction {
                bits_per_second,
                binding,
                sharing,
                measured_over_predicted: (bits_per_second > 0.0)
                    .then(|| d.received.bits_per_second / bits_per_second),
            });
        }
    }
}

fn demand(
    topology: &Topology,
    host_of: &dyn Fn(&str) -> Option<String>,
    flow: usize,
    reverse: bool,
    d: &DirectionResult,
    shape: &model::Flow,
) -> Option<Demand> {
    let (from, to) = (host_of(&d.sender)?, host_of(&d.receiver)?);
    let path = paths::host_path(topology, &from, &to).ok()?;
    let own = model::predict(&path, shape, &model::host::local()).ok()?;
    Some(Demand {
        flow,
        reverse,
        bottleneck: paths::host_bottleneck(topology, &from, &to),
        link_bps: own.bounds.get("link").copied(),
        own,
    })
}

/// Max-min fair shares of each shared bottleneck: (value, binding, sharing)
/// per demand, in order.
fn fair_shares(demands: &[Demand]) -> Vec<(f64, String, usize)> {
    let mut groups: BTreeMap<(usize, bool), Vec<usize>> = BTreeMap::new();
    for (i, d) in demands.iter().enumerate() {
        if let Some(b) = d.bottleneck {
            groups.entry(b).or_default().push(i);
        }
    }
    let mut out: Vec<(f64, String, usize)> = demands
        .iter()
        .map(|d| (d.own.value, d.own.binding.clone(), 1))
        .collect();
    for members in groups.values() {
        let Some(capacity) = members
            .iter()
            .filter_map(|&i| demands[i].link_bps)
            .reduce(f64::min)
        else {
            continue;
        };
        // Each flow's bound apart from the link: what it could use alone.
        let mut wants: Vec<(usize, f64)> = members
            .iter()
            .map(|&i| {
                let own = &demands[i].own;
                let other = own
                    .bounds
                    .iter()
                    .filter(|(k, _)| k.as_str() != "link")
                    .map(|(_, v)| *v)
                    .fold(f64::INFINITY, f64::min);
                (i, other)
            })
            .collect();
        wants.sort_by(|a, b| a.1.total_cmp(&b.1));
        let mut left = capacity;
        let n = wants.len();
        for (k, (i, want)) in wants.into_iter().enumerate() {
            let share = left / (n - k) as f64;
            out[i] = if want < share {
                (want, demands[i].own.binding.clone(), n)
            } else if n > 1 {
                (share, "fair_share".into(), n)
            } else {
                (share, "link".into(), 1)
            };
            left -= out[i].0;
        }
    }
    out
}
