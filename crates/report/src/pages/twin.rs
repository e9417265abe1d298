//! Measured beside simulated (`--simulate`, docs/simulate.md): seed 004's
//! table (connection, experimental, simulation and their ratio) for a run
//! and its ns-3 twin, for every point of a sweep or every flow of a
//! campaign, and the twin's throughput drawn beside the measured one in a
//! distinct colour and dash. The twins are the export's `twins` (one per
//! sweep point) or a campaign flow's `simulated`.

use super::params::ParamAxis;
use super::run_plots::time_axis;
use super::shared::point_anchor;
use crate::export::{Export, Phase, PointData};
use crate::format;
use crate::html::{Cell, Section, Table};
use crate::plots::{Axis, LinePlot, Point, Quantity, Series};
use crate::svg::Marker;
use serde_json::Value;

/// The simulated series' look: apart from the measured (black, solid),
/// the streams' palette (whose orange and open squares draw what was sent)
/// and the model's grey: dark purple, dashed, open downward triangles.
pub(super) const SIM_COLOR: &str = "#6a3d9a";
const SIM_DASH: &str = "5 3";

/// One row of the table: what was measured and what ns-3 predicted.
pub(super) struct Pair {
    pub connection: String,
    pub href: Option<String>,
    pub experimental: Option<f64>,
    pub simulation: Option<f64>,
}

/// Seed 004's "Comparison of Experimental and Simulation Performance
/// Predictions", with the ratio.
pub(super) fn pairs_table(pairs: &[Pair], source: &str) -> Table {
    let mut t = Table::new(vec![
        Cell::text("Connection"),
        Cell::text("Experimental"),
        Cell::text(format!("Simulation ({source})")),
        Cell::text("Experimental / simulation"),
    ])
    .caption(format!(
        "Measured throughput (received) beside the {source} twin's: the same path and test, simulated."
    ));
    t.class = "twins";
    for p in pairs {
        let rate = |v: Option<f64>| v.map(format::rate).unwrap_or_else(|| "–".into());
        let ratio = match (p.experimental, p.simulation) {
            (Some(e), Some(s)) if s > 0.0 => format!("{:.3}", e / s),
            _ => "–".into(),
        };
        let mut connection = Cell::text(&p.connection);
        if let Some(h) = &p.href {
            connection = connection.link(h.clone());
        }
        t.row(vec![
            connection,
            Cell::num(rate(p.experimental)),
            Cell::num(rate(p.simulation)),
            Cell::num(ratio),
        ]);
    }
    t
}

fn received(rep: &Value) -> Option<f64> {
    rep.pointer("/summary/received/bits_per_second")
        .and_then(Value::as_f64)
}

/// The simulator a twin names (`"source": "ns-3 3.37"`).
pub(super) fn source_of(twin: &Value) -> String {
    twin.get("source")
        .and_then(Value::as_str)
        .unwrap_or("ns-3")
        .to_string()
}

/// Received throughput per interval of a run document, as plot points.
fn interval_points(rep: &Value) -> Vec<Point> {
    let Some(ivs) = rep.get("intervals").and_then(Value::as_array) else {
        return vec![];
    };
    ivs.iter()
        .filter_map(|iv| {
            let end = iv.get("end")?.as_f64()?;
            let start = iv.get("start").and_then(Value::as_f64).unwrap_or(end);
            let v = iv.pointer("/sum/bits_per_second")?.as_f64()?;
            Some(super::run_plots::interval_point(start, end, v))
        })
        .collect()
}

/// The simulated line of a plot.
pub(super) fn sim_series(label: impl Into<String>) -> Series {
    let mut s = Series::new(label, SIM_COLOR);
    s.dash = Some(SIM_DASH);
    s.marker = Some(Marker::TriangleDown);
    s.hollow = true;
    s.width = 2.0;
    s
}

/// A measured and a simulated document's throughput over time, one plot.
pub(super) fn over_time(title: &str, measured: &Value, twin: &Value) -> LinePlot {
    let mut plot = LinePlot::new(
        title,
        time_axis(),
        Axis::new("Throughput", Quantity::Rate).zero(),
    );
    let mut m = Series::new("measured, received", "#000000");
    m.width = 2.5;
    m.marker = Some(Marker::Circle);
    m.points = interval_points(measured);
    let mut s = sim_series(format!("simulated ({}), received", source_of(twin)));
    s.points = interval_points(twin);
    plot.series.push(m);
    plot.series.push(s);
    plot
}

/// The run page's section: the run beside its twin (a sweep point's).
pub(super) fn run_section(ex: &Export) -> Option<Section> {
    let run = ex.runs.first()?;
    let twin = ex.twins.first()?;
    let rep = run.report;
    let source = source_of(twin.report);
    let text = |p: &str| rep.pointer(p).and_then(Value::as_str).unwrap_or("?");
    let connection = format!(
        "{} → {} ({})",
        text("/start/local/hostname"),
        text("/test/server"),
        rep.pointer("/test/congestion")
            .and_then(Value::as_str)
            .or_else(|| twin.report.pointer("/test/congestion")?.as_str())
            .unwrap_or("TCP")
    );
    let mut sec = Section::new("simulated", "Measured and simulated");
    sec.para(&format!(
        "Run {} and its {source} twin, run {} (the same testbed path and test, simulated).",
        run.id, twin.id
    ));
    let pair = Pair {
        connection,
        href: None,
        experimental: received(rep),
        simulation: received(twin.report),
    };
    sec.push(&pairs_table(&[pair], &source).render());
    let plot = over_time(
        "Throughput per interval, measured and simulated",
        rep,
        twin.report,
    );
    if plot.has_data() {
        sec.figure(
            &plot.render(),
            &format!("Received throughput per interval: measured (black, solid, filled circles) and simulated by {source} (purple, dashed, open downward triangles)."),
        );
    }
    Some(sec)
}

/// The sweep's table: one row per point that has a twin.
pub(super) fn sweep_table(ex: &Export) -> Option<String> {
    let pairs: Vec<Pair> = ex
        .points
        .iter()
        .filter(|p| p.stats.simulated.is_some())
        .map(|p| Pair {
            connection: p
                .params
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(" "),
            href: Some(point_anchor(p)),
            experimental: p.stats.received.as_ref().and_then(|s| s.mean),
            simulation: p.stats.simulated,
        })
        .collect();
    if pairs.is_empty() {
        return None;
    }
    let source = ex
        .twins
        .first()
        .map(|t| source_of(t.report))
        .unwrap_or_else(|| "ns-3".into());
    Some(pairs_table(&pairs, &source).render())
}

/// The twins' throughput at each point along `pa` (`points` sorted along it).
pub(super) fn sweep_series(points: &[&PointData], pa: &ParamAxis, ex: &Export) -> Series {
    let source = ex
        .twins
        .first()
        .map(|t| source_of(t.report))
        .unwrap_or_else(|| "ns-3".into());
    let label = format!("simulated ({source})");
    let mut series = sim_series(&label);
    super::params::add_reference_points(&mut series, points, pa, "simulated", |p| {
        p.stats.simulated
    });
    series
}

/// A campaign phase's flows beside their twins (each flow's mean over the
/// sessions against its simulation), and the first session's aggregate
/// beside the sum of the twins' intervals.
pub(super) fn campaign_phase(name: &str, phases: &[&Phase], sec: &mut Section) {
    let mut pairs: Vec<Pair> = Vec::new();
    let mut measured: Vec<Vec<f64>> = Vec::new();
    for fl in phases.iter().flat_map(|p| &p.flows) {
        let connection = format!("{} → {}", fl.from, fl.to);
        let k = match pairs.iter().position(|p| p.connection == connection) {
            Some(k) => k,
            None => {
                pairs.push(Pair {
                    connection,
                    href: None,
                    experimental: None,
                    simulation: None,
                });
                measured.push(Vec::new());
                pairs.len() - 1
            }
        };
        measured[k].extend(fl.received);
        pairs[k].simulation = pairs[k].simulation.or(fl.simulated);
    }
    if pairs.iter().all(|p| p.simulation.is_none()) {
        return;
    }
    for (p, m) in pairs.iter_mut().zip(&measured) {
        p.experimental = (!m.is_empty()).then(|| m.iter().sum::<f64>() / m.len() as f64);
    }
    sec.heading("Measured and simulated");
    sec.push(&pairs_table(&pairs, "ns-3").render());
    let Some(first) = phases.first() else {
        return;
    };
    let mut plot = LinePlot::new(
        format!("Aggregate throughput, {name}: measured and simulated"),
        time_axis(),
        Axis::new("Aggregate throughput", Quantity::Rate).zero(),
    );
    let mut m = Series::new("measured, first session (sum over flows)", "#000000");
    m.width = 2.5;
    m.marker = Some(Marker::Circle);
    m.points = first
        .intervals
        .iter()
        .filter_map(|iv| Some(Point::over(iv.start?, iv.end?, iv.bits_per_second)))
        .collect();
    let mut s = sim_series("simulated, ns-3 (sum over flows)");
    let mut sums: Vec<(f64, f64, f64)> = Vec::new();
    for fl in &first.flows {
        for (k, &(start, end, v)) in fl.simulated_intervals.iter().enumerate() {
            match sums.get_mut(k) {
                Some(x) => x.2 += v,
                None => sums.push((start, end, v)),
            }
        }
    }
    s.points = sums
        .into_iter()
        .map(|(a, b, v)| Point::over(a, b, v))
        .collect();
    plot.series.push(m);
    plot.series.push(s);
    if plot.has_data() {
        sec.figure(
            &plot.render(),
            "Aggregate received throughput per interval: the first session as measured (black, solid, filled circles) and the flows' ns-3 twins summed (purple, dashed, open downward triangles); the phase's flows are simulated together, sharing the links they share in the testbed.",
        );
    }
}
