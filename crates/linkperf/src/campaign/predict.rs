//! The model's prediction beside each flow of a campaign run in a testbed
//! (`testbed = "NAME"`): each direction's path comes from the topology (the
//! agents' addresses name its hosts) with the link parameters in force, the
//! flow's own bound from [`crate::model`] (window, offered rate, loss), and
//! every resource along the path (each link direction's line, an ATM VC's
//! peak cell rate, a router's processor) shared max-min fairly among the
//! directions that cross it ([`model::share`]): a direction bound lower
//! elsewhere keeps its bound, the others share what is left.

use super::analysis::{FlowPrediction, PhaseResult};
use super::plan::{Campaign, Phase};
use crate::model::{self, describe, formulas, share, testbed as paths};
use linkperf_testbed::{Testbed, Topology};

/// One direction to predict: its flow, its own bound and what it uses.
struct Demand {
    flow: usize,
    reverse: bool,
    own: model::Prediction,
    uses: Vec<paths::Use>,
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
    let kernel = model::host::local();
    let mut demands = Vec::new();
    for (i, (flow, planned)) in result.flows.iter().zip(&phase.flows).enumerate() {
        let config = planned.config();
        let Ok(shape) = describe::flow_of(&config) else {
            continue;
        };
        let mut ends = vec![(false, &flow.direction)];
        ends.extend(flow.reverse.as_ref().map(|r| (true, r)));
        for (reverse, d) in ends {
            let (Some(from), Some(to)) = (host_of(&d.sender), host_of(&d.receiver)) else {
                continue;
            };
            if let Some((own, uses)) = demand(&topology, &from, &to, &shape, &kernel) {
                demands.push(Demand {
                    flow: i,
                    reverse,
                    own,
                    uses,
                });
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

/// A direction from testbed host `from` to `to`: the model's prediction on
/// its path alone, and the resources its packets use along it.
fn demand(
    topology: &Topology,
    from: &str,
    to: &str,
    shape: &model::Flow,
    kernel: &model::Kernel,
) -> Option<(model::Prediction, Vec<paths::Use>)> {
    let path = paths::host_path(topology, from, to).ok()?;
    let own = model::predict(&path, shape, kernel).ok()?;
    let packets = match shape.protocol {
        linkperf_proto::Protocol::Tcp => vec![own.payload_bytes + 52],
        linkperf_proto::Protocol::Udp => {
            formulas::ipv4_fragments(own.payload_bytes + 8, u64::from(path.mtu))
        }
    };
    let uses = paths::host_uses(topology, from, to, &packets, own.payload_bytes)?;
    Some((own, uses))
}

/// The bounds of a flow that belong to it alone; the line ("link") and the
/// processing on its path are resources it may share.
fn own_bound(own: &model::Prediction) -> Option<(&String, f64)> {
    own.bounds
        .iter()
        .filter(|(k, _)| !matches!(k.as_str(), "link" | "processing"))
        .map(|(k, v)| (k, *v))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// Max-min fair shares of every resource: (value, binding, sharing) per
/// demand, in order. The binding is the flow's own bound's name, or the
/// resource it filled: "fair_share" when others share it, else "link",
/// "vc_pcr" or "processing".
fn fair_shares(demands: &[Demand]) -> Vec<(f64, String, usize)> {
    let input: Vec<share::Demand<paths::Resource>> = demands
        .iter()
        .map(|d| share::Demand {
            own: own_bound(&d.own).map_or(f64::INFINITY, |(_, v)| v),
            uses: (d.uses.iter())
                .map(|u| (u.resource.clone(), u.capacity, u.per_bit))
                .collect(),
        })
        .collect();
    demands
        .iter()
        .zip(share::max_min(&input))
        .map(|(d, (value, limit))| match limit {
            share::Limit::Own => {
                let name = own_bound(&d.own).map_or(d.own.binding.clone(), |(k, _)| k.clone());
                (value, name, 1)
            }
            share::Limit::Resource(_, n) if n > 1 => (value, "fair_share".into(), n),
            share::Limit::Resource(r, _) => {
                let name = match r {
                    paths::Resource::Line(..) => "link",
                    paths::Resource::Vc(..) => "vc_pcr",
                    paths::Resource::Router(_)
                    | paths::Resource::Receiver(..)
                    | paths::Resource::Sender(_) => "processing",
                };
                (value, name.into(), 1)
            }
            share::Limit::Unbounded => (d.own.value, d.own.binding.clone(), 1),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use linkperf_proto::Protocol;

    fn topology(experiment: &str) -> Topology {
        let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../examples/seeds")
            .join(experiment)
            .join("topology.toml");
        Topology::from_file(&file).unwrap()
    }

    /// The shares of directions from `pairs` all at once.
    fn shares(
        t: &Topology,
        pairs: &[(&str, &str)],
        shape: &model::Flow,
    ) -> Vec<(f64, String, usize)> {
        let demands: Vec<Demand> = (pairs.iter().enumerate())
            .map(|(flow, (from, to))| {
                let (own, uses) = demand(t, from, to, shape, &model::Kernel::default()).unwrap();
                Demand {
                    flow,
                    reverse: false,
                    own,
                    uses,
                }
            })
            .collect();
        fair_shares(&demands)
    }

    /// Seed 001: eight pairs, each behind its own 10 Mbit/s port, all across
    /// the fibre between the two switches: an eighth of the fibre's UDP
    /// payload rate each (1470 bytes per 1470 + 28 + 38 on Ethernet), below
    /// the 9.5 Mbit/s each offers.
    #[test]
    fn eight_pairs_share_the_fibre_between_the_switches() {
        let t = topology("001-eight-pairs");
        let udp = model::Flow {
            protocol: Protocol::Udp,
            udp_rate_bps: Some(9.5e6),
            udp_length: 1470,
            ..model::Flow::default()
        };
        let names = |p: &str| (1..=8).map(|i| format!("{p}{i}")).collect::<Vec<_>>();
        let (under, outside) = (names("u"), names("e"));
        for (fibre, from, to) in [(75.44e6, &under, &outside), (71.55e6, &outside, &under)] {
            let pairs: Vec<(&str, &str)> = (from.iter().zip(to.iter()))
                .map(|(a, b)| (a.as_str(), b.as_str()))
                .collect();
            let each = fibre * 1470.0 / 1536.0 / 8.0;
            for (value, binding, sharing) in shares(&t, &pairs, &udp) {
                assert!((value / each - 1.0).abs() < 1e-9, "{value} != {each}");
                assert_eq!((binding.as_str(), sharing), ("fair_share", 8));
            }
        }
        // One pair alone gets what it offers.
        let alone = shares(&t, &[("u1", "e1")], &udp);
        assert!((alone[0].0 - 9.5e6).abs() < 1.0, "{alone:?}");
        assert_eq!(alone[0].1, "offered");
    }

    /// Seed 000, Table 4: each site's flow rides its own VC of 20833 cells/s
    /// on the CNAF's access; a 9180-byte packet (9128 bytes of TCP payload)
    /// is 192 cells. The three VCs together (23.8) leave room on the line.
    #[test]
    fn three_senders_each_get_their_vcs_peak_cell_rate() {
        let t = topology("000-three-vps");
        let tcp = model::Flow {
            rcvbuf: Some(65536),
            sndbuf: Some(65536),
            ..model::Flow::default()
        };
        let vc = 20833.0 / 192.0 * 9128.0 * 8.0;
        let pairs = [("milano", "cnaf"), ("roma", "cnaf"), ("torino", "cnaf")];
        for (value, binding, sharing) in shares(&t, &pairs, &tcp) {
            assert!((value / vc - 1.0).abs() < 1e-9, "{value} != {vc}");
            assert_eq!((binding.as_str(), sharing), ("vc_pcr", 1));
        }
        // One flow alone is held by its VC too, and so is the path's model.
        let path = paths::host_path(&t, "roma", "cnaf").unwrap();
        let alone = model::predict(&path, &tcp, &model::Kernel::default()).unwrap();
        assert!((alone.bounds["link"] / vc - 1.0).abs() < 1e-9, "{alone:?}");
        // The way back (ACKs' direction, no VC limit) is the E3 line's.
        let back = shares(&t, &[("cnaf", "roma")], &tcp);
        let e3 = 33.92e6 * 9128.0 / (192.0 * 53.0 * 8.0) * 8.0;
        assert!((back[0].0 / e3 - 1.0).abs() < 1e-9, "{back:?} != {e3}");
    }

    /// Seed 002: a router has one processor for all its links: two UDP
    /// flows through it in opposite directions share its packets per second
    /// (420 us + 70 ns per frame byte for the Cisco).
    #[test]
    fn flows_through_one_router_share_its_processor() {
        let t = topology("002-router-datagrams");
        let udp = model::Flow {
            protocol: Protocol::Udp,
            udp_length: 1024,
            ..model::Flow::default()
        };
        let per_packet = 420e-6 + 70e-9 * (1024.0 + 28.0 + 14.0);
        let alone = shares(&t, &[("a", "b")], &udp);
        assert!((alone[0].0 / (1024.0 * 8.0 / per_packet) - 1.0).abs() < 1e-9);
        assert_eq!(alone[0].1, "processing");
        for (value, binding, sharing) in shares(&t, &[("a", "b"), ("b", "a")], &udp) {
            assert!((value / (1024.0 * 8.0 / per_packet / 2.0) - 1.0).abs() < 1e-9);
            assert_eq!((binding.as_str(), sharing), ("fair_share", 2));
        }
    }
}
