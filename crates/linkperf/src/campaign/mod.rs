//! Campaigns: many hosts, many flows, one synchronised experiment. The
//! controller asks each flow's `from` agent (a `linkperf server
//! --allow-third-party`) to run the flow towards its `to` agent at an agreed
//! instant, over connections the controller opens: agents never need to
//! reach the controller. This module plans and runs a campaign and analyses
//! what the agents relayed; it prints nothing (progress goes to an
//! [`Observer`]) and knows no command line.

pub mod analysis;
mod controller;
mod fairness;
pub mod file;
pub mod flags;
mod links;
pub mod plan;
mod predict;
mod ssh;
pub mod text;
pub mod twin;

use analysis::PhaseResult;
use flags::Flag;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Mean aggregate of one phase over the sessions.
#[derive(Debug, Serialize, Default)]
pub struct PhaseMean {
    pub phase: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub params: Option<std::collections::BTreeMap<String, String>>,
    /// The flows' own directions (the phases' `aggregate`).
    pub mean_received_bits_per_second: f64,
    pub sessions: Vec<f64>,
    /// The bidir flows' return directions (`aggregate_reverse`); absent without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mean_received_reverse_bits_per_second: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions_reverse: Option<Vec<f64>>,
}

#[derive(Debug, Serialize)]
pub struct CampaignResult {
    pub schema: &'static str,
    /// The campaign's id in the results archive (null when not stored).
    pub id: Option<i64>,
    pub name: String,
    pub started_unix_ms: u64,
    pub sessions: u32,
    pub interval_s: f64,
    pub phases: Vec<PhaseResult>,
    pub phase_means: Vec<PhaseMean>,
    pub flags: Vec<Flag>,
    pub interrupted: bool,
}

/// What a running campaign tells its caller.
pub trait Observer {
    /// Something the user should know that does not stop the campaign.
    fn warning(&mut self, message: &str);
    /// Run (phase, session, point) number k starts; `what` describes it.
    fn run_started(&mut self, what: &str);
    /// One flow's interval arrived; `line` once every running flow's has.
    fn interval(&mut self, phase: &str, session: u32, line: Option<&LiveLine>, flows: usize);
}

/// Reads and checks a campaign file; errors name the file, line and key.
pub fn load(path: &str) -> Result<plan::Campaign, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read campaign file {path}: {e}"))?;
    let parsed = file::parse(path, &text)?;
    let stem = std::path::Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "campaign".into());
    let testbed = parsed.testbed.clone();
    let campaign = plan::build(path, &text, parsed, &stem)?;
    links::check(path, &text, testbed.as_ref(), &campaign)?;
    Ok(campaign)
}

/// Runs a loaded campaign: agents over SSH started, every agent probed, then
/// every round until done or `cancel`. Unreachable agents stop it before
/// anything runs unless `keep_going` (their flows are then marked missing).
pub fn run(
    campaign: &mut plan::Campaign,
    keep_going: bool,
    cancel: &Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Result<CampaignResult, String> {
    // Agents over SSH first: they must be up before anyone probes them.
    let ssh_agents = ssh::start_all(&mut campaign.agents)?;
    let unreachable = probe_all(campaign);
    if !unreachable.is_empty() {
        let list = unreachable
            .iter()
            .map(|(n, why)| format!("{n} ({why})"))
            .collect::<Vec<_>>()
            .join("; ");
        if !keep_going {
            ssh::stop_all(ssh_agents);
            return Err(format!("unreachable agent(s), nothing was run: {list}; start `linkperf server --allow-third-party` there, or use --keep-going"));
        }
        observer.warning(&format!(
            "unreachable agent(s), their flows are marked missing: {list}"
        ));
    }
    let unreachable: Vec<String> = unreachable.into_iter().map(|(n, _)| n).collect();
    let started = controller::unix_ms();
    let phases = run_rounds(campaign, &unreachable, cancel, observer);
    ssh::stop_all(ssh_agents);
    let mut flags: Vec<Flag> = phases
        .iter()
        .flat_map(|p| flags::phase_flags(p, campaign.shortfall_percent))
        .collect();
    flags.extend(flags::session_outliers(&phases, campaign.outlier_percent));
    let phase_means = phase_means(&phases);
    Ok(CampaignResult {
        schema: crate::report::SCHEMA,
        id: None,
        name: campaign.name.clone(),
        started_unix_ms: started,
        sessions: campaign.sessions,
        interval_s: campaign.interval_s,
        phases,
        phase_means,
        flags,
        interrupted: cancel.load(Ordering::Relaxed),
    })
}

impl CampaignResult {
    /// Whether every flow of every phase ran as planned.
    pub fn all_ok(&self) -> bool {
        self.phases
            .iter()
            .flat_map(|p| &p.flows)
            .all(|f| f.status == "ok")
    }
}

/// Planned seconds of each run, in the order they run: the start delay, the
/// phase, and the pause after it (none after the last).
pub fn planned_runs(campaign: &plan::Campaign) -> Vec<f64> {
    let per_point: Vec<f64> = (0..campaign.sessions)
        .flat_map(|_| campaign.phases.iter().map(|p| p.duration_s))
        .collect();
    let mut planned: Vec<f64> = campaign
        .points
        .iter()
        .flat_map(|_| per_point.iter())
        .map(|d| campaign.start_delay_s + d + campaign.pause_s)
        .collect();
    if let Some(last) = planned.last_mut() {
        *last -= campaign.pause_s;
    }
    planned
}

/// Runs every phase of every session at every sweep point, until done or cancelled.
fn run_rounds(
    campaign: &plan::Campaign,
    unreachable: &[String],
    cancel: &Arc<AtomicBool>,
    observer: &mut dyn Observer,
) -> Vec<PhaseResult> {
    let mut phases = Vec::new();
    let mut twins = twin::Cache::new();
    let varied = campaign.points.iter().any(|p| !p.is_empty());
    let rounds = planned_runs(campaign).len();
    'points: for point in &campaign.points {
        // Checked when the file was loaded, so this cannot fail here.
        let phases_here = campaign
            .phases_at(point)
            .unwrap_or_else(|_| campaign.phases.clone());
        for session in 1..=campaign.sessions {
            for phase in &phases_here {
                if cancel.load(Ordering::Relaxed) {
                    break 'points;
                }
                observer.run_started(&format!(
                    "phase {} session {}/{}{}, {} flow(s), {} s",
                    phase.name,
                    session,
                    campaign.sessions,
                    if varied {
                        format!(" at {}", crate::sweep::plan::label(point))
                    } else {
                        String::new()
                    },
                    phase.flows.len(),
                    phase.duration_s
                ));
                let links = links::in_force(point, phase);
                if let Err(m) = links::apply(campaign, &links) {
                    observer.warning(&format!("phase {}: {m}; the campaign stops", phase.name));
                    break 'points;
                }
                let mut live = LiveAggregate::new(phase.flows.len());
                let mut on_progress = |p: &controller::Progress| {
                    let controller::Progress::Interval(interval) = p;
                    let line = live.add(interval);
                    observer.interval(&phase.name, session, line.as_ref(), phase.flows.len());
                };
                let mut result = controller::run_phase(
                    campaign,
                    phase,
                    session,
                    unreachable,
                    cancel,
                    &mut on_progress,
                );
                predict::predict_phase(campaign, phase, &mut result);
                if campaign.simulate {
                    if let Err(m) =
                        twin::simulate_phase(campaign, point, phase, &mut result, &mut twins)
                    {
                        observer.warning(&m);
                    }
                }
                result.params = (varied || !phase.set.is_empty()).then(|| {
                    let mut params = point.clone();
                    params.extend(phase.set.clone());
                    params
                });
                phases.push(result);
                if phases.len() < rounds {
                    controller::pause(campaign.pause_s, cancel);
                }
            }
        }
    }
    phases
}

/// Mean aggregate of each phase (and sweep point) over its sessions, each direction apart.
fn phase_means(phases: &[PhaseResult]) -> Vec<PhaseMean> {
    let mut means: Vec<PhaseMean> = Vec::new();
    for p in phases {
        let reverse = p
            .aggregate_reverse
            .as_ref()
            .map(|a| a.received_bits_per_second);
        let m = match means
            .iter_mut()
            .find(|m| m.phase == p.name && m.params == p.params)
        {
            Some(m) => m,
            None => {
                means.push(PhaseMean {
                    phase: p.name.clone(),
                    params: p.params.clone(),
                    ..Default::default()
                });
                means.last_mut().expect("pushed")
            }
        };
        m.sessions.push(p.aggregate.received_bits_per_second);
        if let Some(r) = reverse {
            m.sessions_reverse.get_or_insert_with(Vec::new).push(r);
        }
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    for m in &mut means {
        m.mean_received_bits_per_second = mean(&m.sessions);
        m.mean_received_reverse_bits_per_second = m.sessions_reverse.as_deref().map(mean);
    }
    means
}

/// Stores the campaign as one archive entry of kind "campaign"; returns its id.
pub fn store(result: &CampaignResult, db: Option<&str>) -> Result<i64, String> {
    let document = serde_json::to_value(result).map_err(|e| e.to_string())?;
    let host = crate::data::hostname();
    let run =
        linkperf_store::NewRun::other("campaign", &host, result.started_unix_ms as i64, document);
    let mut store = linkperf_store::Store::open(db).map_err(|e| e.to_string())?;
    store.insert_run(&run).map_err(|e| e.to_string())
}

/// Probes every agent in parallel; returns the unreachable ones with why.
fn probe_all(campaign: &plan::Campaign) -> Vec<(String, String)> {
    let handles: Vec<_> = campaign
        .agents
        .iter()
        .map(|a| {
            let a = a.clone();
            std::thread::spawn(move || (a.name.clone(), controller::probe(&a)))
        })
        .collect();
    handles
        .into_iter()
        .filter_map(|h| h.join().ok())
        .filter_map(|(name, r)| r.err().map(|why| (name, why)))
        .collect()
}

/// One interval's aggregate over every running flow, each direction apart.
pub struct LiveLine {
    pub start: f64,
    pub end: f64,
    pub received_bits_per_second: f64,
    /// The bidir flows' return directions, when there are any.
    pub reverse_received_bits_per_second: Option<f64>,
}

/// Sums the flows' interval k as they arrive; yields a line once every
/// running flow reported it.
struct LiveAggregate {
    flows: usize,
    /// Per interval: the flows seen, what they received, and their return directions.
    seen: Vec<(usize, f64, Option<f64>)>,
}

impl LiveAggregate {
    fn new(flows: usize) -> Self {
        LiveAggregate {
            flows,
            seen: Vec::new(),
        }
    }

    fn add(&mut self, interval: &serde_json::Value) -> Option<LiveLine> {
        let start = interval["start"].as_f64()?;
        let end = interval["end"].as_f64()?;
        let width = (end - start).max(1e-3);
        let k = (start / width).round() as usize;
        if self.seen.len() <= k {
            self.seen.resize(k + 1, (0, 0.0, None));
        }
        let slot = &mut self.seen[k];
        slot.0 += 1;
        slot.1 += interval["sum"]["received_bits_per_second"]
            .as_f64()
            .unwrap_or(0.0);
        if let Some(r) = interval["sum_reverse"]["received_bits_per_second"].as_f64() {
            *slot.2.get_or_insert(0.0) += r;
        }
        (slot.0 == self.flows).then_some(LiveLine {
            start,
            end,
            received_bits_per_second: slot.1,
            reverse_received_bits_per_second: slot.2,
        })
    }
}
