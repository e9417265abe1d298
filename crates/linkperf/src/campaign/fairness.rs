//! Fairness across a phase's flows when they start at different times
//! (`start` in the campaign file): each flow's received series, from the
//! `--sample` samples its report carries, placed on the phase's clock and
//! handed to [`crate::dynamics::join_fairness`] (docs/dynamics.md).

use super::analysis::FlowOutcome;
use crate::dynamics::{self, FlowSeries, JoinFairness};
use linkperf_proto::results::Sample;
use serde_json::Value;

/// A flow's received samples, its streams' summed sample by sample (one end
/// samples all its streams in one pass).
fn received_samples(report: &Value) -> Vec<Sample> {
    let streams = report["summary"]["streams"]
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or(&[]);
    let series: Vec<Vec<Sample>> = streams
        .iter()
        .filter_map(|s| serde_json::from_value(s["receiver"]["samples"].clone()).ok())
        .collect();
    dynamics::sum_samples(&series)
}

/// Jain's index over the phase's flows from the last one's start; None
/// unless at least two flows sampled (`sample`) and one starts later.
pub fn after_join(outcomes: &[FlowOutcome], period_s: Option<f64>) -> Option<JoinFairness> {
    let period = period_s?;
    let samples: Vec<(f64, Vec<Sample>)> = outcomes
        .iter()
        .filter_map(|o| Some((o.start_s, received_samples(o.report.as_ref()?))))
        .collect();
    if !samples.iter().any(|(start, _)| *start > 0.0) {
        return None;
    }
    let flows: Vec<FlowSeries> = samples
        .iter()
        .map(|(start_s, s)| FlowSeries {
            start_s: *start_s,
            samples: s,
        })
        .collect();
    dynamics::join_fairness(&flows, period)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_flows_streams_are_summed_and_a_late_flow_placed_on_the_phase_clock() {
        let report = |rate: u64| {
            let samples: Vec<Value> = (1..=100)
                .map(|k| json!({"t": k as f64 * 0.01, "bytes": rate}))
                .collect();
            json!({"summary": {"streams": [
                {"receiver": {"samples": samples}},
                {"receiver": {"samples": samples}}]}})
        };
        let outcome = |start_s, rate| FlowOutcome {
            start_s,
            report: Some(report(rate)),
            ..Default::default()
        };
        assert_eq!(received_samples(&report(5))[9].bytes, 10);
        // Equal shares once both run: J = 1 from the join's first whole window.
        let f = after_join(&[outcome(0.0, 1000), outcome(0.5, 1000)], Some(0.01)).unwrap();
        assert_eq!(f.joined_at_s, 0.5);
        // The newcomer's window mean is half the other's 50 ms after it
        // starts (J = 0.9 at a share of 1/2), on the 10 ms grid 0.05-0.06 s.
        assert!((f.above_0_9_from_s.unwrap() - 0.055).abs() < 0.011, "{f:?}");
        // Nobody joins later: nothing to say.
        assert_eq!(
            after_join(&[outcome(0.0, 1), outcome(0.0, 1)], Some(0.01)),
            None
        );
    }
}
