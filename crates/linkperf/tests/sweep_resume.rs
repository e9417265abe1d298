//! Sweeps that stop part way and are resumed: killed, interrupted, or
//! their PostgreSQL archive going away; and SQLite and PostgreSQL giving the
//! same answers (a real PostgreSQL server when LINKPERF_TEST_PG names one).

mod common;

use common::sweep::*;
use common::*;
use linkperf_store::{Location, Store};
use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

#[test]
fn killed_sweep_resumes_without_duplicates() {
    let lo = Loopback::new("resume");
    kill_and_resume(&lo.db, lo.server.port, true);
}

#[test]
fn interrupted_sweep_keeps_its_runs_and_says_how_to_resume() {
    let lo = Loopback::new("sigint");
    let db = lo.db.as_str();
    let mut child = lo.spawn_sweep(&["-t", "0.5", "--vary", "length=8K,16K", "--repeat", "3"]);
    let id = wait_sweep(db, &mut child);
    assert!(wait_runs(db, id, 2, Duration::from_secs(30)) >= 2);
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
    let stored = Store::open(Some(db))
        .unwrap()
        .sweep_runs(id, false)
        .unwrap()
        .len();
    assert!((2..6).contains(&stored), "{stored}");
    // The partial table was printed.
    assert!(run.stdout.contains("partial"), "{}", run.stdout);
}

/// The same runs give the same answers from SQLite and from PostgreSQL:
/// a sweep measured into SQLite is copied run by run into PostgreSQL
/// through the store API, and every `results` view is compared byte for byte.
#[test]
fn sqlite_and_postgres_return_identical_results() {
    let Some(base) = pg_url() else { return };
    let lo = Loopback::new("pg-same");
    let db = lo.db.as_str();
    let run = lo.sweep(&[
        "-t",
        "0.3",
        "--vary",
        "length=16K,64K",
        "--repeat",
        "2",
        "-J",
    ]);
    assert_eq!(run.code(), Some(0), "{}", run.stderr);
    let c = client(lo.server.port, &["-t", "0.3", "-J", "--db", db]);
    c.report();

    let pg = PgSchema::new(&base, "same");
    let mut lite = Store::open(Some(db)).unwrap();
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
    let sweep_id = newest_sweep(db).unwrap().to_string();
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
            norm(&ra.stdout, db),
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
    let mut child = spawn(&sweep_args(
        &sport,
        &via_relay,
        &["-t", "0.3", "--vary", "length=8K,16K", "--repeat", "3"],
    ));
    let id = wait_sweep(&pg.url, &mut child);
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
