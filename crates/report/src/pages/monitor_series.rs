//! A monitored pair's time series: throughput, loss and RTT of every stored
//! result over time, alerts marked on the plots and listed, and the table
//! of stored results (one row each, so nothing is hidden by the plot).

use super::monitor::{alert_table, AlertLine};
use crate::format;
use crate::html::{self, Cell, Section, Table};
use crate::plots::{Axis, LinePlot, Point, Quantity, Series};

/// One stored result.
#[derive(Debug, Clone, Default)]
pub struct SeriesPoint {
    pub unix_ms: i64,
    pub ok: bool,
    pub reason: Option<String>,
    pub throughput_bps: Option<f64>,
    pub loss_ratio: Option<f64>,
    pub rtt_mean_s: Option<f64>,
    pub rtt_p99_s: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct PairSeries {
    pub test: String,
    pub src: String,
    pub dst: String,
    pub points: Vec<SeriesPoint>,
    pub alerts: Vec<AlertLine>,
    /// Back to the dashboard.
    pub back: String,
}

/// The time axis: seconds, hours or days since the first point, by span.
fn time_scale(points: &[SeriesPoint]) -> (i64, f64, &'static str) {
    let first = points.first().map_or(0, |p| p.unix_ms);
    let span = points.last().map_or(0, |p| p.unix_ms) - first;
    let (div, unit) = if span > 2 * 86_400_000 {
        (86_400_000.0, "days")
    } else if span > 2 * 3_600_000 {
        (3_600_000.0, "hours")
    } else {
        (1000.0, "s")
    };
    (first, div, unit)
}

fn plot(
    s: &PairSeries,
    kind: &str,
    title: &str,
    y: Axis,
    value: impl Fn(&SeriesPoint) -> Option<f64>,
    tip: impl Fn(f64) -> String,
) -> Option<String> {
    let (first, div, unit) = time_scale(&s.points);
    let x = |ms: i64| (ms - first) as f64 / div;
    let axis = Axis::new(
        &format!("{unit} since {}", format::utc(first)),
        Quantity::Count,
    );
    let mut plot = LinePlot::new(title, axis, y.zero());
    plot.height = 300.0;
    let mut line = Series::new("measured", "#000000");
    line.marker = Some(crate::svg::Marker::Circle);
    for p in s.points.iter().filter(|p| p.ok) {
        if let Some(v) = value(p) {
            let mut pt = Point::new(x(p.unix_ms), v);
            pt.tip = Some(format!("{}: {}", format::utc(p.unix_ms), tip(v)));
            line.points.push(pt);
        }
    }
    let mut marks = Series::new("alert", "#d9480f");
    marks.width = 0.0;
    marks.marker = Some(crate::svg::Marker::Triangle);
    if line.points.is_empty() {
        return None;
    }
    // A plot marks its own kind of alert and failures.
    for a in s
        .alerts
        .iter()
        .filter(|a| a.kind == kind || a.kind == "failure")
    {
        let near = s
            .points
            .iter()
            .filter(|p| p.ok)
            .filter_map(|p| Some((p.unix_ms, value(p)?)))
            .min_by_key(|(t, _)| (t - a.unix_ms).abs());
        let y = near.map_or(0.0, |n| n.1);
        let mut pt = Point::new(x(a.unix_ms), y);
        pt.tip = Some(format!("{}: {}", format::utc(a.unix_ms), a.message));
        marks.points.push(pt);
    }
    plot.series.push(line);
    if !marks.points.is_empty() {
        plot.series.push(marks);
    }
    Some(plot.render())
}

pub fn pair_series(s: &PairSeries) -> String {
    let mut over = Section::new("series", "Over time");
    let plots = [
        plot(
            s,
            "throughput",
            "Received throughput",
            Axis::new("Throughput", Quantity::Rate),
            |p| p.throughput_bps,
            format::rate,
        ),
        plot(
            s,
            "loss",
            "Loss",
            Axis::new("Loss", Quantity::Percent),
            |p| p.loss_ratio.map(|r| r * 100.0),
            format::percent,
        ),
        plot(
            s,
            "rtt",
            "RTT p99",
            Axis::new("RTT", Quantity::Millis),
            |p| p.rtt_p99_s.map(|r| r * 1000.0),
            format::millis,
        ),
    ];
    for p in plots.into_iter().flatten() {
        over.figure(
            &p,
            "Triangles mark this kind of alert and failed tests; hover a point for its value.",
        );
    }
    let mut alerts = Section::new("alerts", "Alerts of this pair");
    if s.alerts.is_empty() {
        alerts.para("No alert.");
    } else {
        alerts.push(&alert_table(&s.alerts).render());
    }
    let mut table = Table::new(vec![
        Cell::text("time (UTC)"),
        Cell::num("throughput"),
        Cell::num("loss"),
        Cell::num("RTT mean"),
        Cell::num("RTT p99"),
        Cell::text("outcome"),
    ]);
    for p in &s.points {
        let opt = |v: Option<f64>, f: fn(f64) -> String| v.map(f).unwrap_or_else(|| "-".into());
        table.row_at(
            format!("t{}", p.unix_ms),
            None,
            vec![
                Cell::text(format::utc(p.unix_ms)),
                Cell::num(opt(p.throughput_bps, format::rate)),
                Cell::num(opt(p.loss_ratio.map(|r| r * 100.0), format::percent)),
                Cell::num(opt(p.rtt_mean_s.map(|r| r * 1000.0), format::millis)),
                Cell::num(opt(p.rtt_p99_s.map(|r| r * 1000.0), format::millis)),
                Cell::text(if p.ok {
                    "ok".to_string()
                } else {
                    format!("failed: {}", p.reason.as_deref().unwrap_or(""))
                })
                .flag(!p.ok),
            ],
        );
    }
    let mut stored = Section::new("results", "Stored results");
    stored.push(&format!(
        "<p><a href=\"{}\">Back to the dashboard</a>. {} result(s).</p>",
        html::escape(&s.back),
        s.points.len()
    ));
    stored.push(&table.render());
    html::document(
        &format!("{}: {} -> {}", s.test, s.src, s.dst),
        "Every stored result of this pair and test, oldest first.",
        &[over, alerts, stored],
        "Made by `linkperf monitor run --http` from its archive.",
    )
}
