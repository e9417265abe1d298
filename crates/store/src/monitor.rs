//! Monitoring tables (`linkperf monitor`): one row per scheduled test as it
//! ends (its figures, or why it failed), the alerts it raised, and each
//! job's next run time. A result, its alerts and the job's next run time are
//! written in one transaction, so after a restart a job is neither lost nor
//! run twice. The tables are created on first use, beside the archive's own
//! (no schema version change: older linkperf ignores them).

use crate::backend::{Conn, Row};
use crate::error::StoreError;
use crate::records::{MonitorAlert, MonitorResult, NewRun};
use crate::write::insert_run_in;
use crate::Store;

const TABLES: &str = "
CREATE TABLE IF NOT EXISTS monitor_results (
    id {PK},
    test TEXT NOT NULL,
    src TEXT NOT NULL,
    dst TEXT NOT NULL,
    started_unix_ms BIGINT NOT NULL,
    ok BIGINT NOT NULL,
    reason TEXT,
    throughput_bps DOUBLE PRECISION,
    loss_ratio DOUBLE PRECISION,
    rtt_mean_s DOUBLE PRECISION,
    rtt_p99_s DOUBLE PRECISION,
    run_id BIGINT
);
CREATE INDEX IF NOT EXISTS monitor_results_pair ON monitor_results (test, src, dst, started_unix_ms);
CREATE TABLE IF NOT EXISTS monitor_alerts (
    id {PK},
    unix_ms BIGINT NOT NULL,
    test TEXT NOT NULL,
    src TEXT NOT NULL,
    dst TEXT NOT NULL,
    kind TEXT NOT NULL,
    message TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS monitor_next (
    job TEXT PRIMARY KEY,
    next_unix_ms BIGINT NOT NULL
);
";

fn result_of(r: &Row) -> MonitorResult {
    MonitorResult {
        test: r[0].string(),
        src: r[1].string(),
        dst: r[2].string(),
        started_unix_ms: r[3].i64().unwrap_or(0),
        ok: r[4].i64() == Some(1),
        reason: r[5].text().map(str::to_string),
        throughput_bps: r[6].f64(),
        loss_ratio: r[7].f64(),
        rtt_mean_s: r[8].f64(),
        rtt_p99_s: r[9].f64(),
        run_id: r[10].i64(),
    }
}

const RESULT_COLUMNS: &str = "test, src, dst, started_unix_ms, ok, reason, throughput_bps, \
                              loss_ratio, rtt_mean_s, rtt_p99_s, run_id";

impl Store {
    /// Creates the monitoring tables when they are missing.
    pub fn monitor_prepare(&mut self) -> Result<(), StoreError> {
        let pk = if self.is_postgres() {
            "BIGSERIAL PRIMARY KEY"
        } else {
            "INTEGER PRIMARY KEY AUTOINCREMENT"
        };
        let sql = TABLES.replace("{PK}", pk);
        self.transaction(|c| c.batch(&sql))
    }

    /// Stores a finished test in one transaction: its full run (when there
    /// is one), its result row, its alerts and the job's next run time.
    /// Returns the result row's run id.
    pub fn monitor_record(
        &mut self,
        run: Option<&NewRun>,
        result: &MonitorResult,
        alerts: &[MonitorAlert],
        job: &str,
        next_unix_ms: i64,
    ) -> Result<Option<i64>, StoreError> {
        self.transaction(|c| {
            let run_id = run.map(|r| insert_run_in(c, r)).transpose()?;
            insert_result(c, result, run_id)?;
            for a in alerts {
                c.execute(
                    "INSERT INTO monitor_alerts (unix_ms, test, src, dst, kind, message) \
                     VALUES ($1, $2, $3, $4, $5, $6)",
                    &[
                        a.unix_ms.into(),
                        a.test.as_str().into(),
                        a.src.as_str().into(),
                        a.dst.as_str().into(),
                        a.kind.as_str().into(),
                        a.message.as_str().into(),
                    ],
                )?;
            }
            set_next(c, job, next_unix_ms)?;
            Ok(run_id)
        })
    }

    /// Every job's next run time, as stored.
    pub fn monitor_next_runs(&mut self) -> Result<Vec<(String, i64)>, StoreError> {
        let rows = self
            .conn
            .query("SELECT job, next_unix_ms FROM monitor_next", &[])?;
        Ok(rows
            .iter()
            .map(|r| (r[0].string(), r[1].i64().unwrap_or(0)))
            .collect())
    }

    /// One pair's results of one test since `since_unix_ms`, oldest first.
    pub fn monitor_series(
        &mut self,
        test: &str,
        src: &str,
        dst: &str,
        since_unix_ms: i64,
    ) -> Result<Vec<MonitorResult>, StoreError> {
        let sql = format!(
            "SELECT {RESULT_COLUMNS} FROM monitor_results WHERE test = $1 AND src = $2 \
             AND dst = $3 AND started_unix_ms >= $4 ORDER BY started_unix_ms, id"
        );
        let rows = self.conn.query(
            &sql,
            &[test.into(), src.into(), dst.into(), since_unix_ms.into()],
        )?;
        Ok(rows.iter().map(result_of).collect())
    }

    /// The latest result of every (test, source, destination).
    pub fn monitor_latest(&mut self) -> Result<Vec<MonitorResult>, StoreError> {
        let sql = format!(
            "SELECT {RESULT_COLUMNS} FROM monitor_results r WHERE id = \
             (SELECT MAX(id) FROM monitor_results l WHERE l.test = r.test AND l.src = r.src \
             AND l.dst = r.dst) ORDER BY test, src, dst"
        );
        let rows = self.conn.query(&sql, &[])?;
        Ok(rows.iter().map(result_of).collect())
    }

    /// Every result, oldest first (exports, tests).
    pub fn monitor_results(&mut self) -> Result<Vec<MonitorResult>, StoreError> {
        let sql = format!("SELECT {RESULT_COLUMNS} FROM monitor_results ORDER BY id");
        let rows = self.conn.query(&sql, &[])?;
        Ok(rows.iter().map(result_of).collect())
    }

    /// The newest alerts, newest first; with a pair, only that pair's.
    pub fn monitor_alerts(
        &mut self,
        pair: Option<(&str, &str, &str)>,
        limit: i64,
    ) -> Result<Vec<MonitorAlert>, StoreError> {
        let base = "SELECT unix_ms, test, src, dst, kind, message FROM monitor_alerts";
        let rows = match pair {
            Some((t, s, d)) => self.conn.query(
                &format!(
                    "{base} WHERE test = $1 AND src = $2 AND dst = $3 \
                     ORDER BY id DESC LIMIT $4"
                ),
                &[t.into(), s.into(), d.into(), limit.into()],
            )?,
            None => self.conn.query(
                &format!("{base} ORDER BY id DESC LIMIT $1"),
                &[limit.into()],
            )?,
        };
        Ok(rows
            .iter()
            .map(|r| MonitorAlert {
                unix_ms: r[0].i64().unwrap_or(0),
                test: r[1].string(),
                src: r[2].string(),
                dst: r[3].string(),
                kind: r[4].string(),
                message: r[5].string(),
            })
            .collect())
    }

    /// The median throughput of a pair's successful runs since a time (the
    /// threshold's baseline); `None` without any.
    pub fn monitor_median_throughput(
        &mut self,
        test: &str,
        src: &str,
        dst: &str,
        since_unix_ms: i64,
    ) -> Result<Option<f64>, StoreError> {
        let rows = self.conn.query(
            "SELECT throughput_bps FROM monitor_results WHERE test = $1 AND src = $2 \
             AND dst = $3 AND started_unix_ms >= $4 AND ok = 1 AND throughput_bps IS NOT NULL",
            &[test.into(), src.into(), dst.into(), since_unix_ms.into()],
        )?;
        let mut v: Vec<f64> = rows.iter().filter_map(|r| r[0].f64()).collect();
        Ok(median(&mut v))
    }
}

fn median(v: &mut [f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

fn insert_result(c: &mut Conn, r: &MonitorResult, run_id: Option<i64>) -> Result<(), StoreError> {
    c.execute(
        "INSERT INTO monitor_results (test, src, dst, started_unix_ms, ok, reason, \
         throughput_bps, loss_ratio, rtt_mean_s, rtt_p99_s, run_id) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        &[
            r.test.as_str().into(),
            r.src.as_str().into(),
            r.dst.as_str().into(),
            r.started_unix_ms.into(),
            (r.ok as i64).into(),
            r.reason.clone().into(),
            r.throughput_bps.into(),
            r.loss_ratio.into(),
            r.rtt_mean_s.into(),
            r.rtt_p99_s.into(),
            run_id.or(r.run_id).into(),
        ],
    )?;
    Ok(())
}

/// Upserts a job's next run time (the same statement in both databases).
fn set_next(c: &mut Conn, job: &str, next_unix_ms: i64) -> Result<(), StoreError> {
    c.execute(
        "INSERT INTO monitor_next (job, next_unix_ms) VALUES ($1, $2) \
         ON CONFLICT (job) DO UPDATE SET next_unix_ms = excluded.next_unix_ms",
        &[job.into(), next_unix_ms.into()],
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Location;

    #[test]
    fn a_record_and_the_next_run_are_stored_together() {
        let mut s = Store::open_at(Location::Memory).unwrap();
        s.monitor_prepare().unwrap();
        s.monitor_prepare().unwrap();
        let mut r = MonitorResult {
            test: "udp".into(),
            src: "a".into(),
            dst: "b".into(),
            started_unix_ms: 1000,
            ok: true,
            throughput_bps: Some(3.0e7),
            ..Default::default()
        };
        s.monitor_record(None, &r, &[], "udp/a/b", 5000).unwrap();
        r.started_unix_ms = 2000;
        r.throughput_bps = Some(1.0e7);
        s.monitor_record(None, &r, &[], "udp/a/b", 9000).unwrap();
        assert_eq!(
            s.monitor_next_runs().unwrap(),
            vec![("udp/a/b".into(), 9000)]
        );
        assert_eq!(s.monitor_series("udp", "a", "b", 0).unwrap().len(), 2);
        assert_eq!(s.monitor_latest().unwrap()[0].started_unix_ms, 2000);
        // The median of 30 and 10 Mbit/s is their mean.
        let m = s.monitor_median_throughput("udp", "a", "b", 0).unwrap();
        assert_eq!(m, Some(2.0e7));
    }
}
