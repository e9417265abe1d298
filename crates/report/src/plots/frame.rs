//! The frame every plot shares: the title strip at its top and the spacing
//! of ticks and axis titles. No data and no axes here.

use crate::svg::{Anchor, Svg, Text};

pub(super) const TITLE_H: f64 = 30.0;

pub(super) const TICK_LEN: f64 = 5.0;

pub(super) const AXIS_TITLE_GAP: f64 = 20.0;

/// A picture `width` x `height` with `title` centred at its top.
pub(super) fn titled_svg(width: f64, height: f64, title: &str) -> Svg {
    let mut svg = Svg::new(width, height, title);
    svg.text(
        width / 2.0,
        20.0,
        title,
        Text::new(15.0).anchor(Anchor::Middle).bold(),
    );
    svg
}
