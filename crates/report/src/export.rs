//! The archive export, read and checked against its schema (`SCHEMA`): required fields fail with one line
//! naming the field; unknown fields are ignored; optional ones may be absent.

use crate::error::ReportError;
use serde_json::Value;

/// The JSON schema an export must carry.
pub const SCHEMA: &str = "linkperf/1";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Sweep,
    Run,
    Campaign,
}

/// One varied parameter of a sweep.
#[derive(Debug, Clone)]
pub struct Vary {
    pub name: String,
    pub values: Vec<String>,
    pub geometric: Option<bool>,
}

#[derive(Debug, Clone)]
pub struct SweepMeta<'a> {
    pub id: Option<String>,
    pub created_unix_ms: Option<i64>,
    pub host: Option<String>,
    pub vary: Vec<Vary>,
    pub repeat: Option<u64>,
    pub order: Option<String>,
    pub seed: Option<String>,
    pub status: Option<String>,
    pub base_options: Option<&'a Value>,
    pub raw: &'a Value,
}

/// Summary statistics of one measure at one point.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Stat {
    pub mean: Option<f64>,
    pub stddev: Option<f64>,
    pub min: Option<f64>,
    pub max: Option<f64>,
    pub median: Option<f64>,
    pub ci_low: Option<f64>,
    pub ci_high: Option<f64>,
    /// Confidence level in percent, when the export says.
    pub level: Option<f64>,
    pub n: Option<u64>,
}

impl Stat {
    fn parse(v: Option<&Value>) -> Option<Stat> {
        let v = v?.as_object()?;
        let f = |k: &str| v.get(k).and_then(Value::as_f64);
        let s = Stat {
            mean: f("mean"),
            stddev: f("stddev"),
            min: f("min"),
            max: f("max"),
            median: f("median"),
            ci_low: f("ci_low"),
            ci_high: f("ci_high"),
            level: f("confidence").or(f("level")).or(f("ci_level")),
            n: v.get("n")
                .or(v.get("count"))
                .or(v.get("runs"))
                .and_then(Value::as_u64),
        };
        s.mean.map(|_| s)
    }

    /// Mean, standard deviation, min, max and median of `values` (no CI:
    /// the export's own interval is used when it has one).
    pub fn of(values: &[f64]) -> Option<Stat> {
        if values.is_empty() {
            return None;
        }
        let n = values.len() as f64;
        let mean = values.iter().sum::<f64>() / n;
        let stddev = if values.len() > 1 {
            (values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let mid = sorted.len() / 2;
        let median = if sorted.len() & 1 == 0 {
            (sorted[mid - 1] + sorted[mid]) / 2.0
        } else {
            sorted[mid]
        };
        Some(Stat {
            mean: Some(mean),
            stddev: Some(stddev),
            min: sorted.first().copied(),
            max: sorted.last().copied(),
            median: Some(median),
            ci_low: None,
            ci_high: None,
            level: None,
            n: Some(values.len() as u64),
        })
    }
}

#[derive(Debug, Clone, Default)]
pub struct Stats {
    pub received: Option<Stat>,
    pub sent: Option<Stat>,
    pub cpu_local: Option<Stat>,
    pub cpu_remote: Option<Stat>,
    /// The model's prediction for the point (bit/s), when its runs carry one.
    pub predicted: Option<f64>,
    /// The received throughput of the point's ns-3 twin (`sweep --simulate`).
    pub simulated: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct PointData {
    pub index: usize,
    /// (name, value) in the sweep's vary order, then any others.
    pub params: Vec<(String, String)>,
    pub runs: Vec<i64>,
    pub stats: Stats,
    /// With --confidence: whether the interval got as narrow as asked.
    pub confidence_reached: Option<bool>,
}

impl PointData {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Debug, Clone)]
pub struct RunData<'a> {
    pub id: i64,
    pub point: Option<u64>,
    pub repetition: Option<u64>,
    pub started_unix_ms: Option<i64>,
    pub kind: Option<String>,
    pub report: &'a Value,
}

#[derive(Debug, Clone)]
pub struct Flow {
    pub from: String,
    pub to: String,
    pub sent: Option<f64>,
    pub received: Option<f64>,
    /// The model's prediction for the flow (its fair share of a shared bottleneck).
    pub predicted: Option<f64>,
    /// The flow's ns-3 twin (`campaign run --simulate`): its received rate
    /// and its (start, end, bits/s) intervals.
    pub simulated: Option<f64>,
    pub simulated_intervals: Vec<(f64, f64, f64)>,
}

/// One aggregate interval of a campaign phase.
#[derive(Debug, Clone, Copy)]
pub struct AggInterval {
    pub start: Option<f64>,
    pub end: Option<f64>,
    /// Received, summed over the flows.
    pub bits_per_second: f64,
    /// Sent, summed over the flows, when the export has it.
    pub sent: Option<f64>,
}

/// One host's totals in a campaign phase.
#[derive(Debug, Clone)]
pub struct HostRow {
    pub name: String,
    pub sent: Option<f64>,
    pub received: Option<f64>,
    pub peers_sent: Option<f64>,
    pub shortfall_percent: Option<f64>,
}

/// A campaign's own finding ("flow_short", "session_outlier", ...).
#[derive(Debug, Clone)]
pub struct Flag {
    pub kind: String,
    pub phase: Option<String>,
    pub session: Option<String>,
    pub subject: Option<String>,
    pub message: String,
}

#[derive(Debug, Clone)]
pub struct Phase {
    pub name: String,
    pub session: Option<String>,
    pub intervals: Vec<AggInterval>,
    pub flows: Vec<Flow>,
    pub hosts: Vec<HostRow>,
    /// Target rate per flow (bits/s), when the export says.
    pub target: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct Export<'a> {
    pub kind: Kind,
    pub id: String,
    pub sweep: Option<SweepMeta<'a>>,
    pub points: Vec<PointData>,
    pub runs: Vec<RunData<'a>>,
    /// The simulated twins of the runs or points (`--simulate`), each
    /// with its point.
    pub twins: Vec<RunData<'a>>,
    pub phases: Vec<Phase>,
    pub flags: Vec<Flag>,
    pub campaign_name: Option<String>,
    pub raw: &'a Value,
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn missing(path: &str) -> ReportError {
    ReportError::new(format!(
        "export is missing the required field `{path}` (is it a `linkperf results export --format json` file?)"
    ))
}

fn wrong(path: &str, want: &str, got: &Value) -> ReportError {
    ReportError::new(format!(
        "export field `{path}` must be {want}, not {}",
        type_name(got)
    ))
}

fn req<'a>(v: &'a Value, key: &str, path: &str) -> Result<&'a Value, ReportError> {
    match v.get(key) {
        Some(x) if !x.is_null() => Ok(x),
        _ => Err(missing(path)),
    }
}

fn req_array<'a>(v: &'a Value, key: &str, path: &str) -> Result<&'a Vec<Value>, ReportError> {
    let x = req(v, key, path)?;
    x.as_array().ok_or_else(|| wrong(path, "an array", x))
}

fn req_text(v: &Value, key: &str, path: &str) -> Result<String, ReportError> {
    let x = req(v, key, path)?;
    scalar_text(x).ok_or_else(|| wrong(path, "a string or number", x))
}

fn req_i64(v: &Value, key: &str, path: &str) -> Result<i64, ReportError> {
    let x = req(v, key, path)?;
    x.as_i64().ok_or_else(|| wrong(path, "an integer", x))
}

/// A string, number or boolean as text; None for arrays, objects, null.
pub fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

fn opt_text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(scalar_text)
}

fn check_schema(v: &Value) -> Result<(), ReportError> {
    if !v.is_object() {
        return Err(ReportError::new(format!(
            "export must be a JSON object, not {}",
            type_name(v)
        )));
    }
    let schema = req(v, "schema", "schema")?;
    let schema = schema
        .as_str()
        .ok_or_else(|| wrong("schema", "a string", schema))?;
    if schema == SCHEMA {
        return Ok(());
    }
    if let Some(version) = schema.strip_prefix("linkperf/") {
        if version.parse::<u32>().map(|n| n > 1).unwrap_or(false) {
            return Err(ReportError::new(format!(
                "export schema '{schema}' is newer than this linkperf understands ({}): upgrade linkperf",
                SCHEMA
            )));
        }
    }
    Err(ReportError::new(format!(
        "not a linkperf export: schema is '{schema}', expected '{}'",
        SCHEMA
    )))
}

impl<'a> Export<'a> {
    pub fn parse(v: &'a Value) -> Result<Export<'a>, ReportError> {
        check_schema(v)?;
        // A campaign's own -J document has no kind but phases.
        let campaign_doc = v.get("kind").is_none_or(Value::is_null)
            && v.get("phases").is_some_and(Value::is_array);
        let kind = if campaign_doc {
            Kind::Campaign
        } else {
            let kind_text = req(v, "kind", "kind")?;
            match kind_text.as_str() {
                Some("sweep") => Kind::Sweep,
                Some("run") => Kind::Run,
                Some("campaign") => Kind::Campaign,
                Some(other) => {
                    return Err(ReportError::new(format!(
                        "export kind '{other}' is not one of sweep, run, campaign"
                    )))
                }
                None => return Err(wrong("kind", "a string", kind_text)),
            }
        };
        let id = req_text(v, "id", "id")?;
        let runs = match v.get("runs") {
            None | Some(Value::Null) if kind == Kind::Campaign => Vec::new(),
            _ => req_array(v, "runs", "runs")?
                .iter()
                .enumerate()
                .map(|(i, r)| parse_run(r, i))
                .collect::<Result<Vec<_>, _>>()?,
        };
        let twins = match v.get("twins").and_then(Value::as_array) {
            Some(a) => a
                .iter()
                .enumerate()
                .map(|(i, r)| parse_run(r, i))
                .collect::<Result<Vec<_>, _>>()?,
            None => Vec::new(),
        };
        let mut export = Export {
            kind,
            id,
            sweep: None,
            points: Vec::new(),
            runs,
            twins,
            phases: Vec::new(),
            flags: Vec::new(),
            campaign_name: None,
            raw: v,
        };
        match kind {
            Kind::Sweep => {
                let sweep = req(v, "sweep", "sweep")?;
                if !sweep.is_object() {
                    return Err(wrong("sweep", "an object", sweep));
                }
                let meta = parse_sweep(sweep)?;
                let points = req_array(v, "points", "points")?;
                export.points = points
                    .iter()
                    .enumerate()
                    .map(|(i, p)| parse_point(p, i, &meta.vary))
                    .collect::<Result<_, _>>()?;
                export.sweep = Some(meta);
                export.fill_missing_stats();
            }
            Kind::Run => {
                if export.runs.is_empty() {
                    return Err(ReportError::new(
                        "export of kind 'run' has no runs: nothing to report",
                    ));
                }
            }
            Kind::Campaign => {
                let phases = req_array(v, "phases", "phases")?;
                export.phases = phases
                    .iter()
                    .enumerate()
                    .map(|(i, p)| parse_phase(p, i))
                    .collect::<Result<_, _>>()?;
                export.flags = v
                    .get("flags")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(parse_flag).collect())
                    .unwrap_or_default();
                export.campaign_name = v
                    .get("campaign")
                    .and_then(|c| opt_text(c, "name"))
                    .or_else(|| opt_text(v, "name"));
            }
        }
        Ok(export)
    }

    /// Points without stats in the export get them from their runs' reports.
    fn fill_missing_stats(&mut self) {
        for i in 0..self.points.len() {
            let runs = self.runs_of(&self.points[i]);
            let pick = |ptr: &str| -> Vec<f64> {
                runs.iter()
                    .filter_map(|r| r.report.pointer(ptr).and_then(Value::as_f64))
                    .collect()
            };
            let stats = &self.points[i].stats;
            let fill = [
                stats
                    .received
                    .is_none()
                    .then(|| pick("/summary/received/bits_per_second")),
                stats
                    .sent
                    .is_none()
                    .then(|| pick("/summary/sent/bits_per_second")),
                stats
                    .cpu_local
                    .is_none()
                    .then(|| pick("/summary/cpu/local/total_percent")),
                stats
                    .cpu_remote
                    .is_none()
                    .then(|| pick("/summary/cpu/remote/total_percent")),
            ];
            let [r, s, cl, cr] = fill;
            let predicted = stats
                .predicted
                .is_none()
                .then(|| pick("/summary/prediction/value"))
                .and_then(|v| Stat::of(&v))
                .and_then(|s| s.mean);
            let twin = self
                .twins
                .iter()
                .find(|t| t.point == Some(self.points[i].index as u64));
            let simulated = twin.and_then(|t| {
                t.report
                    .pointer("/summary/received/bits_per_second")
                    .and_then(Value::as_f64)
            });
            let stats = &mut self.points[i].stats;
            stats.simulated = stats.simulated.or(simulated);
            if predicted.is_some() {
                stats.predicted = predicted;
            }
            if let Some(v) = r {
                stats.received = Stat::of(&v);
            }
            if let Some(v) = s {
                stats.sent = Stat::of(&v);
            }
            if let Some(v) = cl {
                stats.cpu_local = Stat::of(&v);
            }
            if let Some(v) = cr {
                stats.cpu_remote = Stat::of(&v);
            }
        }
    }

    /// The runs measured for a point: by the point's run ids, else by index.
    pub fn runs_of(&self, p: &PointData) -> Vec<&RunData<'a>> {
        if !p.runs.is_empty() {
            self.runs
                .iter()
                .filter(|r| p.runs.contains(&r.id))
                .collect()
        } else {
            self.runs
                .iter()
                .filter(|r| r.point == Some(p.index as u64))
                .collect()
        }
    }
}

fn parse_run(r: &Value, i: usize) -> Result<RunData<'_>, ReportError> {
    let path = |k: &str| format!("runs[{i}].{k}");
    let id = req_i64(r, "id", &path("id"))?;
    let report = req(r, "report", &path("report"))?;
    if !report.is_object() {
        return Err(wrong(&path("report"), "an object", report));
    }
    Ok(RunData {
        id,
        point: r.get("point").and_then(Value::as_u64),
        repetition: r.get("repetition").and_then(Value::as_u64),
        started_unix_ms: r.get("started_unix_ms").and_then(Value::as_i64),
        kind: opt_text(r, "kind"),
        report,
    })
}

fn parse_sweep(s: &Value) -> Result<SweepMeta<'_>, ReportError> {
    let vary = req_array(s, "vary", "sweep.vary")?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let path = |k: &str| format!("sweep.vary[{i}].{k}");
            let name = req_text(v, "name", &path("name"))?;
            let values = req_array(v, "values", &path("values"))?
                .iter()
                .map(|x| scalar_text(x).ok_or_else(|| wrong(&path("values"), "strings", x)))
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Vary {
                name,
                values,
                geometric: v.get("geometric").and_then(Value::as_bool),
            })
        })
        .collect::<Result<Vec<_>, ReportError>>()?;
    Ok(SweepMeta {
        id: opt_text(s, "id"),
        created_unix_ms: s.get("created_unix_ms").and_then(Value::as_i64),
        host: opt_text(s, "host"),
        vary,
        repeat: s.get("repeat").and_then(Value::as_u64),
        order: opt_text(s, "order"),
        seed: opt_text(s, "seed"),
        status: opt_text(s, "status"),
        base_options: s.get("base_options").filter(|b| b.is_object()),
        raw: s,
    })
}

fn parse_point(p: &Value, i: usize, vary: &[Vary]) -> Result<PointData, ReportError> {
    let path = |k: &str| format!("points[{i}].{k}");
    let params_v = req(p, "params", &path("params"))?;
    let obj = params_v
        .as_object()
        .ok_or_else(|| wrong(&path("params"), "an object", params_v))?;
    let mut params = Vec::new();
    for v in vary {
        match obj.get(&v.name) {
            Some(x) => params.push((
                v.name.clone(),
                scalar_text(x).ok_or_else(|| wrong(&path("params"), "strings", x))?,
            )),
            None => return Err(missing(&format!("points[{i}].params.{}", v.name))),
        }
    }
    for (k, x) in obj {
        if !vary.iter().any(|v| &v.name == k) {
            params.push((k.clone(), scalar_text(x).unwrap_or_else(|| x.to_string())));
        }
    }
    let stats = p.get("stats");
    let stat = |k: &str| Stat::parse(stats.and_then(|s| s.get(k)));
    Ok(PointData {
        index: p
            .get("index")
            .and_then(Value::as_u64)
            .map(|x| x as usize)
            .unwrap_or(i),
        params,
        runs: p
            .get("runs")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default(),
        confidence_reached: p.get("confidence_reached").and_then(Value::as_bool),
        stats: Stats {
            received: stat("received_bits_per_second"),
            sent: stat("sent_bits_per_second"),
            cpu_local: stat("cpu_local_percent"),
            cpu_remote: stat("cpu_remote_percent"),
            predicted: stats
                .and_then(|s| s.get("predicted_bits_per_second"))
                .and_then(Value::as_f64),
            simulated: stats
                .and_then(|s| s.get("simulated_bits_per_second"))
                .and_then(Value::as_f64),
        },
    })
}

/// A campaign flow's `simulated.intervals` as (start, end, bits/s).
fn simulated_intervals(f: &Value) -> Vec<(f64, f64, f64)> {
    let Some(a) = f.pointer("/simulated/intervals").and_then(Value::as_array) else {
        return Vec::new();
    };
    a.iter()
        .filter_map(|iv| {
            let n = |k: &str| iv.get(k).and_then(Value::as_f64);
            Some((n("start")?, n("end")?, n("bits_per_second")?))
        })
        .collect()
}

fn rate_of(v: Option<&Value>) -> Option<f64> {
    let v = v?;
    v.as_f64()
        .or_else(|| v.get("bits_per_second").and_then(Value::as_f64))
}

fn parse_phase(p: &Value, i: usize) -> Result<Phase, ReportError> {
    let path = |k: &str| format!("phases[{i}].{k}");
    let name = req_text(p, "name", &path("name"))?;
    let intervals = match p.get("aggregate").and_then(|a| a.get("intervals")) {
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(k, iv)| {
                let bps = iv
                    .get("received_bits_per_second")
                    .or_else(|| iv.get("bits_per_second"))
                    .or_else(|| iv.get("received").and_then(|r| r.get("bits_per_second")))
                    .and_then(Value::as_f64)
                    .ok_or_else(|| {
                        missing(&format!(
                            "phases[{i}].aggregate.intervals[{k}].bits_per_second"
                        ))
                    })?;
                Ok(AggInterval {
                    start: iv.get("start").and_then(Value::as_f64),
                    end: iv.get("end").and_then(Value::as_f64),
                    bits_per_second: bps,
                    sent: iv
                        .get("sent_bits_per_second")
                        .or_else(|| iv.get("sent").and_then(|r| r.get("bits_per_second")))
                        .and_then(Value::as_f64),
                })
            })
            .collect::<Result<Vec<_>, ReportError>>()?,
        Some(other) => return Err(wrong(&path("aggregate.intervals"), "an array", other)),
        None => Vec::new(),
    };
    let flows = match p.get("flows") {
        Some(Value::Array(a)) => a
            .iter()
            .enumerate()
            .map(|(k, f)| {
                let fp = |x: &str| format!("phases[{i}].flows[{k}].{x}");
                Ok(Flow {
                    from: req_text(f, "from", &fp("from"))?,
                    to: req_text(f, "to", &fp("to"))?,
                    sent: rate_of(f.get("sent")),
                    received: rate_of(f.get("received")),
                    predicted: f
                        .pointer("/predicted/bits_per_second")
                        .and_then(Value::as_f64),
                    simulated: f
                        .pointer("/simulated/bits_per_second")
                        .and_then(Value::as_f64),
                    simulated_intervals: simulated_intervals(f),
                })
            })
            .collect::<Result<Vec<_>, ReportError>>()?,
        Some(other) => return Err(wrong(&path("flows"), "an array", other)),
        None => Vec::new(),
    };
    let hosts = p
        .get("hosts")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|h| {
                    let g = |k: &str| h.get(k).and_then(Value::as_f64);
                    Some(HostRow {
                        name: opt_text(h, "name")?,
                        sent: g("sent_bits_per_second"),
                        received: g("received_bits_per_second"),
                        peers_sent: g("peers_sent_bits_per_second"),
                        shortfall_percent: g("shortfall_percent"),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(Phase {
        hosts,
        name,
        session: opt_text(p, "session"),
        intervals,
        flows,
        target: p
            .get("bitrate")
            .or_else(|| p.get("target_bits_per_second"))
            .and_then(Value::as_f64),
    })
}

fn parse_flag(f: &Value) -> Option<Flag> {
    Some(Flag {
        kind: opt_text(f, "kind").unwrap_or_else(|| "flag".into()),
        phase: opt_text(f, "phase"),
        session: opt_text(f, "session"),
        subject: opt_text(f, "subject"),
        message: opt_text(f, "message")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn err(v: Value) -> String {
        Export::parse(&v).unwrap_err().to_string()
    }

    #[test]
    fn required_fields_fail_with_one_line_naming_them() {
        assert!(err(json!([])).contains("must be a JSON object"));
        assert!(err(json!({})).contains("`schema`"));
        assert!(err(json!({"schema": "linkperf/2", "kind": "run"})).contains("newer"));
        assert!(err(json!({"schema": "iperf3"})).contains("not a linkperf export"));
        assert!(err(json!({"schema": "linkperf/1"})).contains("`kind`"));
        assert!(err(json!({"schema": "linkperf/1", "kind": "x", "id": 1})).contains("'x'"));
        assert!(err(json!({"schema": "linkperf/1", "kind": "run"})).contains("`id`"));
        assert!(err(json!({"schema": "linkperf/1", "kind": "run", "id": 1})).contains("`runs`"));
        let e = err(json!({"schema": "linkperf/1", "kind": "run", "id": 1, "runs": [{"id": 3}]}));
        assert!(e.contains("`runs[0].report`"), "{e}");
        let e = err(
            json!({"schema": "linkperf/1", "kind": "sweep", "id": 1, "runs": [],
            "sweep": {"vary": [{"name": "window", "values": ["4K"]}]},
            "points": [{"params": {"length": "1K"}}]}),
        );
        assert!(e.contains("`points[0].params.window`"), "{e}");
        let e = err(json!({"schema": "linkperf/1", "kind": "campaign", "id": 1,
            "phases": [{"name": "a", "flows": [{"from": "h1"}]}]}));
        assert!(e.contains("`phases[0].flows[0].to`"), "{e}");
        assert!(!e.contains('\n'));
    }

    #[test]
    fn stats_come_from_runs_when_the_export_has_none() {
        let report = |bps: f64| {
            json!({"summary": {"received": {"bits_per_second": bps},
            "sent": {"bits_per_second": bps + 1.0}}})
        };
        let v = json!({"schema": "linkperf/1", "kind": "sweep", "id": 7,
            "sweep": {"vary": [{"name": "P", "values": [1, 2]}], "extra": true},
            "points": [{"index": 0, "params": {"P": 1}, "runs": [10, 11]}],
            "runs": [{"id": 10, "point": 0, "report": report(100.0)},
                     {"id": 11, "point": 0, "report": report(300.0)}],
            "unknown": {"ignored": 1}});
        let e = Export::parse(&v).unwrap();
        let r = e.points[0].stats.received.clone().unwrap();
        assert_eq!(r.mean, Some(200.0));
        assert_eq!(r.min, Some(100.0));
        assert_eq!(r.max, Some(300.0));
        assert!((r.stddev.unwrap() - 141.421356).abs() < 1e-3);
        assert_eq!(e.points[0].param("P"), Some("1"));
        assert_eq!(e.points[0].stats.sent.clone().unwrap().mean, Some(201.0));
    }
}
