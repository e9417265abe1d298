//! Sweeps and the results archive, end to end: real `linkperf server` child
//! processes on loopback (and an emulated WAN link as root), SQLite files in
//! a temporary directory, and a real PostgreSQL server when LINKPERF_TEST_PG
//! names one.

mod common;

use common::*;
use linkperf_store::{Location, Store};
use serde_json::Value;
use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

/// A fresh directory for one test's archive.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lp-sweep-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn db_arg(dir: &std::path::Path) -> String {
    dir.join("archive.db").display().to_string()
}

/// Runs `linkperf ARGS` with a longer watchdog (sweeps are several runs).
fn long(args: &[&str]) -> Run {
    wait_child(spawn(args), Duration::from_secs(120))
}

fn sweep_args<'a>(port: &'a str, db: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["sweep", "127.0.0.1", "-p", port, "--db", db];
    a.extend_from_slice(extra);
    a
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

fn pg_url() -> Option<String> {
    let url = std::env::var("LINKPERF_TEST_PG")
        .ok()
        .filter(|u| !u.is_empty());
    if url.is_none() {
        linkperf_testsupport::skip("set LINKPERF_TEST_PG=postgres://USER:PASS@127.0.0.1/DB to test the PostgreSQL backend (scripts/test sets it)");
    }
    url
}

/// A PostgreSQL schema of its own for one test, dropped at the end.
struct PgSchema {
    base: String,
    schema: String,
    url: String,
}

impl PgSchema {
    fn new(base: &str, tag: &str) -> PgSchema {
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

#[test]
fn sweep_json_is_stored_and_matches_the_runs() {
    let server = Server::start();
    let dir = scratch("json");
    let db = db_arg(&dir);
    let port = server.port.to_string();
    let run = long(&sweep_args(
        &port,
        &db,
        &[
            "-t",
            "0.3",
            "--vary",
            "length=8K,64K",
            "--vary",
            "parallel=1,2",
            "--repeat",
            "2",
            "-J",
        ],
    ));
    assert_eq!(run.code(), Some(0), "{}\n{}", run.stdout, run.stderr);
    assert!(
        run.stderr.is_empty(),
        "no progress bar without a terminal: {}",
        run.stderr
    );
    let v = run.json();
    assert_eq!(v["schema"], "linkperf/1");
    assert_eq!(v["status"], "complete");
    let id = v["id"].as_i64().expect("sweep id");
    let points = array_at(&v, "/points");
    assert_eq!(points.len(), 4);
    for p in points {
        assert_eq!(p["runs"], 2, "{p:#}");
        for key in ["received_bits_per_second", "sent_bits_per_second"] {
            for stat in [
                "mean", "stddev", "min", "max", "median", "ci_low", "ci_high",
            ] {
                assert!(p[key][stat].is_number(), "{key}.{stat} in {p:#}");
            }
            let s = &p[key];
            let (lo, mean, hi) = (
                s["ci_low"].as_f64().unwrap(),
                s["mean"].as_f64().unwrap(),
                s["ci_high"].as_f64().unwrap(),
            );
            assert!(lo <= mean && mean <= hi, "{s:#}");
            assert!(s["min"].as_f64().unwrap() <= s["max"].as_f64().unwrap());
            assert!(mean > 1e6, "loopback carries more than 1 Mbit/s: {s:#}");
        }
        assert!(p["cpu_local_percent"]["mean"].is_number());
        assert!(p["cpu_remote_percent"]["mean"].is_number());
    }
    let params: HashSet<String> = points.iter().map(|p| p["params"].to_string()).collect();
    assert!(
        params.contains(r#"{"length":"8K","parallel":"1"}"#),
        "{params:?}"
    );
    assert!(
        params.contains(r#"{"length":"64K","parallel":"2"}"#),
        "{params:?}"
    );

    // The export holds every run's full report; its statistics agree with
    // the reports' own numbers and each run used the point's options.
    let ex = long(&[
        "results",
        "--db",
        &db,
        "export",
        &id.to_string(),
        "--format",
        "json",
    ]);
    assert_eq!(ex.code(), Some(0), "{}", ex.stderr);
    let e = ex.json();
    assert_eq!(e["kind"], "sweep");
    assert_eq!(e["sweep"]["status"], "complete");
    assert_eq!(e["sweep"]["order"], "fixed");
    assert_eq!(e["sweep"]["repeat"], 2);
    assert_eq!(e["sweep"]["vary"][0]["name"], "length");
    assert_eq!(e["sweep"]["base_options"]["duration_s"], 0.3);
    let runs = array_at(&e, "/runs");
    assert_eq!(runs.len(), 8);
    for p in array_at(&e, "/points") {
        let ids: Vec<i64> = p["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_i64().unwrap())
            .collect();
        assert_eq!(ids.len(), 2);
        let mine: Vec<&Value> = runs
            .iter()
            .filter(|r| ids.contains(&r["id"].as_i64().unwrap()))
            .collect();
        let want_len = if p["params"]["length"] == "8K" {
            8192
        } else {
            65536
        };
        let want_p: u64 = p["params"]["parallel"].as_str().unwrap().parse().unwrap();
        for r in &mine {
            assert_eq!(r["point"], p["index"]);
            assert_eq!(r["report"]["schema"], "linkperf/1");
            assert_eq!(u64_at(&r["report"], "/test/length"), want_len);
            assert_eq!(u64_at(&r["report"], "/test/parallel"), want_p);
            assert_eq!(
                array_at(&r["report"], "/summary/streams").len() as u64,
                want_p
            );
        }
        let rates: Vec<f64> = mine
            .iter()
            .map(|r| f64_at(&r["report"], "/summary/received/bits_per_second"))
            .collect();
        let got = f64_at(p, "/stats/received_bits_per_second/mean");
        assert!(
            (got - mean(&rates)).abs() <= 1e-6 * got,
            "{got} vs {rates:?}"
        );
    }

    // CSV: a header and one flat row per run, with the varied values.
    let csv = long(&[
        "results",
        "--db",
        &db,
        "export",
        &id.to_string(),
        "--format",
        "csv",
    ]);
    assert_eq!(csv.code(), Some(0), "{}", csv.stderr);
    let lines: Vec<&str> = csv.stdout.lines().collect();
    assert_eq!(lines.len(), 9);
    let header: Vec<&str> = lines[0].split(',').collect();
    assert!(header.contains(&"length") && header.contains(&"parallel"));
    assert!(header.contains(&"received_bits_per_second"));
    assert!(lines[1..]
        .iter()
        .all(|l| l.split(',').count() == header.len()));

    // list shows the sweep, folded; show prints its table.
    let list = long(&["results", "--db", &db, "list"]);
    assert_eq!(list.code(), Some(0), "{}", list.stderr);
    assert!(
        list.stdout.contains("complete, 4 points, 8/8 runs"),
        "{}",
        list.stdout
    );
    let show = long(&["results", "--db", &db, "show", &id.to_string()]);
    assert_eq!(show.code(), Some(0), "{}", show.stderr);
    assert!(
        show.stdout.contains("length") && show.stdout.contains("64K"),
        "{}",
        show.stdout
    );
    let one = runs[0]["id"].to_string();
    let show_run = long(&["results", "--db", &db, "show", &one, "-J"]);
    assert_eq!(show_run.json(), runs[0]["report"]);

    // A sweep compared with itself: no difference, not significant.
    let cmp = long(&[
        "results",
        "--db",
        &db,
        "compare",
        &id.to_string(),
        &id.to_string(),
        "-J",
    ]);
    assert_eq!(cmp.code(), Some(0), "{}", cmp.stderr);
    let c = cmp.json();
    let rows = array_at(&c, "/rows");
    assert_eq!(rows.len(), 16, "4 points x 4 metrics");
    for r in rows {
        assert_eq!(r["difference"], 0.0);
        assert_eq!(r["significant"], false);
        assert!(r["welch"]["p"].as_f64().unwrap() > 0.99);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn client_runs_are_stored_unless_told_not_to() {
    let server = Server::start();
    let dir = scratch("client");
    let db = db_arg(&dir);
    let a = client(server.port, &["-t", "0.3", "-J", "--db", &db]).report();
    let b = client(server.port, &["-t", "0.3", "-J", "--db", &db]).report();
    let list = long(&["results", "--db", &db, "list", "-J"]);
    let entries = array_at(&list.json(), "/entries").clone();
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0]["kind"], "test");
    // Newest first, with the numbers the client printed.
    assert_eq!(
        entries[0]["received_bits_per_second"].as_f64().unwrap(),
        f64_at(&b, "/summary/received/bits_per_second")
    );
    assert_eq!(
        entries[1]["received_bits_per_second"].as_f64().unwrap(),
        f64_at(&a, "/summary/received/bits_per_second")
    );
    // Two single runs: the difference only, no test of significance.
    let (ia, ib) = (entries[1]["id"].to_string(), entries[0]["id"].to_string());
    let cmp = long(&["results", "--db", &db, "compare", &ia, &ib, "-J"]).json();
    let row = &array_at(&cmp, "/rows")[0];
    assert_eq!(row["metric"], "received_bits_per_second");
    assert!(row["welch"].is_null() && row["significant"].is_null());
    let want = f64_at(&b, "/summary/received/bits_per_second")
        - f64_at(&a, "/summary/received/bits_per_second");
    assert!((row["difference"].as_f64().unwrap() - want).abs() <= 1e-6 * want.abs().max(1.0));
    let text = long(&["results", "--db", &db, "compare", &ia, &ib]);
    assert!(text.stdout.contains("difference only"), "{}", text.stdout);

    // --no-store: nothing written.
    let other = dir.join("none.db");
    let r = client(server.port, &["-t", "0.3", "-J", "--no-store"]);
    r.report();
    let r = client(
        server.port,
        &["-t", "0.3", "--db", other.to_str().unwrap(), "--no-store"],
    );
    assert_eq!(r.code(), Some(2), "--db and --no-store conflict");
    assert!(!other.exists());

    // An archive in a directory that does not exist is refused before the test.
    let r = client(
        server.port,
        &["-t", "0.3", "-J", "--db", "/proc/linkperf/no/archive.db"],
    );
    assert!(r.assert_one_line_failure(2).contains("/proc/linkperf/no"));
    // An archive that cannot be opened costs a warning, not the result.
    let junk = dir.join("junk.db");
    std::fs::write(&junk, vec![b'x'; 4096]).unwrap();
    let r = client(
        server.port,
        &["-t", "0.3", "-J", "--db", junk.to_str().unwrap()],
    );
    let v = r.report();
    assert!(f64_at(&v, "/summary/received/bits_per_second") > 0.0);
    let lines = r.stderr_lines();
    assert_eq!(lines.len(), 1, "{:?}", r.stderr);
    assert!(
        lines[0].contains("warning") && lines[0].contains("not stored"),
        "{}",
        lines[0]
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Received rate of each window value in a sweep's `-J` output.
fn rates_by_window(v: &Value) -> Vec<(String, f64)> {
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

/// On loopback a 4 KiB socket buffer clearly limits TCP; 64 KiB and 1 MiB do not.
#[test]
fn window_sweep_small_window_limits_throughput_on_loopback() {
    let server = Server::start();
    let dir = scratch("window");
    let db = db_arg(&dir);
    let port = server.port.to_string();
    let run = long(&sweep_args(
        &port,
        &db,
        &["-t", "0.5", "--vary", "window=4K,64K,1M", "-J"],
    ));
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let rates = rates_by_window(&run.json());
    assert_eq!(rates.len(), 3);
    let (small, mid, big) = (rates[0].1, rates[1].1, rates[2].1);
    assert!(mid > 5.0 * small && big > 5.0 * small, "{rates:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// On an emulated 20 ms RTT link, a window-limited TCP flow carries about
/// window / RTT: each window step up must raise the throughput.
#[test]
fn window_sweep_rises_with_the_window_on_a_delayed_link() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 || !std::path::Path::new("/dev/net/tun").exists() {
        linkperf_testsupport::skip("needs root and /dev/net/tun (CI runs it)");
        return;
    }
    let name = format!("sw{}", std::process::id() % 100_000);
    let dir = scratch("testbed");
    let file = dir.join(format!("{name}.toml"));
    std::fs::write(
        &file,
        format!(
            "name = \"{name}\"\nseed = 1\nsubnet = \"10.79.0.0/24\"\n[[host]]\nname = \"a\"\n[[host]]\nname = \"b\"\n\
             [[link]]\nends = [\"a\", \"b\"]\nrate = \"500M\"\ndelay = \"10ms\"\nqueue = \"2M\"\n"
        ),
    )
    .unwrap();
    struct Down(String);
    impl Drop for Down {
        fn drop(&mut self) {
            let _ = std::process::Command::new(bin())
                .args(["testbed", "down", &self.0])
                .output();
        }
    }
    let up = linkperf(&["testbed", "up", file.to_str().unwrap()]);
    assert_eq!(up.code(), Some(0), "testbed up: {}", up.stderr);
    let _down = Down(name.clone());
    /// The server in the testbed, stopped (and reaped) however the test ends.
    struct Reaped(std::process::Child);
    impl Drop for Reaped {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _server = Reaped(spawn(&[
        "testbed",
        "exec",
        "--testbed",
        &name,
        "b",
        "--",
        bin(),
        "server",
        "-q",
    ]));
    thread::sleep(Duration::from_millis(500));
    let db = db_arg(&dir);
    let run = long(&[
        "testbed",
        "exec",
        "--testbed",
        &name,
        "a",
        "--",
        bin(),
        "sweep",
        "10.79.0.2",
        "--db",
        &db,
        "-t",
        "1.5",
        "--vary",
        "window=16K,64K,256K",
        "-J",
    ]);
    assert_eq!(run.code(), Some(0), "{}\n{}", run.stdout, run.stderr);
    let rates = rates_by_window(&run.json());
    // 16K / 20 ms is about 6.5 Mbit/s, 256K about 100 Mbit/s: all far below 500M.
    for w in rates.windows(2) {
        assert!(
            w[1].1 > 1.5 * w[0].1,
            "throughput must rise with the window: {rates:?}"
        );
    }
    assert!(
        rates[2].1 < 400e6,
        "window-limited, not link-limited: {rates:?}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Polls the archive until a sweep has `n` runs stored.
fn wait_runs(db: &str, sweep: i64, n: usize, limit: Duration) -> usize {
    let deadline = Instant::now() + limit;
    loop {
        let got = Store::open(Some(db))
            .and_then(|mut s| s.sweep_runs(sweep, false))
            .map(|r| r.len())
            .unwrap_or(0);
        if got >= n || Instant::now() > deadline {
            return got;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

fn newest_sweep(db: &str) -> Option<i64> {
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

/// Kills a sweep after some runs, resumes it, and checks the full set is
/// there exactly once, with the runs stored before the kill unchanged.
fn kill_and_resume(db: &str, port: u16, shuffle: bool) {
    let port = port.to_string();
    let mut args = sweep_args(
        &port,
        db,
        &["-t", "0.3", "--vary", "length=8K,16K,32K", "--repeat", "3"],
    );
    if shuffle {
        args.extend_from_slice(&["--shuffle", "--seed", "7"]);
    }
    let child = spawn(&args);
    let deadline = Instant::now() + Duration::from_secs(30);
    let id = loop {
        if let Some(id) = newest_sweep(db) {
            break id;
        }
        assert!(Instant::now() < deadline, "the sweep never appeared");
        thread::sleep(Duration::from_millis(20));
    };
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

#[test]
fn killed_sweep_resumes_without_duplicates() {
    let server = Server::start();
    let dir = scratch("resume");
    kill_and_resume(&db_arg(&dir), server.port, true);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn interrupted_sweep_keeps_its_runs_and_says_how_to_resume() {
    let server = Server::start();
    let dir = scratch("sigint");
    let db = db_arg(&dir);
    let port = server.port.to_string();
    let child = spawn(&sweep_args(
        &port,
        &db,
        &["-t", "0.5", "--vary", "length=8K,16K", "--repeat", "3"],
    ));
    let deadline = Instant::now() + Duration::from_secs(30);
    let id = loop {
        if let Some(id) = newest_sweep(&db) {
            break id;
        }
        assert!(Instant::now() < deadline);
        thread::sleep(Duration::from_millis(20));
    };
    assert!(wait_runs(&db, id, 2, Duration::from_secs(30)) >= 2);
    send_signal(&child, libc::SIGINT);
    let run = wait_child(child, Duration::from_secs(20));
    assert_eq!(run.code(), Some(130), "{}", run.stderr);
    // Without a terminal, each run's progress line comes first.
    let lines: Vec<&str> = run
        .stderr_lines()
        .into_iter()
        .filter(|l| !l.starts_with("sweep: run "))
        .collect();
    assert_eq!(lines.len(), 1, "{:?}", run.stderr);
    assert!(lines[0].contains(&format!("--resume {id}")), "{}", lines[0]);
    let stored = Store::open(Some(db.as_str()))
        .unwrap()
        .sweep_runs(id, false)
        .unwrap()
        .len();
    assert!((2..6).contains(&stored), "{stored}");
    // The partial table was printed.
    assert!(run.stdout.contains("partial"), "{}", run.stdout);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn confidence_mode_iterates_until_the_interval_is_narrow_or_gives_up() {
    let server = Server::start();
    let dir = scratch("confidence");
    let db = db_arg(&dir);
    let port = server.port.to_string();
    // A paced flow (-b) gives steady rates, yet never steady to a few parts
    // per million: that interval is out of reach and the sweep must say so.
    let run = long(&sweep_args(
        &port,
        &db,
        &[
            "-t",
            "0.3",
            "-b",
            "50M",
            "--vary",
            "length=8K",
            "--confidence",
            "99,0.0002",
            "--max-runs",
            "4",
            "-J",
        ],
    ));
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let v = run.json();
    let p = &array_at(&v, "/points")[0];
    assert_eq!(p["runs"], 4, "stopped at --max-runs");
    assert_eq!(p["confidence_reached"], false);
    assert_eq!(p["received_bits_per_second"]["level"], 99.0);
    assert!(
        run.stderr.contains("confidence not reached"),
        "{}",
        run.stderr
    );
    // A 10 % interval of a paced flow is reached with the minimum of runs.
    let run = long(&sweep_args(
        &port,
        &db,
        &[
            "-t",
            "0.3",
            "-b",
            "50M",
            "--vary",
            "length=8K",
            "--confidence",
            "95,10",
            "--max-runs",
            "6",
            "-J",
        ],
    ));
    let v = run.json();
    let p = &array_at(&v, "/points")[0];
    assert_eq!(p["runs"], 3, "netperf's minimum of 3 runs");
    assert_eq!(p["confidence_reached"], true);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_input_fails_with_one_line() {
    let dir = scratch("bad");
    let db = db_arg(&dir);
    let cases: &[(&[&str], i32, &str)] = &[
        (
            &[
                "sweep",
                "127.0.0.1",
                "--db",
                &db,
                "--vary",
                "frobnicate=1,2",
            ],
            2,
            "frobnicate",
        ),
        (
            &[
                "sweep",
                "127.0.0.1",
                "--db",
                &db,
                "--vary",
                "window=4M..4K*2",
            ],
            2,
            "empty",
        ),
        (
            &["sweep", "127.0.0.1", "--db", &db, "--vary", "window=4K..4M"],
            2,
            "not a range",
        ),
        (
            &["sweep", "127.0.0.1", "--db", &db, "--vary", "window="],
            2,
            "no values",
        ),
        (
            &[
                "sweep",
                "127.0.0.1",
                "--db",
                &db,
                "--vary",
                "length=0..9000+0",
            ],
            2,
            "step",
        ),
        (&["sweep", "127.0.0.1", "--db", &db], 2, "vary"),
        (
            &[
                "sweep",
                "127.0.0.1",
                "--db",
                &db,
                "--vary",
                "length=100K",
                "-u",
            ],
            2,
            "length=100K",
        ),
        (
            &[
                "sweep",
                "127.0.0.1",
                "--db",
                &db,
                "--vary",
                "P=1",
                "--confidence",
                "120,5",
            ],
            2,
            "level",
        ),
        (
            &["sweep", "--resume", "999", "--db", &db],
            2,
            "no sweep 999",
        ),
        (&["results", "--db", &db, "show", "12345"], 2, "12345"),
        (
            &["results", "--db", "/proc/linkperf/x/archive.db", "list"],
            2,
            "/proc/linkperf/x",
        ),
        (
            &["results", "--db", "mysql://x/y", "list"],
            2,
            "postgres://",
        ),
        (
            &[
                "results",
                "--db",
                "postgres://nobody@127.0.0.1:1/none",
                "list",
            ],
            1,
            "cannot connect",
        ),
        (
            &[
                "sweep",
                "127.0.0.1",
                "--db",
                "/proc/linkperf/x/a.db",
                "--vary",
                "P=1",
            ],
            2,
            "/proc/linkperf/x",
        ),
    ];
    for (args, code, needle) in cases {
        let run = linkperf(args);
        let line = run.assert_one_line_failure(*code);
        assert!(line.contains(needle), "{args:?}: {line}");
    }
    // An archive written by a newer linkperf is refused, not damaged.
    {
        let mut s = Store::open_at(Location::Sqlite(dir.join("archive.db"))).unwrap();
        s.set_schema_version(linkperf_store::SCHEMA_VERSION + 1)
            .unwrap();
    }
    for args in [
        &["results", "--db", &db, "list"][..],
        &["sweep", "127.0.0.1", "--db", &db, "--vary", "P=1"][..],
    ] {
        let line = linkperf(args).assert_one_line_failure(1).to_string();
        assert!(
            line.contains("newer") && line.contains("archive.db"),
            "{line}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The same runs give the same answers from SQLite and from PostgreSQL:
/// a sweep measured into SQLite is copied run by run into PostgreSQL
/// through the store API, and every `results` view is compared byte for byte.
#[test]
fn sqlite_and_postgres_return_identical_results() {
    let Some(base) = pg_url() else { return };
    let server = Server::start();
    let dir = scratch("pg-same");
    let db = db_arg(&dir);
    let port = server.port.to_string();
    let run = long(&sweep_args(
        &port,
        &db,
        &[
            "-t",
            "0.3",
            "--vary",
            "length=16K,64K",
            "--repeat",
            "2",
            "-J",
        ],
    ));
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let c = client(server.port, &["-t", "0.3", "-J", "--db", &db]);
    c.report();

    let pg = PgSchema::new(&base, "same");
    let mut lite = Store::open(Some(db.as_str())).unwrap();
    let mut post = Store::open(Some(pg.url.as_str())).unwrap();
    // Copy in id order so both archives number them alike.
    let entries = lite
        .list(&linkperf_store::ListFilter {
            limit: 1000,
            all: true,
            ..Default::default()
        })
        .unwrap();
    for e in entries.iter().rev() {
        if e.kind == "sweep" {
            let s = lite.sweep(e.id).unwrap().unwrap();
            let id = post
                .create_sweep(&linkperf_store::NewSweep {
                    host: s.host.clone(),
                    created_unix_ms: s.created_unix_ms,
                    spec: s.spec.clone(),
                    points: s.points.clone(),
                    planned_runs: s.planned_runs,
                })
                .unwrap();
            assert_eq!(id, e.id);
            post.set_sweep_status(id, &s.status).unwrap();
        } else {
            let r = lite.run(e.id, true).unwrap().unwrap();
            let mut new = linkperf_store::NewRun::from_test_report(r.report.unwrap());
            new.slot = r.slot;
            assert_eq!(post.insert_run(&new).unwrap(), e.id);
        }
    }
    let sweep_id = newest_sweep(&db).unwrap().to_string();
    let run_id = entries[0].id.to_string();
    for view in [
        vec!["list", "-J"],
        vec!["list", "--all", "-J"],
        vec!["list"],
        vec!["show", &sweep_id, "-J"],
        vec!["show", &run_id],
        vec!["show", &run_id, "-J"],
        vec!["export", &sweep_id, "--format", "json"],
        vec!["export", &sweep_id, "--format", "csv"],
        vec!["export", &run_id, "--format", "json"],
        vec!["compare", &sweep_id, &sweep_id, "-J"],
    ] {
        let mut a = vec!["results", "--db", &db];
        a.extend_from_slice(&view);
        let mut b = vec!["results", "--db", &pg.url];
        b.extend_from_slice(&view);
        let (ra, rb) = (long(&a), long(&b));
        assert_eq!(ra.code(), Some(0), "{view:?}: {}", ra.stderr);
        assert_eq!(rb.code(), Some(0), "{view:?}: {}", rb.stderr);
        // `list` and `show` name the archive they read; the rest must match exactly.
        let norm = |s: &str, loc: &str| s.replace(loc, "ARCHIVE");
        assert_eq!(
            norm(&ra.stdout, &db),
            norm(&rb.stdout, &Location::parse(&pg.url).unwrap().describe()),
            "{view:?} differs between SQLite and PostgreSQL"
        );
    }
}

/// A sweep straight into PostgreSQL, killed and resumed there.
#[test]
fn postgres_sweep_resumes_without_duplicates() {
    let Some(base) = pg_url() else { return };
    let server = Server::start();
    let pg = PgSchema::new(&base, "resume");
    kill_and_resume(&pg.url, server.port, false);
}

/// A TCP relay to PostgreSQL that can be cut, to make the server "go away".
struct Relay {
    port: u16,
    cut: Arc<AtomicBool>,
}

impl Relay {
    fn start(target: (String, u16)) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let cut = Arc::new(AtomicBool::new(false));
        let flag = cut.clone();
        listener.set_nonblocking(true).unwrap();
        thread::spawn(move || {
            let mut conns: Vec<(TcpStream, TcpStream)> = Vec::new();
            let end = Instant::now() + Duration::from_secs(120);
            while Instant::now() < end {
                if flag.load(Ordering::SeqCst) {
                    for (a, b) in &conns {
                        let _ = a.shutdown(std::net::Shutdown::Both);
                        let _ = b.shutdown(std::net::Shutdown::Both);
                    }
                    return; // the listener closes: new connections are refused
                }
                if let Ok((inbound, _)) = listener.accept() {
                    inbound.set_nonblocking(false).unwrap();
                    let outbound = TcpStream::connect((target.0.as_str(), target.1)).unwrap();
                    for (mut from, mut to) in [
                        (inbound.try_clone().unwrap(), outbound.try_clone().unwrap()),
                        (outbound.try_clone().unwrap(), inbound.try_clone().unwrap()),
                    ] {
                        thread::spawn(move || {
                            let mut buf = [0u8; 16384];
                            while let Ok(n) = from.read(&mut buf) {
                                if n == 0 || to.write_all(&buf[..n]).is_err() {
                                    break;
                                }
                            }
                            let _ = to.shutdown(std::net::Shutdown::Write);
                        });
                    }
                    conns.push((inbound, outbound));
                }
                thread::sleep(Duration::from_millis(5));
            }
        });
        Relay { port, cut }
    }
}

/// Host and port of a postgres:// URL (enough for the relay).
fn pg_host_port(url: &str) -> (String, u16) {
    let rest = url.split_once("://").unwrap().1;
    let rest = rest.rsplit_once('@').map(|x| x.1).unwrap_or(rest);
    let hostport = rest.split(['/', '?']).next().unwrap();
    match hostport.rsplit_once(':') {
        Some((h, p)) => (h.to_string(), p.parse().unwrap()),
        None => (hostport.to_string(), 5432),
    }
}

#[test]
fn postgres_going_away_stops_the_sweep_and_resume_finishes_it() {
    let Some(base) = pg_url() else { return };
    let server = Server::start();
    let pg = PgSchema::new(&base, "away");
    let (host, port) = pg_host_port(&pg.url);
    let relay = Relay::start((host.clone(), port));
    let via_relay = pg.url.replacen(
        &format!("{host}:{port}"),
        &format!("127.0.0.1:{}", relay.port),
        1,
    );
    let via_relay = if via_relay == pg.url {
        // The URL had no explicit port.
        pg.url
            .replacen(&host, &format!("127.0.0.1:{}", relay.port), 1)
    } else {
        via_relay
    };
    let sport = server.port.to_string();
    let child = spawn(&sweep_args(
        &sport,
        &via_relay,
        &["-t", "0.3", "--vary", "length=8K,16K", "--repeat", "3"],
    ));
    let deadline = Instant::now() + Duration::from_secs(30);
    let id = loop {
        if let Some(id) = newest_sweep(&pg.url) {
            break id;
        }
        assert!(Instant::now() < deadline, "the sweep never appeared");
        thread::sleep(Duration::from_millis(20));
    };
    assert!(wait_runs(&pg.url, id, 2, Duration::from_secs(30)) >= 2);
    relay.cut.store(true, Ordering::SeqCst);
    let run = wait_child(child, Duration::from_secs(60));
    let line = run.assert_failure_after_progress(1).to_string();
    assert!(
        line.contains("archive") && line.contains(&format!("--resume {id}")),
        "{line}"
    );
    let kept = Store::open(Some(pg.url.as_str()))
        .unwrap()
        .sweep_runs(id, false)
        .unwrap()
        .len();
    assert!((2..6).contains(&kept), "{kept}");
    let resumed = long(&["sweep", "--resume", &id.to_string(), "--db", &pg.url, "-J"]);
    assert_eq!(resumed.code(), Some(0), "{}", resumed.stderr);
    let runs = Store::open(Some(pg.url.as_str()))
        .unwrap()
        .sweep_runs(id, false)
        .unwrap();
    assert_eq!(runs.len(), 6);
    let slots: HashSet<_> = runs
        .iter()
        .map(|r| r.slot.unwrap())
        .map(|s| (s.point, s.repetition))
        .collect();
    assert_eq!(slots.len(), 6);
}
