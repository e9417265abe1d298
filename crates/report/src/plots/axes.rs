//! Axis layout: the range, unit, ticks and tick labels of an axis from the
//! data it shows, thinned so labels do not overlap. It draws nothing.

use super::frame::{AXIS_TITLE_GAP, TICK_LEN};
use super::model::{Axis, Quantity};
use crate::format::{self, Unit};
use crate::scale::{linear_ticks, log_ticks, tick_label, Scale};
use crate::svg::{text_width, FONT};

/// An axis resolved against its data: unit, scale domain and labelled ticks.
#[derive(Debug, Clone)]
pub(super) struct Resolved {
    /// Data values are divided by this before mapping (display unit).
    pub(super) factor: f64,
    pub(super) domain: (f64, f64),
    pub(super) log: bool,
    pub(super) ticks: Vec<(f64, String)>,
    pub(super) title: String,
}

impl Resolved {
    pub(super) fn scale(&self, range: (f64, f64)) -> Scale {
        if self.log {
            Scale::log(10.0, self.domain, range)
        } else {
            Scale::linear(self.domain, range)
        }
    }
}

/// Unit of a linear axis in display terms.
pub(super) fn display_unit(q: Quantity, max: f64) -> Unit {
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
pub(super) fn self_labelled(axis: &Axis, v: f64, all: &[f64]) -> String {
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
        // Tiny values (a bit error rate) in exponent form, not rounded to 0.
        Quantity::Count if v != 0.0 && v.abs() < 1e-3 => format!("{:e}", v),
        Quantity::Count => format::trim(v, 3),
        Quantity::Category => axis
            .categories
            .get(v.round().max(0.0) as usize)
            .cloned()
            .unwrap_or_default(),
    }
}

/// Whether tick labels at these pixel positions leave a gap between neighbours.
pub(super) fn labels_fit(positions: &[f64], labels: &[String]) -> bool {
    positions.windows(2).zip(labels.windows(2)).all(|(p, l)| {
        let need = (text_width(&l[0], FONT) + text_width(&l[1], FONT)) / 2.0 + 8.0;
        (p[1] - p[0]).abs() >= need
    })
}

/// Resolves a horizontal axis of `length` pixels for data in [min, max].
pub(super) fn resolve_x(axis: &Axis, min: f64, max: f64, length: f64) -> Resolved {
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
pub(super) fn resolve_y(axis: &Axis, min: f64, max: f64, length: f64) -> Resolved {
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

pub(super) fn finite_range(values: impl Iterator<Item = f64>) -> (f64, f64) {
    values
        .filter(|v| v.is_finite())
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(v), b.max(v))
        })
}

pub(super) fn y_axis_width(r: &Resolved) -> f64 {
    let w = r
        .ticks
        .iter()
        .map(|(_, l)| text_width(l, FONT))
        .fold(0.0, f64::max);
    w + TICK_LEN + 6.0 + AXIS_TITLE_GAP + 6.0
}
