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
    pub result: ResultFields,
    pub alerts: Vec<AlertFields>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ResultFields {
    pub test: String,
    pub src: String,
    pub dst: String,
    pub started_unix_ms: i64,
    pub ok: bool,
    pub reason: Option<String>,
    pub throughput_bps: Option<f64>,
    pub loss_ratio: Option<f64>,
    pub rtt_mean_s: Option<f64>,
    pub rtt_p99_s: Option<f64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AlertFields {
    pub unix_ms: i64,
    pub kind: String,
    pub message: String,
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
            result: ResultFields {
                test: r.test.clone(),
                src: r.src.clone(),
                dst: r.dst.clone(),
                started_unix_ms: r.started_unix_ms,
                ok: r.ok,
                reason: r.reason.clone(),
                throughput_bps: r.throughput_bps,
                loss_ratio: r.loss_ratio,
                rtt_mean_s: r.rtt_mean_s,
                rtt_p99_s: r.rtt_p99_s,
            },
            alerts: alerts
                .iter()
                .map(|a| AlertFields {
                    unix_ms: a.unix_ms,
                    kind: a.kind.clone(),
                    message: a.message.clone(),
                })
                .collect(),
        }
    }

    pub fn result(&self) -> MonitorResult {
        let f = &self.result;
        MonitorResult {
            test: f.test.clone(),
            src: f.src.clone(),
            dst: f.dst.clone(),
            started_unix_ms: f.started_unix_ms,
            ok: f.ok,
            reason: f.reason.clone(),
            throughput_bps: f.throughput_bps,
            loss_ratio: f.loss_ratio,
            rtt_mean_s: f.rtt_mean_s,
            rtt_p99_s: f.rtt_p99_s,
            run_id: None,
        }
    }

    pub fn alerts(&self) -> Vec<MonitorAlert> {
        self.alerts
            .iter()
            .map(|a| MonitorAlert {
                unix_ms: a.unix_ms,
                test: self.result.test.clone(),
                src: self.result.src.clone(),
                dst: self.result.dst.clone(),
                kind: a.kind.clone(),
                message: a.message.clone(),
            })
            .collect()
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
