//! What every `linkperf results` command shares: its failures (usage or
//! run, one line each), finding a sweep in the archive, and dates and rates
//! in words.

use linkperf_store::{RunRow, Store, SweepRow};

/// A usage problem (exit 2) or a failure (exit 1), one line each.
pub enum Fail {
    Usage(String),
    Run(String),
}

impl From<linkperf_store::StoreError> for Fail {
    fn from(e: linkperf_store::StoreError) -> Self {
        if e.usage {
            Fail::Usage(e.to_string())
        } else {
            Fail::Run(e.to_string())
        }
    }
}

/// `2026-11-21 21:23:06` (UTC) from ms since the epoch.
pub fn utc(ms: i64) -> String {
    let secs = ms.div_euclid(1000);
    let days = secs.div_euclid(86_400);
    let tod = secs.rem_euclid(86_400);
    // Civil date from days since 1970-01-01 (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        tod / 3600,
        (tod % 3600) / 60,
        tod % 60
    )
}

pub fn rate(v: Option<f64>) -> String {
    v.map(linkperf_units::format_rate)
        .unwrap_or_else(|| "-".into())
}

pub fn load_sweep(store: &mut Store, id: i64) -> Result<(SweepRow, Vec<RunRow>), Fail> {
    let sweep = store
        .sweep(id)?
        .ok_or_else(|| Fail::Run(format!("sweep {id} is missing from the archive")))?;
    let runs = store.sweep_runs(id, true)?;
    Ok((sweep, runs))
}

pub fn not_found(store: &Store, id: i64) -> Fail {
    Fail::Usage(format!(
        "no run or sweep {id} in the archive {} (see linkperf results list)",
        store.location().describe()
    ))
}
