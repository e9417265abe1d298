//! Sweeps and the results archive, end to end: real `linkperf server` child
//! processes on loopback (and an emulated WAN link as root), SQLite files in
//! a temporary directory. Resuming and PostgreSQL are in sweep_resume.rs.

mod common;

use common::sweep::*;
use common::*;
use linkperf_store::{Location, Store};
use linkperf_testsupport::bed::{two_hosts, CliBed};
use serde_json::Value;
use std::collections::HashSet;

#[test]
fn sweep_json_is_stored_and_matches_the_runs() {
    let lo = Loopback::new("json");
    let db = lo.db.as_str();
    let run = lo.sweep(&[
        "-t",
        "0.3",
        "--vary",
        "length=8K,64K",
        "--vary",
        "parallel=1,2",
        "--repeat",
        "2",
        "-J",
    ]);
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

    let runs = export_matches_the_points(db, id);
    csv_has_a_row_per_run(db, id);
    list_and_show_fold_the_sweep(db, id, &runs);
    compared_with_itself_nothing_differs(db, id);
}

/// The export holds every run's full report; its statistics agree with
/// the reports' own numbers and each run used the point's options.
fn export_matches_the_points(db: &str, id: i64) -> Vec<Value> {
    let ex = export(db, &id.to_string(), "json");
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

    runs.clone()
}

/// CSV: a header and one flat row per run, with the varied values.
fn csv_has_a_row_per_run(db: &str, id: i64) {
    let csv = export(db, &id.to_string(), "csv");
    let lines: Vec<&str> = csv.stdout.lines().collect();
    assert_eq!(lines.len(), 9);
    let header: Vec<&str> = lines[0].split(',').collect();
    assert!(header.contains(&"length") && header.contains(&"parallel"));
    assert!(header.contains(&"received_bits_per_second"));
    assert!(lines[1..]
        .iter()
        .all(|l| l.split(',').count() == header.len()));
}

/// list shows the sweep, folded; show prints its table.
fn list_and_show_fold_the_sweep(db: &str, id: i64, runs: &[Value]) {
    let list = long(&["results", "--db", db, "list"]);
    assert_eq!(list.code(), Some(0), "{}", list.stderr);
    assert!(
        list.stdout.contains("complete, 4 points, 8/8 runs"),
        "{}",
        list.stdout
    );
    let show = long(&["results", "--db", db, "show", &id.to_string()]);
    assert_eq!(show.code(), Some(0), "{}", show.stderr);
    assert!(
        show.stdout.contains("length") && show.stdout.contains("64K"),
        "{}",
        show.stdout
    );
    let one = runs[0]["id"].to_string();
    let show_run = long(&["results", "--db", db, "show", &one, "-J"]);
    assert_eq!(show_run.json(), runs[0]["report"]);
}

/// A sweep compared with itself: no difference, not significant.
fn compared_with_itself_nothing_differs(db: &str, id: i64) {
    let cmp = long(&[
        "results",
        "--db",
        db,
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
}

#[test]
fn client_runs_are_stored_unless_told_not_to() {
    let lo = Loopback::new("client");
    let (server, dir, db) = (&lo.server, &lo.dir, lo.db.as_str());
    let a = client(server.port, &["-t", "0.3", "-J", "--db", db]).report();
    let b = client(server.port, &["-t", "0.3", "-J", "--db", db]).report();
    let list = long(&["results", "--db", db, "list", "-J"]);
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
    let cmp = long(&["results", "--db", db, "compare", &ia, &ib, "-J"]).json();
    let row = &array_at(&cmp, "/rows")[0];
    assert_eq!(row["metric"], "received_bits_per_second");
    assert!(row["welch"].is_null() && row["significant"].is_null());
    let want = f64_at(&b, "/summary/received/bits_per_second")
        - f64_at(&a, "/summary/received/bits_per_second");
    assert!((row["difference"].as_f64().unwrap() - want).abs() <= 1e-6 * want.abs().max(1.0));
    let text = long(&["results", "--db", db, "compare", &ia, &ib]);
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
}

/// On loopback a 4 KiB socket buffer holds TCP to its window, on both ends of the
/// handshake. What a load cannot move is checked, not rates against a fixed factor:
/// - the window the receiver advertised (tcp_info snd_wnd, read by the sender) is at
///   most the 8 KiB Linux grants for a 4 KiB SO_RCVBUF (it doubles the value asked),
///   and at least the buffer asked for 64 KiB and 1 MiB;
/// - bytes in flight never exceed the window, so by Little's law the rate times the
///   smallest RTT the kernel saw (a lower bound on every segment's time in flight)
///   stays within it. The mean smoothed RTT is no such bound: on a loaded machine it
///   includes the receiving process's late reads (the window update that releases
///   the sender waits for them), which made a 4 KiB window look like 13-31 KB in
///   flight beside hypervisor steal;
/// - the window does not collapse: the 4 KiB rate is at least 1 % of the 64 KiB one
///   (the window ratio is 3 %, and the larger window is CPU-held on loopback). With
///   the buffer set after the handshake, the window scale chosen for the default
///   buffer left 455 kbit/s, 0.002 % of it.
#[test]
fn window_sweep_small_window_limits_throughput_on_loopback() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let lo = Loopback::new("window");
        let run = lo.sweep(&["-t", "0.5", "--vary", "window=4K,64K,1M", "-J"]);
        assert_eq!(run.code(), Some(0), "{}", run.stderr);
        let v = run.json();
        let rates = rates_by_window(&v);
        assert_eq!(rates.len(), 3);
        let runs: Vec<(f64, f64, f64)> = array_at(&v, "/points")
            .iter()
            .map(|p| {
                let id = p["run_ids"][0].to_string();
                let report = long(&["results", "--db", &lo.db, "show", &id, "-J"]).json();
                (
                    f64_at(&report, "/summary/received/bits_per_second"),
                    f64_at(&report, "/summary/tcp/snd_wnd_bytes"),
                    f64_at(&report, "/summary/tcp/rtt_ms/kernel_min_rtt"),
                )
            })
            .collect();
        eprintln!("rates {rates:?}; (rate, advertised window, min RTT ms) {runs:?}");
        let granted_4k = 2.0 * 4096.0;
        let (rate, window, min_rtt_ms) = runs[0];
        assert!(window > 0.0 && window <= granted_4k, "{runs:?}");
        let in_flight_floor = rate / 8.0 * min_rtt_ms / 1e3;
        assert!(
            in_flight_floor <= granted_4k,
            "{in_flight_floor} B: {runs:?}"
        );
        assert!(runs[1].1 >= 65536.0 && runs[2].1 >= 1048576.0, "{runs:?}");
        let (small, mid, big) = (rates[0].1, rates[1].1, rates[2].1);
        assert!(mid > small && big > small, "{rates:?}");
        assert!(small >= 0.01 * mid, "{rates:?}");
    });
}

/// On an emulated 20 ms RTT link, a window-limited TCP flow carries about
/// window / RTT: each window step up must raise the throughput.
#[test]
fn window_sweep_rises_with_the_window_on_a_delayed_link() {
    if !linkperf_testsupport::is_root() || !std::path::Path::new("/dev/net/tun").exists() {
        linkperf_testsupport::skip("needs root and /dev/net/tun (CI runs it)");
        return;
    }
    let name = format!("sw{}", std::process::id() % 100_000);
    let dir = scratch("testbed");
    let link = "rate = \"500M\"\ndelay = \"10ms\"\nqueue = \"2M\"";
    let topology = two_hosts(&name, "10.79.0.1", "10.79.0.2", link);
    let mut bed = CliBed::up(bin(), &dir, &name, &topology);
    let mut server = bed.exec("b", bin());
    bed.serve("b", server.args(["server", "-q"]), 5211);
    let db = db_arg(&dir);
    let run = linkperf_in(
        &bed,
        "a",
        &[
            "sweep",
            "10.79.0.2",
            "--db",
            &db,
            "-t",
            "1.5",
            "--vary",
            "window=16K,64K,256K",
            "-J",
        ],
    );
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

#[test]
fn confidence_mode_iterates_until_the_interval_is_narrow_or_gives_up() {
    linkperf_testsupport::stall::retry_when_stalled(|| {
        let lo = Loopback::new("confidence");
        // One 8K-length point of a 50 Mbit/s paced flow, run until `confidence` says.
        let paced = |confidence: &[&str]| {
            let mut args = vec!["-t", "0.3", "-b", "50M", "--vary", "length=8K"];
            args.extend_from_slice(confidence);
            args.push("-J");
            lo.sweep(&args)
        };
        // A paced flow (-b) gives steady rates, yet never steady to a few parts
        // per million: that interval is out of reach and the sweep must say so.
        let run = paced(&["--confidence", "99,0.0002", "--max-runs", "4"]);
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
        // An interval 20 % wide (±10 %) of a paced flow is reached with the minimum of
        // runs: three reach it while their standard deviation is below 4.0 % of the mean
        // (Student's t of 2 degrees of freedom, 4.30), which a loaded host's hiccups keep
        // to in 0.3 s (each 5 ms one is 1.7 %); 10 % wide (sd below 2.0 %) failed there.
        let run = paced(&["--confidence", "95,20", "--max-runs", "6"]);
        let v = run.json();
        let p = &array_at(&v, "/points")[0];
        assert_eq!(p["runs"], 3, "netperf's minimum of 3 runs");
        assert_eq!(p["confidence_reached"], true);
    });
}

#[test]
fn bad_input_fails_with_one_line() {
    let dir = scratch("bad");
    let db = db_arg(&dir);
    for (args, code, needle) in bad_sweep_cases(&db)
        .into_iter()
        .chain(bad_archive_cases(&db))
    {
        let run = linkperf(&args);
        let line = run.assert_one_line_failure(code);
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

/// Bad sweep command lines: arguments, exit code, a word the
/// one error line must contain.
fn bad_sweep_cases(db: &str) -> Vec<(Vec<&str>, i32, &'static str)> {
    let cases: &[(&[&str], i32, &'static str)] = &[
        (
            &["sweep", "127.0.0.1", "--db", db, "--vary", "frobnicate=1,2"],
            2,
            "frobnicate",
        ),
        (
            &[
                "sweep",
                "127.0.0.1",
                "--db",
                db,
                "--vary",
                "window=4M..4K*2",
            ],
            2,
            "empty",
        ),
        (
            &["sweep", "127.0.0.1", "--db", db, "--vary", "window=4K..4M"],
            2,
            "not a range",
        ),
        (
            &["sweep", "127.0.0.1", "--db", db, "--vary", "window="],
            2,
            "no values",
        ),
        (
            &[
                "sweep",
                "127.0.0.1",
                "--db",
                db,
                "--vary",
                "length=0..9000+0",
            ],
            2,
            "step",
        ),
        (&["sweep", "127.0.0.1", "--db", db], 2, "vary"),
        (
            &[
                "sweep",
                "127.0.0.1",
                "--db",
                db,
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
                db,
                "--vary",
                "P=1",
                "--confidence",
                "120,5",
            ],
            2,
            "level",
        ),
        (&["sweep", "--resume", "999", "--db", db], 2, "no sweep 999"),
    ];
    cases.iter().map(|(a, c, n)| (a.to_vec(), *c, *n)).collect()
}

/// Bad `results` command lines and archives, and a sweep into an archive
/// that cannot be created.
fn bad_archive_cases(db: &str) -> Vec<(Vec<&str>, i32, &'static str)> {
    let cases: &[(&[&str], i32, &'static str)] = &[
        (&["results", "--db", db, "show", "12345"], 2, "12345"),
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
    cases.iter().map(|(a, c, n)| (a.to_vec(), *c, *n)).collect()
}
