//! The linkperf results archive: every test, rr test, campaign and sweep,
//! kept in one schema with two backends, an embedded SQLite file (the default)
//! and PostgreSQL (`postgres://...`) for teams.
//!
//! Runs and sweeps share one id space (the `entries` table), so `linkperf
//! results show ID` needs no kind. Each run is written in one transaction:
//! it is in the archive whole or not at all. docs/archive.md describes the
//! tables and the export format.

mod backend;
mod extract;
mod schema;

use backend::{Cell, Conn, Row, Val};
use serde_json::Value;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub use schema::SCHEMA_VERSION;

/// A failure of the archive, as one line for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreError {
    pub message: String,
    /// The database went away (PostgreSQL connection lost).
    pub connection_lost: bool,
}

impl StoreError {
    fn new(message: impl Into<String>) -> StoreError {
        StoreError {
            message: message.into(),
            connection_lost: false,
        }
    }
    fn lost(message: impl Into<String>) -> StoreError {
        StoreError {
            message: message.into(),
            connection_lost: true,
        }
    }
    fn context(self, what: &str) -> StoreError {
        StoreError {
            message: format!("{what}: {}", self.message),
            ..self
        }
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}

pub(crate) fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Where the archive lives.
#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    Sqlite(PathBuf),
    /// A private in-memory SQLite database (tests, `--no-store` sweeps).
    Memory,
    Postgres(String),
}

impl Location {
    /// `--db` as given, else `$LINKPERF_DB`, else the default file in the
    /// user's data directory.
    pub fn resolve(db: Option<&str>) -> Result<Location, StoreError> {
        let from_env = std::env::var("LINKPERF_DB").ok().filter(|s| !s.is_empty());
        match db.map(String::from).or(from_env) {
            Some(s) => Location::parse(&s),
            None => Ok(Location::Sqlite(default_path()?)),
        }
    }

    pub fn parse(s: &str) -> Result<Location, StoreError> {
        if s.trim().is_empty() {
            return Err(StoreError::new(
                "--db needs a file path or a postgres:// URL",
            ));
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            Ok(Location::Postgres(s.to_string()))
        } else if s == ":memory:" {
            Ok(Location::Memory)
        } else if s.contains("://") {
            Err(StoreError::new(format!(
                "--db {s}: only file paths and postgres:// URLs are supported"
            )))
        } else {
            Ok(Location::Sqlite(PathBuf::from(s)))
        }
    }

    /// How to name the archive to a user: a PostgreSQL URL without its password.
    pub fn describe(&self) -> String {
        match self {
            Location::Sqlite(p) => p.display().to_string(),
            Location::Memory => ":memory:".into(),
            Location::Postgres(url) => redact(url),
        }
    }
}

fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.into();
    };
    match rest.split_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{scheme}://{user}@{host}")
        }
        None => url.into(),
    }
}

/// `$XDG_DATA_HOME/linkperf/archive.db`, or `~/.local/share/linkperf/archive.db`.
pub fn default_path() -> Result<PathBuf, StoreError> {
    let base = match std::env::var_os("XDG_DATA_HOME").map(PathBuf::from) {
        Some(p) if p.is_absolute() => p,
        _ => match std::env::var_os("HOME").filter(|h| !h.is_empty()) {
            Some(home) => PathBuf::from(home).join(".local/share"),
            None => {
                return Err(StoreError::new(
                    "no HOME or XDG_DATA_HOME to put the archive in: give --db PATH",
                ))
            }
        },
    };
    Ok(base.join("linkperf").join("archive.db"))
}

/// Which sweep point and repetition a run belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SweepSlot {
    pub sweep_id: i64,
    pub point: i64,
    pub repetition: i64,
}

/// The normalised numbers of a run, for queries without parsing JSON.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunMetrics {
    pub protocol: Option<String>,
    pub direction: Option<String>,
    pub sent_bps: Option<f64>,
    pub received_bps: Option<f64>,
    pub loss_percent: Option<f64>,
    pub rtt_mean_ms: Option<f64>,
    pub cpu_local_percent: Option<f64>,
    pub cpu_remote_percent: Option<f64>,
    pub duration_s: Option<f64>,
    pub interrupted: bool,
}

/// One per-interval (or whole-test, `interval_idx` -1) sample of one stream
/// (or of the sum of the streams going one way, `stream_id` -1).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sample {
    pub interval_idx: i64,
    pub stream_id: i64,
    pub direction: String,
    pub start_s: Option<f64>,
    pub end_s: Option<f64>,
    pub omitted: bool,
    pub sent_bytes: Option<i64>,
    pub sent_bps: Option<f64>,
    pub received_bytes: Option<i64>,
    pub received_bps: Option<f64>,
    pub retransmits: Option<i64>,
    pub rtt_ms: Option<f64>,
    pub cwnd_bytes: Option<i64>,
    pub lost_packets: Option<i64>,
    pub jitter_ms: Option<f64>,
}

/// A run to store.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRun {
    /// "test" (a `linkperf client` run), "rr", "campaign", ...
    pub kind: String,
    pub started_unix_ms: i64,
    pub host: String,
    pub slot: Option<SweepSlot>,
    /// The effective configuration.
    pub config: Option<Value>,
    pub local_facts: Option<Value>,
    pub remote_facts: Option<Value>,
    pub metrics: RunMetrics,
    pub samples: Vec<Sample>,
    /// The full JSON document of the result.
    pub report: Value,
}

impl NewRun {
    /// A `linkperf client -J` report, with its columns and samples extracted.
    pub fn from_test_report(report: Value) -> NewRun {
        extract::test_run(report)
    }

    /// Any other kind of result (rr, campaign): the JSON and what the caller
    /// knows; the numeric columns stay empty unless filled in.
    pub fn other(kind: &str, host: &str, started_unix_ms: i64, report: Value) -> NewRun {
        NewRun {
            kind: kind.into(),
            started_unix_ms,
            host: host.into(),
            slot: None,
            config: None,
            local_facts: None,
            remote_facts: None,
            metrics: RunMetrics::default(),
            samples: vec![],
            report,
        }
    }

    pub fn in_sweep(mut self, slot: SweepSlot) -> NewRun {
        self.slot = Some(slot);
        self
    }
}

/// A stored run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunRow {
    pub id: i64,
    pub kind: String,
    pub started_unix_ms: i64,
    pub host: String,
    pub slot: Option<SweepSlot>,
    pub metrics: RunMetrics,
    /// Loaded only when asked for.
    pub report: Option<Value>,
}

/// A sweep to create: its specification (free JSON the caller understands)
/// and the parameters of each point.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSweep {
    pub host: String,
    pub created_unix_ms: i64,
    pub spec: Value,
    pub points: Vec<Value>,
    pub planned_runs: i64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SweepRow {
    pub id: i64,
    pub created_unix_ms: i64,
    pub host: String,
    /// "partial" until every planned run is stored, then "complete".
    pub status: String,
    pub spec: Value,
    pub points: Vec<Value>,
    pub planned_runs: i64,
}

/// One line of `results list`.
#[derive(Debug, Clone, PartialEq)]
pub struct ListEntry {
    pub id: i64,
    /// "sweep" or the run kind.
    pub kind: String,
    pub created_unix_ms: i64,
    pub host: String,
    pub parent: Option<i64>,
    pub metrics: RunMetrics,
    pub sweep_status: Option<String>,
    pub sweep_points: Option<i64>,
    pub sweep_planned: Option<i64>,
    pub sweep_runs: Option<i64>,
}

/// What `results list` asks for.
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    pub limit: i64,
    /// Only entries with a smaller id (the next page, newest first).
    pub before: Option<i64>,
    /// Include the runs that belong to sweeps.
    pub all: bool,
    pub kind: Option<String>,
    pub host: Option<String>,
}

/// What an id names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EntryKind {
    Sweep,
    Run(String),
}

/// An open archive.
pub struct Store {
    conn: Conn,
    location: Location,
}

const RUN_COLUMNS: &str = "id, kind, started_unix_ms, host, sweep_id, point, repetition, \
     protocol, direction, sent_bps, received_bps, loss_percent, rtt_mean_ms, \
     cpu_local_percent, cpu_remote_percent, duration_s, interrupted";

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
    }
}

fn run_row(r: &Row) -> RunRow {
    RunRow {
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
        report: None,
    }
}

fn json_text(v: &Option<Value>) -> Val {
    Val::T(v.as_ref().map(|v| v.to_string()))
}

fn parse_json(cell: &Cell, what: &str) -> Result<Value, StoreError> {
    serde_json::from_str(cell.text().unwrap_or("null"))
        .map_err(|e| StoreError::new(format!("the archive holds invalid JSON in {what}: {e}")))
}

impl Store {
    /// Opens (creating if needed) the archive `--db` names, or the default one.
    pub fn open(db: Option<&str>) -> Result<Store, StoreError> {
        Store::open_at(Location::resolve(db)?)
    }

    pub fn open_at(location: Location) -> Result<Store, StoreError> {
        let name = location.describe();
        let conn = match &location {
            Location::Sqlite(path) => open_sqlite(path)?,
            Location::Memory => Conn::Sqlite(
                rusqlite::Connection::open_in_memory()
                    .map_err(|e| StoreError::new(e.to_string()))?,
            ),
            Location::Postgres(url) => open_postgres(url, &name)?,
        };
        let mut store = Store { conn, location };
        store
            .prepare_schema()
            .map_err(|e| e.context(&format!("cannot use the archive {name}")))?;
        Ok(store)
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    pub fn is_postgres(&self) -> bool {
        self.conn.is_postgres()
    }

    fn begin(&mut self) -> Result<(), StoreError> {
        if self.conn.is_postgres() {
            self.conn.batch("BEGIN")
        } else {
            // IMMEDIATE: take the write lock now, so concurrent writers wait
            // (busy timeout) instead of failing at commit.
            self.conn.batch("BEGIN IMMEDIATE")
        }
    }

    /// Runs `f` in one transaction: committed if it succeeds, rolled back if not.
    fn transaction<T>(
        &mut self,
        f: impl FnOnce(&mut Conn) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        self.begin()?;
        match f(&mut self.conn) {
            Ok(v) => {
                self.conn.batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.conn.batch("ROLLBACK");
                Err(e)
            }
        }
    }

    fn prepare_schema(&mut self) -> Result<(), StoreError> {
        // The common case, an archive of this version, needs no write (a
        // client opens the archive once per run).
        if let Ok(Some(v)) = self
            .conn
            .query_i64("SELECT MAX(version) FROM schema_version", &[])
        {
            if v == SCHEMA_VERSION {
                return Ok(());
            }
        }
        let pg = self.conn.is_postgres();
        self.transaction(|c| {
            if pg {
                // Two first users at once must not both create the tables.
                c.batch("SELECT pg_advisory_xact_lock(7165434)")?;
            }
            c.batch("CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)")?;
            let version = c.query_i64("SELECT MAX(version) FROM schema_version", &[])?;
            match version {
                None => {
                    c.batch(&schema::tables_v1(pg))?;
                    c.execute(
                        "INSERT INTO schema_version (version) VALUES ($1)",
                        &[SCHEMA_VERSION.into()],
                    )?;
                    Ok(())
                }
                Some(v) if v > SCHEMA_VERSION => Err(StoreError::new(format!(
                    "its schema version {v} is newer than this linkperf understands \
                     ({SCHEMA_VERSION}); upgrade linkperf or choose another archive with --db"
                ))),
                Some(_) => Ok(()),
            }
        })
    }

    /// The schema version recorded in the archive.
    pub fn schema_version(&mut self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_i64("SELECT MAX(version) FROM schema_version", &[])?
            .unwrap_or(0))
    }

    /// Records a schema version (for tests of version checks and for migrations).
    pub fn set_schema_version(&mut self, version: i64) -> Result<(), StoreError> {
        self.transaction(|c| {
            c.execute("DELETE FROM schema_version", &[])?;
            c.execute(
                "INSERT INTO schema_version (version) VALUES ($1)",
                &[version.into()],
            )?;
            Ok(())
        })
    }

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

    /// The runs of a sweep, by point then repetition.
    pub fn sweep_runs(&mut self, id: i64, with_reports: bool) -> Result<Vec<RunRow>, StoreError> {
        let sql = format!(
            "SELECT {RUN_COLUMNS}{} FROM runs WHERE sweep_id = $1 ORDER BY point, repetition",
            if with_reports { ", report" } else { "" }
        );
        self.conn
            .query(&sql, &[id.into()])?
            .iter()
            .map(|r| {
                let mut row = run_row(r);
                if with_reports {
                    row.report = Some(parse_json(&r[17], "runs.report")?);
                }
                Ok(row)
            })
            .collect()
    }

    pub fn run(&mut self, id: i64, with_report: bool) -> Result<Option<RunRow>, StoreError> {
        let rows = self.conn.query(
            &format!("SELECT {RUN_COLUMNS}, report FROM runs WHERE id = $1"),
            &[id.into()],
        )?;
        rows.first()
            .map(|r| {
                let mut row = run_row(r);
                if with_report {
                    row.report = Some(parse_json(&r[17], "runs.report")?);
                }
                Ok(row)
            })
            .transpose()
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
        let mut sql = String::from(
            "SELECT e.id, e.kind, e.created_unix_ms, e.host, e.parent, \
             r.protocol, r.direction, r.sent_bps, r.received_bps, r.loss_percent, \
             r.rtt_mean_ms, r.cpu_local_percent, r.cpu_remote_percent, r.duration_s, \
             r.interrupted, s.status, s.points, s.planned_runs, \
             (SELECT COUNT(*) FROM runs x WHERE x.sweep_id = s.id) \
             FROM entries e LEFT JOIN runs r ON r.id = e.id LEFT JOIN sweeps s ON s.id = e.id \
             WHERE 1 = 1",
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
                    sweep_status: r[15].text().map(String::from),
                    sweep_points: r[16].i64(),
                    sweep_planned: r[17].i64(),
                    sweep_runs: if sweep { r[18].i64() } else { None },
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

fn insert_run_in(c: &mut Conn, run: &NewRun) -> Result<i64, StoreError> {
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
         remote_facts, report) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, \
         $13, $14, $15, $16, $17, $18, $19, $20, $21)",
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
    Ok(id)
}

fn open_sqlite(path: &Path) -> Result<Conn, StoreError> {
    let name = path.display();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| {
            StoreError::new(format!(
                "cannot create the archive's directory {}: {e}",
                dir.display()
            ))
        })?;
    }
    if path.is_dir() {
        return Err(StoreError::new(format!(
            "cannot open the archive {name}: it is a directory; give --db a file path"
        )));
    }
    let conn = rusqlite::Connection::open(path)
        .map_err(|e| StoreError::new(format!("cannot open the archive {name}: {e}")))?;
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(|e| StoreError::new(format!("cannot open the archive {name}: {e}")))?;
    // WAL with synchronous=NORMAL: a committed run survives a crash of
    // linkperf (not of the machine), and a commit costs no fsync.
    // Leave the WAL to the automatic checkpoints: a checkpoint at every close
    // costs each short-lived client an fsync.
    let _ = conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    );
    conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(()))
        .and_then(|_| conn.execute_batch("PRAGMA synchronous=NORMAL"))
        .map_err(|e| StoreError::new(format!("cannot use the archive {name}: {e}")))?;
    Ok(Conn::Sqlite(conn))
}

fn open_postgres(url: &str, name: &str) -> Result<Conn, StoreError> {
    let mut config: postgres::Config = url
        .parse()
        .map_err(|e| StoreError::new(format!("--db {name}: not a valid PostgreSQL URL: {e}")))?;
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    let client = config.connect(postgres::NoTls).map_err(|e| {
        let mut detail = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            detail = format!("{detail}: {s}");
            source = s.source();
        }
        StoreError::new(format!(
            "cannot connect to the PostgreSQL archive {name}: {detail}"
        ))
    })?;
    Ok(Conn::Pg {
        client: Box::new(client),
        statements: Default::default(),
    })
}

/// `url` with its connections' `search_path` set to `schema`, so several
/// archives (teams, test runs) can share one PostgreSQL database.
pub fn postgres_schema_url(url: &str, schema: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!("{url}{sep}options=-c%20search_path%3D{schema}")
}

fn check_schema_name(schema: &str) -> Result<(), StoreError> {
    if schema.is_empty()
        || !schema
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
    {
        return Err(StoreError::new(format!(
            "'{schema}' is not a schema name (lower-case letters, digits, _)"
        )));
    }
    Ok(())
}

/// Creates a PostgreSQL schema (namespace) if it does not exist.
pub fn create_postgres_schema(url: &str, schema: &str) -> Result<(), StoreError> {
    check_schema_name(schema)?;
    let mut c = open_postgres(url, &redact(url))?;
    c.batch(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
}

/// Drops a PostgreSQL schema and everything in it.
pub fn drop_postgres_schema(url: &str, schema: &str) -> Result<(), StoreError> {
    check_schema_name(schema)?;
    let mut c = open_postgres(url, &redact(url))?;
    c.batch(&format!("DROP SCHEMA IF EXISTS {schema} CASCADE"))
}

#[cfg(test)]
mod tests;
