//! The pages: sweep, single run, campaign (and rr, in `crate::rr`); each with
//! its plots, the tables people publish, host facts, the test configuration
//! and every run. This module picks the page by the export's kind and wraps
//! it in the banners and footer; the small readers every page uses are in
//! `shared`. It must not build a page's plots or tables itself: each page
//! kind has its own module.

mod campaign;
mod directions;
pub mod monitor;
pub mod monitor_series;
mod params;
mod run;
mod run_plots;
mod samples;
mod sections;
mod shared;
mod sweep;
mod twin;

use crate::export::{Export, Kind, RunData};
use crate::html;
use campaign::campaign_page;
use run::run_page;
use serde_json::Value;
use shared::{id_list, interrupted, stopped_after};
use sweep::sweep_page;

pub fn render(ex: &Export) -> String {
    let (title, subtitle, sections) = match ex.kind {
        Kind::Sweep => sweep_page(ex),
        Kind::Run if crate::rr::is_rr(ex) => crate::rr::page(ex),
        Kind::Run => run_page(ex),
        Kind::Campaign => campaign_page(ex),
    };
    let software = ex
        .runs
        .iter()
        .find_map(|r| r.report.get("software").and_then(Value::as_str))
        .unwrap_or("linkperf");
    let footer = format!(
        "Made by `linkperf report` from an archive export (schema {}), measured with {software}. \
         Rates in bits/s with SI prefixes (1 Mbit/s = 10^6 bit/s); sizes in bytes with binary \
         prefixes (1 KiB = 1024 bytes). Hover a point or bar for its value.",
        crate::export::SCHEMA
    );
    html::document_with_banners(&title, &subtitle, &banners(ex), &sections, &footer)
}

/// Warnings that belong above everything else: the numbers below cover
/// only part of what was planned.
fn banners(ex: &Export) -> Vec<String> {
    let mut out = Vec::new();
    let stopped: Vec<&RunData> = ex.runs.iter().filter(|r| interrupted(r.report)).collect();
    match ex.kind {
        Kind::Run => {
            for r in stopped {
                out.push(format!(
                    "Interrupted: run {} was stopped early ({}). Every number on this page covers only the part that ran.",
                    r.id,
                    stopped_after(r.report)
                ));
            }
        }
        Kind::Sweep => {
            let meta = ex.sweep.as_ref();
            if meta.and_then(|m| m.status.as_deref()) == Some("partial") {
                let measured = ex
                    .points
                    .iter()
                    .filter(|p| !ex.runs_of(p).is_empty() || !p.runs.is_empty())
                    .count();
                let planned = meta
                    .and_then(|m| m.repeat)
                    .filter(|_| {
                        meta.is_some_and(|m| m.raw.get("confidence").is_none_or(Value::is_null))
                    })
                    .map(|r| format!(" of the {} planned", r as usize * ex.points.len()))
                    .unwrap_or_default();
                out.push(format!(
                    "Partial sweep: it stopped before it finished (interrupted, or a run failed). {measured} of its {} points have runs; {} runs are stored{planned}. Finish it with linkperf sweep --resume {} (and the --db it is stored in).",
                    ex.points.len(),
                    ex.runs.len(),
                    ex.id
                ));
            }
            if !stopped.is_empty() {
                out.push(format!(
                    "Interrupted runs: {} of this sweep's runs were stopped early ({}); they are marked in the tables and their numbers cover only the part that ran.",
                    stopped.len(),
                    id_list(&stopped.iter().map(|r| r.id).collect::<Vec<_>>())
                ));
            }
        }
        Kind::Campaign => {
            if ex.raw.get("interrupted").and_then(Value::as_bool) == Some(true) {
                out.push(
                    "Interrupted: this campaign was stopped early; its phases and sessions cover only the part that ran."
                        .to_string(),
                );
            }
        }
    }
    out
}
