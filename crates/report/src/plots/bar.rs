//! The grouped bar plot: a bar per series in each category, long category
//! labels slanted, reference lines across. Axes from `axes`, legend from
//! `legend`; it must not choose units or colours.

use super::axes::{finite_range, resolve_y, y_axis_width, Resolved};
use super::frame::{titled_svg, AXIS_TITLE_GAP, TICK_LEN, TITLE_H};
use super::legend::{draw_legend, legend_rows, LegendItem, LEGEND_ROW};
use super::model::{Axis, Quantity, Rule};
use crate::format;
use crate::scale::Scale;
use crate::svg::{text_width, Anchor, Stroke, Svg, Text, FONT};

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
        let f = self.layout();
        let (left, top, plot_w, plot_h) = (f.left, f.top, f.plot_w, f.plot_h);
        let mut svg = titled_svg(self.width, f.height, &self.title);
        svg.group("grid");
        for (v, l) in &f.ry.ticks {
            let y = f.sy.map(*v);
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
        self.draw_bars(&mut svg, &f);
        svg.group("rules");
        for r in &self.rules {
            let y = f.my(r.y);
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
            top + plot_h + TICK_LEN + f.label_h + AXIS_TITLE_GAP - 4.0,
            &self.x_label,
            Text::new(FONT + 1.0).anchor(Anchor::Middle),
        );
        svg.text(
            14.0,
            top + plot_h / 2.0,
            &f.ry.title,
            Text::new(FONT + 1.0).anchor(Anchor::Middle).rotate(-90.0),
        );
        draw_legend(
            &mut svg,
            &f.rows,
            10.0,
            top + plot_h + f.bottom_axis,
            self.width - 20.0,
        );
        svg.finish()
    }

    fn layout(&self) -> BarFrame {
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
        BarFrame {
            group_w: plot_w / n as f64,
            height: top + plot_h + bottom_axis + rows.len() as f64 * LEGEND_ROW + 8.0,
            sy: ry.scale((top + plot_h, top)),
            left,
            top,
            plot_w,
            plot_h,
            bottom_axis,
            label_h,
            slant,
            every,
            ry,
            rows,
        }
    }

    /// The bars of each category, with their values and the category's label.
    fn draw_bars(&self, svg: &mut Svg, f: &BarFrame) {
        let (group_w, ry) = (f.group_w, &f.ry);
        let ns = self.series.len().max(1);
        let bar_w = (group_w * 0.8 / ns as f64).min(60.0);
        let base = f.my(0.0_f64.max(ry.domain.0 * ry.factor));
        let value_labels = self.series.iter().all(|s| {
            s.values
                .iter()
                .flatten()
                .all(|v| text_width(&format::sig3(v / ry.factor), FONT - 2.0) <= bar_w + 2.0)
        });
        svg.group("bars");
        for (c, cat) in self.categories.iter().enumerate() {
            let gx = f.left + c as f64 * group_w;
            let x0 = gx + (group_w - bar_w * ns as f64) / 2.0;
            for (k, s) in self.series.iter().enumerate() {
                let Some(v) = s.values.get(c).copied().flatten() else {
                    continue;
                };
                if !v.is_finite() {
                    continue;
                }
                let y = f.my(v);
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
            if c % f.every == 0 {
                draw_category_label(svg, f, cat, gx + group_w / 2.0);
            }
        }
        svg.end_group();
    }

    pub(super) fn tip_value(&self, v: f64) -> String {
        match self.y.quantity {
            Quantity::Rate => format::rate(v),
            Quantity::Bytes => format::bytes(v),
            Quantity::Percent => format::percent(v),
            _ => format::sig3(v),
        }
    }
}

/// A category label on one line (an SVG text element does not wrap).
fn one_line(s: &str) -> String {
    s.lines().collect::<Vec<_>>().join(" ")
}

/// Where the bars sit in the picture, how the categories are labelled, and
/// how values map onto the y axis.
struct BarFrame {
    left: f64,
    top: f64,
    plot_w: f64,
    plot_h: f64,
    group_w: f64,
    bottom_axis: f64,
    label_h: f64,
    height: f64,
    /// Category labels slanted (they do not fit their group), every k-th shown.
    slant: bool,
    every: usize,
    ry: Resolved,
    sy: Scale,
    rows: Vec<Vec<LegendItem>>,
}

impl BarFrame {
    /// The pixel y of value `v`.
    fn my(&self, v: f64) -> f64 {
        self.sy.map(v / self.ry.factor)
    }
}

/// A category's label under its group centred at `lx`: slanted on one line,
/// or upright with a row per line.
fn draw_category_label(svg: &mut Svg, f: &BarFrame, cat: &str, lx: f64) {
    let ly = f.top + f.plot_h + TICK_LEN + 13.0;
    if f.slant {
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
