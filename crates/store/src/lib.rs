//! The linkperf results archive: every test, rr test, campaign and sweep,
//! kept in one schema with two backends, an embedded SQLite file (the default)
//! and PostgreSQL (`postgres://...`) for teams.
//!
//! Runs and sweeps share one id space (the `entries` table), so `linkperf
//! results show ID` needs no kind. Each run is written in one transaction:
//! it is in the archive whole or not at all. docs/archive.md describes the
//! tables and the export format.

mod backend;
mod error;
mod extract;
mod location;
mod monitor;
mod read;
mod records;
mod rr;
mod schema;
mod write;

use backend::Conn;

pub use error::StoreError;
pub use extract::senders_congestion;
pub use location::{
    check_writable, create_postgres_schema, default_path, drop_postgres_schema,
    postgres_schema_url, Access, Location,
};
pub use records::{
    EntryKind, ListEntry, ListFilter, MonitorAlert, MonitorResult, NewRun, NewSweep, RrFigures,
    RrSize, RunMetrics, RunRow, Sample, SweepRow, SweepSlot, TWIN_REPETITION,
};
pub use schema::SCHEMA_VERSION;

pub struct Store {
    conn: Conn,
    location: Location,
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
}

#[cfg(test)]
mod tests;
