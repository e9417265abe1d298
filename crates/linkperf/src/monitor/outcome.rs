//! From a finished test to what monitoring keeps: the figures (received
//! throughput, loss ratio, RTT mean and p99 in seconds; an rr test's RTT is
//! its transactions', a throughput test's the sender's smoothed RTT) or the reason it
//! failed, and the alerts it raises against the test's thresholds. An alert
//! is raised when its condition starts (a host that stays down alerts once)
//! and armed again when the condition ends.

use super::schedule::Thresholds;
use linkperf_store::{MonitorAlert, MonitorResult};
use serde_json::Value;
use std::collections::BTreeSet;

/// Figures of a report, or why the test failed (its errors).
pub fn result_of(
    test: &str,
    src: &str,
    dst: &str,
    started_unix_ms: i64,
    outcome: &Result<Value, String>,
) -> MonitorResult {
    let mut r = MonitorResult {
        test: test.into(),
        src: src.into(),
        dst: dst.into(),
        started_unix_ms,
        ..Default::default()
    };
    let report = match outcome {
        Ok(report) => report,
        Err(why) => {
            r.reason = Some(why.clone());
            return r;
        }
    };
    let f = |p: &str| report.pointer(p).and_then(Value::as_f64);
    let rr = report.pointer("/test/kind").and_then(Value::as_str) == Some("rr");
    if rr {
        // Every transaction's RTT, measured by the agent.
        r.loss_ratio = f("/summary/loss_percent").map(|p| p / 100.0);
        r.rtt_mean_s = f("/summary/rtt_ms/mean").map(|ms| ms / 1000.0);
        r.rtt_p99_s = f("/summary/rtt_ms/p99").map(|ms| ms / 1000.0);
    } else {
        r.throughput_bps = f("/summary/received/bits_per_second");
        r.loss_ratio = f("/summary/received/loss_percent").map(|p| p / 100.0);
        r.rtt_mean_s = f("/summary/tcp/rtt_ms/mean").map(|ms| ms / 1000.0);
        r.rtt_p99_s = rtt_p99_ms(report).map(|ms| ms / 1000.0);
    }
    let errors: Vec<&str> = report
        .get("errors")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let interrupted = report.get("interrupted").and_then(Value::as_bool) == Some(true);
    let unanswered = rr && f("/summary/transactions") == Some(0.0);
    r.ok = errors.is_empty() && !interrupted && !unanswered;
    if !errors.is_empty() {
        r.reason = Some(errors.join("; "));
    } else if interrupted {
        r.reason = Some("interrupted".into());
    } else if unanswered {
        r.reason = Some("no transaction was answered".into());
    }
    r
}

/// The 99th percentile (nearest rank) of the senders' smoothed RTT samples,
/// one per stream and interval (tcp_info's srtt at each interval's end).
fn rtt_p99_ms(report: &Value) -> Option<f64> {
    let mut v: Vec<f64> = report
        .get("intervals")?
        .as_array()?
        .iter()
        .flat_map(|iv| {
            iv.get("streams")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .filter_map(|st| st.pointer("/sender/tcp/rtt_ms").and_then(Value::as_f64))
        .collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let rank = ((0.99 * v.len() as f64).ceil() as usize).clamp(1, v.len());
    Some(v[rank - 1])
}

/// Which alert conditions are on, per job key and kind.
#[derive(Default)]
pub struct AlertState {
    active: BTreeSet<(String, &'static str)>,
}

impl AlertState {
    /// Marks a condition as on without alerting (restored after a restart:
    /// a host that was down before it does not alert again).
    pub fn arm(&mut self, job: &str, kind: &'static str) {
        self.active.insert((job.to_string(), kind));
    }

    /// The alerts `r` raises. `median_bps`: the pair's median throughput of
    /// the last week before this result (`None` with fewer than 3 results).
    pub fn evaluate(
        &mut self,
        job: &str,
        r: &MonitorResult,
        t: &Thresholds,
        median_bps: Option<f64>,
        now_ms: i64,
    ) -> Vec<MonitorAlert> {
        let mut conditions: Vec<(&'static str, Option<String>)> = Vec::new();
        let failed = (!r.ok).then(|| {
            format!(
                "{} -> {}: the test failed: {}",
                r.src,
                r.dst,
                r.reason.as_deref().unwrap_or("no reason given")
            )
        });
        conditions.push(("failure", failed));
        let ok = r.ok;
        let low = match (t.throughput_below_percent, median_bps, r.throughput_bps) {
            (Some(p), Some(m), Some(v)) if ok && v < m * p / 100.0 => Some(format!(
                "{} -> {}: throughput {:.3} Mbit/s is below {p} % of the last week's median {:.3} Mbit/s",
                r.src, r.dst, v / 1e6, m / 1e6
            )),
            _ => None,
        };
        conditions.push(("throughput", low));
        let lossy = match (t.loss_above_ratio, r.loss_ratio) {
            (Some(limit), Some(v)) if ok && v > limit => Some(format!(
                "{} -> {}: loss {:.4} % is above {:.4} %",
                r.src,
                r.dst,
                v * 100.0,
                limit * 100.0
            )),
            _ => None,
        };
        conditions.push(("loss", lossy));
        let slow = match (t.rtt_p99_above_s, r.rtt_p99_s) {
            (Some(limit), Some(v)) if ok && v > limit => Some(format!(
                "{} -> {}: RTT p99 {:.3} ms is above {:.3} ms",
                r.src,
                r.dst,
                v * 1000.0,
                limit * 1000.0
            )),
            _ => None,
        };
        conditions.push(("rtt", slow));
        let mut out = Vec::new();
        for (kind, message) in conditions {
            let key = (job.to_string(), kind);
            match message {
                Some(message) => {
                    if self.active.insert(key) {
                        out.push(MonitorAlert {
                            unix_ms: now_ms,
                            test: r.test.clone(),
                            src: r.src.clone(),
                            dst: r.dst.clone(),
                            kind: kind.into(),
                            message,
                        });
                    }
                }
                // A failed test says nothing of loss or RTT: keep them as they were.
                None if !ok && kind != "failure" => {}
                None => {
                    self.active.remove(&key);
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_host_that_stays_down_alerts_once() {
        let mut s = AlertState::default();
        let t = Thresholds::default();
        let down = result_of("t", "a", "b", 0, &Err("connection refused".into()));
        assert_eq!(s.evaluate("t/a/b", &down, &t, None, 1).len(), 1);
        assert_eq!(s.evaluate("t/a/b", &down, &t, None, 2).len(), 0);
        let mut up = down.clone();
        up.ok = true;
        assert_eq!(s.evaluate("t/a/b", &up, &t, None, 3).len(), 0);
        assert_eq!(s.evaluate("t/a/b", &down, &t, None, 4).len(), 1);
    }

    #[test]
    fn throughput_below_the_median_share_alerts() {
        let mut s = AlertState::default();
        let t = Thresholds {
            throughput_below_percent: Some(80.0),
            ..Default::default()
        };
        let mut r = MonitorResult {
            ok: true,
            throughput_bps: Some(79.0e6),
            ..Default::default()
        };
        assert_eq!(
            s.evaluate("j", &r, &t, Some(100.0e6), 0)[0].kind,
            "throughput"
        );
        r.throughput_bps = Some(81.0e6);
        assert!(s.evaluate("j", &r, &t, Some(100.0e6), 0).is_empty());
    }
}
