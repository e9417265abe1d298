//! The page of a `linkperf rr` run (an export whose run has kind "rr"): the
//! RTT distribution and its CDF from the run's histogram, the tail as the
//! fraction of transactions slower than each RTT, RTT against message size
//! with the least-squares line (`--sizes`), idle against loaded (`--load`),
//! the intervals over time, and the tables of every distribution measured.

use crate::export::{Export, RunData};
use crate::format;
use crate::html::{self, Cell, Section, Table};
use crate::plots::{
    color, marker, Axis, Band, BarPlot, BarSeries, LinePlot, Point, Quantity, Series,
};
use serde_json::Value;

/// Bins of the RTT distribution plot, at most.
const BINS: usize = 60;
/// A distribution wider than this ratio of max to min is drawn on log axes.
const LOG_RATIO: f64 = 20.0;

/// Whether the export is one rr run (drawn by `page`).
pub fn is_rr(ex: &Export) -> bool {
    !ex.runs.is_empty()
        && ex.runs.iter().all(|r| {
            r.kind.as_deref() == Some("rr")
                || r.report.pointer("/test/kind").and_then(Value::as_str) == Some("rr")
        })
}

fn f(v: &Value, ptr: &str) -> Option<f64> {
    v.pointer(ptr).and_then(Value::as_f64)
}

fn text(v: &Value, ptr: &str) -> Option<String> {
    v.pointer(ptr).and_then(crate::export::scalar_text)
}

/// The distributions an rr summary may carry: (JSON key, name on the page).
const DISTRIBUTIONS: [(&str, &str); 7] = [
    ("rtt_ms", "RTT, every transaction"),
    ("connect_ms", "connect() alone"),
    ("transaction_ms", "connect + request/response + close"),
    ("first_rtt_ms", "first probe after the idle gap"),
    ("second_rtt_ms", "second probe"),
    ("idle_rtt_ms", "idle (before the load)"),
    ("loaded_rtt_ms", "loaded (while the load ran)"),
];

/// Percentile keys of a distribution and their labels.
const QUANTILES: [(&str, &str); 6] = [
    ("min", "min"),
    ("p50", "p50"),
    ("p90", "p90"),
    ("p99", "p99"),
    ("p999", "p99.9"),
    ("max", "max"),
];

pub fn page(ex: &Export) -> (String, String, Vec<Section>) {
    let run = &ex.runs[0];
    let rep = run.report;
    let proto = text(rep, "/test/protocol")
        .unwrap_or_default()
        .to_uppercase();
    let mode = text(rep, "/test/mode").unwrap_or_else(|| "rr".into());
    let server = text(rep, "/test/server").unwrap_or_else(|| "?".into());
    let title = format!(
        "Run {}: {proto} request/response ({mode}) → {server}",
        run.id
    );
    let mut sub = Vec::new();
    let started = run.started_unix_ms.or_else(|| {
        rep.pointer("/start/timestamp_unix_ms")
            .and_then(Value::as_i64)
    });
    if let Some(ms) = started {
        sub.push(format!("started {}", format::utc(ms)));
    }
    sub.push(test_line(rep));
    if rep.get("interrupted").and_then(Value::as_bool) == Some(true) {
        sub.push("interrupted: the figures cover what ran".into());
    }
    if let Some(sw) = text(rep, "/software") {
        sub.push(sw);
    }
    let mut sections = vec![summary_section(rep)];
    sections.push(distribution_section(rep));
    if let Some(s) = sizes_section(rep) {
        sections.push(s);
    }
    if let Some(s) = load_section(rep) {
        sections.push(s);
    }
    if let Some(s) = time_section(rep) {
        sections.push(s);
    }
    sections.push(config_section(run));
    (title, sub.join(" · "), sections)
}

/// "request 64 B, response 64 B, 1 in flight, back to back, 10 s".
fn test_line(rep: &Value) -> String {
    let size = |k: &str| {
        f(rep, k)
            .map(format::size_label)
            .unwrap_or_else(|| "–".into())
    };
    let pace = match f(rep, "/test/rate_per_second") {
        Some(r) => format!("{} transactions/s", format::trim(r, 2)),
        None => "back to back".into(),
    };
    let sizes: Vec<String> = rep
        .pointer("/test/sizes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_f64)
        .map(format::size_label)
        .collect();
    let length = match (f(rep, "/test/count"), f(rep, "/test/duration_s")) {
        (Some(n), _) => format!("{n} transactions"),
        (None, Some(s)) => format!("{} s", format::trim(s, 3)),
        _ => String::new(),
    };
    let what = if sizes.is_empty() {
        format!(
            "request {}, response {}",
            size("/test/request"),
            size("/test/response")
        )
    } else {
        format!("message sizes {}", sizes.join(", "))
    };
    let per = if sizes.is_empty() { "" } else { " per size" };
    format!(
        "{what}, {} in flight, {pace}, {length}{per}",
        f(rep, "/test/burst").unwrap_or(1.0)
    )
}

fn ms_cell(v: Option<f64>) -> Cell {
    Cell::num(v.map(format::millis).unwrap_or_else(|| "–".into()))
}

fn summary_section(rep: &Value) -> Section {
    let mut sec = Section::new("summary", "Summary");
    let s = rep.get("summary").cloned().unwrap_or(Value::Null);
    let mut headers: Vec<Cell> = vec!["distribution".into(), Cell::num("count")];
    headers.extend(QUANTILES.iter().map(|(_, l)| Cell::num(*l)));
    headers.extend([Cell::num("mean"), Cell::num("stddev")]);
    let mut t = Table::new(headers).caption("Latency of each distribution measured");
    t.row_headers = true;
    for (key, name) in DISTRIBUTIONS {
        let Some(d) = s.get(key).filter(|d| d.is_object()) else {
            continue;
        };
        let mut row = vec![
            Cell::text(name),
            Cell::num(f(d, "/count").map(|c| format!("{c}")).unwrap_or_default()),
        ];
        row.extend(
            QUANTILES
                .iter()
                .map(|(k, _)| ms_cell(d.get(*k).and_then(Value::as_f64))),
        );
        row.extend([ms_cell(f(d, "/mean")), ms_cell(f(d, "/stddev"))]);
        t.row(row);
    }
    sec.push(&t.render());
    let mut facts: Vec<(String, String)> = Vec::new();
    if let (Some(n), Some(secs)) = (f(&s, "/transactions"), f(&s, "/seconds")) {
        facts.push((
            "transactions".into(),
            format!(
                "{n} of {} attempted in {} s = {} transactions/s",
                f(&s, "/attempted").unwrap_or(n),
                format::trim(secs, 3),
                format::trim(f(&s, "/transactions_per_second").unwrap_or(0.0), 0)
            ),
        ));
    }
    if let Some(l) = f(&s, "/loss_percent") {
        facts.push((
            "lost".into(),
            format!("{} ({})", f(&s, "/lost").unwrap_or(0.0), format::percent(l)),
        ));
    }
    if let (Some(t), Some(a)) = (
        f(&s, "/rate/target_per_second"),
        f(&s, "/rate/achieved_per_second"),
    ) {
        facts.push(("rate".into(), format!("target {t}/s, achieved {:.0}/s", a)));
    }
    if let Some(load) = s.get("load").filter(|l| l.is_object()) {
        facts.push((
            "load".into(),
            format!(
                "`{}`: {} over {} s",
                text(load, "/args").unwrap_or_default(),
                format::rate(f(load, "/bits_per_second").unwrap_or(0.0)),
                format::trim(f(load, "/seconds").unwrap_or(0.0), 2)
            ),
        ));
    }
    if let Some(clock) = text(rep, "/start/clock") {
        let why = text(rep, "/start/clock_reason").unwrap_or_default();
        facts.push(("clock".into(), format!("{clock}: {why}")));
    }
    if !facts.is_empty() {
        sec.push(&html::facts(&facts));
    }
    for (k, label) in [("warnings", "warning"), ("errors", "error")] {
        for w in rep.get(k).and_then(Value::as_array).into_iter().flatten() {
            if let Some(w) = w.as_str() {
                sec.push(&format!(
                    "<p class=\"warn\">{}: {}</p>",
                    label,
                    html::escape(w)
                ));
            }
        }
    }
    sec
}

/// The histogram's non-empty buckets: (upper edge in ms, count).
fn buckets(rep: &Value) -> Vec<(f64, u64)> {
    let mut b: Vec<(f64, u64)> = rep
        .get("histogram")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|b| Some((f(b, "/rtt_ms")?, b.get("count")?.as_u64()?)))
        .filter(|(v, n)| v.is_finite() && *v > 0.0 && *n > 0)
        .collect();
    b.sort_by(|x, y| x.0.total_cmp(&y.0));
    b
}

/// The buckets re-binned into at most `BINS` bins over [first, last edge],
/// log-spaced when `log`: (low edge, high edge, count).
fn rebin(b: &[(f64, u64)], log: bool) -> Vec<(f64, f64, u64)> {
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return Vec::new();
    };
    let n = BINS.min(b.len()).max(1);
    let t = |v: f64| if log { v.ln() } else { v };
    let back = |u: f64| if log { u.exp() } else { u };
    // The first bucket covers values just below its edge: start a little lower.
    let (lo, hi) = (t(first.0 * 0.98), t(last.0));
    let width = (hi - lo) / n as f64;
    let mut bins: Vec<(f64, f64, u64)> = (0..n)
        .map(|k| {
            (
                back(lo + width * k as f64),
                back(lo + width * (k + 1) as f64),
                0,
            )
        })
        .collect();
    for (v, c) in b {
        let k = (((t(*v) - lo) / width).ceil() as usize).clamp(1, n) - 1;
        bins[k].2 += c;
    }
    bins
}

fn wide(b: &[(f64, u64)]) -> bool {
    match (b.first(), b.last()) {
        (Some(a), Some(z)) => z.0 / a.0 > LOG_RATIO,
        _ => false,
    }
}

/// A vertical line at `x` from 0 to `top`, named in the legend.
fn marker_line(label: String, x: f64, top: f64, i: usize) -> Series {
    let mut s = Series::new(label, color(i));
    s.dash = Some("5 4");
    s.width = 1.5;
    s.points = vec![Point::new(x, 0.0), Point::new(x, top)];
    s
}

fn distribution_section(rep: &Value) -> Section {
    let mut sec = Section::new("distribution", "RTT distribution");
    let b = buckets(rep);
    if b.is_empty() {
        sec.note("No transaction completed: there is no distribution to draw.");
        return sec;
    }
    let total: u64 = b.iter().map(|x| x.1).sum();
    let log = wide(&b);
    let x_axis = || Axis::new("RTT", Quantity::Millis).log(log);
    // Histogram, as steps over each bin.
    let mut hist = Series::new("transactions per bin", color(0));
    let mut top: f64 = 0.0;
    let bins = rebin(&b, log);
    // Steps down to zero at both ends, so the outline closes.
    if let Some(first) = bins.first() {
        hist.points.push(Point::new(first.0, 0.0));
    }
    for &(lo, hi, c) in &bins {
        let pct = 100.0 * c as f64 / total as f64;
        top = top.max(pct);
        let tip = format!("{} – {}: {c}", format::millis(lo), format::millis(hi));
        hist.points.push(Point::new(lo, pct));
        let mut p = Point::new(hi, pct);
        p.tip = Some(tip);
        hist.points.push(p);
    }
    if let Some(last) = bins.last() {
        hist.points.push(Point::new(last.1, 0.0));
    }
    let mut plot = LinePlot::new(
        format!("RTT distribution of {total} transactions"),
        x_axis(),
        Axis::new("Share of transactions", Quantity::Percent).zero(),
    );
    plot.series.push(hist);
    let s = rep.get("summary").cloned().unwrap_or(Value::Null);
    for (i, (k, l)) in [("p50", "p50"), ("p99", "p99"), ("p999", "p99.9")]
        .iter()
        .enumerate()
    {
        if let Some(v) = f(&s, &format!("/rtt_ms/{k}")) {
            plot.series.push(marker_line(
                format!("{l} {}", format::millis(v)),
                v,
                top,
                i + 1,
            ));
        }
    }
    sec.figure(
        &plot.render(),
        &format!(
            "Share of transactions in each of {} RTT bins{}; dashed: percentiles.",
            BINS.min(b.len()),
            if log {
                " of equal width on the log scale"
            } else {
                ""
            }
        ),
    );
    cdf_figures(&mut sec, &b, log, &s);
    sec
}

/// The CDF of every transaction (with the idle and loaded percentiles) and
/// its tail, 1 - CDF on a log scale.
fn cdf_figures(sec: &mut Section, b: &[(f64, u64)], log: bool, s: &Value) {
    let total: u64 = b.iter().map(|x| x.1).sum();
    let x_axis = || Axis::new("RTT", Quantity::Millis).log(log);
    let mut cdf = Series::new("all transactions", color(0));
    let mut tail = Series::new("all transactions", color(0));
    let mut seen = 0u64;
    for (v, c) in b {
        seen += c;
        cdf.points
            .push(Point::new(*v, 100.0 * seen as f64 / total as f64));
        let slower = total - seen;
        if slower > 0 {
            tail.points
                .push(Point::new(*v, 100.0 * slower as f64 / total as f64));
        }
    }
    let mut plot = LinePlot::new(
        "Cumulative distribution of RTT",
        x_axis(),
        Axis::new("Transactions at or below (%)", Quantity::Percent)
            .zero()
            .at_least(100.0),
    );
    plot.series.push(cdf);
    let phases = percentile_cdfs(s);
    let markers = if phases.is_empty() {
        ""
    } else {
        "; markers: the percentiles of the idle and loaded phases (min, p50, p90, p99, p99.9, max)"
    };
    plot.series.extend(phases);
    sec.figure(
        &plot.render(),
        &format!(
            "Share of transactions that took at most a given RTT (from the HDR histogram, 3 significant digits){markers}."
        ),
    );
    if !tail.points.is_empty() {
        let mut plot = LinePlot::new(
            "Tail: transactions slower than each RTT",
            x_axis(),
            Axis::new("Slower than (%)", Quantity::Percent).log(true),
        );
        plot.series.push(tail);
        sec.figure(
            &plot.render(),
            "1 − CDF on a log scale: 1 % is the p99, 0.1 % the p99.9.",
        );
    }
}

/// Idle and loaded distributions as CDF points at their percentiles (the
/// run keeps one histogram for all probes).
fn percentile_cdfs(s: &Value) -> Vec<Series> {
    let mut out = Vec::new();
    for (i, (key, name)) in [("idle_rtt_ms", "idle"), ("loaded_rtt_ms", "loaded")]
        .iter()
        .enumerate()
    {
        let Some(d) = s.get(*key).filter(|d| d.is_object()) else {
            continue;
        };
        let mut ser = Series::new(format!("{name} (percentiles)"), color(i + 1));
        ser.marker = Some(marker(i + 1));
        ser.width = 1.5;
        for (k, at) in [
            ("min", 0.0),
            ("p50", 50.0),
            ("p90", 90.0),
            ("p99", 99.0),
            ("p999", 99.9),
            ("max", 100.0),
        ] {
            if let Some(v) = f(d, &format!("/{k}")) {
                let mut p = Point::new(v, at);
                p.tip = Some(format!("{name} {k}: {}", format::millis(v)));
                ser.points.push(p);
            }
        }
        out.push(ser);
    }
    out
}

fn sizes_section(rep: &Value) -> Option<Section> {
    let points = rep.get("sizes").and_then(Value::as_array)?;
    if points.is_empty() {
        return None;
    }
    let mut sec = Section::new("sizes", "RTT against message size");
    let size_of = |p: &Value| f(p, "/size");
    let mut plot = LinePlot::new(
        "RTT against message size",
        Axis::new("Message size", Quantity::Bytes).padded(),
        Axis::new("RTT", Quantity::Millis).zero(),
    );
    for (i, (k, l)) in [("p50", "p50"), ("mean", "mean"), ("p99", "p99")]
        .iter()
        .enumerate()
    {
        let mut ser = Series::new(*l, color(i));
        ser.marker = Some(marker(i));
        ser.width = if i == 0 { 2.0 } else { 1.2 };
        for p in points {
            if let (Some(x), Some(y)) = (size_of(p), f(p, &format!("/rtt_ms/{k}"))) {
                let mut pt = Point::new(x, y);
                pt.tip = Some(format!("{} B: {l} {}", x, format::millis(y)));
                ser.points.push(pt);
            }
        }
        plot.series.push(ser);
    }
    let fit = rep.get("fit").filter(|v| v.is_object());
    let mut caption = "Each size's RTT percentiles.".to_string();
    if let Some(fit) = fit {
        let (a, b) = (f(fit, "/intercept_ms"), f(fit, "/slope_us_per_byte"));
        let xs: Vec<f64> = points.iter().filter_map(size_of).collect();
        let (lo, hi) = xs
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(l, h), x| (l.min(*x), h.max(*x)));
        if let (Some(a), Some(b)) = (a, b) {
            let mut line = Series::new("least-squares line", "#000000");
            line.dash = Some("7 4");
            line.width = 1.5;
            line.points = vec![
                Point::new(lo, a + b * lo / 1000.0),
                Point::new(hi, a + b * hi / 1000.0),
            ];
            plot.series.push(line);
            caption = format!(
                "Each size's RTT percentiles; dashed: RTT = {} + {} µs/byte × size, fitted to the {}s (r² = {}){}.",
                format::millis(a),
                format::trim(b, 6),
                text(fit, "/basis").unwrap_or_else(|| "p50".into()),
                format::trim(f(fit, "/r2").unwrap_or(0.0), 3),
                f(fit, "/implied_bits_per_second")
                    .map(|r| format!("; the slope implies {}", format::rate(r)))
                    .unwrap_or_default()
            );
        }
    }
    sec.figure(&plot.render(), &caption);
    let mut t = Table::new(vec![
        Cell::num("size"),
        Cell::num("request"),
        Cell::num("response"),
        Cell::num("transactions"),
        Cell::num("p50"),
        Cell::num("mean"),
        Cell::num("p99"),
        Cell::num("max"),
    ]);
    for p in points {
        let n = |k: &str| Cell::num(f(p, k).map(|v| format!("{v}")).unwrap_or_default());
        t.row(vec![
            n("/size"),
            n("/request"),
            n("/response"),
            n("/transactions"),
            ms_cell(f(p, "/rtt_ms/p50")),
            ms_cell(f(p, "/rtt_ms/mean")),
            ms_cell(f(p, "/rtt_ms/p99")),
            ms_cell(f(p, "/rtt_ms/max")),
        ]);
    }
    sec.push(&t.render());
    Some(sec)
}

fn load_section(rep: &Value) -> Option<Section> {
    let s = rep.get("summary")?;
    let idle = s.get("idle_rtt_ms").filter(|v| v.is_object());
    let loaded = s.get("loaded_rtt_ms").filter(|v| v.is_object());
    if idle.is_none() && loaded.is_none() {
        return None;
    }
    let mut sec = Section::new("load", "Idle against loaded");
    let values: Vec<f64> = [idle, loaded]
        .iter()
        .flatten()
        .flat_map(|d| QUANTILES.iter().filter_map(|(k, _)| d.get(*k)?.as_f64()))
        .filter(|v| *v > 0.0)
        .collect();
    let (lo, hi) = values
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(*v), h.max(*v)));
    let log = hi / lo > LOG_RATIO;
    let mut bars = BarPlot::new(
        "RTT percentiles idle and under load",
        "percentile",
        Axis::new("RTT", Quantity::Millis).log(log),
    );
    bars.categories = QUANTILES.iter().map(|(_, l)| l.to_string()).collect();
    for (i, (d, name)) in [(idle, "idle"), (loaded, "loaded")].iter().enumerate() {
        if let Some(d) = d {
            bars.series.push(BarSeries {
                label: name.to_string(),
                color: color(i + 1),
                values: QUANTILES
                    .iter()
                    .map(|(k, _)| d.get(*k).and_then(Value::as_f64))
                    .collect(),
            });
        }
    }
    let bloat = match (
        idle.and_then(|d| f(d, "/p50")),
        loaded.and_then(|d| f(d, "/p50")),
    ) {
        (Some(i), Some(l)) if i > 0.0 => format!(
            " The median grew from {} to {} under load (× {}).",
            format::millis(i),
            format::millis(l),
            format::trim(l / i, 2)
        ),
        _ => String::new(),
    };
    sec.figure(
        &bars.render(),
        &format!(
            "Probes before the load started against probes while it ran (its first second excluded).{bloat}"
        ),
    );
    Some(sec)
}

/// Per-interval p50, p99 and max at the intervals' midpoints, with the
/// idle and loaded phases as bands.
fn time_section(rep: &Value) -> Option<Section> {
    let intervals = rep.get("intervals").and_then(Value::as_array)?;
    if intervals.len() < 2 {
        return None;
    }
    let mut sec = Section::new("time", "Over time");
    let all: Vec<f64> = intervals
        .iter()
        .flat_map(|iv| ["p50", "max"].map(|k| f(iv, &format!("/rtt_ms/{k}"))))
        .flatten()
        .filter(|v| *v > 0.0)
        .collect();
    let (lo, hi) = all
        .iter()
        .fold((f64::INFINITY, 0.0f64), |(l, h), v| (l.min(*v), h.max(*v)));
    let log = hi / lo > LOG_RATIO;
    let y = Axis::new("RTT", Quantity::Millis).log(log);
    let mut plot = LinePlot::new(
        "RTT per interval",
        Axis::new("Time", Quantity::Seconds).zero(),
        if log { y } else { y.zero() },
    );
    for (i, (k, l)) in [("p50", "p50"), ("p99", "p99"), ("max", "max")]
        .iter()
        .enumerate()
    {
        let mut ser = Series::new(*l, color(i));
        ser.marker = Some(marker(i));
        ser.width = if i == 0 { 2.0 } else { 1.2 };
        let mut last_end: Option<f64> = None;
        for iv in intervals {
            let (Some(a), Some(b)) = (f(iv, "/start"), f(iv, "/end")) else {
                continue;
            };
            // A gap (the load's excluded first second) breaks the line.
            if last_end.is_some_and(|e| a > e + 1e-3) {
                ser.points.push(Point::new(a, f64::NAN));
            }
            last_end = Some(b);
            let y = f(iv, &format!("/rtt_ms/{k}")).unwrap_or(f64::NAN);
            let mut p = Point::new((a + b) / 2.0, y);
            p.tip = Some(format!(
                "{}–{} s: {l} {}",
                format::trim(a, 2),
                format::trim(b, 2),
                format::millis(y)
            ));
            ser.points.push(p);
        }
        plot.series.push(ser);
    }
    plot.bands = phase_bands(intervals);
    sec.figure(
        &plot.render(),
        "Each interval's percentiles, drawn at its middle; bands: the idle and loaded phases.",
    );
    let mut t = Table::new(vec![
        Cell::text("interval"),
        Cell::text("phase"),
        Cell::num("transactions/s"),
        Cell::num("p50"),
        Cell::num("p99"),
        Cell::num("max"),
    ]);
    for iv in intervals {
        t.row(vec![
            Cell::text(format!(
                "{}–{} s",
                format::trim(f(iv, "/start").unwrap_or(0.0), 2),
                format::trim(f(iv, "/end").unwrap_or(0.0), 2)
            )),
            Cell::text(text(iv, "/phase").unwrap_or_else(|| "–".into())),
            Cell::num(format::trim(
                f(iv, "/transactions_per_second").unwrap_or(0.0),
                0,
            )),
            ms_cell(f(iv, "/rtt_ms/p50")),
            ms_cell(f(iv, "/rtt_ms/p99")),
            ms_cell(f(iv, "/rtt_ms/max")),
        ]);
    }
    sec.details("Intervals", &t.render(), false);
    Some(sec)
}

/// Consecutive intervals of one phase as one shaded band.
fn phase_bands(intervals: &[Value]) -> Vec<Band> {
    let mut bands: Vec<Band> = Vec::new();
    for iv in intervals {
        let (Some(phase), Some(a), Some(b)) = (text(iv, "/phase"), f(iv, "/start"), f(iv, "/end"))
        else {
            continue;
        };
        match bands.last_mut() {
            Some(last) if last.label == phase => last.x1 = b,
            _ => bands.push(Band {
                x0: a,
                x1: b,
                label: phase,
                shaded: true,
            }),
        }
    }
    bands
}

fn config_section(run: &RunData) -> Section {
    let rep = run.report;
    let mut sec = Section::new("config", "Test configuration");
    let mut rows: Vec<(String, String)> = Vec::new();
    if let Some(t) = rep.get("test").and_then(Value::as_object) {
        for (k, v) in t {
            let shown = match v {
                Value::Null => "–".to_string(),
                Value::Array(a) => a
                    .iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                other => crate::export::scalar_text(other).unwrap_or_else(|| other.to_string()),
            };
            rows.push((k.clone(), shown));
        }
    }
    for (k, label) in [
        ("/start/local", "local address"),
        ("/start/remote", "remote address"),
        ("/start/remote_software", "server software"),
    ] {
        if let Some(v) = text(rep, k) {
            rows.push((label.into(), v));
        }
    }
    rows.push(("archive id".into(), run.id.to_string()));
    sec.push(&html::facts(&rows));
    sec
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rebinning_keeps_every_transaction_and_orders_bins() {
        let b: Vec<(f64, u64)> = (1..=500)
            .map(|k| (0.01 * k as f64, k as u64 % 7 + 1))
            .collect();
        let total: u64 = b.iter().map(|x| x.1).sum();
        for log in [false, true] {
            let bins = rebin(&b, log);
            assert_eq!(bins.len(), BINS);
            assert_eq!(bins.iter().map(|x| x.2).sum::<u64>(), total);
            assert!(bins.windows(2).all(|w| (w[0].1 - w[1].0).abs() < 1e-9));
            assert!(bins[0].0 < 0.01 && (bins[BINS - 1].1 - 5.0).abs() < 1e-9);
        }
        // One bucket: one bin holding it.
        let one = rebin(&[(0.5, 3)], false);
        assert_eq!(one.len(), 1);
        assert_eq!(one[0].2, 3);
        assert!((one[0].0 - 0.49).abs() < 1e-12 && (one[0].1 - 0.5).abs() < 1e-12);
        assert!(rebin(&[], true).is_empty());
    }

    #[test]
    fn phases_become_bands() {
        let iv = |a: f64, p: &str| serde_json::json!({"start": a, "end": a + 1.0, "phase": p});
        let bands = phase_bands(&[iv(0.0, "idle"), iv(1.0, "idle"), iv(2.0, "loaded")]);
        assert_eq!(bands.len(), 2);
        assert_eq!((bands[0].x0, bands[0].x1), (0.0, 2.0));
        assert_eq!(bands[1].label, "loaded");
    }
}
