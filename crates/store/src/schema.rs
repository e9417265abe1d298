//! The archive's tables, identical in SQLite and PostgreSQL except for the
//! spelling of an auto-numbered key, and the steps from one version to the
//! next.

use crate::backend::{parse_json, Conn};
use crate::error::StoreError;
use crate::extract;

/// The schema this build writes and understands.
pub const SCHEMA_VERSION: i64 = 2;

/// Tables of schema version 1. `{PK}` is the auto-numbered primary key.
const TABLES_V1: &str = "
CREATE TABLE entries (
    id {PK},
    kind TEXT NOT NULL,
    parent BIGINT,
    created_unix_ms BIGINT NOT NULL,
    host TEXT NOT NULL
);
CREATE INDEX entries_parent_id ON entries (parent, id);
CREATE INDEX entries_kind_id ON entries (kind, id);

CREATE TABLE sweeps (
    id BIGINT PRIMARY KEY REFERENCES entries (id),
    status TEXT NOT NULL,
    spec TEXT NOT NULL,
    points BIGINT NOT NULL,
    planned_runs BIGINT NOT NULL
);

CREATE TABLE sweep_points (
    sweep_id BIGINT NOT NULL REFERENCES sweeps (id),
    idx BIGINT NOT NULL,
    params TEXT NOT NULL,
    PRIMARY KEY (sweep_id, idx)
);

CREATE TABLE runs (
    id BIGINT PRIMARY KEY REFERENCES entries (id),
    kind TEXT NOT NULL,
    started_unix_ms BIGINT NOT NULL,
    host TEXT NOT NULL,
    protocol TEXT,
    direction TEXT,
    sent_bps DOUBLE PRECISION,
    received_bps DOUBLE PRECISION,
    loss_percent DOUBLE PRECISION,
    rtt_mean_ms DOUBLE PRECISION,
    cpu_local_percent DOUBLE PRECISION,
    cpu_remote_percent DOUBLE PRECISION,
    duration_s DOUBLE PRECISION,
    interrupted BIGINT NOT NULL,
    sweep_id BIGINT REFERENCES sweeps (id),
    point BIGINT,
    repetition BIGINT,
    config TEXT,
    local_facts TEXT,
    remote_facts TEXT,
    report TEXT NOT NULL,
    UNIQUE (sweep_id, point, repetition)
);
CREATE INDEX runs_started ON runs (started_unix_ms);
CREATE INDEX runs_host_id ON runs (host, id);
CREATE INDEX runs_kind_id ON runs (kind, id);

CREATE TABLE samples (
    run_id BIGINT NOT NULL REFERENCES runs (id),
    interval_idx BIGINT NOT NULL,
    stream_id BIGINT NOT NULL,
    direction TEXT NOT NULL,
    start_s DOUBLE PRECISION,
    end_s DOUBLE PRECISION,
    omitted BIGINT NOT NULL,
    sent_bytes BIGINT,
    sent_bps DOUBLE PRECISION,
    received_bytes BIGINT,
    received_bps DOUBLE PRECISION,
    retransmits BIGINT,
    rtt_ms DOUBLE PRECISION,
    cwnd_bytes BIGINT,
    lost_packets BIGINT,
    jitter_ms DOUBLE PRECISION
);
CREATE INDEX samples_run ON samples (run_id, interval_idx, stream_id);
";

/// Version 2: the congestion control a test's sender used, a campaign's
/// flow and host counts, and `linkperf rr` results (one row per run, one per
/// message size of `--sizes`).
const TABLES_V2: &str = "
ALTER TABLE runs ADD COLUMN congestion TEXT;
ALTER TABLE runs ADD COLUMN flows BIGINT;
ALTER TABLE runs ADD COLUMN hosts BIGINT;

CREATE TABLE rr_runs (
    run_id BIGINT PRIMARY KEY REFERENCES runs (id),
    mode TEXT NOT NULL,
    request BIGINT,
    response BIGINT,
    burst BIGINT,
    transactions BIGINT,
    attempted BIGINT,
    transactions_per_second DOUBLE PRECISION,
    rtt_min_ms DOUBLE PRECISION,
    rtt_p50_ms DOUBLE PRECISION,
    rtt_p90_ms DOUBLE PRECISION,
    rtt_p99_ms DOUBLE PRECISION,
    rtt_p999_ms DOUBLE PRECISION,
    rtt_max_ms DOUBLE PRECISION,
    rtt_stddev_ms DOUBLE PRECISION,
    idle_rtt_p50_ms DOUBLE PRECISION,
    idle_rtt_p99_ms DOUBLE PRECISION,
    loaded_rtt_p50_ms DOUBLE PRECISION,
    loaded_rtt_p99_ms DOUBLE PRECISION,
    fit_intercept_ms DOUBLE PRECISION,
    fit_slope_us_per_byte DOUBLE PRECISION,
    fit_r2 DOUBLE PRECISION
);

CREATE TABLE rr_sizes (
    run_id BIGINT NOT NULL REFERENCES runs (id),
    idx BIGINT NOT NULL,
    size BIGINT NOT NULL,
    request BIGINT NOT NULL,
    response BIGINT NOT NULL,
    transactions BIGINT NOT NULL,
    lost BIGINT,
    rtt_mean_ms DOUBLE PRECISION,
    rtt_p50_ms DOUBLE PRECISION,
    rtt_p99_ms DOUBLE PRECISION,
    PRIMARY KEY (run_id, idx)
);
";

fn with_key(sql: &str, postgres: bool) -> String {
    let pk = if postgres {
        "BIGSERIAL PRIMARY KEY"
    } else {
        "INTEGER PRIMARY KEY AUTOINCREMENT"
    };
    sql.replace("{PK}", pk)
}

pub fn tables_v1(postgres: bool) -> String {
    with_key(TABLES_V1, postgres)
}

/// The statements that take a version-1 archive to version 2 (the data a
/// new column can be filled from is filled by the caller).
pub fn tables_v2(postgres: bool) -> String {
    with_key(TABLES_V2, postgres)
}

/// Version 2's new columns of runs stored before it: a campaign's figures
/// from its stored document. (A test's congestion control stays in its
/// report; `results show` reads it from there.)
pub fn fill_v2_columns(c: &mut Conn) -> Result<(), StoreError> {
    let rows = c.query("SELECT id, report FROM runs WHERE kind = 'campaign'", &[])?;
    for r in rows {
        let Ok(doc) = parse_json(&r[1], "runs.report") else {
            continue;
        };
        let m = extract::campaign_metrics(&doc);
        c.execute(
            "UPDATE runs SET sent_bps = $1, received_bps = $2, loss_percent = $3, \
             duration_s = $4, flows = $5, hosts = $6 WHERE id = $7",
            &[
                m.sent_bps.into(),
                m.received_bps.into(),
                m.loss_percent.into(),
                m.duration_s.into(),
                m.flows.into(),
                m.hosts.into(),
                r[0].i64().into(),
            ],
        )?;
    }
    Ok(())
}
