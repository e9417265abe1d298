//! Plot builders: line plots (with error bars, a second y axis, reference
//! lines and shaded bands) and grouped bar plots, laid out so labels do not
//! overlap at the sizes the report uses.

use crate::format::{self, Unit};
use crate::scale::{linear_ticks, log_ticks, tick_label, Scale};
use crate::svg::{text_width, Anchor, Marker, Stroke, Svg, Text, FONT};

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
    fn marker_x(&self) -> f64 {
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
    fn stroke(&self) -> Stroke<'static> {
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
const BAND_WIDTH: f64 = 7.0;
const BAND_OPACITY: f64 = 0.35;

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

/// A line plot.
#[derive(Debug, Clone)]
pub struct LinePlot {
    pub title: String,
    pub x: Axis,
    pub y: Axis,
    pub y2: Option<Axis>,
    pub series: Vec<Series>,
    pub rules: Vec<Rule>,
    pub bands: Vec<Band>,
    pub width: f64,
    pub height: f64,
}

const TITLE_H: f64 = 30.0;
const TICK_LEN: f64 = 5.0;
const AXIS_TITLE_GAP: f64 = 20.0;
const LEGEND_ROW: f64 = 20.0;

/// An axis resolved against its data: unit, scale domain and labelled ticks.
#[derive(Debug, Clone)]
struct Resolved {
    /// Data values are divided by this before mapping (display unit).
    factor: f64,
    domain: (f64, f64),
    log: bool,
    ticks: Vec<(f64, String)>,
    title: String,
}

impl Resolved {
    fn scale(&self, range: (f64, f64)) -> Scale {
        if self.log {
            Scale::log(10.0, self.domain, range)
        } else {
            Scale::linear(self.domain, range)
        }
    }
}

/// Unit of a linear axis in display terms.
fn display_unit(q: Quantity, max: f64) -> Unit {
    match q {
        Quantity::Rate => format::rate_unit(max),
        Quantity::Bytes => format::bytes_unit(max),
        Quantity::Percent => Unit {
            factor: 1.0,
            name: "%",
        },
        // Loopback RTTs and jitter are µs: "0.047 ms" ticks read badly.
        Quantity::Millis if max < 1.0 && max > 0.0 => Unit {
            factor: 0.001,
            name: "µs",
        },
        Quantity::Millis => Unit {
            factor: 1.0,
            name: "ms",
        },
        Quantity::Seconds => Unit {
            factor: 1.0,
            name: "s",
        },
        Quantity::Count | Quantity::Category => Unit {
            factor: 1.0,
            name: "",
        },
    }
}

/// Label of one tick at data value `v` on an axis that labels each tick with
/// its own unit (log axes and ticks placed at swept values).
fn self_labelled(axis: &Axis, v: f64, all: &[f64]) -> String {
    match axis.quantity {
        Quantity::Bytes => {
            if all
                .iter()
                .all(|x| x.fract() == 0.0 && (*x as u64) & 1023 == 0)
            {
                format::size_label(v)
            } else {
                format::trim(v, 0)
            }
        }
        Quantity::Rate => format::rate_label(v),
        Quantity::Percent => format!("{}%", format::trim(v, 2)),
        Quantity::Millis => format!("{} ms", format::trim(v, 3)),
        Quantity::Seconds => format!("{} s", format::trim(v, 3)),
        Quantity::Count => format::trim(v, 3),
        Quantity::Category => axis
            .categories
            .get(v.round().max(0.0) as usize)
            .cloned()
            .unwrap_or_default(),
    }
}

/// Whether tick labels at these pixel positions leave a gap between neighbours.
fn labels_fit(positions: &[f64], labels: &[String]) -> bool {
    positions.windows(2).zip(labels.windows(2)).all(|(p, l)| {
        let need = (text_width(&l[0], FONT) + text_width(&l[1], FONT)) / 2.0 + 8.0;
        (p[1] - p[0]).abs() >= need
    })
}

/// Resolves a horizontal axis of `length` pixels for data in [min, max].
fn resolve_x(axis: &Axis, min: f64, max: f64, length: f64) -> Resolved {
    let (min, max) = if min.is_finite() && max.is_finite() {
        (min, max)
    } else {
        (0.0, 1.0)
    };
    let log = axis.log && min > 0.0;
    let self_units = log || axis.ticks_at.is_some();
    let unit = if self_units {
        Unit {
            factor: 1.0,
            name: "",
        }
    } else {
        display_unit(axis.quantity, min.abs().max(max.abs()))
    };
    let (lo, hi) = (min / unit.factor, max / unit.factor);
    let domain = if log {
        let span = (hi / lo).ln().max(1e-9);
        let pad = if axis.pad { span * 0.05 } else { 0.0 };
        let pad = if span < 1e-6 { 0.5 } else { pad };
        (lo * (-pad).exp(), hi * pad.exp())
    } else if axis.pad {
        let span = hi - lo;
        let pad = if span > 0.0 { span * 0.05 } else { 0.5 };
        (lo - pad, hi + pad)
    } else if axis.include_zero {
        (lo.min(0.0), hi.max(0.0))
    } else {
        (lo, hi)
    };
    let domain = if domain.1 > domain.0 {
        domain
    } else {
        (domain.0 - 0.5, domain.1 + 0.5)
    };
    let scale = if log {
        Scale::log(10.0, domain, (0.0, length))
    } else {
        Scale::linear(domain, (0.0, length))
    };
    // Preferred ticks, thinned (keeping the ends) until their labels fit.
    let mut ticks: Vec<(f64, String)> = Vec::new();
    if let Some(at) = &axis.ticks_at {
        let mut at: Vec<f64> = at.clone();
        at.sort_by(|a, b| a.partial_cmp(b).unwrap_or(std::cmp::Ordering::Equal));
        at.dedup();
        let all = at.clone();
        for every in 1..=at.len().max(1) {
            let pick: Vec<f64> = at.iter().copied().step_by(every).collect();
            let labels: Vec<String> = pick.iter().map(|v| self_labelled(axis, *v, &all)).collect();
            let pos: Vec<f64> = pick.iter().map(|v| scale.map(*v)).collect();
            if labels_fit(&pos, &labels) || pick.len() <= 1 {
                ticks = pick.into_iter().zip(labels).collect();
                break;
            }
        }
    } else if log {
        for max_count in (2..=12).rev() {
            let vals = log_ticks(domain.0, domain.1, 10.0, max_count);
            let labels: Vec<String> = vals.iter().map(|v| self_labelled(axis, *v, &[])).collect();
            let pos: Vec<f64> = vals.iter().map(|v| scale.map(*v)).collect();
            if labels_fit(&pos, &labels) || vals.len() <= 2 {
                ticks = vals.into_iter().zip(labels).collect();
                break;
            }
        }
    } else {
        for target in (2..=((length / 60.0) as usize).clamp(2, 12)).rev() {
            let t = linear_ticks(domain.0, domain.1, target);
            let vals: Vec<f64> = t
                .values
                .iter()
                .copied()
                .filter(|v| *v >= domain.0 - 1e-9 && *v <= domain.1 + 1e-9)
                .collect();
            let labels: Vec<String> = vals.iter().map(|v| tick_label(*v, t.step)).collect();
            let pos: Vec<f64> = vals.iter().map(|v| scale.map(*v)).collect();
            if labels_fit(&pos, &labels) || target == 2 {
                ticks = vals.into_iter().zip(labels).collect();
                break;
            }
        }
    }
    let mut title = axis.label.clone();
    if !unit.name.is_empty() {
        title = format!("{title} ({})", unit.name);
    }
    if log {
        title.push_str(", log scale");
    }
    Resolved {
        factor: unit.factor,
        domain,
        log,
        ticks,
        title,
    }
}

/// Resolves a vertical axis of `length` pixels for data in [min, max].
fn resolve_y(axis: &Axis, min: f64, max: f64, length: f64) -> Resolved {
    let (mut min, mut max) = if min.is_finite() && max.is_finite() {
        (min, max)
    } else {
        (0.0, 1.0)
    };
    // Headroom so the highest point does not sit on the frame.
    if !axis.log && max > 0.0 {
        max *= 1.04;
    }
    if let Some(a) = axis.at_least {
        max = max.max(a);
    }
    if axis.include_zero && !axis.log {
        min = min.min(0.0);
        max = max.max(0.0);
    }
    let log = axis.log && min > 0.0;
    if log {
        let mut ticks = Vec::new();
        let mut domain = (min, max);
        for max_count in (2..=((length / 28.0) as usize).clamp(2, 10)).rev() {
            let vals = log_ticks(min, max, 10.0, max_count);
            if vals.len() >= 2 || max_count == 2 {
                domain = (
                    vals.first().copied().unwrap_or(min).min(min),
                    vals.last().copied().unwrap_or(max).max(max),
                );
                ticks = vals
                    .iter()
                    .map(|v| (*v, self_labelled(axis, *v, &[])))
                    .collect();
                break;
            }
        }
        return Resolved {
            factor: 1.0,
            domain,
            log,
            ticks,
            title: format!("{}, log scale", axis.label),
        };
    }
    let unit = display_unit(axis.quantity, min.abs().max(max.abs()));
    let target = ((length / 45.0) as usize).clamp(3, 9);
    let t = linear_ticks(min / unit.factor, max / unit.factor, target);
    let ticks = t
        .values
        .iter()
        .map(|v| (*v, tick_label(*v, t.step)))
        .collect();
    let title = if unit.name.is_empty() {
        axis.label.clone()
    } else {
        format!("{} ({})", axis.label, unit.name)
    };
    Resolved {
        factor: unit.factor,
        domain: (t.lo, t.hi),
        log: false,
        ticks,
        title,
    }
}

/// A legend entry: how its key is drawn and its text.
#[derive(Debug, Clone)]
struct LegendItem {
    label: String,
    color: &'static str,
    dash: Option<&'static str>,
    marker: Option<Marker>,
    /// A filled square key (bars) instead of a line.
    swatch: bool,
    hollow: bool,
    band: bool,
}

impl LegendItem {
    fn line(label: String, color: &'static str, dash: Option<&'static str>) -> LegendItem {
        LegendItem {
            label,
            color,
            dash,
            marker: None,
            swatch: false,
            hollow: false,
            band: false,
        }
    }
}

impl LegendItem {
    fn width(&self) -> f64 {
        34.0 + text_width(&self.label, FONT) + 18.0
    }
}

/// Rows of legend items that fit in `width`.
fn legend_rows(items: &[LegendItem], width: f64) -> Vec<Vec<LegendItem>> {
    let mut rows: Vec<Vec<LegendItem>> = Vec::new();
    let mut used = 0.0;
    for it in items {
        let w = it.width();
        if rows.is_empty() || used + w > width {
            rows.push(Vec::new());
            used = 0.0;
        }
        used += w;
        rows.last_mut().expect("row pushed").push(it.clone());
    }
    rows
}

fn draw_legend(svg: &mut Svg, rows: &[Vec<LegendItem>], x0: f64, y0: f64, width: f64) {
    svg.group("legend");
    for (r, row) in rows.iter().enumerate() {
        let total: f64 = row.iter().map(LegendItem::width).sum();
        let mut x = x0 + ((width - total) / 2.0).max(0.0);
        let y = y0 + r as f64 * LEGEND_ROW + LEGEND_ROW / 2.0;
        for it in row {
            if it.swatch {
                svg.rect(x + 8.0, y - 6.0, 14.0, 12.0, it.color, None);
            } else {
                let mut s = Stroke::new(it.color, 2.0);
                if let Some(d) = it.dash {
                    s = s.dashed(d);
                }
                if it.band {
                    s = Stroke::new(it.color, BAND_WIDTH).opacity(BAND_OPACITY);
                }
                svg.line(x, y, x + 30.0, y, s);
                match (it.marker, it.hollow) {
                    (Some(m), false) => svg.marker(m, x + 15.0, y, 8.0, it.color, None),
                    (Some(m), true) => svg.hollow_marker(m, x + 15.0, y, 10.0, it.color, None),
                    (None, _) => {}
                }
            }
            svg.text(x + 36.0, y + 4.0, &it.label, Text::new(FONT));
            x += it.width();
        }
    }
    svg.end_group();
}

fn finite_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        })
}

fn y_axis_width(r: &Resolved) -> f64 {
    let w = r
        .ticks
        .iter()
        .map(|(_, l)| text_width(l, FONT))
        .fold(0.0, f64::max);
    w + TICK_LEN + 6.0 + AXIS_TITLE_GAP + 6.0
}

impl LinePlot {
    pub fn new(title: impl Into<String>, x: Axis, y: Axis) -> LinePlot {
        LinePlot {
            title: title.into(),
            x,
            y,
            y2: None,
            series: Vec::new(),
            rules: Vec::new(),
            bands: Vec::new(),
            width: 1000.0,
            height: 420.0,
        }
    }

    /// Whether any series has a point to draw.
    pub fn has_data(&self) -> bool {
        self.series
            .iter()
            .any(|s| s.points.iter().any(|p| p.x.is_finite() && p.y.is_finite()))
    }

    fn legend_items(&self) -> Vec<LegendItem> {
        let mut items: Vec<LegendItem> = self
            .series
            .iter()
            .filter(|s| s.legend)
            .map(|s| LegendItem {
                label: if s.right && self.y2.is_some() {
                    format!("{} (right axis)", s.label)
                } else {
                    s.label.clone()
                },
                color: s.color,
                dash: s.dash,
                marker: s.marker,
                swatch: false,
                hollow: s.hollow,
                band: s.band,
            })
            .collect();
        items.extend(
            self.rules
                .iter()
                .filter(|r| !r.inline)
                .map(|r| LegendItem::line(r.label.clone(), r.color, r.dash)),
        );
        items
    }

    pub fn render(&self) -> String {
        let side = |right: bool| {
            let pts = self
                .series
                .iter()
                .filter(|s| s.right == right)
                .flat_map(|s| s.points.iter())
                .flat_map(|p| {
                    let (lo, hi) = p.err.unwrap_or((p.y, p.y));
                    [p.y, lo, hi]
                });
            let rules = self.rules.iter().filter(|r| r.right == right).map(|r| r.y);
            finite_range(pts.chain(rules))
        };
        let (y_min, y_max) = side(false);
        let (y2_min, y2_max) = side(true);
        let (x_min, x_max) = finite_range(
            self.series
                .iter()
                .flat_map(|s| s.points.iter().filter(|p| p.y.is_finite()))
                .flat_map(|p| [p.x, p.x0.unwrap_or(p.x)])
                .chain(self.bands.iter().flat_map(|b| [b.x0, b.x1]))
                .chain(self.x.ticks_at.iter().flatten().copied()),
        );

        // Vertical layout first: the plot height decides the y ticks, whose
        // label widths decide the horizontal layout.
        let legend = self.legend_items();
        // Band labels get a strip of their own above the frame.
        let top = TITLE_H
            + if self.bands.iter().any(|b| !b.label.is_empty()) {
                16.0
            } else {
                0.0
            };
        let guess_rows = legend_rows(&legend, self.width - 120.0).len() as f64;
        let bottom_axis = TICK_LEN + 16.0 + AXIS_TITLE_GAP + 8.0;
        let plot_h = (self.height - top - bottom_axis - guess_rows * LEGEND_ROW - 8.0).max(80.0);
        let ry = resolve_y(&self.y, y_min, y_max, plot_h);
        let ry2 = self
            .y2
            .as_ref()
            .map(|a| resolve_y(a, y2_min, y2_max, plot_h));
        let left = y_axis_width(&ry);
        let right = ry2.as_ref().map(y_axis_width).unwrap_or(24.0);
        let plot_w = (self.width - left - right).max(100.0);
        let rx = resolve_x(&self.x, x_min, x_max, plot_w);
        let rows = legend_rows(&legend, self.width - 20.0);
        let height = top + plot_h + bottom_axis + rows.len() as f64 * LEGEND_ROW + 8.0;

        let sx = rx.scale((left, left + plot_w));
        let sy = ry.scale((top + plot_h, top));
        let sy2 = ry2.as_ref().map(|r| r.scale((top + plot_h, top)));
        let mx = |v: f64| sx.map(v / rx.factor);
        let my = |v: f64, right: bool| match (&sy2, right) {
            (Some(s), true) => s.map(v / ry2.as_ref().map(|r| r.factor).unwrap_or(1.0)),
            _ => sy.map(v / ry.factor),
        };

        let mut svg = Svg::new(self.width, height, &self.title);
        svg.text(
            self.width / 2.0,
            20.0,
            &self.title,
            Text::new(15.0).anchor(Anchor::Middle).bold(),
        );

        // Bands under everything else.
        svg.group("bands");
        for (i, b) in self.bands.iter().enumerate() {
            let x0 = mx(b.x0).max(left);
            let x1 = mx(b.x1).min(left + plot_w);
            if b.shaded {
                let fill = if i % 2 == 0 { "#eef1f5" } else { "#f7f8fa" };
                svg.rect(x0, top, x1 - x0, plot_h, fill, Some(&b.label));
            } else if i > 0 {
                svg.line(
                    x0,
                    top,
                    x0,
                    top + plot_h,
                    Stroke::new("#999", 1.0).dashed("3 3"),
                );
            }
            if !b.label.is_empty() && text_width(&b.label, FONT - 1.0) < (x1 - x0) - 4.0 {
                let mut t = Text::new(FONT - 1.0).anchor(Anchor::Middle);
                t.fill = "#555";
                svg.text((x0 + x1) / 2.0, top - 5.0, &b.label, t);
            }
        }
        svg.end_group();

        // Grid and ticks.
        svg.group("grid");
        for (v, _) in &ry.ticks {
            let y = sy.map(*v);
            svg.line(left, y, left + plot_w, y, Stroke::new("#e3e3e3", 1.0));
        }
        for (v, _) in &rx.ticks {
            let x = sx.map(*v);
            svg.line(x, top, x, top + plot_h, Stroke::new("#efefef", 1.0));
        }
        svg.end_group();
        svg.group("axes");
        svg.frame(left, top, plot_w, plot_h, Stroke::new("#666", 1.0));
        for (v, l) in &ry.ticks {
            let y = sy.map(*v);
            svg.line(left - TICK_LEN, y, left, y, Stroke::new("#666", 1.0));
            svg.text(
                left - TICK_LEN - 3.0,
                y + 4.0,
                l,
                Text::new(FONT).anchor(Anchor::End),
            );
        }
        if let (Some(r2), Some(s2)) = (&ry2, &sy2) {
            for (v, l) in &r2.ticks {
                let y = s2.map(*v);
                svg.line(
                    left + plot_w,
                    y,
                    left + plot_w + TICK_LEN,
                    y,
                    Stroke::new("#666", 1.0),
                );
                svg.text(left + plot_w + TICK_LEN + 3.0, y + 4.0, l, Text::new(FONT));
            }
            svg.text(
                self.width - 8.0,
                top + plot_h / 2.0,
                &r2.title,
                Text::new(FONT + 1.0).anchor(Anchor::Middle).rotate(90.0),
            );
        }
        for (v, l) in &rx.ticks {
            let x = sx.map(*v);
            svg.line(
                x,
                top + plot_h,
                x,
                top + plot_h + TICK_LEN,
                Stroke::new("#666", 1.0),
            );
            svg.text(
                x,
                top + plot_h + TICK_LEN + 13.0,
                l,
                Text::new(FONT).anchor(Anchor::Middle),
            );
        }
        svg.text(
            left + plot_w / 2.0,
            top + plot_h + TICK_LEN + 16.0 + AXIS_TITLE_GAP - 2.0,
            &rx.title,
            Text::new(FONT + 1.0).anchor(Anchor::Middle),
        );
        svg.text(
            14.0,
            top + plot_h / 2.0,
            &ry.title,
            Text::new(FONT + 1.0).anchor(Anchor::Middle).rotate(-90.0),
        );
        svg.end_group();

        // Series with error bars are nudged apart so their bars stay visible.
        let with_err: Vec<usize> = (0..self.series.len())
            .filter(|&i| self.series[i].points.iter().any(|p| p.err.is_some()))
            .collect();
        // Bands first, so the lines they carry are drawn over them.
        let order = (0..self.series.len())
            .filter(|&i| self.series[i].band)
            .chain((0..self.series.len()).filter(|&i| !self.series[i].band));
        for i in order {
            let s = &self.series[i];
            let nudge = with_err
                .iter()
                .position(|&j| j == i)
                .map(|k| (k as f64 - (with_err.len() as f64 - 1.0) / 2.0) * 4.0)
                .unwrap_or(0.0);
            svg.group("series");
            let stroke = s.stroke();
            for run in line_runs(&s.points) {
                let px: Vec<(f64, f64)> = run
                    .iter()
                    .map(|(x, y)| (mx(*x) + nudge, my(*y, s.right)))
                    .collect();
                svg.polyline(&px, stroke, "line");
            }
            for p in &s.points {
                if !(p.x.is_finite() && p.y.is_finite()) {
                    continue;
                }
                let x = mx(p.marker_x()) + nudge;
                if let Some(h) = &p.href {
                    svg.link(h);
                }
                if let Some((lo, hi)) = p.err {
                    if lo.is_finite() && hi.is_finite() {
                        let (y0, y1) = (my(lo, s.right), my(hi, s.right));
                        let st = Stroke::new(s.color, 1.3);
                        svg.line(x, y0, x, y1, st);
                        svg.line(x - 4.0, y0, x + 4.0, y0, st);
                        svg.line(x - 4.0, y1, x + 4.0, y1, st);
                    }
                }
                match (s.marker, s.hollow) {
                    (Some(m), false) => {
                        svg.marker(m, x, my(p.y, s.right), 8.0, s.color, p.tip.as_deref())
                    }
                    (Some(m), true) => {
                        svg.hollow_marker(m, x, my(p.y, s.right), 11.0, s.color, p.tip.as_deref())
                    }
                    (None, _) => {}
                }
                if p.href.is_some() {
                    svg.end_link();
                }
            }
            svg.end_group();
        }

        // Reference lines over the data, so a mean stays visible.
        svg.group("rules");
        for r in &self.rules {
            let y = my(r.y, r.right);
            let (x0, x1) = match r.span {
                Some((a, b)) => (mx(a).max(left), mx(b).min(left + plot_w)),
                None => (left, left + plot_w),
            };
            let mut s = Stroke::new(r.color, 1.8);
            if let Some(d) = r.dash {
                s = s.dashed(d);
            }
            svg.line(x0, y, x1, y, s);
        }
        svg.end_group();

        // Inline rule labels last, over the data, on a white halo.
        svg.group("rule-labels");
        for r in self.rules.iter().filter(|r| r.inline) {
            let y = my(r.y, r.right);
            let (x0, x1) = match r.span {
                Some((a, b)) => (mx(a).max(left), mx(b).min(left + plot_w)),
                None => (left, left + plot_w),
            };
            if text_width(&r.label, FONT) < x1 - x0 {
                let mut t = Text::new(FONT).anchor(Anchor::Middle).bold();
                t.fill = r.color;
                t.halo = true;
                let below = y + 16.0 < top + plot_h;
                svg.text(
                    (x0 + x1) / 2.0,
                    if below { y + 16.0 } else { y - 6.0 },
                    &r.label,
                    t,
                );
            }
        }
        svg.end_group();

        let legend_y = top + plot_h + bottom_axis;
        draw_legend(&mut svg, &rows, 10.0, legend_y, self.width - 20.0);
        svg.finish()
    }
}

/// The vertices of a series' lines in data units, one run per unbroken
/// stretch: a NaN breaks the line, and so does a gap between one interval's
/// end and the next one's start. A point over an interval gives two vertices
/// (a step), so the first interval shows from its start.
fn line_runs(points: &[Point]) -> Vec<Vec<(f64, f64)>> {
    let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new()];
    let mut last_end: Option<f64> = None;
    let mut last_len = 0.0f64;
    for p in points {
        let cur = runs.last_mut().expect("one run at least");
        if !(p.x.is_finite() && p.y.is_finite()) {
            if !cur.is_empty() {
                runs.push(Vec::new());
            }
            last_end = None;
            continue;
        }
        match p.x0.filter(|a| a.is_finite()) {
            Some(a) => {
                // The two ends' clocks leave up to a few ms between one
                // interval's end and the next one's start: within 1% of the
                // longer of the two intervals (a short last one too) is joined.
                let len = (p.x - a).abs();
                let joined = last_end.is_some_and(|e| (e - a).abs() <= 0.01 * len.max(last_len));
                if !cur.is_empty() && !joined {
                    runs.push(Vec::new());
                }
                let cur = runs.last_mut().expect("one run at least");
                cur.push((a, p.y));
                cur.push((p.x, p.y));
            }
            None => cur.push((p.x, p.y)),
        }
        last_len = p.x0.map(|a| (p.x - a).abs()).unwrap_or(0.0);
        last_end = Some(p.x);
    }
    runs.retain(|r| !r.is_empty());
    runs
}

fn one_line(s: &str) -> String {
    s.lines().collect::<Vec<_>>().join(" ")
}

/// Bars of one series across the categories of a bar plot.
#[derive(Debug, Clone)]
pub struct BarSeries {
    pub label: String,
    pub color: &'static str,
    pub values: Vec<Option<f64>>,
}

/// Grouped bars: one group per category, one bar per series.
#[derive(Debug, Clone)]
pub struct BarPlot {
    pub title: String,
    pub categories: Vec<String>,
    /// Axis title under the categories.
    pub x_label: String,
    pub series: Vec<BarSeries>,
    pub y: Axis,
    pub rules: Vec<Rule>,
    pub width: f64,
    pub height: f64,
}

impl BarPlot {
    pub fn new(title: impl Into<String>, x_label: &str, y: Axis) -> BarPlot {
        BarPlot {
            title: title.into(),
            categories: Vec::new(),
            x_label: x_label.to_string(),
            series: Vec::new(),
            y,
            rules: Vec::new(),
            width: 1000.0,
            height: 420.0,
        }
    }

    pub fn render(&self) -> String {
        let values = self
            .series
            .iter()
            .flat_map(|s| s.values.iter().flatten().copied());
        let (min, max) = finite_range(values.chain(self.rules.iter().map(|r| r.y)));
        let legend: Vec<LegendItem> = self
            .series
            .iter()
            .map(|s| LegendItem {
                swatch: true,
                ..LegendItem::line(s.label.clone(), s.color, None)
            })
            .chain(
                self.rules
                    .iter()
                    .map(|r| LegendItem::line(r.label.clone(), r.color, r.dash)),
            )
            .collect();
        let rows = legend_rows(&legend, self.width - 20.0);
        let n = self.categories.len().max(1);

        // Category labels: horizontal if they fit their group, else slanted.
        let guess_left = 70.0;
        let group_w = (self.width - guess_left - 24.0) / n as f64;
        // A label may have several lines ("host\n→ peer"); slanted, it is one.
        let widest_line = self
            .categories
            .iter()
            .flat_map(|c| c.lines())
            .map(|l| text_width(l, FONT))
            .fold(0.0, f64::max);
        let lines = self
            .categories
            .iter()
            .map(|c| c.lines().count())
            .max()
            .unwrap_or(1);
        let widest = self
            .categories
            .iter()
            .map(|c| text_width(&one_line(c), FONT))
            .fold(0.0, f64::max);
        let slant = widest_line > group_w - 6.0;
        // Too many to label even slanted: label every k-th.
        let every = if slant {
            ((FONT + 4.0) / group_w).ceil().max(1.0) as usize
        } else {
            1
        };
        let label_h = if slant {
            widest * 0.6 + 8.0
        } else {
            16.0 + (lines - 1) as f64 * 14.0
        };
        let bottom_axis = TICK_LEN + label_h + AXIS_TITLE_GAP + 8.0;
        let top = TITLE_H;
        let plot_h =
            (self.height - top - bottom_axis - rows.len() as f64 * LEGEND_ROW - 8.0).max(80.0);
        let y_axis = Axis {
            include_zero: true,
            ..self.y.clone()
        };
        let ry = resolve_y(&y_axis, min, max, plot_h);
        let mut left = y_axis_width(&ry);
        if slant {
            // The first slanted label reaches left of its group.
            left = left.max(widest * 0.82 - group_w / 2.0 + 8.0);
        }
        let plot_w = (self.width - left - 24.0).max(100.0);
        let group_w = plot_w / n as f64;
        let height = top + plot_h + bottom_axis + rows.len() as f64 * LEGEND_ROW + 8.0;
        let sy = ry.scale((top + plot_h, top));
        let my = |v: f64| sy.map(v / ry.factor);

        let mut svg = Svg::new(self.width, height, &self.title);
        svg.text(
            self.width / 2.0,
            20.0,
            &self.title,
            Text::new(15.0).anchor(Anchor::Middle).bold(),
        );
        svg.group("grid");
        for (v, l) in &ry.ticks {
            let y = sy.map(*v);
            svg.line(left, y, left + plot_w, y, Stroke::new("#e3e3e3", 1.0));
            svg.line(left - TICK_LEN, y, left, y, Stroke::new("#666", 1.0));
            svg.text(
                left - TICK_LEN - 3.0,
                y + 4.0,
                l,
                Text::new(FONT).anchor(Anchor::End),
            );
        }
        svg.end_group();

        let ns = self.series.len().max(1);
        let bar_w = (group_w * 0.8 / ns as f64).min(60.0);
        let base = my(0.0_f64.max(ry.domain.0 * ry.factor));
        let value_labels = self.series.iter().all(|s| {
            s.values
                .iter()
                .flatten()
                .all(|v| text_width(&format::sig3(v / ry.factor), FONT - 2.0) <= bar_w + 2.0)
        });
        svg.group("bars");
        for (c, cat) in self.categories.iter().enumerate() {
            let gx = left + c as f64 * group_w;
            let x0 = gx + (group_w - bar_w * ns as f64) / 2.0;
            for (k, s) in self.series.iter().enumerate() {
                let Some(v) = s.values.get(c).copied().flatten() else {
                    continue;
                };
                if !v.is_finite() {
                    continue;
                }
                let y = my(v);
                let tip = format!("{}: {} {}", one_line(cat), s.label, self.tip_value(v));
                let bx = x0 + k as f64 * bar_w;
                svg.rect(
                    bx + 1.0,
                    y.min(base),
                    bar_w - 2.0,
                    (base - y).abs(),
                    s.color,
                    Some(&tip),
                );
                if value_labels {
                    let mut t = Text::new(FONT - 2.0).anchor(Anchor::Middle);
                    t.fill = "#333";
                    svg.text(
                        bx + bar_w / 2.0,
                        y.min(base) - 3.0,
                        &format::sig3(v / ry.factor),
                        t,
                    );
                }
            }
            let lx = gx + group_w / 2.0;
            let ly = top + plot_h + TICK_LEN + 13.0;
            if c % every == 0 {
                if slant {
                    svg.text(
                        lx + 4.0,
                        ly - 4.0,
                        &one_line(cat),
                        Text::new(FONT).anchor(Anchor::End).rotate(-35.0),
                    );
                } else {
                    for (i, line) in cat.lines().enumerate() {
                        svg.text(
                            lx,
                            ly + i as f64 * 14.0,
                            line,
                            Text::new(FONT).anchor(Anchor::Middle),
                        );
                    }
                }
            }
        }
        svg.end_group();
        svg.group("rules");
        for r in &self.rules {
            let y = my(r.y);
            let mut s = Stroke::new(r.color, 1.8);
            if let Some(d) = r.dash {
                s = s.dashed(d);
            }
            svg.line(left, y, left + plot_w, y, s);
        }
        svg.end_group();
        svg.frame(left, top, plot_w, plot_h, Stroke::new("#666", 1.0));
        svg.text(
            left + plot_w / 2.0,
            top + plot_h + TICK_LEN + label_h + AXIS_TITLE_GAP - 4.0,
            &self.x_label,
            Text::new(FONT + 1.0).anchor(Anchor::Middle),
        );
        svg.text(
            14.0,
            top + plot_h / 2.0,
            &ry.title,
            Text::new(FONT + 1.0).anchor(Anchor::Middle).rotate(-90.0),
        );
        draw_legend(
            &mut svg,
            &rows,
            10.0,
            top + plot_h + bottom_axis,
            self.width - 20.0,
        );
        svg.finish()
    }

    fn tip_value(&self, v: f64) -> String {
        match self.y.quantity {
            Quantity::Rate => format::rate(v),
            Quantity::Bytes => format::bytes(v),
            Quantity::Percent => format::percent(v),
            _ => format::sig3(v),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
