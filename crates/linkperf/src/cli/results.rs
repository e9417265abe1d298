//! `linkperf results list|show|compare|export`: browse and reuse the archive.
//! The export JSON is the input of `linkperf report` (docs/archive.md).
//! Reading never creates an archive: a missing one is an error.

mod lookup;
mod show;

use lookup::{load_sweep, not_found, rate, utc, Fail};

use clap::{Args, Subcommand, ValueEnum};
use linkperf::sweep::{self, stats, PointSummary};
use linkperf_store::{EntryKind, ListEntry, ListFilter, RunRow, Store};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Args, Debug)]
pub struct ResultsArgs {
    /// The archive: a SQLite file or a postgres:// URL (default: the user's data directory).
    #[arg(long, global = true, value_name = "PATH|URL")]
    pub db: Option<String>,
    #[command(subcommand)]
    pub command: ResultsCommand,
}

#[derive(Subcommand, Debug)]
pub enum ResultsCommand {
    /// Tests and sweeps, newest first (a sweep's runs are folded into it).
    List {
        /// How many to show.
        #[arg(long, default_value_t = 20)]
        limit: i64,
        /// Only ids below this one (the next page).
        #[arg(long, value_name = "ID")]
        before: Option<i64>,
        /// Include the runs of sweeps.
        #[arg(long)]
        all: bool,
        /// Only this kind: sweep, test, rr, campaign.
        #[arg(long)]
        kind: Option<String>,
        /// Only results against this host.
        #[arg(long)]
        host: Option<String>,
        /// JSON instead of a table.
        #[arg(short = 'J', long)]
        json: bool,
    },
    /// One run (its summary and intervals) or one sweep (its table).
    Show {
        id: i64,
        /// The stored JSON (a run's full report, a sweep's statistics).
        #[arg(short = 'J', long)]
        json: bool,
    },
    /// Differences between two runs or two sweeps, with Welch's t-test where
    /// both sides have repetitions.
    Compare {
        a: i64,
        b: i64,
        #[arg(short = 'J', long)]
        json: bool,
    },
    /// A run or a sweep as CSV (one row per run) or JSON (for `linkperf report`).
    Export {
        id: i64,
        #[arg(long, value_enum)]
        format: ExportFormat,
        /// Write to FILE instead of stdout.
        #[arg(short = 'o', long, value_name = "FILE")]
        output: Option<PathBuf>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    Csv,
    Json,
}

pub fn run(args: ResultsArgs) -> ExitCode {
    let result = Store::open_existing(args.db.as_deref())
        .map_err(Fail::from)
        .and_then(|mut store| match args.command {
            ResultsCommand::List {
                limit,
                before,
                all,
                kind,
                host,
                json,
            } => list(
                &mut store,
                &ListFilter {
                    limit,
                    before,
                    all,
                    kind,
                    host,
                },
                json,
            ),
            ResultsCommand::Show { id, json } => show::show(&mut store, id, json),
            ResultsCommand::Compare { a, b, json } => compare(&mut store, a, b, json),
            ResultsCommand::Export { id, format, output } => export(&mut store, id, format, output),
        });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Fail::Usage(m)) => {
            eprintln!("linkperf: {m}");
            ExitCode::from(2)
        }
        Err(Fail::Run(m)) => {
            eprintln!("linkperf: {m}");
            ExitCode::from(1)
        }
    }
}

fn list(store: &mut Store, filter: &ListFilter, json_out: bool) -> Result<(), Fail> {
    if filter.limit < 1 {
        return Err(Fail::Usage("--limit must be at least 1".into()));
    }
    let entries = store.list(filter)?;
    if json_out {
        let rows: Vec<Value> = entries
            .iter()
            .map(|e| {
                json!({
                    "id": e.id, "kind": e.kind, "created_unix_ms": e.created_unix_ms,
                    "host": e.host, "sweep_id": e.parent,
                    "protocol": e.metrics.protocol, "direction": e.metrics.direction,
                    "sent_bits_per_second": e.metrics.sent_bps,
                    "received_bits_per_second": e.metrics.received_bps,
                    "loss_percent": e.metrics.loss_percent,
                    "rtt_mean_ms": e.metrics.rtt_mean_ms,
                    "rtt_p50_ms": e.rr.as_ref().and_then(|q| q.rtt_p50_ms),
                    "rtt_p99_ms": e.rr.as_ref().and_then(|q| q.rtt_p99_ms),
                    "transactions": e.rr.as_ref().and_then(|q| q.transactions),
                    "congestion": e.metrics.congestion,
                    "flows": e.metrics.flows, "hosts": e.metrics.hosts,
                    "interrupted": e.metrics.interrupted,
                    "status": e.sweep_status, "points": e.sweep_points,
                    "planned_runs": e.sweep_planned, "runs": e.sweep_runs,
                })
            })
            .collect();
        say!(
            "{}",
            serde_json::to_string_pretty(
                &json!({"schema": linkperf::report::SCHEMA, "entries": rows})
            )
            .expect("list serialises")
        );
        return Ok(());
    }
    if entries.is_empty() {
        say!(
            "no results in {}{}",
            store.location().describe(),
            if filter.before.is_some() {
                " on this page"
            } else {
                ""
            }
        );
        return Ok(());
    }
    say!(
        "{:>8}  {:<8}  {:<19}  {:<20}  summary",
        "id",
        "kind",
        "started (UTC)",
        "host"
    );
    for e in &entries {
        let summary = list_summary(e);
        let host: String = e.host.chars().take(20).collect();
        say!(
            "{:>8}  {:<8}  {:<19}  {:<20}  {summary}",
            e.id,
            e.kind,
            utc(e.created_unix_ms),
            host
        );
    }
    if entries.len() as i64 == filter.limit {
        let last = entries.last().map(|e| e.id).unwrap_or(0);
        say!("more: linkperf results list --before {last}");
    }
    Ok(())
}

/// The summary column of `results list` for one entry.
fn list_summary(e: &ListEntry) -> String {
    let m = &e.metrics;
    let mut s = match e.kind.as_str() {
        "sweep" => {
            return format!(
                "{}, {} points, {}/{} runs",
                e.sweep_status.as_deref().unwrap_or("?"),
                e.sweep_points.unwrap_or(0),
                e.sweep_runs.unwrap_or(0),
                e.sweep_planned.unwrap_or(0)
            )
        }
        "campaign" => format!(
            "{} flows, {} hosts, aggregate sent {} received {}",
            m.flows.map_or("-".into(), |n| n.to_string()),
            m.hosts.map_or("-".into(), |n| n.to_string()),
            rate(m.sent_bps),
            rate(m.received_bps)
        ),
        "rr" => {
            let q = e.rr.clone().unwrap_or_default();
            let ms = |v: Option<f64>| v.map_or("-".into(), |v| format!("{v:.3} ms"));
            format!(
                "{} {}: {} transactions, RTT p50 {}, p99 {}",
                m.protocol.as_deref().unwrap_or("-"),
                q.mode,
                q.transactions.unwrap_or(0),
                ms(q.rtt_p50_ms),
                ms(q.rtt_p99_ms)
            )
        }
        _ => format!(
            "{} {} received {}",
            m.protocol.as_deref().unwrap_or("-"),
            m.direction.as_deref().unwrap_or("-"),
            rate(m.received_bps)
        ),
    };
    if let Some(l) = m.loss_percent {
        s.push_str(&format!(", loss {l:.2}%"));
    }
    if let Some(p) = e.parent {
        s.push_str(&format!(" (sweep {p})"));
    }
    if m.interrupted {
        s.push_str(" (interrupted)");
    }
    s
}

/// The samples of one side of a comparison: parameters and per-run values.
struct Group {
    params: Value,
    runs: usize,
    received: Vec<f64>,
    sent: Vec<f64>,
    cpu_local: Vec<f64>,
    cpu_remote: Vec<f64>,
    rtt_mean: Vec<f64>,
    rtt_p50: Vec<f64>,
    rtt_p99: Vec<f64>,
}

fn group_of(runs: &[&RunRow], params: Value) -> Group {
    let col = |f: fn(&RunRow) -> Option<f64>| runs.iter().filter_map(|r| f(r)).collect();
    Group {
        params,
        runs: runs.len(),
        received: col(|r| r.metrics.received_bps),
        sent: col(|r| r.metrics.sent_bps),
        cpu_local: col(|r| r.metrics.cpu_local_percent),
        cpu_remote: col(|r| r.metrics.cpu_remote_percent),
        // A test's RTT is its congestion window's, not a latency measurement.
        rtt_mean: col(|r| r.rr.as_ref().and(r.metrics.rtt_mean_ms)),
        rtt_p50: col(|r| r.rr.as_ref()?.rtt_p50_ms),
        rtt_p99: col(|r| r.rr.as_ref()?.rtt_p99_ms),
    }
}

/// The params of the points of `side` that have runs and no counterpart
/// with runs in `other`: they cannot be compared, and are named.
fn unmatched(side: &[Group], other: &[Group]) -> Vec<Value> {
    side.iter()
        .filter(|x| x.runs > 0)
        .filter(|x| !other.iter().any(|y| y.runs > 0 && y.params == x.params))
        .map(|x| x.params.clone())
        .collect()
}

fn point_label(params: &Value) -> String {
    PointSummary {
        index: 0,
        params: params.clone(),
        run_ids: vec![],
        received: None,
        sent: None,
        cpu_local: None,
        cpu_remote: None,
        confidence_reached: None,
        predicted: None,
        simulated: None,
        simulated_run: None,
    }
    .label()
}

fn groups(store: &mut Store, id: i64) -> Result<Vec<Group>, Fail> {
    match store.entry_kind(id)? {
        None => Err(not_found(store, id)),
        Some(EntryKind::Sweep) => {
            let (sweep, runs) = load_sweep(store, id)?;
            Ok(sweep
                .points
                .iter()
                .enumerate()
                .map(|(k, p)| group_of(&sweep::point_runs(&runs, k), p.clone()))
                .collect())
        }
        Some(EntryKind::Run(_)) => {
            let run = store
                .run(id, false)?
                .ok_or_else(|| Fail::Run(format!("run {id} is missing from the archive")))?;
            Ok(vec![group_of(&[&run], json!({}))])
        }
    }
}

fn mean(v: &[f64]) -> Option<f64> {
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// Significance threshold of `compare`.
const ALPHA: f64 = 0.05;

/// One row per metric both sides of a pair have: means, difference and
/// Welch's t-test.
fn comparison_rows(pairs: &[(&Group, &Group)]) -> Vec<Value> {
    let mut rows = Vec::new();
    for (x, y) in pairs {
        let metrics: [(&str, &Vec<f64>, &Vec<f64>); 7] = [
            ("received_bits_per_second", &x.received, &y.received),
            ("sent_bits_per_second", &x.sent, &y.sent),
            ("cpu_local_percent", &x.cpu_local, &y.cpu_local),
            ("cpu_remote_percent", &x.cpu_remote, &y.cpu_remote),
            ("rtt_mean_ms", &x.rtt_mean, &y.rtt_mean),
            ("rtt_p50_ms", &x.rtt_p50, &y.rtt_p50),
            ("rtt_p99_ms", &x.rtt_p99, &y.rtt_p99),
        ];
        for (name, va, vb) in metrics {
            let (Some(ma), Some(mb)) = (mean(va), mean(vb)) else {
                continue;
            };
            let w = stats::welch(va, vb);
            rows.push(json!({
                "params": x.params,
                "metric": name,
                "a": {"n": va.len(), "mean": ma},
                "b": {"n": vb.len(), "mean": mb},
                "difference": mb - ma,
                "difference_percent": (ma != 0.0).then(|| 100.0 * (mb - ma) / ma),
                "welch": w,
                "significant": w.as_ref().map(|w| w.p < ALPHA),
            }));
        }
    }
    rows
}

fn compare(store: &mut Store, a: i64, b: i64, json_out: bool) -> Result<(), Fail> {
    let ga = groups(store, a)?;
    let gb = groups(store, b)?;
    let mut pairs: Vec<(&Group, &Group)> = Vec::new();
    if (ga.len() == 1) != (gb.len() == 1) {
        let (one, many, n) = if ga.len() == 1 {
            (a, b, gb.len())
        } else {
            (b, a, ga.len())
        };
        return Err(Fail::Usage(format!(
            "{one} has one point and {many} has {n}: compare runs with runs and sweeps with sweeps (or a one-point sweep)"
        )));
    }
    let (mut only_a, mut only_b) = (vec![], vec![]);
    if ga.len() == 1 && gb.len() == 1 {
        pairs.push((&ga[0], &gb[0]));
    } else {
        for x in ga.iter().filter(|x| x.runs > 0) {
            if let Some(y) = gb.iter().find(|y| y.runs > 0 && y.params == x.params) {
                pairs.push((x, y));
            }
        }
        only_a = unmatched(&ga, &gb);
        only_b = unmatched(&gb, &ga);
        if pairs.is_empty() {
            return Err(Fail::Usage(format!(
                "{a} and {b} have no point in common (same varied values) to compare"
            )));
        }
    }
    let rows = comparison_rows(&pairs);
    if json_out {
        say!(
            "{}",
            serde_json::to_string_pretty(&json!({
                "schema": linkperf::report::SCHEMA, "a": a, "b": b, "alpha": ALPHA, "rows": rows,
                "only_in_a": only_a, "only_in_b": only_b,
            }))
            .expect("comparison serialises")
        );
        return Ok(());
    }
    say!("compare {a} (A) with {b} (B): B - A; Welch's t-test where both have 2+ runs");
    let mut last_params = Value::Null;
    for r in &rows {
        if r["params"] != last_params {
            last_params = r["params"].clone();
            let label = point_label(&last_params);
            if !label.is_empty() {
                say!("{label}:");
            }
        }
        let metric = r["metric"].as_str().unwrap_or("");
        let fmt = |v: f64| {
            if metric.ends_with("bits_per_second") {
                linkperf_units::format_rate(v)
            } else if metric.ends_with("_ms") {
                format!("{v:.4} ms")
            } else {
                format!("{v:.1}%")
            }
        };
        let ma = r["a"]["mean"].as_f64().unwrap_or(0.0);
        let mb = r["b"]["mean"].as_f64().unwrap_or(0.0);
        let diff = r["difference"].as_f64().unwrap_or(0.0);
        let pct = r["difference_percent"]
            .as_f64()
            .map(|p| format!(" ({p:+.1}%)"))
            .unwrap_or_default();
        let sig = match r["welch"].get("p").and_then(Value::as_f64) {
            Some(p) if p < ALPHA => format!("significant (p = {p:.3})"),
            Some(p) => format!("not significant (p = {p:.3})"),
            None => "single runs: difference only".into(),
        };
        let sign = if diff < 0.0 { "-" } else { "+" };
        say!(
            "  {:<26} A {:>14} (n={})  B {:>14} (n={})  {sign}{}{pct}  {sig}",
            metric,
            fmt(ma),
            r["a"]["n"],
            fmt(mb),
            r["b"]["n"],
            fmt(diff.abs())
        );
    }
    for (side, id, points) in [("A", a, &only_a), ("B", b, &only_b)] {
        if !points.is_empty() {
            let labels: Vec<String> = points.iter().map(point_label).collect();
            say!(
                "only in {side} ({id}), not compared: {} point{}: {}",
                points.len(),
                if points.len() == 1 { "" } else { "s" },
                labels.join("; ")
            );
        }
    }
    Ok(())
}

fn run_json(r: &RunRow) -> Value {
    json!({
        "id": r.id,
        "sweep_id": r.slot.map(|s| s.sweep_id),
        "point": r.slot.map(|s| s.point),
        "repetition": r.slot.map(|s| s.repetition),
        "started_unix_ms": r.started_unix_ms,
        "kind": r.kind,
        "report": r.report,
    })
}

/// The export document (docs/archive.md).
fn export_json(store: &mut Store, id: i64) -> Result<Value, Fail> {
    match store.entry_kind(id)? {
        None => Err(not_found(store, id)),
        Some(EntryKind::Sweep) => {
            let sweep = store
                .sweep(id)?
                .ok_or_else(|| Fail::Run(format!("sweep {id} is missing")))?;
            let runs = store.sweep_runs(id, true)?;
            let twins = store.sweep_twins(id, true)?;
            let mut points = sweep::summarise(&sweep, &runs);
            sweep::twin::attach(&mut points, &twins);
            let spec = &sweep.spec;
            Ok(json!({
                "schema": linkperf::report::SCHEMA,
                "kind": "sweep",
                "id": id,
                "sweep": {
                    "id": id,
                    "created_unix_ms": sweep.created_unix_ms,
                    "host": sweep.host,
                    "vary": spec.get("vary"),
                    "repeat": spec.get("repeat"),
                    "order": spec.get("order"),
                    "seed": spec.get("seed"),
                    "confidence": spec.get("confidence"),
                    "base_options": spec.get("base_options"),
                    "status": sweep.status,
                },
                "points": points.iter().map(|p| json!({
                    "index": p.index,
                    "params": p.params,
                    "runs": p.run_ids,
                    "stats": p.stats_json(),
                })).collect::<Vec<_>>(),
                "runs": runs.iter().map(run_json).collect::<Vec<_>>(),
                "twins": twins.iter().map(run_json).collect::<Vec<_>>(),
            }))
        }
        Some(EntryKind::Run(_)) => {
            let run = store
                .run(id, true)?
                .ok_or_else(|| Fail::Run(format!("run {id} is missing")))?;
            if run.kind == "campaign" {
                // A campaign is stored whole: its document is the export.
                let mut doc = run.report.clone().unwrap_or(Value::Null);
                if let Some(obj) = doc.as_object_mut() {
                    obj.insert("kind".into(), json!("campaign"));
                    obj.insert("id".into(), json!(id));
                }
                return Ok(doc);
            }
            let twins = match run.slot {
                Some(slot) => store
                    .sweep_twins(slot.sweep_id, true)?
                    .into_iter()
                    .filter(|t| t.slot.map(|s| s.point) == Some(slot.point) && t.id != id)
                    .collect(),
                None => vec![],
            };
            Ok(json!({
                "schema": linkperf::report::SCHEMA,
                "kind": "run",
                "id": id,
                "sweep": null,
                "points": [],
                "runs": [run_json(&run)],
                "twins": twins.iter().map(run_json).collect::<Vec<_>>(),
            }))
        }
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The CSV columns: the run's place, the varied options, then its figures.
fn csv_header(param_names: &[String]) -> Vec<String> {
    let place = [
        "id",
        "sweep_id",
        "point",
        "repetition",
        "kind",
        "started_unix_ms",
        "host",
    ];
    let figures = [
        "protocol",
        "direction",
        "sent_bits_per_second",
        "received_bits_per_second",
        "loss_percent",
        "rtt_mean_ms",
        "cpu_local_percent",
        "cpu_remote_percent",
        "duration_s",
        "interrupted",
    ];
    place
        .iter()
        .map(|s| s.to_string())
        .chain(param_names.iter().cloned())
        .chain(figures.iter().map(|s| s.to_string()))
        .collect()
}

/// One run's cells, in [`csv_header`]'s order (unquoted).
fn csv_row(r: &RunRow, param_names: &[String], points: &[Value]) -> Vec<String> {
    let num = |v: Option<f64>| v.map(|x| x.to_string()).unwrap_or_default();
    let int = |v: Option<i64>| v.map(|x| x.to_string()).unwrap_or_default();
    let m = &r.metrics;
    let mut row = vec![
        r.id.to_string(),
        int(r.slot.map(|s| s.sweep_id)),
        int(r.slot.map(|s| s.point)),
        int(r.slot.map(|s| s.repetition)),
        r.kind.clone(),
        r.started_unix_ms.to_string(),
        r.host.clone(),
    ];
    let params = r
        .slot
        .and_then(|s| points.get(s.point as usize))
        .cloned()
        .unwrap_or(Value::Null);
    for n in param_names {
        row.push(
            params
                .get(n)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string(),
        );
    }
    row.extend([
        m.protocol.clone().unwrap_or_default(),
        m.direction.clone().unwrap_or_default(),
        num(m.sent_bps),
        num(m.received_bps),
        num(m.loss_percent),
        num(m.rtt_mean_ms),
        num(m.cpu_local_percent),
        num(m.cpu_remote_percent),
        num(m.duration_s),
        m.interrupted.to_string(),
    ]);
    row
}

fn export_csv(store: &mut Store, id: i64) -> Result<String, Fail> {
    let (runs, param_names, points): (Vec<RunRow>, Vec<String>, Vec<Value>) =
        match store.entry_kind(id)? {
            None => return Err(not_found(store, id)),
            Some(EntryKind::Sweep) => {
                let (sweep, runs) = load_sweep(store, id)?;
                let names = sweep
                    .spec
                    .get("vary")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|v| v.get("name")?.as_str().map(String::from))
                            .collect()
                    })
                    .unwrap_or_default();
                // The points' ns-3 twins (`--simulate`) last, at repetition -1.
                let mut runs = runs;
                runs.extend(store.sweep_twins(id, false)?);
                (runs, names, sweep.points)
            }
            Some(EntryKind::Run(_)) => {
                let run = store
                    .run(id, false)?
                    .ok_or_else(|| Fail::Run(format!("run {id} is missing")))?;
                (vec![run], vec![], vec![])
            }
        };
    let mut out = csv_header(&param_names).join(",");
    out.push('\n');
    for r in &runs {
        let cells: Vec<String> = csv_row(r, &param_names, &points)
            .iter()
            .map(|c| csv_field(c))
            .collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    Ok(out)
}

fn export(
    store: &mut Store,
    id: i64,
    format: ExportFormat,
    output: Option<PathBuf>,
) -> Result<(), Fail> {
    let text = match format {
        ExportFormat::Json => {
            let mut t =
                serde_json::to_string_pretty(&export_json(store, id)?).expect("export serialises");
            t.push('\n');
            t
        }
        ExportFormat::Csv => export_csv(store, id)?,
    };
    match output {
        Some(path) => std::fs::write(&path, text)
            .map_err(|e| Fail::Run(format!("cannot write {}: {e}", path.display()))),
        None => {
            say_raw!("{text}");
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_dates() {
        assert_eq!(utc(0), "1970-01-01 00:00:00");
        assert_eq!(utc(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(utc(1_700_000_000_123), "2023-11-14 22:13:20");
    }

    #[test]
    fn csv_quotes_only_when_needed() {
        assert_eq!(csv_field("a"), "a");
        assert_eq!(csv_field("a,b"), "\"a,b\"");
        assert_eq!(csv_field("say \"x\""), "\"say \"\"x\"\"\"");
    }
}
