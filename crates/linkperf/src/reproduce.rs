//! The seed experiments shipped in `examples/seeds/`: each directory holds an
//! `experiment.toml` (the seed's table, what to vary, how long to run), the
//! testbed topology it runs through and a README. This module reads one,
//! runs it as a sweep through its testbed (full length, or reduced for CI
//! and a first look), stores the sweep, and pairs every point's measured
//! throughput with the seed's figure and with the physics the experiment
//! follows; an experiment with a `[cold]` table measures first-packet
//! probes per site instead ([`cold`]), one with a `campaign` file runs many
//! host pairs at once ([`campaign`]); a sweep sampled with `--sample` gets
//! its idle and loaded RTT, one with a link `schedule` the recovery after
//! the loss it injects, and `[[simulate_scale]]` scales the same in ns-3
//! ([`convergence`]). It prints nothing; [`table`] renders the comparison.

pub mod campaign;
pub mod cold;
pub mod convergence;
mod result;
mod tables;

use crate::spec::TestSpec;
use crate::sweep::run::{self as sweep_run, Observer, Plan, Stop, SweepOptions};
use crate::sweep::{self as sweep_mod, PointSummary};
use linkperf_store::{RunRow, Store};
use linkperf_testbed::counters::CounterValues;
pub use result::{Reproduction, Row};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
pub use tables::table;

/// The file that makes a directory an experiment.
pub const FILE: &str = "experiment.toml";

/// One experiment as its file states it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Experiment {
    /// Which seed report (`000` ... `004`).
    pub seed: String,
    /// The seed's table or figure, in words.
    pub source: String,
    /// Topology file, relative to the experiment's directory.
    pub topology: String,
    pub client_host: Option<String>,
    pub server_host: Option<String>,
    /// Full-length run: test length and warm-up omitted, as `-t` and `-O`.
    #[serde(default)]
    pub time: String,
    #[serde(default)]
    pub omit: String,
    /// The reduced run (`linkperf reproduce` without `--full`, CI).
    #[serde(default)]
    pub reduced_time: String,
    #[serde(default)]
    pub reduced_omit: String,
    /// Client options by their `--vary` names (`nodelay = "on"`).
    #[serde(default)]
    pub options: BTreeMap<String, String>,
    /// `NAME=VALUES` as `linkperf sweep --vary`.
    #[serde(default)]
    pub vary: Vec<String>,
    /// First-packet probes per site instead of a sweep.
    pub cold: Option<cold::Cold>,
    /// A campaign file (relative to the directory) instead of a sweep: its
    /// agents are the testbed's hosts; the reduced run is one session with
    /// every phase `reduced_time` long.
    pub campaign: Option<String>,
    /// linkperf's rates are the seed's times this (rates scaled to what this
    /// machine emulates); the table shows the seed's figures scaled too.
    pub seed_scale: Option<f64>,
    /// ns-3 twins beside the measurement (docs/simulate.md): each sweep
    /// point's, or each campaign flow's.
    #[serde(default)]
    pub simulate: bool,
    /// A link schedule file (relative to the directory) started right
    /// before every run of the sweep: a loss burst, for instance.
    pub schedule: Option<String>,
    /// The seed's recovery times after a loss, seconds, by congestion control.
    #[serde(default)]
    pub seed_recovery_s: BTreeMap<String, f64>,
    /// ns-3 runs of the same schedule after the sweep, per scale
    /// (`[[simulate_scale]]` tables).
    #[serde(default, rename = "simulate_scale")]
    pub simulate_scales: Vec<convergence::SimScale>,
    pub repeat: Option<u32>,
    pub model: Option<Model>,
    /// The seed's figures, by point label (`clamp=512`).
    #[serde(default)]
    pub row: Vec<SeedRow>,
    #[serde(skip)]
    pub name: String,
    #[serde(skip)]
    pub dir: PathBuf,
}

/// One figure of the seed: the point it belongs to and its Mbit/s.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedRow {
    pub point: String,
    pub mbps: f64,
    /// What the seed's sender sent, where it gives sent\received (seed 002).
    pub sent: Option<f64>,
    /// The seed's simulated figure beside its measured one (seed 004).
    pub simulated: Option<f64>,
}

/// The physics a point's throughput follows, for the "model" column.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Model {
    /// min(streams × window / RTT, payload rate); the window is the point's
    /// value of `window_param` (raised to `window_floor`, the kernel's
    /// smallest clamp), the streams its `parallel` (default 1).
    WindowOverRtt {
        rtt_ms: f64,
        payload_mbps: f64,
        window_param: String,
        #[serde(default)]
        window_floor: u64,
    },
    /// The link's payload rate at every point.
    Ceiling { payload_mbps: f64 },
}

impl Model {
    /// Predicted Mbit/s at a point with these parameters.
    pub fn predict(&self, params: &BTreeMap<String, String>) -> Option<f64> {
        match self {
            Model::Ceiling { payload_mbps } => Some(*payload_mbps),
            Model::WindowOverRtt {
                rtt_ms,
                payload_mbps,
                window_param,
                window_floor,
            } => {
                let window = linkperf_units::parse_size(params.get(window_param)?).ok()?;
                let streams = params
                    .get("parallel")
                    .and_then(|p| p.parse::<f64>().ok())
                    .unwrap_or(1.0);
                let bits = streams * window.max(*window_floor) as f64 * 8.0;
                Some((bits / (rtt_ms * 1e-3) / 1e6).min(*payload_mbps))
            }
        }
    }
}

/// Reads the experiment in `dir`.
pub fn load(dir: &Path) -> Result<Experiment, String> {
    let path = dir.join(FILE);
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut e: Experiment =
        toml::from_str(&text).map_err(|e| format!("{}: {}", path.display(), e.message()))?;
    e.name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    e.dir = dir.to_path_buf();
    Ok(e)
}

/// Finds experiment `name` under `root` (or `name` itself when it is a
/// directory holding an experiment file).
pub fn find(root: &Path, name: &str) -> Result<Experiment, String> {
    let direct = Path::new(name);
    if direct.join(FILE).is_file() {
        return load(direct);
    }
    let dir = root.join(name);
    if dir.join(FILE).is_file() {
        return load(&dir);
    }
    Err(format!(
        "no experiment '{name}' in {}; known: {}",
        root.display(),
        list(root).join(", ")
    ))
}

/// The experiments under `root`, by name, sorted.
pub fn list(root: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| e.path().join(FILE).is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

impl Experiment {
    /// Checks the experiment as far as it can without running it.
    pub fn check(&self, reduced: bool, repeat: Option<u32>) -> Result<(), String> {
        match (&self.cold, &self.campaign) {
            (Some(_), Some(_)) => Err(format!(
                "{}: an experiment has a [cold] table or a campaign, not both",
                self.name
            )),
            (Some(c), None) => (self.network())
                .and_then(|network| c.check(&network, reduced))
                .map_err(|e| format!("{}: {e}", self.name)),
            (None, Some(file)) => self.campaign_setup(file).check().map(|_| ()),
            (None, None) => {
                self.plan(reduced, repeat)?;
                self.simulate_scales
                    .iter()
                    .try_for_each(|s| s.check(&self.dir, reduced))
                    .map_err(|e| format!("{}: {e}", self.name))
            }
        }
    }

    /// When the schedule's first step comes (its injected loss), seconds.
    fn loss_at(&self) -> Result<Option<f64>, String> {
        self.schedule
            .as_ref()
            .map(|s| convergence::first_step_s(&self.dir, s, &self.topology))
            .transpose()
            .map_err(|e| format!("{}: {e}", self.name))
    }

    /// The link's payload rate the experiment's model names, Mbit/s.
    fn payload_mbps(&self) -> Option<f64> {
        match self.model.as_ref()? {
            Model::WindowOverRtt { payload_mbps, .. } | Model::Ceiling { payload_mbps } => {
                Some(*payload_mbps)
            }
        }
    }

    /// The campaign an experiment with a `campaign` file runs.
    pub fn campaign_setup(&self, file: &str) -> campaign::Setup {
        campaign::Setup {
            name: self.name.clone(),
            file: self.dir.join(file),
            topology: self.dir.join(&self.topology),
            client_host: self.client_host.clone(),
            reduced_time: self.reduced_time.clone(),
            simulate: self.simulate,
        }
    }

    fn network(&self) -> Result<crate::sweep::network::Network, String> {
        crate::sweep::network::Network::load(
            &self.dir.join(&self.topology),
            self.client_host.as_deref(),
            self.server_host.as_deref(),
        )
    }

    /// The sweep plan: the base test, the points, the testbed.
    pub fn plan(&self, reduced: bool, repeat: Option<u32>) -> Result<Plan, String> {
        if self.cold.is_some() || self.campaign.is_some() || self.vary.is_empty() {
            return Err(format!(
                "{}: a sweep experiment needs `vary` (and no [cold] table or campaign)",
                self.name
            ));
        }
        let mut spec = TestSpec::new("");
        spec.interval = 0.0;
        let (time, omit) = if reduced {
            (&self.reduced_time, &self.reduced_omit)
        } else {
            (&self.time, &self.omit)
        };
        spec.set("time", time)?;
        spec.set("omit", omit)?;
        for (name, value) in &self.options {
            spec.set(name, value)
                .map_err(|e| format!("{}: option {name}: {e}", self.name))?;
        }
        let options = SweepOptions {
            vary: self.vary.clone(),
            repeat: repeat.or(self.repeat),
            testbed: Some(self.dir.join(&self.topology)),
            client_host: self.client_host.clone(),
            server_host: self.server_host.clone(),
            simulate: self.simulate,
            schedule: self.schedule.as_ref().map(|s| self.dir.join(s)),
            ..SweepOptions::default()
        };
        Plan::new(spec, &options, None).map_err(|e| format!("{}: {e}", self.name))
    }
}

/// Runs `experiment` and stores it in `store`; a stop (Ctrl-C, a failed
/// run) still returns the rows measured before it.
pub fn run(
    experiment: &Experiment,
    reduced: bool,
    repeat: Option<u32>,
    store: &mut Store,
    interrupt: &AtomicBool,
    observer: &mut dyn Observer,
) -> Result<Reproduction, String> {
    linkperf_testbed::require_root().map_err(|e| format!("reproduce needs the testbed: {e}"))?;
    let mut r = Reproduction {
        schema: "linkperf/1",
        experiment: experiment.name.clone(),
        seed: experiment.seed.clone(),
        source: experiment.source.clone(),
        reduced,
        sweep_id: None,
        campaign_id: None,
        rows: Vec::new(),
        sites: Vec::new(),
        simulated: Vec::new(),
        seed_recovery_s: experiment.seed_recovery_s.clone(),
        payload_mbps: experiment.payload_mbps(),
        stopped: None,
    };
    if let Some(cold) = &experiment.cold {
        (r.sites, r.stopped) = cold.run(&experiment.network()?, reduced, store, interrupt)?;
        return Ok(r);
    }
    if let Some(file) = &experiment.campaign {
        let m = experiment
            .campaign_setup(file)
            .run(reduced, store, interrupt)?;
        r.rows = m
            .rows
            .into_iter()
            .map(|x| campaign_row(experiment, x))
            .collect();
        (r.campaign_id, r.stopped) = (m.campaign_id, m.stopped);
        return Ok(r);
    }
    let plan = experiment.plan(reduced, repeat)?;
    let loss_at = experiment.loss_at()?;
    let argv = vec![format!("reproduce {}", experiment.name)];
    let id = store
        .create_sweep(&plan.record(argv))
        .map_err(|e| format!("cannot record the sweep: {e}"))?;
    let (_, outcome) = sweep_run::execute(store, id, &plan, interrupt, observer);
    let stopped = match outcome {
        Ok(()) => None,
        Err(Stop::Interrupted) => Some("interrupted".to_string()),
        Err(Stop::RunFailed(m)) | Err(Stop::StoreFailed(m)) => Some(m),
    };
    let sweep = store
        .sweep(id)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("sweep {id} vanished from the archive"))?;
    let runs = store.sweep_runs(id, true).map_err(|e| e.to_string())?;
    let points = sweep_mod::summarise(&sweep, &runs);
    r.sweep_id = Some(id);
    r.rows = points
        .iter()
        .map(|p| row(experiment, p, &runs, loss_at))
        .collect();
    r.stopped = stopped;
    if r.stopped.is_none() {
        let schedule = experiment.schedule.as_deref();
        (r.simulated, r.stopped) = convergence::simulate_all(
            &experiment.simulate_scales,
            &experiment.dir,
            schedule,
            reduced,
            store,
            interrupt,
        );
    }
    Ok(r)
}

/// A campaign's row beside the seed's figure (scaled as the experiment says).
fn campaign_row(experiment: &Experiment, m: campaign::Measure) -> Row {
    let seed = experiment.row.iter().find(|r| r.point == m.point);
    Row {
        seed_mbps: seed.map(|r| r.mbps),
        seed_sent_mbps: seed.and_then(|r| r.sent),
        seed_scaled_mbps: seed.and_then(|r| experiment.seed_scale.map(|s| r.mbps * s)),
        linkperf_mbps: m.received_mbps,
        sent_mbps: m.sent_mbps,
        model_mbps: m.model_mbps,
        simulated_mbps: m.simulated_mbps,
        seed_simulated_mbps: seed.and_then(|r| r.simulated),
        advertised_window_bytes: None,
        retransmits: None,
        drops: BTreeMap::new(),
        idle_rtt_ms: None,
        loaded_rtt_ms: None,
        loss: None,
        runs: m.sessions,
        point: m.point,
    }
}

fn row(
    experiment: &Experiment,
    point: &PointSummary,
    runs: &[RunRow],
    loss_at: Option<f64>,
) -> Row {
    let label = point.label();
    // The model reads the point's values over the experiment's fixed options.
    let mut params = experiment.options.clone();
    if let Some(m) = point.params.as_object() {
        for (k, v) in m {
            params.insert(k.clone(), v.as_str().unwrap_or_default().to_string());
        }
    }
    let point_runs = sweep_mod::point_runs(runs, point.index);
    let mut windows: Vec<u64> = point_runs
        .iter()
        .filter_map(|r| {
            r.report
                .as_ref()?
                .pointer("/summary/tcp/snd_wnd_bytes")?
                .as_u64()
        })
        .collect();
    windows.sort_unstable();
    let seed = experiment.row.iter().find(|r| r.point == label);
    // UDP's sender is shown beside its receiver (what the path dropped).
    let udp = params
        .get("udp")
        .is_some_and(|v| matches!(v.as_str(), "on" | "true" | "1"));
    Row {
        seed_mbps: seed.map(|r| r.mbps),
        seed_sent_mbps: seed.and_then(|r| r.sent),
        seed_scaled_mbps: None,
        sent_mbps: (point.sent.as_ref())
            .filter(|_| udp)
            .map(|s| s.median / 1e6),
        simulated_mbps: point.simulated.map(|b| b / 1e6),
        seed_simulated_mbps: seed.and_then(|r| r.simulated),
        linkperf_mbps: point.received.as_ref().map(|s| s.median / 1e6),
        // The experiment's own physics, else linkperf's model of the testbed's path as
        // each run carried it (`summary.prediction`).
        model_mbps: (experiment.model.as_ref())
            .and_then(|m| m.predict(&params))
            .or(point.predicted.map(|b| b / 1e6)),
        advertised_window_bytes: windows.get(windows.len() / 2).copied(),
        retransmits: convergence::median_of(&point_runs, |d| {
            d.pointer("/summary/sent/retransmits")?.as_f64()
        })
        .map(|v| v as u64),
        drops: drops(&point_runs),
        idle_rtt_ms: convergence::median_of(&point_runs, |d| convergence::rtt_ms(d).0),
        loaded_rtt_ms: convergence::median_of(&point_runs, |d| convergence::rtt_ms(d).1),
        loss: loss_at.and_then(|at| {
            (point_runs.iter()).find_map(|r| convergence::injected(r.report.as_ref()?, at))
        }),
        runs: point.run_ids.len(),
        point: label,
    }
}

/// What one run's result says was dropped, by place: each emulator cause
/// (every link direction summed) and `interface` (the hosts' own queues).
fn run_drops(doc: &serde_json::Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let links = doc.pointer("/testbed/links").and_then(|l| l.as_array());
    for link in links.into_iter().flatten() {
        let Ok(c) = CounterValues::deserialize(&link["counters"]) else {
            continue;
        };
        for (cause, n) in c.drops() {
            *out.entry(cause.to_string()).or_insert(0) += n;
        }
    }
    let hosts = doc
        .pointer("/testbed/interface_drops")
        .and_then(|h| h.as_object());
    let interface: u64 = hosts
        .into_iter()
        .flatten()
        .filter_map(|(_, n)| n.as_u64())
        .sum();
    out.insert("interface".to_string(), interface);
    out
}

/// Per place, the median over `runs` of what they dropped there; only places
/// with drops.
fn drops(runs: &[&RunRow]) -> BTreeMap<String, u64> {
    let each: Vec<BTreeMap<String, u64>> = (runs.iter())
        .filter_map(|r| r.report.as_ref().map(run_drops))
        .collect();
    let mut out = BTreeMap::new();
    for place in each.iter().flat_map(|m| m.keys()) {
        let mut v: Vec<u64> = each
            .iter()
            .map(|m| m.get(place).copied().unwrap_or(0))
            .collect();
        v.sort_unstable();
        if let Some(&n) = v.get(v.len() / 2).filter(|&&n| n > 0) {
            out.insert(place.clone(), n);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_model_is_window_over_rtt_up_to_the_payload_rate() {
        let m = Model::WindowOverRtt {
            rtt_ms: 8.8,
            payload_mbps: 134.3,
            window_param: "clamp".into(),
            window_floor: 2304,
        };
        let at = |w: &str| m.predict(&BTreeMap::from([("clamp".to_string(), w.to_string())]));
        // 64 KiB over 8.8 ms is 59.6 Mbit/s, as seed 004's table says.
        assert!((at("64K").unwrap() - 59.58).abs() < 0.01);
        assert_eq!(at("1M"), Some(134.3));
        // Below the kernel's floor the window is the floor.
        assert_eq!(at("512"), at("2304"));
    }

    #[test]
    fn every_shipped_experiment_parses_and_plans() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/seeds");
        let names = list(&root);
        assert!(!names.is_empty(), "no experiments in {}", root.display());
        for name in names {
            let e = find(&root, &name).unwrap();
            e.check(true, None).unwrap_or_else(|err| panic!("{err}"));
            if let Some(file) = &e.campaign {
                let points =
                    (e.campaign_setup(file).planned_points()).unwrap_or_else(|err| panic!("{err}"));
                for row in &e.row {
                    assert!(
                        points.contains(&row.point),
                        "{name}: seed row '{}' matches no row of {points:?}",
                        row.point
                    );
                }
                continue;
            }
            if e.cold.is_some() {
                continue;
            }
            let plan = e.plan(true, None).unwrap_or_else(|err| panic!("{err}"));
            for row in &e.row {
                assert!(
                    plan.points
                        .iter()
                        .any(|p| crate::sweep::plan::label(p) == row.point),
                    "{name}: seed row '{}' matches no point",
                    row.point
                );
            }
        }
    }
}
