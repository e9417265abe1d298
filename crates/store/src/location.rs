//! Where the archive lives and how a connection to it is opened: a SQLite
//! file (created on first write, never by a reader, and never in a
//! directory that does not exist unless it is the default one) or a
//! PostgreSQL URL.

use crate::backend::Conn;
use crate::error::StoreError;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Where the archive lives.
#[derive(Debug, Clone, PartialEq)]
pub enum Location {
    Sqlite(PathBuf),
    /// A private in-memory SQLite database (tests, `--no-store` sweeps).
    Memory,
    Postgres(String),
}

/// What the opener means to do with the archive.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Store results: a SQLite file is created in an existing directory.
    Write,
    /// Only read (list, show, compare, export): the archive must exist.
    Read,
}

impl Location {
    /// `--db` as given, else `$LINKPERF_DB`, else the default file in the
    /// user's data directory.
    pub fn resolve(db: Option<&str>) -> Result<Location, StoreError> {
        Location::resolve_defaulted(db).map(|(l, _)| l)
    }

    /// As `resolve`, and whether it is the default location (whose
    /// directory a writer may create).
    pub(crate) fn resolve_defaulted(db: Option<&str>) -> Result<(Location, bool), StoreError> {
        let from_env = std::env::var("LINKPERF_DB").ok().filter(|s| !s.is_empty());
        match db.map(String::from).or(from_env) {
            Some(s) => Ok((Location::parse(&s)?, false)),
            None => Ok((Location::Sqlite(default_path()?), true)),
        }
    }

    pub fn parse(s: &str) -> Result<Location, StoreError> {
        if s.trim().is_empty() {
            return Err(StoreError::usage(
                "--db needs a file path or a postgres:// URL",
            ));
        }
        if s.starts_with("postgres://") || s.starts_with("postgresql://") {
            Ok(Location::Postgres(s.to_string()))
        } else if s == ":memory:" {
            Ok(Location::Memory)
        } else if s.contains("://") {
            Err(StoreError::usage(format!(
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

/// Checks, before a test runs, that its result could be stored where `db`
/// (or `$LINKPERF_DB`) says: a SQLite file needs an existing directory
/// unless it is the default location. PostgreSQL is not contacted.
pub fn check_writable(db: Option<&str>) -> Result<(), StoreError> {
    let (location, default) = Location::resolve_defaulted(db)?;
    if let Location::Sqlite(path) = &location {
        if path.is_dir() {
            return Err(is_a_directory(path));
        }
        if !default {
            if let Some(dir) = missing_parent(path) {
                return Err(StoreError::usage(format!(
                    "cannot store results in {}: the directory {} does not exist \
                     (create it, or give --db another path)",
                    path.display(),
                    dir.display()
                )));
            }
        }
    }
    Ok(())
}

pub(crate) fn redact(url: &str) -> String {
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
                return Err(StoreError::usage(
                    "no HOME or XDG_DATA_HOME to put the archive in: give --db PATH",
                ))
            }
        },
    };
    Ok(base.join("linkperf").join("archive.db"))
}

/// The directory of `path` when it does not exist.
fn missing_parent(path: &Path) -> Option<&Path> {
    path.parent()
        .filter(|d| !d.as_os_str().is_empty() && !d.exists())
}

fn is_a_directory(path: &Path) -> StoreError {
    StoreError::usage(format!(
        "cannot open the archive {}: it is a directory; give --db a file path",
        path.display()
    ))
}

/// Opens a SQLite archive. A writer creates the file (and, when `create_dir`,
/// its directory); a reader needs both to exist already.
pub(crate) fn open_sqlite(
    path: &Path,
    access: Access,
    create_dir: bool,
) -> Result<Conn, StoreError> {
    let name = path.display();
    if path.is_dir() {
        return Err(is_a_directory(path));
    }
    if let Some(dir) = missing_parent(path) {
        match access {
            Access::Read => {
                return Err(StoreError::usage(format!(
                    "no archive at {name}: the directory {} does not exist \
                     (check --db and $LINKPERF_DB)",
                    dir.display()
                )))
            }
            Access::Write if !create_dir => {
                return Err(StoreError::usage(format!(
                    "cannot store results in {name}: the directory {} does not exist \
                     (create it, or give --db another path)",
                    dir.display()
                )))
            }
            Access::Write => std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::new(format!(
                    "cannot create the archive's directory {}: {e}",
                    dir.display()
                ))
            })?,
        }
    }
    if access == Access::Read && !path.exists() {
        return Err(StoreError::usage(format!(
            "no archive at {name}: nothing has been stored there (check --db and $LINKPERF_DB)"
        )));
    }
    use rusqlite::OpenFlags;
    let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_URI
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    if access == Access::Write {
        flags |= OpenFlags::SQLITE_OPEN_CREATE;
    }
    let conn = rusqlite::Connection::open_with_flags(path, flags)
        .map_err(|e| StoreError::new(format!("cannot open the archive {name}: {e}")))?;
    conn.busy_timeout(BUSY_WAIT)
        .map_err(|e| StoreError::new(format!("cannot open the archive {name}: {e}")))?;
    // WAL with synchronous=NORMAL: a committed run survives a crash of
    // linkperf (not of the machine), and a commit costs no fsync.
    // Leave the WAL to the automatic checkpoints: a checkpoint at every close
    // costs each short-lived client an fsync.
    let _ = conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
        true,
    );
    use_wal(&conn, BUSY_WAIT)
        .and_then(|_| conn.execute_batch("PRAGMA synchronous=NORMAL"))
        .map_err(|e| StoreError::new(format!("cannot use the archive {name}: {e}")))?;
    Ok(Conn::Sqlite(conn))
}

/// How long a SQLite user waits for another's lock.
const BUSY_WAIT: Duration = Duration::from_secs(10);

/// Puts the archive in WAL mode. The switch of a new file needs it to
/// itself, and SQLite answers "database is locked" at once, without its busy
/// wait, while another connection holds it (first users of a new archive at
/// once: a campaign's clients, a sweep and a reader): tried again every few
/// milliseconds for up to `wait`, as any other lock is waited for.
fn use_wal(conn: &rusqlite::Connection, wait: Duration) -> rusqlite::Result<()> {
    let start = std::time::Instant::now();
    loop {
        match conn.query_row("PRAGMA journal_mode=WAL", [], |_| Ok(())) {
            Err(e)
                if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DatabaseBusy)
                    && start.elapsed() < wait =>
            {
                std::thread::sleep(Duration::from_millis(2));
            }
            done => return done,
        }
    }
}

pub(crate) fn open_postgres(url: &str, name: &str) -> Result<Conn, StoreError> {
    let mut config: postgres::Config = url
        .parse()
        .map_err(|e| StoreError::usage(format!("--db {name}: not a valid PostgreSQL URL: {e}")))?;
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
