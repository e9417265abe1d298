//! The sweep page: throughput and CPU against the swept parameters (one
//! curve, or a curve per value of the others), the tables of means and of
//! every point, each point linked to its runs, and the model's prediction
//! beside the measured points when the runs carry one. It must not read the
//! intervals of single runs (that is the run page's).

use super::params::{tip, ErrorBars, ParamAxis, RateCells};
use super::sections::{config_section, hosts_section, runs_section};
use super::shared::{interrupted, legend_only, point_anchor, protocol_of, run_anchor};
use crate::export::{Export, PointData, RunData, Stat};
use crate::format;
use crate::html::{Cell, Section, Table};
use crate::plots::{color, dash, marker, Axis, LinePlot, Point, Quantity, Series};

pub(super) fn sweep_page(ex: &Export) -> (String, String, Vec<Section>) {
    let meta = ex.sweep.as_ref().expect("sweep export has sweep metadata");
    let udp = protocol_of(ex).as_deref() == Some("udp");
    let axes: Vec<ParamAxis> = meta.vary.iter().map(|v| ParamAxis::new(v, udp)).collect();
    let names: Vec<String> = axes.iter().map(|a| a.axis.label.clone()).collect();
    let title = if names.is_empty() {
        format!("Sweep {}", ex.id)
    } else {
        format!("Sweep {}: throughput vs {}", ex.id, names.join(" × "))
    };
    let mut sub = Vec::new();
    if let Some(h) = &meta.host {
        sub.push(format!("host {h}"));
    }
    if let Some(ms) = meta.created_unix_ms {
        sub.push(format::utc(ms));
    }
    sub.push(if udp { "UDP" } else { "TCP" }.to_string());
    sub.push(format!(
        "{} points × {} repetitions, {} order",
        ex.points.len(),
        meta.repeat.map(|r| r.to_string()).unwrap_or("?".into()),
        meta.order.as_deref().unwrap_or("fixed")
    ));
    sub.push(format!("{} runs", ex.runs.len()));
    if let Some(st) = &meta.status {
        sub.push(format!("status: {st}"));
    }
    let subtitle = sub.join(" · ");

    let mut results = Section::new("results", "Results");
    let received: Vec<&Stat> = ex
        .points
        .iter()
        .filter_map(|p| p.stats.received.as_ref())
        .collect();
    let bars = ErrorBars::of(&received);
    let cells = RateCells::of(
        ex.points
            .iter()
            .flat_map(|p| [p.stats.received.as_ref(), p.stats.sent.as_ref()])
            .flatten()
            .flat_map(|s| [s.mean, s.min, s.max])
            .flatten(),
    );
    match axes.len() {
        0 => results.note("This sweep varies no parameter: see the table of runs."),
        1 => one_param(ex, &axes[0], bars, &mut results),
        _ => many_params(ex, &axes, bars, udp, &mut results),
    }
    if axes.len() >= 2 {
        results.heading("Mean throughput");
        results.push(&means_table(ex, &axes, cells, false, udp).render());
        if udp {
            results.push(&means_table(ex, &axes, cells, true, udp).render());
        }
    }
    results.heading("All points");
    results.push(&points_table(ex, &axes, cells).render());
    if let Some(table) = super::twin::sweep_table(ex) {
        results.heading("Measured and simulated");
        results.push(&table);
    }

    let mut sections = vec![results];
    // The runs' --sample series overlaid: the first ones, as many as stay legible.
    let sampled: Vec<&crate::export::RunData> = ex.runs.iter().take(12).collect();
    sections.extend(super::samples::samples_section(&sampled));
    sections.push(config_section(ex));
    sections.push(hosts_section(ex));
    sections.push(runs_section(ex));
    (title, subtitle, sections)
}

/// Picks one statistic of a point.
pub(super) type StatOf = fn(&PointData) -> Option<&Stat>;

pub(super) fn one_param(ex: &Export, pa: &ParamAxis, bars: ErrorBars, out: &mut Section) {
    let mut plot = LinePlot::new(
        format!("Throughput and CPU vs {}", pa.axis.label),
        pa.axis.clone(),
        Axis::new("Throughput", Quantity::Rate).zero(),
    );
    let mut points: Vec<&PointData> = ex.points.iter().collect();
    points.sort_by(|a, b| {
        let xa = pa.x(a.param(&pa.name).unwrap_or(""));
        let xb = pa.x(b.param(&pa.name).unwrap_or(""));
        xa.total_cmp(&xb)
    });
    let specs: [(&str, StatOf, bool); 4] = [
        ("received (receiver)", |p| p.stats.received.as_ref(), false),
        ("sent (sender)", |p| p.stats.sent.as_ref(), false),
        ("CPU, local (client)", |p| p.stats.cpu_local.as_ref(), true),
        (
            "CPU, remote (server)",
            |p| p.stats.cpu_remote.as_ref(),
            true,
        ),
    ];
    for (i, (label, get, right)) in specs.iter().enumerate() {
        let mut series = Series::new(*label, color(i));
        series.marker = Some(marker(i));
        series.right = *right;
        if *right {
            series.dash = Some(if i == 2 { "7 4" } else { "2 3" });
            series.width = 1.6;
        }
        if i == 1 {
            // Sent equals received on a clean path: a wide pale band with
            // ring markers under the received line keeps both in sight.
            series.band = true;
            series.hollow = true;
        }
        let q = if *right {
            Quantity::Percent
        } else {
            Quantity::Rate
        };
        for p in &points {
            let Some(st) = get(p) else { continue };
            let Some(mean) = st.mean else { continue };
            let x = pa.x(p.param(&pa.name).unwrap_or(""));
            let mut pt = Point::new(x, mean);
            if !*right {
                pt.err = bars.bar(st);
            }
            pt.tip = Some(tip(
                &format!("{} = {}, {label}", pa.name, p.param(&pa.name).unwrap_or("")),
                st,
                q,
            ));
            pt.href = Some(point_anchor(p));
            series.points.push(pt);
        }
        if !series.points.is_empty() {
            plot.series.push(series);
        }
    }
    let model = predicted_series(&points, pa, "predicted (model)", PREDICTED_COLOR);
    let modelled = !model.points.is_empty();
    if modelled {
        plot.series.push(model);
    }
    let twins = super::twin::sweep_series(&points, pa, ex);
    let simulated = !twins.points.is_empty();
    if simulated {
        plot.series.push(twins);
    }
    if plot.series.iter().any(|s| s.right) {
        plot.y2 = Some(Axis::new("CPU", Quantity::Percent).zero().at_least(100.0));
    }
    let caption = format!(
        "Mean throughput at each {}: received (solid line, filled circles) and sent (pale band, open squares), left axis; mean CPU use of each end (dashed and dotted, right axis).{}{} {} Click a point for its row in the table of points and its runs.",
        pa.name,
        if modelled {
            " The grey dashed line with open diamonds is the model's prediction for each point (docs/model.md): the bound the path, window and loss set."
        } else {
            ""
        },
        if simulated {
            " The purple dashed line with open downward triangles is each point's ns-3 twin (sweep --simulate): the same path and test, simulated."
        } else {
            ""
        },
        bars.sentence()
    );
    if plot.has_data() {
        out.figure(&plot.render(), &caption);
    } else {
        out.note("No point has a measured throughput yet.");
    }
}

/// The prediction's line: apart from every measured series by colour, dash
/// and open markers.
const PREDICTED_COLOR: &str = "#555555";

/// The model's prediction at each point that has one, along `pa` (`points`
/// sorted along it).
fn predicted_series(
    points: &[&PointData],
    pa: &ParamAxis,
    label: &str,
    color: &'static str,
) -> Series {
    let mut series = Series::new(label, color);
    series.dash = Some("6 3");
    series.marker = Some(crate::svg::Marker::Diamond);
    series.hollow = true;
    series.width = 1.6;
    super::params::add_reference_points(&mut series, points, pa, "predicted", |p| {
        p.stats.predicted
    });
    series
}

/// The combinations of all parameters but the first, in sweep order.
pub(super) fn combos(axes: &[ParamAxis]) -> Vec<Vec<(String, String)>> {
    let mut out: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for a in &axes[1..] {
        let mut next = Vec::new();
        for c in &out {
            for v in &a.values {
                let mut c = c.clone();
                c.push((a.name.clone(), v.clone()));
                next.push(c);
            }
        }
        out = next;
    }
    out
}

pub(super) fn combo_label(c: &[(String, String)]) -> String {
    c.iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn matches(p: &PointData, c: &[(String, String)]) -> bool {
    c.iter().all(|(n, v)| p.param(n) == Some(v.as_str()))
}

pub(super) fn many_params(
    ex: &Export,
    axes: &[ParamAxis],
    bars: ErrorBars,
    udp: bool,
    out: &mut Section,
) {
    let pa = &axes[0];
    let others: Vec<String> = axes[1..].iter().map(|a| a.axis.label.clone()).collect();
    let mut plot = LinePlot::new(
        format!(
            "Received throughput vs {}, one curve per {}",
            pa.axis.label,
            others.join(" × ")
        ),
        pa.axis.clone(),
        Axis::new("Throughput", Quantity::Rate).zero(),
    );
    let mut cpu = LinePlot::new(
        format!("CPU use of the client vs {}", pa.axis.label),
        pa.axis.clone(),
        Axis::new("CPU, local (client)", Quantity::Percent)
            .zero()
            .at_least(100.0),
    );
    cpu.height = 340.0;
    let combos = combos(axes);
    let mut modelled = false;
    for (i, c) in combos.iter().enumerate() {
        let mut pts: Vec<&PointData> = ex.points.iter().filter(|p| matches(p, c)).collect();
        pts.sort_by(|a, b| {
            pa.x(a.param(&pa.name).unwrap_or(""))
                .total_cmp(&pa.x(b.param(&pa.name).unwrap_or("")))
        });
        let mut model = predicted_series(&pts, pa, &combo_label(c), color(i));
        model.legend = false;
        if !model.points.is_empty() {
            modelled = true;
            plot.series.push(model);
        }
        let (recv, sent, cpu_s) = combo_series(ex, pa, c, i, bars);
        if !recv.points.is_empty() {
            plot.series.push(recv);
        }
        if udp && !sent.points.is_empty() {
            plot.series.push(sent);
        }
        if !cpu_s.points.is_empty() {
            cpu.series.push(cpu_s);
        }
    }
    if udp {
        plot.series
            .push(legend_only("dashed: sent (sender)", "#555", Some("7 4")));
    }
    if modelled {
        plot.series.push(legend_only(
            "open diamonds, dashed: predicted (model)",
            PREDICTED_COLOR,
            Some("6 3"),
        ));
    }
    if plot.has_data() {
        out.figure(
            &plot.render(),
            &format!(
                "Mean received throughput at each {}, a curve per {}{}. {} Click a point for its row in the table of points and its runs.",
                pa.name,
                others.join(" × "),
                if udp {
                    "; dashed lines of the same colour: what the senders sent"
                } else {
                    ""
                },
                bars.sentence()
            ),
        );
    } else {
        out.note("No point has a measured throughput yet.");
    }
    if cpu.has_data() {
        out.figure(
            &cpu.render(),
            "Mean CPU use of the client process (100% = one core fully busy), a curve per value as above.",
        );
    }
}

/// The received, sent and CPU series of the points with the other
/// parameters at combination `c` (the `i`-th curve), along `pa`.
fn combo_series(
    ex: &Export,
    pa: &ParamAxis,
    c: &[(String, String)],
    i: usize,
    bars: ErrorBars,
) -> (Series, Series, Series) {
    let mut pts: Vec<&PointData> = ex.points.iter().filter(|p| matches(p, c)).collect();
    pts.sort_by(|a, b| {
        pa.x(a.param(&pa.name).unwrap_or(""))
            .total_cmp(&pa.x(b.param(&pa.name).unwrap_or("")))
    });
    let label = combo_label(c);
    let mk = |label: &str| {
        let mut s = Series::new(label, color(i));
        s.marker = Some(marker(i));
        s.dash = dash(i);
        s
    };
    let (mut recv, mut sent, mut cpu_s) = (mk(&label), mk(&label), mk(&label));
    sent.dash = Some("7 4");
    sent.legend = false;
    sent.marker = None;
    sent.width = 1.4;
    for p in pts {
        let x = pa.x(p.param(&pa.name).unwrap_or(""));
        let where_ = format!("{} = {}, {label}", pa.name, p.param(&pa.name).unwrap_or(""));
        if let Some(st) = &p.stats.received {
            if let Some(m) = st.mean {
                let mut pt = Point::new(x, m);
                pt.err = bars.bar(st);
                pt.tip = Some(tip(&format!("{where_}, received"), st, Quantity::Rate));
                pt.href = Some(point_anchor(p));
                recv.points.push(pt);
            }
        }
        if let Some(m) = p.stats.sent.as_ref().and_then(|s| s.mean) {
            sent.points.push(Point::new(x, m));
        }
        if let Some(st) = &p.stats.cpu_local {
            if let Some(m) = st.mean {
                let mut pt = Point::new(x, m);
                pt.tip = Some(tip(&format!("{where_}, CPU"), st, Quantity::Percent));
                pt.href = Some(point_anchor(p));
                cpu_s.points.push(pt);
            }
        }
    }
    (recv, sent, cpu_s)
}

/// The table of means as the seeds print them: first parameter down, the
/// combinations of the others across.
pub(super) fn means_table(
    ex: &Export,
    axes: &[ParamAxis],
    cells: RateCells,
    sent: bool,
    udp: bool,
) -> Table {
    let pa = &axes[0];
    let combos = combos(axes);
    let mut headers = vec![Cell::text(pa.axis.label.clone())];
    headers.extend(combos.iter().map(|c| Cell::num(combo_label(c))));
    let what = if sent { "sent" } else { "received" };
    let mut t = Table::new(headers).caption(format!(
        "Mean {what} throughput{}{}; hover a cell for its interval and spread",
        cells.suffix(),
        if udp && !sent { " (what arrived)" } else { "" }
    ));
    t.row_headers = true;
    for v in &pa.values {
        let mut row = vec![Cell::text(v.clone())];
        for c in &combos {
            let p = ex
                .points
                .iter()
                .find(|p| p.param(&pa.name) == Some(v.as_str()) && matches(p, c));
            let st = p.and_then(|p| {
                if sent {
                    p.stats.sent.as_ref()
                } else {
                    p.stats.received.as_ref()
                }
            });
            row.push(match (p, st.and_then(|s| s.mean.map(|m| (s, m)))) {
                (Some(p), Some((s, m))) => Cell::num(cells.text(m))
                    .title(tip(what, s, Quantity::Rate))
                    .link(point_anchor(p)),
                _ => Cell::num("–"),
            });
        }
        t.row(row);
    }
    t
}

pub(super) fn points_table(ex: &Export, axes: &[ParamAxis], cells: RateCells) -> Table {
    let mut headers: Vec<Cell> = axes.iter().map(|a| Cell::text(a.name.clone())).collect();
    for h in [
        "runs",
        "received mean",
        "interval",
        "stddev",
        "min",
        "max",
        "median",
        "sent mean",
        "CPU local",
        "CPU remote",
    ] {
        headers.push(Cell::num(h));
    }
    let modelled = ex.points.iter().any(|p| p.stats.predicted.is_some());
    if modelled {
        headers.push(Cell::num("predicted"));
        headers.push(Cell::num("measured / predicted"));
    }
    let mut t = Table::new(headers).caption(format!(
        "Statistics of every point over its repetitions (received throughput unless said{}; CPU in %; interval: confidence interval of the mean, cut at zero, or ± one standard deviation); runs: click one for its row in the table of all runs",
        cells.suffix()
    ));
    let r = |v: Option<f64>| Cell::num(v.map(|x| cells.text(x)).unwrap_or("–".into()));
    for p in &ex.points {
        let mut row: Vec<Cell> = axes
            .iter()
            .map(|a| Cell::text(p.param(&a.name).unwrap_or("–")))
            .collect();
        let st = p.stats.received.clone().unwrap_or_default();
        let runs = ex.runs_of(p);
        let stopped = runs.iter().filter(|r| interrupted(r.report)).count();
        row.push(runs_cell(p, &runs, st.n, stopped));
        row.push(r(st.mean));
        let short = p.confidence_reached == Some(false);
        let mut interval = Cell::num(match (st.ci_low, st.ci_high) {
            (Some(lo), Some(hi)) => cells.range(lo.max(0.0), hi),
            _ => st
                .stddev
                .filter(|_| st.n.is_none_or(|n| n > 1))
                .map(|d| format!("± {}", cells.text(d)))
                .unwrap_or("–".into()),
        })
        .flag(short);
        if short {
            interval =
                interval.title("wider than --confidence asked: the most runs were reached first");
        } else if let (Some(lo), Some(n)) = (st.ci_low, st.n) {
            if lo < 0.0 {
                interval = interval.title(format!(
                    "the confidence interval of {n} runs reaches {} below zero and is cut there: too few runs for it to mean much; see min and max",
                    format::rate(-lo)
                ));
            }
        }
        row.push(interval);
        row.push(r(st.stddev));
        row.push(r(st.min));
        row.push(r(st.max));
        row.push(r(st.median));
        row.push(r(p.stats.sent.as_ref().and_then(|s| s.mean)));
        for c in [&p.stats.cpu_local, &p.stats.cpu_remote] {
            row.push(Cell::num(
                c.as_ref()
                    .and_then(|s| s.mean)
                    .map(format::sig3)
                    .unwrap_or("–".into()),
            ));
        }
        if modelled {
            let predicted = p.stats.predicted;
            row.push(r(predicted));
            let ratio = st.mean.zip(predicted).map(|(m, v)| m / v);
            row.push(Cell::num(ratio.map_or("–".into(), |x| format!("{x:.3}"))));
        }
        let class = (stopped > 0).then_some("interrupted");
        t.row_at(point_anchor(p).trim_start_matches('#'), class, row);
    }
    t
}

/// The runs of a point: their count and a link to each one's row.
pub(super) fn runs_cell(p: &PointData, runs: &[&RunData], n: Option<u64>, stopped: usize) -> Cell {
    let count = n
        .map(|n| n as usize)
        .unwrap_or(runs.len().max(p.runs.len()));
    let mut text = count.to_string();
    if stopped > 0 {
        text.push_str(&format!(" ({stopped} interrupted)"));
    }
    let mut c = Cell::num(text).flag(stopped > 0);
    if runs.is_empty() && p.runs.is_empty() {
        return Cell::num("0, not measured");
    }
    let ids: Vec<i64> = if runs.is_empty() {
        p.runs.clone()
    } else {
        runs.iter().map(|r| r.id).collect()
    };
    c.links = ids
        .iter()
        .map(|id| (format!("#{id}"), run_anchor(*id)))
        .collect();
    c
}
