//! What a page describes a plot with: axes and the quantity each measures,
//! points, series, reference rules, shaded bands, and the palette, markers
//! and dashes that keep series apart. Plain data and styling; no layout and
//! no drawing (that is `axes`, `line`, `bar` and `legend`).

use crate::svg::{Marker, Stroke};

/// Okabe–Ito colours (safe for the common colour-vision deficiencies),
/// without the yellow that vanishes on white.
pub const PALETTE: [&str; 7] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000",
];

/// The i-th palette colour (cycles).
pub fn color(i: usize) -> &'static str {
    PALETTE[i % PALETTE.len()]
}

/// The i-th marker shape (cycles); with `color` it keeps series apart in grey print.
pub fn marker(i: usize) -> Marker {
    Marker::ALL[i % Marker::ALL.len()]
}

/// Dash pattern for the i-th cycle through the palette, so the 8th series
/// differs from the 1st.
pub fn dash(i: usize) -> Option<&'static str> {
    match (i / PALETTE.len()) % 3 {
        0 => None,
        1 => Some("7 4"),
        _ => Some("2 3"),
    }
}

/// What an axis measures; decides its unit and tick labels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// bits/s; unit chosen by range (Mbit/s, Gbit/s, ...).
    Rate,
    /// bytes; binary prefixes chosen by range.
    Bytes,
    Percent,
    Millis,
    Seconds,
    /// A plain number without unit.
    Count,
    /// Named values at positions 0, 1, 2, ...
    Category,
}

/// One axis: what it shows and how.
#[derive(Debug, Clone)]
pub struct Axis {
    /// The quantity's name, without the unit: "Throughput".
    pub label: String,
    pub quantity: Quantity,
    pub log: bool,
    /// Preferred tick positions (data values), e.g. the swept values; used when
    /// their labels fit.
    pub ticks_at: Option<Vec<f64>>,
    /// Labels of a `Category` axis, at positions 0, 1, 2, ...
    pub categories: Vec<String>,
    /// Start a linear axis at zero (throughput, CPU).
    pub include_zero: bool,
    /// The axis reaches at least this value (data units), e.g. 100 %.
    pub at_least: Option<f64>,
    /// Leave a margin around the data (sweep x axes), instead of ending at ticks.
    pub pad: bool,
}

impl Axis {
    pub fn new(label: &str, quantity: Quantity) -> Axis {
        Axis {
            label: label.to_string(),
            quantity,
            log: false,
            ticks_at: None,
            categories: Vec::new(),
            include_zero: false,
            at_least: None,
            pad: false,
        }
    }
    pub fn log(mut self, log: bool) -> Axis {
        self.log = log;
        self
    }
    pub fn zero(mut self) -> Axis {
        self.include_zero = true;
        self
    }
    pub fn at_least(mut self, v: f64) -> Axis {
        self.at_least = Some(v);
        self
    }
    pub fn ticks_at(mut self, v: Vec<f64>) -> Axis {
        self.ticks_at = Some(v);
        self
    }
    pub fn padded(mut self) -> Axis {
        self.pad = true;
        self
    }
    pub fn categories(mut self, c: Vec<String>) -> Axis {
        self.ticks_at = Some((0..c.len()).map(|i| i as f64).collect());
        self.categories = c;
        self.pad = true;
        self
    }
}

/// One data point; `err` is the (low, high) of its error bar.
#[derive(Debug, Clone, PartialEq)]
pub struct Point {
    pub x: f64,
    pub y: f64,
    pub err: Option<(f64, f64)>,
    /// Hover text.
    pub tip: Option<String>,
    /// The value holds over [x0, x] (an interval's rate): drawn as a step
    /// from x0 to x, its marker in the middle.
    pub x0: Option<f64>,
    /// Where clicking the marker leads (the table row of the point).
    pub href: Option<String>,
}

impl Point {
    pub fn new(x: f64, y: f64) -> Point {
        Point {
            x,
            y,
            err: None,
            tip: None,
            x0: None,
            href: None,
        }
    }

    /// A value over the interval [start, end].
    pub fn over(start: f64, end: f64, y: f64) -> Point {
        Point {
            x0: Some(start),
            ..Point::new(end, y)
        }
    }

    /// Where the marker goes: the middle of an interval, else x.
    pub(super) fn marker_x(&self) -> f64 {
        match self.x0 {
            Some(a) if a.is_finite() => (a + self.x) / 2.0,
            _ => self.x,
        }
    }
}

/// A line with optional markers; a NaN y breaks the line.
#[derive(Debug, Clone)]
pub struct Series {
    pub label: String,
    pub points: Vec<Point>,
    pub color: &'static str,
    pub dash: Option<&'static str>,
    pub marker: Option<Marker>,
    pub width: f64,
    /// Plotted against the second (right) y axis.
    pub right: bool,
    /// Listed in the legend.
    pub legend: bool,
    /// Markers drawn as outlines, so a filled one over them leaves a ring.
    pub hollow: bool,
    /// Drawn first, wide and translucent: a line that coincides with it
    /// (sent under received) stays visible inside it.
    pub band: bool,
}

impl Series {
    pub fn new(label: impl Into<String>, color: &'static str) -> Series {
        Series {
            label: label.into(),
            points: Vec::new(),
            color,
            dash: None,
            marker: None,
            width: 2.0,
            right: false,
            legend: true,
            hollow: false,
            band: false,
        }
    }

    /// The stroke its line is drawn with.
    pub(super) fn stroke(&self) -> Stroke<'static> {
        let mut st = Stroke::new(self.color, self.width);
        if let Some(d) = self.dash {
            st = st.dashed(d);
        }
        if self.band {
            st = Stroke::new(self.color, self.width.max(BAND_WIDTH)).opacity(BAND_OPACITY);
        }
        st
    }
}

/// Width and opacity of a `band` series.
pub(super) const BAND_WIDTH: f64 = 7.0;

pub(super) const BAND_OPACITY: f64 = 0.35;

/// A horizontal reference line (a mean, a target), across the plot or over
/// [x0, x1]; labelled in the legend, or above the segment when `inline`.
#[derive(Debug, Clone)]
pub struct Rule {
    pub y: f64,
    pub span: Option<(f64, f64)>,
    pub label: String,
    pub color: &'static str,
    pub dash: Option<&'static str>,
    pub right: bool,
    pub inline: bool,
}

/// A shaded x range with a label at its top (sessions, omitted warm-up).
#[derive(Debug, Clone)]
pub struct Band {
    pub x0: f64,
    pub x1: f64,
    pub label: String,
    pub shaded: bool,
}
