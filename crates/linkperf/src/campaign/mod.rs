//! `linkperf campaign run FILE`: many hosts, many flows, one synchronised
//! experiment. The controller asks each flow's `from` agent (a `linkperf
//! server --allow-third-party`) to run the flow towards its `to` agent at an
//! agreed instant, over connections the controller opens: agents never need
//! to reach the controller.

mod analysis;
mod controller;
mod file;
mod plan;
mod progress;
mod ssh;
mod text;

use analysis::{Flag, PhaseResult};
use clap::{Args, Subcommand};
use serde::Serialize;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

#[derive(Subcommand, Debug)]
pub enum CampaignCommand {
    /// Run a campaign file.
    Run(RunArgs),
    /// Check a campaign file and list the flows it expands to, without running it.
    Check(CheckArgs),
}

#[derive(Args, Debug)]
pub struct RunArgs {
    /// Campaign file (TOML); see docs/campaign.md.
    pub file: String,
    /// One JSON document at the end.
    #[arg(short = 'J', long)]
    pub json: bool,
    /// Run even when some agents are unreachable; their flows are marked missing.
    #[arg(long)]
    pub keep_going: bool,
    /// Results archive: a SQLite file or a postgres:// URL (default: the user's archive).
    #[arg(long)]
    pub db: Option<String>,
    /// Do not store the result in the archive.
    #[arg(long)]
    pub no_store: bool,
}

#[derive(Args, Debug)]
pub struct CheckArgs {
    pub file: String,
}

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

pub fn run(cmd: CampaignCommand) -> ExitCode {
    match cmd {
        CampaignCommand::Run(args) => run_file(&args),
        CampaignCommand::Check(args) => match load(&args.file) {
            Ok(c) => {
                for p in &c.phases {
                    say!(
                        "phase {} ({} s): {} flow(s)",
                        p.name,
                        p.duration_s,
                        p.flows.len()
                    );
                    for f in &p.flows {
                        say!("  {} -> {}: {}", f.from, f.to, flow_words(&f.config, &f.to));
                    }
                }
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("linkperf: {e}");
                ExitCode::from(2)
            }
        },
    }
}

/// A flow's options as users spell them: "UDP client->server, 1 stream,
/// 950 Mbit/s per stream".
fn flow_words(c: &linkperf_proto::TestConfig, to: &str) -> String {
    use linkperf_proto::{Direction, Protocol};
    let mut s = format!(
        "{} {}, {} stream{}",
        if c.protocol == Protocol::Udp {
            "UDP"
        } else {
            "TCP"
        },
        match c.direction {
            Direction::Forward => "client->server".to_string(),
            Direction::Reverse => format!("server->client (reverse: {to} sends)"),
            Direction::Bidir => "both ways (bidir)".to_string(),
        },
        c.parallel,
        if c.parallel == 1 { "" } else { "s" }
    );
    if let Some(b) = c.bitrate.filter(|b| *b > 0) {
        s.push_str(&format!(
            ", {} per stream",
            linkperf_units::format_rate(b as f64)
        ));
    }
    match (c.sndbuf, c.rcvbuf) {
        (Some(a), Some(b)) if a == b => s.push_str(&format!(
            ", window {}",
            linkperf_units::format_bytes(a as f64)
        )),
        (a, b) => {
            for (name, v) in [("sndbuf", a), ("rcvbuf", b)] {
                if let Some(v) = v {
                    s.push_str(&format!(
                        ", {name} {}",
                        linkperf_units::format_bytes(v as f64)
                    ));
                }
            }
        }
    }
    if let Some(cc) = &c.congestion {
        s.push_str(&format!(", congestion {cc}"));
    }
    s
}

fn load(path: &str) -> Result<plan::Campaign, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("cannot read campaign file {path}: {e}"))?;
    let parsed = file::parse(path, &text)?;
    let stem = std::path::Path::new(path)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "campaign".into());
    plan::build(path, &text, parsed, &stem)
}

fn run_file(args: &RunArgs) -> ExitCode {
    let mut campaign = match load(&args.file) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("linkperf: {e}");
            return ExitCode::from(2);
        }
    };
    crate::signals::install();
    let cancel = Arc::new(AtomicBool::new(false));
    {
        let cancel = cancel.clone();
        std::thread::spawn(move || loop {
            if crate::signals::INTERRUPTED.load(Ordering::Relaxed) {
                cancel.store(true, Ordering::Relaxed);
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        });
    }
    // Agents over SSH first: they must be up before anyone probes them.
    let ssh_agents = match ssh::start_all(&mut campaign.agents) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("linkperf: {e}");
            return ExitCode::from(1);
        }
    };
    let unreachable = probe_all(&campaign);
    if !unreachable.is_empty() {
        let list = unreachable
            .iter()
            .map(|(n, why)| format!("{n} ({why})"))
            .collect::<Vec<_>>()
            .join("; ");
        if !args.keep_going {
            eprintln!("linkperf: unreachable agent(s), nothing was run: {list}; start `linkperf server --allow-third-party` there, or use --keep-going");
            return ExitCode::from(1);
        }
        eprintln!("linkperf: unreachable agent(s), their flows are marked missing: {list}");
    }
    let unreachable: Vec<String> = unreachable.into_iter().map(|(n, _)| n).collect();
    let started = controller::unix_ms();
    let phases = run_rounds(&campaign, &unreachable, &cancel, args.json);
    ssh::stop_all(ssh_agents);
    let mut flags: Vec<Flag> = phases
        .iter()
        .flat_map(|p| analysis::phase_flags(p, campaign.shortfall_percent))
        .collect();
    flags.extend(analysis::session_outliers(
        &phases,
        campaign.outlier_percent,
    ));
    let phase_means = phase_means(&phases);
    let mut result = CampaignResult {
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
    };
    if !args.no_store {
        // Stored before printing so the printed document carries its archive id;
        // a store failure costs the archive copy, never the printed result.
        match store(&result, args.db.as_deref()) {
            Ok(id) => result.id = Some(id),
            Err(e) => eprintln!("linkperf: warning: the campaign was not stored: {e}"),
        }
    }
    if args.json {
        say!(
            "{}",
            serde_json::to_string_pretty(&result).expect("campaign result serialises")
        );
    } else {
        say_raw!("{}", text::summary(&result));
    }
    let failed = result
        .phases
        .iter()
        .flat_map(|p| &p.flows)
        .any(|f| f.status != "ok");
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}

/// Planned seconds of each run, in the order they run: the start delay, the
/// phase, and the pause after it (none after the last).
fn planned_runs(campaign: &plan::Campaign) -> Vec<f64> {
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
    json: bool,
) -> Vec<PhaseResult> {
    let mut phases = Vec::new();
    let varied = campaign.points.iter().any(|p| !p.is_empty());
    let mut progress = progress::Progress::new(planned_runs(campaign), json);
    let rounds = progress.total();
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
                progress.start_run(&format!(
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
                let mut live = LiveAggregate::new(phase.flows.len());
                let mut on_progress = |p: &controller::Progress| {
                    let controller::Progress::Interval(interval) = p;
                    match live.add(interval) {
                        Some(line) if !json => progress.print(&text::progress_line(
                            &phase.name,
                            session,
                            &line,
                            phase.flows.len(),
                        )),
                        _ => progress.redraw(),
                    }
                };
                let mut result = controller::run_phase(
                    campaign,
                    phase,
                    session,
                    unreachable,
                    cancel,
                    &mut on_progress,
                );
                result.params = varied.then(|| point.clone());
                phases.push(result);
                if phases.len() < rounds {
                    controller::pause(campaign.pause_s, cancel);
                }
            }
        }
    }
    progress.finish();
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
fn store(result: &CampaignResult, db: Option<&str>) -> Result<i64, String> {
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
