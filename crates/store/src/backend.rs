//! The two database connections behind one small interface: run SQL with
//! positional `$1, $2, ...` parameters (both SQLite and PostgreSQL accept that
//! spelling) and get rows back as plain cells.

use crate::error::StoreError;
use serde_json::Value;
use std::collections::HashMap;

/// A parameter. Typed even when NULL, because PostgreSQL checks parameter types.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    I(Option<i64>),
    F(Option<f64>),
    T(Option<String>),
}

impl From<i64> for Val {
    fn from(v: i64) -> Self {
        Val::I(Some(v))
    }
}
impl From<Option<i64>> for Val {
    fn from(v: Option<i64>) -> Self {
        Val::I(v)
    }
}
impl From<f64> for Val {
    fn from(v: f64) -> Self {
        Val::F(Some(v))
    }
}
impl From<Option<f64>> for Val {
    fn from(v: Option<f64>) -> Self {
        Val::F(v)
    }
}
impl From<&str> for Val {
    fn from(v: &str) -> Self {
        Val::T(Some(v.to_string()))
    }
}
impl From<String> for Val {
    fn from(v: String) -> Self {
        Val::T(Some(v))
    }
}
impl From<Option<String>> for Val {
    fn from(v: Option<String>) -> Self {
        Val::T(v)
    }
}

impl rusqlite::ToSql for Val {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        match self {
            Val::I(v) => v.to_sql(),
            Val::F(v) => v.to_sql(),
            Val::T(v) => v.to_sql(),
        }
    }
}

/// One value read back.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Null,
    I(i64),
    F(f64),
    T(String),
}

impl Cell {
    pub fn i64(&self) -> Option<i64> {
        match self {
            Cell::I(v) => Some(*v),
            Cell::F(v) => Some(*v as i64),
            _ => None,
        }
    }
    pub fn f64(&self) -> Option<f64> {
        match self {
            Cell::F(v) => Some(*v),
            Cell::I(v) => Some(*v as f64),
            _ => None,
        }
    }
    pub fn text(&self) -> Option<&str> {
        match self {
            Cell::T(v) => Some(v),
            _ => None,
        }
    }
    pub fn string(&self) -> String {
        self.text().unwrap_or_default().to_string()
    }
}

pub type Row = Vec<Cell>;

pub enum Conn {
    Sqlite(rusqlite::Connection),
    Pg {
        client: Box<postgres::Client>,
        statements: HashMap<String, postgres::Statement>,
    },
}

fn sqlite_err(e: rusqlite::Error) -> StoreError {
    StoreError::new(e.to_string())
}

/// PostgreSQL errors: the server's own message when there is one, and a
/// plain statement when the connection is gone.
pub fn pg_err(e: postgres::Error) -> StoreError {
    if e.is_closed() {
        return StoreError::lost("the connection to PostgreSQL was closed");
    }
    if let Some(db) = e.as_db_error() {
        return StoreError::new(format!("PostgreSQL: {}", db.message()));
    }
    let text = e.to_string();
    let lost = text.contains("connection") || text.contains("closed") || text.contains("I/O");
    let mut full = text;
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        full = format!("{full}: {s}");
        source = s.source();
    }
    if lost {
        StoreError::lost(format!("PostgreSQL: {full}"))
    } else {
        StoreError::new(format!("PostgreSQL: {full}"))
    }
}

impl Conn {
    pub fn is_postgres(&self) -> bool {
        matches!(self, Conn::Pg { .. })
    }

    /// Runs several statements without parameters.
    pub fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        match self {
            Conn::Sqlite(c) => c.execute_batch(sql).map_err(sqlite_err),
            Conn::Pg { client, .. } => client.batch_execute(sql).map_err(pg_err),
        }
    }

    /// Runs one statement, returning the number of rows it changed.
    pub fn execute(&mut self, sql: &str, params: &[Val]) -> Result<u64, StoreError> {
        match self {
            Conn::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql).map_err(sqlite_err)?;
                stmt.execute(rusqlite::params_from_iter(params.iter()))
                    .map(|n| n as u64)
                    .map_err(sqlite_err)
            }
            Conn::Pg { client, statements } => {
                let stmt = pg_statement(client, statements, sql)?;
                let boxed = pg_params(params);
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
                    boxed.iter().map(|b| b.as_ref()).collect();
                client.execute(&stmt, &refs).map_err(pg_err)
            }
        }
    }

    /// Runs a query, returning every row.
    pub fn query(&mut self, sql: &str, params: &[Val]) -> Result<Vec<Row>, StoreError> {
        match self {
            Conn::Sqlite(c) => {
                let mut stmt = c.prepare_cached(sql).map_err(sqlite_err)?;
                let n = stmt.column_count();
                let mut rows = stmt
                    .query(rusqlite::params_from_iter(params.iter()))
                    .map_err(sqlite_err)?;
                let mut out = Vec::new();
                while let Some(row) = rows.next().map_err(sqlite_err)? {
                    let mut cells = Vec::with_capacity(n);
                    for i in 0..n {
                        use rusqlite::types::ValueRef;
                        cells.push(match row.get_ref(i).map_err(sqlite_err)? {
                            ValueRef::Null => Cell::Null,
                            ValueRef::Integer(v) => Cell::I(v),
                            ValueRef::Real(v) => Cell::F(v),
                            ValueRef::Text(t) | ValueRef::Blob(t) => {
                                Cell::T(String::from_utf8_lossy(t).into_owned())
                            }
                        });
                    }
                    out.push(cells);
                }
                Ok(out)
            }
            Conn::Pg { client, statements } => {
                let stmt = pg_statement(client, statements, sql)?;
                let boxed = pg_params(params);
                let refs: Vec<&(dyn postgres::types::ToSql + Sync)> =
                    boxed.iter().map(|b| b.as_ref()).collect();
                let rows = client.query(&stmt, &refs).map_err(pg_err)?;
                rows.iter().map(pg_row).collect()
            }
        }
    }

    /// The first column of the first row as an integer.
    pub fn query_i64(&mut self, sql: &str, params: &[Val]) -> Result<Option<i64>, StoreError> {
        Ok(self
            .query(sql, params)?
            .first()
            .and_then(|r| r.first())
            .and_then(Cell::i64))
    }
}

fn pg_statement(
    client: &mut postgres::Client,
    cache: &mut HashMap<String, postgres::Statement>,
    sql: &str,
) -> Result<postgres::Statement, StoreError> {
    if let Some(s) = cache.get(sql) {
        return Ok(s.clone());
    }
    let s = client.prepare(sql).map_err(pg_err)?;
    cache.insert(sql.to_string(), s.clone());
    Ok(s)
}

fn pg_params(params: &[Val]) -> Vec<Box<dyn postgres::types::ToSql + Sync>> {
    params
        .iter()
        .map(|p| -> Box<dyn postgres::types::ToSql + Sync> {
            match p {
                Val::I(v) => Box::new(*v),
                Val::F(v) => Box::new(*v),
                Val::T(v) => Box::new(v.clone()),
            }
        })
        .collect()
}

fn pg_row(row: &postgres::Row) -> Result<Row, StoreError> {
    use postgres::types::Type;
    let mut cells = Vec::with_capacity(row.len());
    for (i, col) in row.columns().iter().enumerate() {
        let ty = col.type_();
        let cell = if *ty == Type::INT8 {
            row.try_get::<_, Option<i64>>(i)
                .map_err(pg_err)?
                .map_or(Cell::Null, Cell::I)
        } else if *ty == Type::INT4 {
            row.try_get::<_, Option<i32>>(i)
                .map_err(pg_err)?
                .map_or(Cell::Null, |v| Cell::I(v.into()))
        } else if *ty == Type::INT2 {
            row.try_get::<_, Option<i16>>(i)
                .map_err(pg_err)?
                .map_or(Cell::Null, |v| Cell::I(v.into()))
        } else if *ty == Type::FLOAT8 {
            row.try_get::<_, Option<f64>>(i)
                .map_err(pg_err)?
                .map_or(Cell::Null, Cell::F)
        } else if *ty == Type::FLOAT4 {
            row.try_get::<_, Option<f32>>(i)
                .map_err(pg_err)?
                .map_or(Cell::Null, |v| Cell::F(v.into()))
        } else if *ty == Type::BOOL {
            row.try_get::<_, Option<bool>>(i)
                .map_err(pg_err)?
                .map_or(Cell::Null, |v| Cell::I(v.into()))
        } else {
            row.try_get::<_, Option<String>>(i)
                .map_err(pg_err)?
                .map_or(Cell::Null, Cell::T)
        };
        cells.push(cell);
    }
    Ok(cells)
}

/// A JSON column's value; `what` names the column in the error.
pub(crate) fn parse_json(cell: &Cell, what: &str) -> Result<Value, StoreError> {
    serde_json::from_str(cell.text().unwrap_or("null"))
        .map_err(|e| StoreError::new(format!("the archive holds invalid JSON in {what}: {e}")))
}
