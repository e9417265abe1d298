//! The results archive as a user meets it: the id a run was stored under,
//! archives that do not exist, campaigns, rr runs and congestion controls in
//! `results list/show`, one-sided points in `results compare`, and `campaign
//! check`'s words. Real `linkperf server` processes on loopback, SQLite files
//! in a scratch directory, and a real PostgreSQL server when LINKPERF_TEST_PG
//! names one.

mod common;

use common::sweep::{pg_url, Loopback, PgSchema};
use common::*;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

fn scratch(name: &str) -> PathBuf {
    linkperf_testsupport::scratch("lp-archive", name)
}

fn s(p: &Path) -> String {
    p.display().to_string()
}

fn ok(run: &Run) -> &str {
    assert_eq!(
        run.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        run.stdout,
        run.stderr
    );
    &run.stdout
}

/// The `results list -J` entries of an archive.
fn entries(db: &str) -> Vec<Value> {
    let run = linkperf(&["results", "--db", db, "list", "--all", "-J"]);
    ok(&run);
    run.json()["entries"].as_array().unwrap().clone()
}

#[test]
fn client_prints_the_id_of_the_run_it_stored() {
    let lo = Loopback::new("id");
    let (server, db) = (&lo.server, lo.db.as_str());
    // A fresh archive numbers its first entry 1, the next 2.
    let text = client(server.port, &["-t", "0.3", "--db", db]);
    let last = ok(&text).lines().last().unwrap_or_default().to_string();
    assert_eq!(last, format!("stored as run 1 in {db}"), "{}", text.stdout);
    let json = client(server.port, &["-t", "0.3", "--db", db, "-J"]).report();
    assert_valid(&json);
    assert_eq!(json["id"], 2, "{json:#}");
    let mut store = linkperf_store::Store::open_existing(Some(db)).unwrap();
    let stored = store.run(2, true).unwrap().expect("run 2 is stored");
    let mut printed = json.clone();
    printed.as_object_mut().unwrap().remove("id");
    assert_eq!(stored.report, Some(printed), "run 2 is the printed run");
    let unstored = client(server.port, &["-t", "0.2", "--no-store", "-J"]).report();
    assert_valid(&unstored);
    assert_eq!(unstored["id"], Value::Null);
    let quiet = client(server.port, &["-t", "0.2", "--no-store"]);
    assert!(!ok(&quiet).contains("stored as"), "{}", quiet.stdout);
    assert_eq!(entries(db).len(), 2);
}

#[test]
fn readers_refuse_an_archive_that_does_not_exist() {
    let dir = scratch("missing");
    let typo = dir.join("typo").join("x.db");
    let absent = dir.join("absent.db");
    for db in [s(&typo), s(&absent)] {
        for args in [
            vec!["results", "--db", &db, "list"],
            vec!["results", "--db", &db, "show", "1"],
            vec!["results", "--db", &db, "compare", "1", "2"],
            vec!["results", "--db", &db, "export", "1", "--format", "csv"],
            vec!["report", "1", "--db", &db, "-o", "/dev/null"],
        ] {
            let run = linkperf(&args);
            let line = run.assert_one_line_failure(2);
            assert!(line.contains(&db), "{args:?}: {line}");
        }
    }
    let line = linkperf(&["results", "--db", &s(&typo), "list"])
        .assert_one_line_failure(2)
        .to_string();
    assert!(
        line.contains(&s(&dir.join("typo"))) && line.contains("does not exist"),
        "{line}"
    );
    assert!(!dir.join("typo").exists(), "a reader created a directory");
    assert!(!absent.exists(), "a reader created an archive");
    // A writer with a missing directory is refused before it runs: no server
    // listens on this port, yet the error is the directory.
    let port = free_port();
    let run = client(port, &["-t", "0.2", "--db", &s(&typo)]);
    let line = run.assert_one_line_failure(2);
    assert!(line.contains("does not exist"), "{line}");
    let run = linkperf(&[
        "rr",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "--db",
        &s(&typo),
    ]);
    assert!(run.assert_one_line_failure(2).contains("does not exist"));
    assert!(!dir.join("typo").exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_default_archive_is_created_on_first_write() {
    let server = Server::start();
    let home = scratch("home");
    let run = |args: &[&str]| {
        let child = Command::new(bin())
            .args(args)
            .env_remove("LINKPERF_DB")
            .env_remove("XDG_DATA_HOME")
            .env("HOME", &home)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_child(child, CLIENT_WATCHDOG)
    };
    let default = home.join(".local/share/linkperf/archive.db");
    let first = run(&["results", "list"]);
    assert!(first.assert_one_line_failure(2).contains(&s(&default)));
    assert!(!home.join(".local").exists());
    let port = server.port.to_string();
    let stored = run(&["client", "127.0.0.1", "-p", &port, "-t", "0.2"]);
    assert!(ok(&stored).contains(&format!("stored as run 1 in {}", s(&default))));
    assert!(ok(&run(&["results", "list"])).contains("tcp forward received"));
    let _ = std::fs::remove_dir_all(&home);
}

#[test]
fn show_names_the_congestion_control_the_sender_used() {
    let lo = Loopback::new("cc");
    let (server, db) = (&lo.server, lo.db.as_str());
    // What the kernel gives a socket that asks for nothing.
    let default = read_proc("/proc/sys/net/ipv4/tcp_congestion_control").expect("tcp default");
    let mut cases = vec![(vec!["-t", "0.3"], default.clone())];
    cases.push((vec!["-t", "0.3", "-R"], default.clone()));
    let other = available_congestion_controls()
        .into_iter()
        .find(|c| *c != default);
    if let Some(o) = &other {
        cases.push((vec!["-t", "0.3", "-C", o.as_str()], o.clone()));
    }
    for (args, want) in &cases {
        let mut all = args.clone();
        all.extend(["--db", db, "-J"]);
        let id = client(server.port, &all).report()["id"].as_i64().unwrap();
        let shown = linkperf(&["results", "--db", db, "show", &id.to_string()]);
        let line = ok(&shown)
            .lines()
            .find(|l| l.contains("congestion"))
            .unwrap_or_else(|| panic!("no congestion in {}", shown.stdout))
            .to_string();
        assert!(
            line.ends_with(&format!("congestion {want}")),
            "{args:?}: {line}"
        );
        let listed = entries(db);
        let row = listed.iter().find(|e| e["id"] == id).unwrap();
        assert_eq!(row["congestion"], want.as_str(), "{row:#}");
    }
}

#[test]
fn compare_names_the_points_only_one_side_has() {
    let lo = Loopback::new("compare");
    let db = lo.db.as_str();
    let mut ids = vec![];
    for values in ["length=8K,64K", "length=64K,128K"] {
        let run = lo.sweep(&["-t", "0.3", "--vary", values, "-J"]);
        ids.push(run.json()["id"].as_i64().expect("sweep id").to_string());
    }
    let text = linkperf(&["results", "--db", db, "compare", &ids[0], &ids[1]]);
    let out = ok(&text);
    assert!(
        out.contains(&format!(
            "only in A ({}), not compared: 1 point: length=8K",
            ids[0]
        )),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "only in B ({}), not compared: 1 point: length=128K",
            ids[1]
        )),
        "{out}"
    );
    assert!(out.contains("length=64K:"), "{out}");
    let json = linkperf(&["results", "--db", db, "compare", &ids[0], &ids[1], "-J"]);
    let v = json.json();
    assert_eq!(v["only_in_a"], serde_json::json!([{"length": "8K"}]));
    assert_eq!(v["only_in_b"], serde_json::json!([{"length": "128K"}]));
}

#[test]
fn campaign_check_speaks_the_users_words() {
    let dir = scratch("check");
    let file = dir.join("c.toml");
    std::fs::write(
        &file,
        "[[agent]]\nname = \"a\"\naddress = \"127.0.0.1\"\n[[agent]]\nname = \"b\"\naddress = \"127.0.0.2\"\n\
         [[phase]]\nname = \"p\"\nduration = \"1s\"\n\
         [[phase.flow]]\nfrom = \"a\"\nto = \"b\"\nudp = true\nbitrate = \"950M\"\n\
         [[phase.flow]]\nfrom = \"a\"\nto = \"b\"\nreverse = true\nparallel = 2\nwindow = \"256K\"\n",
    )
    .unwrap();
    let run = linkperf(&["campaign", "check", &s(&file)]);
    let out = ok(&run);
    assert!(
        out.contains("  a -> b: UDP client->server, 1 stream, 950 Mbit/s per stream\n"),
        "{out}"
    );
    assert!(
        out.contains(
            "  a -> b: TCP server->client (reverse: b sends), 2 streams, window 256 KiB\n"
        ),
        "{out}"
    );
    for internal in ["Udp", "Tcp", "Forward", "Reverse", " x1", " x2"] {
        assert!(!out.contains(internal), "{internal} in {out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Three agents on three loopback addresses; `a` sends UDP at `rate` to `b`
/// and to `c`, two sessions.
fn run_campaign(dir: &Path, db: &str, rate: &str) -> Value {
    let agents: Vec<Server> = ["127.0.0.1", "127.0.0.2", "127.0.0.3"]
        .iter()
        .map(|ip| Server::start_on(ip, &["--allow-third-party"]))
        .collect();
    let mut toml = "sessions = 2\nstart_delay = \"300ms\"\npause = \"100ms\"\n".to_string();
    for (name, (ip, a)) in ["a", "b", "c"]
        .iter()
        .zip(["127.0.0.1", "127.0.0.2", "127.0.0.3"].iter().zip(&agents))
    {
        toml += &format!(
            "[[agent]]\nname = \"{name}\"\naddress = \"{ip}\"\nport = {}\n",
            a.port
        );
    }
    toml += "[[phase]]\nname = \"fan-out\"\nduration = \"1s\"\n";
    for to in ["b", "c"] {
        toml += &format!(
            "[[phase.flow]]\nfrom = \"a\"\nto = \"{to}\"\nudp = true\nbitrate = \"{rate}\"\n"
        );
    }
    let file = dir.join("fan.toml");
    std::fs::write(&file, toml).unwrap();
    let run = wait_child(
        spawn(&["campaign", "run", &s(&file), "--db", db, "-J"]),
        Duration::from_secs(60),
    );
    ok(&run);
    run.json()
}

/// Runs the fan-out campaign into `db` (made by `db_for(attempt)`) and checks that the
/// archive lists it with each of `keys` at `want` bit/s, within the pacing's and the
/// interval edges' 5 %. The rate is a measurement of paced senders, so a failed attempt runs
/// again when a probe saw the machine stall during it (a sender the host did not run
/// catches up only 20 ms of its schedule); its message shows what each flow carried.
/// Returns the archive, the campaign's document and its `results list` entry.
fn measured_campaign(
    dir: &Path,
    db_for: impl Fn(u32) -> String,
    rate: &str,
    keys: &[&str],
    want: f64,
) -> (String, Value, Value) {
    let attempt = std::sync::atomic::AtomicU32::new(0);
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let db = db_for(attempt.fetch_add(1, std::sync::atomic::Ordering::SeqCst));
        let doc = run_campaign(dir, &db, rate);
        let row = entries(&db)
            .into_iter()
            .find(|e| e["id"] == doc["id"])
            .expect("the campaign is listed under its id");
        for key in keys {
            let got = row[key]
                .as_f64()
                .unwrap_or_else(|| panic!("{key} in {row:#}"));
            assert!(
                (got - want).abs() < want * 0.05,
                "{key} {got}, expected {want} +- 5 %; {}",
                flows_of(&doc)
            );
        }
        (db, doc, row)
    })
}

/// What each flow of each session of a campaign document carried, on one line.
fn flows_of(doc: &Value) -> String {
    let mut out = String::new();
    for p in doc["phases"].as_array().into_iter().flatten() {
        out += &format!(
            "session {} (start spread {} ms):",
            p["session"], p["start_spread_ms"]
        );
        for f in p["flows"].as_array().into_iter().flatten() {
            let d = &f["direction"];
            out += &format!(
                " {}->{} {} sent {} received {} bit/s after {} s;",
                f["from"],
                f["to"],
                f["status"],
                d["sent"]["bits_per_second"],
                d["received"]["bits_per_second"],
                f["stopped_after_s"]
            );
        }
    }
    out
}

#[test]
fn campaigns_show_their_aggregate_flows_and_hosts() {
    let dir = scratch("campaign");
    // Two paced UDP flows of 20 Mbit/s on loopback: 40 Mbit/s sent and received.
    let (db, doc, row) = measured_campaign(
        &dir,
        |n| s(&dir.join(format!("a{n}.db"))),
        "20M",
        &["sent_bits_per_second", "received_bits_per_second"],
        40e6,
    );
    let id = doc["id"].as_i64().expect("campaign id").to_string();
    assert_eq!(
        (row["flows"].as_i64(), row["hosts"].as_i64()),
        (Some(2), Some(3))
    );
    let text = linkperf(&["results", "--db", &db, "list"]);
    let line = ok(&text)
        .lines()
        .find(|l| l.contains("campaign"))
        .unwrap()
        .to_string();
    assert!(!line.contains(" - "), "{line}");
    assert!(line.contains("2 flows, 3 hosts, aggregate sent"), "{line}");
    let shown = linkperf(&["results", "--db", &db, "show", &id]);
    let out = ok(&shown);
    assert!(!out.contains("sent -"), "{out}");
    assert!(out.contains("2 session(s), 2 flows, 3 hosts"), "{out}");
    assert!(
        out.contains("phase fan-out: 2 session(s), 2 flows"),
        "{out}"
    );
    for host in ["a ", "b ", "c "] {
        assert!(out.contains(&format!("    {host}")), "host {host} in {out}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs `linkperf rr 127.0.0.1 -p PORT ARGS -J` and returns its document.
fn rr(port: u16, args: &[&str]) -> Value {
    let port = port.to_string();
    let mut all = vec!["rr", "127.0.0.1", "-p", &port];
    all.extend_from_slice(args);
    all.push("-J");
    let run = linkperf(&all);
    ok(&run);
    let v = run.json();
    if let Err(e) = check_schema("linkperf-rr-1.schema.json", &v) {
        panic!("rr document does not match its schema:\n{e}");
    }
    v
}

fn count(hay: &str, needle: &str) -> usize {
    hay.matches(needle).count()
}

#[test]
fn rr_runs_are_stored_listed_shown_and_reported() {
    let lo = Loopback::new("rr");
    let (server, dir, db) = (&lo.server, &lo.dir, lo.db.as_str());
    let sizes = rr(server.port, &["--sizes", "64,8K", "-n", "500", "--db", db]);
    let id = sizes["id"].as_i64().expect("rr id");
    let loaded = rr(
        server.port,
        &["-t", "1", "--load", "-t 2", "--db", db, "-i", "0.5"],
    );
    let load_id = loaded["id"].as_i64().unwrap();
    let text_run = linkperf(&[
        "rr",
        "127.0.0.1",
        "-p",
        &server.port.to_string(),
        "-n",
        "300",
        "--db",
        db,
    ]);
    let last = ok(&text_run).lines().last().unwrap().to_string();
    assert_eq!(last, format!("stored as run {} in {db}", load_id + 1));

    let listed = entries(db);
    let row = listed.iter().find(|e| e["id"] == id).unwrap();
    assert_eq!(row["kind"], "rr");
    // -n is per size: two sizes, 500 each.
    assert_eq!(row["transactions"], 1000, "{row:#}");
    let p50 = row["rtt_p50_ms"].as_f64().unwrap();
    assert!(p50 > 0.0 && p50 < 50.0, "loopback p50 {p50} ms");
    assert!(
        listed
            .iter()
            .any(|e| e["id"] == load_id + 1 && e["transactions"] == 300),
        "{listed:#?}"
    );
    let text = linkperf(&["results", "--db", db, "list"]);
    assert!(
        ok(&text).contains("tcp sizes: 1000 transactions, RTT p50"),
        "{}",
        text.stdout
    );

    let shown = linkperf(&["results", "--db", db, "show", &id.to_string()]);
    let out = ok(&shown);
    assert!(out.contains("1000 transactions of 1000"), "{out}");
    for size in ["      64           500", "    8192           500"] {
        assert!(out.contains(size), "{size:?} in {out}");
    }
    assert!(out.contains("fit       rtt = "), "{out}");
    let shown = linkperf(&["results", "--db", db, "show", &load_id.to_string()]);
    assert!(ok(&shown).contains("  idle      min"), "{}", shown.stdout);
    assert!(ok(&shown).contains("  loaded    min"), "{}", shown.stdout);

    for (rid, sections, plots) in [
        (id, vec!["RTT distribution", "RTT against message size"], 4),
        (
            load_id,
            vec!["RTT distribution", "Idle against loaded", "Over time"],
            5,
        ),
    ] {
        let page = dir.join(format!("rr-{rid}.html"));
        let run = linkperf(&["report", &rid.to_string(), "--db", db, "-o", &s(&page)]);
        ok(&run);
        let html = std::fs::read_to_string(&page).unwrap();
        for sec in sections {
            assert!(html.contains(&format!(">{sec}</h2>")), "section {sec}");
        }
        assert!(
            count(&html, "<svg") >= plots,
            "{} plots",
            count(&html, "<svg")
        );
    }
    let html = std::fs::read_to_string(dir.join(format!("rr-{id}.html"))).unwrap();
    assert!(html.contains("least-squares line"));
}

#[test]
fn postgres_archive_keeps_rr_runs_and_campaigns() {
    let Some(base) = pg_url() else { return };
    let pg = PgSchema::new(&base, "archive");
    let url = pg.url.as_str();
    // An empty schema is no archive to a reader.
    let run = linkperf(&["results", "--db", url, "list"]);
    assert!(run.assert_one_line_failure(2).contains("no archive"));
    let server = Server::start();
    let v = rr(server.port, &["--sizes", "64,4K", "-n", "200", "--db", url]);
    let id = v["id"].as_i64().unwrap();
    let dir = scratch("pg");
    let (_, _, camp) = measured_campaign(
        &dir,
        |_| url.to_string(),
        "10M",
        &["received_bits_per_second"],
        20e6,
    );
    assert_eq!(
        (camp["flows"].as_i64(), camp["hosts"].as_i64()),
        (Some(2), Some(3))
    );
    let listed = entries(url);
    let row = listed.iter().find(|e| e["id"] == id).unwrap();
    assert_eq!(row["transactions"], 400);
    let shown = linkperf(&["results", "--db", url, "show", &id.to_string()]);
    assert!(
        ok(&shown).contains("400 transactions of 400"),
        "{}",
        shown.stdout
    );
    let _ = std::fs::remove_dir_all(&dir);
}
