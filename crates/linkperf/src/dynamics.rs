//! Convergence metrics of one direction from its `--sample` series
//! (docs/dynamics.md gives the definitions and their sources): how soon the
//! streams together reach 90 % of the rate, how soon a stream gets back to
//! 90 % of its rate after a loss, how fairly the streams share (Jain's
//! index over time, also across flows that join later) and how much the
//! RTT grows under load. Pure: samples in, figures out.

use linkperf_proto::results::Sample;
use serde::Serialize;

/// One stream's two series (either may be empty).
pub struct StreamSeries<'a> {
    pub id: u32,
    pub sender: &'a [Sample],
    pub receiver: &'a [Sample],
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Dynamics {
    /// Rates are means over windows of this many seconds.
    pub window_s: f64,
    /// The rate "90 %" refers to, bits/s: the bottleneck link's payload rate
    /// when the caller knows it, else the highest mean over any window of the
    /// streams together.
    pub reference_bps: f64,
    /// Which: "link" or "max_sustained".
    pub reference: &'static str,
    /// From the start until the window ending then first averaged 90 % of
    /// the reference (RFC 5166 4.2's "time to reach" a share of the rate).
    pub time_to_90_percent_s: Option<f64>,
    /// Each loss event (a step of a sender's retransmit count) and its recovery.
    pub losses: Vec<LossRecovery>,
    /// Two or more streams: Jain's fairness index of their window rates.
    pub fairness: Option<Fairness>,
    /// TCP: smoothed RTT under load against the RTT before it.
    pub rtt: Option<RttInflation>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct LossRecovery {
    pub stream: u32,
    /// Sender's clock: the first sample that saw the new retransmissions.
    pub t: f64,
    pub retransmits: u64,
    /// Acknowledged rate before the loss, bits/s: the median of the window
    /// rates ending in the second before it.
    pub before_bps: f64,
    /// From the loss to the end of the first window, wholly after it, that
    /// averaged 90 % of `before_bps` and after which every window ending
    /// within one window length did too (up to the next loss step or the
    /// series' end); None if none did before the test ended.
    pub recovery_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Fairness {
    pub jain_mean: f64,
    pub jain_min: f64,
    /// From the start until the index stayed at or above 0.9 to the end.
    pub above_0_9_from_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RttInflation {
    /// The first sample's smoothed RTT (set by the handshake, before load),
    /// milliseconds; the smallest of the streams.
    pub idle_ms: f64,
    /// Median smoothed RTT over the second half of the samples.
    pub loaded_ms: f64,
    pub inflation_ms: f64,
}

/// Cumulative (t, bytes) from per-sample deltas, starting at (0, 0).
fn cumulative(samples: &[Sample], bytes: impl Fn(&Sample) -> u64) -> Vec<(f64, f64)> {
    let mut total = 0.0;
    let mut out = vec![(0.0, 0.0)];
    for s in samples {
        total += bytes(s) as f64;
        out.push((s.t, total));
    }
    out
}

/// At each point k (from 1), the mean rate in bits/s over the window
/// ending there, exactly `window` long: the cumulative count at its start
/// is interpolated between the two points around it (sample times jitter,
/// and a window one period too long would count one burst of a
/// window-limited flow too many). Points before one whole window has
/// passed give none: a shorter span is the receiver's read pattern, not a
/// rate.
fn window_rates(cum: &[(f64, f64)], window: f64) -> Vec<(f64, f64)> {
    let mut out = Vec::with_capacity(cum.len());
    let mut j = 0;
    for k in 1..cum.len() {
        let from = cum[k].0 - window;
        if from < cum[0].0 - 1e-9 {
            continue;
        }
        while j + 1 < k && cum[j + 1].0 <= from {
            j += 1;
        }
        let (a, b) = (cum[j], cum[j + 1]);
        let span = b.0 - a.0;
        let at_from = if span > 0.0 {
            a.1 + (b.1 - a.1) * ((from - a.0) / span).clamp(0.0, 1.0)
        } else {
            a.1
        };
        out.push((cum[k].0, (cum[k].1 - at_from) * 8.0 / window));
    }
    out
}

/// The received bytes of all streams, sample by sample: one end samples
/// all its streams in one pass, so sample i of each is at the same moment.
fn aggregate(streams: &[StreamSeries]) -> Vec<Sample> {
    let series: Vec<&[Sample]> = streams
        .iter()
        .map(|s| {
            if s.receiver.is_empty() {
                s.sender
            } else {
                s.receiver
            }
        })
        .collect();
    sum_samples(&series)
}

/// Series summed sample by sample (sample i of each at the same moment):
/// the latest time of the i-th samples, the sum of their bytes.
pub fn sum_samples<S: AsRef<[Sample]>>(series: &[S]) -> Vec<Sample> {
    let n = series.iter().map(|s| s.as_ref().len()).max().unwrap_or(0);
    (0..n)
        .map(|i| {
            let at = || series.iter().filter_map(move |s| s.as_ref().get(i));
            Sample {
                t: at().map(|s| s.t).fold(0.0, f64::max),
                bytes: at().map(|s| s.bytes).sum(),
                ..Sample::default()
            }
        })
        .collect()
}

/// The metrics of one direction's streams; None without samples.
/// `link_bps`: the bottleneck link's payload rate when known (the reference
/// of "90 %"), else the best window of the series is.
pub fn analyse(streams: &[StreamSeries], period_s: f64, link_bps: Option<f64>) -> Option<Dynamics> {
    let total = aggregate(streams);
    if total.len() < 2 {
        return None;
    }
    // Ten samples, and never under 100 ms: a rate over less is mostly the
    // receiver's read pattern.
    let window = (10.0 * period_s).max(0.1);
    let rates = window_rates(&cumulative(&total, |s| s.bytes), window);
    let (reference, which) = match link_bps.filter(|r| *r > 0.0) {
        Some(link) => (link, "link"),
        None => (
            rates.iter().map(|r| r.1).fold(0.0, f64::max),
            "max_sustained",
        ),
    };
    let time_to_90 = rates.iter().find(|r| r.1 >= 0.9 * reference).map(|r| r.0);
    Some(Dynamics {
        window_s: window,
        reference_bps: reference,
        reference: which,
        time_to_90_percent_s: time_to_90,
        losses: streams.iter().flat_map(|s| losses(s, window)).collect(),
        fairness: fairness(streams, window),
        rtt: rtt_inflation(streams),
    })
}

/// The times (and new totals) where a sender's retransmit count stepped up.
fn retransmit_steps(sender: &[Sample]) -> Vec<(f64, u64)> {
    let mut last = None;
    let mut out = Vec::new();
    for x in sender {
        let Some(r) = x.retransmits else { continue };
        if last.is_some_and(|l| r > l) {
            out.push((x.t, r));
        }
        last = Some(r);
    }
    out
}

fn losses(s: &StreamSeries, window: f64) -> Vec<LossRecovery> {
    let acked = window_rates(
        &cumulative(s.sender, |x| x.acked_bytes.unwrap_or(0)),
        window,
    );
    let steps = retransmit_steps(s.sender);
    let mut out = Vec::new();
    let mut busy_until = f64::NEG_INFINITY;
    for &(t, retransmits) in &steps {
        // One event until the stream has recovered from the previous one.
        if t < busy_until {
            continue;
        }
        let before_bps = rate_before(&acked, t, busy_until);
        let recovered = recovery_end(&acked, &steps, t, window, 0.9 * before_bps);
        busy_until = recovered.unwrap_or(f64::INFINITY);
        out.push(LossRecovery {
            stream: s.id,
            t,
            retransmits,
            before_bps,
            recovery_s: recovered.map(|end| end - t),
        });
    }
    out
}

/// How far back from a loss its rate before is taken (see [`rate_before`]).
const BEFORE_SPAN_S: f64 = 1.0;

/// The rate before a loss at `t`: the median of the window rates ending in the
/// second before it (after `since`, the previous event's recovery), so that one
/// window a stalled host or a burst moved does not set the level the recovery is
/// measured against; the last window before `t` when none ends in that span.
fn rate_before(acked: &[(f64, f64)], t: f64, since: f64) -> f64 {
    let from = (t - BEFORE_SPAN_S).max(since);
    let mut rates: Vec<f64> = (acked.iter())
        .filter(|a| a.0 < t && a.0 >= from)
        .map(|a| a.1)
        .collect();
    if rates.is_empty() {
        return acked.iter().rev().find(|a| a.0 < t).map_or(0.0, |a| a.1);
    }
    rates.sort_by(f64::total_cmp);
    rates[rates.len() / 2]
}

/// The end of the first window wholly after the loss at `t` whose mean is
/// at least `target` and stays so in every window ending within one window
/// length after it, a later loss step (another event) or the series' end
/// cutting that short. The hold keeps out the one window a recovery's
/// cumulative ACK lifts: snd_una stands still while a hole is repaired and
/// then jumps by all that was SACKed meanwhile.
fn recovery_end(
    acked: &[(f64, f64)],
    steps: &[(f64, u64)],
    t: f64,
    window: f64,
    target: f64,
) -> Option<f64> {
    let first = acked.iter().position(|a| a.0 - window >= t - 1e-9)?;
    let after = &acked[first..];
    'candidates: for (i, a) in after.iter().enumerate() {
        if a.1 < target {
            continue;
        }
        let next_step = steps
            .iter()
            .map(|s| s.0)
            .find(|&s| s > a.0)
            .unwrap_or(f64::INFINITY);
        let hold_end = (a.0 + window).min(next_step);
        for b in after[i + 1..].iter().take_while(|b| b.0 <= hold_end + 1e-9) {
            if b.1 < target {
                continue 'candidates;
            }
        }
        return Some(a.0);
    }
    None
}

/// Jain's index (sum x)^2 / (n sum x^2) of the streams' window rates at
/// each sample (R. Jain, D. Chiu, W. Hawe, DEC-TR-301, 1984; RFC 5166 4.4).
fn fairness(streams: &[StreamSeries], window: f64) -> Option<Fairness> {
    if streams.len() < 2 {
        return None;
    }
    let rates: Vec<Vec<(f64, f64)>> = streams
        .iter()
        .map(|s| {
            let series = if s.receiver.is_empty() {
                s.sender
            } else {
                s.receiver
            };
            window_rates(&cumulative(series, |x| x.bytes), window)
        })
        .collect();
    let n = rates.iter().map(Vec::len).min()?;
    let index: Vec<(f64, f64)> = (0..n)
        .filter_map(|k| {
            let xs: Vec<f64> = rates.iter().map(|r| r[k].1).collect();
            Some((rates[0][k].0, jain(&xs)?))
        })
        .collect();
    summarise_index(&index)
}

/// Jain's index of `xs`; None when all are zero.
fn jain(xs: &[f64]) -> Option<f64> {
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    // At most 1 by Cauchy-Schwarz; rounding must not make it more.
    (squares > 0.0).then(|| (sum * sum / (xs.len() as f64 * squares)).min(1.0))
}

/// Mean and minimum of an index over time (time, index), and from when it
/// stayed at or above 0.9 to the end (None if it ends below).
fn summarise_index(index: &[(f64, f64)]) -> Option<Fairness> {
    let last = index.last()?;
    let from = index
        .iter()
        .rposition(|j| j.1 < 0.9)
        .map_or(Some(index[0].0), |i| index.get(i + 1).map(|j| j.0));
    Some(Fairness {
        jain_mean: index.iter().map(|j| j.1).sum::<f64>() / index.len() as f64,
        jain_min: index.iter().map(|j| j.1).fold(last.1, f64::min),
        above_0_9_from_s: from,
    })
}

/// Fairness across flows that start at different times (a campaign phase's
/// flows with `start` offsets): Jain's index of their window rates from the
/// moment the last one joined.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct JoinFairness {
    /// When the last flow started, seconds after the phase's start.
    pub joined_at_s: f64,
    pub window_s: f64,
    pub jain_mean: f64,
    pub jain_min: f64,
    /// Seconds after the join from which the index stayed at or above 0.9
    /// to the end; None if it did not.
    pub above_0_9_from_s: Option<f64>,
}

/// One flow's received series: `start_s` after the phase's start, its
/// samples' `t` counting from its own start.
pub struct FlowSeries<'a> {
    pub start_s: f64,
    pub samples: &'a [Sample],
}

/// Cumulative bytes of a (time, bytes) staircase at time `t`, linear
/// between points, 0 before the first.
fn bytes_at(cum: &[(f64, f64)], t: f64) -> f64 {
    match cum.iter().position(|p| p.0 >= t) {
        None => cum.last().map_or(0.0, |p| p.1),
        Some(0) => 0.0,
        Some(i) => {
            let (a, b) = (cum[i - 1], cum[i]);
            a.1 + (b.1 - a.1) * (t - a.0) / (b.0 - a.0).max(1e-12)
        }
    }
}

/// Jain's index over `flows` at every period from the last flow's start to
/// the first flow's end, each flow's rate the mean over the window before
/// (ten periods, at least 100 ms; a flow not yet started counts as sending
/// nothing, so the first windows after a join show the newcomer's share
/// rising from 0). None with fewer than two flows with samples.
pub fn join_fairness(flows: &[FlowSeries], period_s: f64) -> Option<JoinFairness> {
    let flows: Vec<&FlowSeries> = flows.iter().filter(|f| !f.samples.is_empty()).collect();
    if flows.len() < 2 || period_s <= 0.0 {
        return None;
    }
    let window = (10.0 * period_s).max(0.1);
    let cums: Vec<Vec<(f64, f64)>> = flows
        .iter()
        .map(|f| {
            let mut c = cumulative(f.samples, |x| x.bytes);
            c.iter_mut().for_each(|p| p.0 += f.start_s);
            c
        })
        .collect();
    let join = flows.iter().map(|f| f.start_s).fold(0.0, f64::max);
    let end = cums
        .iter()
        .filter_map(|c| c.last().map(|p| p.0))
        .fold(f64::INFINITY, f64::min);
    let steps = ((end - join) / period_s).floor();
    let index: Vec<(f64, f64)> = (1..=steps.max(0.0) as usize)
        .map(|k| join + k as f64 * period_s)
        .filter_map(|t| {
            let xs: Vec<f64> = cums
                .iter()
                .map(|c| (bytes_at(c, t) - bytes_at(c, t - window)) * 8.0 / window)
                .collect();
            Some((t, jain(&xs)?))
        })
        .collect();
    let f = summarise_index(&index)?;
    Some(JoinFairness {
        joined_at_s: join,
        window_s: window,
        jain_mean: f.jain_mean,
        jain_min: f.jain_min,
        above_0_9_from_s: f.above_0_9_from_s.map(|t| t - join),
    })
}

fn rtt_inflation(streams: &[StreamSeries]) -> Option<RttInflation> {
    let idle = streams
        .iter()
        .filter_map(|s| s.sender.first()?.srtt_ms)
        .fold(f64::INFINITY, f64::min);
    let mut loaded: Vec<f64> = streams
        .iter()
        .flat_map(|s| {
            s.sender[s.sender.len() / 2..]
                .iter()
                .filter_map(|x| x.srtt_ms)
        })
        .collect();
    if !idle.is_finite() || loaded.is_empty() {
        return None;
    }
    loaded.sort_by(f64::total_cmp);
    let median = loaded[loaded.len() / 2];
    Some(RttInflation {
        idle_ms: idle,
        loaded_ms: median,
        inflation_ms: median - idle,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Samples every 10 ms whose rate (bits/s) at time t is `rate(t)`.
    fn series(seconds: f64, rate: impl Fn(f64) -> f64) -> Vec<Sample> {
        let n = (seconds / 0.01).round() as usize;
        (1..=n)
            .map(|k| {
                let t = k as f64 * 0.01;
                Sample {
                    t,
                    bytes: (rate(t) * 0.01 / 8.0) as u64,
                    ..Sample::default()
                }
            })
            .collect()
    }

    /// Stream `id`'s sender alone for 3 s at `rate(t)`, all of it acknowledged,
    /// its retransmit count stepping from 0 to `retransmits` after `loss_after` s.
    fn sender_with_loss(
        id: u32,
        rate: impl Fn(f64) -> f64,
        loss_after: f64,
        retransmits: u64,
    ) -> Dynamics {
        let mut tx = series(3.0, rate);
        for s in &mut tx {
            s.acked_bytes = Some(s.bytes);
            s.retransmits = Some(if s.t > loss_after { retransmits } else { 0 });
        }
        let stream = [StreamSeries {
            id,
            sender: &tx,
            receiver: &[],
        }];
        analyse(&stream, 0.01, None).unwrap()
    }

    #[test]
    fn a_linear_ramp_reaches_90_percent_at_90_percent_of_its_length() {
        // 0 to 100 Mbit/s over 1 s, then flat for 1 s.
        let rx = series(2.0, |t| 100e6 * t.min(1.0));
        let d = analyse(
            &[StreamSeries {
                id: 0,
                sender: &[],
                receiver: &rx,
            }],
            0.01,
            None,
        )
        .unwrap();
        assert!((d.reference_bps - 100e6).abs() < 1e5, "{d:?}");
        // The 100 ms window ending at t averages the ramp at t - 0.05.
        let t = d.time_to_90_percent_s.unwrap();
        assert!((t - 0.95).abs() <= 0.011, "{t}");
        assert_eq!(d.fairness, None);
    }

    #[test]
    fn recovery_is_counted_from_the_loss_to_the_first_whole_window_back_at_90_percent() {
        // 80 Mbit/s acknowledged; at 1 s a loss halves it, then +40 Mbit/s per s.
        let rate = |t: f64| {
            if t <= 1.0 {
                80e6
            } else {
                (40e6 + 40e6 * (t - 1.0)).min(80e6)
            }
        };
        let d = sender_with_loss(3, rate, 1.0 + 1e-9, 7);
        assert_eq!(d.losses.len(), 1, "{d:?}");
        let l = &d.losses[0];
        assert_eq!((l.stream, l.retransmits), (3, 7));
        assert!((l.before_bps - 80e6).abs() < 1e5, "{l:?}");
        // 72 Mbit/s is reached at t = 1.8 s, as a 100 ms mean at about 1.85 s.
        let r = l.recovery_s.unwrap();
        assert!((r - 0.85).abs() <= 0.02, "{r}");
    }

    #[test]
    fn a_stall_just_before_the_loss_does_not_set_the_rate_before() {
        // 80 Mbit/s acknowledged, but nothing from 1.93 to 1.99 s (the host
        // stalled); the loss step and the backlog's ACKs at 2 s. The last 100 ms
        // window before the loss averages 24 Mbit/s; 93 of the second's 100
        // windows average 80.
        let rate = |t: f64| match t {
            t if t > 1.925 && t < 1.995 => 0.0,
            t if t > 1.995 && t < 2.005 => 8.0 * 80e6,
            _ => 80e6,
        };
        let d = sender_with_loss(1, rate, 1.995, 2);
        let l = &d.losses[0];
        assert!((l.before_bps - 80e6).abs() < 1e5, "{l:?}");
    }

    #[test]
    fn a_recoverys_cumulative_ack_does_not_end_the_recovery() {
        // 80 Mbit/s acknowledged; the loss step at 1.00 s; snd_una stands
        // still to 1.03 s, then the cumulative ACK of the repaired hole
        // arrives at 1.04 s (three times what stood still), then the halved
        // window regrows: 40 Mbit/s + 40 Mbit/s per s from 1.05 s.
        let rate = |t: f64| match t {
            t if t <= 1.0 + 1e-9 => 80e6,
            t if t <= 1.03 + 1e-9 => 0.0,
            t if t <= 1.04 + 1e-9 => 3.0 * 3.0 * 80e6,
            t => (40e6 + 40e6 * (t - 1.05)).min(80e6),
        };
        let d = sender_with_loss(1, rate, 0.995, 4);
        assert_eq!(d.losses.len(), 1, "{d:?}");
        // The first window after the loss (to 1.10 s) averages above 72
        // Mbit/s by the jump; the windows after it do not. 72 Mbit/s again
        // at 1.85 s, as a 100 ms mean at about 1.90 s: 0.90 s after the loss.
        let r = d.losses[0].recovery_s.unwrap();
        assert!((r - 0.90).abs() <= 0.02, "{r}");
    }

    #[test]
    fn a_known_link_rate_is_the_reference() {
        let rx = series(2.0, |t| 100e6 * t.min(1.0));
        let stream = [StreamSeries {
            id: 0,
            sender: &[],
            receiver: &rx,
        }];
        let d = analyse(&stream, 0.01, Some(200e6)).unwrap();
        assert_eq!((d.reference, d.reference_bps), ("link", 200e6));
        // Never at 180 Mbit/s: never at 90 % of the link.
        assert_eq!(d.time_to_90_percent_s, None);
        // 90 % of 107 Mbit/s is 96.3: the 100 ms window ending at 1.00 s
        // averages 95.5 (samples of 91 to 100), the one ending at 1.01 s 96.4.
        let d = analyse(&stream, 0.01, Some(107e6)).unwrap();
        let t = d.time_to_90_percent_s.unwrap();
        assert!((t - 1.01).abs() <= 0.005, "{t}");
        assert_eq!(
            analyse(&stream, 0.01, None).unwrap().reference,
            "max_sustained"
        );
    }

    #[test]
    fn jain_is_one_for_equal_shares_and_half_for_one_of_two() {
        let a = series(1.0, |_| 50e6);
        let b = series(1.0, |t| if t < 0.5 { 0.0 } else { 50e6 });
        let equal = [
            StreamSeries {
                id: 0,
                sender: &[],
                receiver: &a,
            },
            StreamSeries {
                id: 1,
                sender: &[],
                receiver: &a,
            },
        ];
        let f = analyse(&equal, 0.01, None).unwrap().fairness.unwrap();
        assert!(
            (f.jain_min - 1.0).abs() < 1e-9 && f.above_0_9_from_s == Some(0.1),
            "{f:?}"
        );
        let joining = [
            StreamSeries {
                id: 0,
                sender: &[],
                receiver: &a,
            },
            StreamSeries {
                id: 1,
                sender: &[],
                receiver: &b,
            },
        ];
        let f = analyse(&joining, 0.01, None).unwrap().fairness.unwrap();
        assert!((f.jain_min - 0.5).abs() < 1e-9, "{f:?}");
        // x = share of b: J = (1 + x)^2 / (2 (1 + x^2)) >= 0.9 from x = 0.5, a
        // 100 ms window half into b's start: 0.55 s.
        let from = f.above_0_9_from_s.unwrap();
        assert!((from - 0.55).abs() <= 0.011, "{from}");
    }

    #[test]
    fn a_flow_joining_later_is_measured_from_its_join() {
        // Flow a sends 60 Mbit/s from 0; flow b joins at 2 s, ramps from 0
        // to 30 Mbit/s over 0.5 s and stays there, while a drops to 30.
        let a = series(5.0, |t| {
            if t <= 2.0 {
                60e6
            } else {
                (60e6 - 60e6 * (t - 2.0)).max(30e6)
            }
        });
        let b = series(3.0, |t| (60e6 * t).min(30e6));
        let flows = [
            FlowSeries {
                start_s: 0.0,
                samples: &a,
            },
            FlowSeries {
                start_s: 2.0,
                samples: &b,
            },
        ];
        let f = join_fairness(&flows, 0.01).unwrap();
        assert_eq!(f.joined_at_s, 2.0);
        // Right after the join b has sent almost nothing: J near 1/2.
        assert!(f.jain_min < 0.52, "{f:?}");
        // x = b / a; J >= 0.9 from x = 0.5: b at 20 Mbit/s with a at 40
        // (t = 2 + 1/3 s), as a 100 ms mean about 50 ms later.
        let from = f.above_0_9_from_s.unwrap();
        assert!((from - 0.383).abs() <= 0.02, "{from}");
        assert_eq!(join_fairness(&flows[..1], 0.01), None);
    }

    #[test]
    fn rtt_inflation_is_the_loaded_median_less_the_first_sample() {
        let mut tx = series(1.0, |_| 1e6);
        for (i, s) in tx.iter_mut().enumerate() {
            s.srtt_ms = Some(if i == 0 { 20.0 } else { 30.0 });
        }
        let r = analyse(
            &[StreamSeries {
                id: 0,
                sender: &tx,
                receiver: &[],
            }],
            0.01,
            None,
        )
        .unwrap()
        .rtt
        .unwrap();
        assert_eq!((r.idle_ms, r.loaded_ms, r.inflation_ms), (20.0, 30.0, 10.0));
    }
}
