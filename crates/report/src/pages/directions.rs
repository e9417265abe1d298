//! A run's directions as its report gives them (each way's summary and the
//! key of its interval sums) and the per-interval jitter of one direction:
//! read from the report for the run page's tables and plots alike. No
//! tables or plots here.

use super::shared::{f, s};
use serde_json::Value;

/// A direction's summary and the interval sums that belong to it.
pub(super) struct Direction<'a> {
    pub(super) name: String,
    pub(super) summary: &'a Value,
    pub(super) sum_key: &'static str,
}

pub(super) fn directions(rep: &Value) -> Vec<Direction<'_>> {
    let mut out = Vec::new();
    for (key, sum_key) in [("summary", "sum"), ("summary_reverse", "sum_reverse")] {
        if let Some(sm) = rep.get(key).filter(|x| x.is_object()) {
            out.push(Direction {
                name: s(sm, "/direction").unwrap_or_else(|| "client_to_server".into()),
                summary: sm,
                sum_key,
            });
        }
    }
    out
}

pub(super) fn direction_label(d: &str) -> &str {
    match d {
        "client_to_server" => "client → server",
        "server_to_client" => "server → client",
        other => other,
    }
}

/// The per-interval jitter of one direction (intervals outside the -O warm-up).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct JitterStats {
    pub(super) mean: f64,
    pub(super) p50: f64,
    pub(super) p95: f64,
    pub(super) max: f64,
}

impl JitterStats {
    pub(super) fn of(intervals: &[&Value], sum_key: &str) -> Option<JitterStats> {
        let mut v: Vec<f64> = intervals
            .iter()
            .filter(|iv| iv.get("omitted").and_then(Value::as_bool) != Some(true))
            .filter_map(|iv| iv.get(sum_key).and_then(|s| f(s, "/jitter_ms")))
            .filter(|x| x.is_finite())
            .collect();
        if v.is_empty() {
            return None;
        }
        v.sort_by(f64::total_cmp);
        Some(JitterStats {
            mean: v.iter().sum::<f64>() / v.len() as f64,
            p50: percentile(&v, 50.0),
            p95: percentile(&v, 95.0),
            max: v[v.len() - 1],
        })
    }
}

/// The `p`-th percentile of sorted values, linear between the closest ranks.
pub(super) fn percentile(sorted: &[f64], p: f64) -> f64 {
    let pos = (p / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    match sorted.get(i + 1) {
        Some(next) => sorted[i] + (next - sorted[i]) * frac,
        None => sorted[i],
    }
}
