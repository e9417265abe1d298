//! Results waiting for the database: while the archive cannot be written,
//! each finished test (its report, result row, alerts and the job's next
//! run time) is one JSON file in the spool directory, written to a temporary
//! name and renamed so a crash never leaves half a file. When the archive is
//! back they are written oldest first and removed.

use linkperf_store::{MonitorAlert, MonitorResult};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::path::{Path, PathBuf};

/// One finished test, as stored in one transaction.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    pub job: String,
    pub next_unix_ms: i64,
    pub report: Option<Value>,
    pub result: MonitorResult,
    pub alerts: Vec<MonitorAlert>,
}

impl Record {
    pub fn new(
        job: String,
        next_unix_ms: i64,
        report: Option<Value>,
        r: &MonitorResult,
        alerts: &[MonitorAlert],
    ) -> Record {
        Record {
            job,
            next_unix_ms,
            report,
            // The run is stored when the spool is written out: its id is new then.
            result: MonitorResult {
                run_id: None,
                ..r.clone()
            },
            alerts: alerts.to_vec(),
        }
    }

    pub fn result(&self) -> MonitorResult {
        self.result.clone()
    }

    pub fn alerts(&self) -> Vec<MonitorAlert> {
        self.alerts.clone()
    }
}

pub struct Spool {
    dir: PathBuf,
    seq: u64,
}

impl Spool {
    pub fn open(dir: &Path) -> Result<Spool, String> {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("cannot create the spool directory {}: {e}", dir.display()))?;
        Ok(Spool {
            dir: dir.to_path_buf(),
            seq: 0,
        })
    }

    /// Spooled files, oldest first (their names sort by time and sequence).
    pub fn pending(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(&self.dir)
            .map(|d| {
                d.filter_map(|e| e.ok().map(|e| e.path()))
                    .filter(|p| p.extension().is_some_and(|x| x == "json"))
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    }

    pub fn read(path: &Path) -> Result<Record, String> {
        let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
        serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn write(&mut self, record: &Record, now_ms: i64) -> Result<PathBuf, String> {
        self.seq += 1;
        let name = format!("{now_ms:015}-{:06}-{}", self.seq, std::process::id());
        let tmp = self.dir.join(format!("{name}.tmp"));
        let path = self.dir.join(format!("{name}.json"));
        let text = serde_json::to_string(record).map_err(|e| e.to_string())?;
        std::fs::write(&tmp, text)
            .and_then(|_| std::fs::rename(&tmp, &path))
            .map_err(|e| format!("cannot spool to {}: {e}", self.dir.display()))?;
        Ok(path)
    }
}
