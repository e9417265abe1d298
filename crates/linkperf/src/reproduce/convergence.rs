//! Seed 003's figures that come from `--sample` series rather than from
//! throughput alone: the idle and loaded round trip of a socket-buffer sweep
//! (and the buffer each implies at the link's rate), the recovery after the
//! loss a link schedule injects, measured per congestion control, and the
//! same recovery simulated in ns-3 (`[[simulate_scale]]` scales: reno, bic, cubic
//! through a topology of their own, the experiment's schedule applied from
//! the test's start). Each scale's runs are stored as a sweep of their own
//! over the congestion control, so `linkperf report` overlays their series.

use crate::simulate::{self, SimSpec};
use crate::spec::TestSpec;
use crate::sweep::run::{Plan, SweepOptions};
use linkperf_store::{NewRun, RunRow, Store, SweepSlot};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// One `[[simulate_scale]]` scale of an experiment file.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SimScale {
    pub name: String,
    /// Topology file, relative to the experiment's directory.
    pub topology: String,
    pub congestion: Vec<String>,
    /// Simulated length, full run.
    pub time: String,
    /// Reduced run; without it the scale is simulated only with `--full`.
    pub reduced_time: Option<String>,
    #[serde(default = "default_sample")]
    pub sample: String,
}

fn default_sample() -> String {
    "10ms".into()
}

/// One simulated run: its throughput and the injected loss's recovery.
#[derive(Debug, Clone, Serialize)]
pub struct SimRow {
    pub scale: String,
    pub congestion: String,
    pub source: String,
    pub mbps: Option<f64>,
    #[serde(flatten)]
    pub loss: Option<Injected>,
    pub seconds: f64,
    /// Wall-clock seconds the simulation took.
    pub wall_s: f64,
    /// The scale's sweep (`linkperf report ID` overlays its runs) and this run.
    pub sweep_id: Option<i64>,
    pub run_id: Option<i64>,
}

/// The loss event the schedule injected, as `summary.dynamics.losses[]` has it.
#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct Injected {
    /// When the sender saw it, seconds from the test's start.
    pub loss_t_s: f64,
    pub before_mbps: f64,
    /// None: not back at 90 % of `before_mbps` before the test ended.
    pub recovery_s: Option<f64>,
    /// The same in whole seconds: the acknowledged rate of the second
    /// before the loss, of the second from the loss on, and the end of the
    /// first second from the loss on (in whole seconds after it) that was
    /// back at 90 % of that; coarse, but no recovery's cumulative ACK lifts
    /// a whole second.
    pub second_before_mbps: Option<f64>,
    pub second_after_mbps: Option<f64>,
    pub recovery_1s_s: Option<f64>,
    /// The sender's mean smoothed RTT over the second before the loss and from
    /// the loss to the end of its recovery, ms: the round trip a window-limited
    /// rate and a Reno recovery follow (longer than the path's own when a host
    /// stalls). None where the samples carry no RTT.
    pub before_srtt_ms: Option<f64>,
    pub recovery_srtt_ms: Option<f64>,
}

/// The first stream's sender samples.
fn sender_samples(doc: &Value) -> Option<&[Value]> {
    doc.pointer("/summary/streams/0/sender/samples")?
        .as_array()
        .map(Vec::as_slice)
}

/// The samples taken in (from, to].
fn in_span(samples: &[Value], from: f64, to: f64) -> impl Iterator<Item = &Value> {
    (samples.iter()).filter(move |s| s["t"].as_f64().is_some_and(|x| x > from && x <= to))
}

/// Acknowledged Mbit/s of the first stream's sender over (from, to] (a
/// sample holds what was acknowledged since the one before).
fn acked_mbps(samples: &[Value], from: f64, to: f64) -> Option<f64> {
    if samples.last().and_then(|s| s["t"].as_f64())? < to {
        return None;
    }
    let bytes: f64 = in_span(samples, from, to)
        .filter_map(|s| s["acked_bytes"].as_f64())
        .sum();
    Some(bytes * 8.0 / (to - from) / 1e6)
}

/// The mean `srtt_ms` of the samples in (from, to].
fn mean_srtt_ms(samples: &[Value], from: f64, to: f64) -> Option<f64> {
    let rtts: Vec<f64> = in_span(samples, from, to)
        .filter_map(|s| s["srtt_ms"].as_f64())
        .collect();
    (!rtts.is_empty()).then(|| rtts.iter().sum::<f64>() / rtts.len() as f64)
}

/// The one-second view of a loss at `t` (see [`Injected`]).
fn by_seconds(samples: &[Value], t: f64) -> (Option<f64>, Option<f64>, Option<f64>) {
    let before = acked_mbps(samples, t - 1.0, t);
    let after = acked_mbps(samples, t, t + 1.0);
    let back = before.and_then(|b| {
        (1..)
            .map(|k| {
                (
                    k as f64,
                    acked_mbps(samples, t + k as f64 - 1.0, t + k as f64),
                )
            })
            .take_while(|(_, r)| r.is_some())
            .find(|(_, r)| r.is_some_and(|r| r >= 0.9 * b))
            .map(|(k, _)| k)
    });
    (before, after, back)
}

/// The injected event of a result: the loss event nearest `at_s` that the
/// sender saw from half a second before it (the schedule's first step; a measured test's
/// clock starts after its connection set-up, up to a few hundred ms after
/// the schedule) to a second after it (the sender sees a loss one round trip
/// or more after the drop). None when the burst fell inside the recovery of
/// an earlier event and merged with it.
pub fn injected(doc: &Value, at_s: f64) -> Option<Injected> {
    let losses = doc.pointer("/summary/dynamics/losses")?.as_array()?;
    losses
        .iter()
        .filter_map(|l| Some((l["t"].as_f64()?, l)))
        .filter(|(t, _)| *t >= at_s - 0.5 && *t <= at_s + 1.0)
        .min_by(|(a, _), (b, _)| (a - at_s).abs().total_cmp(&(b - at_s).abs()))
        .map(|(t, l)| {
            let samples = sender_samples(doc).unwrap_or_default();
            let (second_before_mbps, second_after_mbps, recovery_1s_s) = by_seconds(samples, t);
            let recovery_s = l["recovery_s"].as_f64();
            Injected {
                loss_t_s: t,
                before_mbps: l["before_bps"].as_f64().unwrap_or(0.0) / 1e6,
                recovery_s,
                second_before_mbps,
                second_after_mbps,
                recovery_1s_s,
                before_srtt_ms: mean_srtt_ms(samples, t - 1.0, t),
                recovery_srtt_ms: recovery_s.and_then(|r| mean_srtt_ms(samples, t, t + r)),
            }
        })
}

/// Median of what `get` finds in the reports of `runs`.
pub fn median_of(runs: &[&RunRow], get: impl Fn(&Value) -> Option<f64>) -> Option<f64> {
    let mut v: Vec<f64> = runs
        .iter()
        .filter_map(|r| get(r.report.as_ref()?))
        .collect();
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied()
}

/// The idle and loaded smoothed RTT of a measured run, milliseconds.
pub fn rtt_ms(doc: &Value) -> (Option<f64>, Option<f64>) {
    let get = |k: &str| doc.pointer(&format!("/summary/dynamics/rtt/{k}"))?.as_f64();
    (get("idle_ms"), get("loaded_ms"))
}

/// When the schedule's first step comes, seconds from its start.
pub fn first_step_s(dir: &Path, schedule: &str, topology: &str) -> Result<f64, String> {
    let topo =
        linkperf_testbed::Topology::from_file(&dir.join(topology)).map_err(|e| e.to_string())?;
    let s = linkperf_testbed::topology::schedule_from_file(&dir.join(schedule), &topo)
        .map_err(|e| e.to_string())?;
    s.steps
        .first()
        .map(|st| st.at_ns as f64 / 1e9)
        .ok_or_else(|| format!("schedule {schedule} has no step"))
}

impl SimScale {
    fn seconds(&self, reduced: bool) -> Option<Result<f64, String>> {
        let t = if reduced {
            self.reduced_time.as_ref()?
        } else {
            &self.time
        };
        Some(
            linkperf_units::parse_duration(t)
                .map(|d| d.as_secs_f64())
                .map_err(|e| format!("[[simulate_scale]] {}: time {t}: {e}", self.name)),
        )
    }

    fn spec(&self, dir: &Path, congestion: &str, seconds: f64) -> Result<SimSpec, String> {
        let sample = linkperf_units::parse_duration(&self.sample).map_err(|e| {
            format!(
                "[[simulate_scale]] {}: sample {}: {e}",
                self.name, self.sample
            )
        })?;
        simulate::ns3_model(congestion, false).map_err(|e| e.message)?;
        Ok(SimSpec {
            testbed: dir.join(&self.topology),
            ends: None,
            reverse: false,
            duration_s: seconds,
            interval_s: 1.0,
            sample_s: sample.as_secs_f64(),
            congestion: Some(congestion.to_string()),
            streams: 1,
            window: None,
            window_clamp: None,
            cwnd_clamp: None,
        })
    }

    /// Checks the scale without simulating: its times, congestion controls
    /// and topology.
    pub fn check(&self, dir: &Path, reduced: bool) -> Result<(), String> {
        let seconds = match self.seconds(reduced) {
            Some(s) => s?,
            None => self.seconds(false).expect("full time")?,
        };
        if self.congestion.is_empty() {
            return Err(format!(
                "[[simulate_scale]] {}: no congestion control",
                self.name
            ));
        }
        for cc in &self.congestion {
            self.spec(dir, cc, seconds)?;
        }
        linkperf_testbed::Topology::from_file(&dir.join(&self.topology))
            .map(|_| ())
            .map_err(|e| format!("[[simulate_scale]] {}: {e}", self.name))
    }

    /// The scale's sweep record: its congestion controls as the points of a
    /// sweep through its topology, stored before the first simulation.
    fn record(&self, dir: &Path, seconds: f64, store: &mut Store) -> Result<i64, String> {
        let mut base = TestSpec::new("");
        base.set("time", &seconds.to_string())?;
        base.set("sample", &self.sample)?;
        let options = SweepOptions {
            vary: vec![format!("congestion={}", self.congestion.join(","))],
            testbed: Some(dir.join(&self.topology)),
            ..SweepOptions::default()
        };
        let plan = Plan::new(base, &options, None)?;
        let argv = vec![format!("reproduce: ns-3 scale {}", self.name)];
        store
            .create_sweep(&plan.record(argv))
            .map_err(|e| format!("cannot record the ns-3 runs: {e}"))
    }
}

/// Simulates every scale (those with a reduced time, when reduced) and
/// congestion control with `schedule` (relative to `dir`), storing each
/// scale as a sweep. Stops at an interrupt or a failure with the rows done
/// so far.
pub fn simulate_all(
    scales: &[SimScale],
    dir: &Path,
    schedule: Option<&str>,
    reduced: bool,
    store: &mut Store,
    interrupt: &AtomicBool,
) -> (Vec<SimRow>, Option<String>) {
    let mut rows = Vec::new();
    for scale in scales {
        let seconds = match scale.seconds(reduced) {
            None => continue,
            Some(Ok(s)) => s,
            Some(Err(e)) => return (rows, Some(e)),
        };
        let at = match schedule.map(|s| first_step_s(dir, s, &scale.topology)) {
            Some(Ok(at)) => Some(at),
            Some(Err(e)) => {
                return (
                    rows,
                    Some(format!("[[simulate_scale]] {}: {e}", scale.name)),
                )
            }
            None => None,
        };
        let sweep_id = match scale.record(dir, seconds, store) {
            Ok(id) => id,
            Err(e) => {
                return (
                    rows,
                    Some(format!("[[simulate_scale]] {}: {e}", scale.name)),
                )
            }
        };
        for (point, cc) in scale.congestion.iter().enumerate() {
            if interrupt.load(Ordering::Relaxed) {
                return (rows, Some("interrupted".into()));
            }
            let started = std::time::Instant::now();
            let doc = scale.spec(dir, cc, seconds).and_then(|spec| {
                simulate::run_with_schedule(&spec, schedule.map(|s| dir.join(s)).as_deref())
                    .map_err(|e| e.message)
            });
            let doc = match doc {
                Ok(d) => d,
                Err(e) => {
                    return (
                        rows,
                        Some(format!("[[simulate_scale]] {} {cc}: {e}", scale.name)),
                    )
                }
            };
            let wall_s = started.elapsed().as_secs_f64();
            let run = NewRun::from_test_report(doc.clone()).in_sweep(SweepSlot {
                sweep_id,
                point: point as i64,
                repetition: 0,
            });
            let run_id = match store.insert_run(&run) {
                Ok(id) => Some(id),
                Err(e) => return (rows, Some(format!("cannot store the ns-3 run: {e}"))),
            };
            rows.push(SimRow {
                scale: scale.name.clone(),
                congestion: cc.clone(),
                source: doc["source"].as_str().unwrap_or_default().to_string(),
                mbps: doc
                    .pointer("/summary/received/bits_per_second")
                    .and_then(Value::as_f64)
                    .map(|b| b / 1e6),
                loss: at.and_then(|at| injected(&doc, at)),
                seconds,
                wall_s,
                sweep_id: Some(sweep_id),
                run_id,
            });
        }
        let _ = store.set_sweep_status(sweep_id, "complete");
    }
    (rows, None)
}

/// What the tables need of one measured point.
pub struct Measured<'a> {
    pub point: &'a str,
    pub mbps: Option<f64>,
    pub idle_rtt_ms: Option<f64>,
    pub loaded_rtt_ms: Option<f64>,
    pub loss: Option<Injected>,
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or("-".into(), |x| format!("{x:.digits$}"))
}

/// Idle and loaded RTT per point, and the buffer each implies at `rate_mbps`
/// (the seed's W = bandwidth x RTT), as text.
pub fn rtt_table(rows: &[Measured], rate_mbps: Option<f64>) -> String {
    let width = rows.iter().map(|x| x.point.len()).max().unwrap_or(5).max(5);
    let mut out = format!(
        "\n{:<width$}  {:>13}  {:>15}\n",
        "point", "idle RTT (ms)", "loaded RTT (ms)"
    );
    for x in rows {
        out.push_str(&format!(
            "{:<width$}  {:>13}  {:>15}\n",
            x.point,
            opt(x.idle_rtt_ms, 2),
            opt(x.loaded_rtt_ms, 2)
        ));
    }
    let idle = rows
        .iter()
        .filter_map(|x| x.idle_rtt_ms)
        .min_by(f64::total_cmp);
    // The loaded RTT of the point with the most throughput: the link full.
    let loaded = rows
        .iter()
        .filter(|x| x.loaded_rtt_ms.is_some())
        .max_by(|a, b| a.mbps.unwrap_or(0.0).total_cmp(&b.mbps.unwrap_or(0.0)))
        .and_then(|x| x.loaded_rtt_ms.map(|l| (x.point, l)));
    if let (Some(rate), Some(idle), Some((point, loaded))) = (rate_mbps, idle, loaded) {
        let kib = |ms: f64| rate * 1e6 * ms / 1e3 / 8.0 / 1024.0;
        out.push_str(&format!(
            "window = {rate} Mbit/s x RTT: idle {idle:.2} ms -> {:.0} KiB; loaded ({point}) {loaded:.2} ms -> {:.0} KiB\n",
            kib(idle),
            kib(loaded)
        ));
    }
    out
}

/// Recovery after the injected loss: measured per point, simulated per
/// scale and congestion control, beside the seed's figures.
pub fn recovery_table(
    rows: &[Measured],
    simulated: &[SimRow],
    seed: &std::collections::BTreeMap<String, f64>,
) -> String {
    let mut out = format!(
        "\n{:<24}  {:>9}  {:>10}  {:>12}  {:>11}  {:>17}  {:>11}  {:>11}\n",
        "run",
        "Mbit/s",
        "loss at s",
        "before Mb/s",
        "recovery s",
        "1 s before/after",
        "1 s rec. s",
        "seed rec. s"
    );
    let seed_of = |label: &str| {
        seed.iter()
            .find(|(cc, _)| {
                label.ends_with(&format!("={cc}")) || label.ends_with(&format!(" {cc}"))
            })
            .map(|(_, s)| format!("{s:.0}"))
            .unwrap_or_else(|| "-".into())
    };
    let mut line = |label: String, mbps: Option<f64>, loss: Option<Injected>| {
        let not_by_end = |v: Option<f64>, digits| match (loss, v) {
            (Some(_), None) => "not by end".into(),
            _ => opt(v, digits),
        };
        out.push_str(&format!(
            "{:<24}  {:>9}  {:>10}  {:>12}  {:>11}  {:>17}  {:>11}  {:>11}\n",
            label,
            opt(mbps, 1),
            opt(loss.map(|l| l.loss_t_s), 2),
            opt(loss.map(|l| l.before_mbps), 1),
            not_by_end(loss.and_then(|l| l.recovery_s), 2),
            format!(
                "{}/{}",
                opt(loss.and_then(|l| l.second_before_mbps), 1),
                opt(loss.and_then(|l| l.second_after_mbps), 1)
            ),
            not_by_end(loss.and_then(|l| l.recovery_1s_s), 0),
            seed_of(&label),
        ));
    };
    for x in rows {
        line(format!("measured {}", x.point), x.mbps, x.loss);
    }
    for s in simulated {
        line(format!("ns-3 {} {}", s.scale, s.congestion), s.mbps, s.loss);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(losses: Value) -> Value {
        json!({ "summary": { "dynamics": { "losses": losses } } })
    }

    #[test]
    fn the_injected_loss_is_the_first_event_from_the_burst_on() {
        let d = doc(json!([
            { "t": 1.2, "before_bps": 9e7, "recovery_s": 0.4 },
            { "t": 6.03, "before_bps": 1.8e8, "recovery_s": 7.5 },
            { "t": 9.0, "before_bps": 1.7e8, "recovery_s": null },
        ]));
        let got = injected(&d, 6.0).unwrap();
        assert_eq!(got.loss_t_s, 6.03);
        assert_eq!(got.before_mbps, 180.0);
        assert_eq!(got.recovery_s, Some(7.5));
        // Nothing from 3.5 to 5 s: the burst merged with an earlier event.
        assert_eq!(injected(&d, 4.0), None);
        let not_back = injected(&d, 8.9).unwrap();
        assert_eq!(not_back.recovery_s, None);
    }

    #[test]
    fn the_one_second_view_counts_whole_seconds_from_the_loss() {
        // 100 Mbit/s until 5 s, 50 until 7 s, then 95; samples every 0.1 s.
        let samples: Vec<Value> = (1..=100)
            .map(|i| {
                let t = i as f64 / 10.0;
                let mbps = if t <= 5.0 {
                    100.0
                } else if t <= 7.0 {
                    50.0
                } else {
                    95.0
                };
                json!({ "t": t, "acked_bytes": mbps * 1e6 * 0.1 / 8.0 })
            })
            .collect();
        let doc = json!({ "summary": { "streams": [ { "sender": { "samples": samples } } ] } });
        let samples = sender_samples(&doc).unwrap();
        let (before, after, back) = by_seconds(samples, 5.0);
        assert!((before.unwrap() - 100.0).abs() < 1e-6);
        assert!((after.unwrap() - 50.0).abs() < 1e-6);
        assert_eq!(back, Some(3.0));
        // Never back before the samples end.
        let (_, _, back) = by_seconds(samples, 2.0);
        assert_eq!(back, Some(1.0));
        assert_eq!(by_seconds(samples, 9.5).2, None);
    }

    #[test]
    fn the_rtt_table_gives_the_window_each_rtt_implies() {
        let row = |point: &'static str, mbps: f64, idle: f64, loaded: f64| Measured {
            point,
            mbps: Some(mbps),
            idle_rtt_ms: Some(idle),
            loaded_rtt_ms: Some(loaded),
            loss: None,
        };
        let rows = [
            row("window=64K", 17.0, 30.2, 30.4),
            row("window=4M", 197.0, 30.1, 38.0),
        ];
        let t = rtt_table(&rows, Some(200.0));
        // 200 Mbit/s x 30.1 ms = 752,500 bytes = 735 KiB; x 38 ms = 928 KiB.
        assert!(t.contains("idle 30.10 ms -> 735 KiB"), "{t}");
        assert!(t.contains("loaded (window=4M) 38.00 ms -> 928 KiB"), "{t}");
    }
}
