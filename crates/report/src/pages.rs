//! The pages: sweep, single run, campaign; each with its plots, the tables
//! people publish, host facts, the test configuration and every run.

use crate::export::{scalar_text, Export, Kind, Phase, PointData, RunData, Stat, Vary};
use crate::format;
use crate::html::{self, Cell, Section, Table};
use crate::plots::{
    color, dash, marker, Axis, Band, BarPlot, BarSeries, LinePlot, Point, Quantity, Rule, Series,
};
use serde_json::Value;
use std::collections::BTreeMap;

/// Runs shown in full (plots, intervals) on a run page; the rest are in the table.
const DETAILED_RUNS: usize = 10;

pub fn render(ex: &Export) -> String {
    let (title, subtitle, sections) = match ex.kind {
        Kind::Sweep => sweep_page(ex),
        Kind::Run if crate::rr::is_rr(ex) => crate::rr::page(ex),
        Kind::Run => run_page(ex),
        Kind::Campaign => campaign_page(ex),
    };
    let software = ex
        .runs
        .iter()
        .find_map(|r| r.report.get("software").and_then(Value::as_str))
        .unwrap_or("linkperf");
    let footer = format!(
        "Made by `linkperf report` from an archive export (schema {}), measured with {software}. \
         Rates in bits/s with SI prefixes (1 Mbit/s = 10^6 bit/s); sizes in bytes with binary \
         prefixes (1 KiB = 1024 bytes). Hover a point or bar for its value.",
        crate::SCHEMA
    );
    html::document_with_banners(&title, &subtitle, &banners(ex), &sections, &footer)
}

/// Warnings that belong above everything else: the numbers below cover
/// only part of what was planned.
fn banners(ex: &Export) -> Vec<String> {
    let mut out = Vec::new();
    let stopped: Vec<&RunData> = ex.runs.iter().filter(|r| interrupted(r.report)).collect();
    match ex.kind {
        Kind::Run => {
            for r in stopped {
                out.push(format!(
                    "Interrupted: run {} was stopped early ({}). Every number on this page covers only the part that ran.",
                    r.id,
                    stopped_after(r.report)
                ));
            }
        }
        Kind::Sweep => {
            let meta = ex.sweep.as_ref();
            if meta.and_then(|m| m.status.as_deref()) == Some("partial") {
                let measured = ex
                    .points
                    .iter()
                    .filter(|p| !ex.runs_of(p).is_empty() || !p.runs.is_empty())
                    .count();
                let planned = meta
                    .and_then(|m| m.repeat)
                    .filter(|_| {
                        meta.is_some_and(|m| m.raw.get("confidence").is_none_or(Value::is_null))
                    })
                    .map(|r| format!(" of the {} planned", r as usize * ex.points.len()))
                    .unwrap_or_default();
                out.push(format!(
                    "Partial sweep: it stopped before it finished (interrupted, or a run failed). {measured} of its {} points have runs; {} runs are stored{planned}. Finish it with linkperf sweep --resume {} (and the --db it is stored in).",
                    ex.points.len(),
                    ex.runs.len(),
                    ex.id
                ));
            }
            if !stopped.is_empty() {
                out.push(format!(
                    "Interrupted runs: {} of this sweep's runs were stopped early ({}); they are marked in the tables and their numbers cover only the part that ran.",
                    stopped.len(),
                    id_list(&stopped.iter().map(|r| r.id).collect::<Vec<_>>())
                ));
            }
        }
        Kind::Campaign => {
            if ex.raw.get("interrupted").and_then(Value::as_bool) == Some(true) {
                out.push(
                    "Interrupted: this campaign was stopped early; its phases and sessions cover only the part that ran."
                        .to_string(),
                );
            }
        }
    }
    out
}

// ---------------------------------------------------------------- helpers

fn f(v: &Value, ptr: &str) -> Option<f64> {
    v.pointer(ptr).and_then(Value::as_f64)
}

fn s(v: &Value, ptr: &str) -> Option<String> {
    v.pointer(ptr).and_then(scalar_text)
}

fn or_dash(v: Option<String>) -> String {
    v.unwrap_or_else(|| "–".to_string())
}

/// How a swept parameter's values are read and named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ParamKind {
    Bytes,
    Rate,
    Count,
    Seconds,
    Category,
}

/// Kind and human name of a sweep parameter, by its option name.
fn param_info(name: &str, udp: bool) -> (ParamKind, String) {
    let (kind, label) = match name.trim_start_matches('-') {
        "window" | "w" => (ParamKind::Bytes, "Socket buffer (-w)"),
        "sndbuf" => (ParamKind::Bytes, "Send buffer, SO_SNDBUF (--sndbuf)"),
        "rcvbuf" => (ParamKind::Bytes, "Receive buffer, SO_RCVBUF (--rcvbuf)"),
        "length" | "l" if udp => (ParamKind::Bytes, "Datagram size (-l)"),
        "length" | "l" => (ParamKind::Bytes, "Write size (-l)"),
        "set-mss" | "set_mss" | "mss" | "M" => (ParamKind::Bytes, "MSS (-M)"),
        "bytes" | "n" => (ParamKind::Bytes, "Bytes to send (-n)"),
        "bitrate" | "b" => (ParamKind::Rate, "Target rate per stream (-b)"),
        "pacing-rate" | "pacing_rate" => (ParamKind::Rate, "Pacing rate (--pacing-rate)"),
        "parallel" | "P" => (ParamKind::Count, "Parallel streams (-P)"),
        "time" | "t" => (ParamKind::Seconds, "Test length (-t)"),
        "omit" | "O" => (ParamKind::Seconds, "Omitted warm-up (-O)"),
        "congestion" | "C" => (ParamKind::Category, "Congestion control (-C)"),
        "no-delay" | "nodelay" | "N" => (ParamKind::Category, "TCP_NODELAY (-N)"),
        _ => (ParamKind::Count, ""),
    };
    let label = if label.is_empty() {
        name.to_string()
    } else {
        label.to_string()
    };
    (kind, label)
}

fn param_value(kind: ParamKind, text: &str) -> Option<f64> {
    match kind {
        ParamKind::Bytes => linkperf_units::parse_size(text).ok().map(|v| v as f64),
        ParamKind::Rate => linkperf_units::parse_rate(text).ok().map(|v| v as f64),
        ParamKind::Seconds => linkperf_units::parse_duration(text)
            .ok()
            .map(|d| d.as_secs_f64()),
        ParamKind::Count => text.trim().parse::<f64>().ok().filter(|v| v.is_finite()),
        ParamKind::Category => None,
    }
}

/// A swept parameter laid on an x axis.
struct ParamAxis {
    name: String,
    values: Vec<String>,
    /// Numeric position of each value, or None when categorical.
    numbers: Option<Vec<f64>>,
    axis: Axis,
}

impl ParamAxis {
    fn new(v: &Vary, udp: bool) -> ParamAxis {
        let (kind, label) = param_info(&v.name, udp);
        let numbers: Option<Vec<f64>> = v.values.iter().map(|x| param_value(kind, x)).collect();
        let axis = match &numbers {
            Some(nums) if !nums.is_empty() => {
                let log = v.geometric.unwrap_or_else(|| looks_geometric(nums));
                let q = match kind {
                    ParamKind::Bytes => Quantity::Bytes,
                    ParamKind::Rate => Quantity::Rate,
                    ParamKind::Seconds => Quantity::Seconds,
                    _ => Quantity::Count,
                };
                Axis::new(&label, q)
                    .log(log && nums.iter().all(|x| *x > 0.0))
                    .ticks_at(nums.clone())
                    .padded()
            }
            _ => Axis::new(&label, Quantity::Category).categories(v.values.clone()),
        };
        ParamAxis {
            name: v.name.clone(),
            values: v.values.clone(),
            numbers: numbers.filter(|n| !n.is_empty()),
            axis,
        }
    }

    /// x of a point with this parameter's `value`.
    fn x(&self, value: &str) -> f64 {
        let i = self.values.iter().position(|v| v == value);
        match (&self.numbers, i) {
            (Some(n), Some(i)) => n[i],
            (None, Some(i)) => i as f64,
            _ => f64::NAN,
        }
    }
}

/// Three or more positive values whose ratios are about constant and span
/// more than a factor of 8: a log axis shows them evenly.
fn looks_geometric(v: &[f64]) -> bool {
    let mut v: Vec<f64> = v.to_vec();
    v.sort_by(f64::total_cmp);
    if v.len() < 3 || v[0] <= 0.0 || v[v.len() - 1] / v[0] < 8.0 {
        return false;
    }
    let ratios: Vec<f64> = v.windows(2).map(|w| w[1] / w[0]).collect();
    let r0 = ratios[0];
    ratios.iter().all(|r| (r / r0 - 1.0).abs() < 0.25)
}

/// How a table prints rates: in one unit named in the caption, or, when
/// they span more than a factor of 100, each with its own unit.
#[derive(Debug, Clone, Copy)]
struct RateCells {
    unit: Option<format::Unit>,
}

impl RateCells {
    fn of(values: impl Iterator<Item = f64>) -> RateCells {
        let (lo, hi) = values
            .filter(|v| v.is_finite() && *v > 0.0)
            .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
        let unit = (hi > 0.0 && hi / lo <= 100.0).then(|| format::rate_unit(hi));
        RateCells { unit }
    }
    fn text(&self, v: f64) -> String {
        match self.unit {
            Some(u) => format::sig3(v / u.factor),
            None => format::rate(v),
        }
    }
    /// "7.71 – 8.18 Mbit/s": the unit once when both ends share it.
    fn range(&self, lo: f64, hi: f64) -> String {
        let (ul, uh) = (format::rate_unit(lo), format::rate_unit(hi));
        match self.unit {
            None if ul == uh => format!(
                "{} – {} {}",
                format::sig3(lo / ul.factor),
                format::sig3(hi / uh.factor),
                ul.name
            ),
            _ => format!("{} – {}", self.text(lo), self.text(hi)),
        }
    }
    /// " in Mbit/s" or "".
    fn suffix(&self) -> String {
        self.unit
            .map(|u| format!(" in {}", u.name))
            .unwrap_or_default()
    }
}

/// Fewest runs at a point for which its error bar is a confidence
/// interval; below, the bar spans the lowest to the highest run. (A 95 %
/// Student-t interval of 2 runs is ±12.7 standard deviations: wider than
/// anything measured and, for a rate, reaching below zero.)
const MIN_RUNS_FOR_CI: u64 = 5;

/// What the error bars of a sweep show, and a sentence saying so.
#[derive(Debug, Clone, Copy, PartialEq)]
enum ErrorBars {
    Ci(Option<f64>),
    Stddev,
    /// The lowest and highest run, for points with few runs.
    MinMax,
    None,
}

impl ErrorBars {
    fn of(stats: &[&Stat]) -> ErrorBars {
        // One run per point has no spread to show.
        if stats.is_empty() || stats.iter().all(|s| s.n.is_some_and(|n| n <= 1)) {
            return ErrorBars::None;
        }
        let few = stats
            .iter()
            .filter_map(|s| s.n)
            .any(|n| n > 1 && n < MIN_RUNS_FOR_CI);
        if few && stats.iter().all(|s| s.min.is_some() && s.max.is_some()) {
            return ErrorBars::MinMax;
        }
        if stats
            .iter()
            .any(|s| s.ci_low.is_some() && s.ci_high.is_some())
        {
            ErrorBars::Ci(stats.iter().find_map(|s| s.level))
        } else if stats.iter().any(|s| s.stddev.is_some()) {
            ErrorBars::Stddev
        } else {
            ErrorBars::None
        }
    }
    /// The bar of one point; clamped at zero, as no rate is negative even
    /// when a wide interval of few runs reaches below it.
    fn bar(&self, s: &Stat) -> Option<(f64, f64)> {
        let (lo, hi) = match self {
            ErrorBars::Ci(_) => (s.ci_low?, s.ci_high?),
            ErrorBars::Stddev => {
                let (m, d) = (s.mean?, s.stddev?);
                (m - d, m + d)
            }
            ErrorBars::MinMax => (s.min?, s.max?),
            ErrorBars::None => return None,
        };
        Some((lo.max(0.0), hi.max(0.0)))
    }
    fn sentence(&self) -> String {
        match self {
            ErrorBars::Ci(Some(l)) => format!(
                "Error bars: {}% confidence interval of the mean (Student t) over the repetitions of each point.",
                format::trim(*l, 2)
            ),
            ErrorBars::Ci(None) => "Error bars: confidence interval of the mean (Student t, as stored in the archive) over the repetitions of each point.".to_string(),
            ErrorBars::Stddev => "Error bars: ±1 standard deviation over the repetitions of each point (no confidence interval in the export), cut at zero.".to_string(),
            ErrorBars::MinMax => format!(
                "Error bars: the lowest and the highest run at each point (min–max), not a confidence interval: some points have fewer than {MIN_RUNS_FOR_CI} runs, too few for one to mean much."
            ),
            ErrorBars::None => "No error bars: one run per point, or no spread in the export.".to_string(),
        }
    }
}

fn tip(label: &str, s: &Stat, q: Quantity) -> String {
    let v = |x: f64| match q {
        Quantity::Rate => format::rate(x),
        Quantity::Percent => format::percent(x),
        _ => format::sig3(x),
    };
    let mut t = format!("{label}: {}", s.mean.map(v).unwrap_or_default());
    if let (Some(lo), Some(hi)) = (s.ci_low, s.ci_high) {
        // No rate or CPU share is negative: an interval reaching below zero is cut there.
        t.push_str(&format!(" (CI {} – {})", v(lo.max(0.0)), v(hi)));
    }
    if let (Some(lo), Some(hi), Some(n)) = (s.min, s.max, s.n) {
        if n > 1 {
            t.push_str(&format!(", runs {} – {}", v(lo), v(hi)));
        }
    }
    if let Some(d) = s.stddev {
        t.push_str(&format!(", sd {}", v(d)));
    }
    if let Some(n) = s.n {
        t.push_str(&format!(", n = {n}"));
    }
    t
}

fn legend_only(label: &str, color: &'static str, dash: Option<&'static str>) -> Series {
    let mut s = Series::new(label, color);
    s.dash = dash;
    s
}

fn protocol_of(ex: &Export) -> Option<String> {
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

// ---------------------------------------------------------------- sweep

fn sweep_page(ex: &Export) -> (String, String, Vec<Section>) {
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

    let mut sections = vec![results];
    sections.push(config_section(ex));
    sections.push(hosts_section(ex));
    sections.push(runs_section(ex));
    (title, subtitle, sections)
}

/// Picks one statistic of a point.
type StatOf = fn(&PointData) -> Option<&Stat>;

fn one_param(ex: &Export, pa: &ParamAxis, bars: ErrorBars, out: &mut Section) {
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
    if plot.series.iter().any(|s| s.right) {
        plot.y2 = Some(Axis::new("CPU", Quantity::Percent).zero().at_least(100.0));
    }
    let caption = format!(
        "Mean throughput at each {}: received (solid line, filled circles) and sent (pale band, open squares), left axis; mean CPU use of each end (dashed and dotted, right axis). {} Click a point for its row in the table of points and its runs.",
        pa.name,
        bars.sentence()
    );
    if plot.has_data() {
        out.figure(&plot.render(), &caption);
    } else {
        out.note("No point has a measured throughput yet.");
    }
}

/// The anchor of a point's row in the table of all points.
fn point_anchor(p: &PointData) -> String {
    format!("#point-{}", p.index)
}

/// The anchor of a run's row in the table of all runs.
fn run_anchor(id: i64) -> String {
    format!("#run-{id}")
}

/// The combinations of all parameters but the first, in sweep order.
fn combos(axes: &[ParamAxis]) -> Vec<Vec<(String, String)>> {
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

fn combo_label(c: &[(String, String)]) -> String {
    c.iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn matches(p: &PointData, c: &[(String, String)]) -> bool {
    c.iter().all(|(n, v)| p.param(n) == Some(v.as_str()))
}

fn many_params(ex: &Export, axes: &[ParamAxis], bars: ErrorBars, udp: bool, out: &mut Section) {
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
    for (i, c) in combos.iter().enumerate() {
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

/// The table of means as the seeds print them: first parameter down, the
/// combinations of the others across.
fn means_table(ex: &Export, axes: &[ParamAxis], cells: RateCells, sent: bool, udp: bool) -> Table {
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

fn points_table(ex: &Export, axes: &[ParamAxis], cells: RateCells) -> Table {
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
        let class = (stopped > 0).then_some("interrupted");
        t.row_at(point_anchor(p).trim_start_matches('#'), class, row);
    }
    t
}

/// Whether a run was stopped early (Ctrl-C): its numbers cover part of it.
fn interrupted(rep: &Value) -> bool {
    rep.get("interrupted").and_then(Value::as_bool) == Some(true)
}

/// "stopped after 2.1 s of 10 s": how much of an interrupted run ran.
fn stopped_after(rep: &Value) -> String {
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

/// The runs of a point: their count and a link to each one's row.
fn runs_cell(p: &PointData, runs: &[&RunData], n: Option<u64>, stopped: usize) -> Cell {
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

// ---------------------------------------------------------------- shared sections

fn value_text(key: &str, v: &Value) -> String {
    let size_keys = ["length", "sndbuf", "rcvbuf", "window", "mss", "bytes"];
    let rate_keys = ["bitrate", "pacing_rate"];
    match v {
        Value::Null => "default".to_string(),
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if size_keys.contains(&key) && x >= 1024.0 {
                format!("{} ({})", n, format::size_label(x))
            } else if rate_keys.contains(&key) {
                format::rate_label(x)
            } else {
                n.to_string()
            }
        }
        Value::Array(a) => a
            .iter()
            .map(|x| scalar_text(x).unwrap_or_else(|| x.to_string()))
            .collect::<Vec<_>>()
            .join(", "),
        Value::Object(_) => v.to_string(),
        other => scalar_text(other).unwrap_or_default(),
    }
}

fn object_facts(v: &Value) -> Vec<(String, String)> {
    v.as_object()
        .map(|o| {
            o.iter()
                .map(|(k, x)| (k.clone(), value_text(k, x)))
                .collect()
        })
        .unwrap_or_default()
}

fn config_section(ex: &Export) -> Section {
    let mut sec = Section::new("config", "Test configuration");
    if let Some(meta) = &ex.sweep {
        let mut rows = Vec::new();
        for v in &meta.vary {
            rows.push((
                format!("--vary {}", v.name),
                format!(
                    "{}{}",
                    v.values.join(", "),
                    match v.geometric {
                        Some(true) => " (geometric)",
                        Some(false) => " (arithmetic)",
                        None => "",
                    }
                ),
            ));
        }
        if let Some(r) = meta.repeat {
            rows.push(("repeat".into(), r.to_string()));
        }
        if let Some(o) = &meta.order {
            rows.push(("order".into(), o.clone()));
        }
        if let Some(sd) = &meta.seed {
            rows.push(("shuffle seed".into(), sd.clone()));
        }
        if let Some(id) = &meta.id {
            rows.push(("sweep id".into(), id.clone()));
        }
        for k in ["confidence", "pause_s", "max_runs"] {
            if let Some(x) = meta.raw.get(k).filter(|x| !x.is_null()) {
                rows.push((k.to_string(), value_text(k, x)));
            }
        }
        sec.heading("Sweep");
        sec.push(&html::facts(&rows));
        if let Some(b) = meta.base_options {
            // A varied option is not common, whatever the base value says.
            let mut rows = object_facts(b);
            rows.retain(|(k, _)| !varied_key(&meta.vary, k));
            if !rows.is_empty() {
                sec.heading("Options common to every run");
                sec.push(&html::facts(&rows));
            }
        }
    }
    if let Some(r) = ex.runs.first() {
        if let Some(test) = r.report.get("test") {
            let mut rows = object_facts(test);
            if let Some(meta) = ex.sweep.as_ref().filter(|_| ex.kind == Kind::Sweep) {
                rows.retain(|(k, _)| k != "start_at_unix_ms");
                for (k, v) in rows.iter_mut() {
                    if varied_key(&meta.vary, k) {
                        *v = format!("{v} (in this run; the sweep varies it)");
                    }
                }
            }
            sec.heading(&format!(
                "As run (run {}{})",
                r.id,
                if ex.runs.len() > 1 {
                    ", the first; swept options differ between runs"
                } else {
                    ""
                }
            ));
            sec.push(&html::facts(&rows));
        }
    }
    if ex.kind == Kind::Campaign {
        if let Some(c) = ex.raw.get("campaign").filter(|c| c.is_object()) {
            sec.heading("Campaign");
            sec.push(&html::facts(&object_facts(c)));
        }
    }
    if sec.body.is_empty() {
        sec.note("The export carries no configuration.");
    }
    sec
}

/// The option names a swept parameter sets, as a test configuration or a
/// sweep's base options name them: `window` sets both socket buffers.
fn config_keys(vary_name: &str) -> Vec<String> {
    let n = vary_name.trim_start_matches('-');
    let keys: &[&str] = match n {
        "window" | "w" => &["window", "sndbuf", "rcvbuf"],
        "length" | "l" => &["length"],
        "parallel" | "P" => &["parallel"],
        "bitrate" | "b" => &["bitrate"],
        "pacing-rate" | "pacing_rate" => &["pacing_rate"],
        "congestion" | "C" => &["congestion"],
        "nodelay" | "no-delay" | "N" => &["nodelay", "no_delay"],
        "time" | "t" => &["time", "duration_s"],
        "bytes" | "n" => &["bytes"],
        "mss" | "set-mss" | "set_mss" | "M" => &["mss", "set_mss"],
        "omit" | "O" => &["omit", "omit_s"],
        "udp" | "u" => &["udp", "protocol"],
        "reverse" | "R" | "bidir" => &["reverse", "bidir", "direction"],
        "zerocopy" | "Z" => &["zerocopy"],
        "dont-fragment" | "dont_fragment" => &["dont_fragment"],
        _ => &[],
    };
    let mut out: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    out.push(n.replace('-', "_"));
    out
}

/// Whether the option named `key` is set by one of the swept parameters.
fn varied_key(vary: &[Vary], key: &str) -> bool {
    let key = key.replace('-', "_");
    vary.iter().any(|v| config_keys(&v.name).contains(&key))
}

/// Rows of host facts; sysctls under their names so people can set them.
fn host_rows(local: &Value, remote: &Value) -> Vec<Vec<Cell>> {
    let known: [(&str, &str); 10] = [
        ("hostname", "host name"),
        ("kernel", "kernel"),
        ("software", "software"),
        ("cpus", "CPUs"),
        ("congestion_default", "net.ipv4.tcp_congestion_control"),
        (
            "congestion_available",
            "net.ipv4.tcp_available_congestion_control",
        ),
        ("rmem_max", "net.core.rmem_max"),
        ("wmem_max", "net.core.wmem_max"),
        ("tcp_rmem", "net.ipv4.tcp_rmem (min default max)"),
        ("tcp_wmem", "net.ipv4.tcp_wmem (min default max)"),
    ];
    let show = |v: Option<&Value>, key: &str| -> String {
        match v {
            None | Some(Value::Null) => "–".into(),
            Some(Value::Array(a)) if key.starts_with("tcp_") && key.ends_with("mem") => a
                .iter()
                .map(|x| {
                    x.as_f64()
                        .map(|b| format!("{} ({})", b as u64, format::size_label(b)))
                        .unwrap_or_else(|| x.to_string())
                })
                .collect::<Vec<_>>()
                .join("  "),
            Some(Value::Number(n)) if key.ends_with("mem_max") => {
                let b = n.as_f64().unwrap_or(0.0);
                format!("{n} ({})", format::size_label(b))
            }
            Some(x) => value_text(key, x),
        }
    };
    let mut rows = Vec::new();
    for (k, label) in known {
        if local.get(k).is_some() || remote.get(k).is_some() {
            rows.push(vec![
                Cell::text(label),
                Cell::text(show(local.get(k), k)),
                Cell::text(show(remote.get(k), k)),
            ]);
        }
    }
    let mut extra: Vec<String> = Vec::new();
    for o in [local, remote] {
        if let Some(o) = o.as_object() {
            for k in o.keys() {
                if !known.iter().any(|(n, _)| n == k) && !extra.contains(k) {
                    extra.push(k.clone());
                }
            }
        }
    }
    for k in extra {
        rows.push(vec![
            Cell::text(k.clone()),
            Cell::text(show(local.get(&k), &k)),
            Cell::text(show(remote.get(&k), &k)),
        ]);
    }
    rows
}

fn hosts_section(ex: &Export) -> Section {
    let mut sec = Section::new("hosts", "Host facts");
    // Runs grouped by identical host facts, so a changed kernel or sysctl shows.
    let mut groups: Vec<(String, &Value, &Value, Vec<i64>)> = Vec::new();
    for r in &ex.runs {
        let (Some(l), Some(rm)) = (
            r.report.pointer("/start/local"),
            r.report.pointer("/start/remote"),
        ) else {
            continue;
        };
        let key = format!("{l}{rm}");
        match groups.iter_mut().find(|g| g.0 == key) {
            Some(g) => g.3.push(r.id),
            None => groups.push((key, l, rm, vec![r.id])),
        }
    }
    if groups.is_empty() {
        sec.note("The export carries no host facts.");
        return sec;
    }
    if groups.len() > 1 {
        sec.push(&format!(
            "<p class=\"warn\">The hosts changed during these runs: {} different sets of facts (kernel, congestion control or buffer sysctls).</p>",
            groups.len()
        ));
    }
    let total = groups.len();
    for (_, l, r, ids) in groups.into_iter().take(4) {
        let mut t = Table::new(vec![
            Cell::text("fact"),
            Cell::text("local (client)"),
            Cell::text("remote (server)"),
        ]);
        t.row_headers = true;
        if total > 1 {
            t = t.caption(format!("runs {}", id_list(&ids)));
        }
        for row in host_rows(l, r) {
            t.row(row);
        }
        sec.push(&t.render());
    }
    sec
}

fn id_list(ids: &[i64]) -> String {
    if ids.len() > 12 {
        format!("{} … {} ({} runs)", ids[0], ids[ids.len() - 1], ids.len())
    } else {
        ids.iter()
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn runs_section(ex: &Export) -> Section {
    let mut sec = Section::new("runs", "All runs");
    if ex.runs.is_empty() {
        sec.note("The export has no runs.");
        return sec;
    }
    let sweep_params: Vec<String> = ex
        .sweep
        .as_ref()
        .map(|m| m.vary.iter().map(|v| v.name.clone()).collect())
        .unwrap_or_default();
    let mut headers = vec![Cell::num("run")];
    if ex.kind == Kind::Sweep {
        headers.push(Cell::num("point"));
        headers.push(Cell::num("rep."));
        headers.extend(sweep_params.iter().map(|p| Cell::text(p.clone())));
    }
    for h in [
        "started (UTC)",
        "test",
        "sent",
        "received",
        "retr. / loss",
        "RTT",
        "CPU local",
        "CPU remote",
        "limited by / error",
    ] {
        headers.push(
            if h == "started (UTC)" || h == "test" || h.starts_with("limited") {
                Cell::text(h)
            } else {
                Cell::num(h)
            },
        );
    }
    let mut t = Table::new(headers);
    for r in &ex.runs {
        let class = interrupted(r.report).then_some("interrupted");
        // A run page's sections already carry "run-ID".
        let id = match ex.kind {
            Kind::Run => format!("row-run-{}", r.id),
            _ => run_anchor(r.id).trim_start_matches('#').to_string(),
        };
        t.row_at(id, class, run_row(ex, r, &sweep_params));
    }
    let n = ex.runs.len();
    if ex.kind != Kind::Run {
        sec.push(
            "<p class=\"note\">Each run's own page, with its time series: <code>linkperf report RUN_ID -o run.html</code> (with the same <code>--db</code> as this report); hover a run's id for its command.</p>"
        );
    }
    sec.details(
        &format!("{n} run{}", if n == 1 { "" } else { "s" }),
        &t.render(),
        n <= 100,
    );
    sec
}

fn test_line(rep: &Value) -> String {
    let proto = s(rep, "/test/protocol").unwrap_or_default().to_uppercase();
    let p = f(rep, "/test/parallel").unwrap_or(1.0);
    let dur = f(rep, "/test/duration_s");
    let dir = match s(rep, "/test/direction").as_deref() {
        Some("reverse") => ", reverse",
        Some("bidir") => ", bidirectional",
        _ => "",
    };
    let mut out = proto;
    if p > 1.0 {
        out.push_str(&format!(" ×{p}"));
    }
    if let Some(d) = dur {
        out.push_str(&format!(", {} s", format::trim(d, 2)));
    }
    out.push_str(dir);
    out
}

fn run_row(ex: &Export, r: &RunData, params: &[String]) -> Vec<Cell> {
    let rep = r.report;
    let mut row = vec![Cell::num(r.id.to_string()).title(format!(
        "this run's page: linkperf report {id} -o run-{id}.html",
        id = r.id
    ))];
    if ex.kind == Kind::Sweep {
        row.push(Cell::num(
            r.point.map(|p| p.to_string()).unwrap_or("–".into()),
        ));
        row.push(Cell::num(
            r.repetition.map(|p| p.to_string()).unwrap_or("–".into()),
        ));
        let point = r
            .point
            .and_then(|i| ex.points.iter().find(|p| p.index as u64 == i))
            .or_else(|| ex.points.iter().find(|p| p.runs.contains(&r.id)));
        for name in params {
            row.push(Cell::text(point.and_then(|p| p.param(name)).unwrap_or("–")));
        }
    }
    let started = r.started_unix_ms.or_else(|| {
        rep.pointer("/start/timestamp_unix_ms")
            .and_then(Value::as_i64)
    });
    row.push(Cell::text(
        started
            .map(|ms| format::utc(ms).trim_end_matches(" UTC").to_string())
            .unwrap_or("–".into()),
    ));
    if let Some(e) = rep.get("error").and_then(Value::as_str) {
        row.push(Cell::text(r.kind.clone().unwrap_or("test".into())));
        for _ in 0..6 {
            row.push(Cell::num("–"));
        }
        row.push(Cell::text(format!("error: {e}")).flag(true));
        return row;
    }
    row.push(Cell::text(test_line(rep)));
    let mut sent = f(rep, "/summary/sent/bits_per_second");
    let mut recv = f(rep, "/summary/received/bits_per_second");
    if let (Some(a), Some(b)) = (
        f(rep, "/summary_reverse/sent/bits_per_second"),
        f(rep, "/summary_reverse/received/bits_per_second"),
    ) {
        sent = sent.map(|x| x + a);
        recv = recv.map(|x| x + b);
    }
    row.push(Cell::num(sent.map(format::rate).unwrap_or("–".into())));
    row.push(Cell::num(recv.map(format::rate).unwrap_or("–".into())));
    let retr = f(rep, "/summary/sent/retransmits");
    let loss = f(rep, "/summary/received/loss_percent");
    row.push(Cell::num(match (retr, loss) {
        (_, Some(l)) => format::percent(l),
        (Some(r), None) => format!("{}", r as u64),
        _ => "–".into(),
    }));
    row.push(Cell::num(
        f(rep, "/summary/tcp/rtt_ms/mean")
            .map(format::millis)
            .unwrap_or("–".into()),
    ));
    for side in ["local", "remote"] {
        row.push(Cell::num(
            f(rep, &format!("/summary/cpu/{side}/total_percent"))
                .map(format::percent)
                .unwrap_or("–".into()),
        ));
    }
    let mut verdict = s(rep, "/summary/verdict/limited_by").unwrap_or_default();
    let errors: Vec<String> = rep
        .get("errors")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(scalar_text).collect())
        .unwrap_or_default();
    let failed = !errors.is_empty();
    if failed {
        verdict = format!("error: {}", errors.join("; "));
    }
    let stopped = interrupted(rep);
    if stopped {
        verdict = format!("interrupted ({}); {verdict}", stopped_after(rep));
    }
    let mut cell = Cell::text(verdict).flag(failed || stopped);
    if let Some(e) = s(rep, "/summary/verdict/explanation") {
        cell = cell.title(e);
    }
    row.push(cell);
    row
}

// ---------------------------------------------------------------- run

fn run_page(ex: &Export) -> (String, String, Vec<Section>) {
    let first = &ex.runs[0];
    let rep = first.report;
    let server = s(rep, "/test/server").unwrap_or_else(|| "?".into());
    let client = s(rep, "/start/local/hostname").unwrap_or_else(|| "client".into());
    let title = if ex.runs.len() == 1 {
        format!(
            "Run {}: {} {client} → {server}",
            first.id,
            s(rep, "/test/protocol").unwrap_or_default().to_uppercase()
        )
    } else {
        format!("Runs of export {}", ex.id)
    };
    let mut sub = Vec::new();
    let started = first.started_unix_ms.or_else(|| {
        rep.pointer("/start/timestamp_unix_ms")
            .and_then(Value::as_i64)
    });
    if let Some(ms) = started {
        sub.push(format!("started {}", format::utc(ms)));
    }
    sub.push(test_line(rep));
    if let Some(sw) = s(rep, "/software") {
        sub.push(sw);
    }
    let mut sections = Vec::new();
    for r in ex.runs.iter().take(DETAILED_RUNS) {
        sections.push(run_section(r, ex.runs.len() > 1));
    }
    if ex.runs.len() > DETAILED_RUNS {
        let mut more = Section::new("more", "More runs");
        more.note(&format!(
            "{} more runs are in the table of all runs, without plots.",
            ex.runs.len() - DETAILED_RUNS
        ));
        sections.push(more);
    }
    sections.push(config_section(ex));
    sections.push(hosts_section(ex));
    sections.push(runs_section(ex));
    (title, sub.join(" · "), sections)
}

/// A direction's summary and the interval sums that belong to it.
struct Direction<'a> {
    name: String,
    summary: &'a Value,
    sum_key: &'static str,
}

fn directions(rep: &Value) -> Vec<Direction<'_>> {
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

fn direction_label(d: &str) -> &str {
    match d {
        "client_to_server" => "client → server",
        "server_to_client" => "server → client",
        other => other,
    }
}

fn run_section(r: &RunData, many: bool) -> Section {
    let rep = r.report;
    let mut sec = Section::new(&format!("run-{}", r.id), format!("Run {}", r.id));
    if let Some(e) = rep.get("error").and_then(Value::as_str) {
        sec.push(&format!(
            "<p class=\"warn\">This run failed: {}</p>",
            html::escape(e)
        ));
        return sec;
    }
    if many {
        sec.para(&test_line(rep));
    }
    let udp = s(rep, "/test/protocol").as_deref() == Some("udp");
    let dirs = directions(rep);
    let intervals: Vec<&Value> = rep
        .get("intervals")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    let t = summary_table(&dirs, &intervals, udp);
    sec.push(&t.render());
    for d in &dirs {
        if let Some(ex) = s(d.summary, "/verdict/explanation") {
            let limited = s(d.summary, "/verdict/limited_by").unwrap_or_default();
            let advice = s(d.summary, "/verdict/advice")
                .map(|a| format!(" Advice: {a}."))
                .unwrap_or_default();
            sec.para(&format!(
                "{}: limited by {limited}: {ex}.{advice}",
                direction_label(&d.name)
            ));
        }
    }
    for w in rep
        .get("warnings")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        sec.push(&format!(
            "<p class=\"warn\">warning: {}</p>",
            html::escape(w)
        ));
    }
    for e in rep
        .get("errors")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        sec.push(&format!("<p class=\"warn\">error: {}</p>", html::escape(e)));
    }

    if intervals.is_empty() {
        sec.note("No interval samples in this run (it ran with -i 0): no time series.");
    } else {
        for d in &dirs {
            let suffix = if dirs.len() > 1 {
                format!(", {}", direction_label(&d.name))
            } else {
                String::new()
            };
            let p = throughput_series(&intervals, d, udp, &suffix);
            if p.has_data() {
                sec.figure(
                    &p.render(),
                    &format!(
                        "Throughput per interval{suffix}: each stream (as received), their sum, and the mean over the whole test{}. Each interval's rate is drawn across the interval, from its start to its end.",
                        if udp { "; the wide pale band: what was sent" } else { "" }
                    ),
                );
            }
            if udp {
                let p = udp_series(&intervals, d, &suffix);
                if p.has_data() {
                    sec.figure(
                        &p.render(),
                        "Datagrams lost in each interval (percent of those sent, left axis, drawn across the interval) and the RFC 3550 jitter estimate at each interval's end (right axis), with its mean over the intervals (the summary's \"mean of intervals\").",
                    );
                }
            } else {
                for (what, field, q) in [
                    ("RTT", "rtt_ms", Quantity::Millis),
                    ("Congestion window", "cwnd_bytes", Quantity::Bytes),
                ] {
                    let p = tcp_series(&intervals, d, what, field, q, &suffix);
                    if p.has_data() {
                        sec.figure(
                            &p.render(),
                            &format!(
                                "{what} of each stream's sender as the kernel reports it (tcp_info), sampled at the end of each interval."
                            ),
                        );
                    }
                }
            }
        }
        sec.details(
            &format!("{} intervals", intervals.len()),
            &intervals_table(&intervals, &dirs, udp).render(),
            false,
        );
    }
    let sockets = sockets_table(rep);
    if !sockets.rows.is_empty() {
        sec.details("Sockets of each stream", &sockets.render(), false);
    }
    sec
}

/// The summary of a run, one row per direction. UDP jitter is given as the
/// mean and percentiles of the per-interval values the plot shows; the final
/// running estimate (what iperf3 prints) is beside them, named as such.
fn summary_table(dirs: &[Direction], intervals: &[&Value], udp: bool) -> Table {
    let heads: &[&str] = if udp {
        &[
            "direction",
            "sent",
            "received",
            "loss",
            "jitter, mean of intervals",
            "jitter p50 / p95 / max",
            "jitter, final RFC 3550 estimate",
            "CPU local",
            "CPU remote",
        ]
    } else {
        &[
            "direction",
            "sent",
            "received",
            "retransmits",
            "RTT mean / min",
            "CPU local",
            "CPU remote",
        ]
    };
    let headers = heads
        .iter()
        .enumerate()
        .map(|(i, h)| {
            if i == 0 {
                Cell::text(*h)
            } else {
                Cell::num(*h)
            }
        })
        .collect();
    let caption = if udp {
        "Summary; jitter: RFC 3550 interarrival jitter, its mean and percentiles over the intervals (as plotted), and the running estimate at the end of the test"
    } else {
        "Summary"
    };
    let mut t = Table::new(headers).caption(caption);
    t.row_headers = true;
    for d in dirs {
        let sm = d.summary;
        let opt =
            |ptr: &str, fmt: &dyn Fn(f64) -> String| f(sm, ptr).map(fmt).unwrap_or("–".into());
        let mut row = vec![
            Cell::text(direction_label(&d.name)),
            Cell::num(opt("/sent/bits_per_second", &format::rate)),
            Cell::num(opt("/received/bits_per_second", &format::rate)),
        ];
        if udp {
            let j = JitterStats::of(intervals, d.sum_key);
            row.push(Cell::num(opt("/received/loss_percent", &format::percent)));
            row.push(Cell::num(
                j.as_ref()
                    .map(|j| format::millis(j.mean))
                    .unwrap_or("–".into()),
            ));
            row.push(Cell::num(
                j.as_ref()
                    .map(|j| {
                        format!(
                            "{} / {} / {}",
                            format::millis(j.p50),
                            format::millis(j.p95),
                            format::millis(j.max)
                        )
                    })
                    .unwrap_or("–".into()),
            ));
            row.push(Cell::num(opt("/received/jitter_ms", &format::millis)));
        } else {
            row.push(Cell::num(opt("/sent/retransmits", &|x| {
                format!("{}", x as u64)
            })));
            row.push(Cell::num(
                match (f(sm, "/tcp/rtt_ms/mean"), f(sm, "/tcp/rtt_ms/min")) {
                    (Some(a), Some(b)) => format!("{} / {}", format::millis(a), format::millis(b)),
                    (Some(a), None) => format::millis(a),
                    _ => "–".into(),
                },
            ));
        }
        row.push(Cell::num(opt("/cpu/local/total_percent", &format::percent)));
        row.push(Cell::num(opt(
            "/cpu/remote/total_percent",
            &format::percent,
        )));
        t.row(row);
    }
    t
}

/// The per-interval jitter of one direction (intervals outside the -O warm-up).
#[derive(Debug, Clone, PartialEq)]
struct JitterStats {
    mean: f64,
    p50: f64,
    p95: f64,
    max: f64,
}

impl JitterStats {
    fn of(intervals: &[&Value], sum_key: &str) -> Option<JitterStats> {
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
fn percentile(sorted: &[f64], p: f64) -> f64 {
    let pos = (p / 100.0).clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let (i, frac) = (pos.floor() as usize, pos.fract());
    match sorted.get(i + 1) {
        Some(next) => sorted[i] + (next - sorted[i]) * frac,
        None => sorted[i],
    }
}

fn stream_dir(st: &Value) -> Option<&str> {
    st.get("direction").and_then(Value::as_str)
}

/// Per-stream values of one direction: stream id -> points.
/// `over`: the value holds over the interval (a rate), else it is a sample
/// taken at the interval's end (tcp_info).
fn per_stream(
    intervals: &[&Value],
    d: &Direction,
    over: bool,
    get: impl Fn(&Value) -> Option<f64>,
) -> BTreeMap<i64, Vec<Point>> {
    let mut out: BTreeMap<i64, Vec<Point>> = BTreeMap::new();
    for iv in intervals {
        let Some(end) = f(iv, "/end") else { continue };
        let start = f(iv, "/start").filter(|_| over);
        for st in iv
            .get("streams")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if stream_dir(st).is_some_and(|x| x != d.name) {
                continue;
            }
            let id = st.get("id").and_then(Value::as_i64).unwrap_or(0);
            let v = get(st).unwrap_or(f64::NAN);
            let p = match start {
                Some(a) => Point::over(a, end, v),
                None => Point::new(end, v),
            };
            out.entry(id).or_default().push(p);
        }
    }
    out
}

fn omitted_bands(intervals: &[&Value]) -> Vec<Band> {
    let ends: Vec<(f64, f64)> = intervals
        .iter()
        .filter(|iv| iv.get("omitted").and_then(Value::as_bool) == Some(true))
        .filter_map(|iv| Some((f(iv, "/start")?, f(iv, "/end")?)))
        .collect();
    match (ends.first(), ends.last()) {
        (Some(a), Some(b)) => vec![Band {
            x0: a.0,
            x1: b.1,
            label: "omitted (-O)".into(),
            shaded: true,
        }],
        _ => Vec::new(),
    }
}

fn time_axis() -> Axis {
    Axis::new("Time since start", Quantity::Seconds).zero()
}

/// Dash patterns of streams 0..5: with colour and marker, streams that
/// carry the same rate still show one beside the other.
const STREAM_DASHES: [Option<&str>; 6] = [
    None,
    Some("8 4"),
    Some("2 3"),
    Some("10 3 2 3"),
    Some("4 4"),
    Some("1 3"),
];

/// The look of the k-th of `n` streams (of `points` points each): up to six
/// each get a colour, a dash pattern and a marker (every other one open, so
/// one on top of another leaves a ring); more share one grey.
fn stream_style(id: i64, k: usize, n: usize, points: usize) -> Series {
    if n > STREAM_DASHES.len() {
        let mut s = Series::new(format!("each of the {n} streams"), "#9aa5b1");
        s.width = 1.0;
        s.legend = k == 0;
        return s;
    }
    let mut s = Series::new(format!("stream {id}"), color(k));
    s.width = 1.6;
    s.dash = STREAM_DASHES[k];
    if points <= 60 {
        s.marker = Some(marker(k));
        s.hollow = k % 2 == 1;
    }
    s
}

fn stream_series(streams: BTreeMap<i64, Vec<Point>>) -> Vec<Series> {
    let n = streams.len();
    let mut out = Vec::new();
    for (k, (id, pts)) in streams.into_iter().enumerate() {
        let mut s = stream_style(id, k, n, pts.len());
        s.points = pts;
        out.push(s);
    }
    out
}

fn throughput_series(intervals: &[&Value], d: &Direction, udp: bool, suffix: &str) -> LinePlot {
    let mut plot = LinePlot::new(
        format!("Throughput per interval{suffix}"),
        time_axis(),
        Axis::new("Throughput", Quantity::Rate).zero(),
    );
    plot.bands = omitted_bands(intervals);
    let streams = per_stream(intervals, d, true, |st| {
        f(st, "/receiver/bits_per_second").or_else(|| f(st, "/sender/bits_per_second"))
    });
    let multi = streams.len() > 1;
    if multi {
        plot.series.extend(stream_series(streams));
    }
    let mut sum = Series::new(
        if multi {
            "sum of streams, received"
        } else {
            "received"
        },
        "#000000",
    );
    sum.width = 2.5;
    sum.marker = if intervals.len() <= 60 {
        Some(crate::svg::Marker::Circle)
    } else {
        None
    };
    // Under the received line, wide and pale: where all that was sent
    // arrived, the received line runs inside it. Not a stream's colour.
    let mut sent = Series::new(if multi { "sum as sent" } else { "sent" }, color(4));
    sent.band = true;
    for iv in intervals {
        let Some(end) = f(iv, "/end") else { continue };
        let start = f(iv, "/start").unwrap_or(end);
        let Some(sumv) = iv.get(d.sum_key) else {
            continue;
        };
        let v = f(sumv, "/bits_per_second").unwrap_or(f64::NAN);
        let mut p = Point::over(start, end, v);
        p.tip = Some(format!(
            "{} – {} s: {}",
            format::trim(start, 2),
            format::trim(end, 2),
            format::rate(v)
        ));
        sum.points.push(p);
        if let Some(sv) = f(sumv, "/sent_bits_per_second") {
            sent.points.push(Point::over(start, end, sv));
        }
    }
    plot.series.push(sum);
    if udp && !sent.points.is_empty() {
        plot.series.push(sent);
    }
    if let Some(mean) = f(d.summary, "/received/bits_per_second") {
        plot.rules.push(Rule {
            y: mean,
            span: None,
            label: format!("mean received {}", format::rate(mean)),
            color: "#555555",
            dash: Some("9 5"),
            right: false,
            inline: false,
        });
    }
    plot
}

fn udp_series(intervals: &[&Value], d: &Direction, suffix: &str) -> LinePlot {
    let mut plot = LinePlot::new(
        format!("UDP loss and jitter per interval{suffix}"),
        time_axis(),
        Axis::new("Loss", Quantity::Percent).zero().at_least(1.0),
    );
    plot.height = 340.0;
    plot.y2 = Some(Axis::new("Jitter", Quantity::Millis).zero());
    let mut loss = Series::new("loss in the interval", color(1));
    loss.marker = Some(crate::svg::Marker::Square);
    let mut jitter = Series::new("jitter at the interval's end", color(0));
    jitter.right = true;
    jitter.dash = Some("7 4");
    jitter.marker = Some(crate::svg::Marker::Triangle);
    for iv in intervals {
        let Some(end) = f(iv, "/end") else { continue };
        let start = f(iv, "/start").unwrap_or(end);
        let Some(sm) = iv.get(d.sum_key) else {
            continue;
        };
        if let Some(l) = f(sm, "/loss_percent") {
            let mut p = Point::over(start, end, l);
            p.tip = Some(format!(
                "{} s: {} lost ({} datagrams)",
                format::trim(end, 2),
                format::percent(l),
                f(sm, "/lost_packets").map(|x| x as u64).unwrap_or(0)
            ));
            loss.points.push(p);
        }
        if let Some(j) = f(sm, "/jitter_ms") {
            let mut p = Point::new(end, j);
            p.tip = Some(format!(
                "{} s: jitter {} ms",
                format::trim(end, 2),
                format::sig3(j)
            ));
            jitter.points.push(p);
        }
    }
    plot.series = vec![loss, jitter];
    if let Some(j) = JitterStats::of(intervals, d.sum_key) {
        plot.rules.push(Rule {
            y: j.mean,
            span: None,
            label: format!("mean jitter {}", format::millis(j.mean)),
            color: color(0),
            dash: Some("2 3"),
            right: true,
            inline: false,
        });
    }
    plot
}

fn tcp_series(
    intervals: &[&Value],
    d: &Direction,
    what: &str,
    field: &str,
    q: Quantity,
    suffix: &str,
) -> LinePlot {
    let mut plot = LinePlot::new(
        format!("{what} per interval{suffix}"),
        time_axis(),
        Axis::new(what, q).zero(),
    );
    plot.height = 320.0;
    let ptr = format!("/sender/tcp/{field}");
    let streams = per_stream(intervals, d, false, |st| f(st, &ptr));
    let n = streams.len();
    for (k, (id, pts)) in streams.into_iter().enumerate() {
        let mut s = stream_style(id, k, n, pts.len());
        s.points = pts
            .into_iter()
            .map(|mut p| {
                let v = match q {
                    Quantity::Bytes => format::bytes(p.y),
                    _ => format::millis(p.y),
                };
                p.tip = Some(format!("stream {id}, {} s: {v}", format::trim(p.x, 2)));
                p
            })
            .collect();
        plot.series.push(s);
    }
    plot
}

fn intervals_table(intervals: &[&Value], dirs: &[Direction], udp: bool) -> Table {
    let mut headers = vec![Cell::num("start (s)"), Cell::num("end (s)")];
    for d in dirs {
        let tag = if dirs.len() > 1 {
            format!(" {}", direction_label(&d.name))
        } else {
            String::new()
        };
        headers.push(Cell::num(format!("sent{tag}")));
        headers.push(Cell::num(format!("received{tag}")));
        if udp {
            headers.push(Cell::num(format!("loss{tag}")));
            headers.push(Cell::num(format!("jitter{tag}")));
        } else {
            headers.push(Cell::num(format!("retransmits{tag}")));
        }
    }
    let mut t = Table::new(headers);
    for iv in intervals {
        let omitted = iv.get("omitted").and_then(Value::as_bool) == Some(true);
        let mut row = vec![
            Cell::num(
                f(iv, "/start")
                    .map(|x| format::trim(x, 3))
                    .unwrap_or("–".into()),
            ),
            Cell::num(
                f(iv, "/end")
                    .map(|x| format::trim(x, 3))
                    .unwrap_or("–".into()),
            ),
        ];
        for d in dirs {
            let sm = iv.get(d.sum_key);
            let g = |p: &str| sm.and_then(|x| f(x, p));
            row.push(Cell::num(
                g("/sent_bits_per_second")
                    .map(format::rate)
                    .unwrap_or("–".into()),
            ));
            row.push(Cell::num(
                g("/bits_per_second")
                    .map(format::rate)
                    .unwrap_or("–".into()),
            ));
            if udp {
                row.push(Cell::num(
                    g("/loss_percent")
                        .map(format::percent)
                        .unwrap_or("–".into()),
                ));
                row.push(Cell::num(
                    g("/jitter_ms").map(format::millis).unwrap_or("–".into()),
                ));
            } else {
                row.push(Cell::num(
                    g("/retransmits")
                        .map(|x| (x as u64).to_string())
                        .unwrap_or("–".into()),
                ));
            }
        }
        if omitted {
            row[0].title = Some("omitted from the summary (-O)".into());
        }
        t.row(row);
    }
    t
}

fn sockets_table(rep: &Value) -> Table {
    let mut t = Table::new(
        [
            "stream",
            "direction",
            "side",
            "local",
            "remote",
            "SO_SNDBUF",
            "SO_RCVBUF",
            "congestion",
            "MSS",
            "MTU",
        ]
        .iter()
        .map(|h| Cell::text(*h))
        .collect(),
    );
    for st in rep
        .pointer("/start/streams")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        for side in ["local", "remote"] {
            let Some(so) = st.get(side).filter(|x| x.is_object()) else {
                continue;
            };
            let sz = |k: &str| {
                f(so, &format!("/{k}"))
                    .map(format::size_label)
                    .unwrap_or("–".into())
            };
            t.row(vec![
                Cell::num(or_dash(s(st, "/id"))),
                Cell::text(direction_label(&s(st, "/direction").unwrap_or_default()).to_string()),
                Cell::text(side),
                Cell::text(or_dash(s(so, "/local"))),
                Cell::text(or_dash(s(so, "/remote"))),
                Cell::num(sz("sndbuf")),
                Cell::num(sz("rcvbuf")),
                Cell::text(or_dash(s(so, "/congestion"))),
                Cell::num(or_dash(s(so, "/mss"))),
                Cell::num(or_dash(s(so, "/mtu"))),
            ]);
        }
    }
    t
}

// ---------------------------------------------------------------- campaign

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

fn campaign_page(ex: &Export) -> (String, String, Vec<Section>) {
    let title = match &ex.campaign_name {
        Some(n) => format!("Campaign {}: {n}", ex.id),
        None => format!("Campaign {}", ex.id),
    };
    // Phases of the same name are sessions of one measurement.
    let mut groups: Vec<(String, Vec<&Phase>)> = Vec::new();
    for p in &ex.phases {
        match groups.iter_mut().find(|g| g.0 == p.name) {
            Some(g) => g.1.push(p),
            None => groups.push((p.name.clone(), vec![p])),
        }
    }
    let sessions = groups.iter().map(|g| g.1.len()).max().unwrap_or(0);
    let subtitle = format!(
        "{} phase{}, up to {sessions} session{} each, {} flows",
        groups.len(),
        if groups.len() == 1 { "" } else { "s" },
        if sessions == 1 { "" } else { "s" },
        ex.phases.iter().map(|p| p.flows.len()).max().unwrap_or(0)
    );
    let mut sections = Vec::new();
    let mut overview = Table::new(
        [
            "phase",
            "sessions",
            "mean aggregate",
            "worst session",
            "best session",
            "flows short",
        ]
        .iter()
        .enumerate()
        .map(|(i, h)| {
            if i == 0 {
                Cell::text(*h)
            } else {
                Cell::num(*h)
            }
        })
        .collect(),
    )
    .caption("Overview: aggregate received throughput per phase (mean of the per-interval sums)");
    overview.row_headers = true;
    for (k, (name, phases)) in groups.iter().enumerate() {
        let (sec, row) = phase_section(k, name, phases);
        overview.row(row);
        sections.push(sec);
    }
    if groups.is_empty() {
        let mut s = Section::new("phases", "Phases");
        s.note("The export has no phases.");
        sections.push(s);
    } else {
        let mut s = Section::new("overview", "Overview");
        s.push(&overview.render());
        s.note("A session or flow is marked when it falls more than 5% short: a session's mean below the median session's, a flow's received rate below what it sent or below the target.");
        if !ex.flags.is_empty() {
            let mut ft = Table::new(
                ["finding", "phase", "session", "subject", "message"]
                    .iter()
                    .map(|h| Cell::text(*h))
                    .collect(),
            )
            .caption(format!("What the campaign flagged ({})", ex.flags.len()));
            for fl in &ex.flags {
                ft.row(vec![
                    Cell::text(fl.kind.replace('_', " ")).flag(true),
                    Cell::text(or_dash(fl.phase.clone())),
                    Cell::text(or_dash(fl.session.clone())),
                    Cell::text(or_dash(fl.subject.clone())),
                    Cell::text(fl.message.clone()),
                ]);
            }
            s.push(&ft.render());
        }
        sections.insert(0, s);
    }
    sections.push(config_section(ex));
    sections.push(hosts_section(ex));
    sections.push(runs_section(ex));
    (title, subtitle, sections)
}

/// Each host's sent and received rate, mean over the sessions, as the
/// campaign computed them.
fn hosts_table(phases: &[&Phase], sec: &mut Section) {
    let mut hosts: Vec<(String, Vec<[Option<f64>; 4]>)> = Vec::new();
    for p in phases {
        for h in &p.hosts {
            let row = [h.sent, h.received, h.peers_sent, h.shortfall_percent];
            match hosts.iter_mut().find(|x| x.0 == h.name) {
                Some(x) => x.1.push(row),
                None => hosts.push((h.name.clone(), vec![row])),
            }
        }
    }
    if hosts.is_empty() {
        return;
    }
    let mut t = Table::new(
        ["host", "sent", "received", "its peers sent to it", "shortfall"]
            .iter()
            .enumerate()
            .map(|(i, h)| if i == 0 { Cell::text(*h) } else { Cell::num(*h) })
            .collect(),
    )
    .caption("Hosts (mean over sessions); shortfall: how much less a host received than its peers sent it");
    t.row_headers = true;
    for (name, rows) in hosts {
        let m = |k: usize| mean(&rows.iter().filter_map(|r| r[k]).collect::<Vec<_>>());
        let short = m(3).is_some_and(|x| x > 5.0);
        t.row(vec![
            Cell::text(name),
            Cell::num(m(0).map(format::rate).unwrap_or("–".into())),
            Cell::num(m(1).map(format::rate).unwrap_or("–".into())).flag(short),
            Cell::num(m(2).map(format::rate).unwrap_or("–".into())),
            Cell::num(m(3).map(format::percent).unwrap_or("–".into())).flag(short),
        ]);
    }
    sec.push(&t.render());
}

fn session_name(p: &Phase, i: usize) -> String {
    p.session.clone().unwrap_or_else(|| (i + 1).to_string())
}

type FlowRates = ((String, String), Vec<f64>, Vec<f64>);

fn phase_section(k: usize, name: &str, phases: &[&Phase]) -> (Section, Vec<Cell>) {
    let mut sec = Section::new(&format!("phase-{k}"), format!("Phase: {name}"));
    // Aggregate time series, sessions one after the other.
    let mut plot = LinePlot::new(
        format!("Aggregate throughput, {name}"),
        Axis::new("Time, sessions one after another", Quantity::Seconds).zero(),
        Axis::new("Aggregate throughput", Quantity::Rate).zero(),
    );
    let mut agg = Series::new("received per interval (sum over flows)", color(0));
    agg.width = 1.8;
    let total_points: usize = phases.iter().map(|p| p.intervals.len()).sum();
    if total_points <= 60 {
        agg.marker = Some(crate::svg::Marker::Circle);
    }
    // Wide and pale under the received line, which stays visible inside it.
    let mut sent = Series::new("sent per interval (sum over flows)", color(1));
    sent.band = true;
    let mut offset = 0.0;
    let mut session_means: Vec<(String, Option<f64>, usize, f64, f64)> = Vec::new();
    let mut all = Vec::new();
    for (i, p) in phases.iter().enumerate() {
        let sname = session_name(p, i);
        let mut dur: f64 = 0.0;
        let mut vals = Vec::new();
        let mut prev_end = 0.0;
        for (j, iv) in p.intervals.iter().enumerate() {
            let t = iv
                .end
                .or(iv.start.map(|s| s + 1.0))
                .unwrap_or((j + 1) as f64);
            // Each interval's rate is drawn across the interval.
            let t0 = iv.start.unwrap_or(prev_end);
            prev_end = t;
            dur = dur.max(t);
            let mut pt = Point::over(offset + t0, offset + t, iv.bits_per_second);
            pt.tip = Some(format!(
                "session {sname}, {} s: {}",
                format::trim(t, 2),
                format::rate(iv.bits_per_second)
            ));
            agg.points.push(pt);
            vals.push(iv.bits_per_second);
            if let Some(sv) = iv.sent {
                sent.points.push(Point::over(offset + t0, offset + t, sv));
            }
        }
        agg.points.push(Point::new(f64::NAN, f64::NAN));
        sent.points.push(Point::new(f64::NAN, f64::NAN));
        let m = mean(&vals);
        let lo = vals.iter().copied().fold(f64::INFINITY, f64::min);
        let hi = vals.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        session_means.push((sname.clone(), m, vals.len(), lo, hi));
        all.extend(vals);
        plot.bands.push(Band {
            x0: offset,
            x1: offset + dur,
            label: format!("session {sname}"),
            shaded: true,
        });
        if let Some(m) = m {
            plot.rules.push(Rule {
                y: m,
                span: Some((offset, offset + dur)),
                label: format::rate(m),
                color: "#D55E00",
                dash: Some("6 3"),
                right: false,
                inline: true,
            });
        }
        offset += dur;
    }
    plot.series.push(agg);
    if sent.points.iter().any(|p| p.y.is_finite()) {
        plot.series.push(sent);
    }
    plot.series.push(legend_only(
        "session mean (value beside each)",
        "#D55E00",
        Some("6 3"),
    ));
    let overall = mean(&all);
    if let Some(m) = overall {
        plot.rules.push(Rule {
            y: m,
            span: None,
            label: format!("mean over all sessions {}", format::rate(m)),
            color: "#000000",
            dash: Some("8 4"),
            right: false,
            inline: false,
        });
    }
    if plot.has_data() {
        sec.figure(
            &plot.render(),
            "Aggregate throughput received per interval (the sum over all flows), each session in its own band with its mean; the black dashed line is the mean over all sessions.",
        );
    } else {
        sec.note("No aggregate intervals in this phase.");
    }

    // Sessions table with the short ones marked.
    let mut means: Vec<f64> = session_means.iter().filter_map(|s| s.1).collect();
    means.sort_by(f64::total_cmp);
    let median = if means.is_empty() {
        None
    } else {
        Some(means[means.len() / 2])
    };
    let mut st = Table::new(
        [
            "session",
            "intervals",
            "mean",
            "min",
            "max",
            "vs median session",
        ]
        .iter()
        .enumerate()
        .map(|(i, h)| {
            if i == 0 {
                Cell::text(*h)
            } else {
                Cell::num(*h)
            }
        })
        .collect(),
    )
    .caption("Sessions: aggregate received throughput");
    st.row_headers = true;
    for (sname, m, n, lo, hi) in &session_means {
        let ratio = m
            .zip(median)
            .map(|(a, b)| if b > 0.0 { a / b } else { 1.0 });
        let short = ratio.is_some_and(|r| r < 0.95);
        st.row(vec![
            Cell::text(sname.clone()),
            Cell::num(n.to_string()),
            Cell::num(m.map(format::rate).unwrap_or("–".into())).flag(short),
            Cell::num(if lo.is_finite() {
                format::rate(*lo)
            } else {
                "–".into()
            }),
            Cell::num(if hi.is_finite() {
                format::rate(*hi)
            } else {
                "–".into()
            }),
            Cell::num(
                ratio
                    .map(|r| format!("{} %", format::sig3(r * 100.0)))
                    .unwrap_or("–".into()),
            )
            .flag(short),
        ]);
    }
    sec.push(&st.render());

    // Per flow, averaged over sessions.
    // (from, to), sent rates, received rates: one entry per session.
    let mut flows: Vec<FlowRates> = Vec::new();
    for p in phases {
        for fl in &p.flows {
            let key = (fl.from.clone(), fl.to.clone());
            let entry = match flows.iter().position(|x| x.0 == key) {
                Some(i) => &mut flows[i],
                None => {
                    flows.push((key, Vec::new(), Vec::new()));
                    flows.last_mut().expect("pushed")
                }
            };
            if let Some(s) = fl.sent {
                entry.1.push(s);
            }
            if let Some(r) = fl.received {
                entry.2.push(r);
            }
        }
    }
    let target = phases.iter().find_map(|p| p.target);
    let mut shorts = 0;
    if !flows.is_empty() {
        let mut bars = BarPlot::new(
            format!("Sent vs received per flow, {name} (mean over sessions)"),
            "Flow (sender → receiver)",
            Axis::new("Throughput", Quantity::Rate),
        );
        bars.categories = flows
            .iter()
            .map(|((a, b), _, _)| format!("{a}\n→ {b}"))
            .collect();
        bars.series = vec![
            BarSeries {
                label: "sent (by the sender)".into(),
                color: color(0),
                values: flows.iter().map(|f| mean(&f.1)).collect(),
            },
            BarSeries {
                label: "received (by the receiver)".into(),
                color: color(1),
                values: flows.iter().map(|f| mean(&f.2)).collect(),
            },
        ];
        if let Some(t) = target {
            bars.rules.push(Rule {
                y: t,
                span: None,
                label: format!("target {}", format::rate(t)),
                color: "#000000",
                dash: Some("6 4"),
                right: false,
                inline: false,
            });
        }
        sec.figure(
            &bars.render(),
            "Mean rate each flow's sender sent and its receiver received, over all sessions of this phase.",
        );
        let mut ft = Table::new(
            ["from", "to", "sessions", "sent", "received", "received / sent", "worst session received"]
                .iter()
                .enumerate()
                .map(|(i, h)| if i < 2 { Cell::text(*h) } else { Cell::num(*h) })
                .collect(),
        )
        .caption("Flows (mean over sessions); marked: received more than 5% below sent or below the target");
        for ((a, b), sent, recv) in &flows {
            let (ms, mr) = (mean(sent), mean(recv));
            let ratio = ms.zip(mr).map(|(s, r)| if s > 0.0 { r / s } else { 1.0 });
            let short_ratio = ratio.is_some_and(|r| r < 0.95);
            let short_target = target.zip(mr).is_some_and(|(t, r)| r < 0.95 * t);
            let short_sent = target.zip(ms).is_some_and(|(t, s)| s < 0.95 * t);
            if short_ratio || short_target || short_sent {
                shorts += 1;
            }
            ft.row(vec![
                Cell::text(a.clone()),
                Cell::text(b.clone()),
                Cell::num(sent.len().max(recv.len()).to_string()),
                Cell::num(ms.map(format::rate).unwrap_or("–".into())).flag(short_sent),
                Cell::num(mr.map(format::rate).unwrap_or("–".into())).flag(short_target),
                Cell::num(
                    ratio
                        .map(|r| format!("{} %", format::sig3(r * 100.0)))
                        .unwrap_or("–".into()),
                )
                .flag(short_ratio),
                Cell::num(
                    recv.iter()
                        .copied()
                        .reduce(f64::min)
                        .map(format::rate)
                        .unwrap_or("–".into()),
                ),
            ]);
        }
        sec.push(&ft.render());
    }
    hosts_table(phases, &mut sec);
    let worst = session_means
        .iter()
        .filter_map(|s| s.1.map(|m| (s.0.clone(), m)))
        .min_by(|a, b| a.1.total_cmp(&b.1));
    let best = session_means
        .iter()
        .filter_map(|s| s.1.map(|m| (s.0.clone(), m)))
        .max_by(|a, b| a.1.total_cmp(&b.1));
    let short_session = worst
        .as_ref()
        .zip(median)
        .is_some_and(|(w, m)| w.1 < 0.95 * m);
    let row = vec![
        Cell::text(name),
        Cell::num(phases.len().to_string()),
        Cell::num(overall.map(format::rate).unwrap_or("–".into())),
        Cell::num(
            worst
                .map(|(n, m)| format!("{} (session {n})", format::rate(m)))
                .unwrap_or("–".into()),
        )
        .flag(short_session),
        Cell::num(
            best.map(|(n, m)| format!("{} (session {n})", format::rate(m)))
                .unwrap_or("–".into()),
        ),
        Cell::num(format!("{shorts} of {}", flows.len())).flag(shorts > 0),
    ];
    (sec, row)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn geometric_detection() {
        assert!(looks_geometric(&[4096.0, 8192.0, 16384.0, 32768.0]));
        assert!(!looks_geometric(&[1000.0, 2000.0, 3000.0, 4000.0]));
        assert!(!looks_geometric(&[1.0, 2.0]));
        assert!(!looks_geometric(&[1.0, 2.0, 4.0])); // spans less than 8x
    }

    #[test]
    fn params_are_read_in_their_units() {
        assert_eq!(param_value(ParamKind::Bytes, "64K"), Some(65536.0));
        assert_eq!(param_value(ParamKind::Rate, "950M"), Some(950e6));
        assert_eq!(param_value(ParamKind::Count, "4"), Some(4.0));
        assert_eq!(param_value(ParamKind::Seconds, "250ms"), Some(0.25));
        assert_eq!(param_value(ParamKind::Category, "cubic"), None);
        assert_eq!(param_info("w", false).0, ParamKind::Bytes);
        assert_eq!(param_info("congestion", false).0, ParamKind::Category);
        assert_eq!(param_info("mystery", false).1, "mystery");
        assert_eq!(param_info("l", true).1, "Datagram size (-l)");
    }

    #[test]
    fn categorical_params_sit_at_their_index() {
        let pa = ParamAxis::new(
            &Vary {
                name: "congestion".into(),
                values: vec!["reno".into(), "cubic".into(), "bbr".into()],
                geometric: None,
            },
            false,
        );
        assert!(pa.numbers.is_none());
        assert_eq!(pa.x("cubic"), 1.0);
        assert!(pa.x("vegas").is_nan());
        let pa = ParamAxis::new(
            &Vary {
                name: "window".into(),
                values: vec!["4K".into(), "64K".into(), "1M".into()],
                geometric: None,
            },
            false,
        );
        assert!(pa.axis.log);
        assert_eq!(pa.x("64K"), 65536.0);
    }
}
