//! `linkperf monitor run --db postgres://...` while the database goes away:
//! results are spooled to local disk and written when it returns, none
//! lost, none twice. The test runs its own PostgreSQL (initdb into a temp
//! directory, its own port) and stops and starts it mid-run; the shared
//! PostgreSQL service is never touched.

mod common;
mod monitor_common;

use common::free_port;
use linkperf_store::{Location, Store};
use linkperf_testsupport::{is_root, scratch, skip};
use monitor_common::*;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";

/// A private PostgreSQL cluster, stopped when dropped.
struct PrivatePg {
    data: PathBuf,
    port: u16,
}

impl PrivatePg {
    fn pg_ctl(&self, args: &[&str]) {
        let options = format!(
            "-p {} -k {} -c listen_addresses=127.0.0.1 -c fsync=off",
            self.port,
            self.data.display()
        );
        let out = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(Path::new(PG_BIN).join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(["-o", &options, "-l"])
            .arg(self.data.join("server.log"))
            .args(["-w", "-t", "30"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "pg_ctl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn init(dir: &Path) -> PrivatePg {
        let data = dir.join("pg");
        std::fs::create_dir_all(&data).unwrap();
        let chown = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(dir)
            .status()
            .unwrap();
        assert!(chown.success());
        let out = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(Path::new(PG_BIN).join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-A", "trust", "-U", "linkperf", "--no-sync"])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let pg = PrivatePg {
            data,
            port: free_port(),
        };
        pg.pg_ctl(&["start"]);
        pg
    }

    fn url(&self) -> String {
        format!("postgres://linkperf@127.0.0.1:{}/postgres", self.port)
    }
}

impl Drop for PrivatePg {
    fn drop(&mut self) {
        let _ = Command::new("runuser")
            .args(["-u", "postgres", "--"])
            .arg(Path::new(PG_BIN).join("pg_ctl"))
            .arg("-D")
            .arg(&self.data)
            .args(["-m", "immediate", "stop"])
            .output();
    }
}

#[test]
fn results_wait_on_disk_while_postgres_is_down_and_none_is_lost() {
    if !is_root() || !Path::new(PG_BIN).join("initdb").exists() {
        skip("needs root and PostgreSQL 15's initdb to run a private cluster");
        return;
    }
    // Rates are measured: a stalled machine gets another attempt.
    linkperf_testsupport::stall::retry_when_stalled(pg_body);
}

fn pg_body() {
    let dir = scratch("lp-monitor", "pg");
    let pg = PrivatePg::init(&dir);
    let agents = [agent(), agent()];
    let file = dir.join("pair.toml");
    std::fs::write(
        &file,
        format!(
            "{}[[group]]\nname = \"g\"\nmesh = [\"a\", \"b\"]\n[[test]]\nname = \"udp\"\n\
             group = \"g\"\ninterval = \"1500ms\"\nslip = \"200ms\"\nduration = \"300ms\"\n\
             udp = true\nbitrate = \"10M\"\n",
            hosts_toml(&[("a", agents[0].port), ("b", agents[1].port)])
        ),
    )
    .unwrap();
    let spool = dir.join("spool");
    let url = pg.url();
    let spool_arg = spool.display().to_string();
    let mut c = Controller::start(
        &file,
        &["--db", &url, "--spool", &spool_arg, "--run-for", "14s"],
    );
    c.wait_events("result", 2, Duration::from_secs(20));
    pg.pg_ctl(&["-m", "fast", "stop"]);
    // Results go on while the database is away, onto the disk.
    let spooled = c.wait_events("spooled", 2, Duration::from_secs(20)).len();
    assert!(std::fs::read_dir(&spool).unwrap().count() >= 2);
    pg.pg_ctl(&["start"]);
    assert_eq!(
        c.wait(Duration::from_secs(40)),
        Some(0),
        "{}",
        c.stderr.lock().unwrap()
    );
    let results = c.events("result");
    assert!(c.events("unspooled").len() >= spooled);
    assert_eq!(
        std::fs::read_dir(&spool).unwrap().count(),
        0,
        "spool not emptied"
    );
    let mut store = Store::open_at(Location::Postgres(url)).unwrap();
    let stored = store.monitor_results().unwrap();
    let logged: Vec<(String, i64)> = results
        .iter()
        .map(|e| {
            (
                e["job"].as_str().unwrap().to_string(),
                e["started_unix_ms"].as_i64().unwrap(),
            )
        })
        .collect();
    let mut in_db: Vec<(String, i64)> = stored
        .iter()
        .map(|r| (format!("{}/{}/{}", r.test, r.src, r.dst), r.started_unix_ms))
        .collect();
    let mut want = logged.clone();
    want.sort();
    in_db.sort();
    // Every result the controller logged is in the database once.
    assert_eq!(in_db, want);
    // And each successful one with its full run, at the paced 10 Mbit/s.
    for r in &stored {
        assert!(r.ok, "{r:?}");
        assert!(r.run_id.is_some(), "{r:?}");
        let bps = r.throughput_bps.unwrap();
        assert!((bps / 10e6 - 1.0).abs() < 0.05, "{bps}");
    }
}
