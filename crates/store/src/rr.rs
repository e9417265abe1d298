//! `linkperf rr` results in the archive: the run's figures in `rr_runs`
//! and, with `--sizes`, one `rr_sizes` row per message size, taken from the
//! `linkperf rr -J` document (schema/linkperf-rr-1.schema.json) so queries
//! need not parse the stored JSON. The figures' types are in `records`.

use crate::backend::{Conn, Row};
use crate::error::StoreError;
use crate::extract::{f, i, now_ms, s};
use crate::records::{NewRun, RrFigures, RrSize, RunMetrics};
use serde_json::Value;

impl NewRun {
    /// A `linkperf rr -J` report, with its figures extracted.
    pub fn from_rr_report(report: Value) -> NewRun {
        rr_run(report)
    }
}

/// Builds the stored form of a `linkperf rr -J` document.
pub fn rr_run(report: Value) -> NewRun {
    let sum = report.get("summary").cloned().unwrap_or(Value::Null);
    let metrics = RunMetrics {
        protocol: s(&report, "/test/protocol"),
        rtt_mean_ms: f(&sum, "/rtt_ms/mean"),
        loss_percent: f(&sum, "/loss_percent"),
        duration_s: f(&sum, "/seconds"),
        interrupted: report
            .get("interrupted")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        ..RunMetrics::default()
    };
    let figures = RrFigures {
        mode: s(&report, "/test/mode").unwrap_or_else(|| "rr".into()),
        request: i(&report, "/test/request"),
        response: i(&report, "/test/response"),
        burst: i(&report, "/test/burst"),
        transactions: i(&sum, "/transactions"),
        attempted: i(&sum, "/attempted"),
        transactions_per_second: f(&sum, "/transactions_per_second"),
        rtt_min_ms: f(&sum, "/rtt_ms/min"),
        rtt_p50_ms: f(&sum, "/rtt_ms/p50"),
        rtt_p90_ms: f(&sum, "/rtt_ms/p90"),
        rtt_p99_ms: f(&sum, "/rtt_ms/p99"),
        rtt_p999_ms: f(&sum, "/rtt_ms/p999"),
        rtt_max_ms: f(&sum, "/rtt_ms/max"),
        rtt_stddev_ms: f(&sum, "/rtt_ms/stddev"),
        idle_rtt_p50_ms: f(&sum, "/idle_rtt_ms/p50"),
        idle_rtt_p99_ms: f(&sum, "/idle_rtt_ms/p99"),
        loaded_rtt_p50_ms: f(&sum, "/loaded_rtt_ms/p50"),
        loaded_rtt_p99_ms: f(&sum, "/loaded_rtt_ms/p99"),
        fit_intercept_ms: f(&report, "/fit/intercept_ms"),
        fit_slope_us_per_byte: f(&report, "/fit/slope_us_per_byte"),
        fit_r2: f(&report, "/fit/r2"),
    };
    let sizes = report
        .get("sizes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|p| RrSize {
            size: i(p, "/size").unwrap_or(0),
            request: i(p, "/request").unwrap_or(0),
            response: i(p, "/response").unwrap_or(0),
            transactions: i(p, "/transactions").unwrap_or(0),
            lost: i(p, "/lost"),
            rtt_mean_ms: f(p, "/rtt_ms/mean"),
            rtt_p50_ms: f(p, "/rtt_ms/p50"),
            rtt_p99_ms: f(p, "/rtt_ms/p99"),
        })
        .collect();
    NewRun {
        kind: "rr".into(),
        started_unix_ms: i(&report, "/start/timestamp_unix_ms").unwrap_or_else(now_ms),
        host: s(&report, "/test/server").unwrap_or_default(),
        slot: None,
        config: report.get("test").cloned(),
        local_facts: None,
        remote_facts: None,
        metrics,
        samples: vec![],
        rr: Some(figures),
        rr_sizes: sizes,
        report,
    }
}

pub(crate) fn insert(
    c: &mut Conn,
    run_id: i64,
    r: &RrFigures,
    sizes: &[RrSize],
) -> Result<(), StoreError> {
    c.execute(
        "INSERT INTO rr_runs (run_id, mode, request, response, burst, transactions, attempted, \
         transactions_per_second, rtt_min_ms, rtt_p50_ms, rtt_p90_ms, rtt_p99_ms, rtt_p999_ms, \
         rtt_max_ms, rtt_stddev_ms, idle_rtt_p50_ms, idle_rtt_p99_ms, loaded_rtt_p50_ms, \
         loaded_rtt_p99_ms, fit_intercept_ms, fit_slope_us_per_byte, fit_r2) VALUES ($1, $2, \
         $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, \
         $21, $22)",
        &[
            run_id.into(),
            r.mode.clone().into(),
            r.request.into(),
            r.response.into(),
            r.burst.into(),
            r.transactions.into(),
            r.attempted.into(),
            r.transactions_per_second.into(),
            r.rtt_min_ms.into(),
            r.rtt_p50_ms.into(),
            r.rtt_p90_ms.into(),
            r.rtt_p99_ms.into(),
            r.rtt_p999_ms.into(),
            r.rtt_max_ms.into(),
            r.rtt_stddev_ms.into(),
            r.idle_rtt_p50_ms.into(),
            r.idle_rtt_p99_ms.into(),
            r.loaded_rtt_p50_ms.into(),
            r.loaded_rtt_p99_ms.into(),
            r.fit_intercept_ms.into(),
            r.fit_slope_us_per_byte.into(),
            r.fit_r2.into(),
        ],
    )?;
    for (k, p) in sizes.iter().enumerate() {
        c.execute(
            "INSERT INTO rr_sizes (run_id, idx, size, request, response, transactions, lost, \
             rtt_mean_ms, rtt_p50_ms, rtt_p99_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)",
            &[
                run_id.into(),
                (k as i64).into(),
                p.size.into(),
                p.request.into(),
                p.response.into(),
                p.transactions.into(),
                p.lost.into(),
                p.rtt_mean_ms.into(),
                p.rtt_p50_ms.into(),
                p.rtt_p99_ms.into(),
            ],
        )?;
    }
    Ok(())
}

/// The `rr_runs` columns a `LEFT JOIN rr_runs q` selects, in `figures_at` order.
pub(crate) const COLUMNS: &str = "q.mode, q.request, q.response, q.burst, q.transactions, \
     q.attempted, q.transactions_per_second, q.rtt_min_ms, q.rtt_p50_ms, q.rtt_p90_ms, \
     q.rtt_p99_ms, q.rtt_p999_ms, q.rtt_max_ms, q.rtt_stddev_ms, q.idle_rtt_p50_ms, \
     q.idle_rtt_p99_ms, q.loaded_rtt_p50_ms, q.loaded_rtt_p99_ms, q.fit_intercept_ms, \
     q.fit_slope_us_per_byte, q.fit_r2";

/// The figures starting at column `at`; `None` when the run has no rr row.
pub(crate) fn figures_at(r: &Row, at: usize) -> Option<RrFigures> {
    let mode = r[at].text()?.to_string();
    let fl = |k: usize| r[at + k].f64();
    let it = |k: usize| r[at + k].i64();
    Some(RrFigures {
        mode,
        request: it(1),
        response: it(2),
        burst: it(3),
        transactions: it(4),
        attempted: it(5),
        transactions_per_second: fl(6),
        rtt_min_ms: fl(7),
        rtt_p50_ms: fl(8),
        rtt_p90_ms: fl(9),
        rtt_p99_ms: fl(10),
        rtt_p999_ms: fl(11),
        rtt_max_ms: fl(12),
        rtt_stddev_ms: fl(13),
        idle_rtt_p50_ms: fl(14),
        idle_rtt_p99_ms: fl(15),
        loaded_rtt_p50_ms: fl(16),
        loaded_rtt_p99_ms: fl(17),
        fit_intercept_ms: fl(18),
        fit_slope_us_per_byte: fl(19),
        fit_r2: fl(20),
    })
}

/// The `--sizes` rows of a run, in the order they were measured.
pub(crate) fn sizes(c: &mut Conn, run_id: i64) -> Result<Vec<RrSize>, StoreError> {
    Ok(c.query(
        "SELECT size, request, response, transactions, lost, rtt_mean_ms, rtt_p50_ms, \
             rtt_p99_ms FROM rr_sizes WHERE run_id = $1 ORDER BY idx",
        &[run_id.into()],
    )?
    .iter()
    .map(|r| RrSize {
        size: r[0].i64().unwrap_or(0),
        request: r[1].i64().unwrap_or(0),
        response: r[2].i64().unwrap_or(0),
        transactions: r[3].i64().unwrap_or(0),
        lost: r[4].i64(),
        rtt_mean_ms: r[5].f64(),
        rtt_p50_ms: r[6].f64(),
        rtt_p99_ms: r[7].f64(),
    })
    .collect())
}
