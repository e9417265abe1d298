//! What the controller has measured so far, kept in memory for `/metrics`,
//! and its rendering in Prometheus's text exposition format (version
//! 0.0.4): gauges of each pair's latest figures in base units (bits/s,
//! ratio, seconds) and counters of runs, failures and alerts.

use linkperf_store::{MonitorAlert, MonitorResult};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// (test, src, dst)
pub type PairKey = (String, String, String);

#[derive(Default)]
pub struct Live {
    pub latest: BTreeMap<PairKey, MonitorResult>,
    pub runs: BTreeMap<PairKey, u64>,
    pub failures: BTreeMap<PairKey, u64>,
    pub alerts: BTreeMap<(PairKey, String), u64>,
    /// Results waiting in the spool for the database.
    pub spooled: usize,
}

impl Live {
    pub fn record(&mut self, r: &MonitorResult, alerts: &[MonitorAlert]) {
        let key = (r.test.clone(), r.src.clone(), r.dst.clone());
        *self.runs.entry(key.clone()).or_default() += 1;
        if !r.ok {
            *self.failures.entry(key.clone()).or_default() += 1;
        }
        for a in alerts {
            *self
                .alerts
                .entry((key.clone(), a.kind.clone()))
                .or_default() += 1;
        }
        self.latest.insert(key, r.clone());
    }
}

/// A label value escaped as the exposition format asks.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

fn labels(k: &PairKey) -> String {
    format!(
        "test=\"{}\",src=\"{}\",dst=\"{}\"",
        escape(&k.0),
        escape(&k.1),
        escape(&k.2)
    )
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// The exposition text.
pub fn render(live: &Live) -> String {
    let mut out = String::new();
    type Get = fn(&MonitorResult) -> Option<f64>;
    let gauges: [(&str, &str, Get); 4] = [
        (
            "linkperf_throughput_bits_per_second",
            "Received throughput of the pair's latest successful test.",
            |r| r.throughput_bps,
        ),
        (
            "linkperf_loss_ratio",
            "Datagrams (UDP rr: transactions) lost in the pair's latest successful UDP test (0..1).",
            |r| r.loss_ratio,
        ),
        (
            "linkperf_rtt_mean_seconds",
            "Mean RTT of the pair's latest successful test: smoothed TCP RTT, or every rr transaction's.",
            |r| r.rtt_mean_s,
        ),
        (
            "linkperf_rtt_p99_seconds",
            "99th percentile RTT of the latest test: per-interval TCP samples, or rr transactions.",
            |r| r.rtt_p99_s,
        ),
    ];
    for (name, help, get) in gauges {
        family(&mut out, name, "gauge", help);
        for (k, r) in &live.latest {
            if let (true, Some(v)) = (r.ok, get(r)) {
                let _ = writeln!(out, "{name}{{{}}} {v}", labels(k));
            }
        }
    }
    family(
        &mut out,
        "linkperf_last_test_timestamp_seconds",
        "gauge",
        "When the pair's latest test started (Unix time).",
    );
    for (k, r) in &live.latest {
        let t = r.started_unix_ms as f64 / 1000.0;
        let _ = writeln!(
            out,
            "linkperf_last_test_timestamp_seconds{{{}}} {t}",
            labels(k)
        );
    }
    family(
        &mut out,
        "linkperf_tests_total",
        "counter",
        "Tests run since the controller started.",
    );
    for (k, n) in &live.runs {
        let _ = writeln!(out, "linkperf_tests_total{{{}}} {n}", labels(k));
    }
    family(
        &mut out,
        "linkperf_test_failures_total",
        "counter",
        "Tests that failed (agent down, errors) since the controller started.",
    );
    for k in live.runs.keys() {
        let n = live.failures.get(k).copied().unwrap_or(0);
        let _ = writeln!(out, "linkperf_test_failures_total{{{}}} {n}", labels(k));
    }
    family(
        &mut out,
        "linkperf_alerts_total",
        "counter",
        "Alerts raised since the controller started.",
    );
    for ((k, kind), n) in &live.alerts {
        let _ = writeln!(
            out,
            "linkperf_alerts_total{{{},kind=\"{}\"}} {n}",
            labels(k),
            escape(kind)
        );
    }
    family(
        &mut out,
        "linkperf_spooled_results",
        "gauge",
        "Results kept on local disk until the database can be written.",
    );
    let _ = writeln!(out, "linkperf_spooled_results {}", live.spooled);
    out
}
