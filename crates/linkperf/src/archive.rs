//! Storing a measured result in the archive (`--db`, `$LINKPERF_DB` or the
//! default one) and telling the user where: the id is printed as the last
//! text line and as the `id` field of the JSON document.

use serde::Serialize;

/// Where a result was stored: its id and the archive, named for people.
pub type StoredAt = Option<(i64, String)>;

/// A document printed with the archive id of the result it describes
/// (`null` when it was not stored).
#[derive(Serialize)]
pub struct WithId<'a, T: Serialize> {
    #[serde(flatten)]
    pub document: &'a T,
    pub id: Option<i64>,
}

impl<'a, T: Serialize> WithId<'a, T> {
    pub fn new(document: &'a T, stored: &StoredAt) -> Self {
        WithId {
            document,
            id: stored.as_ref().map(|s| s.0),
        }
    }
}

/// Stores `run`; a failure is a warning on stderr, never a lost result.
pub fn store(run: &linkperf_store::NewRun, db: Option<&str>) -> StoredAt {
    let stored = linkperf_store::Store::open(db)
        .and_then(|mut s| Ok((s.insert_run(run)?, s.location().describe())));
    match stored {
        Ok(at) => Some(at),
        Err(e) => {
            eprintln!("linkperf: warning: the result was not stored: {e}");
            None
        }
    }
}

/// Stores a `linkperf client` report.
pub fn store_test(report: &crate::report::Report, db: Option<&str>) -> StoredAt {
    let doc = serde_json::to_value(report).expect("report serialises");
    store(&linkperf_store::NewRun::from_test_report(doc), db)
}

/// Stores a `linkperf rr` report.
pub fn store_rr(report: &crate::rr::report::RrReport, db: Option<&str>) -> StoredAt {
    let doc = serde_json::to_value(report).expect("rr report serialises");
    store(&linkperf_store::NewRun::from_rr_report(doc), db)
}
