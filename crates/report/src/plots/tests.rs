//! Unit tests of the plot builders: what a plot draws for given series and
//! how axes pick their units and ticks.

use super::axes::{labels_fit, resolve_x, resolve_y};
use super::line::line_runs;
use super::*;
use crate::scale::Scale;

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn line_plot_draws_series_error_bars_and_second_axis() {
    let mut p = LinePlot::new(
        "t",
        Axis::new("Socket buffer", Quantity::Bytes)
            .log(true)
            .ticks_at(vec![4096.0, 8192.0, 16384.0])
            .padded(),
        Axis::new("Throughput", Quantity::Rate).zero(),
    );
    p.y2 = Some(Axis::new("CPU", Quantity::Percent).zero().at_least(100.0));
    let mut s = Series::new("received", color(0));
    s.marker = Some(marker(0));
    for (x, y) in [(4096.0, 1e8), (8192.0, 2e8), (16384.0, 3.5e8)] {
        let mut pt = Point::new(x, y);
        pt.err = Some((y * 0.9, y * 1.1));
        s.points.push(pt);
    }
    let mut c = Series::new("CPU", color(1));
    c.right = true;
    c.points = vec![Point::new(4096.0, 20.0), Point::new(16384.0, 60.0)];
    p.series = vec![s, c];
    let svg = p.render();
    assert_eq!(count(&svg, "<polyline"), 2);
    assert!(svg.contains(">4 KiB<") && svg.contains(">16 KiB<"));
    assert!(svg.contains("Throughput (Mbit/s)"));
    assert!(svg.contains("CPU (%)"));
    assert!(svg.contains("Socket buffer, log scale"));
    assert!(svg.contains("received") && svg.contains("CPU (right axis)"));
    // 3 markers with 3 error bars (3 lines each).
    // 3 data markers and the legend key of "received".
    assert_eq!(count(&svg, "class=\"marker\""), 4);
    // 3 error bars of 3 lines each, 1 legend line each, ticks, grid...: at least 9.
    assert!(count(&svg, "<line") >= 9);
}

#[test]
fn nan_breaks_a_line() {
    let mut p = LinePlot::new(
        "t",
        Axis::new("Time", Quantity::Seconds),
        Axis::new("v", Quantity::Count),
    );
    let mut s = Series::new("a", color(0));
    s.points = vec![
        Point::new(1.0, 1.0),
        Point::new(2.0, 2.0),
        Point::new(3.0, f64::NAN),
        Point::new(4.0, 1.0),
        Point::new(5.0, 3.0),
    ];
    p.series.push(s);
    assert_eq!(count(&p.render(), "<polyline"), 2);
}

#[test]
fn intervals_are_steps_joined_across_clock_slop_and_broken_at_gaps() {
    let over = |a: f64, b: f64, y: f64| Point::over(a, b, y);
    // Ends and starts differ by µs (two clocks), a short last interval
    // overlaps its predecessor by 0.3 ms: one line, a step per interval.
    let pts = [
        over(0.0, 0.100153, 1.0),
        over(0.100088, 0.200082, 2.0),
        over(0.200082, 0.300412, 3.0),
        over(0.300099, 0.310315, 0.5),
    ];
    let runs = line_runs(&pts);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0].len(), 8);
    assert_eq!(runs[0][0], (0.0, 1.0), "from the first interval's start");
    assert_eq!(runs[0][7], (0.310315, 0.5));
    // A missing second breaks the line, as a NaN does.
    let runs = line_runs(&[over(0.0, 1.0, 1.0), over(2.0, 3.0, 1.0)]);
    assert_eq!(runs.len(), 2);
    let runs = line_runs(&[
        over(0.0, 1.0, 1.0),
        over(1.0, 2.0, f64::NAN),
        over(2.0, 3.0, 1.0),
    ]);
    assert_eq!(runs.len(), 2);
}

#[test]
fn crowded_x_ticks_are_thinned() {
    let values: Vec<f64> = (0..40).map(|i| 1000.0 + 1000.0 * i as f64).collect();
    let p = LinePlot {
        width: 500.0,
        ..LinePlot::new(
            "t",
            Axis::new("Write size", Quantity::Bytes)
                .ticks_at(values.clone())
                .padded(),
            Axis::new("v", Quantity::Count),
        )
    };
    let r = resolve_x(&p.x, 1000.0, 40000.0, 400.0);
    assert!(r.ticks.len() < 40 && r.ticks.len() >= 2, "{:?}", r.ticks);
    let s = Scale::linear(r.domain, (0.0, 400.0));
    let pos: Vec<f64> = r.ticks.iter().map(|(v, _)| s.map(*v)).collect();
    let labels: Vec<String> = r.ticks.iter().map(|(_, l)| l.clone()).collect();
    assert!(labels_fit(&pos, &labels));
    assert_eq!(r.title, "Write size");
    assert_eq!(labels[0], "1000");
}

#[test]
fn rate_axes_pick_units_by_range() {
    let r = resolve_y(
        &Axis::new("Throughput", Quantity::Rate).zero(),
        5.5e9,
        6.1e9,
        300.0,
    );
    assert_eq!(r.title, "Throughput (Gbit/s)");
    assert_eq!(r.domain.0, 0.0);
    assert!(r.domain.1 >= 6.1);
    let r = resolve_y(
        &Axis::new("Throughput", Quantity::Rate).zero(),
        0.0,
        9.4e8,
        300.0,
    );
    assert_eq!(r.title, "Throughput (Mbit/s)");
    let r = resolve_y(
        &Axis::new("cwnd", Quantity::Bytes).zero(),
        0.0,
        3.0e6,
        300.0,
    );
    assert_eq!(r.title, "cwnd (MiB)");
}

#[test]
fn bar_plot_slants_long_labels_and_draws_bars() {
    let mut b = BarPlot::new("t", "host", Axis::new("Throughput", Quantity::Rate));
    b.categories = (0..8)
        .map(|i| format!("192.168.1.{i} → 192.168.1.{}", i + 10))
        .collect();
    b.series = vec![
        BarSeries {
            label: "sent".into(),
            color: color(0),
            values: (0..8).map(|i| Some(9.5e8 - i as f64 * 1e6)).collect(),
        },
        BarSeries {
            label: "received".into(),
            color: color(1),
            values: (0..8)
                .map(|i| if i == 3 { None } else { Some(7e8) })
                .collect(),
        },
    ];
    let svg = b.render();
    // Background, 15 bars, frame, 2 legend keys.
    assert_eq!(count(&svg, "<rect"), 19);
    assert!(svg.contains("rotate(-35"));
}
