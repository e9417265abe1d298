//! The time-series plots of a run: throughput per stream and their sum,
//! UDP loss and jitter, TCP RTT and congestion window, each stream with its
//! own colour, dash and marker. Plot data only: the tables are `run`'s.

use super::directions::{Direction, JitterStats};
use super::shared::f;
use crate::format;
use crate::plots::{color, marker, Axis, Band, LinePlot, Point, Quantity, Rule, Series};
use serde_json::Value;
use std::collections::BTreeMap;

pub(super) fn stream_dir(st: &Value) -> Option<&str> {
    st.get("direction").and_then(Value::as_str)
}

/// Per-stream values of one direction: stream id -> points.
/// `over`: the value holds over the interval (a rate), else it is a sample
/// taken at the interval's end (tcp_info).
pub(super) fn per_stream(
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

pub(super) fn omitted_bands(intervals: &[&Value]) -> Vec<Band> {
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

pub(super) fn time_axis() -> Axis {
    Axis::new("Time since start", Quantity::Seconds).zero()
}

/// Dash patterns of streams 0..5: with colour and marker, streams that
/// carry the same rate still show one beside the other.
pub(super) const STREAM_DASHES: [Option<&str>; 6] = [
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
pub(super) fn stream_style(id: i64, k: usize, n: usize, points: usize) -> Series {
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

pub(super) fn stream_series(streams: BTreeMap<i64, Vec<Point>>) -> Vec<Series> {
    let n = streams.len();
    let mut out = Vec::new();
    for (k, (id, pts)) in streams.into_iter().enumerate() {
        let mut s = stream_style(id, k, n, pts.len());
        s.points = pts;
        out.push(s);
    }
    out
}

pub(super) fn throughput_series(
    intervals: &[&Value],
    d: &Direction,
    udp: bool,
    suffix: &str,
) -> LinePlot {
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
        sum.points.push(interval_point(start, end, v));
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

pub(super) fn udp_series(intervals: &[&Value], d: &Direction, suffix: &str) -> LinePlot {
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

pub(super) fn tcp_series(
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

/// A throughput of `v` bits/s over the interval `start`-`end` s, with its tip.
pub(super) fn interval_point(start: f64, end: f64, v: f64) -> Point {
    let mut p = Point::over(start, end, v);
    p.tip = Some(format!(
        "{} – {} s: {}",
        format::trim(start, 2),
        format::trim(end, 2),
        format::rate(v)
    ));
    p
}
