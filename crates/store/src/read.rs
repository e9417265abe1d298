//! Reading the archive back: runs, samples, sweeps, rr sizes and the list of
//! entries, turned from rows into the records of `records`. It never writes.

use crate::backend::{parse_json, Row, Val};
use crate::error::StoreError;
use crate::records::{
    EntryKind, ListEntry, ListFilter, RrSize, RunMetrics, RunRow, Sample, SweepRow, SweepSlot,
};
use crate::{rr, Store};

/// figures; a query may add `r.report` after them, at `REPORT_AT`.
const RUN_COLUMNS: &str = "r.id, r.kind, r.started_unix_ms, r.host, r.sweep_id, r.point, \
     r.repetition, r.protocol, r.direction, r.sent_bps, r.received_bps, r.loss_percent, \
     r.rtt_mean_ms, r.cpu_local_percent, r.cpu_remote_percent, r.duration_s, r.interrupted, \
     r.congestion, r.flows, r.hosts";
const RUN_COLUMN_COUNT: usize = 20;
const RUN_FROM: &str = "runs r LEFT JOIN rr_runs q ON q.run_id = r.id";
const REPORT_AT: usize = RUN_COLUMN_COUNT + 21;

fn run_select(tail: &str, with_report: bool) -> String {
    format!(
        "SELECT {RUN_COLUMNS}, {}{} FROM {RUN_FROM} {tail}",
        rr::COLUMNS,
        if with_report { ", r.report" } else { "" }
    )
}

/// The metrics from `protocol` at column `at` to `hosts` at `at + 12`.
fn metrics_at(r: &Row, at: usize) -> RunMetrics {
    RunMetrics {
        protocol: r[at].text().map(String::from),
        direction: r[at + 1].text().map(String::from),
        sent_bps: r[at + 2].f64(),
        received_bps: r[at + 3].f64(),
        loss_percent: r[at + 4].f64(),
        rtt_mean_ms: r[at + 5].f64(),
        cpu_local_percent: r[at + 6].f64(),
        cpu_remote_percent: r[at + 7].f64(),
        duration_s: r[at + 8].f64(),
        interrupted: r[at + 9].i64().unwrap_or(0) != 0,
        congestion: r[at + 10].text().map(String::from),
        flows: r[at + 11].i64(),
        hosts: r[at + 12].i64(),
    }
}

fn run_row(r: &Row, with_report: bool) -> Result<RunRow, StoreError> {
    Ok(RunRow {
        id: r[0].i64().unwrap_or(0),
        kind: r[1].string(),
        started_unix_ms: r[2].i64().unwrap_or(0),
        host: r[3].string(),
        slot: match (r[4].i64(), r[5].i64(), r[6].i64()) {
            (Some(sweep_id), Some(point), Some(repetition)) => Some(SweepSlot {
                sweep_id,
                point,
                repetition,
            }),
            _ => None,
        },
        metrics: metrics_at(r, 7),
        rr: rr::figures_at(r, RUN_COLUMN_COUNT),
        report: if with_report {
            Some(parse_json(&r[REPORT_AT], "runs.report")?)
        } else {
            None
        },
    })
}

impl Store {
    /// What an id names, if anything.
    pub fn entry_kind(&mut self, id: i64) -> Result<Option<EntryKind>, StoreError> {
        let rows = self
            .conn
            .query("SELECT kind FROM entries WHERE id = $1", &[id.into()])?;
        Ok(rows.first().map(|r| match r[0].text() {
            Some("sweep") => EntryKind::Sweep,
            other => EntryKind::Run(other.unwrap_or_default().to_string()),
        }))
    }

    pub fn sweep(&mut self, id: i64) -> Result<Option<SweepRow>, StoreError> {
        let rows = self.conn.query(
            "SELECT s.id, e.created_unix_ms, e.host, s.status, s.spec, s.planned_runs \
             FROM sweeps s JOIN entries e ON e.id = s.id WHERE s.id = $1",
            &[id.into()],
        )?;
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        let points = self
            .conn
            .query(
                "SELECT params FROM sweep_points WHERE sweep_id = $1 ORDER BY idx",
                &[id.into()],
            )?
            .iter()
            .map(|p| parse_json(&p[0], "sweep_points.params"))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Some(SweepRow {
            id: r[0].i64().unwrap_or(0),
            created_unix_ms: r[1].i64().unwrap_or(0),
            host: r[2].string(),
            status: r[3].string(),
            spec: parse_json(&r[4], "sweeps.spec")?,
            planned_runs: r[5].i64().unwrap_or(0),
            points,
        }))
    }

    /// The measured runs of a sweep, by point then repetition (not the
    /// simulated twins: [`Store::sweep_twins`]).
    pub fn sweep_runs(&mut self, id: i64, with_reports: bool) -> Result<Vec<RunRow>, StoreError> {
        self.sweep_rows(
            id,
            "r.repetition >= 0 ORDER BY r.point, r.repetition",
            with_reports,
        )
    }

    /// The simulated twins of a sweep's points (stored at repetition
    /// [`TWIN_REPETITION`](crate::TWIN_REPETITION)), by point.
    pub fn sweep_twins(&mut self, id: i64, with_reports: bool) -> Result<Vec<RunRow>, StoreError> {
        self.sweep_rows(id, "r.repetition < 0 ORDER BY r.point", with_reports)
    }

    /// The runs of sweep `id` that `condition` (an SQL condition and order) selects.
    fn sweep_rows(
        &mut self,
        id: i64,
        condition: &str,
        with_reports: bool,
    ) -> Result<Vec<RunRow>, StoreError> {
        let sql = run_select(
            &format!("WHERE r.sweep_id = $1 AND {condition}"),
            with_reports,
        );
        self.conn
            .query(&sql, &[id.into()])?
            .iter()
            .map(|r| run_row(r, with_reports))
            .collect()
    }

    pub fn run(&mut self, id: i64, with_report: bool) -> Result<Option<RunRow>, StoreError> {
        let rows = self
            .conn
            .query(&run_select("WHERE r.id = $1", with_report), &[id.into()])?;
        rows.first().map(|r| run_row(r, with_report)).transpose()
    }

    /// The `--sizes` points of an rr run, in the order they were measured.
    pub fn rr_sizes(&mut self, run_id: i64) -> Result<Vec<RrSize>, StoreError> {
        rr::sizes(&mut self.conn, run_id)
    }

    /// The stored samples of a run, in interval then stream order.
    pub fn samples(&mut self, run_id: i64) -> Result<Vec<Sample>, StoreError> {
        let rows = self.conn.query(
            "SELECT interval_idx, stream_id, direction, start_s, end_s, omitted, sent_bytes, \
             sent_bps, received_bytes, received_bps, retransmits, rtt_ms, cwnd_bytes, \
             lost_packets, jitter_ms FROM samples WHERE run_id = $1 \
             ORDER BY interval_idx, stream_id, direction",
            &[run_id.into()],
        )?;
        Ok(rows
            .iter()
            .map(|r| Sample {
                interval_idx: r[0].i64().unwrap_or(0),
                stream_id: r[1].i64().unwrap_or(0),
                direction: r[2].string(),
                start_s: r[3].f64(),
                end_s: r[4].f64(),
                omitted: r[5].i64().unwrap_or(0) != 0,
                sent_bytes: r[6].i64(),
                sent_bps: r[7].f64(),
                received_bytes: r[8].i64(),
                received_bps: r[9].f64(),
                retransmits: r[10].i64(),
                rtt_ms: r[11].f64(),
                cwnd_bytes: r[12].i64(),
                lost_packets: r[13].i64(),
                jitter_ms: r[14].f64(),
            })
            .collect())
    }

    /// Entries newest first, one page.
    pub fn list(&mut self, filter: &ListFilter) -> Result<Vec<ListEntry>, StoreError> {
        let mut sql = format!(
            "SELECT e.id, e.kind, e.created_unix_ms, e.host, e.parent, \
             r.protocol, r.direction, r.sent_bps, r.received_bps, r.loss_percent, \
             r.rtt_mean_ms, r.cpu_local_percent, r.cpu_remote_percent, r.duration_s, \
             r.interrupted, r.congestion, r.flows, r.hosts, s.status, s.points, s.planned_runs, \
             (SELECT COUNT(*) FROM runs x WHERE x.sweep_id = s.id AND x.repetition >= 0), {} \
             FROM entries e LEFT JOIN runs r ON r.id = e.id LEFT JOIN sweeps s ON s.id = e.id \
             LEFT JOIN rr_runs q ON q.run_id = e.id WHERE 1 = 1",
            rr::COLUMNS
        );
        let mut params: Vec<Val> = vec![];
        if !filter.all {
            sql.push_str(" AND e.parent IS NULL");
        }
        if let Some(b) = filter.before {
            params.push(b.into());
            sql.push_str(&format!(" AND e.id < ${}", params.len()));
        }
        if let Some(k) = &filter.kind {
            params.push(k.clone().into());
            sql.push_str(&format!(" AND e.kind = ${}", params.len()));
        }
        if let Some(h) = &filter.host {
            params.push(h.clone().into());
            sql.push_str(&format!(" AND e.host = ${}", params.len()));
        }
        params.push(filter.limit.max(0).into());
        sql.push_str(&format!(" ORDER BY e.id DESC LIMIT ${}", params.len()));
        let rows = self.conn.query(&sql, &params)?;
        Ok(rows
            .iter()
            .map(|r| {
                let kind = r[1].string();
                let sweep = kind == "sweep";
                ListEntry {
                    id: r[0].i64().unwrap_or(0),
                    kind,
                    created_unix_ms: r[2].i64().unwrap_or(0),
                    host: r[3].string(),
                    parent: r[4].i64(),
                    metrics: metrics_at(r, 5),
                    rr: rr::figures_at(r, 22),
                    sweep_status: r[18].text().map(String::from),
                    sweep_points: r[19].i64(),
                    sweep_planned: r[20].i64(),
                    sweep_runs: if sweep { r[21].i64() } else { None },
                }
            })
            .collect())
    }

    /// Number of entries a `list` without paging would show.
    pub fn count(&mut self, all: bool) -> Result<i64, StoreError> {
        let sql = if all {
            "SELECT COUNT(*) FROM entries"
        } else {
            "SELECT COUNT(*) FROM entries WHERE parent IS NULL"
        };
        Ok(self.conn.query_i64(sql, &[])?.unwrap_or(0))
    }
}
