//! Sweeps: a parameter study of one test. Every combination of the varied
//! options of a [`TestSpec`](crate::spec::TestSpec), each repeated, every run
//! stored in the archive as it finishes (so an interrupted sweep loses
//! nothing and a resumed one finishes it), and per-point statistics with a
//! Student-t confidence interval. Prints nothing and knows no command line.

pub mod network;
pub mod plan;
pub mod run;
pub mod stats;
pub mod twin;

use linkperf_store::{RunRow, SweepRow};
use linkperf_units::ReportUnit;
use serde_json::{json, Value};
use stats::Summary;

/// `--confidence LEVEL,WIDTH`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Confidence {
    pub level: f64,
    pub width_percent: f64,
}

pub fn parse_confidence(s: &str) -> Result<Confidence, String> {
    let bad = || format!("--confidence '{s}': expected LEVEL,WIDTH in percent, e.g. 99,5");
    let (level, width) = match s.split_once(',') {
        Some((l, w)) => (l.trim(), w.trim()),
        None => (s.trim(), "5"),
    };
    let level: f64 = level.trim_end_matches('%').parse().map_err(|_| bad())?;
    let width: f64 = width.trim_end_matches('%').parse().map_err(|_| bad())?;
    if !(50.0..100.0).contains(&level) {
        return Err(format!(
            "--confidence: the level must be at least 50 and below 100 %, got {level}"
        ));
    }
    if !(width > 0.0 && width <= 100.0) {
        return Err(format!(
            "--confidence: the width must be above 0 and at most 100 %, got {width}"
        ));
    }
    Ok(Confidence {
        level,
        width_percent: width,
    })
}

/// The confidence level used for intervals of a stored sweep (95 % unless
/// the sweep asked for another).
pub fn level_of(spec: &Value) -> f64 {
    spec.pointer("/confidence/level")
        .and_then(Value::as_f64)
        .unwrap_or(95.0)
}

/// Statistics of one point of a stored sweep.
#[derive(Debug, Clone)]
pub struct PointSummary {
    pub index: usize,
    pub params: Value,
    pub run_ids: Vec<i64>,
    pub received: Option<Summary>,
    pub sent: Option<Summary>,
    pub cpu_local: Option<Summary>,
    pub cpu_remote: Option<Summary>,
    /// With --confidence: whether the interval reached the wanted width.
    pub confidence_reached: Option<bool>,
    /// The model's prediction for the point (bit/s of payload; the mean over
    /// its runs, which differ only if the host's kernel changed): from each
    /// run's `summary.prediction`, present when the sweep ran in a testbed
    /// or with `--path`. Needs the runs' reports loaded.
    pub predicted: Option<f64>,
    /// The ns-3 twin's received throughput (bit/s) and its run id, with
    /// `--simulate` (see [`twin::attach`]).
    pub simulated: Option<f64>,
    pub simulated_run: Option<i64>,
}

impl PointSummary {
    pub fn label(&self) -> String {
        self.params
            .as_object()
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default()
    }

    pub fn stats_json(&self) -> Value {
        json!({
            "received_bits_per_second": self.received,
            "sent_bits_per_second": self.sent,
            "cpu_local_percent": self.cpu_local,
            "cpu_remote_percent": self.cpu_remote,
            "predicted_bits_per_second": self.predicted,
            "simulated_bits_per_second": self.simulated,
            "simulated_run": self.simulated_run,
        })
    }

    /// Mean received over the simulated twin's received.
    pub fn measured_over_simulated(&self) -> Option<f64> {
        let measured = self.received.as_ref()?.mean;
        self.simulated.filter(|s| *s > 0.0).map(|s| measured / s)
    }

    /// Mean received over predicted.
    pub fn measured_over_predicted(&self) -> Option<f64> {
        let measured = self.received.as_ref()?.mean;
        self.predicted.filter(|p| *p > 0.0).map(|p| measured / p)
    }
}

/// The prediction a stored run's report carries for its main direction.
fn predicted_of(run: &RunRow) -> Option<f64> {
    run.report
        .as_ref()?
        .pointer("/summary/prediction/value")?
        .as_f64()
}

/// The stored runs of point `k` of a sweep.
pub fn point_runs(runs: &[RunRow], k: usize) -> Vec<&RunRow> {
    runs.iter()
        .filter(|r| r.slot.map(|s| s.point) == Some(k as i64))
        .collect()
}

/// Per-point statistics of a stored sweep from its runs.
pub fn summarise(sweep: &SweepRow, runs: &[RunRow]) -> Vec<PointSummary> {
    let level = level_of(&sweep.spec);
    let width = sweep
        .spec
        .pointer("/confidence/width_percent")
        .and_then(Value::as_f64);
    sweep
        .points
        .iter()
        .enumerate()
        .map(|(k, params)| {
            let mine = point_runs(runs, k);
            let col = |f: fn(&RunRow) -> Option<f64>| -> Option<Summary> {
                let v: Vec<f64> = mine.iter().filter_map(|r| f(r)).collect();
                Summary::of(&v, level)
            };
            let received = col(|r| r.metrics.received_bps);
            let confidence_reached = width.map(|w| {
                received
                    .as_ref()
                    .and_then(Summary::half_width_percent)
                    .is_some_and(|h| h <= w / 2.0)
            });
            PointSummary {
                index: k,
                params: params.clone(),
                run_ids: mine.iter().map(|r| r.id).collect(),
                received,
                sent: col(|r| r.metrics.sent_bps),
                cpu_local: col(|r| r.metrics.cpu_local_percent),
                cpu_remote: col(|r| r.metrics.cpu_remote_percent),
                confidence_reached,
                predicted: col(predicted_of).map(|s| s.mean),
                simulated: None,
                simulated_run: None,
            }
        })
        .collect()
}

/// The `sweep -J` document (also `results show ID -J` for a sweep).
pub fn sweep_json(sweep: &SweepRow, points: &[PointSummary]) -> Value {
    let spec = &sweep.spec;
    json!({
        "schema": crate::report::SCHEMA,
        "kind": "sweep",
        "id": sweep.id,
        "status": sweep.status,
        "host": sweep.host,
        "vary": spec.get("vary"),
        "repeat": spec.get("repeat"),
        "order": spec.get("order"),
        "seed": spec.get("seed"),
        "confidence": spec.get("confidence"),
        "points": points.iter().map(|p| json!({
            "index": p.index,
            "params": p.params,
            "runs": p.run_ids.len(),
            "run_ids": p.run_ids,
            "received_bits_per_second": p.received,
            "sent_bits_per_second": p.sent,
            "cpu_local_percent": p.cpu_local,
            "cpu_remote_percent": p.cpu_remote,
            "confidence_reached": p.confidence_reached,
            "predicted_bits_per_second": p.predicted,
            "measured_over_predicted": p.measured_over_predicted(),
            "simulated_bits_per_second": p.simulated,
            "simulated_run": p.simulated_run,
            "measured_over_simulated": p.measured_over_simulated(),
        })).collect::<Vec<_>>(),
    })
}

fn rate(v: Option<f64>, unit: ReportUnit) -> String {
    v.map(|bps| unit.rate(bps)).unwrap_or_else(|| "-".into())
}

fn percent(v: Option<f64>) -> String {
    v.map(|x| format!("{x:.1}%")).unwrap_or_else(|| "-".into())
}

/// The human table of a sweep, one row per point, as the seeds print them.
pub fn sweep_table(sweep: &SweepRow, points: &[PointSummary]) -> String {
    sweep_table_in(sweep, points, ReportUnit::default())
}

/// [`sweep_table`] with rates in `unit` (`-f`).
pub fn sweep_table_in(sweep: &SweepRow, points: &[PointSummary], unit: ReportUnit) -> String {
    let names: Vec<String> = sweep
        .spec
        .get("vary")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|v| v.get("name").and_then(Value::as_str).map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let level = level_of(&sweep.spec);
    let mut header: Vec<String> = names.clone();
    header.extend(
        [
            "runs",
            "received",
            &format!("±{level}% CI"),
            "stddev",
            "min",
            "max",
            "sent",
            "cpu local",
            "cpu remote",
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let predicted = points.iter().any(|p| p.predicted.is_some());
    if predicted {
        header.extend(["predicted".to_string(), "meas/pred".to_string()]);
    }
    let simulated = points.iter().any(|p| p.simulated.is_some());
    if simulated {
        header.extend(["simulated".to_string(), "meas/sim".to_string()]);
    }
    let mut rows = vec![header];
    for p in points {
        let mut row: Vec<String> = names
            .iter()
            .map(|n| {
                p.params
                    .get(n)
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string()
            })
            .collect();
        let r = p.received.as_ref();
        row.push(p.run_ids.len().to_string());
        row.push(rate(r.map(|s| s.mean), unit));
        row.push(
            r.and_then(Summary::half_width_percent)
                .map(|h| format!("±{h:.1}%"))
                .unwrap_or_else(|| "-".into()),
        );
        row.push(rate(r.and_then(|s| s.stddev), unit));
        row.push(rate(r.map(|s| s.min), unit));
        row.push(rate(r.map(|s| s.max), unit));
        row.push(rate(p.sent.as_ref().map(|s| s.mean), unit));
        row.push(percent(p.cpu_local.as_ref().map(|s| s.mean)));
        row.push(percent(p.cpu_remote.as_ref().map(|s| s.mean)));
        if predicted {
            row.push(rate(p.predicted, unit));
            row.push(
                p.measured_over_predicted()
                    .map_or_else(|| "-".into(), |r| format!("{r:.3}")),
            );
        }
        if simulated {
            row.push(rate(p.simulated, unit));
            row.push(
                p.measured_over_simulated()
                    .map_or_else(|| "-".into(), |r| format!("{r:.3}")),
            );
        }
        rows.push(row);
    }
    let widths: Vec<usize> = (0..rows[0].len())
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .enumerate()
            .map(|(c, v)| format!("{v:>w$}", w = widths[c]))
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}

/// netperf-style warnings for points whose interval stayed too wide.
pub fn confidence_warnings(sweep: &SweepRow, points: &[PointSummary]) -> Vec<String> {
    let spec = &sweep.spec;
    let Some(width) = spec
        .pointer("/confidence/width_percent")
        .and_then(Value::as_f64)
    else {
        return vec![];
    };
    let level = level_of(spec);
    points
        .iter()
        .filter(|p| p.confidence_reached == Some(false))
        .map(|p| {
            let got = p
                .received
                .as_ref()
                .and_then(Summary::half_width_percent)
                .map(|h| format!("±{h:.1}%"))
                .unwrap_or_else(|| "undefined".into());
            format!(
                "!!! confidence not reached for {}: the {level}% interval is {got} of the mean \
                 after {} runs, wanted ±{}%",
                p.label(),
                p.run_ids.len(),
                width / 2.0
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confidence_option() {
        assert_eq!(
            parse_confidence("99,5").unwrap(),
            Confidence {
                level: 99.0,
                width_percent: 5.0
            }
        );
        assert_eq!(parse_confidence("95").unwrap().width_percent, 5.0);
        assert!(parse_confidence("99,x").is_err());
        assert!(parse_confidence("100,5").unwrap_err().contains("level"));
        assert!(parse_confidence("99,0").unwrap_err().contains("width"));
    }
}
