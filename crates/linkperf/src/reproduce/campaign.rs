//! Seed experiments that run a campaign (many host pairs at once, `linkperf
//! campaign run`) through their testbed instead of a sweep: seed 001's eight
//! pairs, seed 004's NetSpec pairs, seed 000's senders into one receiver.
//! This module builds the testbed (or uses it when up), starts an agent in
//! every host the campaign names, runs the controller in one host, stores
//! the campaign and pairs each phase's aggregate and each flow's sent and
//! received rate with the seed's figure and the campaign model's prediction.

use crate::campaign::{self, analysis::PhaseResult, plan, CampaignResult, LiveLine};
use crate::server::ServerOptions;
use crate::sweep::network::{in_namespace, start_server};
use linkperf_store::{NewRun, Store};
use linkperf_testbed::{Testbed, Topology};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// What a campaign experiment is made of: its directory's campaign and
/// topology files, the host that runs the controller, the reduced length.
pub struct Setup {
    pub name: String,
    /// The campaign file.
    pub file: PathBuf,
    pub topology: PathBuf,
    pub client_host: Option<String>,
    pub reduced_time: String,
    /// Each flow's ns-3 twin beside it (`campaign run --simulate`).
    pub simulate: bool,
}

/// A row measured: a phase's aggregate or one flow direction, means over
/// the sessions in Mbit/s, with the campaign model's prediction.
pub struct Measure {
    pub point: String,
    pub received_mbps: Option<f64>,
    pub sent_mbps: Option<f64>,
    pub model_mbps: Option<f64>,
    /// The ns-3 twin's received rate (the phase's: the twins' sum).
    pub simulated_mbps: Option<f64>,
    pub sessions: usize,
}

/// A campaign experiment measured: the rows, the stored campaign, and why it
/// stopped early when it did.
pub struct Measured {
    pub rows: Vec<Measure>,
    pub campaign_id: Option<i64>,
    pub stopped: Option<String>,
}

impl Setup {
    fn campaign_path(&self) -> String {
        self.file.to_string_lossy().into_owned()
    }

    fn topology(&self) -> Result<Topology, String> {
        Topology::from_file(&self.topology).map_err(|e| e.to_string())
    }

    /// Reads the campaign file as `campaign check` does, without the checks
    /// that need the testbed up, and checks every agent is a testbed host.
    pub fn check(&self) -> Result<plan::Campaign, String> {
        let path = self.campaign_path();
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("cannot read campaign file {path}: {e}"))?;
        let parsed = campaign::file::parse(&path, &text)?;
        let c = plan::build(&path, &text, parsed, &self.name)?;
        let topology = self.topology()?;
        if c.testbed.as_deref() != Some(topology.name.as_str()) {
            return Err(format!(
                "{path}: a seed campaign runs in its testbed: add testbed = \"{}\"",
                topology.name
            ));
        }
        for agent in &c.agents {
            agent_host(&topology, agent).map_err(|e| format!("{path}: {e}"))?;
        }
        if let Some(h) = &self.client_host {
            topology
                .host(h)
                .ok_or_else(|| format!("{}: client_host '{h}' is no host", self.name))?;
        }
        self.reduced_seconds()?;
        Ok(c)
    }

    /// The rows the campaign will have (without sweep points), for checking
    /// the seed's rows against them.
    pub fn planned_points(&self) -> Result<Vec<String>, String> {
        let c = self.check()?;
        let mut points = Vec::new();
        for p in &c.phases {
            points.push(format!("{} aggregate", p.name));
            for f in &p.flows {
                let reverse = f.spec.direction == linkperf_proto::Direction::Reverse;
                let (from, to) = (&f.from, &f.to);
                let bidir = f.spec.direction == linkperf_proto::Direction::Bidir;
                if !reverse {
                    points.push(format!("{} {from}->{to}", p.name));
                }
                if reverse || bidir {
                    points.push(format!("{} {to}->{from}", p.name));
                }
            }
        }
        Ok(points)
    }

    /// The reduced run's phase length (`reduced_time`).
    fn reduced_seconds(&self) -> Result<f64, String> {
        linkperf_units::parse_duration(&self.reduced_time)
            .map(|d| d.as_secs_f64())
            .map_err(|e| format!("{}: reduced_time: {e}", self.name))
    }

    /// Runs the campaign through the testbed and stores it in `store`.
    pub fn run(
        &self,
        reduced: bool,
        store: &mut Store,
        interrupt: &AtomicBool,
    ) -> Result<Measured, String> {
        self.check()?;
        let topology = self.topology()?;
        let name = topology.name.clone();
        let (testbed, built) = match Testbed::attach(&name) {
            Ok(tb) => (tb, false),
            Err(_) => (
                linkperf_testbed::up(&topology)
                    .map_err(|e| format!("cannot build testbed '{name}': {e}"))?,
                true,
            ),
        };
        let result = self.run_in(&testbed, reduced, interrupt);
        if built {
            linkperf_testbed::down(&name)
                .map_err(|e| format!("cannot remove testbed '{name}': {e}"))?;
        }
        let mut result = result?;
        let document = serde_json::to_value(&result).map_err(|e| e.to_string())?;
        let run = NewRun::other(
            "campaign",
            &crate::data::hostname(),
            result.started_unix_ms as i64,
            document,
        );
        result.id = store.insert_run(&run).ok();
        let stopped = if result.interrupted {
            Some("interrupted".to_string())
        } else {
            failed_flows(&result)
        };
        Ok(Measured {
            rows: rows(&result),
            campaign_id: result.id,
            stopped,
        })
    }

    /// Agents in their hosts, then the controller in the client host (or
    /// the first agent's), on the testbed that is up.
    fn run_in(
        &self,
        testbed: &Testbed,
        reduced: bool,
        interrupt: &AtomicBool,
    ) -> Result<CampaignResult, String> {
        let mut c = campaign::load(&self.campaign_path())?;
        if reduced {
            c.sessions = 1;
            let seconds = self.reduced_seconds()?;
            for p in &mut c.phases {
                p.duration_s = seconds;
                for f in &mut p.flows {
                    f.spec.time = seconds;
                }
            }
        }
        let topology = testbed.topology();
        let netns = |host: &str| {
            testbed
                .netns(host)
                .ok_or_else(|| format!("testbed '{}' has no host '{host}'", topology.name))
        };
        for agent in &c.agents {
            let options = ServerOptions {
                port: agent.port,
                allow_third_party: true,
                verbose: false,
                ..Default::default()
            };
            start_server(&netns(&agent_host(topology, agent)?)?, options)
                .map_err(|e| format!("agent '{}': {e}", agent.name))?;
        }
        if self.simulate {
            campaign::twin::check(&c)?;
            c.simulate = true;
        }
        let controller = match &self.client_host {
            Some(h) => h.clone(),
            None => agent_host(topology, c.agents.first().ok_or("no agents")?)?,
        };
        let controller = netns(&controller)?;
        let cancel = Arc::new(AtomicBool::new(false));
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            // Ctrl-C reaches the campaign through its own flag.
            s.spawn(|| {
                while !done.load(Ordering::Relaxed) {
                    if interrupt.load(Ordering::Relaxed) {
                        cancel.store(true, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(50));
                }
            });
            let result = in_namespace(&controller, || {
                campaign::run(&mut c, false, &cancel, &mut Quiet)
            });
            done.store(true, Ordering::Relaxed);
            result?
        })
    }
}

/// The testbed host whose address an agent has.
fn agent_host(topology: &Topology, agent: &plan::Agent) -> Result<String, String> {
    if agent.ssh.is_some() {
        return Err(format!(
            "agent '{}': a seed campaign starts its agents in the testbed's hosts; give address, not ssh",
            agent.name
        ));
    }
    topology
        .hosts
        .iter()
        .find(|h| h.ipv4.to_string() == agent.host)
        .map(|h| h.name.clone())
        .ok_or_else(|| {
            format!(
                "agent '{}': {} is no host of testbed '{}'",
                agent.name, agent.host, topology.name
            )
        })
}

/// The campaign's progress goes nowhere: `reproduce` prints the comparison.
struct Quiet;

impl campaign::Observer for Quiet {
    fn warning(&mut self, _: &str) {}
    fn run_started(&mut self, _: &str) {}
    fn interval(&mut self, _: &str, _: u32, _: Option<&LiveLine>, _: usize) {}
}

/// The flows that did not run their course, in one line; `None` if all did.
fn failed_flows(result: &CampaignResult) -> Option<String> {
    let failed: Vec<String> = result
        .phases
        .iter()
        .flat_map(|p| p.flows.iter().map(move |f| (p, f)))
        .filter(|(_, f)| f.status != "ok")
        .map(|(p, f)| {
            format!(
                "{} {}->{}: {}",
                p.name,
                f.from,
                f.to,
                f.error.as_deref().unwrap_or(f.status)
            )
        })
        .collect();
    (!failed.is_empty()).then(|| failed.join("; "))
}

/// A phase's label: its name, and its sweep point when the campaign varies.
fn phase_label(p: &PhaseResult) -> String {
    match &p.params {
        Some(params) if !params.is_empty() => {
            format!("{} [{}]", p.name, crate::sweep::plan::label(params))
        }
        _ => p.name.clone(),
    }
}

/// (received, sent, model, ns-3 twin) bit/s of one row in one session.
type Sample = (f64, f64, Option<f64>, Option<f64>);

/// One row per phase aggregate and per flow direction, each the mean over
/// the sessions: received, sent, and the campaign model's prediction.
fn rows(result: &CampaignResult) -> Vec<Measure> {
    let mut seen: Vec<(String, Vec<Sample>)> = Vec::new();
    let mut add = |label: String, v: Sample| match seen.iter_mut().find(|(l, _)| *l == label) {
        Some((_, values)) => values.push(v),
        None => seen.push((label, vec![v])),
    };
    for p in &result.phases {
        let phase = phase_label(p);
        let predicted: Option<f64> = p
            .flows
            .iter()
            .flat_map(|f| f.directions())
            .map(|d| d.predicted.as_ref().map(|x| x.bits_per_second))
            .sum();
        let twin =
            |f: &campaign::analysis::FlowResult| f.simulated.as_ref()?["bits_per_second"].as_f64();
        let simulated: Option<f64> = p.flows.iter().map(twin).sum();
        let a = &p.aggregate;
        add(
            format!("{phase} aggregate"),
            (
                a.received_bits_per_second,
                a.sent_bits_per_second,
                predicted,
                simulated,
            ),
        );
        for f in &p.flows {
            for (i, d) in f.directions().enumerate() {
                add(
                    format!("{phase} {}->{}", d.sender, d.receiver),
                    (
                        d.received.bits_per_second,
                        d.sent.bits_per_second,
                        d.predicted.as_ref().map(|x| x.bits_per_second),
                        // The twin simulates the flow's own direction.
                        twin(f).filter(|_| i == 0),
                    ),
                );
            }
        }
    }
    let mean = |v: &mut dyn Iterator<Item = f64>| {
        let (sum, n) = v.fold((0.0, 0usize), |(s, n), x| (s + x, n + 1));
        (n > 0).then(|| sum / n as f64 / 1e6)
    };
    seen.into_iter()
        .map(|(point, values)| Measure {
            received_mbps: mean(&mut values.iter().map(|v| v.0)),
            sent_mbps: mean(&mut values.iter().map(|v| v.1)),
            model_mbps: mean(&mut values.iter().filter_map(|v| v.2)),
            simulated_mbps: mean(&mut values.iter().filter_map(|v| v.3)),
            sessions: values.len(),
            point,
        })
        .collect()
}
