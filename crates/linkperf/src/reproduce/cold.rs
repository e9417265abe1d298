//! Seed experiments measured with first-packet probes (`linkperf rr
//! --cold`) instead of a throughput sweep: seed 000's switched-circuit
//! set-up times. Each site of the experiment sets the testbed's links (as a
//! sweep point's `link.*` values), runs the probes from the client host and
//! pairs the first and second probe's RTT and their difference with the
//! seed's figures and with what the link was configured to do.

use crate::rr::report::RrReport;
use crate::rr::RrSpec;
use crate::sweep::network::{link_change, Network, Session};
use crate::sweep::plan::Params;
use linkperf_store::{NewRun, Store};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};

/// The `[cold]` table of an experiment file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cold {
    /// Idle gap before each round, as `rr --idle`.
    pub idle: String,
    /// Rounds per site: full length, and reduced (CI, a first look).
    pub rounds: u64,
    pub reduced_rounds: u64,
    #[serde(default)]
    pub udp: bool,
    pub site: Vec<Site>,
}

/// One far end of the seed's table: the links that stand for it and the
/// seed's first RTT, plain IP RTT and set-up time.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Site {
    pub name: String,
    /// `link.LINK.KEY` = value, as a sweep varies them.
    pub link: BTreeMap<String, String>,
    pub seed_first_ms: f64,
    pub seed_ip_ms: f64,
    pub seed_setup_ms: f64,
}

/// A site measured: medians over its rounds, beside the seed's figures and
/// the configured link (RTT = 2 x delay, set-up = `circuit_setup`).
#[derive(Debug, Clone, Serialize)]
pub struct ColdRow {
    pub site: String,
    pub seed_first_ms: f64,
    pub seed_ip_ms: f64,
    pub seed_setup_ms: f64,
    pub first_ms: Option<f64>,
    pub second_ms: Option<f64>,
    /// Median over rounds of first minus second.
    pub setup_ms: Option<f64>,
    pub configured_rtt_ms: Option<f64>,
    pub configured_setup_ms: Option<f64>,
    pub rounds: u64,
    /// The stored rr run of this site.
    pub run_id: Option<i64>,
}

impl Cold {
    /// The probes of a run, checked as `linkperf rr` checks its flags.
    fn spec(&self, host: String, reduced: bool) -> Result<RrSpec, String> {
        let mut spec = RrSpec::new(host);
        spec.cold = true;
        spec.idle = Some(
            linkperf_units::parse_duration(&self.idle)
                .map_err(|e| format!("[cold] idle: {e}"))?
                .as_secs_f64(),
        );
        spec.count = Some(if reduced {
            self.reduced_rounds
        } else {
            self.rounds
        });
        if self.udp {
            spec.protocol = linkperf_proto::Protocol::Udp;
        }
        spec.plan()?;
        Ok(spec)
    }

    /// Checks everything before the testbed is built: the probes, and every
    /// site's links as `testbed set` would.
    pub fn check(&self, network: &Network, reduced: bool) -> Result<(), String> {
        self.spec(network.server_address(), reduced)?;
        if self.site.is_empty() {
            return Err("[cold] names no site".into());
        }
        for site in &self.site {
            for (name, value) in &site.link {
                link_change(&network.topology, name, value)
                    .map_err(|e| format!("site '{}': {e}", site.name))?;
            }
        }
        Ok(())
    }

    /// Runs every site, storing each rr report; stops at an interrupt or a
    /// failure with the sites measured so far.
    pub fn run(
        &self,
        network: &Network,
        reduced: bool,
        store: &mut Store,
        interrupt: &AtomicBool,
    ) -> Result<(Vec<ColdRow>, Option<String>), String> {
        self.check(network, reduced)?;
        let spec = self.spec(network.server_address(), reduced)?;
        let plan = spec.plan()?;
        let mut session = Session::start(network, &[], spec.port)?;
        let mut rows = Vec::new();
        let mut stopped = None;
        for site in &self.site {
            if interrupt.load(Ordering::Relaxed) {
                stopped = Some("interrupted".to_string());
                break;
            }
            let params: Params = site.link.clone().into_iter().collect();
            let measured = session
                .set_point(&params)
                .and_then(|()| session.run_rr(&plan, interrupt).map_err(|e| e.message));
            match measured {
                Ok(report) => rows.push(row(site, &report, store)),
                Err(e) => {
                    stopped = Some(format!("site '{}': {e}", site.name));
                    break;
                }
            }
        }
        session.finish()?;
        Ok((rows, stopped))
    }
}

fn row(site: &Site, report: &RrReport, store: &mut Store) -> ColdRow {
    let summary = &report.summary;
    let configured = |key: &str| {
        site.link
            .iter()
            .find(|(name, _)| name.ends_with(&format!(".{key}")))
            .and_then(|(_, v)| linkperf_units::parse_duration(v).ok())
            .map(|d| d.as_secs_f64() * 1e3)
    };
    let doc = serde_json::to_value(report).unwrap_or_default();
    let run_id = store.insert_run(&NewRun::from_rr_report(doc)).ok();
    ColdRow {
        site: site.name.clone(),
        seed_first_ms: site.seed_first_ms,
        seed_ip_ms: site.seed_ip_ms,
        seed_setup_ms: site.seed_setup_ms,
        first_ms: summary.first_rtt_ms.as_ref().map(|p| p.p50),
        second_ms: summary.second_rtt_ms.as_ref().map(|p| p.p50),
        setup_ms: summary.first_minus_second_ms.map(|d| d.p50),
        configured_rtt_ms: configured("delay").map(|d| 2.0 * d),
        configured_setup_ms: configured("circuit_setup"),
        rounds: summary.first_minus_second_ms.map_or(0, |d| d.count),
        run_id,
    }
}

/// The comparison as a text table: one line per site.
pub fn table(rows: &[ColdRow]) -> String {
    let ms = |v: Option<f64>| v.map_or("-".into(), |x| format!("{x:.1}"));
    let width = rows.iter().map(|r| r.site.len()).max().unwrap_or(4).max(4);
    let mut out = format!(
        "{:<width$}  {:>20}  {:>20}  {:>20}\n",
        "", "first RTT (ms)", "second / IP RTT (ms)", "set-up (ms)",
    );
    out.push_str(&format!(
        "{:<width$}  {:>9} {:>10}  {:>5} {:>8} {:>5}  {:>5} {:>8} {:>5}\n",
        "site", "seed", "linkperf", "seed", "linkperf", "link", "seed", "linkperf", "link"
    ));
    for r in rows {
        out.push_str(&format!(
            "{:<width$}  {:>9} {:>10}  {:>5} {:>8} {:>5}  {:>5} {:>8} {:>5}\n",
            r.site,
            format!("{:.0}", r.seed_first_ms),
            ms(r.first_ms),
            format!("{:.0}", r.seed_ip_ms),
            ms(r.second_ms),
            ms(r.configured_rtt_ms),
            format!("{:.0}", r.seed_setup_ms),
            ms(r.setup_ms),
            ms(r.configured_setup_ms),
        ));
    }
    out
}
