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
mod location;
mod rr;
mod schema;

use backend::{Cell, Conn, Row, Val};
use serde_json::Value;
use std::fmt;
use std::time::{SystemTime, UNIX_EPOCH};

pub use extract::senders_congestion;
pub use location::{
    check_writable, create_postgres_schema, default_path, drop_postgres_schema,
    postgres_schema_url, Access, Location,
};
pub use rr::{RrFigures, RrSize};
pub use schema::SCHEMA_VERSION;

/// A failure of the archive, as one line for the user.
#[derive(Debug, Clone, PartialEq)]
pub struct StoreError {
    pub message: String,
    /// The database went away (PostgreSQL connection lost).
    pub connection_lost: bool,
    /// The user named an archive that cannot be (a missing directory, a
    /// reader's missing archive, a malformed --db): a usage error, exit 2.
    pub usage: bool,
}

impl StoreError {
    fn new(message: impl Into<String>) -> StoreError {
        StoreError {
            message: message.into(),
            connection_lost: false,
            usage: false,
        }
    }
    fn lost(message: impl Into<String>) -> StoreError {
        StoreError {
            connection_lost: true,
            ..StoreError::new(message)
        }
    }
    fn usage(message: impl Into<String>) -> StoreError {
        StoreError {
            usage: true,
            ..StoreError::new(message)
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
    /// The congestion control the sender's sockets used (read back from them).
    pub congestion: Option<String>,
    /// A campaign's flows in one round of its phases.
    pub flows: Option<i64>,
    /// The hosts a campaign's flows run between.
    pub hosts: Option<i64>,
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
    /// `linkperf rr` figures and its `--sizes` points.
    pub rr: Option<RrFigures>,
    pub rr_sizes: Vec<RrSize>,
    /// The full JSON document of the result.
    pub report: Value,
}

impl NewRun {
    /// A `linkperf client -J` report, with its columns and samples extracted.
    pub fn from_test_report(report: Value) -> NewRun {
        extract::test_run(report)
    }

    /// A `linkperf rr -J` report, with its figures extracted.
    pub fn from_rr_report(report: Value) -> NewRun {
        rr::rr_run(report)
    }

    /// Any other kind of result: the JSON and what the caller knows. The
    /// numeric columns of a "campaign" (a `linkperf campaign run -J`
    /// document) are taken from it; other kinds' stay empty unless filled in.
    pub fn other(kind: &str, host: &str, started_unix_ms: i64, report: Value) -> NewRun {
        let metrics = if kind == "campaign" {
            extract::campaign_metrics(&report)
        } else {
            RunMetrics::default()
        };
        NewRun {
            kind: kind.into(),
            started_unix_ms,
            host: host.into(),
            slot: None,
            config: None,
            local_facts: None,
            remote_facts: None,
            metrics,
            samples: vec![],
            rr: None,
            rr_sizes: vec![],
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
    /// A `linkperf rr` run's figures.
    pub rr: Option<RrFigures>,
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
    pub rr: Option<RrFigures>,
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

/// The `runs r` columns `run_row` reads, then (joined `rr_runs q`) the rr
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

fn json_text(v: &Option<Value>) -> Val {
    Val::T(v.as_ref().map(|v| v.to_string()))
}

pub(crate) fn parse_json(cell: &Cell, what: &str) -> Result<Value, StoreError> {
    serde_json::from_str(cell.text().unwrap_or("null"))
        .map_err(|e| StoreError::new(format!("the archive holds invalid JSON in {what}: {e}")))
}

impl Store {
    /// Opens the archive `--db` names, or the default one, to store
    /// results: a SQLite file is created on first use, in an existing
    /// directory (the default location's directory is created too).
    pub fn open(db: Option<&str>) -> Result<Store, StoreError> {
        let (location, default) = Location::resolve_defaulted(db)?;
        Store::open_with(location, Access::Write, default)
    }

    /// Opens the archive `--db` names, or the default one, to read it: an
    /// archive that does not exist is an error (never a new empty one).
    pub fn open_existing(db: Option<&str>) -> Result<Store, StoreError> {
        let (location, _) = Location::resolve_defaulted(db)?;
        Store::open_with(location, Access::Read, false)
    }

    /// Opens `location` to store results (a SQLite file's directory must exist).
    pub fn open_at(location: Location) -> Result<Store, StoreError> {
        Store::open_with(location, Access::Write, false)
    }

    /// Opens `location` for `access`; `create_dir`: a writer may create the
    /// SQLite file's directory.
    pub fn open_with(
        location: Location,
        access: Access,
        create_dir: bool,
    ) -> Result<Store, StoreError> {
        let name = location.describe();
        let conn = match &location {
            Location::Sqlite(path) => location::open_sqlite(path, access, create_dir)?,
            Location::Memory => Conn::Sqlite(
                rusqlite::Connection::open_in_memory()
                    .map_err(|e| StoreError::new(e.to_string()))?,
            ),
            Location::Postgres(url) => location::open_postgres(url, &name)?,
        };
        let mut store = Store { conn, location };
        if access == Access::Read && store.stored_version().is_none() {
            return Err(StoreError::usage(format!(
                "no archive at {name}: nothing has been stored there (check --db and $LINKPERF_DB)"
            )));
        }
        store
            .prepare_schema()
            .map_err(|e| e.context(&format!("cannot use the archive {name}")))?;
        Ok(store)
    }

    /// The archive's schema version; `None` when it has no linkperf tables.
    fn stored_version(&mut self) -> Option<i64> {
        self.conn
            .query_i64("SELECT MAX(version) FROM schema_version", &[])
            .ok()
            .flatten()
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
        if self.stored_version() == Some(SCHEMA_VERSION) {
            return Ok(());
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
                Some(v) if v > SCHEMA_VERSION => Err(StoreError::new(format!(
                    "its schema version {v} is newer than this linkperf understands \
                     ({SCHEMA_VERSION}); upgrade linkperf or choose another archive with --db"
                ))),
                Some(v) if v == SCHEMA_VERSION => Ok(()),
                old => {
                    if old.is_none() {
                        c.batch(&schema::tables_v1(pg))?;
                    }
                    c.batch(&schema::tables_v2(pg))?;
                    if old.is_some() {
                        schema::fill_v2_columns(c)?;
                    }
                    c.execute("DELETE FROM schema_version", &[])?;
                    c.execute(
                        "INSERT INTO schema_version (version) VALUES ($1)",
                        &[SCHEMA_VERSION.into()],
                    )?;
                    Ok(())
                }
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
        let sql = run_select(
            "WHERE r.sweep_id = $1 ORDER BY r.point, r.repetition",
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
             (SELECT COUNT(*) FROM runs x WHERE x.sweep_id = s.id), {} \
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

#[cfg(test)]
mod tests;
