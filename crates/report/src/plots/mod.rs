//! Plot builders: line plots (with error bars, a second y axis, reference
//! lines and shaded bands) and grouped bar plots, laid out so labels do not
//! overlap at the sizes the report uses. What a page describes a plot with
//! (axes, points, series, rules, bands, the palette) is `model`'s, the
//! shared title strip and spacing `frame`'s; drawing is `line`'s and
//! `bar`'s, axis layout `axes`', the legend `legend`'s. This module only
//! names what pages use. Plots never read an export: pages hand them numbers.

mod axes;
mod bar;
mod frame;
mod legend;
mod line;
mod model;

pub use bar::{BarPlot, BarSeries};
pub use line::LinePlot;
pub use model::{color, dash, marker, Axis, Band, Point, Quantity, Rule, Series};

#[cfg(test)]
mod tests;
