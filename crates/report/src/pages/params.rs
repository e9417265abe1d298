//! Swept parameters: how a `--vary` name's values are read (sizes, rates,
//! counts, names), placed on an axis (log, linear or categorical), shown in
//! table cells, and which error bars a point's statistics give. It knows no
//! page layout.

use crate::export::{PointData, Stat, Vary};
use crate::format;
use crate::plots::{Axis, Point, Quantity, Series};

/// How a swept parameter's values are read and named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ParamKind {
    Bytes,
    Rate,
    Count,
    Seconds,
    Category,
}

/// Kind and human name of an emulated link's parameter (`link.wan.rate`).
fn link_param_info(name: &str) -> Option<(ParamKind, String)> {
    let (link, key) = name.strip_prefix("link.")?.rsplit_once('.')?;
    let kind = match key {
        "rate" => ParamKind::Rate,
        "delay" | "jitter" => ParamKind::Seconds,
        "queue" => ParamKind::Bytes,
        "gilbert" | "framing" | "jitter_distribution" | "reorder" | "trace" => ParamKind::Category,
        _ => ParamKind::Count,
    };
    let unit = if key == "loss" { " (%)" } else { "" };
    Some((kind, format!("Link {link}: {key}{unit} ({name})")))
}

/// Kind and human name of a sweep parameter, by its option name.
pub(super) fn param_info(name: &str, udp: bool) -> (ParamKind, String) {
    if let Some(info) = link_param_info(name) {
        return info;
    }
    let (kind, label) = match name.trim_start_matches('-') {
        "window" | "w" => (ParamKind::Bytes, "Socket buffer (-w)"),
        "sndbuf" => (ParamKind::Bytes, "Send buffer, SO_SNDBUF (--sndbuf)"),
        "rcvbuf" => (ParamKind::Bytes, "Receive buffer, SO_RCVBUF (--rcvbuf)"),
        "length" | "l" if udp => (ParamKind::Bytes, "Datagram size (-l)"),
        "length" | "l" => (ParamKind::Bytes, "Write size (-l)"),
        "set-mss" | "set_mss" | "mss" | "M" => (ParamKind::Bytes, "MSS (-M)"),
        "bytes" | "n" => (ParamKind::Bytes, "Bytes to send (-n)"),
        "bitrate" | "b" => (ParamKind::Rate, "Target rate per stream (-b)"),
        "pacing-rate" | "pacing_rate" => (ParamKind::Rate, "Pacing rate (--pacing-rate)"),
        // Bare microseconds and durations with units mix: each value is its own category.
        "pacing-timer" | "pacing_timer" => (ParamKind::Category, "Pacing timer (--pacing-timer)"),
        "parallel" | "P" => (ParamKind::Count, "Parallel streams (-P)"),
        "time" | "t" => (ParamKind::Seconds, "Test length (-t)"),
        "omit" | "O" => (ParamKind::Seconds, "Omitted warm-up (-O)"),
        "congestion" | "C" => (ParamKind::Category, "Congestion control (-C)"),
        "no-delay" | "nodelay" | "N" => (ParamKind::Category, "TCP_NODELAY (-N)"),
        _ => (ParamKind::Count, ""),
    };
    let label = if label.is_empty() {
        name.to_string()
    } else {
        label.to_string()
    };
    (kind, label)
}

pub(super) fn param_value(kind: ParamKind, text: &str) -> Option<f64> {
    match kind {
        ParamKind::Bytes => linkperf_units::parse_size(text).ok().map(|v| v as f64),
        ParamKind::Rate => linkperf_units::parse_rate(text).ok().map(|v| v as f64),
        ParamKind::Seconds => linkperf_units::parse_duration(text)
            .ok()
            .map(|d| d.as_secs_f64()),
        // A trailing % is a link's loss; numbers otherwise.
        ParamKind::Count => text
            .trim()
            .trim_end_matches('%')
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite()),
        ParamKind::Category => None,
    }
}

/// A swept parameter laid on an x axis.
pub(super) struct ParamAxis {
    pub(super) name: String,
    pub(super) values: Vec<String>,
    /// Numeric position of each value, or None when categorical.
    pub(super) numbers: Option<Vec<f64>>,
    pub(super) axis: Axis,
}

impl ParamAxis {
    pub(super) fn new(v: &Vary, udp: bool) -> ParamAxis {
        let (kind, label) = param_info(&v.name, udp);
        let numbers: Option<Vec<f64>> = v.values.iter().map(|x| param_value(kind, x)).collect();
        let axis = match &numbers {
            Some(nums) if !nums.is_empty() => {
                let log = v.geometric.unwrap_or_else(|| looks_geometric(nums));
                let q = match kind {
                    ParamKind::Bytes => Quantity::Bytes,
                    ParamKind::Rate => Quantity::Rate,
                    ParamKind::Seconds => Quantity::Seconds,
                    _ => Quantity::Count,
                };
                Axis::new(&label, q)
                    .log(log && nums.iter().all(|x| *x > 0.0))
                    .ticks_at(nums.clone())
                    .padded()
            }
            _ => Axis::new(&label, Quantity::Category).categories(v.values.clone()),
        };
        ParamAxis {
            name: v.name.clone(),
            values: v.values.clone(),
            numbers: numbers.filter(|n| !n.is_empty()),
            axis,
        }
    }

    /// x of a point with this parameter's `value`.
    pub(super) fn x(&self, value: &str) -> f64 {
        let i = self.values.iter().position(|v| v == value);
        match (&self.numbers, i) {
            (Some(n), Some(i)) => n[i],
            (None, Some(i)) => i as f64,
            _ => f64::NAN,
        }
    }
}

/// Three or more positive values whose ratios are about constant and span
/// more than a factor of 8: a log axis shows them evenly.
pub(super) fn looks_geometric(v: &[f64]) -> bool {
    let mut v: Vec<f64> = v.to_vec();
    v.sort_by(f64::total_cmp);
    if v.len() < 3 || v[0] <= 0.0 || v[v.len() - 1] / v[0] < 8.0 {
        return false;
    }
    let ratios: Vec<f64> = v.windows(2).map(|w| w[1] / w[0]).collect();
    let r0 = ratios[0];
    ratios.iter().all(|r| (r / r0 - 1.0).abs() < 0.25)
}

/// How a table prints rates: in one unit named in the caption, or, when
/// they span more than a factor of 100, each with its own unit.
#[derive(Debug, Clone, Copy)]
pub(super) struct RateCells {
    unit: Option<format::Unit>,
}

impl RateCells {
    pub(super) fn of(values: impl Iterator<Item = f64>) -> RateCells {
        let (lo, hi) = values
            .filter(|v| v.is_finite() && *v > 0.0)
            .fold((f64::INFINITY, 0.0f64), |(a, b), v| (a.min(v), b.max(v)));
        let unit = (hi > 0.0 && hi / lo <= 100.0).then(|| format::rate_unit(hi));
        RateCells { unit }
    }
    pub(super) fn text(&self, v: f64) -> String {
        match self.unit {
            Some(u) => format::sig3(v / u.factor),
            None => format::rate(v),
        }
    }
    /// "7.71 – 8.18 Mbit/s": the unit once when both ends share it.
    pub(super) fn range(&self, lo: f64, hi: f64) -> String {
        let (ul, uh) = (format::rate_unit(lo), format::rate_unit(hi));
        match self.unit {
            None if ul == uh => format!(
                "{} – {} {}",
                format::sig3(lo / ul.factor),
                format::sig3(hi / uh.factor),
                ul.name
            ),
            _ => format!("{} – {}", self.text(lo), self.text(hi)),
        }
    }
    /// " in Mbit/s" or "".
    pub(super) fn suffix(&self) -> String {
        self.unit
            .map(|u| format!(" in {}", u.name))
            .unwrap_or_default()
    }
}

/// Fewest runs at a point for which its error bar is a confidence
/// interval; below, the bar spans the lowest to the highest run. (A 95 %
/// Student-t interval of 2 runs is ±12.7 standard deviations: wider than
/// anything measured and, for a rate, reaching below zero.)
pub(super) const MIN_RUNS_FOR_CI: u64 = 5;

/// What the error bars of a sweep show, and a sentence saying so.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum ErrorBars {
    Ci(Option<f64>),
    Stddev,
    /// The lowest and highest run, for points with few runs.
    MinMax,
    None,
}

impl ErrorBars {
    pub(super) fn of(stats: &[&Stat]) -> ErrorBars {
        // One run per point has no spread to show.
        if stats.is_empty() || stats.iter().all(|s| s.n.is_some_and(|n| n <= 1)) {
            return ErrorBars::None;
        }
        let few = stats
            .iter()
            .filter_map(|s| s.n)
            .any(|n| n > 1 && n < MIN_RUNS_FOR_CI);
        if few && stats.iter().all(|s| s.min.is_some() && s.max.is_some()) {
            return ErrorBars::MinMax;
        }
        if stats
            .iter()
            .any(|s| s.ci_low.is_some() && s.ci_high.is_some())
        {
            ErrorBars::Ci(stats.iter().find_map(|s| s.level))
        } else if stats.iter().any(|s| s.stddev.is_some()) {
            ErrorBars::Stddev
        } else {
            ErrorBars::None
        }
    }
    /// The bar of one point; clamped at zero, as no rate is negative even
    /// when a wide interval of few runs reaches below it.
    pub(super) fn bar(&self, s: &Stat) -> Option<(f64, f64)> {
        let (lo, hi) = match self {
            ErrorBars::Ci(_) => (s.ci_low?, s.ci_high?),
            ErrorBars::Stddev => {
                let (m, d) = (s.mean?, s.stddev?);
                (m - d, m + d)
            }
            ErrorBars::MinMax => (s.min?, s.max?),
            ErrorBars::None => return None,
        };
        Some((lo.max(0.0), hi.max(0.0)))
    }
    pub(super) fn sentence(&self) -> String {
        match self {
            ErrorBars::Ci(Some(l)) => format!(
                "Error bars: {}% confidence interval of the mean (Student t) over the repetitions of each point.",
                format::trim(*l, 2)
            ),
            ErrorBars::Ci(None) => "Error bars: confidence interval of the mean (Student t, as stored in the archive) over the repetitions of each point.".to_string(),
            ErrorBars::Stddev => "Error bars: ±1 standard deviation over the repetitions of each point (no confidence interval in the export), cut at zero.".to_string(),
            ErrorBars::MinMax => format!(
                "Error bars: the lowest and the highest run at each point (min–max), not a confidence interval: some points have fewer than {MIN_RUNS_FOR_CI} runs, too few for one to mean much."
            ),
            ErrorBars::None => "No error bars: one run per point, or no spread in the export.".to_string(),
        }
    }
}

pub(super) fn tip(label: &str, s: &Stat, q: Quantity) -> String {
    let v = |x: f64| match q {
        Quantity::Rate => format::rate(x),
        Quantity::Percent => format::percent(x),
        _ => format::sig3(x),
    };
    let mut t = format!("{label}: {}", s.mean.map(v).unwrap_or_default());
    if let (Some(lo), Some(hi)) = (s.ci_low, s.ci_high) {
        // No rate or CPU share is negative: an interval reaching below zero is cut there.
        t.push_str(&format!(" (CI {} – {})", v(lo.max(0.0)), v(hi)));
    }
    if let (Some(lo), Some(hi), Some(n)) = (s.min, s.max, s.n) {
        if n > 1 {
            t.push_str(&format!(", runs {} – {}", v(lo), v(hi)));
        }
    }
    if let Some(d) = s.stddev {
        t.push_str(&format!(", sd {}", v(d)));
    }
    if let Some(n) = s.n {
        t.push_str(&format!(", n = {n}"));
    }
    t
}

/// Adds to `series` (named `label`) the value `value_of` gives at each point that has
/// one, with a tip comparing the measured mean (`measured/{what}`).
pub(super) fn add_reference_points(
    series: &mut Series,
    points: &[&PointData],
    pa: &ParamAxis,
    what: &str,
    value_of: impl Fn(&PointData) -> Option<f64>,
) {
    let label = series.label.clone();
    for p in points {
        let Some(value) = value_of(p) else {
            continue;
        };
        let at = p.param(&pa.name).unwrap_or("");
        let mut pt = Point::new(pa.x(at), value);
        let ratio = p
            .stats
            .received
            .as_ref()
            .and_then(|s| s.mean)
            .map(|m| format!(", measured/{what} {:.3}", m / value))
            .unwrap_or_default();
        pt.tip = Some(format!(
            "{} = {at}, {label}: {}{ratio}",
            pa.name,
            format::rate(value)
        ));
        pt.href = Some(super::shared::point_anchor(p));
        series.points.push(pt);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn link_parameters_are_read_with_their_units() {
        let (kind, label) = param_info("link.wan.rate", false);
        assert_eq!(kind, ParamKind::Rate);
        assert!(label.contains("wan") && label.contains("rate"), "{label}");
        assert_eq!(param_value(kind, "20M"), Some(20e6));
        let (kind, _) = param_info("link.a-b.b_to_a.delay", false);
        assert_eq!(param_value(kind, "5ms"), Some(0.005));
        let (kind, _) = param_info("link.wan.ber", false);
        assert_eq!(param_value(kind, "1e-6"), Some(1e-6));
        let (kind, _) = param_info("link.wan.loss", false);
        assert_eq!(param_value(kind, "1.5%"), Some(1.5));
    }

    #[test]
    fn geometric_detection() {
        assert!(looks_geometric(&[4096.0, 8192.0, 16384.0, 32768.0]));
        assert!(!looks_geometric(&[1000.0, 2000.0, 3000.0, 4000.0]));
        assert!(!looks_geometric(&[1.0, 2.0]));
        assert!(!looks_geometric(&[1.0, 2.0, 4.0])); // spans less than 8x
    }

    #[test]
    fn params_are_read_in_their_units() {
        assert_eq!(param_value(ParamKind::Bytes, "64K"), Some(65536.0));
        assert_eq!(param_value(ParamKind::Rate, "950M"), Some(950e6));
        assert_eq!(param_value(ParamKind::Count, "4"), Some(4.0));
        assert_eq!(param_value(ParamKind::Seconds, "250ms"), Some(0.25));
        assert_eq!(param_value(ParamKind::Category, "cubic"), None);
        assert_eq!(param_info("w", false).0, ParamKind::Bytes);
        assert_eq!(param_info("congestion", false).0, ParamKind::Category);
        assert_eq!(param_info("mystery", false).1, "mystery");
        assert_eq!(param_info("l", true).1, "Datagram size (-l)");
    }

    #[test]
    fn categorical_params_sit_at_their_index() {
        let pa = ParamAxis::new(
            &Vary {
                name: "congestion".into(),
                values: vec!["reno".into(), "cubic".into(), "bbr".into()],
                geometric: None,
            },
            false,
        );
        assert!(pa.numbers.is_none());
        assert_eq!(pa.x("cubic"), 1.0);
        assert!(pa.x("vegas").is_nan());
        let pa = ParamAxis::new(
            &Vary {
                name: "window".into(),
                values: vec!["4K".into(), "64K".into(), "1M".into()],
                geometric: None,
            },
            false,
        );
        assert!(pa.axis.log);
        assert_eq!(pa.x("64K"), 65536.0);
    }
}
