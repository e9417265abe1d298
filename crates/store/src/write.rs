//! Writing to the archive: runs (with their samples and rr figures) and
//! sweeps, each change in one transaction so it is stored whole or not at
//! all. It must not read results back for callers (that is `read`).

use crate::backend::{Conn, Val};
use crate::error::StoreError;
use crate::records::{NewRun, NewSweep};
use crate::{rr, Store};
use serde_json::Value;

impl Store {
    /// Stores one run in one transaction and returns its id.
    pub fn insert_run(&mut self, run: &NewRun) -> Result<i64, StoreError> {
        self.transaction(|c| insert_run_in(c, run))
    }

    /// Stores many runs in one transaction (imports, benchmarks).
    pub fn insert_runs(&mut self, runs: &[NewRun]) -> Result<Vec<i64>, StoreError> {
        self.transaction(|c| runs.iter().map(|r| insert_run_in(c, r)).collect())
    }

    /// Creates a sweep (status "partial") with its points; returns its id.
    pub fn create_sweep(&mut self, sweep: &NewSweep) -> Result<i64, StoreError> {
        self.transaction(|c| {
            let id = insert_entry(c, "sweep", None, sweep.created_unix_ms, &sweep.host)?;
            c.execute(
                "INSERT INTO sweeps (id, status, spec, points, planned_runs) \
                 VALUES ($1, $2, $3, $4, $5)",
                &[
                    id.into(),
                    "partial".into(),
                    sweep.spec.to_string().into(),
                    (sweep.points.len() as i64).into(),
                    sweep.planned_runs.into(),
                ],
            )?;
            for (k, p) in sweep.points.iter().enumerate() {
                c.execute(
                    "INSERT INTO sweep_points (sweep_id, idx, params) VALUES ($1, $2, $3)",
                    &[id.into(), (k as i64).into(), p.to_string().into()],
                )?;
            }
            Ok(id)
        })
    }

    pub fn set_sweep_status(&mut self, id: i64, status: &str) -> Result<(), StoreError> {
        self.transaction(|c| {
            c.execute(
                "UPDATE sweeps SET status = $1 WHERE id = $2",
                &[status.into(), id.into()],
            )?;
            Ok(())
        })
    }

    /// Updates the planned number of runs (confidence mode adds runs).
    pub fn set_sweep_planned(&mut self, id: i64, planned: i64) -> Result<(), StoreError> {
        self.transaction(|c| {
            c.execute(
                "UPDATE sweeps SET planned_runs = $1 WHERE id = $2",
                &[planned.into(), id.into()],
            )?;
            Ok(())
        })
    }
}

fn json_text(v: &Option<Value>) -> Val {
    Val::T(v.as_ref().map(|v| v.to_string()))
}

fn insert_entry(
    c: &mut Conn,
    kind: &str,
    parent: Option<i64>,
    created: i64,
    host: &str,
) -> Result<i64, StoreError> {
    c.query_i64(
        "INSERT INTO entries (kind, parent, created_unix_ms, host) VALUES ($1, $2, $3, $4) \
         RETURNING id",
        &[kind.into(), parent.into(), created.into(), host.into()],
    )?
    .ok_or_else(|| StoreError::new("the database returned no id for a new entry"))
}

pub(crate) fn insert_run_in(c: &mut Conn, run: &NewRun) -> Result<i64, StoreError> {
    let slot = run.slot;
    let id = insert_entry(
        c,
        &run.kind,
        slot.map(|s| s.sweep_id),
        run.started_unix_ms,
        &run.host,
    )?;
    let m = &run.metrics;
    c.execute(
        "INSERT INTO runs (id, kind, started_unix_ms, host, protocol, direction, sent_bps, \
         received_bps, loss_percent, rtt_mean_ms, cpu_local_percent, cpu_remote_percent, \
         duration_s, interrupted, sweep_id, point, repetition, config, local_facts, \
         remote_facts, report, congestion, flows, hosts) VALUES ($1, $2, $3, $4, $5, $6, $7, \
         $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22, $23, $24)",
        &[
            id.into(),
            run.kind.clone().into(),
            run.started_unix_ms.into(),
            run.host.clone().into(),
            m.protocol.clone().into(),
            m.direction.clone().into(),
            m.sent_bps.into(),
            m.received_bps.into(),
            m.loss_percent.into(),
            m.rtt_mean_ms.into(),
            m.cpu_local_percent.into(),
            m.cpu_remote_percent.into(),
            m.duration_s.into(),
            i64::from(m.interrupted).into(),
            slot.map(|s| s.sweep_id).into(),
            slot.map(|s| s.point).into(),
            slot.map(|s| s.repetition).into(),
            json_text(&run.config),
            json_text(&run.local_facts),
            json_text(&run.remote_facts),
            run.report.to_string().into(),
            m.congestion.clone().into(),
            m.flows.into(),
            m.hosts.into(),
        ],
    )
    .map_err(|e| {
        if e.message.contains("UNIQUE") || e.message.contains("unique") {
            StoreError::new(format!(
                "this sweep point and repetition is already stored ({})",
                e.message
            ))
        } else {
            e
        }
    })?;
    for s in &run.samples {
        c.execute(
            "INSERT INTO samples (run_id, interval_idx, stream_id, direction, start_s, end_s, \
             omitted, sent_bytes, sent_bps, received_bytes, received_bps, retransmits, rtt_ms, \
             cwnd_bytes, lost_packets, jitter_ms) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, \
             $10, $11, $12, $13, $14, $15, $16)",
            &[
                id.into(),
                s.interval_idx.into(),
                s.stream_id.into(),
                s.direction.clone().into(),
                s.start_s.into(),
                s.end_s.into(),
                i64::from(s.omitted).into(),
                s.sent_bytes.into(),
                s.sent_bps.into(),
                s.received_bytes.into(),
                s.received_bps.into(),
                s.retransmits.into(),
                s.rtt_ms.into(),
                s.cwnd_bytes.into(),
                s.lost_packets.into(),
                s.jitter_ms.into(),
            ],
        )?;
    }
    if let Some(figures) = &run.rr {
        rr::insert(c, id, figures, &run.rr_sizes)?;
    }
    Ok(id)
}
