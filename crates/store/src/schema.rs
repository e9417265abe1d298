//! The archive's tables, identical in SQLite and PostgreSQL except for the
//! spelling of an auto-numbered key.

/// The schema this build writes and understands.
pub const SCHEMA_VERSION: i64 = 1;

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

pub fn tables_v1(postgres: bool) -> String {
    let pk = if postgres {
        "BIGSERIAL PRIMARY KEY"
    } else {
        "INTEGER PRIMARY KEY AUTOINCREMENT"
    };
    TABLES_V1.replace("{PK}", pk)
}
