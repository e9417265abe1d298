//! The small readers and helpers every page uses: JSON getters, the anchors
//! of table rows, whether and how far a run was interrupted, a legend-only
//! series, a mean. No page layout here.

use crate::export::{scalar_text, Export, PointData};
use crate::format;
use crate::plots::Series;
use serde_json::Value;

pub(super) fn f(v: &Value, ptr: &str) -> Option<f64> {
    v.pointer(ptr).and_then(Value::as_f64)
}

pub(super) fn s(v: &Value, ptr: &str) -> Option<String> {
    v.pointer(ptr).and_then(scalar_text)
}

pub(super) fn or_dash(v: Option<String>) -> String {
    v.unwrap_or_else(|| "–".to_string())
}

pub(super) fn legend_only(label: &str, color: &'static str, dash: Option<&'static str>) -> Series {
    let mut s = Series::new(label, color);
    s.dash = dash;
    s
}

pub(super) fn protocol_of(ex: &Export) -> Option<String> {
    ex.runs
        .iter()
        .find_map(|r| s(r.report, "/test/protocol"))
        .or_else(|| {
            ex.sweep
                .as_ref()
                .and_then(|sw| sw.base_options)
                .and_then(|b| {
                    if b.get("udp").and_then(Value::as_bool) == Some(true) {
                        Some("udp".to_string())
                    } else {
                        s(b, "/protocol")
                    }
                })
        })
}

/// The anchor of a point's row in the table of all points.
pub(super) fn point_anchor(p: &PointData) -> String {
    format!("#point-{}", p.index)
}

/// The anchor of a run's row in the table of all runs.
pub(super) fn run_anchor(id: i64) -> String {
    format!("#run-{id}")
}

/// Whether a run was stopped early (Ctrl-C): its numbers cover part of it.
pub(super) fn interrupted(rep: &Value) -> bool {
    rep.get("interrupted").and_then(Value::as_bool) == Some(true)
}

/// "stopped after 2.1 s of 10 s": how much of an interrupted run ran.
pub(super) fn stopped_after(rep: &Value) -> String {
    let ran = f(rep, "/summary/sent/seconds")
        .filter(|s| *s > 0.0)
        .or_else(|| {
            rep.get("intervals")
                .and_then(Value::as_array)
                .and_then(|a| a.last())
                .and_then(|iv| f(iv, "/end"))
        });
    let planned = f(rep, "/test/duration_s");
    match (ran, planned) {
        (Some(r), Some(p)) => format!(
            "stopped after {} s of {} s",
            format::trim(r, 1),
            format::trim(p, 2)
        ),
        (Some(r), None) => format!("stopped after {} s", format::trim(r, 1)),
        _ => "stopped early".to_string(),
    }
}

pub(super) fn id_list(ids: &[i64]) -> String {
    if ids.len() > 12 {
        format!("{} … {} ({} runs)", ids[0], ids[ids.len() - 1], ids.len())
    } else {
        ids.iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

pub(super) fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}
