//! Sweep and archive tests' plumbing: scratch archives, sweep command lines,
//! PostgreSQL schemas of their own, and polling the archive while a sweep runs.

use super::*;
use linkperf_store::Store;
use serde_json::Value;
use std::collections::HashSet;
use std::path::PathBuf;
use std::process::Child;
use std::time::Duration;

/// A fresh directory for one test's archive.
pub fn scratch(name: &str) -> PathBuf {
    linkperf_testsupport::scratch("lp-sweep", name)
}

pub fn db_arg(dir: &std::path::Path) -> String {
    dir.join("archive.db").display().to_string()
}

/// Runs `linkperf ARGS` with a longer watchdog (sweeps are several runs).
pub fn long(args: &[&str]) -> Run {
    wait_child(spawn(args), Duration::from_secs(120))
}

/// `linkperf results --db DB export ID --format FORMAT`, asserted successful.
pub fn export(db: &str, id: &str, format: &str) -> Run {
    let run = long(&["results", "--db", db, "export", id, "--format", format]);
    run.assert_success("results export");
    run
}

pub fn sweep_args<'a>(port: &'a str, db: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["sweep", "127.0.0.1", "-p", port, "--db", db];
    a.extend_from_slice(extra);
    a
}

pub fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

pub fn pg_url() -> Option<String> {
    let url = std::env::var("LINKPERF_TEST_PG")
        .ok()
        .filter(|u| !u.is_empty());
    if url.is_none() {
        linkperf_testsupport::skip("set LINKPERF_TEST_PG=postgres://USER:PASS@127.0.0.1/DB to test the PostgreSQL backend (scripts/test sets it)");
    }
    url
}

/// A PostgreSQL schema of its own for one test, dropped at the end.
pub struct PgSchema {
    base: String,
    schema: String,
    pub url: String,
}

impl PgSchema {
    pub fn new(base: &str, tag: &str) -> PgSchema {
        let schema = format!("lp_{tag}_{}", std::process::id());
        let url = linkperf_store::postgres_schema_url(base, &schema);
        linkperf_store::drop_postgres_schema(base, &schema).unwrap();
        linkperf_store::create_postgres_schema(base, &schema).unwrap();
        PgSchema {
            base: base.into(),
            schema,
            url,
        }
    }
}

impl Drop for PgSchema {
    fn drop(&mut self) {
        let _ = linkperf_store::drop_postgres_schema(&self.base, &self.schema);
    }
}

/// Received rate of each window value in a sweep's `-J` output.
pub fn rates_by_window(v: &Value) -> Vec<(String, f64)> {
    array_at(v, "/points")
        .iter()
        .map(|p| {
            (
                p["params"]["window"].as_str().unwrap().to_string(),
                f64_at(p, "/received_bits_per_second/mean"),
            )
        })
        .collect()
}

/// Polls the archive until a sweep has `n` runs stored.
pub fn wait_runs(db: &str, sweep: i64, n: usize, limit: Duration) -> usize {
    let stored = || {
        Store::open(Some(db))
            .and_then(|mut s| s.sweep_runs(sweep, false))
            .map(|r| r.len())
            .unwrap_or(0)
    };
    poll(limit, Duration::from_millis(50), || {
        Some(stored()).filter(|&got| got >= n)
    })
    .unwrap_or_else(stored)
}

pub fn newest_sweep(db: &str) -> Option<i64> {
    let mut s = Store::open(Some(db)).ok()?;
    let l = s
        .list(&linkperf_store::ListFilter {
            limit: 1,
            kind: Some("sweep".into()),
            ..Default::default()
        })
        .ok()?;
    l.first().map(|e| e.id)
}

/// Polls the archive (30 s at most) until the sweep `child` runs is in it;
/// when it never is, or the sweep ended first, fails with the sweep's exit
/// and what it said.
pub fn wait_sweep(db: &str, child: &mut Child) -> i64 {
    // Some(Some(id)): it is there; Some(None): the sweep ended without it.
    let seen = poll(Duration::from_secs(30), Duration::from_millis(20), || {
        let ended = matches!(child.try_wait(), Ok(Some(_)));
        match newest_sweep(db) {
            Some(id) => Some(Some(id)),
            None if ended => Some(None),
            None => None,
        }
    });
    if let Some(Some(id)) = seen {
        return id;
    }
    let _ = child.kill();
    let status = child.wait().ok();
    let mut stderr = String::new();
    if let Some(mut pipe) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
    }
    panic!("the sweep never appeared in {db} (sweep exit: {status:?}): {stderr}");
}

/// Kills a sweep after some runs, resumes it, and checks the full set is
/// there exactly once, with the runs stored before the kill unchanged.
pub fn kill_and_resume(db: &str, port: u16, shuffle: bool) {
    let port = port.to_string();
    let mut args = sweep_args(
        &port,
        db,
        &["-t", "0.3", "--vary", "length=8K,16K,32K", "--repeat", "3"],
    );
    if shuffle {
        args.extend_from_slice(&["--shuffle", "--seed", "7"]);
    }
    let mut child = spawn(&args);
    let id = wait_sweep(db, &mut child);
    let stored = wait_runs(db, id, 3, Duration::from_secs(30));
    assert!(stored >= 3, "only {stored} runs stored");
    send_signal(&child, libc::SIGKILL);
    let killed = wait_child(child, Duration::from_secs(10));
    assert_eq!(killed.code(), None, "killed by a signal");
    let before = Store::open(Some(db)).unwrap().sweep_runs(id, true).unwrap();
    assert!(before.len() < 9, "killed before the end: {}", before.len());
    assert_eq!(
        Store::open(Some(db))
            .unwrap()
            .sweep(id)
            .unwrap()
            .unwrap()
            .status,
        "partial"
    );

    let resumed = long(&["sweep", "--resume", &id.to_string(), "--db", db, "-J"]);
    assert_eq!(
        resumed.code(),
        Some(0),
        "{}\n{}",
        resumed.stdout,
        resumed.stderr
    );
    let v = resumed.json();
    assert_eq!(v["id"], id);
    assert_eq!(v["status"], "complete");
    let mut s = Store::open(Some(db)).unwrap();
    let after = s.sweep_runs(id, true).unwrap();
    assert_eq!(after.len(), 9, "3 points x 3 repetitions");
    let slots: HashSet<(i64, i64)> = after
        .iter()
        .map(|r| {
            let slot = r.slot.unwrap();
            (slot.point, slot.repetition)
        })
        .collect();
    assert_eq!(slots.len(), 9, "no duplicates");
    for r in &before {
        assert!(after.contains(r), "run {} kept as it was", r.id);
    }
    for r in &after {
        let want = [8192, 16384, 32768][r.slot.unwrap().point as usize];
        assert_eq!(u64_at(r.report.as_ref().unwrap(), "/test/length"), want);
    }
    let sweep = s.sweep(id).unwrap().unwrap();
    assert_eq!(sweep.status, "complete");
    if shuffle {
        assert_eq!(sweep.spec["seed"], 7);
        assert_eq!(sweep.spec["order"], "shuffled");
    }
    // Resuming a complete sweep runs nothing more.
    let again = long(&["sweep", "--resume", &id.to_string(), "--db", db, "-J"]);
    assert_eq!(again.code(), Some(0), "{}", again.stderr);
    assert_eq!(s.sweep_runs(id, false).unwrap().len(), 9);
}

/// A loopback server and an archive of its own in a fresh scratch directory
/// (removed when dropped): what the sweep, archive and report tests run
/// against.
pub struct Loopback {
    pub server: Server,
    pub dir: PathBuf,
    /// The archive's path, for `--db`.
    pub db: String,
    /// The server's port as text, for `-p`.
    pub port: String,
}

impl Loopback {
    pub fn new(name: &str) -> Loopback {
        let server = Server::start();
        let dir = scratch(name);
        let db = db_arg(&dir);
        let port = server.port.to_string();
        Loopback {
            server,
            dir,
            db,
            port,
        }
    }

    /// `sweep 127.0.0.1 -p PORT --db DB EXTRA...`.
    pub fn sweep_args<'a>(&'a self, extra: &[&'a str]) -> Vec<&'a str> {
        sweep_args(&self.port, &self.db, extra)
    }

    /// Runs a sweep against the server into the archive, to completion.
    pub fn sweep(&self, extra: &[&str]) -> Run {
        long(&self.sweep_args(extra))
    }

    /// Starts a sweep against the server into the archive.
    pub fn spawn_sweep(&self, extra: &[&str]) -> Child {
        spawn(&self.sweep_args(extra))
    }
}

impl Drop for Loopback {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
