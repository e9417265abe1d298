//! The line plot: series of points on one or two y axes, with error bars,
//! reference lines, shaded bands, hover tips and links. The axes come from
//! `axes`, the legend from `legend`; it must not choose units or colours.

use super::axes::{finite_range, resolve_x, resolve_y, y_axis_width, Resolved};
use super::frame::{titled_svg, AXIS_TITLE_GAP, TICK_LEN, TITLE_H};
use super::legend::{draw_legend, legend_rows, LegendItem, LEGEND_ROW};
use super::model::{Axis, Band, Point, Rule, Series};
use crate::scale::Scale;
use crate::svg::{text_width, Anchor, Stroke, Svg, Text, FONT};

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

    pub(super) fn legend_items(&self) -> Vec<LegendItem> {
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
        let f = self.layout();
        let mut svg = titled_svg(self.width, f.height, &self.title);
        // Bands under everything else.
        self.draw_bands(&mut svg, &f);
        draw_grid_and_axes(&mut svg, &f, self.width);
        self.draw_series(&mut svg, &f);
        // Reference lines over the data, so a mean stays visible.
        self.draw_rules(&mut svg, &f);
        let legend_y = f.top + f.plot_h + f.bottom_axis;
        draw_legend(&mut svg, &f.rows, 10.0, legend_y, self.width - 20.0);
        svg.finish()
    }

    /// The data range on each side: (left y, right y, x).
    fn ranges(&self) -> ((f64, f64), (f64, f64), (f64, f64)) {
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
        let x = finite_range(
            self.series
                .iter()
                .flat_map(|s| s.points.iter().filter(|p| p.y.is_finite()))
                .flat_map(|p| [p.x, p.x0.unwrap_or(p.x)])
                .chain(self.bands.iter().flat_map(|b| [b.x0, b.x1]))
                .chain(self.x.ticks_at.iter().flatten().copied()),
        );
        (side(false), side(true), x)
    }

    fn layout(&self) -> Frame {
        let ((y_min, y_max), (y2_min, y2_max), (x_min, x_max)) = self.ranges();
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
        Frame {
            sx: rx.scale((left, left + plot_w)),
            sy: ry.scale((top + plot_h, top)),
            sy2: ry2.as_ref().map(|r| r.scale((top + plot_h, top))),
            left,
            top,
            plot_w,
            plot_h,
            bottom_axis,
            height,
            rx,
            ry,
            ry2,
            rows,
        }
    }

    fn draw_bands(&self, svg: &mut Svg, f: &Frame) {
        let (left, top, plot_w, plot_h) = (f.left, f.top, f.plot_w, f.plot_h);
        svg.group("bands");
        for (i, b) in self.bands.iter().enumerate() {
            let x0 = f.mx(b.x0).max(left);
            let x1 = f.mx(b.x1).min(left + plot_w);
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
    }

    fn draw_series(&self, svg: &mut Svg, f: &Frame) {
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
                    .map(|(x, y)| (f.mx(*x) + nudge, f.my(*y, s.right)))
                    .collect();
                svg.polyline(&px, stroke, "line");
            }
            for p in &s.points {
                if p.x.is_finite() && p.y.is_finite() {
                    draw_point(svg, f, s, p, f.mx(p.marker_x()) + nudge);
                }
            }
            svg.end_group();
        }
    }

    fn draw_rules(&self, svg: &mut Svg, f: &Frame) {
        svg.group("rules");
        for r in &self.rules {
            let y = f.my(r.y, r.right);
            let (x0, x1) = f.span(r.span);
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
            let y = f.my(r.y, r.right);
            let (x0, x1) = f.span(r.span);
            if text_width(&r.label, FONT) < x1 - x0 {
                let mut t = Text::new(FONT).anchor(Anchor::Middle).bold();
                t.fill = r.color;
                t.halo = true;
                let below = y + 16.0 < f.top + f.plot_h;
                svg.text(
                    (x0 + x1) / 2.0,
                    if below { y + 16.0 } else { y - 6.0 },
                    &r.label,
                    t,
                );
            }
        }
        svg.end_group();
    }
}

/// Where the plot area sits in the picture and how data values map onto it.
struct Frame {
    left: f64,
    top: f64,
    plot_w: f64,
    plot_h: f64,
    bottom_axis: f64,
    height: f64,
    rx: Resolved,
    ry: Resolved,
    ry2: Option<Resolved>,
    sx: Scale,
    sy: Scale,
    sy2: Option<Scale>,
    rows: Vec<Vec<LegendItem>>,
}

impl Frame {
    /// The pixel x of data value `v`.
    fn mx(&self, v: f64) -> f64 {
        self.sx.map(v / self.rx.factor)
    }

    /// The pixel y of data value `v` on the left or the right axis.
    fn my(&self, v: f64, right: bool) -> f64 {
        match (&self.sy2, right) {
            (Some(s), true) => s.map(v / self.ry2.as_ref().map(|r| r.factor).unwrap_or(1.0)),
            _ => self.sy.map(v / self.ry.factor),
        }
    }

    /// A rule's x extent in pixels: its span clipped to the plot, or the plot.
    fn span(&self, span: Option<(f64, f64)>) -> (f64, f64) {
        let (left, right) = (self.left, self.left + self.plot_w);
        match span {
            Some((a, b)) => (self.mx(a).max(left), self.mx(b).min(right)),
            None => (left, right),
        }
    }
}

/// The grid, the frame, the ticks and labels of both y axes and the x axis,
/// and the axis titles.
fn draw_grid_and_axes(svg: &mut Svg, f: &Frame, width: f64) {
    let (left, top, plot_w, plot_h) = (f.left, f.top, f.plot_w, f.plot_h);
    let (rx, ry, sx, sy) = (&f.rx, &f.ry, &f.sx, &f.sy);
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
    if let (Some(r2), Some(s2)) = (&f.ry2, &f.sy2) {
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
            width - 8.0,
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
}

/// One point of series `s` at pixel x `x`: its error bar, its marker with
/// the hover tip, inside its link.
fn draw_point(svg: &mut Svg, f: &Frame, s: &Series, p: &Point, x: f64) {
    if let Some(h) = &p.href {
        svg.link(h);
    }
    if let Some((lo, hi)) = p.err {
        if lo.is_finite() && hi.is_finite() {
            let (y0, y1) = (f.my(lo, s.right), f.my(hi, s.right));
            let st = Stroke::new(s.color, 1.3);
            svg.line(x, y0, x, y1, st);
            svg.line(x - 4.0, y0, x + 4.0, y0, st);
            svg.line(x - 4.0, y1, x + 4.0, y1, st);
        }
    }
    match (s.marker, s.hollow) {
        (Some(m), false) => svg.marker(m, x, f.my(p.y, s.right), 8.0, s.color, p.tip.as_deref()),
        (Some(m), true) => {
            svg.hollow_marker(m, x, f.my(p.y, s.right), 11.0, s.color, p.tip.as_deref())
        }
        (None, _) => {}
    }
    if p.href.is_some() {
        svg.end_link();
    }
}

/// The vertices of a series' lines in data units, one run per unbroken
/// stretch: a NaN breaks the line, and so does a gap between one interval's
/// end and the next one's start. A point over an interval gives two vertices
/// (a step), so the first interval shows from its start.
pub(super) fn line_runs(points: &[Point]) -> Vec<Vec<(f64, f64)>> {
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
