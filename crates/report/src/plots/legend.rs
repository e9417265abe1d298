//! The legend under a plot: its items, wrapped into rows that fit the
//! plot's width, and drawn with each series' colour, dash and marker. It
//! knows nothing of the plot's data.

use super::model::{BAND_OPACITY, BAND_WIDTH};
use crate::svg::{text_width, Marker, Stroke, Svg, Text, FONT};

pub(super) const LEGEND_ROW: f64 = 20.0;

/// A legend entry: how its key is drawn and its text.
#[derive(Debug, Clone)]
pub(super) struct LegendItem {
    pub(super) label: String,
    pub(super) color: &'static str,
    pub(super) dash: Option<&'static str>,
    pub(super) marker: Option<Marker>,
    /// A filled square key (bars) instead of a line.
    pub(super) swatch: bool,
    pub(super) hollow: bool,
    pub(super) band: bool,
}

impl LegendItem {
    pub(super) fn line(
        label: String,
        color: &'static str,
        dash: Option<&'static str>,
    ) -> LegendItem {
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
    pub(super) fn width(&self) -> f64 {
        34.0 + text_width(&self.label, FONT) + 18.0
    }
}

/// Rows of legend items that fit in `width`.
pub(super) fn legend_rows(items: &[LegendItem], width: f64) -> Vec<Vec<LegendItem>> {
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

pub(super) fn draw_legend(svg: &mut Svg, rows: &[Vec<LegendItem>], x0: f64, y0: f64, width: f64) {
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
