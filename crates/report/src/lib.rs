//! linkperf reports: pure functions from an archive export (the JSON that
//! `linkperf results export ID --format json` writes) to one self-contained
//! HTML page with inline SVG plots. No I/O, no network, no plotting crates.
//!
//! The page is chosen by the export's `kind`:
//! - `sweep`: throughput (sender and receiver) against the swept parameter with
//!   error bars (the confidence interval of the mean from 5 runs a point up,
//!   the lowest to the highest run below that; never below zero; the caption
//!   says which) and CPU on a second axis; a curve per value of a second
//!   parameter; the table of means with one parameter down and one across;
//!   each point links to its row in the table of points, which links to its
//!   runs' rows;
//! - `run`: time series per stream and their sum with the mean (an interval's
//!   rate drawn across the interval, so the first one shows from t = 0), UDP
//!   loss and jitter (summarised as the mean and percentiles of the plotted
//!   interval values beside the final RFC 3550 estimate), TCP RTT and
//!   congestion window;
//! - `campaign`: aggregate time series with session means, per-host sent vs
//!   received bars;
//! - a `run` of kind `rr` (`linkperf rr`): RTT distribution, CDF and tail,
//!   RTT against message size with its fit, idle against loaded;
//!
//! with `--simulate` twins (`pages/twin.rs`), seed 004's table of measured
//! beside simulated and the simulated series beside the measured on the
//! sweep, run and campaign pages; and always host facts, the test
//! configuration and a table of all runs.
//! An interrupted run, campaign or partial sweep gets a banner above it all.
//!
//! ```
//! let export = serde_json::json!({
//!     "schema": "linkperf/1", "kind": "sweep", "id": 1,
//!     "sweep": {"vary": [{"name": "window", "values": ["4K", "8K"], "geometric": true}]},
//!     "points": [
//!         {"index": 0, "params": {"window": "4K"}, "runs": [],
//!          "stats": {"received_bits_per_second": {"mean": 1.0e8}}},
//!         {"index": 1, "params": {"window": "8K"}, "runs": [],
//!          "stats": {"received_bits_per_second": {"mean": 2.0e8}}}
//!     ],
//!     "runs": []
//! });
//! let html = linkperf_report::render(&export).unwrap();
//! assert!(html.starts_with("<!DOCTYPE html>") && html.contains("<svg"));
//! ```

mod error;
mod export;
mod format;
mod html;
mod pages;
mod plots;
mod rr;
mod scale;
mod svg;

pub use error::ReportError;
pub use export::SCHEMA;
/// Timestamps for logs (the server's event log).
pub use format::rfc3339;
/// The monitoring dashboard and a pair's series page (`linkperf monitor`).
pub use pages::monitor::{dashboard, AlertLine, Dashboard, Grid, GridCell, Verdict};
pub use pages::monitor_series::{pair_series, PairSeries, SeriesPoint};

/// Renders an archive export as one self-contained HTML document.
pub fn render(export: &serde_json::Value) -> Result<String, ReportError> {
    let parsed = export::Export::parse(export)?;
    Ok(pages::render(&parsed))
}
