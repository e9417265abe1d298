//! The dashboard's data: the archive's latest result of every job judged
//! against its test's thresholds, the latest alerts, and one pair's series,
//! handed to the report crate's pages.

use super::schedule::{MonitorTest, Schedule, Thresholds};
use linkperf_report::{AlertLine, Dashboard, Grid, GridCell, PairSeries, SeriesPoint, Verdict};
use linkperf_store::{MonitorAlert, MonitorResult, Store};

const WEEK_MS: i64 = 7 * 24 * 3600 * 1000;

/// The series page's address for a pair.
pub fn series_href(test: &str, src: &str, dst: &str) -> String {
    format!(
        "series?test={}&src={}&dst={}",
        encode(test),
        encode(src),
        encode(dst)
    )
}

/// Percent-encodes a query value (names are mostly plain).
fn encode(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

fn alert_line(a: &MonitorAlert) -> AlertLine {
    AlertLine {
        unix_ms: a.unix_ms,
        test: a.test.clone(),
        src: a.src.clone(),
        dst: a.dst.clone(),
        kind: a.kind.clone(),
        message: a.message.clone(),
        href: series_href(&a.test, &a.src, &a.dst),
    }
}

/// A result against thresholds, with the reasons it crossed them.
fn judge(r: &MonitorResult, t: &Thresholds, median: Option<f64>) -> (Verdict, String) {
    if !r.ok {
        return (Verdict::Failed, r.reason.clone().unwrap_or_default());
    }
    let mut why = Vec::new();
    if let (Some(p), Some(m), Some(v)) = (t.throughput_below_percent, median, r.throughput_bps) {
        if v < m * p / 100.0 {
            why.push(format!("throughput below {p} % of the week's median"));
        }
    }
    if let (Some(l), Some(v)) = (t.loss_above_ratio, r.loss_ratio) {
        if v > l {
            why.push(format!("loss {:.3} % above {:.3} %", v * 100.0, l * 100.0));
        }
    }
    if let (Some(l), Some(v)) = (t.rtt_p99_above_s, r.rtt_p99_s) {
        if v > l {
            why.push(format!("RTT p99 {:.3} ms above {:.3} ms", v * 1e3, l * 1e3));
        }
    }
    if why.is_empty() {
        (Verdict::Ok, "within the thresholds".into())
    } else {
        (Verdict::Alert, why.join("; "))
    }
}

fn cell_text(r: &MonitorResult) -> String {
    if !r.ok {
        return "failed".into();
    }
    match (r.throughput_bps, r.loss_ratio, r.rtt_p99_s) {
        (Some(bps), Some(loss), _) => format!("{:.1} Mbit/s, {:.2} %", bps / 1e6, loss * 100.0),
        (Some(bps), None, _) => format!("{:.1} Mbit/s", bps / 1e6),
        // A latency (rr) test.
        (None, Some(loss), Some(p99)) => format!("p99 {:.2} ms, {:.2} %", p99 * 1e3, loss * 100.0),
        (None, None, Some(p99)) => format!("p99 {:.2} ms", p99 * 1e3),
        _ => "ok".into(),
    }
}

/// What a test runs, in a line: "UDP at 40.0 Mbit/s, 1 s every 60 s ...".
fn describe(test: &MonitorTest) -> String {
    let (what, seconds) = match &test.rr {
        Some(rr) => {
            let size = |v: Option<u64>| v.unwrap_or(crate::rr::DEFAULT_SIZE.into());
            let rate = rr
                .rate
                .as_deref()
                .map(|r| format!(", {r}"))
                .unwrap_or_default();
            let what = format!(
                "{} request/response, {} / {} bytes{rate}",
                format!("{:?}", rr.protocol).to_uppercase(),
                size(rr.request),
                size(rr.response)
            );
            (what, rr.duration_s)
        }
        None => {
            let rate = test
                .spec
                .bitrate
                .map(|b| format!(" at {:.1} Mbit/s", b as f64 / 1e6))
                .unwrap_or_default();
            let what = format!("{:?}", test.spec.protocol).to_uppercase() + &rate;
            (what, test.spec.time)
        }
    };
    format!(
        "{what}, {seconds} s every {} s (slip up to {} s).",
        test.interval_s, test.slip_s
    )
}

pub fn dashboard(schedule: &Schedule, store: &mut Store, now_ms: i64) -> Result<Dashboard, String> {
    let latest = store.monitor_latest().map_err(|e| e.to_string())?;
    let mut grids = Vec::new();
    for (ti, test) in schedule.tests.iter().enumerate() {
        let mut hosts: Vec<String> = Vec::new();
        let mut cells = Vec::new();
        for job in schedule.jobs.iter().filter(|j| j.test == ti) {
            for h in [&job.src, &job.dst] {
                if !hosts.contains(h) {
                    hosts.push(h.clone());
                }
            }
            let r = latest
                .iter()
                .find(|r| r.test == test.name && r.src == job.src && r.dst == job.dst);
            let (verdict, detail, text) = match r {
                Some(r) => {
                    let median = store
                        .monitor_median_throughput(&test.name, &job.src, &job.dst, now_ms - WEEK_MS)
                        .map_err(|e| e.to_string())?;
                    let (v, d) = judge(r, &test.thresholds, median);
                    (v, d, cell_text(r))
                }
                None => (Verdict::None, "not run yet".into(), "-".into()),
            };
            cells.push(GridCell {
                src: job.src.clone(),
                dst: job.dst.clone(),
                verdict,
                text,
                detail,
                href: series_href(&test.name, &job.src, &job.dst),
            });
        }
        grids.push(Grid {
            test: test.name.clone(),
            description: describe(test),
            hosts,
            cells,
        });
    }
    let alerts = store.monitor_alerts(None, 20).map_err(|e| e.to_string())?;
    Ok(Dashboard {
        title: "linkperf monitor".into(),
        generated_unix_ms: now_ms,
        grids,
        alerts: alerts.iter().map(alert_line).collect(),
    })
}

pub fn series(
    store: &mut Store,
    test: &str,
    src: &str,
    dst: &str,
    now_ms: i64,
) -> Result<PairSeries, String> {
    let rows = store
        .monitor_series(test, src, dst, now_ms - 30 * 24 * 3600 * 1000)
        .map_err(|e| e.to_string())?;
    let alerts = store
        .monitor_alerts(Some((test, src, dst)), 200)
        .map_err(|e| e.to_string())?;
    Ok(PairSeries {
        test: test.into(),
        src: src.into(),
        dst: dst.into(),
        points: rows
            .iter()
            .map(|r| SeriesPoint {
                unix_ms: r.started_unix_ms,
                ok: r.ok,
                reason: r.reason.clone(),
                throughput_bps: r.throughput_bps,
                loss_ratio: r.loss_ratio,
                rtt_mean_s: r.rtt_mean_s,
                rtt_p99_s: r.rtt_p99_s,
            })
            .collect(),
        alerts: alerts.iter().map(alert_line).collect(),
        back: "./".into(),
    })
}
